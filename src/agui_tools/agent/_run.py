"""The async face of the producer: what agent code holds while it runs.

An agent is an async function handed a :class:`Run`. Everything it emits goes
through the run's :class:`~agui_tools.agent._emitter.Emitter` — so every event is
judged before it is sent — and onto the run's
:class:`~agui_tools.agent._channel.EventChannel`, in the order it was judged.

* Context managers (``message``, ``tool_call``, ``reasoning``, ``step``,
  ``subagent``) close what they open when their block ends normally, and
  *abandon* it when an exception leaves the block (see
  :mod:`agui_tools.agent._emitter` for why an abandoned item is not closed).
* Handles (:class:`MessageHandle`, :class:`ToolCallHandle`,
  :class:`ReasoningHandle`) stream content into what a block opened.
* ``run.subagent(...)`` yields a scope of the same type whose events carry its
  ``subagentRunId``.
* Stops (:class:`RunCancelled`, :class:`RunInterrupted`) end the run on
  purpose without failing it; :func:`~agui_tools.agent._runner.drive` turns them, the
  agent's return or its exception into the run's one terminal event.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from datetime import datetime
from typing import Any, NoReturn

from .._errors import RunCancelled, RunInterrupted, RunStop, UsageError
from ..app._receipts import QUORUM_KEY, Keyring, Statement
from ..wire._kinds import WireEvent
from ._channel import EventChannel
from ._emitter import Emitter, Owner
from ._receipts import UNSET as _UNSET
from ._receipts import receipt_in_input, verify_quorum, verify_receipt

__all__ = [
    "MessageHandle",
    "ReasoningHandle",
    "Run",
    "RunCancelled",
    "RunInterrupted",
    "RunStop",
    "ToolCallHandle",
    "new_id",
    "stop_in",
]

# the producer side logs as one, whichever of its modules speaks
log = logging.getLogger("agui_tools.agent")


def new_id(prefix: str) -> str:
    """A fresh opaque id (EVT-10: consumers never parse it; the prefix is for people)."""
    return f"{prefix}-{uuid.uuid4().hex}"


# -- stopping a run on purpose ---------------------------------------------------


def stop_in(exc: BaseException) -> RunStop | None:
    """The stop an exception carries — itself, or one inside a task group's group."""
    if isinstance(exc, RunStop):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = stop_in(inner)
            if found is not None:
                return found
    return None


# -- the run an agent is handed ---------------------------------------------------


class Run:
    """What an agent function is handed: the run's input, and ways to emit.

    The root :class:`Run` speaks for the parent agent; ``run.subagent(...)``
    yields a scope of the same type whose events carry its
    ``subagentRunId``. Context managers close what they open when their block
    ends normally and *abandon* it when an exception leaves the block (see
    :mod:`agui_tools.agent._emitter` for why). Every emitting method raises :class:`UsageError`
    — and emits nothing — when the event would break a rule.
    """

    def __init__(
        self,
        emitter: Emitter,
        channel: EventChannel,
        *,
        subagent_run_id: str | None = None,
        root: Run | None = None,
    ) -> None:
        self.emitter = emitter
        self._channel = channel
        self.subagent_run_id = subagent_run_id
        self._root = root or self
        self._result: Any = None
        self._usage: list[dict[str, Any]] = []

    # -- the input ---------------------------------------------------------------

    @property
    def input(self) -> Mapping[str, Any]:
        """The enforced ``RunAgentInput`` wire dict."""
        return self.emitter.input

    @property
    def thread_id(self) -> str:
        return self.emitter.thread_id

    @property
    def run_id(self) -> str:
        return self.emitter.run_id

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The complete history the run is shown (INPUT-5)."""
        return list(self.emitter.input.get("messages") or ())

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The application's frontend tools (absent and empty are the same, INPUT-11)."""
        return list(self.emitter.input.get("tools") or ())

    @property
    def frontend_tools(self) -> frozenset[str]:
        return self.emitter.frontend_tools

    @property
    def state(self) -> Any:
        """The input state; absent means the empty object (INPUT-13)."""
        return self.emitter.input.get("state", {})

    @property
    def context(self) -> list[dict[str, Any]]:
        return list(self.emitter.input.get("context") or ())

    @property
    def forwarded_props(self) -> Any:
        return self.emitter.input.get("forwardedProps")

    @property
    def resume(self) -> list[dict[str, Any]]:
        return list(self.emitter.input.get("resume") or ())

    # -- plumbing ----------------------------------------------------------------

    async def _emit(self, events: list[WireEvent]) -> None:
        if events:
            self._channel.push(events)
        await self._channel.flow()

    @property
    def _owner(self) -> Owner:
        return self.subagent_run_id

    # -- messages ----------------------------------------------------------------

    async def text(
        self,
        content: str,
        *,
        role: str = "assistant",
        name: str | None = None,
        message_id: str | None = None,
        chunked: bool = False,
    ) -> str:
        """A whole text message at once; returns its id."""
        async with self.message(role=role, name=name, message_id=message_id, chunked=chunked) as m:
            if content:
                await m.delta(content)
        return m.id

    @asynccontextmanager
    async def message(
        self,
        *,
        role: str = "assistant",
        name: str | None = None,
        message_id: str | None = None,
        chunked: bool = False,
    ) -> AsyncIterator[MessageHandle]:
        """Stream a text message: ``async with run.message() as m: await m.delta("…")``."""
        mid = message_id or new_id("msg")
        await self._emit(
            self.emitter.text_start(mid, role=role, name=name, owner=self._owner, chunked=chunked)
        )
        handle = MessageHandle(self, mid)
        try:
            yield handle
        except BaseException as exc:
            if stop_in(exc) is None:  # a stop is closed in order by drive() (RUN-6)
                self.emitter.abandon("text", mid)
            raise
        await self._emit(self.emitter.text_end(mid))

    # -- tool calls --------------------------------------------------------------

    @asynccontextmanager
    async def tool_call(
        self,
        name: str,
        *,
        call_id: str | None = None,
        parent_message_id: str | None = None,
        chunked: bool = False,
    ) -> AsyncIterator[ToolCallHandle]:
        """Stream a tool call; it closes (arguments complete) when the block ends normally."""
        cid = call_id or new_id("call")
        await self._emit(
            self.emitter.tool_start(
                cid, name, parent_message_id=parent_message_id, owner=self._owner, chunked=chunked
            )
        )
        handle = ToolCallHandle(self, cid, name)
        try:
            yield handle
        except BaseException as exc:
            if stop_in(exc) is None:  # a stop is closed in order by drive() (RUN-6)
                self.emitter.abandon("tool", cid)
            raise
        await self._emit(self.emitter.tool_end(cid))

    async def result(
        self,
        call_id: str,
        content: str | Sequence[Mapping[str, Any]],
        *,
        message_id: str | None = None,
    ) -> str:
        """Answer an agent-side call (a string or content parts); returns the tool message id.

        Raises :class:`UsageError` (FE-2) for a call to an advertised frontend
        tool: the application answers those, in the next run's input.
        """
        mid = message_id or new_id("result")
        await self._emit(
            self.emitter.tool_result(call_id, content, message_id=mid, owner=self._owner)
        )
        return mid

    # -- reasoning, steps --------------------------------------------------------

    @asynccontextmanager
    async def reasoning(
        self,
        *,
        chunked: bool = False,
        span_id: str | None = None,
        message_id: str | None = None,
    ) -> AsyncIterator[ReasoningHandle]:
        """A reasoning span holding one reasoning message: ``await r.delta("…")``."""
        sid = span_id or new_id("span")
        mid = message_id or new_id("reasoning")
        await self._emit(self.emitter.reasoning_start(sid, owner=self._owner))
        try:
            await self._emit(
                self.emitter.reasoning_message_start(mid, owner=self._owner, chunked=chunked)
            )
        except BaseException:
            self.emitter.abandon("span", sid)
            raise
        handle = ReasoningHandle(self, mid, sid)
        try:
            yield handle
        except BaseException as exc:
            if stop_in(exc) is None:
                self.emitter.abandon("reasoning", mid)
                self.emitter.abandon("span", sid)
            raise
        await self._emit(self.emitter.reasoning_message_end(mid))
        await self._emit(self.emitter.reasoning_end(sid))

    @asynccontextmanager
    async def step(self, name: str) -> AsyncIterator[None]:
        """Label a span of the run. Steps are labels, not containers: an exception closes
        the step too (a failure to close never hides the exception in flight); a stop
        or a disconnect leaves it to :func:`drive`."""
        await self._emit(self.emitter.step_start(name, owner=self._owner))
        try:
            yield
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if stop_in(exc) is not None:
                raise  # drive() closes everything, innermost first
            # a poisoned or ended run cannot close it: the exception in flight says more
            with suppress(UsageError):
                await self._emit(self.emitter.step_end(name, owner=self._owner))
            raise
        await self._emit(self.emitter.step_end(name, owner=self._owner))

    # -- subagents ---------------------------------------------------------------

    @asynccontextmanager
    async def subagent(
        self,
        name: str,
        *,
        description: str | None = None,
        subagent_run_id: str | None = None,
        parent_tool_call_id: str | None = None,
        parent_message_id: str | None = None,
    ) -> AsyncIterator[Run]:
        """Delegate within the run: the scope's events carry its ``subagentRunId``.

        ``SUBAGENT_FINISHED`` on a normal exit (with the scope's
        :meth:`set_result`); ``SUBAGENT_ERROR`` when an exception leaves the
        block — which then propagates: it ends the run only if the agent lets it.
        A cancel, an interrupt or a disconnect passing through is left to
        :func:`drive`, which closes (or abandons) everything at once.
        """
        sid = subagent_run_id or new_id("sub")
        await self._emit(
            self.emitter.subagent_start(
                sid,
                name,
                description=description,
                parent=self._owner,
                parent_tool_call_id=parent_tool_call_id,
                parent_message_id=parent_message_id,
            )
        )
        scope = Run(self.emitter, self._channel, subagent_run_id=sid, root=self._root)
        try:
            yield scope
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if stop_in(exc) is None and isinstance(exc, Exception | BaseExceptionGroup):
                try:
                    await self._emit(
                        self.emitter.subagent_error(
                            sid,
                            f"the subagent failed ({type(exc).__name__})",
                            code=type(exc).__name__,
                        )
                    )
                except UsageError:
                    log.debug("could not report the failure of subagent %r", sid, exc_info=True)
            raise
        await self._emit(self.emitter.subagent_finish(sid, result=scope._result))

    # -- standalone events -------------------------------------------------------

    async def state_snapshot(self, snapshot: Any) -> None:
        await self._emit(self.emitter.state_snapshot(snapshot, owner=self._owner))

    async def state_delta(self, patch: Sequence[Mapping[str, Any]]) -> None:
        await self._emit(self.emitter.state_delta(patch, owner=self._owner))

    async def custom(self, name: str, value: Any) -> None:
        await self._emit(self.emitter.custom(name, value, owner=self._owner))

    async def raw(self, event: Any, source: str | None = None) -> None:
        await self._emit(self.emitter.raw(event, source=source, owner=self._owner))

    async def activity(
        self,
        activity_type: str,
        content: Mapping[str, Any],
        *,
        message_id: str | None = None,
        replace: bool | None = None,
    ) -> str:
        """An activity snapshot (progress a UI renders apart); returns the activity's id."""
        mid = message_id or new_id("activity")
        await self._emit(
            self.emitter.activity_snapshot(
                mid, activity_type, content, replace=replace, owner=self._owner
            )
        )
        return mid

    async def activity_delta(
        self, message_id: str, activity_type: str, patch: Sequence[Mapping[str, Any]]
    ) -> None:
        await self._emit(
            self.emitter.activity_delta(message_id, activity_type, patch, owner=self._owner)
        )

    async def messages_snapshot(self, messages: Sequence[Mapping[str, Any]]) -> None:
        await self._emit(self.emitter.messages_snapshot(messages))

    # -- decisions ---------------------------------------------------------------

    def verify_receipt(
        self,
        keys: Keyring,
        *,
        call_id: str | None = None,
        interrupt_id: str | None = None,
        run_id: str | None = None,
        arguments: Any = None,
        now: datetime | None = None,
    ) -> Statement:
        """Check the input's receipt for an interrupt (its resume entry's) or a call
        (its tool message's) before acting on it: :func:`verify_receipt` against this
        run's thread and the entry's payload. For an interrupt (give both ids when it
        is about a call) ``arguments`` are the ones about to run (default: the call's
        own, from the history). For a frontend call the history's arguments are the
        proposal the receipt must name — the edited ones ran, if the approver edited
        them (``statement.arguments_shown``); ``arguments`` then checks what ran.
        ``run_id``: the run this agent interrupted (proposed the call in), checked
        against the receipt's. Raises :class:`ReceiptRejected`."""
        receipt, found, payload = receipt_in_input(
            self.input, call_id=call_id, interrupt_id=interrupt_id
        )
        if interrupt_id is None:
            ran = _UNSET if arguments is None else arguments
            return verify_receipt(
                receipt, keys=keys, thread_id=self.thread_id, call_id=call_id,
                run_id=run_id, arguments=ran, proposed=found, now=now,
            )  # fmt: skip
        return verify_receipt(
            receipt,
            keys=keys,
            thread_id=self.thread_id,
            call_id=call_id,
            interrupt_id=interrupt_id,
            run_id=run_id,
            arguments=found if arguments is None else arguments,
            payload=payload,
            now=now,
        )

    def verify_quorum(
        self, keys: Keyring, *, call_id: str, requires: int, now: datetime | None = None
    ) -> tuple[Statement, ...]:
        """Check the receipts of a frontend call a quorum approved — its tool message's,
        one per approver — against the call's proposal in the history, and that at
        least ``requires`` distinct principals signed (:func:`verify_quorum`)."""
        receipts, found, _ = receipt_in_input(
            self.input, call_id=call_id, interrupt_id=None, key=QUORUM_KEY
        )
        return verify_quorum(
            receipts,
            keys=keys,
            thread_id=self.thread_id,
            call_id=call_id,
            requires=requires,
            proposed=found,
            now=now,
        )

    # -- ending ------------------------------------------------------------------

    def set_result(self, value: Any) -> None:
        """The run's (or subagent's) return value, sent on its finishing event."""
        self._result = value

    def add_usage(self, entry: Mapping[str, Any]) -> None:
        """Token usage for the run's terminal event (subagents' calls are the run's)."""
        self._root._usage.append(dict(entry))

    def cancel(self, reason: str | None = None) -> NoReturn:
        """Stop the run, not as a failure: it ends ``cancelled`` (RUN-5)."""
        raise RunCancelled(reason)

    def interrupt(self, interrupts: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> NoReturn:
        """Stop the run to ask; it ends with the interrupt outcome.

        Each interrupt is a wire ``Interrupt`` (``reason`` required); an ``id``
        is minted when absent, and one raised from a subagent scope is
        attributed to it.
        """
        items = [interrupts] if isinstance(interrupts, Mapping) else list(interrupts)
        out = []
        for item in items:
            entry = dict(item)
            entry.setdefault("id", new_id("interrupt"))
            if self._owner is not None:
                entry.setdefault("subagentRunId", self._owner)
            out.append(entry)
        raise RunInterrupted(out)


# -- handles: streaming into what a block opened ----------------------------------


class MessageHandle:
    """An open text message."""

    __slots__ = ("_parts", "_run", "id")

    def __init__(self, run: Run, message_id: str) -> None:
        self._run = run
        self.id = message_id
        self._parts: list[str] = []

    async def delta(self, text: str) -> None:
        await self._run._emit(self._run.emitter.text_content(self.id, text))
        self._parts.append(text)

    @property
    def content(self) -> str:
        return "".join(self._parts)


class ToolCallHandle:
    """An open tool call; ``arguments`` is the text streamed so far."""

    __slots__ = ("_parts", "_run", "id", "name")

    def __init__(self, run: Run, call_id: str, name: str) -> None:
        self._run = run
        self.id = call_id
        self.name = name
        self._parts: list[str] = []

    async def args(self, delta: str) -> None:
        await self._run._emit(self._run.emitter.tool_args(self.id, delta))
        self._parts.append(delta)

    @property
    def arguments(self) -> str:
        return "".join(self._parts)


class ReasoningHandle:
    """An open reasoning message inside its span."""

    __slots__ = ("_run", "id", "span_id")

    def __init__(self, run: Run, message_id: str, span_id: str) -> None:
        self._run = run
        self.id = message_id
        self.span_id = span_id

    async def delta(self, text: str) -> None:
        await self._run._emit(self._run.emitter.reasoning_content(self.id, text))
