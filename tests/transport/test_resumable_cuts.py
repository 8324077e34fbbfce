"""A client connection cut at every event boundary of a run, and rejoined there
(docs/resumable.md, RESUME-3/RESUME-5), on the memory, SQLite and PostgreSQL logs:
the events delivered before the cut plus the rejoin's are the uncut run's, once
each, in order, and the agent's own tool ran once per run."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agui_tools.app._run_log import RunLog
from agui_tools.transport._resumable import Resumable
from agui_tools.transport._server import agent_app
from agui_tools.transport._serving import serving
from tests.helpers.judging import judge_sse
from tests.helpers.resumable import (
    OPT_IN,
    cut_after,
    executed,
    ids_and_events,
    opened_run_log,
    refund,
    refund_input,
)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def run_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunLog]:
    with opened_run_log(request, tmp_path) as opened:
        yield opened


def test_a_cut_at_every_boundary_loses_and_repeats_nothing(run_log: RunLog) -> None:
    executed.clear()

    async def main() -> int:
        app = agent_app(refund, resumable=Resumable(log=run_log))
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
            uncut = await client.post("/", json=refund_input("uncut"), headers=OPT_IN)
            whole = ids_and_events(uncut.content)
            judge_sse(uncut.content, refund_input("uncut"))
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
