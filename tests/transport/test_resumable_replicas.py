"""The resumable binding across replicas on PostgreSQL (docs/resumable.md, RESUME-10).

Replica A is a real ``agui-tools serve --resumable --run-log DSN`` process; replica B
an ``agent_app`` in this process on the same database. B serves the rejoin and the
stop of a run A runs; a SIGKILLed A leaves a log B closes with ``WORKER_DIED``.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from agui_tools.app._run_log_sql import PostgresRunLog
from agui_tools.transport._resumable import Resumable
from agui_tools.transport._server import agent_app
from agui_tools.transport._serving import serving
from tests.helpers.judging import judge_sse
from tests.helpers.proxy import serve_cmd
from tests.helpers.resumable import OPT_IN, SSE, ids_and_events, quick

INPUT: dict[str, Any] = {
    "threadId": "t1",
    "runId": "r1",
    "messages": [{"id": "u1", "role": "user", "content": "Go."}],
}
EVENTS = "/threads/t1/runs/r1/events"


@asynccontextmanager
async def replica_b(dsn: str) -> AsyncIterator[httpx.AsyncClient]:
    """Replica B: an agent_app in this process on the same database, and a client."""
    log = PostgresRunLog(dsn)
    try:
        b = agent_app(quick, resumable=Resumable(log=log, lease=1))
        async with serving(b) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
            yield client
    finally:
        log.close()


@pytest.fixture
def replica_a(postgres_dsn: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc, url = serve_cmd(
        "tests.helpers.resumable:working",
        "--path", "/", "--resumable", "--run-log", postgres_dsn, "--lease", "1",
    )  # fmt: skip
    try:
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


async def first_events(url: str) -> list[tuple[str | None, dict[str, Any]]]:
    """POST the run to A, opted in; read until its two deltas came; then cut."""
    got = b""
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream("POST", url, json=INPUT, headers=OPT_IN) as stream,
    ):
        assert stream.headers["agui-resumable"] == "1"
        async for chunk in stream.aiter_bytes():
            got += chunk
            if b"on it" in got:
                break
    return ids_and_events(got)


def test_another_replica_serves_the_rejoin_and_the_stop(
    replica_a: tuple[subprocess.Popen[str], str], postgres_dsn: str
) -> None:
    _, url_a = replica_a

    async def main() -> None:
        head = await first_events(url_a)
        assert [i for i, _ in head] == ["r1:1", "r1:2", "r1:3", "r1:4"]
        async with replica_b(postgres_dsn) as client:
            async with client.stream(
                "GET", EVENTS, headers={**SSE, "last-event-id": "r1:2"}
            ) as rejoin:
                stop = await client.post("/threads/t1/runs/r1/stop")
                assert stop.status_code == 202, stop.text
                raw = b"".join([c async for c in rejoin.aiter_bytes()])
            tail = ids_and_events(raw)
            assert [i for i, _ in tail] == ["r1:3", "r1:4", "r1:5", "r1:6"]
            assert tail[-1][1] == {
                "type": "RUN_FINISHED",
                "threadId": "t1",
                "runId": "r1",
                "outcome": {"type": "cancelled"},
            }
            whole = await client.get(EVENTS, headers=SSE)
            judge_sse(whole.content, INPUT)
            assert (await client.post("/threads/t1/runs/r1/stop")).status_code == 409

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_killed_replica_leaves_worker_died_never_a_gap(
    replica_a: tuple[subprocess.Popen[str], str], postgres_dsn: str
) -> None:
    proc, url_a = replica_a

    async def main() -> None:
        head = await first_events(url_a)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        async with replica_b(postgres_dsn) as client:
            rejoin = await client.get(EVENTS, headers={**SSE, "last-event-id": "r1:4"})
            assert rejoin.status_code == 200
            tail = ids_and_events(rejoin.content)
            assert tail == [
                (
                    "r1:5",
                    {
                        "type": "RUN_ERROR",
                        "message": "the run's worker died",
                        "code": "WORKER_DIED",
                    },
                )
            ]
            whole = await client.get(EVENTS, headers=SSE)
            assert ids_and_events(whole.content) == [*head, *tail]
            judge_sse(whole.content, INPUT, run_error=True)

    asyncio.run(asyncio.wait_for(main(), 60))
