"""The resumable binding's fault campaign (#38's acceptance): the client connection
cut at EVERY event boundary of a conversation — a run with an agent-side tool and
a frontend tool, then its continuation — against the real resumable server, its
run log in memory, SQLite and PostgreSQL, and with every rejoin served by a second
replica (PostgreSQL). Each trial: 0 events lost, 0 duplicated, the agent-side
tool executed exactly once, the thread equal to the uncut run's. The number of
points is printed at the end (engine: tests/helpers/resumable_campaign.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from agui_tools.app._run_log import MemoryRunLog
from agui_tools.app._run_log_sql import PostgresRunLog, SQLiteRunLog
from agui_tools.transport._resumable import Resumable
from agui_tools.transport._server import agent_app
from tests.helpers.resumable_campaign import Trial, campaign, flaky
from tests.helpers.resumable_server import two_tool_agent
from tests.helpers.scripted_server import serve

TALLY: dict[str, list[Trial]] = {}


@pytest.fixture(scope="module", autouse=True)
def report(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    if reporter is None or not TALLY:
        return
    reporter.write_line("")
    reporter.write_line("resumable fault campaign: cut points / lost / duplicated / failed")
    for name, trials in TALLY.items():
        reporter.write_line(
            f"  {name:<18}{len(trials):>4} points{sum(t.lost for t in trials):>4} lost"
            f"{sum(t.duplicated for t in trials):>4} duplicated"
            f"{sum(1 for t in trials if t.problems):>4} failed"
        )
    reporter.write_line(f"  {'all':<18}{sum(len(t) for t in TALLY.values()):>4} points")


@contextmanager
def replica(executions: dict[str, int], log: Any, rejoins: list[str]) -> Iterator[int]:
    app = agent_app(two_tool_agent(executions), path="/agent", resumable=Resumable(log=log))

    async def counting(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            rejoins.append(scope["path"])
        await app(scope, receive, send)

    try:
        with serve(counting) as base:
            yield int(base.rsplit(":", 1)[1])
    finally:
        close = getattr(log, "close", None)
        if close is not None:
            close()  # its connections and listener, before the test's server goes


def run_campaign(
    name: str, logs: Callable[[], Any], *, replicas: int = 1, mid_event: int = 0
) -> None:
    executions: dict[str, int] = {}
    served: list[list[str]] = [[] for _ in range(replicas)]
    with ExitStack() as stack:
        ports = [
            stack.enter_context(replica(executions, logs(), served[i])) for i in range(replicas)
        ]
        baseline, trials = campaign(
            ports[0],
            executions,
            name=name,
            later_port=ports[-1] if replicas > 1 else None,
            mid_event=mid_event,
        )
    TALLY[name] = trials
    # each cut is rejoined, but for the two right after a run's terminal event
    assert sum(1 for t in trials if t.rejoins) == len(trials) - 2
    assert len(served[-1]) == sum(t.rejoins for t in trials)  # the last replica served them
    assert baseline.statuses == ["success", "success"]
    assert len(trials) == len(baseline.events) >= 19  # both runs, every boundary
    failed = [(t.point, t.lost, t.duplicated, t.problems) for t in trials if t.problems]
    assert not failed
    assert sum(t.lost for t in trials) == 0 and sum(t.duplicated for t in trials) == 0
    assert all(t.executions == 1 for t in trials)


def test_every_cut_point_with_the_log_in_memory() -> None:
    run_campaign("memory", MemoryRunLog)


def test_every_event_torn_with_the_log_in_memory() -> None:
    """The cut lands 60 bytes into the event after each boundary: the torn event is
    dropped with its connection and read whole from the rejoin."""
    run_campaign("memory-torn", MemoryRunLog, mid_event=60)


def test_every_cut_point_with_the_log_in_sqlite(tmp_path: Path) -> None:
    run_campaign("sqlite", lambda: SQLiteRunLog(str(tmp_path / "runs.db")))


def test_every_cut_point_with_the_log_in_postgres(postgres_dsn: str) -> None:
    run_campaign("postgres", lambda: PostgresRunLog(postgres_dsn))


def test_every_cut_point_rejoined_through_a_second_replica(postgres_dsn: str) -> None:
    run_campaign("postgres-replica", lambda: PostgresRunLog(postgres_dsn), replicas=2)


@pytest.mark.parametrize("every", [1, 3])
def test_a_link_that_drops_every_connection_still_delivers_one_thread(
    every: int, tmp_path: Path
) -> None:
    """Each connection — the run requests and every rejoin — cut after ``every`` events
    of its own: the conversation still reads each event once, the tool runs once."""
    executions: dict[str, int] = {}
    with replica(executions, SQLiteRunLog(str(tmp_path / "runs.db")), []) as port:
        baseline, _ = campaign(port, executions, name=f"flaky{every}-base-only", points=0)
        trial, cuts = flaky(port, executions, baseline, name=f"flaky{every}", every=every)
    assert trial.problems == [] and trial.lost == trial.duplicated == 0
    assert cuts >= len(baseline.events) // every - 2  # it was cut, again and again
