"""The ``Date`` and ``Server`` a frontend gets through the proxy (issue #25, round 2):
one of each (RFC 9110 §5.3: neither is a list). The agent's are forwarded; the proxy
is served without its server's own (``SERVER_OPTIONS``) and adds the ``Date`` an
answer lacks (RFC 9110 §6.6.1). Real agents on uvicorn, a real ProxyApp, httpx."""

from __future__ import annotations

import email.utils

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.helpers.proxy import post, proxied
from tests.helpers.proxy_attack import GOOD, INPUT, sse
from tests.helpers.scripted_server import free_port, serve


def _agent(**headers: str) -> Starlette:
    async def agent(request: Request) -> Response:
        await request.body()
        return Response(sse(GOOD), media_type="text/event-stream", headers=headers)

    return Starlette(routes=[Route("/agent", agent, methods=["POST"])])


def _values(answer: httpx.Response, name: bytes) -> list[bytes]:
    return [value for key, value in answer.headers.raw if key.lower() == name]


def test_the_agents_date_and_server_are_forwarded_once() -> None:
    agent = _agent(date="Tue, 01 Dec 2026 00:00:00 GMT", server="my-agent/1")
    with serve(agent, date_header=False, server_header=False) as base:
        with proxied(f"{base}/agent") as px:
            answer = post(px.url, INPUT)
    assert answer.status_code == 200
    assert _values(answer, b"date") == [b"Tue, 01 Dec 2026 00:00:00 GMT"]
    assert _values(answer, b"server") == [b"my-agent/1"]


def test_an_agent_answer_without_date_gets_the_proxys() -> None:
    with serve(_agent(), date_header=False, server_header=False) as base:
        with proxied(f"{base}/agent") as px:
            answer = post(px.url, INPUT)
    [date] = _values(answer, b"date")
    assert email.utils.parsedate_to_datetime(date.decode()).tzinfo is not None
    assert _values(answer, b"server") == []  # the agent named none: neither does the proxy


def test_the_proxys_own_answers_carry_one_date() -> None:
    """A 502 (the upstream unreachable), a 400 (a refused target), a 403 (a Host it does
    not answer): the proxy's own answers, each with one Date."""
    with proxied(f"http://127.0.0.1:{free_port()}/agent") as px:
        answers = [
            post(px.url, INPUT),
            post(f"{px.url}runs/..;/admin", INPUT),
            httpx.get(px.url, headers={"host": "evil.example"}, timeout=30),
        ]
    assert [a.status_code for a in answers] == [502, 400, 403]
    for answer in answers:
        assert len(_values(answer, b"date")) == 1, answer.headers.raw


def test_the_answer_carries_the_agents_via_then_the_proxys() -> None:
    """RFC 9110 §7.6.3: a proxy sends a Via in each message it forwards — the answer
    too, after the agent's own (a gateway in front of the agent)."""
    with serve(_agent(via="1.0 agent-gateway")) as base, proxied(f"{base}/agent") as px:
        answer = post(px.url, INPUT)
    assert answer.status_code == 200
    assert _values(answer, b"via") == [b"1.0 agent-gateway", f"1.1 {px.app.via}".encode()]


def test_an_answer_without_via_gets_the_proxys_only() -> None:
    with serve(_agent()) as base, proxied(f"{base}/agent") as px:
        answer = post(px.url, INPUT)
    assert _values(answer, b"via") == [f"1.1 {px.app.via}".encode()]
