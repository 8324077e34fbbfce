"""The journal: exactly-once execution of tool calls, durable across crashes.

A side effect must never happen twice and an answer never be lost. One record per
``(threadId, toolCallId)``, written two ways, each atomic:

* ``claim(key)`` before a handler runs: nothing recorded → the intent (with the argument
  fingerprint) is written and the caller runs (``Claim.RUN``), then ``finish``; an answer
  → returned, never re-run (``Claim.ANSWERED``); an intent alone → outcome unknown, never
  re-run silently, edited arguments or not (``Claim.UNKNOWN``);
* ``settle(key, answer)`` for an answer that ran nothing, with its consent decision, only
  when nothing is recorded; otherwise the standing record wins.

"Outcome unknown" is never written over an open intent: the execution may still finish.
Consent decisions are kept here, append-only. SQLite: WAL with ``synchronous=FULL`` (a
commit survives power loss), ``BEGIN IMMEDIATE`` (two processes cannot both claim);
:class:`MemoryJournal` has the same semantics without persistence.
"""

from __future__ import annotations

import os
import re
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

from .._errors import JournalError, StoreError, StoreReadFailed, StoreWriteFailed
from ..wire._enforce import MAX_ID_BYTES, id_problem
from ._ledger import LEDGER_SQLITE, chained, head_of, sqlite_append, sqlite_entries

__all__ = [
    "Claim",
    "ClaimResult",
    "Journal",
    "JournalError",
    "JournalKey",
    "MemoryJournal",
    "SQLiteJournal",
]


def refuse_bad_ids(*, reading: bool = False, **ids: str) -> None:
    """Refuse an id no store can hold (a NUL, or over
    :data:`~agui_tools.wire._enforce.MAX_ID_BYTES` bytes), the same in every store: a
    :class:`~agui_tools.app.StoreWriteFailed` (``StoreReadFailed`` for a read) under ``LIMIT``,
    nothing written. For ids an application chose; the pipeline refuses them in events first.
    """
    for kind, value in ids.items():
        problem = id_problem(value) if isinstance(value, str) else None
        if problem is not None:
            shown = value[:40].replace("\x00", "\\x00")
            cls = StoreReadFailed if reading else StoreWriteFailed
            raise cls(
                f"[LIMIT] the {kind.replace('_', ' ')} {shown!r}… {problem}: no store holds such "
                f"an id (at most {MAX_ID_BYTES} bytes, no NUL — MAX_ID_BYTES); nothing was "
                "written",
                written="no",
                operation=f"check the {kind.replace('_', ' ')}",
            )


@dataclass(frozen=True, slots=True)
class JournalKey:
    """One call, and the exact arguments it would run with (their fingerprint)."""

    thread_id: str
    call_id: str
    fingerprint: str

    def __post_init__(self) -> None:
        refuse_bad_ids(thread_id=self.thread_id, call_id=self.call_id)


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

    def claim(
        self, key: JournalKey, *, tool: str, decision: Mapping[str, Any] | None = None
    ) -> ClaimResult:
        """Record the intent to execute the call unless one is recorded: ``Claim.RUN``
        for the one claim that inserted it, and ``decision`` (with its ledger entry)
        kept in that same write — never for a claim that found one."""
        ...

    def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> dict[str, Any]:
        """Record ``answer`` over the call's open intent; return the answer that stands:
        this one, or the one recorded first (by another process, or a reader that
        answered the call "outcome unknown" meanwhile) — an answer is never
        overwritten, and every reader gives the call the same one."""
        ...

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


def _not_written(message: str) -> StoreError:
    """A failure that wrote nothing (an open that failed, a refused answer): said so."""
    return StoreError(message, written="no")


def _no_intent(key: JournalKey) -> JournalError:
    return _not_written(
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
        self._ledger: list[tuple[int, bytes]] = []

    def claim(
        self, key: JournalKey, *, tool: str, decision: Mapping[str, Any] | None = None
    ) -> ClaimResult:
        with self._lock:
            record = self._calls.get((key.thread_id, key.call_id))
            if record is not None:
                return _result(record)
            if decision is not None:
                self._keep(decision)  # first: a refused decision leaves no claim behind
            now = time.time()
            self._calls[key.thread_id, key.call_id] = _Record(key.fingerprint, tool, now, None)
            return ClaimResult(Claim.RUN, None, now, key.fingerprint)

    def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> dict[str, Any]:
        with self._lock:
            record = self._calls.get((key.thread_id, key.call_id))
            if record is None or record.fingerprint != key.fingerprint:
                raise _no_intent(key)
            if record.answer is None:  # first answer wins; an answer is never overwritten
                record.answer = dict(answer)
            return dict(record.answer)

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
        refuse_bad_ids(reading=True, thread_id=thread_id, call_id=call_id)
        with self._lock:
            record = self._calls.get((thread_id, call_id))
            return _result(record) if record is not None else None

    def _keep(self, decision: Mapping[str, Any]) -> None:
        key = (decision.get("threadId", ""), decision.get("toolCallId", ""))
        seq, prev = head_of(self._ledger[-1] if self._ledger else None)
        entry = chained(decision, seq, prev)[0]  # before anything is kept: all or nothing
        self._decisions.setdefault(key, []).append(dict(decision))
        self._ledger.append((seq, entry))

    def record_decision(self, decision: Mapping[str, Any]) -> None:
        with self._lock:
            self._keep(decision)

    def decisions(self, thread_id: str, call_id: str) -> list[dict[str, Any]]:
        refuse_bad_ids(reading=True, thread_id=thread_id, call_id=call_id)
        with self._lock:
            return [dict(d) for d in self._decisions.get((thread_id, call_id), ())]

    def ledger(self) -> list[tuple[int, bytes]]:
        """The approval ledger's entries, oldest first (app/_ledger.py)."""
        with self._lock:
            return list(self._ledger)


_FORMAT = "agui-tools-journal/1"
# what a damaged file raises besides sqlite3.Error: text that is not UTF-8, a
# record that is not JSON (orjson's error is a ValueError)
_UNREADABLE = (sqlite3.Error, UnicodeDecodeError, ValueError)
_SCHEMA = (
    """
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
    + LEDGER_SQLITE
)


_BIRTH = ".creating"
"""How the temporary name of a file being created ends (see :func:`create_aside`)."""


def _statements(scripts: tuple[str, ...]) -> Iterator[str]:
    """The statements of ``scripts`` one by one: ``executescript`` would COMMIT."""
    for script in scripts:
        for statement in script.split(";"):
            if statement.strip():
                yield statement


def _identify(db: sqlite3.Connection) -> str:
    """A new identity row, in the transaction the caller holds."""
    identity = str(uuid.uuid4())
    db.execute(
        "INSERT INTO journal_identity (id, created_at, format) VALUES (?, ?, ?)",
        (identity, time.time(), _FORMAT),
    )
    return identity


def _fsync(path: Path, *, folder: bool = False) -> None:
    try:  # a file opened for writing: Windows flushes no read-only handle
        fd = os.open(path, os.O_RDONLY if folder else os.O_RDWR)
    except OSError:
        if folder:  # a folder cannot be opened on Windows: its entries are durable there
            return
        raise
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_STRAY_AFTER = 3600.0
"""Seconds after which a temporary file no creation linked is a crash's leftover."""


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}{_BIRTH}")


def _temporaries(path: Path) -> list[Path]:
    """The temporary files of creations of ``path`` (with their -journal, -wal, -shm)."""
    named = re.compile(
        rf"\.{re.escape(path.name)}\.[0-9a-f]{{12}}{re.escape(_BIRTH)}(-journal|-wal|-shm)?"
    )
    try:
        with os.scandir(path.parent) as entries:
            return [Path(e.path) for e in entries if named.fullmatch(e.name)]
    except OSError:
        return []


def _births(path: Path) -> list[Path]:
    """The temporary names the file at ``path`` was created under, still linked to it."""
    found = []
    for name in _temporaries(path):
        with suppress(OSError):
            if name.name.endswith(_BIRTH) and os.path.samefile(name, path):
                found.append(name)
    return found


def _sweep(path: Path) -> None:
    """Once the file at ``path`` has its identity: the temporary names still linked to
    it, and what creations killed before linking left — linked to no file, and an
    hour old (no creation in progress takes that long)."""
    births = _births(path)
    stale = time.time() - _STRAY_AFTER
    for name in _temporaries(path):
        with suppress(OSError):
            if name in births or ((found := name.stat()).st_nlink == 1 and found.st_mtime < stale):
                name.unlink()


def _no_room(exc: sqlite3.Error) -> bool:
    """Whether SQLite failed for want of room (a full disk, a quota, a failing device)."""
    text = str(exc).lower()
    return "disk i/o error" in text or "full" in text


def _abandon(path: Path) -> bool:
    """Remove the journal this process just created at ``path`` and could not open (its
    first open, which writes the identity, failed): the file, its ``-wal`` and ``-shm``
    and its temporary name — only while that name is still linked to it, the proof that
    no open completed (no identity, so no record). ``False``: left as it is."""
    births = _births(path)
    if not births:
        return False
    names: list[str | Path] = [f"{path}-wal", f"{path}-shm", path, *births]
    for name in names:
        with suppress(OSError):
            os.unlink(name)
    return True


def _wal(db: sqlite3.Connection, timeout: float) -> None:
    """WAL mode. A no-op on a file made by :func:`create_aside` (born in WAL); a file
    still in rollback mode (one ``create=True`` starts in) switches under an exclusive
    lock that SQLite does not wait for: while other processes open it too, retried
    for up to ``timeout``."""
    deadline = time.monotonic() + timeout
    pause = 0.001
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def create_aside(path: Path, scripts: tuple[str, ...]) -> bool:
    """Put a new journal file at ``path`` unless one is there (``True``: this call did).

    Built under a temporary name, fsynced, then hard-linked to ``path``: a crash leaves ``path``
    absent or whole, and of concurrent creators one wins. Its identity row is written by its
    first open, in the ``-wal``, so a copy without its ``-wal`` is refused; until then the
    temporary name (``.NAME.HEX.creating``) proves it new — left by a crash, it may be deleted.
    """
    tmp = _temporary(path)
    what = f"cannot create the journal at {path}"
    linked = False
    try:
        db = sqlite3.connect(tmp, isolation_level=None)
        try:
            db.execute("PRAGMA synchronous=FULL")
            db.execute("BEGIN IMMEDIATE")
            for statement in _statements(scripts):
                db.execute(statement)
            db.execute("COMMIT")
            # recorded in the header: the file is born in the mode every open expects
            db.execute("PRAGMA journal_mode=WAL")
        finally:
            db.close()  # the last connection: nothing stays in a -wal of the temporary name
        _fsync(tmp)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False  # another process created it first: that file is the journal
        except OSError as exc:
            if not path.parent.is_dir():
                raise
            raise _not_written(
                f"{what}: the file system of {path.parent} cannot hard-link files ({exc}), "
                "which creating a journal atomically needs. Put the file on a local disk; "
                "or create an empty file at that path and open it with create=True (the "
                "journal is then created in place: a crash while creating it leaves an "
                "empty file, which create=True accepts again)"
            ) from exc
        linked = True
        _fsync(path.parent, folder=True)
        return True
    except sqlite3.Error as exc:
        raise _not_written(f"{what}: {exc}") from exc
    except OSError as exc:
        raise _not_written(f"{what}: {exc.strerror or exc}") from exc
    finally:
        for suffix in ("-journal", "-wal", "-shm", *(() if linked else ("",))):
            with suppress(OSError):
                os.unlink(f"{tmp}{suffix}")


class SQLiteJournal(AnswerFromLookup):
    """The durable journal: one SQLite file per application, shared by threads (a lock) and
    processes (``BEGIN IMMEDIATE``). Every method commits before returning; failures are
    :class:`JournalError`.
    """

    blocking: ClassVar[bool] = True
    """May wait for another process's lock: async callers run it in a worker thread."""

    _schema: ClassVar[tuple[str, ...]] = (_SCHEMA,)
    """The tables a new file is created with (a subclass adds its own)."""

    def __init__(
        self, path: str | Path, *, timeout: float = 30.0, create: bool | None = None
    ) -> None:
        """Open the journal at ``path``.

        ``create``: ``None`` creates only where no file exists, ``True`` also over an empty file or
        database, ``False`` never. A file that exists without a journal is refused
        (:class:`JournalError`): it is a journal whose contents were lost, and opening it fresh
        would run every call again.
        """
        self.path = Path(path)
        self._lock = threading.Lock()
        created = False
        if not self.path.exists():
            if create is False:
                raise _not_written(f"there is no journal at {self.path} (and create=False)")
            created = create_aside(self.path, self._schema)
        try:
            # mode=rw: a file removed since is an error here, never a new empty file
            self._db = sqlite3.connect(
                f"{self.path.absolute().as_uri()}?mode=rw",
                uri=True,
                timeout=timeout,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise _not_written(f"cannot open the journal at {self.path}: {exc}") from exc
        try:
            _wal(self._db, timeout)
            self._db.execute("PRAGMA synchronous=FULL")
            self.identity = self._claim_identity(create)
        except JournalError:
            self._db.close()
            raise
        except sqlite3.OperationalError as exc:
            self._db.close()
            if created and _no_room(exc) and _abandon(self.path):
                raise _not_written(
                    f"cannot create the journal at {self.path}: the disk is full (or failing): "
                    f"{exc}; nothing was written, and the files its creation left were removed"
                ) from exc
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise self._unreadable(exc) from exc
            raise _not_written(f"cannot open the journal at {self.path}: {exc}") from exc
        except Exception as exc:  # a corrupt file fails in surprising ways (UnicodeDecodeError)
            self._db.close()
            raise self._unreadable(exc) from exc
        _sweep(self.path)  # the identity is written: the file is not new

    def _unreadable(self, exc: Exception) -> JournalError:
        return _not_written(
            f"cannot open the journal at {self.path}: it is not a readable journal "
            f"({type(exc).__name__}: {exc}); restore it from a backup"
        )

    def _claim_identity(self, create: bool | None) -> str:
        """The journal's identity: read; written by the first open of a new file (or
        of one that holds nothing, with ``create=True``); or adopted (a journal from
        before identities) — under the write lock, so processes opening one file agree."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "journal_identity" in tables:
                row = db.execute("SELECT id FROM journal_identity").fetchone()
                if row is not None and isinstance(row[0], str):
                    if "ledger" not in tables:  # a journal from before the ledger
                        db.execute(LEDGER_SQLITE)
                    db.execute("COMMIT")
                    return row[0]
                if row is not None:
                    raise _not_written(
                        f"the journal at {self.path} has a damaged identity row; restore it "
                        "from a backup"
                    )
                empty = self._holds_nothing(tables)
                # never a new identity over a record: a file still linked to its
                # temporary name was never opened; create=True is the caller's word
                if not (empty and (create is True or _births(self.path))):
                    raise _not_written(
                        f"the journal at {self.path} has no identity row: its first open's "
                        "records are gone — a copy made without its -wal file (the identity "
                        "and every record after it were in the -wal), or contents lost — and "
                        "opening it as a new journal would run every call again. Restore the "
                        "journal from a backup, with its -wal file"
                        + (
                            "; if it never held a record, open it with create=True to start "
                            "a new journal in this file."
                            if empty
                            else "."
                        )
                    )
                identity = _identify(db)
            elif "calls" in tables:  # a journal from before identities: adopted
                identity = self._initialise(db)
            elif tables:
                raise _not_written(
                    f"{self.path} is a SQLite database but not an agui-tools journal "
                    f"(it holds {', '.join(sorted(tables))})"
                )
            elif create is not True:
                raise _not_written(
                    f"the journal file {self.path} is empty: if it held a journal, its "
                    "contents are gone (an empty file put in its place, or a copy made "
                    "without its -wal file) and every call it recorded would run again: "
                    "restore the journal from a backup. If it never held one (an older "
                    "agui-tools killed while creating it leaves such a file), open it "
                    "with create=True to start a new journal in this file."
                )
            else:
                identity = self._initialise(db)
            db.execute("COMMIT")
            return identity
        except BaseException:
            with suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise

    def _initialise(self, db: sqlite3.Connection) -> str:
        for statement in _statements(self._schema):
            db.execute(statement)
        return _identify(db)

    def _holds_nothing(self, tables: set[str]) -> bool:
        """No table holds a row (SQLite's own bookkeeping aside)."""
        return all(
            self._db.execute(
                f'SELECT 1 FROM "{t.replace(chr(34), chr(34) * 2)}" LIMIT 1'
            ).fetchone()
            is None
            for t in tables
            if not t.startswith("sqlite_")
        )

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
            # one try from BEGIN to COMMIT: an interruption (Ctrl-C) landing anywhere
            # between them — right after BEGIN too — rolls back, so the file's write
            # lock is never left held by a transaction nobody will finish
            try:
                try:
                    self._db.execute("BEGIN IMMEDIATE")
                except sqlite3.Error as exc:
                    raise StoreWriteFailed(
                        f"the journal at {self.path} could not {what}: {exc}", operation=what
                    ) from exc
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as exc:
                # the transaction may already be gone; the original error is the news
                if self._db.in_transaction:
                    with suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                if isinstance(exc, StoreError):
                    raise
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

    def claim(
        self, key: JournalKey, *, tool: str, decision: Mapping[str, Any] | None = None
    ) -> ClaimResult:
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
            if decision is not None:
                self._insert_decision(db, decision)
            return ClaimResult(Claim.RUN, None, now, key.fingerprint)

    def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> dict[str, Any]:
        payload = orjson.dumps(dict(answer))
        with self._write(f"record the answer of call {key.call_id!r}") as db:
            updated = db.execute(
                "UPDATE calls SET answer=?, finished_at=? "
                "WHERE thread_id=? AND call_id=? AND fingerprint=? AND answer IS NULL",
                (payload, time.time(), key.thread_id, key.call_id, key.fingerprint),
            ).rowcount
            if updated:
                return dict(answer)
            row = db.execute(
                "SELECT answer FROM calls WHERE thread_id=? AND call_id=? AND fingerprint=?",
                (key.thread_id, key.call_id, key.fingerprint),
            ).fetchone()
            if row is None or row[0] is None:
                raise _no_intent(key)
            standing: dict[str, Any] = orjson.loads(row[0])
            return standing

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
        refuse_bad_ids(reading=True, thread_id=thread_id, call_id=call_id)
        with self._read(f"read the record of call {call_id!r}") as db:
            return self._row(db, thread_id, call_id)

    @staticmethod
    def _insert_decision(db: sqlite3.Connection, decision: Mapping[str, Any]) -> None:
        db.execute(
            "INSERT INTO decisions (thread_id, call_id, decision) VALUES (?, ?, ?)",
            decision_row(decision),
        )
        sqlite_append(db, decision)

    def record_decision(self, decision: Mapping[str, Any]) -> None:
        with self._write(f"record a consent decision for {decision.get('toolCallId')!r}") as db:
            self._insert_decision(db, decision)

    def decisions(self, thread_id: str, call_id: str) -> list[dict[str, Any]]:
        refuse_bad_ids(reading=True, thread_id=thread_id, call_id=call_id)
        with self._read(f"read the decisions of call {call_id!r}") as db:
            rows = db.execute(
                "SELECT decision FROM decisions WHERE thread_id=? AND call_id=? ORDER BY seq",
                (thread_id, call_id),
            ).fetchall()
            return [orjson.loads(r[0]) for r in rows]

    def ledger(self) -> list[tuple[int, bytes]]:
        """The approval ledger's entries, oldest first (app/_ledger.py)."""
        with self._read("read the approval ledger") as db:
            return list(sqlite_entries(db))
