"""The thread store: a thread survives restarts, and moves between replicas.

The journal makes one *call* execute at most once; the store keeps the whole
*thread* — its messages and state after each run, the runs, and (because a
store is a journal too) each call's intent, answer and consent decisions — so
that any process can pick the thread up where another left it: after a crash,
on another replica, days later.

What one transaction records:

* ``save_run`` — "this run folded, these calls pending": the thread's messages
  and state, the run's result and the ids of the calls it left for
  disposition, and the thread's new version. It is refused — nothing written —
  when the thread moved on since the writer loaded it (:class:`StaleThread`).
  Messages are written as what changed: ``keep`` says how many leading
  messages are as the previous version held them, and only the messages after
  those are written (with the run's row) — so the bytes a thread writes grow
  with what it says, not with the square of its length; a run that restated
  the history (``MESSAGES_SNAPSHOT``) rewrites from the first message it changed.
* ``claim`` / ``finish`` / ``settle`` / ``record_decision`` — as the journal:
  an intent before a handler runs, its answer after, an answer that ran
  nothing together with the decision behind it; each decision with its entry
  in the approval ledger (app/_ledger.py, read back by ``ledger()``).

The snapshot a run saves does not hold the answers given after it: those are
in the journal, which is the truth for answers. Restoring
(:class:`~agui_tools.app._conversation.Conversation` with ``store=`` and
``thread_id=``) loads the snapshot and disposes of every call still
unanswered exactly as a restarted process would: an answer the journal holds
is reused, an execution that started anywhere is never run again (outcome
unknown), a recorded consent decision stands.

Backends, one protocol, one contract suite (tests/app/test_store.py):
:class:`MemoryStore` (here; tests, throw-away threads),
:class:`~agui_tools.app._store_sqlite.SQLiteStore` (one file, the embedded
default) and :class:`~agui_tools.app._store_postgres.PostgresStore` (many
processes or machines).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import orjson

from .._errors import StaleThread, StoreError, StoreReadFailed, StoreWriteFailed
from ._journal import ClaimResult, Journal, JournalKey, MemoryJournal, refuse_bad_ids

__all__ = [
    "AsyncStore",
    "MemoryStore",
    "StaleThread",
    "Store",
    "StoreError",
    "ThreadRecord",
    "is_async_store",
]


@dataclass(frozen=True)
class ThreadRecord:
    """A thread as the store holds it: the last saved run's snapshot, and every run.

    ``version`` counts the runs saved (0: nothing saved yet); a writer passes
    the version it loaded, and a store refuses the write when it moved on.
    ``resumed`` lists the calls answered by a resume entry (INT-6) rather
    than by a tool message.
    """

    thread_id: str
    version: int
    messages: list[dict[str, Any]]
    state: Any
    runs: list[dict[str, Any]] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)


class Store(Journal, Protocol):
    """A journal that also keeps threads (see the module docstring)."""

    blocking: ClassVar[bool]
    """Whether a call may wait on I/O or a lock: async callers run it in a worker thread."""

    def load(self, thread_id: str) -> ThreadRecord | None:
        """The thread as last saved, or ``None`` when no run of it was saved."""
        ...

    def save_run(
        self,
        thread_id: str,
        expected_version: int,
        snapshot: Snapshot,
    ) -> int:
        """Record one folded run atomically; return the thread's new version.

        ``snapshot`` (:func:`encode_snapshot`, made before any I/O) holds the run
        encoded: the thread's messages become the first ``snapshot.keep``
        messages of version ``expected_version``, then ``snapshot.messages``.
        Raises :class:`StaleThread` — having written nothing — when the stored
        version is not ``expected_version``.
        """
        ...

    def close(self) -> None: ...


class AsyncStore(Protocol):
    """The store's contract with coroutine methods: a store that does its I/O on the
    event loop (PostgreSQL through psycopg's async API), for the async faces.

    Same semantics, method for method, as :class:`Store` — the one contract suite
    runs on both. A conversation on it is driven by an
    :class:`~agui_tools.app._driver.AsyncDriver` (``Session`` and ``AgentClient``
    use one), never by the synchronous ``Driver``.
    """

    is_async: ClassVar[bool]
    """Always ``True``: how a conversation tells an async store from a sync one."""

    async def claim(
        self, key: JournalKey, *, tool: str, decision: Mapping[str, Any] | None = None
    ) -> ClaimResult: ...

    async def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> dict[str, Any]: ...

    async def settle(
        self,
        key: JournalKey,
        answer: Mapping[str, Any],
        *,
        decision: Mapping[str, Any] | None = None,
    ) -> ClaimResult: ...

    async def lookup(self, thread_id: str, call_id: str) -> ClaimResult | None: ...

    async def answer_for(self, thread_id: str, call_id: str) -> dict[str, Any] | None: ...

    async def record_decision(self, decision: Mapping[str, Any]) -> None: ...

    async def decisions(self, thread_id: str, call_id: str) -> list[dict[str, Any]]: ...

    async def load(self, thread_id: str) -> ThreadRecord | None: ...

    async def save_run(
        self,
        thread_id: str,
        expected_version: int,
        snapshot: Snapshot,
    ) -> int: ...

    async def aclose(self) -> None: ...


def is_async_store(journal: object) -> bool:
    """Whether ``journal`` is an :class:`AsyncStore` (its methods are coroutines)."""
    return getattr(journal, "is_async", False) is True


class MemoryStore(MemoryJournal):
    """The store's semantics in memory (tests; threads that may be lost on exit).

    Threads are kept encoded, as the durable stores keep them: what a caller
    folds into never changes what is stored, and a value JSON cannot carry is
    refused here too.
    """

    blocking: ClassVar[bool] = False

    def __init__(self) -> None:
        super().__init__()
        self._threads: dict[str, tuple[int, Snapshot, list[StoredRun]]] = {}

    def load(self, thread_id: str) -> ThreadRecord | None:
        refuse_bad_ids(reading=True, thread_id=thread_id)
        with self._lock:
            found = self._threads.get(thread_id)
            if found is None:
                return None
            version, snap, runs = found
            runs = runs[:version]  # the runs of this version: a writer may append meanwhile
        return decode_record(thread_id, version, snap.state, snap.resumed, runs)

    def save_run(
        self,
        thread_id: str,
        expected_version: int,
        snapshot: Snapshot,
    ) -> int:
        refuse_bad_ids(thread_id=thread_id)
        snap = snapshot
        with self._lock:
            found = self._threads.get(thread_id)
            version, runs = (found[0], found[2]) if found is not None else (0, [])
            if version != expected_version:
                raise StaleThread(thread_id, expected_version, version)
            runs.append((snap.keep, snap.messages, snap.run))  # appended, never copied
            self._threads[thread_id] = (version + 1, snap, runs)
            return version + 1

    def close(self) -> None:
        """Nothing to release (the same call as the durable stores have)."""


# -- the encoding every backend stores ------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """One run's save, encoded once: what every backend writes.

    ``messages`` are the messages after the first ``keep`` (see ``save_run``);
    they are stored with the run, ``state`` and ``resumed`` with the thread."""

    messages: bytes
    keep: int
    state: bytes
    resumed: bytes
    run: bytes


StoredRun = tuple[int, bytes, bytes]
"""A saved run as a backend reads it back: ``keep``, the messages after those, the run."""


def encode_snapshot(
    messages: Sequence[Mapping[str, Any]],
    state: Any,
    resumed: Sequence[str],
    run: Mapping[str, Any],
    keep: int = 0,
) -> Snapshot:
    """A save of plain messages (a test's, a benchmark's, a store filled by hand):
    each message encoded, then :func:`snapshot_of` — the one encoding of a save. A
    value JSON cannot carry is refused here, before any write."""
    if keep < 0:
        raise StoreError(f"keep must be 0 or more, not {keep}")
    try:
        blobs = [orjson.dumps(message) for message in messages]
    except TypeError as exc:
        raise not_storable(exc) from None
    return snapshot_of(blobs, keep, state, resumed, run)


def snapshot_of(
    messages: Sequence[bytes], keep: int, state: Any, resumed: Sequence[str], run: Mapping[str, Any]
) -> Snapshot:
    """A save whose messages are already encoded, one by one (the conversation's:
    ``ThreadState.encoded``): joined, not encoded again — the bytes one
    ``orjson.dumps`` of the list would give."""
    try:
        return Snapshot(
            b"[" + b",".join(messages) + b"]",
            keep,
            orjson.dumps(state),
            orjson.dumps(sorted(resumed)),
            orjson.dumps(dict(run)),
        )
    except TypeError as exc:
        raise not_storable(exc) from None


def not_storable(exc: TypeError) -> StoreWriteFailed:
    """The one refusal of a thread that holds a value JSON cannot carry (orjson's
    ``TypeError`` says which)."""
    return StoreWriteFailed(
        f"the thread cannot be stored: it holds a value that is not JSON ({exc})"
    )


def decode_record(
    thread_id: str, version: int, state: bytes, resumed: bytes, runs: Sequence[StoredRun]
) -> ThreadRecord:
    """The thread as saved: its messages rebuilt run by run (each run's ``keep``,
    then its messages), in time linear in what the runs wrote."""
    messages: list[dict[str, Any]] = []
    try:
        for seq, (keep, written, _run) in enumerate(runs, 1):
            if keep > len(messages):
                raise StoreReadFailed(
                    f"thread {thread_id!r} (version {version}) is stored damaged and cannot be "
                    f"read: run {seq} keeps {keep} messages of the {len(messages)} before it"
                )
            del messages[keep:]
            messages.extend(orjson.loads(written))
        return ThreadRecord(
            thread_id,
            version,
            messages,
            orjson.loads(state),
            [orjson.loads(r) for _, _, r in runs],
            orjson.loads(resumed),
        )
    except orjson.JSONDecodeError as exc:
        raise StoreReadFailed(
            f"thread {thread_id!r} (version {version}) is stored damaged and cannot be read: {exc}"
        ) from exc
