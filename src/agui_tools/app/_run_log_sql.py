"""The run log in SQL: :class:`SQLiteRunLog` (one host) and :class:`PostgresRunLog` (replicas).

One plan for both (:class:`_SQLRunLog`): two tables, a run's row and its events.
Every write is one transaction that moves the run's row first — the row is what
two writers meet on: a replica closing a run whose lease lapsed and the run's
own worker appending late cannot both succeed (RESUME-10), whichever commits
first wins and the other writes nothing.

Readers in other processes learn of new events by polling SQLite, and by
``LISTEN/NOTIFY`` on PostgreSQL (docs/resumable.md, "Measured", says why), with
a slow poll kept as a safety net for a notification lost while reconnecting.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import orjson

from .._text import guarded_logger
from ._run_log import WORKER_DIED, RunState, _nothing

log = guarded_logger("agui_tools.app")

__all__ = ["PostgresRunLog", "SQLiteRunLog"]

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS agui_run_log_runs (
        thread_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        owner TEXT NOT NULL,
        last_seq BIGINT NOT NULL DEFAULT 0,
        lease_until DOUBLE PRECISION NOT NULL,
        finished_at DOUBLE PRECISION,
        stop_requested INTEGER NOT NULL DEFAULT 0,
        expired INTEGER NOT NULL DEFAULT 0,
        started_by TEXT,
        PRIMARY KEY (thread_id, run_id))""",
    """CREATE TABLE IF NOT EXISTS agui_run_log_events (
        thread_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        payload {blob} NOT NULL,
        PRIMARY KEY (thread_id, run_id, seq))""",
    # the keeper's rounds find the runs due (lapsed, to expire, to forget) by when
    # they ended, rather than scanning every run kept (a day of tombstones)
    "CREATE INDEX IF NOT EXISTS agui_run_log_runs_by_end ON agui_run_log_runs (finished_at)",
)
_ADDED_COLUMNS = (("agui_run_log_runs", "started_by", "TEXT"),)
"""Columns a log created by an earlier version lacks: added when it is opened."""
_CHANNEL = "agui_run_log"
_MAX_NOTIFY = 7900
"""PostgreSQL's NOTIFY payload limit is 8000 bytes: longer ids are left to the poll."""


_STATE = (
    "SELECT owner, last_seq, lease_until - {clock}, finished_at, stop_requested, expired, "
    "started_by "
    "FROM agui_run_log_runs WHERE thread_id = ? AND run_id = ?"
)


class _SQLRunLog:
    """The plan; a subclass supplies the connection, its placeholder and its dialect."""

    blocking = True
    shared = True
    notifies = False
    _placeholder = "?"
    _clock = "0"
    """Where the clock a lease is kept in reads (SQL): SQLite's is the caller's (one
    host, one clock); PostgreSQL's is the database's, so replicas whose clocks
    disagree still agree when a lease lapsed (RESUME-10)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def _from_now(self, when: float) -> float:
        """``when`` (the caller's clock) as the log keeps it: ``_clock + _from_now(when)``
        — an absolute time, or a span from now that no skew between hosts changes."""
        return when if self._clock == "0" else when - time.time()

    def _here(self, kept: float) -> float:
        """A time :meth:`_from_now` kept, back on the caller's clock."""
        return kept if self._clock == "0" else kept + time.time()

    def watch(self, appended: Callable[[str, str], None]) -> Callable[[], None]:
        return _nothing  # readers poll

    def _notify(self, cur: Any, keys: Sequence[tuple[str, str]]) -> None:
        """Tell the other processes' readers, as the transaction commits (PostgreSQL)."""

    # the connection: one, used by one thread at a time
    @contextmanager
    def _transaction(self) -> Iterator[Any]:  # pragma: no cover - each subclass has its own
        raise NotImplementedError
        yield

    def _sql(self, text: str) -> str:
        return text if self._placeholder == "?" else text.replace("?", self._placeholder)

    def _exec(self, cur: Any, text: str, args: Sequence[Any] = ()) -> Any:
        cur.execute(self._sql(text), tuple(args))
        return cur

    def begin(
        self,
        thread_id: str,
        run_id: str,
        owner: str,
        lease_until: float,
        started_by: str | None = None,
    ) -> bool:
        with self._transaction() as cur:
            self._exec(
                cur,
                "INSERT INTO agui_run_log_runs (thread_id, run_id, owner, lease_until, "
                f"started_by) VALUES (?, ?, ?, {self._clock} + ?, ?) ON CONFLICT DO NOTHING",
                (thread_id, run_id, owner, self._from_now(lease_until), started_by),
            )
            return bool(cur.rowcount == 1)

    def append(
        self,
        thread_id: str,
        run_id: str,
        first_seq: int,
        payloads: Sequence[bytes],
        *,
        finished_at: float | None = None,
    ) -> bool:
        last = first_seq + len(payloads) - 1
        with self._transaction() as cur:
            self._exec(
                cur,
                "UPDATE agui_run_log_runs SET last_seq = ?, finished_at = ? "
                "WHERE thread_id = ? AND run_id = ? AND finished_at IS NULL AND last_seq = ?",
                (last, finished_at, thread_id, run_id, first_seq - 1),
            )
            if cur.rowcount != 1:
                return False
            cur.executemany(
                self._sql(
                    "INSERT INTO agui_run_log_events (thread_id, run_id, seq, payload) "
                    "VALUES (?, ?, ?, ?)"
                ),
                [(thread_id, run_id, first_seq + i, p) for i, p in enumerate(payloads)],
            )
            self._notify(cur, [(thread_id, run_id)])
            return True

    def state(self, thread_id: str, run_id: str) -> RunState | None:
        with self._transaction() as cur:
            state = _STATE.format(clock=self._clock)
            row = self._exec(cur, state, (thread_id, run_id)).fetchone()
        if row is None:
            return None
        owner, last_seq, kept, finished_at, stop, expired, started_by = row
        lease_until = self._here(float(kept))
        return RunState(
            owner, int(last_seq), lease_until, finished_at, bool(stop), bool(expired), started_by
        )

    def read(self, thread_id: str, run_id: str, after: int, limit: int) -> list[bytes]:
        with self._transaction() as cur:
            rows = self._exec(
                cur,
                "SELECT payload FROM agui_run_log_events WHERE thread_id = ? AND run_id = ? "
                "AND seq > ? ORDER BY seq LIMIT ?",
                (thread_id, run_id, after, limit),
            ).fetchall()
        return [bytes(row[0]) for row in rows]

    def request_stop(self, thread_id: str, run_id: str) -> bool:
        with self._transaction() as cur:
            self._exec(
                cur,
                "UPDATE agui_run_log_runs SET stop_requested = 1 "
                "WHERE thread_id = ? AND run_id = ? AND finished_at IS NULL",
                (thread_id, run_id),
            )
            return bool(cur.rowcount == 1)

    def renew(
        self, owner: str, runs: Sequence[tuple[str, str]], lease_until: float
    ) -> list[tuple[str, str]]:
        stops = []
        with self._transaction() as cur:
            for thread_id, run_id in runs:
                row = self._exec(
                    cur,
                    f"UPDATE agui_run_log_runs SET lease_until = {self._clock} + ? WHERE "
                    "thread_id = ? AND run_id = ? AND owner = ? AND finished_at IS NULL "
                    "RETURNING stop_requested",
                    (self._from_now(lease_until), thread_id, run_id, owner),
                ).fetchone()
                if row is not None and row[0]:
                    stops.append((thread_id, run_id))
        return stops

    def reap(self, now: float) -> list[tuple[str, str]]:
        with self._transaction() as cur:
            rows = self._exec(
                cur,
                "UPDATE agui_run_log_runs SET last_seq = last_seq + 1, finished_at = ? WHERE "
                f"finished_at IS NULL AND lease_until < {self._clock} + ? "
                "RETURNING thread_id, run_id, last_seq",
                (now, self._from_now(now)),
            ).fetchall()
            if rows:
                cur.executemany(
                    self._sql(
                        "INSERT INTO agui_run_log_events (thread_id, run_id, seq, payload) "
                        "VALUES (?, ?, ?, ?)"
                    ),
                    [(t, r, seq, WORKER_DIED) for t, r, seq in rows],
                )
                self._notify(cur, [(t, r) for t, r, _ in rows])
        return [(t, r) for t, r, _ in rows]

    def expire(self, finished_before: float, forget_before: float) -> int:
        with self._transaction() as cur:
            self._exec(
                cur,
                "DELETE FROM agui_run_log_runs WHERE expired = 1 AND finished_at < ?",
                (forget_before,),
            )
            rows = self._exec(
                cur,
                "UPDATE agui_run_log_runs SET expired = 1 WHERE expired = 0 AND "
                "finished_at IS NOT NULL AND finished_at < ? RETURNING thread_id, run_id",
                (finished_before,),
            ).fetchall()
            cur.executemany(
                self._sql("DELETE FROM agui_run_log_events WHERE thread_id = ? AND run_id = ?"),
                [tuple(row) for row in rows],
            )
        return len(rows)


class SQLiteRunLog(_SQLRunLog):
    """A run log in one SQLite file (WAL): it outlives the process; readers in other
    processes on the host poll it."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self._db = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, timeout=30.0
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        for statement in _SCHEMA:
            self._db.execute(statement.format(blob="BLOB"))
        with self._transaction() as cur:  # one process adds a missing column, once
            for table, column, kind in _ADDED_COLUMNS:
                have = {row[1] for row in cur.execute(f"PRAGMA table_info({table})")}
                if column not in have:
                    cur.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        with self._lock:
            cur = self._db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()


class PostgresRunLog(_SQLRunLog):
    """A run log in PostgreSQL, shared by every replica: any of them serves a rejoin
    or a stop, and closes the runs of a replica that died (RESUME-10)."""

    _placeholder = "%s"
    _clock = "EXTRACT(EPOCH FROM clock_timestamp())"
    notifies = True

    def __init__(self, conninfo: str) -> None:
        super().__init__()
        self._conninfo = conninfo
        self._watchers: list[Callable[[str, str], None]] = []
        self._listening: threading.Thread | None = None
        self._closed = threading.Event()
        self._db = self._connect()
        with self._db.cursor() as cur:
            cur.execute("SELECT pg_advisory_lock(1916038)")  # one schema creator at a time
            try:
                for statement in _SCHEMA:
                    cur.execute(statement.format(blob="BYTEA"))
                for table, column, kind in _ADDED_COLUMNS:
                    cur.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {kind}")
            finally:
                cur.execute("SELECT pg_advisory_unlock(1916038)")

    def _connect(self) -> Any:
        import psycopg

        return psycopg.connect(self._conninfo, autocommit=True)

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        """A transaction on the connection — on a new one when the server dropped the
        old (a restart, a failover): a ``BEGIN`` failing on a lost connection did
        nothing, so beginning again is safe; a failure past it is the caller's."""
        import psycopg

        with self._lock:
            for attempt in (1, 2):
                if self._db.closed and not self._closed.is_set():
                    self._db = self._connect()
                begun = ExitStack()
                try:
                    begun.enter_context(self._db.transaction())
                except psycopg.OperationalError:
                    if attempt == 2 or not self._db.closed:
                        raise
                    continue
                with begun, self._db.cursor() as cur:
                    yield cur
                return

    def _notify(self, cur: Any, keys: Sequence[tuple[str, str]]) -> None:
        for key in keys:
            payload = orjson.dumps(key).decode()
            if len(payload.encode()) <= _MAX_NOTIFY:
                cur.execute("SELECT pg_notify(%s, %s)", (_CHANNEL, payload))

    def watch(self, appended: Callable[[str, str], None]) -> Callable[[], None]:
        with self._lock:
            self._watchers.append(appended)
            if self._listening is None:
                self._listening = threading.Thread(
                    target=self._listen, name="agui-run-log-listen", daemon=True
                )
                self._listening.start()

        def unwatch() -> None:
            with self._lock:
                if appended in self._watchers:
                    self._watchers.remove(appended)

        return unwatch

    def _listen(self) -> None:
        """One connection per log, LISTENing; reconnected after a failure."""
        import psycopg

        while not self._closed.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True) as conn:
                    conn.execute(f"LISTEN {_CHANNEL}")
                    while not self._closed.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self._tell(note.payload)
            except Exception as exc:
                log.warning("the run log's listener lost its connection (%s); reconnecting", exc)
                self._closed.wait(1.0)

    def _tell(self, payload: str) -> None:
        try:
            thread_id, run_id = orjson.loads(payload)
        except (orjson.JSONDecodeError, ValueError, TypeError):
            return  # not ours
        with self._lock:
            watchers = list(self._watchers)
        for appended in watchers:
            try:
                appended(thread_id, run_id)
            except RuntimeError:  # its event loop has closed
                with self._lock:
                    if appended in self._watchers:
                        self._watchers.remove(appended)

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            self._db.close()
        if self._listening is not None:
            self._listening.join(timeout=5)
