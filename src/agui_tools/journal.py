"""The journal: exactly-once execution of tool calls, durable across crashes.

A side effect that happened must never happen twice, and an answer that was
produced must never be lost — not by a crash, a retried request or a replayed
stream. The journal makes that checkable: before a handler runs it records the
*intent*, after it returns it records the *answer*, each in its own committed
transaction, keyed by ``(threadId, toolCallId, argument fingerprint)``.

``claim(key)`` is the whole protocol, decided atomically:

* no record → the intent is written and the caller may execute (``Claim.RUN``);
* an answer is recorded → return it; the handler is never run again
  (``Claim.ANSWERED``);
* an intent without an answer → the earlier execution's outcome is unknown (the
  process died mid-handler, or another process is running it now). It is
  never re-run silently (``Claim.UNKNOWN``); the caller answers the call as
  failed with an "outcome unknown" error unless its policy says otherwise.

Consent decisions are recorded here too, append-only, so who approved what —
and with which exact arguments — survives the process.

Storage: SQLite from the standard library, one file per application, WAL mode
with ``synchronous=FULL`` so a committed record survives power loss, and
``BEGIN IMMEDIATE`` so two processes sharing the file cannot both claim a call.
:class:`MemoryJournal` has the same semantics without persistence (tests, and
applications that accept losing the record on exit).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

import orjson

__all__ = ["Claim", "ClaimResult", "Journal", "JournalKey", "MemoryJournal", "SQLiteJournal"]


@dataclass(frozen=True, slots=True)
class JournalKey:
    """What makes two executions "the same call": thread, call id, exact arguments."""

    thread_id: str
    call_id: str
    fingerprint: str


class Claim(StrEnum):
    RUN = "run"
    """The intent is recorded: execute now, then :meth:`Journal.finish`."""
    ANSWERED = "answered"
    """Already executed and answered: use the recorded answer, do not run."""
    UNKNOWN = "unknown"
    """An earlier execution started and recorded no answer: its outcome is unknown."""


@dataclass(frozen=True, slots=True)
class ClaimResult:
    claim: Claim
    answer: dict[str, Any] | None = None
    started_at: float | None = None
    """When the (earlier) intent was recorded, seconds since the epoch."""


class Journal(Protocol):
    """What the application core needs from a journal."""

    def claim(self, key: JournalKey, *, tool: str) -> ClaimResult: ...

    def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> None: ...

    def answer_for(self, thread_id: str, call_id: str) -> dict[str, Any] | None: ...

    def record_decision(self, decision: Mapping[str, Any]) -> None: ...

    def decisions(self, thread_id: str, call_id: str) -> list[dict[str, Any]]: ...


class MemoryJournal:
    """The journal's semantics in memory; lost when the process exits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[JournalKey, tuple[str, float, dict[str, Any] | None]] = {}
        self._decisions: list[dict[str, Any]] = []

    def claim(self, key: JournalKey, *, tool: str) -> ClaimResult:
        with self._lock:
            record = self._calls.get(key)
            if record is None:
                now = time.time()
                self._calls[key] = (tool, now, None)
                return ClaimResult(Claim.RUN, None, now)
            _, started, answer = record
            if answer is not None:
                return ClaimResult(Claim.ANSWERED, dict(answer), started)
            return ClaimResult(Claim.UNKNOWN, None, started)

    def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> None:
        with self._lock:
            tool, started, previous = self._calls.get(key, ("", time.time(), None))
            if previous is not None:
                return  # first answer wins; an answer is never overwritten
            self._calls[key] = (tool, started, dict(answer))

    def answer_for(self, thread_id: str, call_id: str) -> dict[str, Any] | None:
        with self._lock:
            for key, (_, _, answer) in self._calls.items():
                if key.thread_id == thread_id and key.call_id == call_id and answer is not None:
                    return dict(answer)
        return None

    def record_decision(self, decision: Mapping[str, Any]) -> None:
        with self._lock:
            self._decisions.append(dict(decision))

    def decisions(self, thread_id: str, call_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [
                dict(d)
                for d in self._decisions
                if d.get("threadId") == thread_id and d.get("toolCallId") == call_id
            ]


_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    thread_id   TEXT NOT NULL,
    call_id     TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    tool        TEXT NOT NULL,
    started_at  REAL NOT NULL,
    finished_at REAL,
    answer      BLOB,
    PRIMARY KEY (thread_id, call_id, fingerprint)
);
CREATE TABLE IF NOT EXISTS decisions (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id   TEXT NOT NULL,
    call_id     TEXT NOT NULL,
    decision    BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS decisions_by_call ON decisions (thread_id, call_id);
"""


class SQLiteJournal:
    """The durable journal: one SQLite file per application.

    Safe to share between threads of one process (a lock serialises them) and
    between processes (``BEGIN IMMEDIATE`` takes the write lock before reading
    the claim). Every method commits before it returns.
    """

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SQLiteJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def claim(self, key: JournalKey, *, tool: str) -> ClaimResult:
        with self._write() as db:
            row = db.execute(
                "SELECT started_at, answer FROM calls WHERE thread_id=? AND call_id=? AND fingerprint=?",
                (key.thread_id, key.call_id, key.fingerprint),
            ).fetchone()
            if row is None:
                now = time.time()
                db.execute(
                    "INSERT INTO calls (thread_id, call_id, fingerprint, tool, started_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (key.thread_id, key.call_id, key.fingerprint, tool, now),
                )
                return ClaimResult(Claim.RUN, None, now)
        started, answer = row
        if answer is not None:
            return ClaimResult(Claim.ANSWERED, orjson.loads(answer), started)
        return ClaimResult(Claim.UNKNOWN, None, started)

    def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE calls SET answer=?, finished_at=? "
                "WHERE thread_id=? AND call_id=? AND fingerprint=? AND answer IS NULL",
                (
                    orjson.dumps(dict(answer)),
                    time.time(),
                    key.thread_id,
                    key.call_id,
                    key.fingerprint,
                ),
            )

    def answer_for(self, thread_id: str, call_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT answer FROM calls WHERE thread_id=? AND call_id=? AND answer IS NOT NULL "
                "ORDER BY finished_at LIMIT 1",
                (thread_id, call_id),
            ).fetchone()
        return orjson.loads(row[0]) if row else None

    def record_decision(self, decision: Mapping[str, Any]) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO decisions (thread_id, call_id, decision) VALUES (?, ?, ?)",
                (
                    decision.get("threadId", ""),
                    decision.get("toolCallId", ""),
                    orjson.dumps(dict(decision)),
                ),
            )

    def decisions(self, thread_id: str, call_id: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT decision FROM decisions WHERE thread_id=? AND call_id=? ORDER BY seq",
                (thread_id, call_id),
            ).fetchall()
        return [orjson.loads(r[0]) for r in rows]
