"""The application core: one thread, its runs, and the disposal of tool calls.

Sans-I/O: a :class:`Conversation` hands out the input to send (:meth:`next_input`), takes
frames in (:meth:`receive`), judges the run (:meth:`end_run_steps`), and disposes of every
call it left pending — consent, execution once through the journal — as steps a driver
performs (app/_driver.py). The rules it holds the application to:

* the next input answers every unanswered call, one tool message each (FE-8);
* a resume covers every interrupt, names no other, cancels only expired ones (INT-6..8);
* arguments are not acted on before the call closed (TOOL-5) nor without strict parsing
  and validation (TOOL-21); unadvertised tools are not executed by default (TOOL-24);
* consent is recorded (id, tool, fingerprint, who, when), never claimed falsely (TOOL-22);
* a side effect runs at most once (intent before, answer after, unknown never re-run);
* an answer, once given, is never replaced nor lost.

With a ``store`` each run is saved as it ends (one transaction, checked against the
thread's version), and a ``Conversation`` on the same store and ``thread_id`` picks the
thread up there (:meth:`Conversation.restore_steps`).
"""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from .._errors import (
    ProtocolWarning,
    ResumeOutcomeUnknown,
    StaleThread,
    StoreError,
    UsageError,
)
from ..wire._enforce import shared_enforcer
from ..wire._kinds import WireEvent
from ..wire._pipeline import ConsumerPipeline, Middleware, StreamResult
from ..wire._verify import Limits, RunSummary
from ._answering import Answering, OutcomeUnknown
from ._call_order import in_call_order, misplaced_tool_messages
from ._calls import Answer, CallStatus, PendingCall
from ._consent import ConsentPolicy, fingerprint
from ._downgrade import prepare_run_input
from ._journal import Claim, ClaimResult, Journal, JournalKey, MemoryJournal
from ._link import Link
from ._receipts import Signer, sign_resume
from ._reducer import NOTHING_ENCODED, Encoded, ThreadState
from ._resume import RESUME_TOOL, SentResume, check_resume, resume_record_id, unknown_resume
from ._runs import RunResult, run_from_json, run_to_json
from ._steps import Pause, StoreSteps, ask
from ._store import (
    AsyncStore,
    Store,
    ThreadRecord,
    is_async_store,
    not_storable,
    snapshot_of,
)
from ._store_drive import drive_store
from ._tools import ToolSpec
from ._updates import CallUpdate, TextDelta, Update, call_update, shown

__all__ = [
    "CallUpdate",
    "Conversation",
    "RunResult",
    "TextDelta",
    "Update",
    "call_update",
]

# -- what the core asks of its journal or store ---------------------------------
#
# Every store operation is a public ``*_steps`` method yielding ``StoreOp``s
# (app/_steps.py), performed by app/_store_drive.py; each first asks the ``Link``
# (app/_link.py) whether this copy is still in step with the store.


class Conversation(Answering):
    """One thread between an application and an agent.

    Args:
        thread_id: the thread's id (minted when omitted).
        tools: the frontend tools this application advertises and executes.
        consent: the consent policy (default: read-only tools run, others ask the user).
        store: the one storage knob. A :class:`~agui_tools.app._store.Store` keeps the whole
            thread and journals every call; a bare journal (``MemoryJournal``,
            ``SQLiteJournal``) keeps the calls only; default a ``MemoryJournal``. A
            ``thread_id`` the store holds is restored (leave ``messages`` and ``state`` out);
            each run is saved as it ends; tools are never read from it. An
            :class:`~agui_tools.app._store.AsyncStore` is driven from async code only:
            ``await AsyncDriver(conversation).restore()``, then an
            :class:`~agui_tools.app._driver.AsyncDriver` for every store operation.
        messages, state: history and state to start from.
        context, forwarded_props: carried on every input.
        unadvertised: ``(name, arguments)`` of a call to a tool not advertised → a
            :class:`ToolSpec` to adopt it (validated, through consent) or ``None`` (TOOL-24).
        outcome_unknown: ``(call, started_at)`` of a call whose execution started and left
            no answer → the :class:`Answer` the application established, or ``None`` to
            answer it failed ("outcome unknown"); it is never run again either way.
        in_flight_wait: seconds to wait for an execution that started this recently (it may
            still run in another replica) before answering "outcome unknown"; ``0`` never waits.
        strict, limits, middleware: passed to each run's pipeline.
        peer_version: the agent's protocol version when known (downgrades).
        tool_message_order: ``"as-folded"`` (default) or ``"call-order"`` (each tool message
            right after its call's message). A history out of call order is reported either
            way (AGT-HIST-1), and only reordered when asked.
        signer: a :class:`~agui_tools.app._receipts.Signer`; each decided call's tool message and
            resolved resume entry then carries a signed receipt (docs/receipts.md).
    """

    def __init__(
        self,
        *,
        thread_id: str | None = None,
        tools: Iterable[ToolSpec] = (),
        consent: ConsentPolicy | None = None,
        journal: Journal | None = None,
        messages: Iterable[Mapping[str, Any]] = (),
        state: Any = None,
        context: Sequence[Mapping[str, str]] = (),
        forwarded_props: Any = None,
        unadvertised: Callable[[str, Mapping[str, Any] | None], ToolSpec | None] | None = None,
        strict: bool = False,
        limits: Limits | None = None,
        middleware: Sequence[Middleware] = (),
        peer_version: str | None = None,
        outcome_unknown: OutcomeUnknown | None = None,
        tool_message_order: Literal["as-folded", "call-order"] = "as-folded",
        store: Store | AsyncStore | Journal | None = None,
        in_flight_wait: float = 0.0,
        signer: Signer | None = None,
    ) -> None:
        if tool_message_order not in ("as-folded", "call-order"):
            raise UsageError(
                f"tool_message_order must be 'as-folded' or 'call-order', not {tool_message_order!r}"
            )
        if journal is not None:
            if store is not None and journal is not store:
                raise UsageError("give store= (which is also the journal) or journal=, not both")
            warnings.warn(
                "Conversation(journal=…) is store=… now: one knob for where calls and the "
                "thread are kept (a bare journal keeps the calls only)",
                DeprecationWarning,
                stacklevel=2,
            )
            store = journal
        self.thread_id = thread_id or f"thread-{uuid.uuid4()}"
        self.tools: dict[str, ToolSpec] = {}
        for tool in tools:
            if tool.name in self.tools:
                raise UsageError(f"two tools are named {tool.name!r}")
            tool.validator  # noqa: B018 - compile now: a bad schema fails at registration
            self.tools[tool.name] = tool
        self.consent = consent or ConsentPolicy()
        self.store: Store | AsyncStore | None = store if _keeps_threads(store) else None  # type: ignore[assignment]
        """Where the thread is kept (``None``: nowhere — a bare journal, or none)."""
        self.journal: Journal | AsyncStore = store if store is not None else MemoryJournal()
        """Where the calls are recorded: the store, or the bare journal given."""
        self.version = 0
        """The thread's version in the store: the number of runs saved."""
        # the messages of that version, each encoded, with the record it was encoded from
        self._saved: Encoded = NOTHING_ENCODED
        self._link = Link(self.thread_id)
        """Whether this copy of the thread is in step with the store (app/_link.py)."""
        self.context = [dict(c) for c in context]
        self.forwarded_props = forwarded_props
        self.unadvertised = unadvertised
        self.strict = strict
        self.limits = limits
        self.middleware = tuple(middleware)
        self.peer_version = peer_version
        self.outcome_unknown = outcome_unknown
        if not isinstance(in_flight_wait, int | float) or not in_flight_wait >= 0:
            raise UsageError(f"in_flight_wait must be 0 or more seconds, not {in_flight_wait!r}")
        self.in_flight_wait = in_flight_wait
        self.tool_message_order = tool_message_order
        self.signer = signer
        self._reported_order: set[str] = set()  # tool messages AGT-HIST-1 already named
        self.runs: list[RunResult] = []
        self.warnings: list[ProtocolWarning] = []
        self._calls: dict[str, PendingCall] = {}
        self._pipeline: ConsumerPipeline | None = None
        self._run_input: dict[str, Any] | None = None
        self._added: list[str] = []  # messages next_input() added for the run being sent
        self._covering: set[str] = set()  # calls the resume list being sent answers
        self._resumed: set[str] = set()  # calls answered by a resume entry (INT-6)
        self._resume_key: JournalKey | None = None  # the claimed resume the run being sent carries
        self._call_started: dict[str, float] = {}  # call id → when its TOOL_CALL_START arrived
        self.call_stream_seconds: dict[str, float] = {}
        """Call id → seconds from the receipt of its ``TOOL_CALL_START`` to that of its
        ``TOOL_CALL_END`` (calls this conversation received; the tool-call span's
        ``agui.tool_call.stream_duration``)."""
        self._updates: list[Update] = []
        initial = list(messages)
        self.thread = ThreadState(
            initial,
            state,
            on_warning=self._updates.append,
            limits=limits,
        )
        self._given_history = bool(initial) or state is not None
        self._unloaded = self.store is not None and thread_id is not None
        """The thread may be in the store and was not looked for yet (an async store)."""
        if self._unloaded and not is_async_store(store):
            drive_store(self.journal, self._link, "restore", self.restore_steps())

    # -- the next input ---------------------------------------------------------

    def next_input(
        self,
        *,
        messages: Iterable[Mapping[str, Any]] = (),
        user: str | None = None,
        resume: Sequence[Mapping[str, Any]] | None = None,
        run_id: str | None = None,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """The ``RunAgentInput`` for the next run, exactly as it will be sent, after appending
        ``messages`` (and a user message ``user``). Raises :class:`UsageError`, sending nothing,
        while a call is unanswered (FE-8) or the resume list falls short (INT-6/7/8).
        """
        if self._pipeline is not None:
            raise UsageError("the current run has not ended: call end_run() first")
        self._check_loaded()
        self._link.check("next_input")
        covered = check_resume(self.runs, resume, now or datetime.now(UTC))
        dangling = [
            c for c in self.thread.unanswered_calls() if c not in covered and c not in self._resumed
        ]
        if dangling:
            raise UsageError(
                "the thread cannot continue while tool call(s) "
                f"{', '.join(map(repr, dangling))} are unanswered: every call the agent left must be "
                "answered first — executed, failed or declined (FE-8)",
                rule="FE-8",
            )
        new = [dict(m) for m in messages]
        if user is not None:
            new.append({"id": f"msg-{uuid.uuid4()}", "role": "user", "content": user})
        for message in new:
            self.thread.add_message(message)
        self._added = [m["id"] for m in new]
        self._covering = covered
        raw: dict[str, Any] = {
            "threadId": self.thread_id,
            "runId": run_id or f"run-{uuid.uuid4()}",
            "messages": self._history(),
            "tools": [t.to_wire() for t in self.tools.values()],
            "state": self.thread.state,
        }
        if self.context:
            raw["context"] = self.context
        if self.forwarded_props is not None:
            raw["forwardedProps"] = self.forwarded_props
        if resume:
            raw["resume"] = [dict(r) for r in resume]
        try:
            if resume and self.signer is not None and self.runs:
                last = self.runs[-1]
                sign_resume(
                    self.signer,
                    raw["resume"],
                    last.interrupts,
                    self.thread,
                    thread_id=self.thread_id,
                    run_id=last.run_id,
                    now=now,
                )
            prepared, warnings = prepare_run_input(  # at the limit its state was accepted at
                raw,
                peer_version=self.peer_version,
                enforcer=shared_enforcer((self.limits or Limits()).max_depth),
            )
        except BaseException:
            self.thread.withdraw(self._added)  # nothing was sent: the thread is as it was
            self._added = []
            raise
        self.warnings += warnings
        self._run_input = prepared
        return prepared

    def _history(self) -> list[Any]:
        """The thread's messages for the next input; out-of-order tool messages reported."""
        messages = self.thread.messages
        misplaced = misplaced_tool_messages(messages)
        fresh = [m for m in misplaced if m.tool_message_id not in self._reported_order]
        if fresh:
            self._reported_order.update(m.tool_message_id for m in fresh)
            reordering = self.tool_message_order == "call-order"
            named = "; ".join(
                f"tool message {m.tool_message_id!r} (call {m.call_id!r} of assistant message "
                f"{m.assistant_message_id!r})"
                for m in fresh[:5]
            ) + (f"; and {len(fresh) - 5} more" if len(fresh) > 5 else "")
            warning = ProtocolWarning(
                "AGT-HIST-1",
                f"the history has tool messages that do not follow the assistant message that "
                f"made their call: {named}. A chat-completions model refuses such a history; "
                + (
                    "they are sent in call order (tool_message_order='call-order')."
                    if reordering
                    else "it is sent as folded — pass tool_message_order='call-order' to send "
                    "it in call order."
                ),
                ids={"toolMessageId": fresh[0].tool_message_id, "toolCallId": fresh[0].call_id},
            )
            self.warnings.append(warning)
            self._updates.append(warning)
        if misplaced and self.tool_message_order == "call-order":
            return [dict(m) for m in in_call_order(messages)]
        return messages

    @property
    def pending_input(self) -> dict[str, Any]:
        """The input :meth:`next_input` prepared and the current run answers."""
        if self._run_input is None:
            raise UsageError("no run input is prepared: call next_input() first")
        return self._run_input

    def use_input(self, run_input: Mapping[str, Any]) -> None:
        """Judge the next stream against ``run_input``, an input another party prepared
        and sent (a frontend's POST the inspector watches), instead of one
        :meth:`next_input` built: the stream is then received and ended as any run."""
        self._run_input = dict(run_input)

    @property
    def run_in_progress(self) -> bool:
        """True between :meth:`next_input` and :meth:`end_run_steps`."""
        return self._run_input is not None

    def withdraw_unstarted(self) -> bool:
        """If nothing of the current run's stream arrived, the run never started: take
        back the messages :meth:`next_input` added (a retry sends them once) and say
        ``True``; a driver's ``abandon_run`` then touches no store. ``False``: the run
        started, and abandoning it ends it as :meth:`end_run_steps` does — truncated,
        never finished (RUN-9)."""
        if self._run_input is None or self._pipeline is None or self._pipeline.index < 0:
            self._withdraw_run()
            return True
        return False

    def _withdraw_run(self) -> None:
        """The run never started (nothing arrived): take back what next_input() added."""
        if self._run_input is None:
            return
        self._pipeline = None
        self._run_input = None
        self.thread.withdraw(self._added)
        self._added = []
        self._covering = set()
        # a claimed resume stays claimed: the request may have reached the agent
        self._resume_key = None

    # -- receiving a run ----------------------------------------------------------

    def _check_loaded(self) -> None:
        if self._unloaded:
            raise UsageError(
                f"thread {self.thread_id!r} may be kept in the store and was not loaded yet: "
                "an async store is read with `await AsyncDriver(conversation).restore()` "
                "first (Session does it for you)"
            )

    def _ensure_pipeline(self) -> ConsumerPipeline:
        if self._pipeline is None:
            if self._run_input is None:
                raise UsageError("call next_input() before receiving a run")
            self._pipeline = ConsumerPipeline(
                run_input=self._run_input,
                strict=self.strict,
                limits=self.limits,
                middleware=self.middleware,
                on_warning=self._updates.append,
            )
        return self._pipeline

    def receive(self, frame: bytes | str | Mapping[str, Any]) -> list[Update]:
        """Take one frame of the current run's stream; return UI updates.

        Raises :class:`ProtocolViolation` when the stream breaks a fatal rule;
        the run then ends as ``rejected`` at :meth:`end_run_steps`.
        """
        self._link.check("receive")
        return self.receive_many((frame,))

    def receive_many(self, frames: Iterable[bytes | str | Mapping[str, Any]]) -> list[Update]:
        """Take several frames (all a network chunk completed); return UI updates.

        Each event is folded as it is delivered, so a reducer limit fails the stream *at* its
        event; on a violation the earlier events' updates stay for :meth:`take_updates`.
        """
        self._ensure_pipeline().feed_many(frames, self._fold)
        return self.take_updates()

    def _fold(self, ev: WireEvent, index: int) -> None:
        """Fold one delivered event into the thread and queue its UI update; a limit
        the reducer keeps raises here, and the pipeline fails the stream at ``index``."""
        kind = ev["type"]
        if kind == "MESSAGES_SNAPSHOT":
            self._fold_snapshot(ev, index)
            return
        self.thread.apply(ev, index)
        updates = self._updates
        if kind == "TEXT_MESSAGE_CONTENT" or kind == "REASONING_MESSAGE_CONTENT":
            # O(1) per delta: building the message (its whole text) here was quadratic
            role = self.thread.role(ev["messageId"]) or "assistant"
            updates.append(TextDelta(ev["messageId"], role, ev["delta"]))
        elif kind == "TOOL_CALL_END":
            # the clock is read only where a call opens or closes, never per delta
            started = self._call_started.pop(ev["toolCallId"], None)
            if started is not None:
                self.call_stream_seconds[ev["toolCallId"]] = time.monotonic() - started
        elif kind == "TOOL_CALL_START" or kind == "TOOL_CALL_ARGS":
            call_id = ev["toolCallId"]
            if kind == "TOOL_CALL_START":
                self._call_started[call_id] = time.monotonic()
            buffer = self.thread.argument_buffer(call_id)
            preview = buffer.preview() if buffer is not None and kind == "TOOL_CALL_ARGS" else None
            updates.append(
                CallUpdate(
                    call_id, self.thread.call_name(call_id) or "", CallStatus.STREAMING, preview
                )
            )
        elif kind == "TOOL_CALL_RESULT":
            call_id = ev["toolCallId"]
            answer = Answer.executed(call_id, ev["content"])
            updates.append(
                CallUpdate(
                    call_id,
                    self.thread.call_name(call_id) or "",
                    CallStatus.DONE,
                    None,
                    answer,
                    True,
                )
            )

    def _fold_snapshot(self, ev: WireEvent, index: int) -> None:
        """Apply a snapshot; every call it restates with other arguments gets a fresh card.

        The reducer takes the snapshot's arguments (they are what will run); a
        UI that kept the streamed preview would show one thing and run another.
        """
        before = {
            call["id"]: self.thread.arguments(call["id"])
            for msg in ev["messages"]
            if msg["role"] == "assistant"
            for call in msg.get("toolCalls", ())
        }
        self.thread.apply(ev, index)
        for call_id, old in before.items():
            new = self.thread.arguments(call_id)
            if old is None or new is None or new == old:
                continue  # a call seen first in the snapshot has no card to correct
            known = self._calls.get(call_id)
            status = known.status if known is not None else CallStatus.STREAMING
            self._updates.append(
                CallUpdate(
                    call_id,
                    self.thread.call_name(call_id) or "",
                    status,
                    arguments=shown(new),
                )
            )

    def end_run_steps(self) -> StoreSteps[RunResult]:
        """The run's stream ended (or was abandoned): judge it and open its disposition.

        Every unanswered call gets a :class:`PendingCall`; the run is saved before any is
        disposed of. A store failure is raised and leaves the conversation refusing work with
        :class:`~agui_tools._errors.ReloadRequired` (app/_link.py).
        """
        pipe = self._ensure_pipeline()
        result: StreamResult = pipe.close()
        self._pipeline = None
        self._run_input = None
        self._added = []
        self._resumed |= self._covering
        self._covering = set()
        self.warnings += result.warnings
        summary: RunSummary | None = result.runs[-1] if result.runs else None
        status = summary.status if summary is not None else "truncated"
        run_id = summary.run_id if summary is not None else None
        interrupts = summary.interrupts if summary is not None and status == "interrupt" else []
        # a call an interrupt names is answered by the resume entry, not by a tool message
        gated = {i["toolCallId"] for i in interrupts if "toolCallId" in i}
        unanswered = self.thread.unanswered_calls()
        for call_id in unanswered:
            known = self._calls.get(call_id)
            if known is not None and known.answer is not None:
                # a snapshot restated the history without our answer: the answer stands
                self._post(known, known.answer)
        todo = [
            (call_id, pipe.verifier.was_closed("tool", call_id))
            for call_id in unanswered
            if call_id not in self._calls and call_id not in gated and call_id not in self._resumed
        ]
        run = RunResult(
            run_id=run_id,
            status=status,
            pending=[],
            interrupts=summary.interrupts if summary is not None else [],
            error=summary.error if summary is not None else None,
            violation=result.error,
            warnings=result.warnings,
            outcome=summary.outcome if summary is not None else None,
        )
        # "this run folded, these calls pending" is durable before any call is disposed
        # of: a save that failed raises here, nothing is disposed, and the link is out
        # of step — the run is not in the store, so no call of it may ever run (a
        # reload resumes from what the store holds; the same message_id sends again)
        yield from self._save_steps(run, todo)
        if self._resume_key is not None:
            # the run the resume started is saved: the resume's record is answered by it
            key, self._resume_key = self._resume_key, None
            yield from ask("finish", key, Answer.executed(key.call_id, run.status).to_json())
        self.runs.append(run)
        run.pending, failed = yield from self._dispose_all_steps(todo, {c: run_id for c, _ in todo})
        if failed is not None:
            raise failed
        return run

    def _dispose_all_steps(
        self, todo: Sequence[tuple[str, bool]], runs: Mapping[str, str | None]
    ) -> StoreSteps[tuple[list[PendingCall], Exception | None]]:
        """Dispose of each call; the first failure is returned for raising once all are
        done. A store failure is raised at once: a call whose record could not be read
        is never answered from a guess (the link is out of step; reload). Any other
        failure (an ``unadvertised`` hook that raised) comes after the record was read
        and found no execution: that call is answered "not executed", in memory."""
        pending: list[PendingCall] = []
        failure: Exception | None = None
        for call_id, closed in todo:
            run_id = runs.get(call_id)
            try:
                pending.append((yield from self._dispose_steps(call_id, run_id, closed=closed)))
            except StoreError:
                raise
            except Exception as exc:
                failure = failure or exc
                pending.append(self._undisposable(call_id, run_id, exc))
        return pending, failure

    # -- a resume is sent once: claimed like a call ------------------------------------
    #
    # Before a resume run is sent, its record is written (the entries and the run id,
    # then a journal claim on ``agui.resume/<interrupted run>``, exactly once by the
    # store); when that run's save is durable, the record is answered. A record still
    # open when the thread is picked up again (a crash after sending, before saving;
    # another replica sending it now) is a resume that may have reached the agent:
    # never sent again blindly (docs/transport.md, "A resume is sent once").

    def sent_resume_steps(self) -> StoreSteps[SentResume | None]:
        """The resume of the interrupted last run that a process sent and no saved run
        answers (``None``: none was sent). One another replica is sending right now is
        waited for, up to ``in_flight_wait`` after it was sent; answered meanwhile, the
        thread moved on: :class:`StaleThread` (reload)."""
        last = self.runs[-1] if self.runs else None
        if last is None or last.status != "interrupt":
            return None
        record_id = resume_record_id(last.run_id)
        found: ClaimResult | None = yield from ask("lookup", self.thread_id, record_id)
        if found is None:
            return None
        deadline = (found.started_at or 0.0) + self.in_flight_wait
        pause = 0.02
        while found.claim is Claim.UNKNOWN and (now := time.time()) < deadline:
            yield Pause(min(pause, deadline - now))
            pause = min(pause * 2, 0.5)
            found = (yield from ask("lookup", self.thread_id, record_id)) or found
        if found.claim is Claim.ANSWERED:
            raise StaleThread(self.thread_id, self.version, self.version + 1)
        return (yield from self._recorded_resume_steps(record_id, found))

    def _recorded_resume_steps(self, record_id: str, found: ClaimResult) -> StoreSteps[SentResume]:
        records = yield from ask("decisions", self.thread_id, record_id)
        mine = [
            r
            for r in records
            if r.get("kind") == "resume" and r.get("fingerprint") == found.fingerprint
        ]
        record = mine[-1] if mine else {}
        last = self.runs[-1] if self.runs else None
        return SentResume(
            thread_id=self.thread_id,
            interrupted_run_id=last.run_id if last is not None else None,
            run_id=str(record.get("runId", "")),
            resume=[dict(e) for e in record.get("resume", ())],
            sent_at=datetime.fromtimestamp(found.started_at or 0.0, UTC),
        )

    def claim_resume_steps(self) -> StoreSteps[None]:
        """Claim the resume the prepared input carries, before it is sent, its entries
        and run id recorded with the claim (one write: only the claim that wins keeps
        its decision, so the ledger holds one entry per resume). Another process's
        claim found instead, nothing is sent (the prepared input is withdrawn): its run
        saved, :class:`StaleThread`; not saved, :class:`ResumeOutcomeUnknown`."""
        run_input = self.pending_input
        entries = run_input.get("resume")
        if not entries or self._resume_key is not None:
            return
        last = self.runs[-1] if self.runs else None
        record_id = resume_record_id(last.run_id if last is not None else None)
        fp = fingerprint({"runId": run_input["runId"], "resume": entries})
        key = JournalKey(self.thread_id, record_id, fp)
        decision = {
            "threadId": self.thread_id,
            "toolCallId": record_id,
            "kind": "resume",
            "fingerprint": fp,
            "runId": run_input["runId"],
            "resume": entries,
            "at": time.time(),
        }
        try:
            claim: ClaimResult = yield from ask("claim", key, tool=RESUME_TOOL, decision=decision)
        except BaseException:
            self._withdraw_run()  # not claimed (or not known to be): not sent
            raise
        if claim.claim is Claim.RUN:
            self._resume_key = key
            return
        self._withdraw_run()
        if claim.claim is Claim.ANSWERED:
            raise StaleThread(self.thread_id, self.version, self.version + 1)
        sent = yield from self._recorded_resume_steps(record_id, claim)
        raise ResumeOutcomeUnknown(unknown_resume(sent), sent)

    def resend(self, sent: SentResume) -> dict[str, Any]:
        """The input that sends ``sent`` again — its entries, under its run id — once the
        application established that it did not reach the agent (or that the agent
        keeps its runs by id); its record is answered when that run is saved."""
        run_input = self.next_input(resume=sent.resume, run_id=sent.run_id)
        fp = fingerprint({"runId": sent.run_id, "resume": sent.resume})
        self._resume_key = JournalKey(self.thread_id, resume_record_id(sent.interrupted_run_id), fp)
        return run_input

    # -- the store: save each run, restore a thread ----------------------------------

    def _save_steps(self, run: RunResult, todo: Sequence[tuple[str, bool]]) -> StoreSteps[None]:
        """Save the run; of the messages, only those after the ones the last saved
        version holds unchanged are written (``keep``)."""
        if self.store is None:
            return
        # what changed is encoded; what did not is reused (the reducer knows which is which)
        try:
            keep, encoded = self.thread.encoded(self._saved)
        except TypeError as exc:
            raise not_storable(exc) from None
        snapshot = snapshot_of(
            encoded.blobs[keep:],
            keep,
            self.thread.state,
            sorted(self._resumed),
            run_to_json(run, todo),
        )
        self.version = yield from ask("save_run", self.thread_id, self.version, snapshot)
        self._saved = encoded

    def restore_steps(self) -> StoreSteps[bool]:
        """Load the thread from the store if not done yet: ``True`` when the store held it.

        The constructor does it for a synchronous store; an async one needs ``await
        AsyncDriver(conversation).restore()`` first. A failure stops the conversation (reload).
        """
        if not self._unloaded:
            return self.version > 0
        record = yield from ask("load", self.thread_id)
        self._unloaded = False
        if record is None:
            return False
        if self._given_history:
            raise UsageError(
                f"thread {self.thread_id!r} is restored from the store: messages= and state= "
                "would replace its history, leave them out"
            )
        yield from self._restored_steps(record)
        return True

    def _restored_steps(self, record: ThreadRecord) -> StoreSteps[None]:
        """Pick the thread up where the last saved run left it: its unanswered calls are
        disposed of as after a restart (journal answers reused, started executions never re-run,
        decisions kept), except those an interrupt of the last run gates.
        """
        self.thread = ThreadState(
            record.messages,
            record.state,
            on_warning=self._updates.append,
            max_depth=(self.limits or Limits()).max_depth,
        )
        self.version = record.version
        self._saved = self.thread.encoded(NOTHING_ENCODED)[1]
        self._resumed = set(record.resumed)
        self.runs = [run_from_json(r) for r in record.runs]
        closed: dict[str, bool] = {}
        owner: dict[str, str | None] = {}
        for raw in record.runs:
            for entry in raw.get("calls", ()):
                closed[entry["id"]] = bool(entry.get("closed", True))
                owner[entry["id"]] = raw.get("runId")
        last = self.runs[-1] if self.runs else None
        gated = (
            {i["toolCallId"] for i in last.interrupts if "toolCallId" in i}
            if last is not None and last.status == "interrupt"
            else set()
        )
        todo = [
            (c, closed.get(c, True))
            for c in self.thread.unanswered_calls()
            if c not in gated and c not in self._resumed
        ]
        pending, failure = yield from self._dispose_all_steps(todo, owner)
        if last is not None:
            last.pending = pending
        self._updates.clear()  # what restoring did is the state, not news for a UI
        if failure is not None:
            raise failure

    def take_updates(self) -> list[Update]:
        """Updates produced since last asked (disposition calls produce them too)."""
        out = self._updates[:]
        self._updates.clear()
        return out

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.thread.messages

    @property
    def state(self) -> Any:
        return self.thread.state


def _keeps_threads(store: object) -> bool:
    """Whether ``store`` keeps threads (a Store, sync or async), not only calls."""
    return store is not None and (is_async_store(store) or hasattr(store, "save_run"))
