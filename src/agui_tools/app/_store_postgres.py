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
:class:`~agui_tools.app._store_postgres_plans.Plan` (in ``_store_postgres_plans``,
with the schema's migrations): a generator that yields
:class:`~agui_tools.app._store_postgres_plans.Query` objects (SQL, parameters, what to fetch), receives their rows and returns the operation's result. The
sync store runs a plan on a connection of a ``psycopg_pool.ConnectionPool``
(async callers run it in a worker thread: ``blocking = True``); the async store
awaits it on a connection of a ``psycopg_pool.AsyncConnectionPool`` and never
blocks the event loop. So the SQL, the decisions and the error messages cannot
drift apart between the two. Opening, checking a connection and the words of
every failure are ``_store_postgres_connect``'s, shared the same way.

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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from .._errors import UsageError
from ._journal import AnswerFromLookup, ClaimResult, JournalKey, answer_of
from ._steps import adrive, drive
from ._store import Snapshot, ThreadRecord
from ._store_postgres_connect import (
    _acheck,
    _aprobe,
    _check,
    _failed,
    _pool_options,
    _probe,
    _require_driver,
    _unreachable,
    _where,
)
from ._store_postgres_plans import (
    MIGRATIONS,
    Plan,
    _arun_query,
    _run_query,
    claim_plan,
    decisions_plan,
    finish_plan,
    ledger_plan,
    load_plan,
    lookup_plan,
    migrate_plan,
    record_decision_plan,
    save_run_plan,
    settle_plan,
)

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool


__all__ = ["MIGRATIONS", "AsyncPostgresStore", "PostgresStore"]

T = TypeVar("T")


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

    def claim(
        self, key: JournalKey, *, tool: str, decision: Mapping[str, Any] | None = None
    ) -> ClaimResult:
        return self._run(claim_plan(key, tool, decision))

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

    def ledger(self) -> list[tuple[int, bytes]]:
        """The approval ledger's entries, oldest first (app/_ledger.py)."""
        return self._run(ledger_plan())

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

    async def claim(
        self, key: JournalKey, *, tool: str, decision: Mapping[str, Any] | None = None
    ) -> ClaimResult:
        return await self._run(claim_plan(key, tool, decision))

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

    async def ledger(self) -> list[tuple[int, bytes]]:
        """:meth:`PostgresStore.ledger`, awaited."""
        return await self._run(ledger_plan())

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
