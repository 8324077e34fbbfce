"""Store fault injection: every store operation, failed in every way, one at a time.

SQLite's test harness fails every I/O operation in turn; FoundationDB simulates
every fault. This is the same habit applied to the thread store: a
:class:`FaultyStore` wraps any synchronous store (an :class:`AsyncFaultyStore` an
``AsyncPostgresStore``), forwards every method, numbers each call 0, 1, 2 … and,
at the one index a trial names, injects one fault:

``before``
    the operation never reaches the store: ``StoreWriteFailed`` (a write) or
    ``StoreReadFailed`` (a read) — nothing was written.
``after``
    the operation reaches the store and commits, then the caller is told it
    failed: ``StoreOutcomeUnknown`` for a write (the caller cannot know it
    committed), ``StoreReadFailed`` for a read (the answer was lost on the way).
``die``
    the process dies as the operation is about to be sent: :class:`ProcessDied`,
    a ``BaseException`` no library code may catch. The wrapper is dead from then
    on — every later call raises it too and reaches nothing — so nothing that
    "process" still tries (an ``outcome unknown`` answer on the way out, say) is
    recorded: a dead process writes nothing.
``die-after``
    the operation commits, then the process dies before it hears back (a claim
    recorded, the handler never started).
``sigkill`` / ``sigkill-after``
    a real ``SIGKILL`` of the current process as the operation is about to be
    sent / right after it committed (for a worker subprocess, tests/helpers/fault_campaign.py).

The counter (:class:`Injector`) is shared by every wrapper of one trial — the
faulty replica's successive "processes" — so an index means the same operation
in a fault-free run (which counts them) and in the trial that faults it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agui_tools._errors import StoreOutcomeUnknown, StoreReadFailed, StoreWriteFailed
from agui_tools.app._journal import ClaimResult, JournalKey
from agui_tools.app._store import ThreadRecord

from .async_store import AsyncForwarding

__all__ = [
    "KINDS",
    "READS",
    "WRITES",
    "AsyncFaultyStore",
    "Fault",
    "FaultKind",
    "FaultyStore",
    "Injector",
    "ProcessDied",
]

FaultKind = Literal["before", "after", "die", "die-after", "sigkill", "sigkill-after"]
KINDS: tuple[FaultKind, ...] = ("before", "after", "die", "die-after")
"""The kinds every fault point is tried with in process (``sigkill`` is sampled)."""

WRITES = frozenset({"claim", "finish", "settle", "record_decision", "save_run"})
READS = frozenset({"load", "lookup", "answer_for", "decisions"})
METHODS = WRITES | READS


class ProcessDied(BaseException):
    """The process died here. A ``BaseException``: library code that catches
    ``Exception`` (a handler failure, a store error) must not see it; the scenario
    catches it at top level and abandons every object of that "process"."""


@dataclass(frozen=True)
class Fault:
    index: int
    kind: FaultKind


@dataclass
class Op:
    """One store call as the injector saw it."""

    index: int
    method: str
    where: str
    """The step of the scenario that made it (filled by the driver: ``Injector.where``)."""
    fault: FaultKind | None = None


@dataclass
class Injector:
    """Numbers the calls of every wrapper sharing it; injects ``fault`` at its index."""

    fault: Fault | None = None
    count: int = 0
    fired: bool = False
    where: str = ""
    """What the scenario is doing now: recorded with each op (which send was in flight)."""
    ops: list[Op] = field(default_factory=list)

    def next(self, method: str) -> FaultKind | None:
        index = self.count
        self.count += 1
        kind: FaultKind | None = None
        if self.fault is not None and not self.fired and self.fault.index == index:
            self.fired = True
            kind = self.fault.kind
        self.ops.append(Op(index, method, self.where, kind))
        return kind


def _before(method: str, index: int) -> Exception:
    what = f"injected fault #{index}: {method} never reached the store"
    if method in WRITES:
        return StoreWriteFailed(f"{what}; nothing was written", operation=method)
    return StoreReadFailed(f"{what}; nothing was read", operation=method)


def _after(method: str, index: int) -> Exception:
    if method in WRITES:
        return StoreOutcomeUnknown(
            f"injected fault #{index}: {method} was sent and committed, but the caller was "
            "told the connection was lost; whether it committed is unknown",
            operation=method,
        )
    return StoreReadFailed(
        f"injected fault #{index}: {method} was read, and the answer lost on the way back",
        operation=method,
    )


class _Faults:
    """What both wrappers share: the counter, the dead flag, the fault's effect."""

    def __init__(self, inner: Any, injector: Injector) -> None:
        self.inner = inner
        self.injector = injector
        self.dead = False

    def kill(self) -> None:
        """The process this wrapper belongs to died (a scripted crash): refuse everything."""
        self.dead = True

    def _enter(self, method: str) -> FaultKind | None:
        """Before the inner call: raise what ``before``/``die`` raise; return the kind."""
        if self.dead:
            raise ProcessDied(f"{method} called by a process that is dead")
        kind = self.injector.next(method)
        index = self.injector.count - 1
        if kind == "before":
            raise _before(method, index)
        if kind == "die":
            self.dead = True
            raise ProcessDied(f"the process died as it was about to {method} (#{index})")
        if kind == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        return kind

    def _exit(self, method: str, kind: FaultKind | None) -> None:
        """After the inner call committed: raise what ``after``/``die-after`` raise."""
        index = self.injector.count - 1
        if kind == "after":
            raise _after(method, index)
        if kind == "die-after":
            self.dead = True
            raise ProcessDied(f"the process died right after {method} committed (#{index})")
        if kind == "sigkill-after":
            os.kill(os.getpid(), signal.SIGKILL)


class FaultyStore(_Faults):
    """A synchronous :class:`~agui_tools.app._store.Store` with faults injected."""

    def __init__(self, inner: Any, injector: Injector) -> None:
        super().__init__(inner, injector)
        self.blocking: bool = getattr(inner, "blocking", True)

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        kind = self._enter(method)
        result = getattr(self.inner, method)(*args, **kwargs)
        self._exit(method, kind)
        return result

    def claim(
        self, key: JournalKey, *, tool: str, decision: Mapping[str, Any] | None = None
    ) -> ClaimResult:
        result: ClaimResult = self._call("claim", key, tool=tool, decision=decision)
        return result

    def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call("finish", key, answer)  # the answer that stands
        return result

    def settle(
        self,
        key: JournalKey,
        answer: Mapping[str, Any],
        *,
        decision: Mapping[str, Any] | None = None,
    ) -> ClaimResult:
        result: ClaimResult = self._call("settle", key, answer, decision=decision)
        return result

    def lookup(self, thread_id: str, call_id: str) -> ClaimResult | None:
        result: ClaimResult | None = self._call("lookup", thread_id, call_id)
        return result

    def answer_for(self, thread_id: str, call_id: str) -> dict[str, Any] | None:
        result: dict[str, Any] | None = self._call("answer_for", thread_id, call_id)
        return result

    def record_decision(self, decision: Mapping[str, Any]) -> None:
        self._call("record_decision", decision)

    def decisions(self, thread_id: str, call_id: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._call("decisions", thread_id, call_id)
        return result

    def load(self, thread_id: str) -> ThreadRecord | None:
        result: ThreadRecord | None = self._call("load", thread_id)
        return result

    def save_run(self, thread_id: str, *args: Any, **kwargs: Any) -> int:
        # the run's shape is the store's business: forwarded as given
        result: int = self._call("save_run", thread_id, *args, **kwargs)
        return result

    def close(self) -> None:
        """Release the inner store (a dead process's connections go when it does)."""
        self.inner.close()


class AsyncFaultyStore(_Faults, AsyncForwarding):
    """An :class:`~agui_tools.app._store.AsyncStore` (``AsyncPostgresStore``) with faults:
    the contract's methods are :class:`~tests.helpers.async_store.AsyncForwarding`'s."""

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        kind = self._enter(method)
        result = await getattr(self.inner, method)(*args, **kwargs)
        self._exit(method, kind)
        return result

    async def aclose(self) -> None:
        await self.inner.aclose()
