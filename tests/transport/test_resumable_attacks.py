"""The resumable server attacked as a stranger would, over real HTTP on loopback.

Each test is a finding: a rejoin or a stop that the spec page (docs/resumable.md)
answers one way and the server answered another. Waiting is on the agents' own
flags and on the stream; the bounds are hang bounds, never timings.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse

from agui_tools.app import Principal
from agui_tools.app._run_log import MemoryRunLog, RunState
from agui_tools.app._run_log_sql import PostgresRunLog, SQLiteRunLog
from agui_tools.transport import _resumable
from agui_tools.transport._resumable import Resumable, ResumableRuns
from agui_tools.transport._server import agent_app
from agui_tools.transport._serving import serving
from tests.helpers.postgres import PostgresServer
from tests.helpers.resumable import OPT_IN, SSE, ids_and_events, quick, working


def run_input(thread_id: str = "t1", run_id: str = "r1") -> dict[str, Any]:
    return {
        "threadId": thread_id,
        "runId": run_id,
        "messages": [{"id": "u1", "role": "user", "content": "Go"}],
    }


@asynccontextmanager
async def served(
    max_concurrency: int | None = None, **options: Any
) -> AsyncIterator[httpx.AsyncClient]:
    app = agent_app(working, resumable=Resumable(**options), max_concurrency=max_concurrency)
    async with (
        serving(app) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        yield client


async def started(client: httpx.AsyncClient, body: dict[str, Any], events: int = 3) -> None:
    """Start a detached run, read its first ``events`` and leave (the run goes on)."""
    async with client.stream("POST", "/", json=body, headers=OPT_IN) as stream:
        assert stream.headers["agui-resumable"] == "1"
        seen = b""
        async for chunk in stream.aiter_bytes():
            seen += chunk
            if len(ids_and_events(seen)) >= events:
                return


def run_async(test: Any) -> None:
    asyncio.run(asyncio.wait_for(test(), 60))


def test_a_seq_beyond_a_running_runs_log_is_400_not_a_silent_stream() -> None:
    """RESUME-7: events are logged before they are sent, so no client holds a seq past
    the log's last; such a rejoin was answered 200 and then nothing (or, once the
    run caught up, the events after it: a gap the client never hears of)."""

    async def main() -> None:
        async with served() as client:
            await started(client, run_input())  # RUN_STARTED, TEXT_MESSAGE_START, 2 deltas
            url = "/threads/t1/runs/r1/events"
            for headers, query in (({"last-event-id": "r1:99"}, ""), ({}, "?after=5")):
                answer = await client.get(url + query, headers={**SSE, **headers})
                assert answer.status_code == 400, answer.text
                problem = answer.json()
                assert problem["rule"] == "RESUME-7" and "beyond" in problem["error"], problem
                assert b"data:" not in answer.content
            # nothing was lost: the run still runs, and stops cancelled
            assert (await client.post("/threads/t1/runs/r1/stop")).status_code == 202
            whole = ids_and_events((await client.get(url, headers=SSE)).content)
            assert [i for i, _ in whole] == [f"r1:{n}" for n in range(1, len(whole) + 1)]
            assert whole[-1][1]["outcome"] == {"type": "cancelled"}

    run_async(main)


def test_odd_run_ids_are_rejoined_by_the_id_their_stream_gave() -> None:
    """RESUME-5: a browser resends the SSE ``id`` it read, in UTF-8, and HTTP strips
    the spaces around a header's value. A non-ASCII ``runId`` was read back as
    Latin-1 and one starting with a space lost it: both were refused 400 "names run
    …" — a run its own client could never rejoin."""

    async def main() -> None:
        async with served() as client:
            for thread_id, run_id in (("tü", "rün ☃"), ("t1", " spaced "), ("t1", "\tr:x")):
                await started(client, run_input(thread_id, run_id))
                url = f"/threads/{quote(thread_id, safe='')}/runs/{quote(run_id, safe='')}"
                # as a browser sends the id its stream gave: UTF-8, without the spaces
                # a header's value cannot carry at its ends
                header = f"{run_id}:2".encode().strip(b" \t")
                async with client.stream(
                    "GET", url + "/events", headers={**SSE, "last-event-id": header}
                ) as rejoin:
                    assert rejoin.status_code == 200, (run_id, await rejoin.aread())
                    seen = b""
                    async for chunk in rejoin.aiter_bytes():
                        seen += chunk
                        if len(ids_and_events(seen)) >= 2:
                            break
                assert [i for i, _ in ids_and_events(seen)][:2] == [f"{run_id}:3", f"{run_id}:4"]
                assert (await client.post(url + "/stop")).status_code == 202
            # a header that is not UTF-8 is refused by name, not a 500
            wrong = await client.get(
                "/threads/t1/runs/%20spaced%20/events", headers={"last-event-id": b"r\xff:1"}
            )
            assert wrong.status_code == 400 and "names run" in wrong.json()["error"], wrong.text

    run_async(main)


class Watched(MemoryRunLog):
    """A memory log that says when a reader has looked at a run's state ``looks`` times
    since :meth:`arm` (what it does next with that state happens in the same step)."""

    def __init__(self) -> None:
        super().__init__()
        self.looked = asyncio.Event()
        self._left: int | None = None

    def arm(self, looks: int) -> None:
        self._left = looks

    def state(self, thread_id: str, run_id: str) -> RunState | None:
        if self._left is not None:
            self._left -= 1
            if self._left == 0:
                self.looked.set()
        return super().state(thread_id, run_id)


def test_a_clock_jump_never_closes_a_run_its_own_worker_is_writing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RESUME-10: a lease lapses when a worker is silent, but a wall clock stepped
    forward (NTP, a VM or laptop resumed) made every run look lapsed to its readers,
    which closed live runs WORKER_DIED between two rounds of their own keeper."""
    jump = 0.0

    class Clock:
        monotonic = staticmethod(time.monotonic)

        @staticmethod
        def time() -> float:
            return time.time() + jump

    monkeypatch.setattr(_resumable, "time", Clock)

    async def main() -> None:
        nonlocal jump
        log = Watched()
        async with served(log=log) as client:
            await started(client, run_input(), events=4)
            jump = 3600.0
            log.arm(2)  # the rejoin's judgement, then its reader's look once replayed
            url = "/threads/t1/runs/r1"
            async with client.stream("GET", url + "/events", headers=SSE) as rejoin:
                seen = b""
                stream = rejoin.aiter_bytes()
                while len(ids_and_events(seen)) < 4:
                    seen += await anext(stream)
                await log.looked.wait()
                stop = await client.post(url + "/stop")
                assert stop.status_code == 202, stop.text
                seen += b"".join([chunk async for chunk in stream])
            events = [event for _, event in ids_and_events(seen)]
            assert all(e.get("code") != "WORKER_DIED" for e in events), events[-1]
            assert events[-1]["type"] == "RUN_FINISHED"
            assert events[-1]["outcome"] == {"type": "cancelled"}

    run_async(main)


def test_a_postgres_restart_costs_the_log_nothing(
    postgres_dsn: str, postgres_server: PostgresServer
) -> None:
    """RESUME-7: 503 is for a log that "cannot be read or written (a database away)".
    The PostgreSQL log held one connection, never opened again: after the server
    restarted, every rejoin, stop and opted-in run was 503 until the process was."""

    async def main() -> None:
        log = PostgresRunLog(postgres_dsn)
        try:
            async with (
                serving(agent_app(quick, resumable=Resumable(log=log))) as url,
                httpx.AsyncClient(base_url=url, timeout=30) as client,
            ):
                first = await client.post("/", json=run_input(), headers=OPT_IN)
                assert first.status_code == 200
                await asyncio.to_thread(postgres_server.restart)
                again = await client.get("/threads/t1/runs/r1/events", headers=SSE)
                assert again.status_code == 200, again.text
                assert ids_and_events(again.content) == ids_and_events(first.content)
                second = await client.post("/", json=run_input(run_id="r2"), headers=OPT_IN)
                assert second.status_code == 200, second.text
                assert ids_and_events(second.content)[-1][1]["type"] == "RUN_FINISHED"
        finally:
            log.close()

    run_async(main)


class Lagging(MemoryRunLog):
    """A log whose next look at a run sees it still running: the run ends between a
    stop's look and its record, as it can when the log is a database."""

    stale = False

    def state(self, thread_id: str, run_id: str) -> RunState | None:
        state = super().state(thread_id, run_id)
        if self.stale and state is not None:
            self.stale = False
            return replace(state, finished_at=None)
        return state


def test_a_stop_racing_the_runs_end_is_409_not_a_promise_of_cancel() -> None:
    """RESUME-6: ``202 stopping`` promises a cancelled end. A run that ended between
    the stop's look and its record was still answered 202, though nothing was
    recorded and the run had finished as it was."""

    async def main() -> None:
        log = Lagging()
        async with (
            serving(agent_app(quick, resumable=Resumable(log=log))) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            done = await client.post("/", json=run_input(), headers=OPT_IN)
            log.stale = True
            stop = await client.post("/threads/t1/runs/r1/stop")
            assert stop.status_code == 409, stop.text
            assert stop.json()["status"] == "finished" and stop.json()["rule"] == "RESUME-6"
            whole = await client.get("/threads/t1/runs/r1/events", headers=SSE)
            assert ids_and_events(whole.content) == ids_and_events(done.content)

    run_async(main)


def test_a_stop_is_served_when_detached_runs_hold_every_place() -> None:
    """RESUME-3/RESUME-6: a detached run holds a place of ``max_concurrency`` until it
    ends, and a stop is how it is ended early. With every place held by runs whose
    clients left, the stop itself was refused 503: runs that never end on their own
    could then not be ended at all, short of restarting the server."""

    async def main() -> None:
        async with served(max_concurrency=2) as client:
            for run_id in ("r1", "r2"):
                await started(client, run_input(run_id=run_id))
            full = await client.post("/", json=run_input(run_id="r3"), headers=OPT_IN)
            assert full.status_code == 503, "the places are held: no third run"
            for run_id in ("r1", "r2"):
                stop = await client.post(f"/threads/t1/runs/{run_id}/stop")
                assert stop.status_code == 202, stop.text
            for _ in range(200):  # each writer gives its place back as its run ends
                answer = await client.get("/threads/t1/runs/r2/events", headers=SSE)
                if answer.status_code == 200:
                    break
                await asyncio.sleep(0.05)
            assert ids_and_events(answer.content)[-1][1]["outcome"] == {"type": "cancelled"}

    run_async(main)


def user_of(request: Request) -> Any:
    """A hook naming who calls: ``Bearer alice`` is the principal ``alice``."""
    token = request.headers.get("authorization", "")
    if token not in ("Bearer alice", "Bearer bob"):
        return JSONResponse({"error": "no"}, status_code=401)
    return Principal(token.removeprefix("Bearer "), authenticated_by="token")


@asynccontextmanager
async def alice_and_bob(app: Any) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """``app`` served, and a client of each user, sending the user's token."""
    async with (
        serving(app) as url,
        httpx.AsyncClient(
            base_url=url, timeout=30, headers={"authorization": "Bearer alice"}
        ) as alice,
        httpx.AsyncClient(base_url=url, timeout=30, headers={"authorization": "Bearer bob"}) as bob,
    ):
        yield alice, bob


def test_another_users_token_neither_rejoins_nor_stops_a_run() -> None:
    """RESUME-5 binds a run to the principal the authorization hook named when it
    started: another user's token, though admitted, reads and stops nothing, and is
    answered 404 as for a run that does not exist (never 403, which would tell it does)."""

    async def main() -> None:
        app = agent_app(working, resumable=Resumable(), authorize=user_of)
        async with alice_and_bob(app) as (alice, bob):
            await started(alice, run_input())
            rejoin = await bob.get("/threads/t1/runs/r1/events", headers=SSE)
            stop = await bob.post("/threads/t1/runs/r1/stop")
            unknown_rejoin = await bob.get("/threads/t1/runs/nope/events", headers=SSE)
            unknown_stop = await bob.post("/threads/t1/runs/nope/stop")
            assert rejoin.status_code == stop.status_code == 404
            for answer, unknown in ((rejoin, unknown_rejoin), (stop, unknown_stop)):
                told = {**answer.json(), "runId": "nope"}
                assert told == unknown.json(), "the refusal must not tell the run exists"
            assert rejoin.json()["rule"] == "RESUME-7" and stop.json()["rule"] == "RESUME-6"
            # the owner still rejoins and stops it: bob's attempts cost the run nothing
            async with alice.stream("GET", "/threads/t1/runs/r1/events", headers=SSE) as mine:
                assert mine.status_code == 200
            stopped = await alice.post("/threads/t1/runs/r1/stop")
            assert stopped.status_code == 202, stopped.text
            replay = await alice.get("/threads/t1/runs/r1/events", headers=SSE)
            last = ids_and_events(replay.content)[-1][1]
            assert last["type"] == "RUN_FINISHED" and last["outcome"] == {"type": "cancelled"}

    run_async(main)


def test_a_hook_that_names_no_one_lets_every_admitted_caller_rejoin() -> None:
    """The yes/no hook is unchanged: it gives no identity, so a run is bound to no one
    and any caller it admits rejoins and stops it (docs/resumable.md says so)."""

    async def admit(request: Request) -> Any:
        token = request.headers.get("authorization")
        return None if token in ("Bearer alice", "Bearer bob") else JSONResponse({}, 401)

    async def main() -> None:
        app = agent_app(working, resumable=Resumable(), authorize=admit)
        async with alice_and_bob(app) as (alice, bob):
            await started(alice, run_input())
            async with bob.stream("GET", "/threads/t1/runs/r1/events", headers=SSE) as read:
                assert read.status_code == 200
            assert (await bob.post("/threads/t1/runs/r1/stop")).status_code == 202
            stranger = await bob.get(
                "/threads/t1/runs/r1/events", headers={"authorization": "Bearer eve"}
            )
            assert stranger.status_code == 401

    run_async(main)


def test_a_sqlite_file_locked_past_the_lease_costs_the_live_run_nothing(tmp_path: Path) -> None:
    """RESUME-10 closes the runs of a worker that died, not of one that waited: another
    process holding the SQLite file locked longer than the lease stalled the worker's
    renewal and its appends alike, and when the lock went the first reader to look
    closed the live run WORKER_DIED before its worker could renew it."""
    path = tmp_path / "runs.sqlite"

    async def main() -> None:
        log = SQLiteRunLog(str(path))
        try:
            async with served(log=log, lease=0.3) as client:
                await started(client, run_input())
                release = threading.Event()
                locked = threading.Event()

                def lock() -> None:  # as another process would: its own connection
                    other = sqlite3.connect(path, isolation_level=None)
                    other.execute("BEGIN EXCLUSIVE")
                    locked.set()
                    release.wait(30)
                    other.execute("COMMIT")
                    other.close()

                url = "/threads/t1/runs/r1"
                async with client.stream("GET", url + "/events", headers=SSE) as rejoin:
                    stream = rejoin.aiter_bytes()
                    seen = await anext(stream)  # a reader follows the run
                    holder = threading.Thread(target=lock)
                    holder.start()
                    await asyncio.to_thread(locked.wait, 30)
                    # four lease periods of the keeper stalled on the lock, by its clock
                    await asyncio.sleep(1.2)
                    release.set()
                    await asyncio.to_thread(holder.join, 30)
                    stop = await client.post(url + "/stop")
                    assert stop.status_code == 202, stop.text
                    seen += b"".join([chunk async for chunk in stream])
            events = [event for _, event in ids_and_events(seen)]
            assert all(e.get("code") != "WORKER_DIED" for e in events), events[-1]
            assert events[-1]["outcome"] == {"type": "cancelled"}
        finally:
            log.close()

    run_async(main)


def test_ids_no_run_can_have_are_404_not_a_log_unavailable(postgres_dsn: str) -> None:
    """RESUME-7: a rejoin or a stop naming ids that no run request is let in with (a
    NUL, over the id limit) is of no such run. PostgreSQL cannot even hold a NUL, and
    its error was answered 503 "retry" — a client told to retry for ever."""

    async def main() -> None:
        log = PostgresRunLog(postgres_dsn)
        try:
            app = agent_app(quick, resumable=Resumable(log=log))
            async with (
                serving(app) as url,
                httpx.AsyncClient(base_url=url, timeout=30) as client,
            ):
                for thread, run, says in (
                    ("t%00", "r1", "threadId contains a NUL"),
                    ("t1", "r%00", "runId contains a NUL"),
                    ("t1", "r" * 1100, "over the 1,024-byte limit"),
                ):
                    base = f"/threads/{thread}/runs/{run}"
                    for answer in (
                        await client.get(base + "/events", headers=SSE),
                        await client.post(base + "/stop"),
                    ):
                        assert answer.status_code == 404, answer.text
                        problem = answer.json()
                        assert problem["rule"] == "RESUME-7" and says in problem["error"]
                        assert "\n" not in problem["error"]
                # the log serves on: a run, then its rejoin
                done = await client.post("/", json=run_input(), headers=OPT_IN)
                again = await client.get("/threads/t1/runs/r1/events", headers=SSE)
                assert ids_and_events(again.content) == ids_and_events(done.content)
        finally:
            log.close()

    run_async(main)


def test_a_log_expiring_under_a_slow_replay_ends_the_stream_never_the_server() -> None:
    """RESUME-8: a reader still replaying a finished run when its retention passed
    found no events below the run's last seq, and looked again at once — without
    ever yielding, on the memory log: the server's event loop spun for ever. The
    stream ends instead (a cut: the client's rejoin is then told 410)."""
    log = MemoryRunLog()
    log.begin("t1", "r1", "w", 1e12)
    log.append("t1", "r1", 1, [b'{"n":%d}' % n for n in range(600)], finished_at=100.0)
    runs = ResumableRuns(
        Resumable(log=log),
        working,
        verify=False,
        expose_errors=False,
        keepalive=None,
        high_water=64,
        shutdown_error=b"{}",
        internal_error=b"{}",
    )
    sent: list[bytes] = []

    async def send(message: Any) -> None:  # a reader slow enough for the retention to pass
        sent.append(message["body"])
        log.expire(1e9, 0.0)

    ended = threading.Event()

    def replay() -> None:
        asyncio.run(runs._read("t1", "r1", 0, send))
        ended.set()

    threading.Thread(target=replay, daemon=True).start()  # a spinning loop cannot be timed out
    assert ended.wait(30), "the reader spun: the event loop never came back"
    assert len(sent) == 1 and sent[0].count(b"\nid: r1:") == 255  # the first batch only


@pytest.mark.run_error("keeper failed")  # each round while the database is away
def test_a_postgres_outage_longer_than_the_lease_spares_a_quiet_run(
    postgres_dsn: str, postgres_server: PostgresServer
) -> None:
    """RESUME-10 closes a run whose worker died; one whose database was away longer
    than the lease, while it wrote nothing, lost no event and is alive: once the
    database is back its worker renews it before anyone may reap it."""

    async def main() -> None:
        log = PostgresRunLog(postgres_dsn)
        try:
            async with served(log=log, lease=0.5) as client:
                await started(client, run_input())
                await asyncio.to_thread(postgres_server.stop)
                try:
                    await asyncio.sleep(1.5)  # three leases without a renewal
                finally:
                    await asyncio.to_thread(postgres_server.start)
                url = "/threads/t1/runs/r1"
                async with client.stream("GET", url + "/events", headers=SSE) as rejoin:
                    assert rejoin.status_code == 200
                    stop = await client.post(url + "/stop")
                    assert stop.status_code == 202, stop.text
                    seen = b"".join([chunk async for chunk in rejoin.aiter_bytes()])
            whole = ids_and_events(seen)
            assert [i for i, _ in whole] == [f"r1:{n}" for n in range(1, len(whole) + 1)]
            assert all(e.get("code") != "WORKER_DIED" for _, e in whole), whole[-1]
            assert whole[-1][1]["outcome"] == {"type": "cancelled"}
        finally:
            log.close()

    run_async(main)
