"""A client connection cut at every event boundary of a run, and rejoined there
(docs/resumable.md, RESUME-3/RESUME-5), on the memory, SQLite and PostgreSQL logs:
the events delivered before the cut plus the rejoin's are the uncut run's, once
each, in order, and the agent's own tool ran once per run."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_tools.agent import Run
from agui_tools.app._run_log import MemoryRunLog, RunLog
from agui_tools.app._run_log_sql import PostgresRunLog, SQLiteRunLog
from agui_tools.transport._resumable import Resumable
from agui_tools.transport._server import agent_app
from agui_tools.transport._serving import serving
from tests.helpers.judging import judge_sse
from tests.helpers.resumable import OPT_IN, SSE, ids_and_events

executed: list[str] = []


async def refund(run: Run) -> None:
    """An agent-side tool with a side effect (counted), and a frontend call after it."""
    async with run.message(message_id="m1") as m:
        await m.delta("Refunding.")
        async with run.tool_call("refund", call_id="c1", parent_message_id="m1") as call:
            await call.args('{"order":"A-1"}')
    executed.append(run.run_id)
    await asyncio.sleep(0.01)  # the cut may land while the run is live
    await run.result("c1", "refunded", message_id="res1")
    async with run.tool_call("confirm", call_id="c2") as card:
        await card.args('{"ok":true}')


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def run_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunLog]:
    if request.param == "memory":
        yield MemoryRunLog()
        return
    opened: SQLiteRunLog | PostgresRunLog = (
        SQLiteRunLog(str(tmp_path / "runs.db"))
        if request.param == "sqlite"
        else PostgresRunLog(request.getfixturevalue("postgres_dsn"))
    )
    try:
        yield opened
    finally:
        opened.close()


def run_input(run_id: str) -> dict[str, Any]:
    return {
        "threadId": "t",
        "runId": run_id,
        "messages": [{"id": "u1", "role": "user", "content": "Refund A-1."}],
        "tools": [{"name": "confirm", "description": "Ask the user to confirm."}],
    }


async def cut_after(client: httpx.AsyncClient, run_id: str, k: int) -> list[Any]:
    """Deliver the run's first ``k`` events, cut, rejoin after ``k``: what a client got."""
    delivered: list[Any] = []
    raw = b""
    async with client.stream("POST", "/", json=run_input(run_id), headers=OPT_IN) as stream:
        async for chunk in stream.aiter_bytes():
            raw += chunk
            whole = raw[: raw.rfind(b"\n\n") + 2]
            if len(ids_and_events(whole)) >= k:
                delivered = ids_and_events(whole)[:k]
                break
    rejoin = await client.get(
        f"/threads/t/runs/{run_id}/events",
        headers={**SSE, "last-event-id": f"{run_id}:{k}"},
    )
    assert rejoin.status_code == 200
    return delivered + ids_and_events(rejoin.content)


def test_a_cut_at_every_boundary_loses_and_repeats_nothing(run_log: RunLog) -> None:
    executed.clear()

    async def main() -> int:
        app = agent_app(refund, resumable=Resumable(log=run_log))
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
            uncut = await client.post("/", json=run_input("uncut"), headers=OPT_IN)
            whole = ids_and_events(uncut.content)
            judge_sse(uncut.content, run_input("uncut"))
            n = len(whole)
            for k in range(n + 1):
                got = await cut_after(client, f"cut-{k}", k)
                assert [i for i, _ in got] == [f"cut-{k}:{s}" for s in range(1, n + 1)], k
                renamed = [{**e, "runId": "uncut"} if "runId" in e else e for _, e in got]
                assert renamed == [e for _, e in whole], f"cut after {k}: not the uncut run"
            return n

    points = asyncio.run(asyncio.wait_for(main(), 120))
    assert points >= 10
    runs = ["uncut", *(f"cut-{k}" for k in range(points + 1))]
    assert sorted(executed) == sorted(runs), "the agent-side tool ran once per run"
