"""Hostile clients against the server (issue 11, items 5-8), over real loopback sockets.

Each test failed on the code before: a text/plain or form POST — what any web page
can send without a CORS preflight — started a run; a foreign Origin was ignored; a
body that stopped arriving was held forever; every unknown member was a log line,
written raw (a key with a newline forged a line).
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
from typing import Any

import httpx
import orjson
import pytest

from agui_tools._text import LogGuard
from agui_tools.agent import Run
from agui_tools.transport._server import agent_app
from tests.helpers.scripted_server import address, serve

INPUT: dict[str, Any] = {"threadId": "t", "runId": "r", "messages": []}
started = threading.Event()


async def agent(run: Run) -> None:
    started.set()
    async with run.message() as m:
        await m.delta("hi")


@pytest.fixture(autouse=True)
def _clear() -> None:
    started.clear()


def post(url: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    with httpx.Client(timeout=10) as client:
        return client.post(url, content=body, headers=headers)


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        None,
    ],
)
def test_a_simple_cross_site_post_starts_nothing(content_type: str | None) -> None:
    """Item 5: the content types a browser posts without a preflight get 415, before
    the body is even read; the agent never runs."""
    headers = {"accept": "text/event-stream"}
    if content_type is not None:
        headers["content-type"] = content_type
    with serve(agent_app(agent)) as base:
        response = post(f"{base}/", orjson.dumps(INPUT), headers)
    assert response.status_code == 415
    error = response.json()["error"]
    assert error["rule"] == "TRANS-4" and "application/json" in error["message"]
    assert not started.is_set()


def test_the_origin_policy_is_same_origin_by_default_with_an_allow_list() -> None:
    body = orjson.dumps(INPUT)
    json_headers = {"content-type": "application/json", "accept": "text/event-stream"}
    with serve(agent_app(agent)) as base:
        host, port = address(base)
        url = f"{base}/"
        foreign = post(url, body, {**json_headers, "origin": "http://evil.example"})
        assert foreign.status_code == 403 and "evil.example" in foreign.json()["error"]["message"]
        cross = post(url, body, {**json_headers, "sec-fetch-site": "cross-site"})
        assert cross.status_code == 403
        assert not started.is_set()
        own = post(url, body, {**json_headers, "origin": f"http://{host}:{port}"})
        assert own.status_code == 200 and started.is_set()
        assert post(url, body, json_headers).status_code == 200  # no Origin: not a browser
    started.clear()
    app = agent_app(agent, allowed_origins=["https://app.example"])
    with serve(app) as base:
        url = f"{base}/"
        allowed = post(url, body, {**json_headers, "origin": "https://app.example"})
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == "https://app.example"
        with httpx.Client(timeout=10) as client:
            preflight = client.options(
                url,
                headers={
                    "origin": "https://app.example",
                    "access-control-request-method": "POST",
                    "access-control-request-headers": "content-type",
                },
            )
        assert preflight.status_code == 200
        assert "POST" in preflight.headers["access-control-allow-methods"]
        assert (
            post(url, body, {**json_headers, "origin": "https://other.example"}).status_code == 403
        )


def _partial_request(host: str, port: int, sent: int = 10, declared: int = 200) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=15)
    sock.sendall(
        b"POST / HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n"
        + f"content-length: {declared}\r\n\r\n".encode()
        + b" " * sent
    )
    return sock


def _read_response(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_a_body_that_stops_arriving_is_answered_408_and_closed() -> None:
    """Item 6: a partial body used to be held forever (3,000 still held after 60 s)."""
    with serve(agent_app(agent, body_timeout=0.5)) as base:
        host, port = address(base)
        sock = _partial_request(host, port)
        with sock:
            response = _read_response(sock)  # the server closes: recv returns b""
    assert response.startswith(b"HTTP/1.1 408")
    assert b"body_timeout" in response and b"connection: close" in response.lower()
    assert not started.is_set()


def test_requests_past_the_concurrency_limit_get_503_at_once() -> None:
    with serve(agent_app(agent, max_concurrency=2, body_timeout=30)) as base:
        host, port = address(base)
        held = [_partial_request(host, port) for _ in range(2)]
        try:
            # the two held requests are inside the app once the third is refused
            for _ in range(50):
                response = post(
                    f"{base}/",
                    orjson.dumps(INPUT),
                    {"content-type": "application/json"},
                )
                if response.status_code == 503:
                    break
            assert response.status_code == 503
            assert response.headers["retry-after"] == "1"
            assert "max_concurrency=2" in response.json()["error"]["message"]
        finally:
            for sock in held:
                sock.close()
        for _ in range(50):  # the slots are given back when the held requests end
            response = post(f"{base}/", orjson.dumps(INPUT), {"content-type": "application/json"})
            if response.status_code == 200:
                break
        assert response.status_code == 200


# -- items 7 and 8: what a body makes us judge and log -------------------------------------


def test_unknown_members_are_one_escaped_log_line(caplog: pytest.LogCaptureFixture) -> None:
    """Item 7: one line with a count, not a line per member; item 8: a member name
    with a newline cannot forge a log line."""
    body = dict(INPUT)
    body["x\nCRITICAL forged line"] = 1
    for i in range(200):
        body[f"unknown{i}"] = i
    caplog.set_level(logging.WARNING, logger="agui_tools.transport")
    with serve(agent_app(agent)) as base:
        response = post(f"{base}/", orjson.dumps(body), {"content-type": "application/json"})
    assert response.status_code == 200
    lines = [r.getMessage() for r in caplog.records if r.name == "agui_tools.transport"]
    assert len(lines) == 1, lines
    [line] = lines
    assert "201 warning(s) (PROC-3 x201)" in line and "and 198 more" in line
    assert "\n" not in line and "x\\nCRITICAL forged line" in line


def test_too_many_unknown_members_or_messages_are_refused_by_name() -> None:
    many = dict(INPUT)
    for i in range(1001):
        many[f"u{i}"] = i
    messages = dict(
        INPUT, messages=[{"id": f"m{i}", "role": "user", "content": "x"} for i in range(11)]
    )
    with serve(agent_app(agent, max_messages=10)) as base:
        url = f"{base}/"
        refused = post(url, orjson.dumps(many), {"content-type": "application/json"})
        assert refused.status_code == 422
        assert refused.json()["error"]["rule"] == "LIMIT"
        assert "more than 1000 unrecognised members" in refused.json()["error"]["message"]
        too_long = post(url, orjson.dumps(messages), {"content-type": "application/json"})
        assert too_long.status_code == 413 and too_long.json()["error"]["path"] == "/messages"
    assert not started.is_set()


def test_the_log_guard_rate_limits_per_template_and_says_how_many_it_dropped() -> None:
    now = [0.0]
    guard = LogGuard(burst=3, period=10.0, clock=lambda: now[0])
    logger = logging.getLogger("test.hostile.guard")

    def record(arg: str) -> logging.LogRecord:
        return logger.makeRecord(
            logger.name, logging.ERROR, __file__, 1, "accept failed: %s", (arg,), None
        )

    passed = [r for r in (record(f"e{i}") for i in range(100)) if guard.filter(r)]
    assert [r.getMessage() for r in passed] == [
        "accept failed: e0",
        "accept failed: e1",
        "accept failed: e2",
    ]
    now[0] = 11.0
    nxt = record("late\r\nX")
    assert guard.filter(nxt)
    assert nxt.getMessage() == (
        "accept failed: late\\r\\nX [97 similar line(s) suppressed in the last 10 s]"
    )


def test_the_log_guard_says_an_os_error_on_its_line_and_keeps_a_bug_s_traceback() -> None:
    """The machine's condition (an OSError: out of descriptors) is one line, type and
    message; any other exception is a bug's, and its traceback stays for the handler."""
    guard = LogGuard()
    logger = logging.getLogger("test.hostile.guard.exc")

    def record(error: BaseException) -> logging.LogRecord:
        try:
            raise error
        except BaseException:
            info = sys.exc_info()
        return logger.makeRecord(
            logger.name, logging.ERROR, __file__, 1, "accept\nfailed", (), info
        )

    said = record(OSError(24, "Too many open files"))
    assert guard.filter(said) and said.exc_info is None
    assert said.getMessage() == "accept\\nfailed (OSError: [Errno 24] Too many open files)"
    assert "Traceback" not in logging.Formatter().format(said)
    bug = record(ValueError("ours"))
    assert guard.filter(bug) and bug.exc_info is not None
    assert "Traceback" in logging.Formatter().format(bug)
