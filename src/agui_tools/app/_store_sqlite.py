"""The embedded thread store: one SQLite file, WAL, standard library only.

The journal's file with two more tables: ``threads`` (one row per thread: its
version, state and resumed calls as of the last saved run) and ``runs`` (one
row per saved run: its result, and the messages it changed — ``keep`` leading
messages kept, the rest written). A run is saved in one ``BEGIN IMMEDIATE`` transaction that checks the
version, so two processes sharing the file cannot both save over the same
version (:class:`~agui_tools._errors.StaleThread`).

Every call is synchronous and may wait up to ``timeout`` for another
process's write lock: async callers run it in a worker thread
(``blocking = True``), never on the event loop.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import ClassVar

from .._errors import JournalError, StaleThread, StoreError
from ._journal import SQLiteJournal, refuse_bad_ids
from ._store import Snapshot, ThreadRecord, decode_record

__all__ = ["SQLiteStore"]

_THREADS_SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    thread_id  TEXT PRIMARY KEY,
    version    INTEGER NOT NULL,
    state      BLOB NOT NULL,
    resumed    BLOB NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    thread_id TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    keep      INTEGER NOT NULL,
    messages  BLOB NOT NULL,
    run       BLOB NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
"""


class SQLiteStore(SQLiteJournal):
    """Threads, runs, intents, answers and decisions in one SQLite file.

    Args:
        path: the file (created when missing: whole, or not at all if the process
            dies meanwhile — see :func:`~agui_tools.app._journal.create_aside`).
        timeout: how long a write waits for another process's lock, seconds.
        create: ``None`` creates a store only where no file exists; ``True`` also in
            an empty file (0 bytes, or a database holding nothing — what an older
            version killed while creating a store left); ``False`` never creates.
            A file holding anything is never replaced.
    """

    blocking: ClassVar[bool] = True
    _schema: ClassVar[tuple[str, ...]] = (*SQLiteJournal._schema, _THREADS_SCHEMA)

    def __init__(
        self, path: str | Path, *, timeout: float = 30.0, create: bool | None = None
    ) -> None:
        try:
            super().__init__(path, timeout=timeout, create=create)
        except JournalError as exc:
            raise _advised(Path(path), exc) from exc.__cause__
        try:  # a journal's file opened as a store: its thread tables are added
            with self._lock:
                self._db.executescript(_THREADS_SCHEMA)
        except sqlite3.Error as exc:
            self.close()
            raise _advised(
                self.path,
                StoreError(f"the store at {self.path} could not create its thread tables: {exc}"),
                exc,
            ) from exc

    # every failure of the file says what the user can do about it

    @contextmanager
    def _write(self, what: str) -> Iterator[sqlite3.Connection]:
        with self._advising(super()._write(what)) as db:
            yield db

    @contextmanager
    def _read(self, what: str) -> Iterator[sqlite3.Connection]:
        with self._advising(super()._read(what)) as db:
            yield db

    @contextmanager
    def _advising(
        self, inner: AbstractContextManager[sqlite3.Connection]
    ) -> Iterator[sqlite3.Connection]:
        try:
            with inner as db:
                yield db
        except StaleThread:
            raise
        except StoreError as exc:
            raise _advised(self.path, exc) from exc.__cause__

    def load(self, thread_id: str) -> ThreadRecord | None:
        refuse_bad_ids(reading=True, thread_id=thread_id)
        with self._read(f"load thread {thread_id!r}") as db:
            row = db.execute(
                "SELECT version, state, resumed FROM threads WHERE thread_id=?",
                (thread_id,),
            ).fetchone()
            if row is None:
                return None
            # a run row never changes: those up to the version read are that version's
            runs = db.execute(
                "SELECT keep, messages, run FROM runs WHERE thread_id=? AND seq<=? ORDER BY seq",
                (thread_id, row[0]),
            ).fetchall()
        return decode_record(thread_id, row[0], row[1], row[2], runs)

    def save_run(
        self,
        thread_id: str,
        expected_version: int,
        snapshot: Snapshot,
    ) -> int:
        refuse_bad_ids(thread_id=thread_id)
        snap = snapshot
        with self._write(f"save a run of thread {thread_id!r}") as db:
            row = db.execute(
                "SELECT version FROM threads WHERE thread_id=?", (thread_id,)
            ).fetchone()
            version = row[0] if row is not None else 0
            if version != expected_version:
                raise StaleThread(thread_id, expected_version, version)
            db.execute(
                "INSERT INTO threads (thread_id, version, state, resumed, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (thread_id) DO UPDATE SET "
                "version=excluded.version, state=excluded.state, "
                "resumed=excluded.resumed, updated_at=excluded.updated_at",
                (thread_id, version + 1, snap.state, snap.resumed, time.time()),
            )
            db.execute(
                "INSERT INTO runs (thread_id, seq, keep, messages, run) VALUES (?, ?, ?, ?, ?)",
                (thread_id, version + 1, snap.keep, snap.messages, snap.run),
            )
        return version + 1


_ADVICE = (
    (
        ("file is not a database", "malformed", "corrupt"),
        "the file is damaged or is not an agui-tools store: stop the application, keep the "
        "file for inspection, and restore it from a backup (or point the application at a "
        "new file — the threads and the record of executed calls in it are then gone)",
    ),
    (
        ("readonly", "read-only", "attempt to write"),
        "the file, its folder or the disk is read-only: the process needs write access to "
        "the file and its folder (SQLite writes -wal and -shm files beside it)",
    ),
    (
        ("disk is full", "disk i/o error", "database or disk is full", "no space left"),
        "the disk is full (or failing): free space and retry — nothing of this operation "
        "was written",
    ),
    (
        ("locked", "busy"),
        "another process held the file's write lock longer than the timeout: retry, or "
        "raise timeout=",
    ),
)


def _advised(path: Path, exc: JournalError, cause: BaseException | None = None) -> StoreError:
    """The journal's error as a StoreError that says what to do about it (of the
    same class: what was written does not change with the advice)."""
    if isinstance(exc, StaleThread):
        return exc
    kind = type(exc)
    text = str(exc)
    low = f"{text} {cause or exc.__cause__ or ''}".lower()
    if "unable to open" in low:
        writable = os.access(path.parent, os.W_OK) and (
            not path.exists() or os.access(path, os.W_OK)
        )
        if path.parent.is_dir() and not writable:
            low += " read-only"
        elif not path.parent.is_dir():
            return kind(
                f"{text} — the folder {path.parent} does not exist",
                written=exc.written,
                operation=exc.operation,
            )
    for needles, advice in _ADVICE:
        if any(n in low for n in needles):
            return kind(f"{text} — {advice}", written=exc.written, operation=exc.operation)
    return kind(text, written=exc.written, operation=exc.operation)
