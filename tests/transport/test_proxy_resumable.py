"""``proxy --resumable`` (docs/proxy.md, docs/resumable.md): a standard agent behind the
proxy made resumable for frontends that opt in. Over real loopback: our agent served
without the binding upstream, the frontend cut at every event boundary and rejoined
through the proxy — nothing lost or repeated, the agent's tool run once per run, the
proxy's findings those of the uncut run; a stop, an upstream cut, an upstream that
answers no stream; a frontend that does not opt in sees today's proxy."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.types import Receive, Scope, Send

from agui_tools.agent import Run
from agui_tools.app._run_log import MemoryRunLog, RunLog
from agui_tools.app._run_log_sql import SQLiteRunLog
from agui_tools.app._watch import WatchFinding
from agui_tools.transport._proxy import ProxyApp
from agui_tools.transport._resumable import Resumable
from agui_tools.transport._server import agent_app
from agui_tools.transport._serving import serving
from tests.helpers.judging import judge_sse
from tests.helpers.proxy import ctrl_c, proxy_cmd
from tests.helpers.resumable import (
    OPT_IN,
    SSE,
    cut_after,
    executed,
    ids_and_events,
    opened_run_log,
    refund,
    refund_input,
)
from tests.helpers.scripted_server import free_port, serve
from tests.helpers.terminal import AGUI, ENV, ROOT


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def run_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunLog]:
    with opened_run_log(request, tmp_path) as opened:
        yield opened


def proxy_app(upstream: str, log: RunLog, findings: list[WatchFinding]) -> ProxyApp:
    return ProxyApp(upstream, resumable=Resumable(log=log), on_finding=findings.append)


def rules_of(findings: list[WatchFinding], run_id: str) -> list[str]:
    return sorted(f.rule for f in findings if f.run_id == run_id)


def test_a_frontend_cut_at_every_boundary_rejoins_through_the_proxy(run_log: RunLog) -> None:
    executed.clear()
    findings: list[WatchFinding] = []

    async def main() -> int:
        async with (
            serving(agent_app(refund)) as upstream,
            serving(proxy_app(upstream + "/", run_log, findings)) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            plain = await client.post("/", json=refund_input("plain"), headers=SSE)
            assert "agui-resumable" not in plain.headers  # today's proxy, byte for byte
            assert [i for i, _ in ids_and_events(plain.content)] == [None] * len(
                ids_and_events(plain.content)
            )
            uncut = await client.post("/", json=refund_input("uncut"), headers=OPT_IN)
            assert uncut.headers.get("agui-resumable") == "1"
            whole = ids_and_events(uncut.content)
            judge_sse(uncut.content, refund_input("uncut"))
            as_plain = [{**e, "runId": "uncut"} if "runId" in e else e for _, e in
                        ids_and_events(plain.content)]  # fmt: skip
            assert [e for _, e in whole] == as_plain, "the opted-in run is not the agent's"
            n = len(whole)
            for k in range(n + 1):
                got = await cut_after(client, f"cut-{k}", k)
                assert [i for i, _ in got] == [f"cut-{k}:{s}" for s in range(1, n + 1)], k
                renamed = [{**e, "runId": "uncut"} if "runId" in e else e for _, e in got]
                assert renamed == [e for _, e in whole], f"cut after {k}: not the uncut run"
            await asyncio.sleep(0.2)  # the last writers' verdicts
            return n

    points = asyncio.run(asyncio.wait_for(main(), 120))
    assert points >= 10
    runs = ["plain", "uncut", *(f"cut-{k}" for k in range(points + 1))]
    assert sorted(executed) == sorted(runs), "the agent-side tool ran once per run"
    for k in range(points + 1):  # read to its end and judged, the frontend gone or not
        assert rules_of(findings, f"cut-{k}") == rules_of(findings, "uncut"), k


async def working(run: Run) -> None:
    """Streams two deltas, then works until its connection is closed."""
    try:
        async with run.message(message_id="m1") as m:
            await m.delta("Working")
            await m.delta(" on it")
            await asyncio.Event().wait()
    except asyncio.CancelledError:
        stopped_upstream.append(run.run_id)
        raise


stopped_upstream: list[str] = []


def test_a_stop_closes_the_upstream_and_ends_the_run_stopped() -> None:
    stopped_upstream.clear()
    findings: list[WatchFinding] = []

    async def main() -> None:
        async with (
            serving(agent_app(working)) as upstream,
            serving(proxy_app(upstream + "/", MemoryRunLog(), findings)) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            raw, asked = b"", False
            async with client.stream("POST", "/", json=refund_input("r1"), headers=OPT_IN) as s:
                async for chunk in s.aiter_bytes():
                    raw += chunk
                    if len(ids_and_events(raw)) >= 3 and not asked:
                        asked = True
                        stop = await client.post("/threads/t/runs/r1/stop")
                        assert stop.status_code == 202, stop.text
                        assert stop.json() == {"runId": "r1", "status": "stopping"}
            events = [e for _, e in ids_and_events(raw)]
            assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "STOPPED"
            assert "RESUME-6" in events[-1]["message"] and "RUN-6" in events[-1]["message"]
            assert [e["type"] for e in events[:-1]] == [
                "RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_CONTENT",
            ]  # fmt: skip
            for _ in range(100):  # the agent saw its connection closed
                if stopped_upstream:
                    break
                await asyncio.sleep(0.05)
            assert stopped_upstream == ["r1"]
            again = await client.post("/threads/t/runs/r1/stop")
            assert again.status_code == 409 and "RESUME-6" in again.text
            rejoin = await client.get("/threads/t/runs/r1/events", headers=SSE)
            assert [e for _, e in ids_and_events(rejoin.content)] == events

    asyncio.run(asyncio.wait_for(main(), 60))


def scripted(status: int, body: bytes, content_type: bytes) -> Any:
    """A raw upstream answering ``body`` whole (a stream cut before its end, a refusal)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", content_type)]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})

    return app


def test_an_upstream_that_ends_no_run_ends_the_logged_run_upstream_cut() -> None:
    findings: list[WatchFinding] = []
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    ]
    body = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)

    async def main() -> None:
        upstream_app = scripted(200, body, b"text/event-stream")
        async with (
            serving(upstream_app) as upstream,
            serving(proxy_app(upstream + "/", MemoryRunLog(), findings)) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            got = await client.post("/", json=refund_input("r1"), headers=OPT_IN)
            logged = [e for _, e in ids_and_events(got.content)]
            assert logged[:2] == events
            assert logged[2]["type"] == "RUN_ERROR" and logged[2]["code"] == "UPSTREAM_CUT"
            assert "TRANS-6" in logged[2]["message"]
            await asyncio.sleep(0.1)
            # the agent's truncated run is still said of the agent
            assert any(f.side == "agent" and f.run_id == "r1" for f in findings), findings

    asyncio.run(asyncio.wait_for(main(), 60))


def test_an_upstream_refusal_is_forwarded_as_today_and_the_run_not_run_twice() -> None:
    refusal = b'{"error":"busy"}'

    async def main() -> None:
        async with (
            serving(scripted(500, refusal, b"application/json")) as upstream,
            serving(proxy_app(upstream + "/", MemoryRunLog(), [])) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            got = await client.post("/", json=refund_input("r1"), headers=OPT_IN)
            assert got.status_code == 500 and got.content == refusal
            assert "agui-resumable" not in got.headers
            again = await client.post("/", json=refund_input("r1"), headers=OPT_IN)
            assert again.status_code == 409 and "RESUME-4" in again.text
            rejoin = await client.get("/threads/t/runs/r1/events", headers=SSE)
            (ended,) = [e for _, e in ids_and_events(rejoin.content)]
            assert ended["code"] == "UPSTREAM_REFUSED" and "status 500" in ended["message"]
            unknown = await client.get("/threads/t/runs/nope/events", headers=SSE)
            assert unknown.status_code == 404 and "RESUME" in unknown.text
            caps = await client.get("/capabilities")
            assert caps.json()["transport"]["resumable"] is True

    asyncio.run(asyncio.wait_for(main(), 60))


def test_without_resumable_the_proxy_forwards_a_rejoin_upstream() -> None:
    """No ``--resumable``: the opt-in header and the binding's paths are the agent's."""

    async def main() -> None:
        async with (
            serving(agent_app(refund)) as upstream,
            serving(ProxyApp(upstream + "/")) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            got = await client.post("/", json=refund_input("r1"), headers=OPT_IN)
            assert got.status_code == 200 and "agui-resumable" not in got.headers
            rejoin = await client.get("/threads/t/runs/r1/events", headers=SSE)
            assert rejoin.status_code in (404, 405)  # the agent's answer, forwarded

    asyncio.run(asyncio.wait_for(main(), 60))


def test_the_command_serves_the_binding_from_a_sqlite_log(tmp_path: Path) -> None:
    """``agui-tools proxy --resumable --run-log FILE``: a cut frontend rejoins through the
    process; Ctrl-C ends it with its summary; the log's flags need ``--resumable``."""
    refused = subprocess.run(
        [*AGUI, "proxy", "http://127.0.0.1:9/", "--retention", "5"],
        capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2
    assert refused.stderr.strip() == "agui-tools proxy: --retention needs --resumable"
    with serve(agent_app(refund)) as upstream:
        log = tmp_path / "runs.db"
        proc, url = proxy_cmd(upstream + "/", "--resumable", "--run-log", str(log))
        try:
            with httpx.Client(base_url=url, timeout=30) as client:
                got = asyncio.run(_cut_after_in(url, "r1", 3))
                other = {**refund_input("r2"), "threadId": "t2"}  # (r1 left its thread waiting)
                whole = client.post("/", json=other, headers=OPT_IN)
                assert [e["type"] for _, e in got] == [
                    e["type"] for _, e in ids_and_events(whole.content)
                ]
                assert [i for i, _ in got] == [f"r1:{s}" for s in range(1, len(got) + 1)]
        finally:
            code, _, err = ctrl_c(proc)
    assert code == 0, err
    assert "agui-tools proxy: stopped" in err
    assert log.stat().st_size > 0


async def _cut_after_in(url: str, run_id: str, k: int) -> list[Any]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        return await cut_after(client, run_id, k)


def test_strict_logs_what_a_frontend_would_be_sent_up_to_the_first_error() -> None:
    """``--strict``: the logged run ends at the agent's first error with the proxy's
    ``RUN_ERROR`` naming the rule; a frontend asking a binary stream gets today's proxy."""
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "no start"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
    ]
    body = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)

    async def main() -> None:
        findings: list[WatchFinding] = []
        async with serving(scripted(200, body, b"text/event-stream")) as upstream:
            proxy = ProxyApp(
                upstream + "/", strict=True, resumable=Resumable(), on_finding=findings.append
            )
            async with serving(proxy) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
                got = await client.post("/", json=refund_input("r1"), headers=OPT_IN)
                logged = [e for _, e in ids_and_events(got.content)]
                assert logged[0] == events[0] and len(logged) == 2, logged
                (rule,) = {f.rule for f in findings if f.severity == "error"}
                assert logged[1]["type"] == "RUN_ERROR" and logged[1]["code"] == rule
                binary = {**OPT_IN, "accept": "application/vnd.ag-ui.event+proto"}
                plain = await client.post("/", json=refund_input("r2"), headers=binary)
                assert "agui-resumable" not in plain.headers

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_frontend_cut_at_one_proxy_rejoins_at_another_sharing_the_log(tmp_path: Path) -> None:
    """Two proxies on one SQLite run log: the run read by the first is rejoined, and
    stopped, through the second (RESUME-10's replicas, the proxy as the writer)."""
    stopped_upstream.clear()
    path = str(tmp_path / "runs.db")
    first, second = SQLiteRunLog(path), SQLiteRunLog(path)

    async def main() -> None:
        async with (
            serving(agent_app(working)) as upstream,
            serving(proxy_app(upstream + "/", first, [])) as one,
            serving(proxy_app(upstream + "/", second, [])) as two,
            httpx.AsyncClient(timeout=30) as client,
        ):
            raw = b""
            async with client.stream("POST", one, json=refund_input("r1"), headers=OPT_IN) as s:
                async for chunk in s.aiter_bytes():
                    raw += chunk
                    if len(ids_and_events(raw)) >= 3:
                        break
            delivered = ids_and_events(raw)[:3]
            rejoin_url = f"{two}/threads/t/runs/r1/events"
            headers = {**SSE, "last-event-id": "r1:3"}
            async with client.stream("GET", rejoin_url, headers=headers) as rejoined:
                assert rejoined.status_code == 200
                rest = b""
                async for chunk in rejoined.aiter_bytes():
                    rest += chunk
                    if len(ids_and_events(rest)) == 1:  # the second delta: now stop it
                        stop = await client.post(f"{two}/threads/t/runs/r1/stop")
                        assert stop.status_code == 202, stop.text
            got = delivered + ids_and_events(rest)
            assert [i for i, _ in got] == [f"r1:{s}" for s in range(1, 6)]
            assert got[-1][1]["code"] == "STOPPED"
            assert stopped_upstream == ["r1"]  # the first proxy closed the upstream

    try:
        asyncio.run(asyncio.wait_for(main(), 60))
    finally:
        first.close()
        second.close()


def test_a_terminal_event_split_over_data_lines_ends_the_run_as_the_agent_did() -> None:
    """A payload the upstream spread over several ``data:`` lines is one event
    (WHATWG SSE): its ``RUN_FINISHED`` ends the logged run, no ``UPSTREAM_CUT`` after it."""
    body = (
        b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r1"}\n\n'
        b'data: {"type":"RUN_FINISHED",\ndata: "threadId":"t","runId":"r1"}\n\n'
    )

    async def main() -> None:
        async with (
            serving(scripted(200, body, b"text/event-stream")) as upstream,
            serving(proxy_app(upstream + "/", MemoryRunLog(), [])) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            got = await client.post("/", json=refund_input("r1"), headers=OPT_IN)
            logged = [e for _, e in ids_and_events(got.content)]
            assert [e["type"] for e in logged] == ["RUN_STARTED", "RUN_FINISHED"], logged
            rejoin = await client.get("/threads/t/runs/r1/events", headers=SSE)
            assert [e["type"] for _, e in ids_and_events(rejoin.content)][-1] == "RUN_FINISHED"

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_run_over_before_the_upstream_answered_leaves_no_writer_behind() -> None:
    """An unreachable upstream, and a stop asked before the upstream answered: each
    run is over, and the proxy no longer counts itself its writer (its keeper would
    renew the lease of a leaked one every round)."""
    answer = asyncio.Event()

    async def silent(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await answer.wait()  # answers nothing until the test ends

    def writers(app: ProxyApp) -> dict[tuple[str, str], asyncio.Event]:
        assert app.resumable is not None
        return app.resumable._stops

    async def main() -> None:
        gone = proxy_app(f"http://127.0.0.1:{free_port()}/", MemoryRunLog(), [])
        async with serving(silent) as upstream:
            waiting = proxy_app(upstream + "/", MemoryRunLog(), [])
            async with (
                serving(gone) as gone_url,
                serving(waiting) as url,
                httpx.AsyncClient(timeout=30) as client,
            ):
                got = await client.post(gone_url + "/", json=refund_input("r1"), headers=OPT_IN)
                assert got.status_code == 502 and "cannot be reached" in got.text
                assert writers(gone) == {}

                asking = asyncio.create_task(
                    client.post(url + "/", json=refund_input("r2"), headers=OPT_IN)
                )
                for _ in range(500):  # the proxy is waiting on the upstream's answer
                    if writers(waiting):
                        break
                    await asyncio.sleep(0.02)
                stop = await client.post(url + "/threads/t/runs/r2/stop")
                assert stop.status_code == 202, stop.text
                events = [e for _, e in ids_and_events((await asking).content)]
                assert events[-1]["code"] == "STOPPED", events
                assert writers(waiting) == {}
                answer.set()

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_run_past_max_run_bytes_through_the_proxy_is_ended_by_the_cap() -> None:
    """The proxy's writer stands on the same cap as an agent's: an upstream streaming
    past ``max_run_bytes`` leaves a log that ends with RUN_ERROR ``RUN_LOG_LIMIT``,
    never one that grows without bound."""
    cap = 3_000
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}]
    events += [{"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}]
    events += [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "x" * 100}] * 60
    events += [{"type": "TEXT_MESSAGE_END", "messageId": "m1"}]
    events += [{"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"}]
    body = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)
    log = MemoryRunLog()

    async def main() -> None:
        async with (
            serving(scripted(200, body, b"text/event-stream")) as upstream,
            serving(
                ProxyApp(upstream + "/", resumable=Resumable(log=log, max_run_bytes=cap))
            ) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            got = await client.post("/", json=refund_input("r1"), headers=OPT_IN)
            logged = [e for _, e in ids_and_events(got.content)]
            assert logged[-1]["type"] == "RUN_ERROR" and logged[-1]["code"] == "RUN_LOG_LIMIT"
            assert len(logged) < len(events)
        kept = log.read("t", "r1", 0, 10_000)[:-1]
        assert sum(map(len, kept)) <= cap, "never past the cap"

    asyncio.run(asyncio.wait_for(main(), 60))
