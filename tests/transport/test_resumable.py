"""The resumable binding, server side (docs/resumable.md), over real HTTP on loopback.

A standard request gets the standard bytes (RESUME-1); an opted-in run numbers its
events (RESUME-2), survives its connection (RESUME-3), is rejoined from any seq
(RESUME-5), stopped as cancelled (RESUME-6); every bad rejoin or stop is a clear
4xx naming its rule (RESUME-7, RESUME-8). Waiting is on flags the agents set.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse

from agui_tools.agent import Run
from agui_tools.app._run_log import MemoryRunLog
from agui_tools.transport._resumable import MIN_LEASE, Resumable
from agui_tools.transport._server import agent_app
from agui_tools.transport._serving import serving
from agui_tools.wire._framing import PROTO_MEDIA_TYPE
from tests.helpers.judging import judge_sse
from tests.helpers.resumable import OPT_IN, SSE, ids_and_events

INPUT: dict[str, Any] = {
    "threadId": "thread:1",
    "runId": "run:1",  # a ':' in the id: split on the last one
    "messages": [{"id": "u1", "role": "user", "content": "Weather in Paris?"}],
}


async def weather(run: Run) -> None:
    """Deterministic ids: the bytes of two runs can be compared whole."""
    async with run.message(message_id="m1") as m:
        await m.delta("Let me check.")
        async with run.tool_call("get_weather", call_id="c1", parent_message_id="m1") as call:
            await call.args('{"city":"Paris"}')
    await run.result("c1", "18C, sunny", message_id="res1")
    await run.text("It is sunny.", message_id="m2")


@asynccontextmanager
async def served(agent: Any, **options: Any) -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    async with (
        serving(agent_app(agent, **options)) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        yield url, client


def events_url(thread: str = "thread:1", run: str = "run:1") -> str:
    return f"/threads/{thread}/runs/{run}/events"


def run_async(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(test(), 60))


# -- RESUME-1: nothing changes for a peer that does not opt in -----------------------------


def test_a_standard_request_gets_the_standard_bytes() -> None:
    async def main() -> None:
        async with served(weather) as (_, plain):
            before = await plain.post("/", json=INPUT, headers=SSE)
        async with served(weather, resumable=Resumable()) as (_, client):
            after = await client.post("/", json=INPUT, headers=SSE)
            again = await client.post("/", json=INPUT, headers=SSE)  # not logged: runs again
        assert before.status_code == after.status_code == again.status_code == 200
        assert after.content == before.content == again.content
        assert b"id:" not in after.content
        assert "agui-resumable" not in after.headers
        assert dict(after.headers) | {"date": ""} == dict(before.headers) | {"date": ""}

    run_async(main)


def test_a_binary_request_ignores_the_opt_in() -> None:
    async def main() -> None:
        async with served(weather, resumable=Resumable()) as (_, client):
            answer = await client.post(
                "/", json=INPUT, headers={**OPT_IN, "accept": PROTO_MEDIA_TYPE}
            )
            assert answer.headers["content-type"] == PROTO_MEDIA_TYPE
            assert "agui-resumable" not in answer.headers
            rejoin = await client.get(events_url())
            assert rejoin.status_code == 404, "a run that did not opt in is not logged"

    run_async(main)


def test_a_server_without_the_option_has_no_extension_routes() -> None:
    async def main() -> None:
        async with served(weather) as (_, client):
            answer = await client.post("/", json=INPUT, headers=OPT_IN)
            assert "agui-resumable" not in answer.headers and b"id:" not in answer.content
            assert (await client.get(events_url())).status_code in (404, 405)
            assert (await client.get("/capabilities")).status_code in (404, 405)

    run_async(main)


# -- RESUME-2, RESUME-5: ids, and a rejoin from every seq -----------------------------------


def test_an_opted_in_run_numbers_its_events_and_is_rejoined_from_every_seq() -> None:
    async def main() -> None:
        async with served(weather) as (_, plain):
            standard = ids_and_events((await plain.post("/", json=INPUT, headers=SSE)).content)
        async with served(weather, resumable=Resumable()) as (_, client):
            answer = await client.post("/", json=INPUT, headers=OPT_IN)
            assert answer.status_code == 200
            assert answer.headers["agui-resumable"] == "1"
            judge_sse(answer.content, INPUT)
            numbered = ids_and_events(answer.content)
            assert [e for _, e in numbered] == [e for _, e in standard], "the same events"
            n = len(numbered)
            assert [i for i, _ in numbered] == [f"run:1:{seq}" for seq in range(1, n + 1)]
            for after in range(n + 1):
                by_header = await client.get(
                    events_url(), headers={**SSE, "last-event-id": f"run:1:{after}"}
                )
                by_query = await client.get(events_url() + f"?after={after}", headers=SSE)
                for rejoin in (by_header, by_query):
                    assert rejoin.status_code == 200
                    assert rejoin.headers["agui-resumable"] == "1"
                    assert ids_and_events(rejoin.content) == numbered[after:]
            whole = await client.get(events_url(), headers=SSE)
            assert ids_and_events(whole.content) == numbered

    run_async(main)


def test_capabilities_declare_the_binding() -> None:
    async def main() -> None:
        async with served(weather, resumable=Resumable()) as (_, client):
            answer = await client.get("/capabilities")
            assert answer.status_code == 200
            assert answer.json()["transport"]["resumable"] is True

    run_async(main)


# -- RESUME-3, RESUME-6: a disconnect is never a stop ---------------------------------------


class Gate:
    """An agent that streams, then waits for ``go`` — long enough to be cut or stopped."""

    def __init__(self) -> None:
        self.streaming = asyncio.Event()
        self.go = asyncio.Event()
        self.finished = asyncio.Event()

    async def __call__(self, run: Run) -> None:
        async with run.message(message_id="m1") as m:
            await m.delta("Working")
            self.streaming.set()
            await self.go.wait()
            await m.delta(" done.")
        self.finished.set()


async def cut_after_first_events(client: httpx.AsyncClient, gate: Gate) -> None:
    async with client.stream("POST", "/", json=INPUT, headers=OPT_IN) as stream:
        assert stream.headers["agui-resumable"] == "1"
        await gate.streaming.wait()
    # the connection is gone; the run is not


def test_a_disconnected_run_runs_to_its_end_in_the_log() -> None:
    async def main() -> None:
        gate = Gate()
        async with served(gate, resumable=Resumable()) as (_, client):
            await cut_after_first_events(client, gate)
            rejoin = client.stream("GET", events_url(), headers={**SSE, "last-event-id": "run:1:2"})
            async with rejoin as stream:
                gate.go.set()
                raw = b"".join([chunk async for chunk in stream.aiter_bytes()])
            assert gate.finished.is_set()
            tail = ids_and_events(raw)
            assert [i for i, _ in tail] == ["run:1:3", "run:1:4", "run:1:5", "run:1:6"]
            assert tail[-1][1]["type"] == "RUN_FINISHED" and "outcome" not in tail[-1][1]
            whole = await client.get(events_url(), headers=SSE)
            judge_sse(whole.content, INPUT)

    run_async(main)


def test_a_stop_ends_the_run_cancelled_for_every_reader() -> None:
    async def main() -> None:
        gate = Gate()
        async with served(gate, resumable=Resumable()) as (_, client):
            async with client.stream("POST", "/", json=INPUT, headers=OPT_IN) as first:
                await gate.streaming.wait()
                async with client.stream("GET", events_url(), headers=SSE) as second:
                    stop = await client.post("/threads/thread:1/runs/run:1/stop")
                    assert stop.status_code == 202
                    assert stop.json() == {"runId": "run:1", "status": "stopping"}
                    seen = [b"".join([c async for c in s.aiter_bytes()]) for s in (first, second)]
            assert not gate.finished.is_set(), "the agent was stopped, not let finish"
            assert seen[0] == seen[1]
            _, events = judge_sse(seen[0], INPUT)
            types = [e["type"] for e in events]
            assert types[-2:] == ["TEXT_MESSAGE_END", "RUN_FINISHED"], "RUN-6: closed first"
            assert events[-1]["outcome"] == {"type": "cancelled"}, "RUN-5"
            again = await client.post("/threads/thread:1/runs/run:1/stop")
            assert again.status_code == 409 and again.json()["status"] == "finished"

    run_async(main)


# -- RESUME-4, RESUME-7, RESUME-8: what cannot be served -----------------------------------


def test_every_bad_rejoin_or_stop_is_a_clear_4xx() -> None:
    async def main() -> None:
        async with served(weather, resumable=Resumable(retention=60)) as (_, client):
            done = await client.post("/", json=INPUT, headers=OPT_IN)
            last = len(ids_and_events(done.content))
            cases: list[tuple[str, str, dict[str, str], int, str, str]] = [
                ("GET", events_url("thread:1", "nope"), {}, 404, "RESUME-7", "no such run"),
                ("GET", events_url("other", "run:1"), {}, 404, "RESUME-7", "no such run"),
                ("GET", events_url(), {"last-event-id": "run:1:x"}, 400, "RESUME-7", "<seq>"),
                ("GET", events_url(), {"last-event-id": "run:2:1"}, 400, "RESUME-7", "names run"),
                ("GET", events_url() + "?after=-1", {}, 400, "RESUME-7", "decimal integer"),
                ("GET", events_url() + f"?after={last + 1}", {}, 400, "RESUME-7", "beyond"),
                ("POST", "/threads/thread:1/runs/nope/stop", {}, 404, "RESUME-6", "no such run"),
                ("POST", "/threads/thread:1/runs/run:1/stop", {}, 409, "RESUME-6", "ended"),
                ("POST", "/", {}, 409, "RESUME-4", "never run twice"),
            ]
            for method, url, headers, status, rule, says in cases:
                body = INPUT if url == "/" else None
                answer = await client.request(method, url, headers={**OPT_IN, **headers}, json=body)
                assert answer.status_code == status, (url, headers, answer.text)
                problem = answer.json()
                assert problem["rule"] == rule and says in problem["error"], problem
                assert "\n" not in problem["error"]
                assert b"data:" not in answer.content
            # nothing was lost by the refusals: the log is whole
            whole = await client.get(events_url(), headers=SSE)
            assert ids_and_events(whole.content) == ids_and_events(done.content)

    run_async(main)


def test_an_expired_log_is_410() -> None:
    async def main() -> None:
        async with served(weather, resumable=Resumable(retention=0.2)) as (_, client):
            await client.post("/", json=INPUT, headers=OPT_IN)
            await asyncio.sleep(0.3)
            for answer in (
                await client.get(events_url(), headers=SSE),
                await client.post("/threads/thread:1/runs/run:1/stop"),
            ):
                assert answer.status_code == 410
                assert answer.json()["rule"] == "RESUME-8"

    run_async(main)


def test_rejoin_and_stop_are_authorized_like_the_run() -> None:
    async def authorize(request: Request) -> Any:
        if request.headers.get("authorization") != "Bearer ok":
            return JSONResponse({"error": "no"}, status_code=401)
        return None

    async def main() -> None:
        log = MemoryRunLog()
        async with served(weather, resumable=Resumable(log=log), authorize=authorize) as (_, c):
            ok = {**OPT_IN, "authorization": "Bearer ok"}
            assert (await c.post("/", json=INPUT, headers=ok)).status_code == 200
            assert (await c.get(events_url(), headers=SSE)).status_code == 401
            stop = await c.post("/threads/thread:1/runs/run:1/stop")
            assert stop.status_code == 401
            assert (await c.get(events_url(), headers=ok)).status_code == 200

    run_async(main)


@pytest.mark.parametrize("bad", ["0", "yes", "true", "2"])
def test_only_the_documented_opt_in_opts_in(bad: str) -> None:
    async def main() -> None:
        async with served(weather, resumable=Resumable()) as (_, client):
            answer = await client.post("/", json=INPUT, headers={**SSE, "agui-resumable": bad})
            assert "agui-resumable" not in answer.headers and b"id:" not in answer.content

    run_async(main)


# -- the server's own troubles -------------------------------------------------------------


class FailingLog(MemoryRunLog):
    """A log whose ``begin`` or ``state`` fails, as a database that went away does."""

    def __init__(self, failing: str) -> None:
        super().__init__()
        self.failing = failing

    def begin(
        self,
        thread_id: str,
        run_id: str,
        owner: str,
        lease_until: float,
        started_by: str | None = None,
    ) -> bool:
        if self.failing == "begin":
            raise RuntimeError("the database went away")
        return super().begin(thread_id, run_id, owner, lease_until, started_by)

    def state(self, thread_id: str, run_id: str) -> Any:
        if self.failing == "state":
            raise RuntimeError("the database went away")
        return super().state(thread_id, run_id)


@pytest.mark.run_error("the database went away")  # logged, as the operator must see it
def test_a_failing_log_is_503_never_a_500_nor_a_run() -> None:
    async def main() -> None:
        ran = asyncio.Event()

        async def agent(run: Run) -> None:
            ran.set()
            await run.text("Hi.")

        async with served(agent, resumable=Resumable(log=FailingLog("begin"))) as (_, client):
            answer = await client.post("/", json=INPUT, headers=OPT_IN)
            assert answer.status_code == 503 and answer.headers["retry-after"]
            assert answer.json()["error"] == "the run log is unavailable; retry"
            assert not ran.is_set(), "a run the log cannot keep is not started"
        async with served(weather, resumable=Resumable(log=FailingLog("state"))) as (_, client):
            for answer in (
                await client.get(events_url(), headers=SSE),
                await client.post("/threads/thread:1/runs/run:1/stop"),
            ):
                assert answer.status_code == 503 and answer.json()["rule"] == "RESUME-7"

    run_async(main)


def test_a_shutdown_ends_a_detached_run_in_its_log() -> None:
    async def main() -> None:
        gate, log = Gate(), MemoryRunLog()
        app = agent_app(gate, resumable=Resumable(log=log))
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
            await cut_after_first_events(client, gate)
            ended = await app.state.agui_endpoint.shutdown(0.1)
            assert ended == 1
            state = log.state("thread:1", "run:1")
            assert state is not None and state.finished
            last = orjson.loads(log.read("thread:1", "run:1", state.last_seq - 1, 1)[0])
            assert last["type"] == "RUN_ERROR" and last["code"] == "ServerShuttingDown"

    run_async(main)


def test_a_quiet_follower_gets_keep_alives() -> None:
    async def main() -> None:
        gate = Gate()
        async with served(gate, resumable=Resumable(), keepalive=0.05) as (_, client):
            async with client.stream("POST", "/", json=INPUT, headers=OPT_IN) as stream:
                got = b""
                async for chunk in stream.aiter_bytes():
                    got += chunk
                    if b": keep-alive\n\n" in got:
                        gate.go.set()  # the agent is quiet until a keep-alive came
            judge_sse(got, INPUT)
            assert ids_and_events(got)[-1][0] == "run:1:6"

    run_async(main)


def test_detached_runs_count_against_max_concurrency() -> None:
    """A client cannot pile up detached runs by starting them and leaving: each holds
    a place of the front's max_concurrency until it ends."""

    async def main() -> None:
        gate = Gate()
        async with served(gate, resumable=Resumable(), max_concurrency=1) as (_, client):
            await cut_after_first_events(client, gate)
            refused = await client.post("/", json={**INPUT, "runId": "r2"}, headers=OPT_IN)
            assert refused.status_code == 503
            gate.go.set()
            await asyncio.wait_for(gate.finished.wait(), 30)
            for _ in range(100):  # the writer gives its place back as it ends
                answer = await client.get(events_url(), headers=SSE)
                if answer.status_code == 200:
                    break
                await asyncio.sleep(0.02)
            assert answer.status_code == 200
            assert ids_and_events(answer.content)[-1][1]["type"] == "RUN_FINISHED"

    run_async(main)


class AppendFails(MemoryRunLog):
    """A log that takes a run's first events, then fails every append."""

    def __init__(self) -> None:
        super().__init__()
        self.failing = False

    def append(self, *args: Any, **kwargs: Any) -> bool:
        if self.failing:
            raise RuntimeError("the database went away")
        return super().append(*args, **kwargs)


@pytest.mark.run_error("the database went away")
def test_a_log_failing_mid_run_ends_in_worker_died_not_a_hang() -> None:
    """The writer stops renewing a run it cannot write: its lease lapses and the
    reader sees the log closed, never a stream that waits for ever."""

    async def main() -> None:
        gate, log = Gate(), AppendFails()
        async with served(gate, resumable=Resumable(log=log, lease=0.2)) as (_, client):
            async with client.stream("POST", "/", json=INPUT, headers=OPT_IN) as stream:
                await gate.streaming.wait()
                log.failing = True
                gate.go.set()
                raw = b"".join([chunk async for chunk in stream.aiter_bytes()])
            last = ids_and_events(raw)[-1][1]
            assert last["type"] == "RUN_ERROR" and last["code"] == "WORKER_DIED"

    run_async(main)


def test_ids_with_slashes_rejoin_through_a_mounted_app() -> None:
    """Ids are percent-encoded path segments (an encoded '/' included), and the routes
    follow the agent when FastAPI mounts it under a prefix."""
    from fastapi import FastAPI

    odd = {**INPUT, "threadId": "th/1 é", "runId": "run/1:x"}

    async def main() -> None:
        api = FastAPI()
        api.mount("/agent", agent_app(weather, resumable=Resumable()))
        async with serving(api) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
            done = await client.post("/agent/", json=odd, headers=OPT_IN)
            assert done.status_code == 200
            numbered = ids_and_events(done.content)
            assert numbered[0][0] == "run/1:x:1"
            path = "/agent/threads/th%2F1%20%C3%A9/runs/run%2F1%3Ax/events"
            rejoin = await client.get(path, headers={**SSE, "last-event-id": "run/1:x:3"})
            assert rejoin.status_code == 200, rejoin.text
            assert ids_and_events(rejoin.content) == numbered[3:]
            assert (await client.get("/agent/capabilities")).status_code == 200

    run_async(main)


def test_a_lease_below_the_minimum_is_refused_by_name() -> None:
    """A tiny lease would spin the keeper that renews it four times a lease."""
    with pytest.raises(ValueError, match=r"Resumable.lease must be at least 0.1 seconds"):
        Resumable(lease=0.001)
    assert Resumable(lease=MIN_LEASE).lease == MIN_LEASE


def test_a_run_past_max_run_bytes_is_stopped_and_its_log_says_so() -> None:
    """A detached run that never ends cannot grow its log without bound: at
    ``max_run_bytes`` it is stopped, and its log — the live stream and every rejoin
    alike — ends with RUN_ERROR ``RUN_LOG_LIMIT``, never a silent cut."""
    cap = 4_000
    cancelled = asyncio.Event()

    async def endless(run: Run) -> None:
        try:
            async with run.message(message_id="m1") as m:
                while True:
                    await m.delta("x" * 100)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def main() -> None:
        log = MemoryRunLog()
        resumable = Resumable(log=log, max_run_bytes=cap)
        async with served(endless, resumable=resumable) as (_, client):
            live = await client.post("/", json=INPUT, headers=OPT_IN)
            rejoined = await client.get(events_url(), headers=SSE)
            await asyncio.wait_for(cancelled.wait(), 30)
        for answer in (live, rejoined):
            events = [e for _, e in ids_and_events(answer.content)]
            assert events[-1]["type"] == "RUN_ERROR", events[-1]
            assert events[-1]["code"] == "RUN_LOG_LIMIT"
            assert f"max_run_bytes={cap}" in events[-1]["message"]
        assert live.content == rejoined.content, "one log, one ending"
        kept = log.read("thread:1", "run:1", 0, 10_000)[:-1]
        assert sum(map(len, kept)) <= cap, "never past the cap"
        assert cap - sum(map(len, kept)) < max(map(len, kept)), "filled up to it"

    run_async(main)


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_max_run_bytes_must_be_a_positive_count(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"Resumable.max_run_bytes must be a positive number"):
        Resumable(max_run_bytes=bad)
