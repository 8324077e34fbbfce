"""The run log of the resumable binding (docs/resumable.md), on memory, SQLite and
PostgreSQL: the same behaviour from each, and the judgements every rejoin and stop
is answered by (RESUME-5 … RESUME-10)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from agui_tools.app._run_log import (
    WORKER_DIED,
    LogRefusal,
    MemoryRunLog,
    RunLog,
    RunState,
    judge_rejoin,
    judge_stop,
    parse_after,
    seen_by,
)
from agui_tools.app._run_log_sql import PostgresRunLog, SQLiteRunLog


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def run_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunLog]:
    if request.param == "memory":
        yield MemoryRunLog()
        return
    opened: SQLiteRunLog | PostgresRunLog
    if request.param == "sqlite":
        opened = SQLiteRunLog(str(tmp_path / "runs.sqlite"))
    else:
        opened = PostgresRunLog(request.getfixturevalue("postgres_dsn"))
    try:
        yield opened
    finally:
        opened.close()


def events(n: int, start: int = 1) -> list[bytes]:
    return [b'{"n":%d}' % i for i in range(start, start + n)]


def test_a_run_is_logged_once_and_read_after_any_seq(run_log: RunLog) -> None:
    assert run_log.state("t", "r") is None
    assert run_log.begin("t", "r", "w1", 100.0)
    assert not run_log.begin("t", "r", "w2", 100.0), "RESUME-4: one run, once"
    assert run_log.append("t", "r", 1, events(3))
    assert run_log.append("t", "r", 4, events(2, 4), finished_at=50.0)
    for after in range(6):
        assert run_log.read("t", "r", after, 100) == events(5)[after:]
    assert run_log.read("t", "r", 1, 2) == events(2, 2)
    state = run_log.state("t", "r")
    assert state == RunState("w1", 5, pytest.approx(100.0, abs=1), 50.0)  # type: ignore[arg-type]
    assert not run_log.append("t", "r", 6, events(1, 6)), "a finished run takes no more"
    assert run_log.read("t", "r", 5, 100) == []


def test_who_started_a_run_is_kept_and_a_stranger_sees_no_run(run_log: RunLog) -> None:
    """RESUME-5: the principal that started a run is logged with it; to another it is
    no run (the 404 of an unknown one), to the starter and to no-identity runs' callers
    it is as it is."""
    assert run_log.begin("t", "mine", "w", 100.0, started_by="alice")
    assert run_log.begin("t", "anyone", "w", 100.0)
    mine, anyone = run_log.state("t", "mine"), run_log.state("t", "anyone")
    assert mine is not None and mine.started_by == "alice"
    assert anyone is not None and anyone.started_by is None
    assert seen_by(mine, "alice") == mine
    assert seen_by(mine, "bob") is None and seen_by(mine, None) is None
    assert seen_by(anyone, "bob") == anyone and seen_by(anyone, None) == anyone
    assert seen_by(None, "alice") is None


_OLD_RUNS_TABLE = """CREATE TABLE agui_run_log_runs (
    thread_id TEXT NOT NULL, run_id TEXT NOT NULL, owner TEXT NOT NULL,
    last_seq BIGINT NOT NULL DEFAULT 0, lease_until DOUBLE PRECISION NOT NULL,
    finished_at DOUBLE PRECISION, stop_requested INTEGER NOT NULL DEFAULT 0,
    expired INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (thread_id, run_id))"""
"""The runs table as a log made before runs were bound to who started them."""


def _opened_on_an_old_log(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    if backend == "sqlite":
        path = str(tmp_path / "old.sqlite")
        with sqlite3.connect(path) as db:
            db.execute(_OLD_RUNS_TABLE)
            db.execute("INSERT INTO agui_run_log_runs (thread_id, run_id, owner, lease_until) "
                       "VALUES ('t', 'old', 'w', 100.0)")  # fmt: skip
        db.close()
        return SQLiteRunLog(path), lambda: SQLiteRunLog(path)
    import psycopg

    dsn = request.getfixturevalue("postgres_dsn")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(_OLD_RUNS_TABLE)
        conn.execute("INSERT INTO agui_run_log_runs (thread_id, run_id, owner, lease_until) "
                     "VALUES ('t', 'old', 'w', 100.0)")  # fmt: skip
    return PostgresRunLog(dsn), lambda: PostgresRunLog(dsn)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_log_from_before_owners_gains_the_column_and_keeps_its_runs(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A log created by an earlier version lacks ``started_by``: opening it adds the
    column (once, even opened again), its runs stay, bound to no one."""
    opened, again = _opened_on_an_old_log(backend, tmp_path, request)
    second = again()
    try:
        old = opened.state("t", "old")
        lease = pytest.approx(100.0, abs=1)  # PostgreSQL reads it back through its clock
        assert old == RunState("w", 0, lease), "an old run is bound to no one"
        assert opened.begin("t", "new", "w", 100.0, started_by="alice")
        new = second.state("t", "new")
        assert new is not None and new.started_by == "alice"
    finally:
        opened.close()
        second.close()


def test_ids_are_kept_apart(run_log: RunLog) -> None:
    for thread, run in [("t", "r"), ("t", "r2"), ("t2", "r")]:
        assert run_log.begin(thread, run, "w", 100.0)
        assert run_log.append(thread, run, 1, [f"{thread}/{run}".encode()])
    assert run_log.read("t2", "r", 0, 10) == [b"t2/r"]
    assert run_log.read("t", "r2", 0, 10) == [b"t/r2"]


def test_a_lapsed_lease_closes_the_run_worker_died_once(run_log: RunLog) -> None:
    run_log.begin("t", "dead", "w1", 10.0)
    run_log.begin("t", "alive", "w2", 10.0)
    run_log.append("t", "dead", 1, events(2))
    assert run_log.renew("w2", [("t", "alive")], 30.0) == []
    assert run_log.reap(20.0) == [("t", "dead")]
    assert run_log.reap(21.0) == [], "closed once"
    assert run_log.read("t", "dead", 2, 10) == [WORKER_DIED]
    assert orjson.loads(WORKER_DIED)["code"] == "WORKER_DIED"
    state = run_log.state("t", "dead")
    assert state is not None and state.last_seq == 3 and state.finished
    # the worker was only slow: its late events are refused, never logged after the end
    assert not run_log.append("t", "dead", 3, events(1, 3))
    assert run_log.read("t", "dead", 0, 10) == [*events(2), WORKER_DIED]
    alive = run_log.state("t", "alive")
    assert alive is not None and not alive.finished
    assert alive.lease_until == pytest.approx(30.0, abs=1)  # PostgreSQL: its own clock


def test_a_stop_is_recorded_for_the_running_worker_to_observe(run_log: RunLog) -> None:
    run_log.begin("t", "r", "w1", 10.0)
    run_log.begin("t", "other", "w1", 10.0)
    both = [("t", "r"), ("t", "other")]
    assert run_log.renew("w1", both, 20.0) == []
    assert run_log.request_stop("t", "r")
    assert not run_log.request_stop("t", "unknown")
    assert run_log.renew("w1", both, 30.0) == [("t", "r")]
    assert run_log.renew("w2", both, 40.0) == [], "only the owner observes its stops"
    state = run_log.state("t", "r")
    assert state is not None and state.stop_requested
    assert state.lease_until == pytest.approx(30.0, abs=1)
    run_log.append("t", "other", 1, events(1), finished_at=35.0)
    assert not run_log.request_stop("t", "other"), "an ended run is not stopped"
    other = run_log.state("t", "other")
    assert other is not None and not other.stop_requested


def test_only_the_runs_a_worker_still_writes_are_renewed(run_log: RunLog) -> None:
    """A run whose writer failed is left out of the renewal: its lease lapses and any
    replica closes it, rather than a reader waiting on it for ever."""
    run_log.begin("t", "writing", "w", 10.0)
    run_log.begin("t", "failed", "w", 10.0)
    run_log.renew("w", [("t", "writing"), ("t", "unknown")], 30.0)
    assert run_log.reap(20.0) == [("t", "failed")]


def test_finished_logs_expire_to_a_tombstone(run_log: RunLog) -> None:
    run_log.begin("t", "old", "w", 100.0)
    run_log.append("t", "old", 1, events(2), finished_at=10.0)
    run_log.begin("t", "new", "w", 100.0)
    run_log.append("t", "new", 1, events(2), finished_at=30.0)
    run_log.begin("t", "running", "w", 100.0)
    run_log.append("t", "running", 1, events(1))
    assert run_log.expire(20.0, 0.0) == 1
    assert run_log.expire(20.0, 0.0) == 0
    old = run_log.state("t", "old")
    assert old is not None and old.expired
    assert run_log.read("t", "old", 0, 10) == []
    assert run_log.read("t", "new", 0, 10) == events(2)
    assert run_log.read("t", "running", 0, 10) == events(1)
    # the tombstone is forgotten in its turn; what still runs never is
    assert run_log.expire(40.0, 20.0) == 1
    assert run_log.state("t", "old") is None
    assert run_log.expire(1e9, 1e9) == 0
    assert run_log.state("t", "new") is None
    assert run_log.read("t", "running", 0, 10) == events(1)


def test_runs_expire_by_their_own_end_whatever_the_order_they_ended_in(
    run_log: RunLog,
) -> None:
    """The keeper's round touches only the runs due; a run logged as ending earlier
    than one before it (a clock stepped back) is still due at its own time."""
    for run_id, end in (("late", 50.0), ("early", 10.0), ("middle", 30.0)):
        run_log.begin("t", run_id, "w", 100.0)
        run_log.append("t", run_id, 1, events(1), finished_at=end)
    run_log.begin("t", "dead", "w", 5.0)  # a lapsed lease: closed, then due in turn
    assert run_log.reap(20.0) == [("t", "dead")]
    assert run_log.expire(25.0, 0.0) == 2  # early (10) and dead (20)
    assert [run_log.read("t", r, 0, 9) == [] for r in ("early", "dead", "middle", "late")] == [
        True,
        True,
        False,
        False,
    ]
    assert run_log.expire(60.0, 15.0) == 2  # middle and late; early's tombstone forgotten
    assert run_log.state("t", "early") is None
    dead = run_log.state("t", "dead")
    assert dead is not None and dead.expired
    assert run_log.expire(60.0, 1e9) == 0
    assert all(run_log.state("t", r) is None for r in ("early", "dead", "middle", "late"))


def test_two_sqlite_handles_share_one_file(tmp_path: Path) -> None:
    path = str(tmp_path / "runs.sqlite")
    writer, reader = SQLiteRunLog(path), SQLiteRunLog(path)
    try:
        writer.begin("t", "r", "w", 100.0)
        writer.append("t", "r", 1, events(2))
        assert reader.read("t", "r", 0, 10) == events(2)
        assert not reader.begin("t", "r", "other", 100.0)
    finally:
        writer.close()
        reader.close()


# -- the judgements ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "query", "expected"),
    [
        (None, None, 0),
        ("r:1:7", None, 7),
        ("r:1:0", None, 0),
        (" r:1:7 ", None, 7),
        (None, "12", 12),
        ("r:1:3", "12", 3),  # the header decides
    ],
)
def test_the_seq_a_rejoin_replays_after(
    header: str | None, query: str | None, expected: int
) -> None:
    assert parse_after("r:1", header, query) == expected


@pytest.mark.parametrize(
    ("header", "query", "says"),
    [
        ("r:1:x", None, "expected '<runId>:<seq>'"),
        ("7", None, "expected '<runId>:<seq>'"),
        ("r:1:-1", None, "expected '<runId>:<seq>'"),
        ("r:1:", None, "expected '<runId>:<seq>'"),
        ("other:7", None, "names run 'other', not run 'r:1'"),
        (None, "x", "after='x': expected a decimal integer"),
        (None, "1e3", "expected a decimal integer"),
        ("r:1:007", None, "without leading zeros"),  # one number, one spelling (RESUME-2)
        (None, "007", "without leading zeros"),
    ],
)
def test_a_malformed_position_is_400_saying_what_was_expected(
    header: str | None, query: str | None, says: str
) -> None:
    refusal = parse_after("r:1", header, query)
    assert isinstance(refusal, LogRefusal)
    assert (refusal.status, refusal.rule) == (400, "RESUME-7")
    assert says in refusal.message
    assert "\n" not in refusal.message


def test_what_a_rejoin_is_answered() -> None:
    running = RunState("w", 5, 100.0)
    finished = RunState("w", 5, 100.0, finished_at=50.0)
    assert judge_rejoin(running, 0, 60.0, 300.0) is None
    ahead = judge_rejoin(running, 6, 60.0, 300.0)
    assert ahead is not None and (ahead.status, ahead.rule) == (400, "RESUME-7"), (
        "a running run's events are logged before they are sent: no client holds seq 6"
    )
    assert judge_rejoin(finished, 5, 60.0, 300.0) is None
    beyond = judge_rejoin(finished, 6, 60.0, 300.0)
    assert beyond is not None and (beyond.status, beyond.rule) == (400, "RESUME-7")
    assert "seq 6 is beyond the log's last event, seq 5" in beyond.message
    unknown = judge_rejoin(None, 0, 60.0, 300.0)
    assert unknown is not None and unknown.status == 404
    expired = judge_rejoin(finished, 0, 351.0, 300.0)
    assert expired is not None and (expired.status, expired.rule) == (410, "RESUME-8")
    tombstone = judge_rejoin(RunState("w", 5, 1.0, 50.0, expired=True), 0, 60.0, 300.0)
    assert tombstone is not None and tombstone.status == 410


def test_what_a_stop_is_answered() -> None:
    assert judge_stop(RunState("w", 5, 100.0), 60.0, 300.0) is None
    done = judge_stop(RunState("w", 5, 100.0, finished_at=50.0), 60.0, 300.0)
    assert done is not None and done.status == 409
    assert done.body("t", "r") == {
        "error": "the run has already ended",
        "rule": "RESUME-6",
        "threadId": "t",
        "runId": "r",
        "status": "finished",
    }
    unknown = judge_stop(None, 60.0, 300.0)
    assert unknown is not None and unknown.status == 404
    old = judge_stop(RunState("w", 5, 100.0, finished_at=50.0), 400.0, 300.0)
    assert old is not None and old.status == 410


def test_postgres_tells_every_replica_of_an_append(postgres_dsn: str) -> None:
    """LISTEN/NOTIFY: a reader's log hears of the writer's commits, the dead worker's
    closing too, and nothing after it stops watching."""
    import threading

    writer, reader = PostgresRunLog(postgres_dsn), PostgresRunLog(postgres_dsn)
    heard: list[tuple[str, str]] = []
    some = threading.Event()

    def appended(thread_id: str, run_id: str) -> None:
        heard.append((thread_id, run_id))
        some.set()

    try:
        unwatch = reader.watch(appended)
        writer.begin("t", "r:1", "w", 10.0)
        deadline = 0
        while not some.is_set() and deadline < 50:  # the listener connects first
            writer.append("t", "r:1", deadline + 1, events(1, deadline + 1))
            deadline += 1
            some.wait(0.1)
        assert heard and heard[0] == ("t", "r:1")
        some.clear()
        writer.reap(20.0)
        assert some.wait(10), "the reaper's closing is heard too"
        assert heard[-1] == ("t", "r:1")
        unwatch()
        count = len(heard)
        writer.begin("t", "r2", "w", 100.0)
        writer.append("t", "r2", 1, events(1))
        some.clear()
        assert not some.wait(0.5) and len(heard) == count
    finally:
        writer.close()
        reader.close()
    assert MemoryRunLog().watch(appended)() is None


def test_postgres_replicas_with_skewed_clocks_agree_when_a_lease_lapsed(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lease is kept on the database's clock (RESUME-10): a writer whose clock runs
    an hour behind the reaper's keeps its run, and one an hour ahead loses it once its
    lease lapsed — whatever the clocks of the hosts say."""
    import time
    import types

    from agui_tools.app import _run_log_sql

    def clock_of(skew: float) -> types.SimpleNamespace:
        return types.SimpleNamespace(time=lambda: time.time() + skew)

    writer, reaper = PostgresRunLog(postgres_dsn), PostgresRunLog(postgres_dsn)
    try:
        for run, skew in (("behind", -3600.0), ("ahead", 3600.0)):
            monkeypatch.setattr(_run_log_sql, "time", clock_of(skew))
            writer.begin("t", run, "w", _run_log_sql.time.time() + 30)
            monkeypatch.setattr(_run_log_sql, "time", time)
        assert reaper.reap(time.time()) == [], "no live run reaped for its host's clock"
        state = reaper.state("t", "behind")
        assert state is not None and 25 < state.lease_until - time.time() <= 30
        monkeypatch.setattr(_run_log_sql, "time", clock_of(3600.0))
        assert writer.renew("w", [("t", "ahead")], _run_log_sql.time.time() + 1) == []
        monkeypatch.setattr(_run_log_sql, "time", time)
        assert reaper.reap(time.time() + 2) == [("t", "ahead")], "a lapsed lease is reaped"
    finally:
        writer.close()
        reaper.close()
