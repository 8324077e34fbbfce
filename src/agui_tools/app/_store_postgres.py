"""The thread store on PostgreSQL: for applications that outgrow one process or machine.

Every replica of an application opens a :class:`PostgresStore` (sync code) or an
:class:`AsyncPostgresStore` (async code) on the same database. Exactly-once is
the database's job, not an application lock's:

* ``claim`` is one ``INSERT … ON CONFLICT (thread_id, call_id) DO NOTHING``:
  of any number of processes claiming a call at once, exactly one inserts
  the intent (and runs the handler); the others read the standing record —
  an answer to reuse, or an intent whose outcome is unknown;
* ``settle`` inserts an answer that ran nothing the same way, with its
  consent decision in the same transaction;
* ``finish`` writes an answer only over its own open intent
  (``… WHERE answer IS NULL``): the first answer wins;
* ``save_run`` bumps the thread's version with
  ``UPDATE … WHERE version = expected`` (the row lock serialises writers), and
  writes the snapshot and the run row in the same transaction — or nothing,
  raising :class:`~agui_tools._errors.StaleThread`.

**One plan, two drivers.** Each operation is written once, sans-I/O, as a
:class:`Plan`: a generator that yields :class:`Query` objects (SQL, parameters,
what to fetch), receives their rows and returns the operation's result. The
sync store runs a plan on a connection of a ``psycopg_pool.ConnectionPool``
(async callers run it in a worker thread: ``blocking = True``); the async store
awaits it on a connection of a ``psycopg_pool.AsyncConnectionPool`` and never
blocks the event loop. So the SQL, the decisions and the error messages cannot
drift apart between the two.

Both pools check each connection before handing it out, so a server restart
costs the calls in flight, not the pool — with a round trip to the server only
for a connection whose socket became readable while it was idle (the server
closed it, or said it would): a non-blocking ``select`` per checkout instead of
a query per store call. A task cancelled while its operation
waits (on a row lock, say) has its query cancelled on the server by psycopg;
the connection goes back to the pool, and an uncommitted write is not written.

The schema is created and migrated by ``migrate()`` (run on open unless
``migrate=False``), under an advisory lock so replicas starting together apply
it once; ``agui_schema`` records the version applied.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import Generator, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

import orjson

from .._errors import (
    StaleThread,
    StoreError,
    StoreOutcomeUnknown,
    StoreReadFailed,
    StoreWriteFailed,
    UsageError,
)
from ._journal import (
    AnswerFromLookup,
    Claim,
    ClaimResult,
    JournalKey,
    _no_intent,
    answer_of,
    decision_row,
    refuse_bad_ids,
    stored_result,
)
from ._steps import Pause, Steps, adrive, drive
from ._store import Snapshot, ThreadRecord, decode_record

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

__all__ = ["MIGRATIONS", "AsyncPostgresStore", "PostgresStore"]

MIGRATIONS: list[str] = [
    # 1: threads, runs, calls (intent + answer), decisions
    """
    CREATE TABLE agui_threads (
        thread_id  TEXT PRIMARY KEY,
        version    BIGINT NOT NULL,
        state      BYTEA NOT NULL,
        resumed    BYTEA NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE agui_runs (
        thread_id TEXT NOT NULL,
        seq       BIGINT NOT NULL,
        keep      BIGINT NOT NULL,
        messages  BYTEA NOT NULL,
        run       BYTEA NOT NULL,
        PRIMARY KEY (thread_id, seq)
    );
    CREATE TABLE agui_calls (
        thread_id   TEXT NOT NULL,
        call_id     TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        tool        TEXT NOT NULL,
        started_at  DOUBLE PRECISION NOT NULL,
        finished_at DOUBLE PRECISION,
        answer      BYTEA,
        PRIMARY KEY (thread_id, call_id)
    );
    CREATE TABLE agui_decisions (
        seq       BIGSERIAL PRIMARY KEY,
        thread_id TEXT NOT NULL,
        call_id   TEXT NOT NULL,
        decision  BYTEA NOT NULL
    );
    CREATE INDEX agui_decisions_by_call ON agui_decisions (thread_id, call_id, seq);
    """,
]

_LOCK_KEY = 0x4147_5549  # "AGUI": the advisory lock migrations take
_POOL_NAME = "agui-tools-store"

T = TypeVar("T")

# -- the plans: every operation's SQL and decisions, once, without I/O ----------------


@dataclass(frozen=True, slots=True)
class Query:
    """One statement of a plan, and what its plan wants back: nothing, a row, or all rows."""

    sql: str
    params: tuple[Any, ...] = ()
    fetch: Literal["none", "one", "all"] = "none"


QuerySteps = Steps[Query, T]
"""A plan's steps: SQL queries, each sent its rows (app/_steps.py drives them)."""
"""A plan's body: yields queries, is sent each one's rows, returns the result."""


@dataclass(frozen=True, slots=True)
class Plan(Generic[T]):
    """One operation: what it does (for error messages), its steps, and whether they
    must commit together (one transaction) or each on its own (autocommit)."""

    what: str
    steps: QuerySteps[T]
    tx: bool = False
    writes: bool = False
    """Whether it writes: only a write whose connection is lost has an unknown outcome."""


def _call_row(thread_id: str, call_id: str) -> QuerySteps[ClaimResult | None]:
    row = yield Query(
        "SELECT fingerprint, started_at, answer FROM agui_calls "
        "WHERE thread_id = %s AND call_id = %s",
        (thread_id, call_id),
        "one",
    )
    return stored_result(row) if row is not None else None


def _insert_decision(decision: Mapping[str, Any]) -> Query:
    return Query(
        "INSERT INTO agui_decisions (thread_id, call_id, decision) VALUES (%s, %s, %s)",
        decision_row(decision),
    )


def migrate_plan() -> Plan[int]:
    def steps() -> QuerySteps[int]:
        yield Query("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        yield Query("CREATE TABLE IF NOT EXISTS agui_schema (version INTEGER NOT NULL)")
        row = yield Query("SELECT version FROM agui_schema", fetch="one")
        current = row[0] if row is not None else 0
        if current > len(MIGRATIONS):
            raise StoreError(
                f"the PostgreSQL store's schema is version {current}, newer than this "
                f"agui-tools knows ({len(MIGRATIONS)}): upgrade agui-tools on this replica"
            )
        for sql in MIGRATIONS[current:]:
            yield Query(sql)
        if row is None:
            yield Query("INSERT INTO agui_schema VALUES (%s)", (len(MIGRATIONS),))
        else:
            yield Query("UPDATE agui_schema SET version = %s", (len(MIGRATIONS),))
        return len(MIGRATIONS)

    return Plan("create or upgrade its schema", steps(), tx=True, writes=True)


def claim_plan(key: JournalKey, tool: str) -> Plan[ClaimResult]:
    now = time.time()

    def steps() -> QuerySteps[ClaimResult]:
        inserted = yield Query(
            "INSERT INTO agui_calls (thread_id, call_id, fingerprint, tool, started_at) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (thread_id, call_id) DO NOTHING "
            "RETURNING started_at",
            (key.thread_id, key.call_id, key.fingerprint, tool, now),
            "one",
        )
        if inserted is not None:
            return ClaimResult(Claim.RUN, None, now, key.fingerprint)
        found = yield from _call_row(key.thread_id, key.call_id)
        assert found is not None  # rows are never deleted
        return found

    return Plan(f"record the intent to execute call {key.call_id!r}", steps(), writes=True)


def finish_plan(key: JournalKey, answer: Mapping[str, Any]) -> Plan[dict[str, Any]]:
    payload = orjson.dumps(dict(answer))
    where = (key.thread_id, key.call_id, key.fingerprint)

    def steps() -> QuerySteps[dict[str, Any]]:
        row = yield Query(
            "WITH upd AS (UPDATE agui_calls SET answer = %s, finished_at = %s "
            "WHERE thread_id = %s AND call_id = %s AND fingerprint = %s AND answer IS NULL "
            "RETURNING 1) SELECT count(*) FROM upd",
            (payload, time.time(), *where),
            "one",
        )
        if row is not None and row[0]:
            return dict(answer)
        # not ours: the answer recorded first stands (a statement of its own, so it
        # sees what a writer this UPDATE waited for committed)
        row = yield Query(
            "SELECT answer FROM agui_calls WHERE thread_id = %s AND call_id = %s "
            "AND fingerprint = %s",
            where,
            "one",
        )
        if row is None or row[0] is None:
            raise _no_intent(key)
        standing: dict[str, Any] = orjson.loads(row[0])
        return standing

    return Plan(f"record the answer of call {key.call_id!r}", steps(), writes=True)


def settle_plan(
    key: JournalKey, answer: Mapping[str, Any], decision: Mapping[str, Any] | None
) -> Plan[ClaimResult]:
    payload = orjson.dumps(dict(answer))
    now = time.time()

    def steps() -> QuerySteps[ClaimResult]:
        inserted = yield Query(
            "INSERT INTO agui_calls (thread_id, call_id, fingerprint, tool, started_at, "
            "finished_at, answer) VALUES (%s, %s, %s, '', %s, %s, %s) "
            "ON CONFLICT (thread_id, call_id) DO NOTHING RETURNING 1",
            (key.thread_id, key.call_id, key.fingerprint, now, now, payload),
            "one",
        )
        if inserted is None:
            found = yield from _call_row(key.thread_id, key.call_id)
            assert found is not None
            return found
        if decision is not None:
            yield _insert_decision(decision)
        return ClaimResult(Claim.ANSWERED, dict(answer), now, key.fingerprint)

    return Plan(f"record the answer of call {key.call_id!r}", steps(), tx=True, writes=True)


def lookup_plan(thread_id: str, call_id: str) -> Plan[ClaimResult | None]:
    refuse_bad_ids(reading=True, thread_id=thread_id, call_id=call_id)
    return Plan(f"read the record of call {call_id!r}", _call_row(thread_id, call_id))


def record_decision_plan(decision: Mapping[str, Any]) -> Plan[None]:
    def steps() -> QuerySteps[None]:
        yield _insert_decision(decision)

    return Plan(
        f"record a consent decision for {decision.get('toolCallId')!r}", steps(), writes=True
    )


def decisions_plan(thread_id: str, call_id: str) -> Plan[list[dict[str, Any]]]:
    refuse_bad_ids(reading=True, thread_id=thread_id, call_id=call_id)

    def steps() -> QuerySteps[list[dict[str, Any]]]:
        rows = yield Query(
            "SELECT decision FROM agui_decisions WHERE thread_id = %s AND call_id = %s "
            "ORDER BY seq",
            (thread_id, call_id),
            "all",
        )
        return [orjson.loads(r[0]) for r in rows]

    return Plan(f"read the decisions of call {call_id!r}", steps())


def load_plan(thread_id: str) -> Plan[ThreadRecord | None]:
    refuse_bad_ids(reading=True, thread_id=thread_id)

    def steps() -> QuerySteps[ThreadRecord | None]:
        row = yield Query(
            "SELECT version, state, resumed FROM agui_threads WHERE thread_id = %s",
            (thread_id,),
            "one",
        )
        if row is None:
            return None
        # a run row never changes: those up to the version read are that version's
        runs = yield Query(
            "SELECT keep, messages, run FROM agui_runs WHERE thread_id = %s AND seq <= %s "
            "ORDER BY seq",
            (thread_id, row[0]),
            "all",
        )
        return decode_record(
            thread_id,
            row[0],
            bytes(row[1]),
            bytes(row[2]),
            [(r[0], bytes(r[1]), bytes(r[2])) for r in runs],
        )

    return Plan(f"load thread {thread_id!r}", steps(), tx=True)


def save_run_plan(thread_id: str, expected_version: int, snap: Snapshot) -> Plan[int]:
    refuse_bad_ids(thread_id=thread_id)
    new = expected_version + 1

    def steps() -> QuerySteps[int]:
        if expected_version == 0:
            written = yield Query(
                "INSERT INTO agui_threads (thread_id, version, state, resumed, updated_at) "
                "VALUES (%s, 1, %s, %s, %s) ON CONFLICT (thread_id) DO NOTHING RETURNING 1",
                (thread_id, snap.state, snap.resumed, time.time()),
                "one",
            )
        else:
            written = yield Query(
                "UPDATE agui_threads SET version = %s, state = %s, "
                "resumed = %s, updated_at = %s WHERE thread_id = %s AND version = %s "
                "RETURNING 1",
                (
                    new,
                    snap.state,
                    snap.resumed,
                    time.time(),
                    thread_id,
                    expected_version,
                ),
                "one",
            )
        if written is None:
            row = yield Query(
                "SELECT version FROM agui_threads WHERE thread_id = %s", (thread_id,), "one"
            )
            raise StaleThread(thread_id, expected_version, row[0] if row is not None else 0)
        yield Query(
            "INSERT INTO agui_runs (thread_id, seq, keep, messages, run) "
            "VALUES (%s, %s, %s, %s, %s)",
            (thread_id, new, snap.keep, snap.messages, snap.run),
        )
        return new

    return Plan(f"save a run of thread {thread_id!r}", steps(), tx=True, writes=True)


# -- the drivers: the same plan on a sync or an async connection ---------------------------


def _run_query(conn: Any, query: Query) -> Any:
    """One query on a sync psycopg connection: its rows as the plan asked for them."""
    cur = conn.execute(query.sql, query.params)
    if query.fetch == "one":
        return cur.fetchone()
    if query.fetch == "all":
        return cur.fetchall()
    return None


async def _arun_query(conn: Any, query: Query) -> Any:
    """One query on an async psycopg connection (awaited, never blocking)."""
    cur = await conn.execute(query.sql, query.params)
    if query.fetch == "one":
        return await cur.fetchone()
    if query.fetch == "all":
        return await cur.fetchall()
    return None


# -- opening: one direct attempt first, so a wrong connection string says why, at once -----


@dataclass(frozen=True, slots=True)
class Attempt:
    """Connect once, directly (not through the pool), giving up after ``connect_timeout`` s."""

    connect_timeout: int


Opening = Generator[Attempt | Pause, "BaseException | None", None]
"""Yields attempts and pauses; sent each attempt's error (``None``: it connected)."""

_NEVER_RETRY = re.compile(
    r"does not exist|authentication failed|no pg_hba\.conf entry|no password supplied"
    r"|permission denied for database|invalid .*(option|value)",
    re.IGNORECASE,
)
"""What libpq says when the connection string itself is wrong: retrying cannot fix it
(libpq reports connection failures without an SQLSTATE, so the text is all there is)."""


def opening_plan(conninfo: str, timeout: float) -> Opening:
    """Before a pool opens: the connection string must parse, and one direct connection
    must succeed — a pool retries silently until its timeout, then says only
    ``PoolTimeout``. A wrong database, role, password or option fails at once with
    libpq's reason; a server not (yet) accepting connections is retried until
    ``timeout`` and then named with its last reason."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(conninfo)
        for port in str(parts.get("port") or "5432").split(","):
            if port and not port.strip().isdigit():  # else psycopg retries a "host" lookup
                raise psycopg.ProgrammingError(
                    f'invalid integer value "{port}" for connection option "port"'
                )
    except Exception as exc:
        raise _unreachable(conninfo, exc, permanent=True) from None
    deadline = time.monotonic() + timeout
    pause = 0.1
    while True:
        left = deadline - time.monotonic()
        error = yield Attempt(max(2, math.ceil(left)))  # libpq's minimum is 2 s
        if error is None:
            return
        if _never_retry(error):
            raise _unreachable(conninfo, error, permanent=True) from None
        left = deadline - time.monotonic()
        if left <= 0:
            raise _unreachable(conninfo, error, permanent=False) from None
        yield Pause(min(pause, left))
        pause = min(pause * 2, 1.0)


def _never_retry(exc: BaseException) -> bool:
    import psycopg

    return isinstance(exc, psycopg.ProgrammingError) or bool(_NEVER_RETRY.search(str(exc)))


def _probe(conninfo: str, timeout: float) -> None:
    """Run :func:`opening_plan` with blocking connections and sleeps."""
    import psycopg

    def attempt(step: Attempt) -> BaseException | None:
        try:
            psycopg.connect(conninfo, connect_timeout=step.connect_timeout).close()
        except psycopg.Error as exc:
            return exc  # sent to the plan, which decides whether to try again
        return None

    drive(opening_plan(conninfo, timeout), attempt)


async def _aprobe(conninfo: str, timeout: float) -> None:
    """Run :func:`opening_plan` awaiting, never blocking the event loop."""
    import psycopg

    async def attempt(step: Attempt) -> BaseException | None:
        try:
            conn = await psycopg.AsyncConnection.connect(
                conninfo, connect_timeout=step.connect_timeout
            )
            await conn.close()
        except psycopg.Error as exc:
            return exc
        return None

    await adrive(opening_plan(conninfo, timeout), attempt)


# -- what a failure says, for both stores ---------------------------------------------------


def _unreachable(conninfo: str, exc: BaseException, *, permanent: bool = False) -> StoreError:
    import psycopg

    reason = _reason(exc, conninfo)
    if isinstance(exc, psycopg.ProgrammingError) or _where(conninfo) == _UNREADABLE:
        advice = (
            "the connection string does not parse: write `key=value` pairs "
            "(host=… dbname=… user=…) or a postgresql://user@host/dbname URL"
        )
    elif permanent:
        advice = "check the connection string (database, user, password): retrying cannot fix this"
    else:
        advice = (
            "is the server running? Check that it runs and accepts connections there, "
            "and that the connection string is right"
        )
    return StoreError(
        f"cannot connect to the PostgreSQL store ({_where(conninfo)}): {reason}; {advice}"
    )


def _require_driver(store: str) -> None:
    """psycopg and psycopg_pool are an extra: without them, say how to get them."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise UsageError(
            f"{store} needs psycopg 3 and psycopg_pool ({exc}): install them with "
            "pip install 'agui-tools[postgres]'"
        ) from None


def _failed(conninfo: str, what: str, exc: Exception, *, writes: bool) -> StoreError | None:
    """A database or pool failure during ``what`` as the StoreError a user reads;
    ``None`` for anything else (the operation's own errors pass through).

    The pool's errors first: ``PoolTimeout`` is a ``psycopg.OperationalError`` too,
    but nothing was sent — no connection was had, so nothing was lost."""
    import psycopg
    from psycopg_pool import PoolClosed, PoolTimeout

    where = f"the PostgreSQL store ({_where(conninfo)}) could not {what}"
    nothing: type[StoreError] = StoreWriteFailed if writes else StoreReadFailed
    if isinstance(exc, PoolTimeout | PoolClosed):
        return nothing(
            f"{where}: {_reason(exc, conninfo)} — no connection could be had within the "
            "store's timeout (is the server up? is max_size large enough for this "
            "process's concurrency?); nothing of this operation was sent",
            operation=what,
        )
    if isinstance(exc, psycopg.Error):
        from psycopg.errors import LockNotAvailable, QueryCanceled

        lost = isinstance(exc, psycopg.OperationalError) and not isinstance(
            exc, LockNotAvailable | QueryCanceled
        )
        kind = StoreOutcomeUnknown if writes and lost else nothing
        return kind(
            f"{where}: {_reason(exc, conninfo)}{_advice(exc, writes=writes)}", operation=what
        )
    return None


def _heard_from_server(conn: Any) -> bool:
    """Whether an idle pooled connection has something to read — or is closed.

    An idle connection of ours is sent nothing (no LISTEN, no query in flight):
    if its socket is readable, the server spoke while we were away — it closed
    it (a restart, ``pg_terminate_backend``, an idle timeout) or sent the notice
    that precedes closing. One non-blocking ``select`` answers, with no round
    trip to the server.
    """
    import select

    if conn.closed:
        return True
    try:
        fd = conn.pgconn.socket
    except Exception:  # no socket: a broken connection
        return True
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


def _check(conn: Any) -> None:
    """The pool's check before it hands a connection out: a round trip to the server
    (psycopg_pool's ``check_connection``) only when the connection heard from the
    server while idle — the liveness check a pooled checkout cost on every store
    call, now paid where it can find something. A server restart still costs the
    calls in flight, not the pool: the restart closes every socket, which reads."""
    from psycopg_pool import ConnectionPool

    if _heard_from_server(conn):
        ConnectionPool.check_connection(conn)  # raises for a dead one: the pool discards it


async def _acheck(conn: Any) -> None:
    """:func:`_check` for the async pool."""
    from psycopg_pool import AsyncConnectionPool

    if _heard_from_server(conn):
        await AsyncConnectionPool.check_connection(conn)


def _pool_options(min_size: int, max_size: int, timeout: float) -> dict[str, Any]:
    """What both pools are built with (each adds its own ``check_connection``, so a
    connection is checked before it is handed out): autocommit, opened explicitly."""
    return {
        "min_size": min_size,
        "max_size": max_size,
        "timeout": timeout,
        "kwargs": {"autocommit": True},
        "open": False,
        "name": _POOL_NAME,
    }


class PostgresStore(AnswerFromLookup):
    """Threads, runs, intents, answers and decisions in a PostgreSQL database (sync).

    Args:
        conninfo: a libpq connection string or URL.
        min_size, max_size: the pool's bounds — size it to the concurrent
            dispositions one process runs (see docs/deployment.md).
        timeout: how long a call waits for a pooled connection, seconds.
        migrate: create or upgrade the schema on open (default).
    """

    blocking: ClassVar[bool] = True

    def __init__(
        self,
        conninfo: str,
        *,
        min_size: int = 1,
        max_size: int = 8,
        timeout: float = 30.0,
        migrate: bool = True,
    ) -> None:
        _require_driver("PostgresStore")
        from psycopg_pool import ConnectionPool

        self.conninfo = conninfo
        _probe(conninfo, timeout)  # a wrong connection string fails here, saying why
        self._pool = ConnectionPool(
            conninfo,
            check=_check,
            **_pool_options(min_size, max_size, timeout),
        )
        try:
            self._pool.open(wait=True, timeout=timeout)
        except Exception as exc:
            self._pool.close()
            raise _unreachable(conninfo, exc) from exc
        if migrate:
            try:
                self.migrate()
            except BaseException:
                self._pool.close()
                raise

    # -- plumbing ----------------------------------------------------------------

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _conn(self, what: str, *, tx: bool = False, writes: bool = True) -> Iterator[Any]:
        """A pooled connection (in one transaction when ``tx``); database errors as StoreError."""
        try:
            with self._pool.connection() as conn:
                if tx:
                    with conn.transaction():
                        yield conn
                else:
                    yield conn
        except Exception as exc:
            error = _failed(self.conninfo, what, exc, writes=writes)
            if error is None:
                raise
            raise error from exc

    def _run(self, plan: Plan[T]) -> T:
        with self._conn(plan.what, tx=plan.tx, writes=plan.writes) as conn:
            return drive(plan.steps, partial(_run_query, conn))

    def migrate(self) -> int:
        """Apply the migrations the database lacks; return the schema version."""
        return self._run(migrate_plan())

    # -- the journal ----------------------------------------------------------------

    def claim(self, key: JournalKey, *, tool: str) -> ClaimResult:
        return self._run(claim_plan(key, tool))

    def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> dict[str, Any]:
        return self._run(finish_plan(key, answer))

    def settle(
        self,
        key: JournalKey,
        answer: Mapping[str, Any],
        *,
        decision: Mapping[str, Any] | None = None,
    ) -> ClaimResult:
        return self._run(settle_plan(key, answer, decision))

    def lookup(self, thread_id: str, call_id: str) -> ClaimResult | None:
        return self._run(lookup_plan(thread_id, call_id))

    def record_decision(self, decision: Mapping[str, Any]) -> None:
        self._run(record_decision_plan(decision))

    def decisions(self, thread_id: str, call_id: str) -> list[dict[str, Any]]:
        return self._run(decisions_plan(thread_id, call_id))

    # -- threads ------------------------------------------------------------------------

    def load(self, thread_id: str) -> ThreadRecord | None:
        return self._run(load_plan(thread_id))

    def save_run(
        self,
        thread_id: str,
        expected_version: int,
        snapshot: Snapshot,
    ) -> int:
        return self._run(save_run_plan(thread_id, expected_version, snapshot))


class AsyncPostgresStore:
    """The same store for async code: psycopg's async API on an ``AsyncConnectionPool``.

    Every method is a coroutine that awaits the database on the event loop — it
    never blocks it (``blocking = False``), so a claim waiting on another
    replica's row lock lets every other task run. A pool opens inside a running
    loop, so opening is explicit::

        async with AsyncPostgresStore(conninfo, max_size=16) as store:
            ...

    or ``store = await AsyncPostgresStore(conninfo).open()`` … ``await
    store.aclose()``. The pool belongs to the loop it opened in: using the store
    from another loop (a second ``asyncio.run``) is a ``UsageError``, not a pool
    whose tasks died with their loop. Same arguments, schema, semantics and error messages as
    :class:`PostgresStore` (the operations are the same :class:`Plan`\\ s).
    """

    is_async: ClassVar[bool] = True
    blocking: ClassVar[bool] = False

    def __init__(
        self,
        conninfo: str,
        *,
        min_size: int = 1,
        max_size: int = 8,
        timeout: float = 30.0,
        migrate: bool = True,
    ) -> None:
        _require_driver("AsyncPostgresStore")
        self.conninfo = conninfo
        self._options = _pool_options(min_size, max_size, timeout)
        self._timeout = timeout
        self._migrate = migrate
        self._pool: AsyncConnectionPool[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the one the pool belongs to
        self._closed = False

    # -- plumbing ----------------------------------------------------------------

    async def open(self) -> AsyncPostgresStore:
        """Open the pool (waiting for its first connections) and migrate; return the store."""
        from psycopg_pool import AsyncConnectionPool

        if self._pool is not None:
            self._check_loop("open")
            return self
        await _aprobe(self.conninfo, self._timeout)  # a wrong connection string fails here
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self.conninfo, check=_acheck, **self._options
        )
        try:
            await pool.open(wait=True, timeout=self._timeout)
        except Exception as exc:
            await pool.close()
            raise _unreachable(self.conninfo, exc) from exc
        self._pool = pool
        self._loop = asyncio.get_running_loop()
        self._closed = False
        if self._migrate:
            try:
                await self.migrate()
            except BaseException:
                await self.aclose()
                raise
        return self

    async def aclose(self) -> None:
        """Close the pool. From an event loop other than the one it opened in (whose
        tasks and connections it holds), the close is best-effort instead of the
        ``RuntimeError: Event loop is closed`` asyncio would raise."""
        pool, self._pool = self._pool, None
        loop, self._loop = self._loop, None
        self._closed = True
        if pool is None:
            return
        if loop is None or loop is asyncio.get_running_loop():
            await pool.close()
        elif loop.is_running():  # alive in another thread: close the pool there
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(pool.close(), loop))
        else:
            # its loop has ended, and the pool's worker tasks with it: nothing is left to
            # await them on. The pool is marked closed and lets go of its connections;
            # libpq closes each as it is freed.
            with suppress(RuntimeError, ValueError):
                await pool.close(timeout=0)

    async def __aenter__(self) -> AsyncPostgresStore:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __enter__(self) -> AsyncPostgresStore:
        raise UsageError(
            "AsyncPostgresStore opens in a running event loop: use "
            "`async with AsyncPostgresStore(...) as store:` — or PostgresStore in "
            "synchronous code"
        )

    def __exit__(self, *exc: object) -> None:  # never reached: __enter__ refuses
        return None

    def _check_loop(self, what: str) -> None:
        if self._loop is not asyncio.get_running_loop():
            raise UsageError(
                f"the PostgreSQL store ({_where(self.conninfo)}) cannot {what}: it was "
                "opened in another event loop; a pool belongs to the loop it opened in: "
                "open the store inside the loop that uses it — e.g. in your web "
                "framework's lifespan, not at import time or in another `asyncio.run`"
            )

    async def _run(self, plan: Plan[T]) -> T:
        pool = self._pool
        if pool is None:
            plan.steps.close()
            state = "closed" if self._closed else "not open yet"
            raise UsageError(
                f"the PostgreSQL store ({_where(self.conninfo)}) is {state}: "
                f"it cannot {plan.what}. Open it first — `await store.open()`, or "
                "`async with AsyncPostgresStore(...) as store:`"
            )
        try:
            self._check_loop(plan.what)
        except UsageError:
            plan.steps.close()
            raise
        try:
            async with pool.connection() as conn:
                if plan.tx:
                    async with conn.transaction():
                        return await adrive(plan.steps, partial(_arun_query, conn))
                return await adrive(plan.steps, partial(_arun_query, conn))
        except Exception as exc:
            error = _failed(self.conninfo, plan.what, exc, writes=plan.writes)
            if error is None:
                raise
            raise error from exc

    async def migrate(self) -> int:
        """Apply the migrations the database lacks; return the schema version."""
        return await self._run(migrate_plan())

    # -- the journal ----------------------------------------------------------------

    async def claim(self, key: JournalKey, *, tool: str) -> ClaimResult:
        return await self._run(claim_plan(key, tool))

    async def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> dict[str, Any]:
        return await self._run(finish_plan(key, answer))

    async def settle(
        self,
        key: JournalKey,
        answer: Mapping[str, Any],
        *,
        decision: Mapping[str, Any] | None = None,
    ) -> ClaimResult:
        return await self._run(settle_plan(key, answer, decision))

    async def lookup(self, thread_id: str, call_id: str) -> ClaimResult | None:
        return await self._run(lookup_plan(thread_id, call_id))

    async def answer_for(self, thread_id: str, call_id: str) -> dict[str, Any] | None:
        return answer_of(await self.lookup(thread_id, call_id))

    async def record_decision(self, decision: Mapping[str, Any]) -> None:
        await self._run(record_decision_plan(decision))

    async def decisions(self, thread_id: str, call_id: str) -> list[dict[str, Any]]:
        return await self._run(decisions_plan(thread_id, call_id))

    # -- threads ------------------------------------------------------------------------

    async def load(self, thread_id: str) -> ThreadRecord | None:
        return await self._run(load_plan(thread_id))

    async def save_run(
        self,
        thread_id: str,
        expected_version: int,
        snapshot: Snapshot,
    ) -> int:
        return await self._run(save_run_plan(thread_id, expected_version, snapshot))


_UNREADABLE = "connection string unreadable"


def _where(conninfo: str) -> str:
    """The server a connection string names, without its password."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(conninfo)
    except Exception:
        return _UNREADABLE
    host = parts.get("host") or "localhost"
    port = parts.get("port") or "5432"
    db = parts.get("dbname") or parts.get("user") or ""
    return f"{host}:{port}/{db}"


_SECRETS = (
    re.compile(r"password\W*('(?:[^'\\]|\\.)*'|[^\s']+)", re.IGNORECASE),  # key=value
    re.compile(r"://[^:/@\s]*:([^@\s]+)@"),  # postgresql://user:password@host
)


def _scrub(text: str, conninfo: str) -> str:
    """``text`` without any password ``conninfo`` may hold (even one that does not parse)."""
    secrets: set[str] = set()
    try:
        from psycopg.conninfo import conninfo_to_dict

        password = conninfo_to_dict(conninfo).get("password")
        if password:
            secrets.add(str(password))
    except Exception:
        pass
    for pattern in _SECRETS:
        secrets.update(m.group(1).strip("'") for m in pattern.finditer(conninfo))
    for secret in sorted(secrets - {""}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def _reason(exc: BaseException, conninfo: str) -> str:
    text = str(exc).strip().splitlines()
    return _scrub(f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": "), conninfo)


def _advice(exc: BaseException, *, writes: bool) -> str:
    from psycopg import OperationalError
    from psycopg.errors import LockNotAvailable, QueryCanceled, UndefinedTable

    if isinstance(exc, LockNotAvailable | QueryCanceled):
        return (
            " — it waited longer than the server allows (lock_timeout or statement_timeout) "
            "for another transaction; nothing of this operation was written: retry"
        )
    if isinstance(exc, UndefinedTable):
        return (
            " — the store's tables are not in this database (or not on the connection's "
            "search_path): run `store.migrate()` from the deploy step, or open the store "
            "with migrate=True (the default)"
        )
    if isinstance(exc, OperationalError) and writes:
        return (
            " — the connection to the server was lost or refused; whether the last write "
            "committed is unknown to this process, so a call it was claiming reads as "
            "'outcome unknown' and is never run twice"
        )
    if isinstance(exc, OperationalError):
        return (
            " — the connection to the server was lost during this read; nothing was "
            "written: retry (the pool replaces the connection)"
        )
    return ""
