"""A conversation's relation to its store: one small state machine, one table.

A :class:`~agui_tools.app._conversation.Conversation` holds a copy of a thread whose truth
is in the store and the journal; while every store call succeeds it is **in step**. A
failure leaves it in one of:

========================  =================================  ==================
state                     what the store holds               entered on
========================  =================================  ==================
``in-step``               what the copy says it holds        (start)
``read-failed``           as before; the copy may be half-   ``StoreReadFailed``
                          disposed
``write-failed``          as before; the copy is ahead       ``StoreWriteFailed``
``outcome-unknown``       the write, or not                  ``StoreOutcomeUnknown``,
                                                             any other failure
``stale``                 another writer's run               ``StaleThread``
========================  =================================  ==================

So no call of a run executes unless its save is durable, and no answer contradicts the
journal. One recovery for every failure: reload (:class:`~agui_tools._errors.ReloadRequired`
refuses store work and sends; a new conversation starts from the store, and the journal
decides what ran) — reconciling in place would have to get each state right. Reads of the
copy (``messages``, ``state``, ``pending``, ``take_updates``) stay allowed.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal, get_args

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

_EVERY: frozenset[Operation] = frozenset(get_args(Operation))

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
        """A store operation raised ``exc``: leave ``in-step`` for the state it implies (the first
        failure kept as cause; a non-``StoreError`` is an unknown outcome for a write, else a failed read).
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
