"""The journal: exactly-once execution of tool calls, durable across crashes.

A side effect that happened must never happen twice, and an answer that was
produced must never be lost — not by a crash, a retried request or a replayed
stream. The journal makes that checkable: before a handler runs it records the
*intent*, after it returns it records the *answer*, each in its own committed
transaction, keyed by ``(threadId, toolCallId, argument fingerprint)``.

A call id executes at most once in a thread, whatever its arguments: the
journal holds **one record per (threadId, toolCallId)**. Two operations write
it, each decided atomically:

* ``claim(key)`` — before a handler runs:

  * nothing recorded for the call → the intent is written (with the
    fingerprint of the exact arguments) and the caller may execute
    (``Claim.RUN``), then records the result with ``finish(key, answer)``;
  * an answer is recorded → return it; the handler is never run again
    (``Claim.ANSWERED``);
  * an intent without an answer → the earlier execution's outcome is unknown
    (the process died mid-handler, or another process is running it now). It
    is never re-run silently (``Claim.UNKNOWN``) — not with the same
    arguments, and not with edited ones.

* ``settle(key, answer)`` — an answer that ran nothing (declined, failed
  before running, refused): written only when nothing is recorded for the
  call, together with the consent decision behind it in the same
  transaction. Otherwise the standing record wins and is returned: a call
  another process answered keeps that answer, and a call whose execution
  started somewhere is not declined after the fact.

An "outcome unknown" answer is never written over an open intent: the
execution it stands in for may still finish, and its result — the truth — is
what the journal keeps.

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
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar, Protocol

import orjson

from .._errors import JournalError, StoreReadFailed, StoreWriteFailed

__all__ = [
    "Claim",
    "ClaimResult",
    "Journal",
    "JournalError",
    "JournalKey",
    "MemoryJournal",
    "SQLiteJournal",
]


@dataclass(frozen=True, slots=True)
class JournalKey:
    """One call, and the exact arguments it would run with (their fingerprint)."""

    thread_id: str
    call_id: str
    fingerprint: str


class Claim(StrEnum):
    RUN = "run"
    """The intent is recorded: execute now, then :meth:`Journal.finish`."""
    ANSWERED = "answered"
    """The call has an answer: use it, do not run."""
    UNKNOWN = "unknown"
    """An execution started and recorded no answer: its outcome is unknown."""


@dataclass(frozen=True, slots=True)
class ClaimResult:
    claim: Claim
    answer: dict[str, Any] | None = None
    started_at: float | None = None
    """When the (earlier) intent was recorded, seconds since the epoch."""
    fingerprint: str | None = None
    """The fingerprint the recorded intent or answer was made for."""


class Journal(Protocol):
    """What the application core needs from a journal (see the module docstring)."""

    def claim(self, key: JournalKey, *, tool: str) -> ClaimResult: ...

    def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> None: ...

    def settle(
        self,
        key: JournalKey,
        answer: Mapping[str, Any],
        *,
        decision: Mapping[str, Any] | None = None,
    ) -> ClaimResult: ...

    def lookup(self, thread_id: str, call_id: str) -> ClaimResult | None: ...

    def answer_for(self, thread_id: str, call_id: str) -> dict[str, Any] | None: ...

    def record_decision(self, decision: Mapping[str, Any]) -> None: ...

    def decisions(self, thread_id: str, call_id: str) -> list[dict[str, Any]]: ...


@dataclass(slots=True)
class _Record:
    fingerprint: str
    tool: str
    started_at: float
    answer: dict[str, Any] | None


def _result(record: _Record) -> ClaimResult:
    if record.answer is not None:
        return ClaimResult(
            Claim.ANSWERED, dict(record.answer), record.started_at, record.fingerprint
        )
    return ClaimResult(Claim.UNKNOWN, None, record.started_at, record.fingerprint)


def stored_result(row: tuple[str, float, bytes | None]) -> ClaimResult:
    """A durable journal's ``(fingerprint, started_at, answer)`` row, as a claim result."""
    fp, started, answer = row
    if answer is not None:
        return ClaimResult(Claim.ANSWERED, orjson.loads(answer), started, fp)
    return ClaimResult(Claim.UNKNOWN, None, started, fp)


def decision_row(decision: Mapping[str, Any]) -> tuple[str, str, bytes]:
    """A consent decision as a durable journal stores it: thread, call, the JSON."""
    return (
        decision.get("threadId", ""),
        decision.get("toolCallId", ""),
        orjson.dumps(dict(decision)),
    )


def answer_of(found: ClaimResult | None) -> dict[str, Any] | None:
    """The answer a call's record holds, if any (``answer_for`` of every journal)."""
    return found.answer if found is not None else None


class AnswerFromLookup:
    """``answer_for`` of a journal, from its ``lookup``: one definition for every backend."""

    def lookup(self, thread_id: str, call_id: str) -> ClaimResult | None:
        raise NotImplementedError

    def answer_for(self, thread_id: str, call_id: str) -> dict[str, Any] | None:
        return answer_of(self.lookup(thread_id, call_id))


def _no_intent(key: JournalKey) -> JournalError:
    return JournalError(
        f"no intent is recorded for call {key.call_id!r} with these arguments: "
        "finish() records the answer of an execution claim() allowed"
    )


class MemoryJournal(AnswerFromLookup):
    """The journal's semantics in memory; lost when the process exits."""

    blocking: ClassVar[bool] = False
    """Never waits on I/O: async callers call it inline (see the conversation's ``*_async`` methods)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[tuple[str, str], _Record] = {}
        # by (thread, call): a lookup per disposed call scanned every decision
        self._decisions: dict[tuple[str, str], list[dict[str, Any]]] = {}

    def claim(self, key: JournalKey, *, tool: str) -> ClaimResult:
        with self._lock:
            record = self._calls.get((key.thread_id, key.call_id))
            if record is not None:
                return _result(record)
            now = time.time()
            self._calls[key.thread_id, key.call_id] = _Record(key.fingerprint, tool, now, None)
            return ClaimResult(Claim.RUN, None, now, key.fingerprint)

    def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> None:
        with self._lock:
            record = self._calls.get((key.thread_id, key.call_id))
            if record is None or record.fingerprint != key.fingerprint:
                raise _no_intent(key)
            if record.answer is None:  # first answer wins; an answer is never overwritten
                record.answer = dict(answer)

    def settle(
        self,
        key: JournalKey,
        answer: Mapping[str, Any],
        *,
        decision: Mapping[str, Any] | None = None,
    ) -> ClaimResult:
        with self._lock:
            record = self._calls.get((key.thread_id, key.call_id))
            if record is not None:
                return _result(record)
            now = time.time()
            self._calls[key.thread_id, key.call_id] = _Record(
                key.fingerprint, "", now, dict(answer)
            )
            if decision is not None:
                self._keep(decision)
            return ClaimResult(Claim.ANSWERED, dict(answer), now, key.fingerprint)

    def lookup(self, thread_id: str, call_id: str) -> ClaimResult | None:
        with self._lock:
            record = self._calls.get((thread_id, call_id))
            return _result(record) if record is not None else None

    def _keep(self, decision: Mapping[str, Any]) -> None:
        key = (decision.get("threadId", ""), decision.get("toolCallId", ""))
        self._decisions.setdefault(key, []).append(dict(decision))

    def record_decision(self, decision: Mapping[str, Any]) -> None:
        with self._lock:
            self._keep(decision)

    def decisions(self, thread_id: str, call_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(d) for d in self._decisions.get((thread_id, call_id), ())]


_FORMAT = "agui-tools-journal/1"
# what a damaged file raises besides sqlite3.Error: text that is not UTF-8, a
# record that is not JSON (orjson's error is a ValueError)
_UNREADABLE = (sqlite3.Error, UnicodeDecodeError, ValueError)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS journal_identity (
    id          TEXT NOT NULL,
    created_at  REAL NOT NULL,
    format      TEXT NOT NULL
);
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


class SQLiteJournal(AnswerFromLookup):
    """The durable journal: one SQLite file per application.

    Safe to share between threads of one process (a lock serialises them) and
    between processes (``BEGIN IMMEDIATE`` takes the write lock before reading
    the record). Every method commits before it returns; a failure of the
    database is raised as :class:`JournalError` saying what was being recorded.
    """

    blocking: ClassVar[bool] = True
    """May wait for another process's lock: async callers run it in a worker thread."""

    def __init__(
        self, path: str | Path, *, timeout: float = 30.0, create: bool | None = None
    ) -> None:
        """Open the journal at ``path``.

        ``create``: ``None`` (the default) creates a journal only where no file
        exists; ``True`` also over an empty file (0 bytes, or a database holding
        nothing); ``False`` never creates. A file that exists but holds no journal
        is refused (:class:`JournalError`): it is what a journal becomes when its
        contents are lost — replaced by an empty file, or copied without its
        ``-wal`` — and opening it as a fresh journal would run every call again.
        """
        self.path = Path(path)
        self._lock = threading.Lock()
        existed = self.path.exists()
        if not existed and create is False:
            raise JournalError(f"there is no journal at {self.path} (and create=False)")
        try:
            self._db = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise JournalError(f"cannot open the journal at {self.path}: {exc}") from exc
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self.identity = self._claim_identity(existed, create)
        except JournalError:
            self._db.close()
            raise
        except Exception as exc:  # a corrupt file fails in surprising ways (UnicodeDecodeError)
            self._db.close()
            raise JournalError(
                f"cannot open the journal at {self.path}: it is not a readable journal "
                f"({type(exc).__name__}: {exc}); restore it from a backup"
            ) from exc

    def _claim_identity(self, existed: bool, create: bool | None) -> str:
        """The journal's identity: read, adopted (a journal from before identities),
        or written — under the write lock, so two processes creating one file agree."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "journal_identity" in tables:
                row = db.execute("SELECT id FROM journal_identity").fetchone()
                if row is None or not isinstance(row[0], str):
                    raise JournalError(
                        f"the journal at {self.path} has lost its identity row; restore it from "
                        "a backup"
                    )
                db.execute("COMMIT")
                return row[0]
            if "calls" not in tables:
                if tables:
                    raise JournalError(
                        f"{self.path} is a SQLite database but not an agui-tools journal "
                        f"(it holds {', '.join(sorted(tables))})"
                    )
                if existed and create is not True:
                    raise JournalError(
                        f"the journal file {self.path} is empty: if it held a journal, its "
                        "contents are gone (an empty file put in its place, or a copy made "
                        "without its -wal file) and every call it recorded would run again. "
                        "Restore the journal from a backup; to start a new journal in this "
                        "file, open it with create=True."
                    )
            identity = str(uuid.uuid4())
            for statement in _SCHEMA.split(";"):  # one by one: executescript would COMMIT
                if statement.strip():
                    db.execute(statement)
            db.execute(
                "INSERT INTO journal_identity (id, created_at, format) VALUES (?, ?, ?)",
                (identity, time.time(), _FORMAT),
            )
            db.execute("COMMIT")
            return identity
        except BaseException:
            with suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SQLiteJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self, what: str) -> Iterator[sqlite3.Connection]:
        """One committed transaction; rolled back (never left open) on any failure."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreWriteFailed(
                    f"the journal at {self.path} could not {what}: {exc}", operation=what
                ) from exc
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as exc:
                # the transaction may already be gone; the original error is the news
                with suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                if isinstance(exc, _UNREADABLE):
                    # rolled back: a SQLite transaction commits whole or not at all
                    raise StoreWriteFailed(
                        f"the journal at {self.path} could not {what}: {exc}", operation=what
                    ) from exc
                raise

    @contextmanager
    def _read(self, what: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._db
            except _UNREADABLE as exc:
                raise StoreReadFailed(
                    f"the journal at {self.path} could not {what}: {exc}", operation=what
                ) from exc

    @staticmethod
    def _row(db: sqlite3.Connection, thread_id: str, call_id: str) -> ClaimResult | None:
        row = db.execute(
            "SELECT fingerprint, started_at, answer FROM calls WHERE thread_id=? AND call_id=? "
            "ORDER BY answer IS NULL, started_at LIMIT 1",
            (thread_id, call_id),
        ).fetchone()
        return stored_result(row) if row is not None else None

    def claim(self, key: JournalKey, *, tool: str) -> ClaimResult:
        with self._write(f"record the intent to execute call {key.call_id!r}") as db:
            found = self._row(db, key.thread_id, key.call_id)
            if found is not None:
                return found
            now = time.time()
            db.execute(
                "INSERT INTO calls (thread_id, call_id, fingerprint, tool, started_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (key.thread_id, key.call_id, key.fingerprint, tool, now),
            )
            return ClaimResult(Claim.RUN, None, now, key.fingerprint)

    def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> None:
        payload = orjson.dumps(dict(answer))
        with self._write(f"record the answer of call {key.call_id!r}") as db:
            updated = db.execute(
                "UPDATE calls SET answer=?, finished_at=? "
                "WHERE thread_id=? AND call_id=? AND fingerprint=? AND answer IS NULL",
                (payload, time.time(), key.thread_id, key.call_id, key.fingerprint),
            ).rowcount
            if updated == 0 and (
                db.execute(
                    "SELECT 1 FROM calls WHERE thread_id=? AND call_id=? AND fingerprint=?",
                    (key.thread_id, key.call_id, key.fingerprint),
                ).fetchone()
                is None
            ):
                raise _no_intent(key)

    def settle(
        self,
        key: JournalKey,
        answer: Mapping[str, Any],
        *,
        decision: Mapping[str, Any] | None = None,
    ) -> ClaimResult:
        payload = orjson.dumps(dict(answer))
        with self._write(f"record the answer of call {key.call_id!r}") as db:
            found = self._row(db, key.thread_id, key.call_id)
            if found is not None:
                return found
            now = time.time()
            db.execute(
                "INSERT INTO calls (thread_id, call_id, fingerprint, tool, started_at, "
                "finished_at, answer) VALUES (?, ?, ?, '', ?, ?, ?)",
                (key.thread_id, key.call_id, key.fingerprint, now, now, payload),
            )
            if decision is not None:
                self._insert_decision(db, decision)
            return ClaimResult(Claim.ANSWERED, dict(answer), now, key.fingerprint)

    def lookup(self, thread_id: str, call_id: str) -> ClaimResult | None:
        with self._read(f"read the record of call {call_id!r}") as db:
            return self._row(db, thread_id, call_id)

    @staticmethod
    def _insert_decision(db: sqlite3.Connection, decision: Mapping[str, Any]) -> None:
        db.execute(
            "INSERT INTO decisions (thread_id, call_id, decision) VALUES (?, ?, ?)",
            decision_row(decision),
        )

    def record_decision(self, decision: Mapping[str, Any]) -> None:
        with self._write(f"record a consent decision for {decision.get('toolCallId')!r}") as db:
            self._insert_decision(db, decision)

    def decisions(self, thread_id: str, call_id: str) -> list[dict[str, Any]]:
        with self._read(f"read the decisions of call {call_id!r}") as db:
            rows = db.execute(
                "SELECT decision FROM decisions WHERE thread_id=? AND call_id=? ORDER BY seq",
                (thread_id, call_id),
            ).fetchall()
            return [orjson.loads(r[0]) for r in rows]
