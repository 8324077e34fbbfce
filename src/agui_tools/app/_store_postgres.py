"""The thread store on PostgreSQL: for applications that outgrow one process or machine.

Every replica of an application opens a :class:`PostgresStore` on the same
database. Exactly-once is the database's job, not an application lock's:

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

Connections come from a ``psycopg_pool.ConnectionPool`` that checks each one
before handing it out, so a server restart costs the calls in flight, not the
pool. A call is synchronous (``blocking = True``): async callers run it in a
worker thread, never on the event loop.

The schema is created and migrated by :meth:`PostgresStore.migrate` (run on
open unless ``migrate=False``), under an advisory lock so replicas starting
together apply it once; ``agui_schema`` records the version applied.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

import orjson

from .._errors import StaleThread, StoreError
from ._journal import (
    Claim,
    ClaimResult,
    JournalKey,
    _no_intent,
    decision_row,
    stored_result,
)
from ._store import ThreadRecord, decode_record, encode_snapshot

__all__ = ["MIGRATIONS", "PostgresStore"]

MIGRATIONS: list[str] = [
    # 1: threads, runs, calls (intent + answer), decisions
    """
    CREATE TABLE agui_threads (
        thread_id  TEXT PRIMARY KEY,
        version    BIGINT NOT NULL,
        messages   BYTEA NOT NULL,
        state      BYTEA NOT NULL,
        resumed    BYTEA NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE agui_runs (
        thread_id TEXT NOT NULL,
        seq       BIGINT NOT NULL,
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


class PostgresStore:
    """Threads, runs, intents, answers and decisions in a PostgreSQL database.

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
        import psycopg
        from psycopg_pool import ConnectionPool

        self._psycopg = psycopg
        self.conninfo = conninfo
        self._pool = ConnectionPool(
            conninfo,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            kwargs={"autocommit": True},
            check=ConnectionPool.check_connection,
            open=False,
            name="agui-tools-store",
        )
        try:
            self._pool.open(wait=True, timeout=timeout)
        except Exception as exc:
            self._pool.close()
            raise StoreError(
                f"cannot connect to the PostgreSQL store ({_where(conninfo)}): {_reason(exc)}; "
                "check that the server runs and the connection string is right"
            ) from exc
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
    def _conn(self, what: str, *, tx: bool = False) -> Iterator[Any]:
        """A pooled connection (in one transaction when ``tx``); database errors as StoreError."""
        psycopg = self._psycopg
        try:
            with self._pool.connection() as conn:
                if tx:
                    with conn.transaction():
                        yield conn
                else:
                    yield conn
        except psycopg.Error as exc:
            raise StoreError(
                f"the PostgreSQL store ({_where(self.conninfo)}) could not {what}: "
                f"{_reason(exc)}{_advice(exc)}"
            ) from exc
        except Exception as exc:
            if type(exc).__module__.startswith("psycopg_pool"):  # PoolTimeout, PoolClosed
                raise StoreError(
                    f"the PostgreSQL store ({_where(self.conninfo)}) could not {what}: "
                    f"{_reason(exc)} — no connection could be had (is the server up? is "
                    "max_size large enough for this process's concurrency?)"
                ) from exc
            raise

    def migrate(self) -> int:
        """Apply the migrations the database lacks; return the schema version."""
        with self._conn("create or upgrade its schema", tx=True) as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            conn.execute("CREATE TABLE IF NOT EXISTS agui_schema (version INTEGER NOT NULL)")
            row = conn.execute("SELECT version FROM agui_schema").fetchone()
            current = row[0] if row is not None else 0
            if current > len(MIGRATIONS):
                raise StoreError(
                    f"the PostgreSQL store's schema is version {current}, newer than this "
                    f"agui-tools knows ({len(MIGRATIONS)}): upgrade agui-tools on this replica"
                )
            for sql in MIGRATIONS[current:]:
                conn.execute(sql)
            if row is None:
                conn.execute("INSERT INTO agui_schema VALUES (%s)", (len(MIGRATIONS),))
            else:
                conn.execute("UPDATE agui_schema SET version = %s", (len(MIGRATIONS),))
        return len(MIGRATIONS)

    @staticmethod
    def _row(conn: Any, thread_id: str, call_id: str) -> ClaimResult | None:
        row = conn.execute(
            "SELECT fingerprint, started_at, answer FROM agui_calls "
            "WHERE thread_id = %s AND call_id = %s",
            (thread_id, call_id),
        ).fetchone()
        return stored_result(row) if row is not None else None

    # -- the journal ----------------------------------------------------------------

    def claim(self, key: JournalKey, *, tool: str) -> ClaimResult:
        now = time.time()
        with self._conn(f"record the intent to execute call {key.call_id!r}") as conn:
            inserted = conn.execute(
                "INSERT INTO agui_calls (thread_id, call_id, fingerprint, tool, started_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (thread_id, call_id) DO NOTHING "
                "RETURNING started_at",
                (key.thread_id, key.call_id, key.fingerprint, tool, now),
            ).fetchone()
            if inserted is not None:
                return ClaimResult(Claim.RUN, None, now, key.fingerprint)
            found = self._row(conn, key.thread_id, key.call_id)
        assert found is not None  # rows are never deleted
        return found

    def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> None:
        payload = orjson.dumps(dict(answer))
        with self._conn(f"record the answer of call {key.call_id!r}") as conn:
            row = conn.execute(
                "WITH upd AS (UPDATE agui_calls SET answer = %s, finished_at = %s "
                "WHERE thread_id = %s AND call_id = %s AND fingerprint = %s AND answer IS NULL "
                "RETURNING 1) SELECT (SELECT count(*) FROM upd), EXISTS (SELECT 1 FROM agui_calls "
                "WHERE thread_id = %s AND call_id = %s AND fingerprint = %s)",
                (
                    payload,
                    time.time(),
                    key.thread_id,
                    key.call_id,
                    key.fingerprint,
                    key.thread_id,
                    key.call_id,
                    key.fingerprint,
                ),
            ).fetchone()
        if row is None or (row[0] == 0 and not row[1]):
            raise _no_intent(key)

    def settle(
        self,
        key: JournalKey,
        answer: Mapping[str, Any],
        *,
        decision: Mapping[str, Any] | None = None,
    ) -> ClaimResult:
        payload = orjson.dumps(dict(answer))
        now = time.time()
        with self._conn(f"record the answer of call {key.call_id!r}", tx=True) as conn:
            inserted = conn.execute(
                "INSERT INTO agui_calls (thread_id, call_id, fingerprint, tool, started_at, "
                "finished_at, answer) VALUES (%s, %s, %s, '', %s, %s, %s) "
                "ON CONFLICT (thread_id, call_id) DO NOTHING RETURNING 1",
                (key.thread_id, key.call_id, key.fingerprint, now, now, payload),
            ).fetchone()
            if inserted is None:
                found = self._row(conn, key.thread_id, key.call_id)
                assert found is not None
                return found
            if decision is not None:
                self._insert_decision(conn, decision)
        return ClaimResult(Claim.ANSWERED, dict(answer), now, key.fingerprint)

    def lookup(self, thread_id: str, call_id: str) -> ClaimResult | None:
        with self._conn(f"read the record of call {call_id!r}") as conn:
            return self._row(conn, thread_id, call_id)

    def answer_for(self, thread_id: str, call_id: str) -> dict[str, Any] | None:
        found = self.lookup(thread_id, call_id)
        return found.answer if found is not None else None

    @staticmethod
    def _insert_decision(conn: Any, decision: Mapping[str, Any]) -> None:
        conn.execute(
            "INSERT INTO agui_decisions (thread_id, call_id, decision) VALUES (%s, %s, %s)",
            decision_row(decision),
        )

    def record_decision(self, decision: Mapping[str, Any]) -> None:
        with self._conn(f"record a consent decision for {decision.get('toolCallId')!r}") as conn:
            self._insert_decision(conn, decision)

    def decisions(self, thread_id: str, call_id: str) -> list[dict[str, Any]]:
        with self._conn(f"read the decisions of call {call_id!r}") as conn:
            rows = conn.execute(
                "SELECT decision FROM agui_decisions WHERE thread_id = %s AND call_id = %s "
                "ORDER BY seq",
                (thread_id, call_id),
            ).fetchall()
        return [orjson.loads(r[0]) for r in rows]

    # -- threads ------------------------------------------------------------------------

    def load(self, thread_id: str) -> ThreadRecord | None:
        with self._conn(f"load thread {thread_id!r}", tx=True) as conn:
            row = conn.execute(
                "SELECT version, messages, state, resumed FROM agui_threads WHERE thread_id = %s",
                (thread_id,),
            ).fetchone()
            if row is None:
                return None
            runs = [
                r[0]
                for r in conn.execute(
                    "SELECT run FROM agui_runs WHERE thread_id = %s AND seq <= %s ORDER BY seq",
                    (thread_id, row[0]),
                )
            ]
        return decode_record(
            thread_id, row[0], bytes(row[1]), bytes(row[2]), bytes(row[3]), [bytes(r) for r in runs]
        )

    def save_run(
        self,
        thread_id: str,
        *,
        expected_version: int,
        messages: Sequence[Mapping[str, Any]],
        state: Any,
        resumed: Sequence[str],
        run: Mapping[str, Any],
    ) -> int:
        snap = encode_snapshot(messages, state, resumed, run)
        new = expected_version + 1
        with self._conn(f"save a run of thread {thread_id!r}", tx=True) as conn:
            if expected_version == 0:
                written = conn.execute(
                    "INSERT INTO agui_threads (thread_id, version, messages, state, resumed, "
                    "updated_at) VALUES (%s, 1, %s, %s, %s, %s) "
                    "ON CONFLICT (thread_id) DO NOTHING RETURNING 1",
                    (thread_id, snap.messages, snap.state, snap.resumed, time.time()),
                ).fetchone()
            else:
                written = conn.execute(
                    "UPDATE agui_threads SET version = %s, messages = %s, state = %s, "
                    "resumed = %s, updated_at = %s WHERE thread_id = %s AND version = %s "
                    "RETURNING 1",
                    (
                        new,
                        snap.messages,
                        snap.state,
                        snap.resumed,
                        time.time(),
                        thread_id,
                        expected_version,
                    ),
                ).fetchone()
            if written is None:
                row = conn.execute(
                    "SELECT version FROM agui_threads WHERE thread_id = %s", (thread_id,)
                ).fetchone()
                raise StaleThread(thread_id, expected_version, row[0] if row is not None else 0)
            conn.execute(
                "INSERT INTO agui_runs (thread_id, seq, run) VALUES (%s, %s, %s)",
                (thread_id, new, snap.run),
            )
        return new


def _where(conninfo: str) -> str:
    """The server a connection string names, without its password."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(conninfo)
    except Exception:
        return "connection string unreadable"
    host = parts.get("host") or "localhost"
    port = parts.get("port") or "5432"
    db = parts.get("dbname") or parts.get("user") or ""
    return f"{host}:{port}/{db}"


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _advice(exc: BaseException) -> str:
    from psycopg import OperationalError

    if isinstance(exc, OperationalError):
        return (
            " — the connection to the server was lost or refused; whether the last write "
            "committed is unknown to this process, so a call it was claiming reads as "
            "'outcome unknown' and is never run twice"
        )
    return ""
