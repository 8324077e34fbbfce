"""One execution of a call, answered however its handler ends, and the words of
the answers an execution can end in without a result of its own."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Protocol

from ._calls import Answer, PendingCall
from ._disposition import describe_exception
from ._journal import Journal, JournalKey
from ._link import Link
from ._steps import StoreSteps
from ._store import AsyncStore, is_async_store
from ._store_drive import adrive_store, drive_store

__all__ = ["Executes", "Execution", "unawaited"]


class Executes(Protocol):
    """What an execution needs of its conversation: the claim and the recording of
    the answer, as store steps, and where and how to perform them."""

    @property
    def journal(self) -> Journal | AsyncStore: ...

    @property
    def link(self) -> Link: ...

    def claim_steps(self, call_id: str) -> StoreSteps[tuple[PendingCall, JournalKey | None]]: ...

    def executed_steps(
        self, call: PendingCall, key: JournalKey, answer: Answer
    ) -> StoreSteps[Answer]: ...


class Execution:
    """One execution of a call, answered however its handler ends — for both drivers.

    Entering claims the call (:meth:`Conversation.claim_steps`; ``claimed`` False with the
    standing ``answer`` otherwise); :meth:`returned` takes the handler's answer. Leaving records
    it — or ``failed`` for an ``Exception``, or "outcome unknown" for an interruption that may
    have acted (``KeyboardInterrupt``, ``SystemExit``, cancellation).
    """

    def __init__(self, conversation: Executes, call_id: str) -> None:
        self._conversation = conversation
        self._call_id = call_id
        self._result: Answer | None = None
        self.answer: Answer

    def __enter__(self) -> Execution:
        conv = self._conversation
        return self._entered(
            drive_store(conv.journal, conv.link, "execute", conv.claim_steps(self._call_id))
        )

    async def __aenter__(self) -> Execution:
        """The claim, off the event loop (:func:`~agui_tools.app._store_drive.adrive_store`).

        Cancelled while the claim is being recorded (in its thread, or awaited
        on an async store), the claim is seen through and, as nothing ran, the
        call is answered "not executed" — never left executing.
        """
        conv = self._conversation
        claiming = asyncio.ensure_future(
            adrive_store(conv.journal, conv.link, "execute", conv.claim_steps(self._call_id))
        )
        try:
            claimed = await asyncio.shield(claiming)
        except asyncio.CancelledError:
            call, key = await claiming  # the claim is finished either way
            if key is not None:
                answer = _cancelled_before(self._call_id)
                await adrive_store(
                    conv.journal, conv.link, None, conv.executed_steps(call, key, answer)
                )
            raise
        return self._entered(claimed)

    def _entered(self, claimed: tuple[PendingCall, JournalKey | None]) -> Execution:
        self._call, self._key = claimed
        if self._key is None:
            assert self._call.answer is not None
            self.answer = self._call.answer
        self.arguments = dict(self._call.effective_arguments or {})
        return self

    @property
    def claimed(self) -> bool:
        return self._key is not None

    def returned(self, answer: Answer) -> None:
        self._result = answer

    def _outcome(self, exc: BaseException | None) -> Answer:
        if exc is None:
            assert self._result is not None
            return self._result
        if isinstance(exc, Exception):
            return Answer.failed(self._call_id, describe_exception(exc))
        return _interrupted(self._call_id, exc)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> bool:
        if self._key is None:
            return False
        conv = self._conversation
        steps = conv.executed_steps(self._call, self._key, self._outcome(exc))
        self.answer = drive_store(conv.journal, conv.link, None, steps)
        return isinstance(exc, Exception)

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> bool:
        if self._key is None:
            return False
        conv = self._conversation
        if exc is not None and not isinstance(exc, Exception) and not is_async_store(conv.journal):
            # cancelled (or stopped): recorded here and now — a cancelled task cannot
            # wait for a worker thread
            return self.__exit__(kind, exc, tb)
        # the answer is given in memory before the store is awaited: cancelled again
        # while that write is awaited, the journal still holds the intent without an
        # answer, which reads as "outcome unknown" — the same answer, never a re-run
        steps = conv.executed_steps(self._call, self._key, self._outcome(exc))
        self.answer = await adrive_store(conv.journal, conv.link, None, steps)
        return isinstance(exc, Exception)


def unawaited(call_id: str, result: Any) -> Answer:
    """A sync ``execute`` got an awaitable back: a coroutine never started; other
    awaitables (a task, a future) may already be doing something."""
    if inspect.iscoroutine(result):
        result.close()
        return Answer.failed(
            call_id,
            "not executed: the handler returned a coroutine, which Driver.execute() cannot "
            "await; use AsyncDriver.execute()",
        )
    return Answer.failed(
        call_id,
        "outcome unknown: the handler returned an awaitable, which Driver.execute() cannot "
        "wait for; use AsyncDriver.execute()",
    )


def _cancelled_before(call_id: str) -> Answer:
    return Answer.failed(
        call_id,
        "not executed: cancelled while the execution was being recorded, before the "
        "handler started",
    )


def _interrupted(call_id: str, exc: BaseException) -> Answer:
    return Answer.failed(
        call_id,
        f"outcome unknown: the handler was interrupted ({type(exc).__name__}) before it "
        "returned; it may or may not have taken effect, and it was not run again",
    )
