"""The PostgreSQL stores' plans: every operation's SQL and decisions, once, without I/O.

Each operation is a :class:`Plan` — a generator that yields :class:`Query`
objects (SQL, parameters, what to fetch), receives their rows and returns the
operation's result — and the schema is :data:`MIGRATIONS`. The two drivers at
the end run one query on a sync or an async psycopg connection, so
:class:`~agui_tools.app.PostgresStore` and
:class:`~agui_tools.app.AsyncPostgresStore` share every statement.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

import orjson

from .._errors import StaleThread, StoreError
from ._journal import (
    Claim,
    ClaimResult,
    JournalKey,
    _no_intent,
    decision_row,
    refuse_bad_ids,
    stored_result,
)
from ._ledger import chained, head_of
from ._steps import Steps
from ._store import Snapshot, ThreadRecord, decode_record

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
    # 2: the approval ledger (app/_ledger.py)
    """
    CREATE TABLE agui_ledger (
        seq   BIGINT PRIMARY KEY,
        entry BYTEA NOT NULL
    );
    """,
]

_LOCK_KEY = 0x4147_5549  # "AGUI": the advisory lock migrations take
_LEDGER_KEY = 0x4147_554C  # "AGUL": the advisory lock a ledger append takes

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


def _insert_decision(decision: Mapping[str, Any]) -> QuerySteps[None]:
    """The decision and its ledger entry, in the plan's transaction: the ledger's
    head is read under a transaction-scoped lock, so appends are one chain."""
    yield Query(
        "INSERT INTO agui_decisions (thread_id, call_id, decision) VALUES (%s, %s, %s)",
        decision_row(decision),
    )
    yield Query("SELECT pg_advisory_xact_lock(%s)", (_LEDGER_KEY,))
    last = yield Query("SELECT seq, entry FROM agui_ledger ORDER BY seq DESC LIMIT 1", fetch="one")
    seq, prev = head_of((last[0], bytes(last[1])) if last is not None else None)
    entry, _ = chained(decision, seq, prev)
    yield Query("INSERT INTO agui_ledger (seq, entry) VALUES (%s, %s)", (seq, entry))


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


def claim_plan(
    key: JournalKey, tool: str, decision: Mapping[str, Any] | None = None
) -> Plan[ClaimResult]:
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
            if decision is not None:
                yield from _insert_decision(decision)
            return ClaimResult(Claim.RUN, None, now, key.fingerprint)
        found = yield from _call_row(key.thread_id, key.call_id)
        assert found is not None  # rows are never deleted
        return found

    # with a decision, one transaction: it is kept exactly when the claim row is new
    tx = decision is not None
    return Plan(f"record the intent to execute call {key.call_id!r}", steps(), tx=tx, writes=True)


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
            yield from _insert_decision(decision)
        return ClaimResult(Claim.ANSWERED, dict(answer), now, key.fingerprint)

    return Plan(f"record the answer of call {key.call_id!r}", steps(), tx=True, writes=True)


def lookup_plan(thread_id: str, call_id: str) -> Plan[ClaimResult | None]:
    refuse_bad_ids(reading=True, thread_id=thread_id, call_id=call_id)
    return Plan(f"read the record of call {call_id!r}", _call_row(thread_id, call_id))


def record_decision_plan(decision: Mapping[str, Any]) -> Plan[None]:
    return Plan(
        f"record a consent decision for {decision.get('toolCallId')!r}",
        _insert_decision(decision),
        tx=True,
        writes=True,
    )


def ledger_plan() -> Plan[list[tuple[int, bytes]]]:
    def steps() -> QuerySteps[list[tuple[int, bytes]]]:
        rows = yield Query("SELECT seq, entry FROM agui_ledger ORDER BY seq", fetch="all")
        return [(seq, bytes(entry)) for seq, entry in rows]

    return Plan("read the approval ledger", steps())


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
