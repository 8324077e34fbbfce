"""The driver of a conversation: the face that performs what a sans-I/O
:class:`~agui_tools.app._conversation.Conversation` asks of its store and its
handlers — a synchronous face and an async face on one base, as httpx has
``Client`` and ``AsyncClient``.

A conversation decides; it never touches a store or runs a handler. Each
operation that reads or writes the store is one of its ``*_steps`` methods;
:class:`Driver` performs them on a synchronous store
(:func:`~agui_tools.app._store_drive.drive_store`), :class:`AsyncDriver`
without blocking the event loop (:func:`~agui_tools.app._store_drive.adrive_store`).
Both offer the same operations under the same names, built on the same steps,
so the exactly-once rules are written once. Running a handler is I/O too:
:meth:`Driver.execute` and :meth:`AsyncDriver.execute` run it inside an
:class:`~agui_tools.app._execution.Execution`, which claims the call before and
records its answer after.

A driver holds nothing of its own beyond its conversation (whose ``journal`` is
the store it drives), so one may be made wherever it is needed:
``Driver(conversation).approve(call_id)``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from .._errors import UsageError
from ._calls import Answer, normalize_result
from ._consent import ConsentDecision, DecidedBy, Principal
from ._execution import Execution, unawaited
from ._journal import Journal
from ._link import Operation
from ._runs import RunResult
from ._steps import StoreSteps
from ._store import AsyncStore
from ._store_drive import adrive_store, drive_store

if TYPE_CHECKING:
    from ._conversation import Conversation

__all__ = ["AsyncDriver", "AsyncHandler", "Driver", "Handler"]

T = TypeVar("T")
Handler = Callable[[dict[str, Any]], Any]
AsyncHandler = Callable[[dict[str, Any]], Awaitable[Any]]


class BaseDriver:
    """What both faces share: the conversation they drive and its store."""

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation

    @property
    def store(self) -> Journal | AsyncStore:
        """Where the conversation's calls (and, with a store, its thread) are kept."""
        return self.conversation.journal

    def _approving(
        self,
        call_id: str,
        by: DecidedBy,
        arguments: Mapping[str, Any] | None,
        reason: str | None,
        principal: Principal | None,
    ) -> StoreSteps[ConsentDecision]:
        return self.conversation.approve_steps(
            call_id, by=by, arguments=arguments, reason=reason, principal=principal
        )

    def _declining(
        self, call_id: str, by: DecidedBy, reason: str | None, principal: Principal | None
    ) -> StoreSteps[Answer]:
        return self.conversation.decline_steps(call_id, by=by, reason=reason, principal=principal)


class Driver(BaseDriver):
    """Performs a conversation's operations on a synchronous store, blocking.

    An :class:`~agui_tools.app._store.AsyncStore` is refused with a
    :class:`~agui_tools._errors.UsageError` naming :class:`AsyncDriver`.
    """

    def perform(self, operation: Operation | None, steps: StoreSteps[T]) -> T:
        """Perform any of the conversation's ``*_steps`` (``operation``: what the
        link checks first; ``None`` for recording an execution's answer)."""
        conv = self.conversation
        return drive_store(conv.journal, conv.link, operation, steps)

    def restore(self) -> bool:
        """Load the thread from the store, if that was not done: ``True`` when the
        store held it (the conversation is then where the last saved run left it).
        A store failure while restoring is raised and stops the conversation (reload).
        """
        return self.perform("restore", self.conversation.restore_steps())

    def end_run(self) -> RunResult:
        """The run's stream ended: judge it, save it (with a store) and dispose of
        every call it left unanswered (:meth:`Conversation.end_run_steps`)."""
        return self.perform("end_run", self.conversation.end_run_steps())

    def abandon_run(self) -> RunResult | None:
        """Give up the current run (the transport failed, the user cancelled).

        If nothing of the stream arrived, the run never started: nothing is
        recorded (``None``) and no store is touched — the messages
        ``next_input()`` added are taken back, so a retry sends them once.
        Otherwise it ends as :meth:`end_run` ends it — truncated (RUN-9).
        """
        if self.conversation.withdraw_unstarted():
            return None
        return self.perform("abandon_run", self.conversation.end_run_steps())

    def approve(
        self,
        call_id: str,
        *,
        by: DecidedBy = "user",
        arguments: Mapping[str, Any] | None = None,
        reason: str | None = None,
        principal: Principal | None = None,
    ) -> ConsentDecision:
        """Approve a call — with edited ``arguments`` if the user changed them.

        Edited arguments are validated against the schema like the proposal
        was; the approval binds their fingerprint, and voids the original's.
        ``principal`` names who approved (unnamed: the unauthenticated
        ``user``); a tool that needs a quorum stays awaiting consent until
        enough distinct principals approved (docs/approvals.md).
        """
        return self.perform("approve", self._approving(call_id, by, arguments, reason, principal))

    def decline(
        self,
        call_id: str,
        *,
        by: DecidedBy = "user",
        reason: str | None = None,
        principal: Principal | None = None,
    ) -> Answer:
        """Decline a call: it is answered, saying so and saying who declined.

        Returns the answer that stands: if the call's execution already started
        elsewhere, that is not undone by a decline — it is answered "outcome
        unknown" instead.
        """
        return self.perform("decline", self._declining(call_id, by, reason, principal))

    def fail(self, call_id: str, error: str) -> Answer:
        """Answer a call as failed without running it (no handler, say); returns the
        answer that stands (see :meth:`decline`)."""
        return self.perform("fail", self.conversation.fail_steps(call_id, error))

    def execute(self, call_id: str, handler: Handler) -> Answer:
        """Run an approved call's handler exactly once and answer the call.

        The handler gets the effective arguments (a dict) and returns the
        result: a string, a list of content parts, or JSON-able data. An
        exception becomes a ``failed`` answer with ``error`` set, never a crash.
        """
        if inspect.iscoroutinefunction(handler):
            raise UsageError(
                f"the handler for {call_id!r} is async: run it with AsyncDriver(...).execute()"
            )
        with Execution(self.conversation, call_id) as run:
            if run.claimed:
                result = handler(run.arguments)
                if inspect.isawaitable(result):
                    run.returned(unawaited(call_id, result))
                else:
                    run.returned(Answer.executed(call_id, normalize_result(result)))
        return run.answer


class AsyncDriver(BaseDriver):
    """Performs a conversation's operations without blocking the event loop:
    awaiting an async store, or a synchronous one that may wait in a worker thread.
    The only face for an :class:`~agui_tools.app._store.AsyncStore`."""

    async def perform(self, operation: Operation | None, steps: StoreSteps[T]) -> T:
        """:meth:`Driver.perform`, awaited."""
        conv = self.conversation
        return await adrive_store(conv.journal, conv.link, operation, steps)

    async def restore(self) -> bool:
        """:meth:`Driver.restore`, awaited: how a conversation on an async store loads
        its thread (its constructor cannot await)."""
        return await self.perform("restore", self.conversation.restore_steps())

    async def end_run(self) -> RunResult:
        """:meth:`Driver.end_run`, awaited."""
        return await self.perform("end_run", self.conversation.end_run_steps())

    async def abandon_run(self) -> RunResult | None:
        """:meth:`Driver.abandon_run`, awaited."""
        if self.conversation.withdraw_unstarted():
            return None
        return await self.perform("abandon_run", self.conversation.end_run_steps())

    async def approve(
        self,
        call_id: str,
        *,
        by: DecidedBy = "user",
        arguments: Mapping[str, Any] | None = None,
        reason: str | None = None,
        principal: Principal | None = None,
    ) -> ConsentDecision:
        """:meth:`Driver.approve`, awaited."""
        return await self.perform(
            "approve", self._approving(call_id, by, arguments, reason, principal)
        )

    async def decline(
        self,
        call_id: str,
        *,
        by: DecidedBy = "user",
        reason: str | None = None,
        principal: Principal | None = None,
    ) -> Answer:
        """:meth:`Driver.decline`, awaited."""
        return await self.perform("decline", self._declining(call_id, by, reason, principal))

    async def fail(self, call_id: str, error: str) -> Answer:
        """:meth:`Driver.fail`, awaited."""
        return await self.perform("fail", self.conversation.fail_steps(call_id, error))

    async def execute(self, call_id: str, handler: Handler | AsyncHandler) -> Answer:
        """:meth:`Driver.execute` for a handler that may be a coroutine function.

        Cancelled while the handler runs, the call is answered "outcome
        unknown" (the handler may have acted) before the cancellation goes on.
        Cancelled while the claim is being recorded (in a worker thread, for a
        store that may wait), the claim is seen through and, as nothing ran,
        the call is answered "not executed" — never left executing.
        """
        async with Execution(self.conversation, call_id) as run:
            if run.claimed:
                result = handler(run.arguments)
                if inspect.isawaitable(result):
                    result = await result
                run.returned(Answer.executed(call_id, normalize_result(result)))
        return run.answer
