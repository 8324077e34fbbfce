"""A conversation's relation to its store: one small state machine, one table.

Theory of operation (the h11 habit: everything that decides what a
conversation may do after a store failure lives in this module).

A :class:`~agui_tools.app._conversation.Conversation` holds a copy of a thread
whose truth is in the store (the saved runs) and the journal (each call's
intent, answer and consent). While every store operation succeeds the copy
and the store agree at each step, and the conversation is **in step**. A
failed operation leaves one of four things behind — what the store may now
hold, and how the copy relates to it:

========================  =================================  ==================
state                     what the store holds               entered on
========================  =================================  ==================
``in-step``               what the copy says it holds        (start)
``read-failed``           as before the read; the copy may   ``StoreReadFailed``
                          be half-disposed (a call whose
                          record was not read)
``write-failed``          as before the write; the copy is   ``StoreWriteFailed``
                          ahead (a run, an answer, a
                          decision that is not stored)
``outcome-unknown``       the write, or not: nobody can      ``StoreOutcomeUnknown``,
                          tell from here                     any other failure
``stale``                 another writer's run; the copy     ``StaleThread``
                          is behind
========================  =================================  ==================

The rules this table serves:

1. **No call of a run is ever executed unless that run's save is durable.** A
   run whose save failed (``write-failed``) or may have failed
   (``outcome-unknown``) is never disposed of from this copy.
2. **No answer is ever saved that contradicts the journal.** A copy that could
   not read a call's record (``read-failed``) never answers the call from what
   it guesses.
3. **One recovery for every failure: reload.** Every state but ``in-step``
   refuses every operation that reads or writes the store or sends input, with
   :class:`~agui_tools._errors.ReloadRequired` naming the failure; a new
   conversation on the same store and thread id starts from what the store and
   the journal hold — whatever the failure left there — and the journal, not
   the copy, decides what ran. Reconciling in place (re-reading and merging)
   would have to get right, per state, what reloading gets right by
   construction; a ``Session`` reloads itself on its next ``send``, so for its
   user the recovery is "send again with the same ``message_id``".

Reads of the copy itself (``messages``, ``state``, ``pending``,
``take_updates``) stay allowed in every state: a UI can still show what the
thread looked like when it stopped.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from .._errors import (
    ReloadRequired,
    StaleThread,
    StoreError,
    StoreOutcomeUnknown,
    StoreReadFailed,
    StoreWriteFailed,
)

__all__ = ["Link", "LinkState", "Operation"]


class LinkState(Enum):
    IN_STEP = "in-step"
    READ_FAILED = "read-failed"
    WRITE_FAILED = "write-failed"
    OUTCOME_UNKNOWN = "outcome-unknown"
    STALE = "stale"


Operation = Literal[
    "next_input",
    "receive",
    "end_run",
    "abandon_run",
    "restore",
    "approve",
    "decline",
    "execute",
    "fail",
    "resume",
]
"""What a conversation does that reads or writes the store, or sends what the store
must agree with."""

_EVERY: frozenset[Operation] = frozenset(
    {
        "next_input",
        "receive",
        "end_run",
        "abandon_run",
        "restore",
        "approve",
        "decline",
        "execute",
        "fail",
        "resume",
    }
)

ALLOWED: dict[LinkState, frozenset[Operation]] = {
    LinkState.IN_STEP: _EVERY,
    LinkState.READ_FAILED: frozenset(),
    LinkState.WRITE_FAILED: frozenset(),
    LinkState.OUTCOME_UNKNOWN: frozenset(),
    LinkState.STALE: frozenset(),
}
"""The one table: which operations each state allows (the others raise ReloadRequired)."""

ENTERED_ON: tuple[tuple[type[StoreError], LinkState], ...] = (
    (StaleThread, LinkState.STALE),
    (StoreReadFailed, LinkState.READ_FAILED),
    (StoreWriteFailed, LinkState.WRITE_FAILED),
    (StoreOutcomeUnknown, LinkState.OUTCOME_UNKNOWN),
)
"""Which failure leads to which state (first match; anything else: outcome unknown)."""


class Link:
    """The state of one conversation's relation to its store (see the module docstring)."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.state = LinkState.IN_STEP
        self.cause: StoreError | None = None
        """The failure that left ``in-step``; ``None`` while in step."""

    def check(self, operation: Operation) -> None:
        """Refuse ``operation`` unless the current state allows it."""
        if operation in ALLOWED[self.state]:
            return
        assert self.cause is not None
        if isinstance(self.cause, StaleThread):
            raise self.cause  # the same words: reload, the thread moved on
        raise ReloadRequired(self.thread_id, self.cause)

    def failed(self, exc: BaseException, *, writes: bool = True) -> None:
        """A store operation raised ``exc``: leave ``in-step`` for the state it implies.

        The first failure is kept as the cause. A failure that is not a
        ``StoreError`` (a cancellation while a write was awaited, a driver's own
        exception) is an unknown outcome when the operation writes, a failed read
        when it does not.
        """
        if self.state is not LinkState.IN_STEP:
            return
        if isinstance(exc, StoreError):
            cause = exc
            state = next(
                (s for kind, s in ENTERED_ON if isinstance(exc, kind)), LinkState.OUTCOME_UNKNOWN
            )
        elif writes:
            cause = StoreOutcomeUnknown(
                f"a write to the store of thread {self.thread_id!r} was interrupted "
                f"({type(exc).__name__}: {exc}); whether it committed is unknown"
            )
            state = LinkState.OUTCOME_UNKNOWN
        else:
            cause = StoreReadFailed(
                f"a read of the store of thread {self.thread_id!r} was interrupted "
                f"({type(exc).__name__}: {exc}); nothing was written"
            )
            state = LinkState.READ_FAILED
        self.state, self.cause = state, cause

    @property
    def in_step(self) -> bool:
        return self.state is LinkState.IN_STEP
