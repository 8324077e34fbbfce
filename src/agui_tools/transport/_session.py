"""The application session: what a user writes against.

Register frontend tools as plain Python callables — the JSON Schema comes from
their type hints (or a pydantic model), the description from the docstring —
say which have side effects, send a prompt, watch updates arrive, and let the
session carry the thread until the agent leaves nothing pending::

    session = Session(AgentClient("http://127.0.0.1:8000/agent"), ask=ask_the_user)

    @session.tool(side_effects=True)
    def confirm_order(order_id: str, qty: int) -> str:
        "Place the order after the user confirmed it."
        return shop.place(order_id, qty)

    result = await session.send("Order two widgets", on_update=render)

:class:`SyncSession` is the same session for blocking code, over a
:class:`~agui_tools.transport._client.SyncAgentClient`::

    with SyncAgentClient("http://127.0.0.1:8000/agent") as client:
        session = SyncSession(client, ask=ask_the_user)
        ...
        result = session.send("Order two widgets")

Each turn: the run streams (text deltas, tool-call cards with argument
previews), pending calls go through the consent policy — auto-approved,
``ask``-ed, or denied —, approved ones execute exactly once through the
journal with a timeout, a handler exception becomes an ``error`` tool message
(never a crash), and the next input carries every answer.

One loop, two faces. The turn loop is written once (:class:`BaseSession`), as a
generator that yields what it needs done — run a turn, ask the user, execute
a call — and is sent the outcome; each face performs those steps its own way
(awaiting, or blocking). So the async and the sync session cannot drift apart
in what they decide, only in how they wait (the sans-I/O habit of the rest of
the library, applied to the application's own loop).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
import uuid
import warnings
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from .. import _telemetry
from .._errors import ResumeOutcomeUnknown, UsageError
from ..app._answering import OutcomeUnknown
from ..app._calls import Answer, CallStatus, PendingCall, ToolContext
from ..app._consent import ConsentPolicy
from ..app._conversation import Conversation, RunResult, Update, call_update
from ..app._driver import AsyncDriver, Driver
from ..app._interrupts import (
    Interrupt,
    InterruptedCall,
    InvalidPayload,
    Resolution,
    open_interrupts,
    resume_entries,
)
from ..app._journal import Journal
from ..app._link import Operation
from ..app._receipts import Signer
from ..app._resume import SentResume, unknown_resume
from ..app._steps import Pause, StoreSteps, adrive, drive
from ..app._store import AsyncStore, Store
from ..app._tools import ToolSpec
from ._approvals import Approval, approval_request, as_resolution, interrupt_resolution
from ._client import AgentClient, SyncAgentClient
from ._handler_threads import complete, deadline_passed, in_daemon_thread
from ._tool_functions import RegisteredTool, tool_spec_from_function, wants_context

__all__ = [
    "Approval",
    "BaseSession",
    "Interrupt",
    "InterruptedCall",
    "InvalidPayload",
    "OnInterrupt",
    "RegisteredTool",
    "Resolution",
    "Session",
    "SyncSession",
    "ToolContext",
    "interrupt_resolution",
    "tool_spec_from_function",
]


F = TypeVar("F", bound=Callable[..., Any])

AskUser = Callable[[PendingCall], Approval | bool | Awaitable[Approval | bool]]
ResumeUnknown = Callable[[SentResume], bool]
"""A session's ``resume_unknown=`` check: ``True`` sends the recorded resume again."""
InterruptAnswer = Resolution | Approval | bool
OnInterrupt = Callable[[Interrupt], InterruptAnswer | Awaitable[InterruptAnswer]]
"""An interrupt handler: a :class:`Resolution`; for an interrupt that names a call
(an approval request) an :class:`Approval` or a bool too — see
:func:`interrupt_resolution`."""
C = TypeVar("C", AgentClient, SyncAgentClient)


# -- the steps the loop needs a face to perform ---------------------------------------


class _SessionStep:
    """What the session's loop asks its face to do (one of the classes below)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class _Turn(_SessionStep):
    """Send the prepared input and consume the run; the face replies with its RunResult."""


@dataclass(frozen=True, slots=True)
class _Ask(_SessionStep):
    """Ask the user about ``call``; the face replies with the ``ask`` callback's answer."""

    call: PendingCall


@dataclass(frozen=True, slots=True)
class _Execute(_SessionStep):
    """Execute the approved ``call``; the face replies with its Answer.

    ``emit`` takes the updates of the claim (the call is executing) before the
    handler runs, so a UI shows it running while it runs, not after.
    """

    call: PendingCall
    handler: Callable[[dict[str, Any]], Any]
    timeout: float | None
    emit: Callable[[Update], Any]
    trace: Any = None  # the call's span (telemetry), the parent of its execute_tool span
    trace_payloads: bool = False

    def announce(self, conversation: Conversation) -> None:
        for update in conversation.take_updates():
            self.emit(update)


@dataclass(frozen=True, slots=True)
class _Open(_SessionStep):
    """Make the session's conversation — a new one, restored from the store, when
    there is none or the last one stopped at a store failure; the face replies with
    it. Made in a worker thread by the async face when the store may wait (a
    synchronous store is read by the constructor)."""


@dataclass(frozen=True, slots=True)
class _Store(_SessionStep):
    """Perform a conversation operation's store steps; the face replies with what they
    returned (``Driver.perform`` in the sync face, ``AsyncDriver.perform`` — awaited
    on an async store, in a worker thread when a sync store may wait — in the async
    face)."""

    conversation: Conversation
    operation: Operation
    steps: StoreSteps[Any]
    trace: Any = None  # the call's span, when the operation disposes of one


@dataclass(frozen=True, slots=True)
class _Resolve(_SessionStep):
    """Ask the interrupt handler about ``interrupt``; the face replies with its answer."""

    interrupt: Interrupt


_Step = _SessionStep
Steps = Generator[_Step | Pause, Any, Any]  # a session pauses never; the drivers allow it


class BaseSession(Generic[C]):
    """A conversation with one agent, carried turn by turn: what both faces share.

    Args:
        client: the transport to the agent.
        ask: called for a call that needs the user's consent; returns an
            :class:`Approval` (or a bool). Without it, such calls are declined
            by the policy — a session never runs a side effect nobody approved.
        consent, thread_id: as for :class:`Conversation`.
        store: the one storage knob, as for :class:`Conversation` (``journal=``
            is its old, deprecated spelling): a store keeps the thread and
            records every call; a bare journal records the calls only — such a
            session cannot reload after a store failure (there is no thread to
            reload). With a ``thread_id`` the store holds, the session picks the thread
            up where any process left it: ``send`` first disposes of the calls
            still pending (asking, executing — never re-running a call another
            process claimed), then continues. The tools advertised are the
            ones registered on this session, never the store's.
        timeout: default handler timeout in seconds.
        max_turns: a safety stop for agents that keep calling tools.
        in_flight_wait: as for :class:`Conversation`: how long to wait for the
            answer of a call another replica is executing right now before
            answering it "outcome unknown". Default: 0 (never) — or, with an
            ``outcome_unknown`` check, the longest handler timeout: the check is
            only asked about a call that can no longer be running anywhere.
        outcome_unknown: as for :class:`Conversation`: establishes what became
            of a call whose execution started and recorded no answer.
        resume_unknown: asked about a resume of the thread's interrupted run that
            was sent (by an earlier process, or another replica) and that no saved
            run answers — a :class:`~agui_tools.app.SentResume`: its entries, its
            run id, when. Return ``True`` to send it again — the same entries,
            under the same run id — once the application established that it did
            not reach the agent, or that the agent keeps its runs by id; ``False``
            (and without the check) nothing is sent and
            :class:`~agui_tools._errors.ResumeOutcomeUnknown` is raised: a resume
            that was sent is never sent again blindly.
        signer: as for :class:`Conversation`: decisions travel with signed
            receipts (docs/receipts.md).
    """

    def __init__(
        self,
        client: C,
        *,
        ask: AskUser | None = None,
        consent: ConsentPolicy | None = None,
        journal: Journal | None = None,
        thread_id: str | None = None,
        timeout: float | None = 60.0,
        max_turns: int = 10,
        tools: Iterable[RegisteredTool] = (),
        conversation: Conversation | None = None,
        store: Store | AsyncStore | Journal | None = None,
        in_flight_wait: float | None = None,
        outcome_unknown: OutcomeUnknown | None = None,
        on_interrupt: OnInterrupt | None = None,
        resume_unknown: ResumeUnknown | None = None,
        signer: Signer | None = None,
    ) -> None:
        self.client: C = client
        self.signer = signer
        self.on_interrupt = on_interrupt
        self.resume_unknown = resume_unknown
        self._in_flight_wait = in_flight_wait
        self._outcome_unknown = outcome_unknown
        self.ask = ask
        self.timeout = timeout
        self.max_turns = max_turns
        self._tools: dict[str, RegisteredTool] = {t.spec.name: t for t in tools}
        self._consent = consent
        if journal is not None:
            if store is not None and journal is not store:
                raise UsageError("give store= (which is also the journal) or journal=, not both")
            warnings.warn(
                "Session(journal=…) is store=… now: one knob for where calls and the thread "
                "are kept (a bare journal keeps the calls only)",
                DeprecationWarning,
                stacklevel=2,
            )
            store = journal
        self._store = store
        self._thread_id = thread_id
        self.conversation = conversation

    # -- registration -------------------------------------------------------------

    def interrupt(self, fn: OnInterrupt, /) -> OnInterrupt:
        """Register the interrupt handler (a decorator; the same as ``on_interrupt=``)."""
        self.on_interrupt = fn
        return fn

    @property
    def interrupts(self) -> list[Interrupt]:
        """The interrupts the last run left open (after ``send``/``open``): what
        :meth:`Session.resume` must answer, every one of them (INT-7)."""
        if self.conversation is None:
            return []
        return open_interrupts(self.conversation)

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        side_effects: bool = False,
        timeout: float | None = None,
        trace_payloads: bool = False,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        side_effects: bool = False,
        timeout: float | None = None,
        trace_payloads: bool = False,
    ) -> Any:
        """Register a frontend tool (usable bare or with arguments, as a decorator).

        ``trace_payloads`` records the tool's arguments and results in its
        ``execute_tool`` spans; by default only their sizes are (docs/observability.md).
        """

        def register(f: F) -> F:
            spec, handler = tool_spec_from_function(
                f, name=name, description=description, side_effects=side_effects
            )
            self.add_tool(
                spec,
                handler,
                timeout=timeout,
                trace_payloads=trace_payloads,
                context=wants_context(f),
            )
            return f

        return register(fn) if fn is not None else register

    def add_tool(
        self,
        spec: ToolSpec,
        handler: Callable[[dict[str, Any]], Any],
        *,
        timeout: float | None = None,
        trace_payloads: bool = False,
        context: bool = False,
    ) -> None:
        """Register a tool by its spec and an arguments-dict handler. With
        ``context=True`` the handler is called ``handler(arguments, context=ctx)``,
        ``ctx`` the call's :class:`ToolContext`."""
        if self.conversation is not None:
            raise UsageError("register tools before the first send()")
        if spec.name in self._tools:
            raise UsageError(f"a tool named {spec.name!r} is already registered")
        self._tools[spec.name] = RegisteredTool(spec, handler, timeout, trace_payloads, context)

    def _conversation(self) -> Conversation:
        if self.conversation is None:
            self.conversation = Conversation(
                thread_id=self._thread_id,
                tools=[t.spec for t in self._tools.values()],
                consent=self._consent,
                store=self._store,
                in_flight_wait=self._effective_in_flight_wait(),
                outcome_unknown=self._outcome_unknown,
                signer=self.signer,
            )
            self._thread_id = self.conversation.thread_id  # a reload picks up the same thread
        return self.conversation

    def _effective_in_flight_wait(self) -> float:
        """``in_flight_wait`` as given; by default 0 — unless an ``outcome_unknown``
        check is given: then the longest handler timeout, since asking the system a
        handler acts on what became of a call is only sound once that call can no
        longer be running in another replica (asked earlier, it reads "not done" for
        a call about to be done, and that answer stands)."""
        if self._in_flight_wait is not None:
            return self._in_flight_wait
        if self._outcome_unknown is None:
            return 0.0
        bounds = [tool.timeout for tool in self._tools.values() if tool.timeout is not None]
        if self.timeout is not None:
            bounds.append(self.timeout)  # the bound of every tool without its own
        return max(bounds, default=0.0)

    def _reopened(self) -> Conversation:
        """The conversation to go on with: a new one from the store after a failure."""
        conv = self.conversation
        if conv is not None and not conv.in_step:
            if conv.store is None:
                # the thread is kept nowhere (no store, or a bare journal): nothing to
                # reload from — the refusal says what stopped it
                conv.link.check("restore")
            self.conversation = None  # reload: the store and the journal decide, not the copy
        return self._conversation()

    @property
    def _store_may_wait(self) -> bool:
        """Whether a store step may wait on I/O (then the async face runs it in a thread)."""
        journal = (
            self.conversation.journal if self.conversation is not None else self._store or None
        )
        return journal is not None and getattr(journal, "blocking", True)

    # -- the loop, once -------------------------------------------------------------

    def _open_steps(self) -> Steps:
        """The conversation, its thread restored from the store (when it holds it).

        A conversation that stopped at a store failure (``in_step`` False) is
        replaced here by a new one on the same store and thread id: the reload
        every :class:`~agui_tools._errors.StoreError` asks for, so retrying
        ``send`` with the same ``message_id`` on this session is the recovery."""
        conv: Conversation = yield _Open()  # restoring reads the store
        # done by the constructor, unless the store is async
        yield _Store(conv, "restore", conv.restore_steps())
        _telemetry.restored(conv)
        return conv

    def _send_steps(
        self, text: str | None, emit: Callable[[Update], Any], message_id: str | None = None
    ) -> Steps:
        """Send a user message and carry the thread until nothing is pending.

        A ``message_id`` the thread already holds is not added again (a retry
        after :class:`~agui_tools._errors.StaleThread`): the thread is carried on
        from where the store has it — pending calls disposed of, the agent run
        only if it owes the thread a reply (its last message is the user's or a
        tool's, or its last run did not succeed: an error, a cut stream)."""
        conv: Conversation = yield from self._open_steps()
        if conv.pending:  # a restored thread: finish what the last process left first
            yield from self._dispose_steps(emit)
        resume: list[dict[str, Any]] | None = None
        if open_interrupts(conv):
            lost = yield _Store(conv, "resume", conv.sent_resume_steps())
            if lost is not None:  # a resume was sent and not saved: never sent again blindly
                carried: RunResult = yield from self._resend_steps(conv, lost, emit)
                if text is None or carried.status != "success" or open_interrupts(conv):
                    return carried
        if open_interrupts(conv):  # a restored (or returned) interrupted run: answer it first
            if not self._answers_interrupts(conv):
                raise UsageError(
                    "the last run was interrupted and its interrupts are open: answer them "
                    "with resume() (or give the session an interrupt handler) before sending "
                    "(INT-7)",
                    rule="INT-7",
                )
            resume = yield from self._resolve_steps(conv)
        sent = message_id is not None and conv.thread.has_message(message_id)
        if (
            sent
            and conv.runs
            and conv.runs[-1].status == "success"
            and conv.messages[-1]["role"] not in ("user", "tool")
        ):
            return conv.runs[-1]  # the message was answered: nothing of this send is left
        if text is not None and not sent:
            conv.next_input(
                messages=[
                    {"id": message_id or f"msg-{uuid.uuid4()}", "role": "user", "content": text}
                ],
                resume=resume,
            )
        else:
            conv.next_input(resume=resume)
        return (yield from self._carry_steps(conv, emit))

    def _resume_steps(
        self, answers: Mapping[str, InterruptAnswer], emit: Callable[[Update], Any]
    ) -> Steps:
        """Answer the open interrupts with ``answers`` and carry the thread on."""
        conv: Conversation = yield from self._open_steps()
        if open_interrupts(conv):
            lost = yield _Store(conv, "resume", conv.sent_resume_steps())
            if lost is not None:  # a resume was sent and not saved: never sent again blindly
                return (yield from self._resend_steps(conv, lost, emit))
        interrupts = open_interrupts(conv)
        if not interrupts:
            raise UsageError(
                "there is nothing to resume: the last run of the thread was not interrupted "
                "(or its interrupts were already answered) (INT-6)",
                rule="INT-6",
            )
        by_id = {i.id: i for i in interrupts}
        resolutions = {
            iid: interrupt_resolution(by_id[iid], a) if iid in by_id else as_resolution(a)
            for iid, a in answers.items()
        }
        conv.next_input(resume=resume_entries(interrupts, resolutions))  # INT-6/7/8 judged
        return (yield from self._carry_steps(conv, emit))

    def _resend_steps(
        self, conv: Conversation, lost: SentResume, emit: Callable[[Update], Any]
    ) -> Steps:
        """A resume that was sent and that no saved run answers: sent again — the same
        entries, under the same run id — only when ``resume_unknown`` says so."""
        if self.resume_unknown is None or not self.resume_unknown(lost):
            raise ResumeOutcomeUnknown(unknown_resume(lost), lost)
        conv.resend(lost)
        return (yield from self._carry_steps(conv, emit))

    def _answers_interrupts(self, conv: Conversation) -> bool:
        """Whether this session answers the open interrupts itself: it has an interrupt
        handler — or ``ask``, and each interrupt is an approval request (names a call
        the thread holds), which ``ask`` answers as it answers a frontend call."""
        if self.on_interrupt is not None:
            return True
        interrupts = open_interrupts(conv)
        return self.ask is not None and all(i.call is not None for i in interrupts)

    def _resolve_steps(self, conv: Conversation) -> Generator[_Step, Any, list[dict[str, Any]]]:
        """Ask the interrupt handler (or ``ask``, for an approval request without one)
        about each open interrupt; the resume list."""
        interrupts = open_interrupts(conv)
        answers: dict[str, Resolution] = {}
        for interrupt in interrupts:
            if self.on_interrupt is not None:
                answer = yield _Resolve(interrupt)
            else:
                answer = yield _Ask(approval_request(conv, interrupt))
            answers[interrupt.id] = interrupt_resolution(interrupt, answer)
        return resume_entries(interrupts, answers)

    def _carry_steps(self, conv: Conversation, emit: Callable[[Update], Any]) -> Steps:
        """Run the prepared input, and the next, until nothing is pending."""
        result: RunResult | None = None
        for _ in range(self.max_turns):
            if conv.pending_input.get("resume"):
                # recorded and claimed before it is sent: a resume is sent once
                yield _Store(conv, "resume", conv.claim_resume_steps())
            result = yield _Turn()
            assert result is not None
            for update in conv.take_updates():
                emit(update)
            if result.status == "interrupt" and self._answers_interrupts(conv):
                conv.next_input(resume=(yield from self._resolve_steps(conv)))
                continue
            # the agent is done when its run left no calls at all; calls the core already
            # answered (refused, invalid, denied) still need the agent to hear the answer
            if result.status != "success" or not result.pending:
                return result
            yield from self._dispose_steps(emit)
            conv.next_input()
        assert result is not None
        return result

    def _dispose_steps(self, emit: Callable[[Update], Any]) -> Steps:
        """Answer every pending call: ask, execute, or leave it to the answers already given."""
        conv = self._conversation()
        for call in list(conv.pending):
            span = _telemetry.call_span(call, streamed=conv.call_stream_seconds.get(call.call_id))
            try:
                yield from self._dispose_call_steps(conv, call, emit, span)
            except BaseException as exc:
                _telemetry.call_ended(span, call, exc)
                raise
            _telemetry.call_ended(span, call)

    def _dispose_call_steps(
        self, conv: Conversation, call: PendingCall, emit: Callable[[Update], Any], span: Any
    ) -> Steps:
        if call.status is CallStatus.APPROVED and call.decision is not None:
            # approved before the loop saw it (the policy): nobody was asked
            _telemetry.consent_end(
                _telemetry.consent_start(span), True, call.decision.decided_by, asked=False
            )
        if call.status is CallStatus.AWAITING_CONSENT:
            emit(call_update(call))
            consent = _telemetry.consent_start(span)
            if self.ask is None:
                # nobody to ask: the policy declines — never worded as the user's decision
                yield _Store(
                    conv,
                    "decline",
                    conv.decline_steps(
                        call.call_id,
                        by="policy",
                        reason="no one was available to ask for consent",
                    ),
                    span,
                )
                _telemetry.consent_end(consent, False, "policy", asked=False)
            else:
                answer = yield _Ask(call)
                approval = Approval(answer) if isinstance(answer, bool) else answer
                _telemetry.consent_end(consent, approval.approved, approval.decided_by, asked=True)
                if approval.approved:
                    yield _Store(
                        conv,
                        "approve",
                        conv.approve_steps(
                            call.call_id,
                            by=approval.decided_by,
                            arguments=approval.arguments,
                            reason=approval.reason,
                            principal=approval.principal,
                        ),
                        span,
                    )
                else:
                    yield _Store(
                        conv,
                        "decline",
                        conv.decline_steps(
                            call.call_id,
                            by=approval.decided_by,
                            reason=approval.reason,
                            principal=approval.principal,
                        ),
                        span,
                    )
        if call.status is CallStatus.APPROVED:
            registered = self._tools.get(call.name)
            if registered is None:  # an unadvertised tool routed elsewhere has no handler here
                yield _Store(
                    conv,
                    "fail",
                    conv.fail_steps(call.call_id, f"no handler is registered for {call.name!r}"),
                    span,
                )
            else:
                timeout = registered.timeout if registered.timeout is not None else self.timeout
                yield _Execute(
                    call, registered.bound(call), timeout, emit, span, registered.trace_payloads
                )
        for update in conv.take_updates():
            emit(update)


def _ignore(update: Update) -> None:
    return None


class Session(BaseSession[AgentClient]):
    """The async session (see :class:`BaseSession` for its arguments)::

        session = Session(AgentClient(url), ask=ask_the_user)
        result = await session.send("Order two widgets", on_update=render)

    ``ask`` may be a coroutine function; tool handlers may be too (a plain
    one runs in a daemon thread of its own, so it does not block the event
    loop — and, left behind by its timeout or a Ctrl-C, does not hold the
    process at exit).
    """

    async def send(
        self,
        text: str | None = None,
        *,
        on_update: Callable[[Update], Any] | None = None,
        message_id: str | None = None,
    ) -> RunResult:
        """Send a user message and carry the thread until nothing is pending.

        Returns the last run's result: ``success`` with no pending calls when
        the agent is done, or whatever stopped the loop (an interrupt, an
        error, a truncated or rejected stream, ``max_turns``). Without ``text``
        the thread is carried on as it is (pending calls answered, the agent
        run). ``message_id`` names the user message: a retry with the same id
        (after ``StaleThread``, on a new session) never adds it twice.
        """
        emit = on_update or _ignore
        steps = self._send_steps(text, emit, message_id)
        with _telemetry.send_span(self._thread_id) as span:
            result: RunResult = await self._perform(steps, emit)
            _telemetry.sent(span, result, self._thread_id)
        return result

    async def resume(
        self,
        answers: Mapping[str, Resolution | Approval | bool],
        *,
        on_update: Callable[[Update], Any] | None = None,
    ) -> RunResult:
        """Answer the open interrupts — one answer per interrupt id, each a
        :class:`Resolution` (an :class:`Approval` for an approval request) — and
        carry the thread on as :meth:`send` does. On a new session with the
        thread's id, the interrupted run is restored from the store first.
        Refused before anything is sent (:class:`UsageError`) when the answers
        leave an interrupt out or name an unknown one (INT-6/7), resolve an
        expired one (INT-8), or a payload fails its ``responseSchema``
        (:class:`InvalidPayload`)."""
        emit = on_update or _ignore
        result: RunResult = await self._perform(self._resume_steps(answers, emit), emit)
        return result

    async def stop(self) -> str | None:
        """Ask the agent to stop the run in flight, with a resumable client
        (docs/resumable.md, RESUME-6): it ends cancelled, never merely abandoned.
        ``None`` when there is no such run (nothing is sent)."""
        return await self.client.stop()

    async def open(self) -> Conversation:
        """The session's conversation, its thread restored from the store — without
        sending anything: to show a thread's history before the user types (a page
        load), or to look at what another replica left. ``send`` does it too."""
        conv: Conversation = await self._perform(self._open_steps(), _ignore)
        return conv

    async def dispose(self, emit: Callable[[Update], Any]) -> None:
        """Answer every pending call: ask, execute, or leave it to the answers already given."""
        await self._perform(self._dispose_steps(emit), emit)

    async def _perform(self, steps: Steps, emit: Callable[[Update], Any]) -> Any:
        async def perform(step: _Step) -> Any:
            if isinstance(step, _Turn):
                return await self.client.run(self._conversation(), on_update=emit)
            if isinstance(step, _Ask):
                assert self.ask is not None
                reply = self.ask(step.call)
                return await reply if inspect.isawaitable(reply) else reply
            if isinstance(step, _Resolve):
                assert self.on_interrupt is not None
                answer = self.on_interrupt(step.interrupt)
                return await answer if inspect.isawaitable(answer) else answer
            if isinstance(step, _Open):
                if self._store_may_wait:
                    return await asyncio.to_thread(self._reopened)
                return self._reopened()
            if isinstance(step, _Store):
                with _telemetry.within(step.trace):
                    conv = step.conversation
                    return await AsyncDriver(conv).perform(step.operation, step.steps)
            assert isinstance(step, _Execute)
            return await self._execute(step)

        return await adrive(steps, perform)

    async def _execute(self, step: _Execute) -> Answer:
        handler, timeout = step.handler, step.timeout
        conv = self._conversation()

        async def run(arguments: dict[str, Any]) -> Any:
            step.announce(conv)
            try:
                if inspect.iscoroutinefunction(handler):
                    coro = handler(arguments)
                else:
                    result = await in_daemon_thread(handler, arguments)
                    if not inspect.isawaitable(result):
                        return result
                    coro = result
                return await coro
            except BaseException as exc:
                _telemetry.handler_failed(span, exc)
                raise

        async def bounded(arguments: dict[str, Any]) -> Any:
            if timeout is None:
                return await run(arguments)
            # only our own deadline is reported as one: a TimeoutError the handler
            # raised itself (a socket timeout, say) is its failure, told as such
            deadline = asyncio.timeout(timeout)
            try:
                async with deadline:
                    return await run(arguments)
            except TimeoutError:
                if not deadline.expired():
                    raise
                raise deadline_passed(timeout) from None

        with _telemetry.execute_tool(step.call, step.trace, step.trace_payloads) as span:
            answer = await AsyncDriver(conv).execute(step.call.call_id, bounded)
            _telemetry.executed(span, answer, step.trace_payloads)
            return answer


class SyncSession(BaseSession[SyncAgentClient]):
    """The blocking session, for scripts and threads (see :class:`BaseSession`)::

        with SyncAgentClient(url) as client:
            session = SyncSession(client, ask=ask_the_user)
            result = session.send("Order two widgets", on_update=render)

    ``ask`` answers directly (an :class:`Approval` or a bool). A handler with
    a timeout runs in a worker thread, so the deadline holds while it hangs
    (the thread is left behind, like the async face's worker: a Python thread
    cannot be stopped); a handler that returns an awaitable (an ``async def``
    tool) has it run to completion in that thread's own event loop.
    """

    def send(
        self,
        text: str | None = None,
        *,
        on_update: Callable[[Update], Any] | None = None,
        message_id: str | None = None,
    ) -> RunResult:
        """Send a user message and carry the thread until nothing is pending (see
        :meth:`Session.send`)."""
        emit = on_update or _ignore
        with _telemetry.send_span(self._thread_id) as span:
            result: RunResult = self._perform(self._send_steps(text, emit, message_id), emit)
            _telemetry.sent(span, result, self._thread_id)
        return result

    def resume(
        self,
        answers: Mapping[str, Resolution | Approval | bool],
        *,
        on_update: Callable[[Update], Any] | None = None,
    ) -> RunResult:
        """Answer the open interrupts and carry the thread on (see :meth:`Session.resume`)."""
        emit = on_update or _ignore
        result: RunResult = self._perform(self._resume_steps(answers, emit), emit)
        return result

    def stop(self) -> str | None:
        """The blocking face of :meth:`Session.stop` (call it from another thread)."""
        return self.client.stop()

    def open(self) -> Conversation:
        """The session's conversation, its thread restored (see :meth:`Session.open`)."""
        conv: Conversation = self._perform(self._open_steps(), _ignore)
        return conv

    def dispose(self, emit: Callable[[Update], Any]) -> None:
        """Answer every pending call: ask, execute, or leave it to the answers already given."""
        self._perform(self._dispose_steps(emit), emit)

    def _perform(self, steps: Steps, emit: Callable[[Update], Any]) -> Any:
        def perform(step: _Step) -> Any:
            if isinstance(step, _Turn):
                return self.client.run(self._conversation(), on_update=emit)
            if isinstance(step, _Ask):
                assert self.ask is not None
                reply = self.ask(step.call)
                if inspect.isawaitable(reply):
                    if inspect.iscoroutine(reply):
                        reply.close()
                    raise UsageError(
                        "a SyncSession's ask callback must answer directly (an Approval or a "
                        "bool), not return an awaitable; use Session for an async one"
                    )
                return reply
            if isinstance(step, _Resolve):
                assert self.on_interrupt is not None
                answer = self.on_interrupt(step.interrupt)
                if inspect.isawaitable(answer):
                    if inspect.iscoroutine(answer):
                        answer.close()
                    raise UsageError(
                        "a SyncSession's interrupt handler must answer directly, not return an "
                        "awaitable; use Session for an async one"
                    )
                return answer
            if isinstance(step, _Open):
                return self._reopened()
            if isinstance(step, _Store):
                with _telemetry.within(step.trace):
                    conv = step.conversation
                    return Driver(conv).perform(step.operation, step.steps)
            assert isinstance(step, _Execute)
            return self._execute(step)

        return drive(steps, perform)

    def _execute(self, step: _Execute) -> Answer:
        handler, timeout = step.handler, step.timeout
        conv = self._conversation()

        def bounded(arguments: dict[str, Any]) -> Any:
            try:
                return bounded_run(arguments)
            except BaseException as exc:
                _telemetry.handler_failed(span, exc)
                raise

        def bounded_run(arguments: dict[str, Any]) -> Any:
            step.announce(conv)
            if timeout is None:
                return complete(handler, arguments)
            outcome: Future[Any] = Future()

            def work() -> None:
                try:
                    outcome.set_result(complete(handler, arguments))
                except BaseException as exc:  # handed to the waiting thread, raised there
                    outcome.set_exception(exc)

            # the thread runs in a copy of this one's context: the handler's own spans nest
            # under its execute_tool span (OpenTelemetry's current span is a contextvar)
            runner = contextvars.copy_context().run
            threading.Thread(
                target=runner, args=(work,), name=f"tool {step.call.name}", daemon=True
            ).start()
            try:
                return outcome.result(timeout)
            except TimeoutError:
                # only our own deadline is reported as one: a TimeoutError the handler
                # raised itself (a socket timeout, say) is its failure, told as such
                if outcome.done():
                    raise
                raise deadline_passed(timeout) from None

        with _telemetry.execute_tool(step.call, step.trace, step.trace_payloads) as span:
            answer = Driver(conv).execute(step.call.call_id, bounded)
            _telemetry.executed(span, answer, step.trace_payloads)
            return answer
