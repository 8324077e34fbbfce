"""The sans-I/O emitter: every event of one run, built and judged before it is sent.

Theory of operation (h11's habit: the rules in one synchronous object, no I/O).
:class:`Emitter` builds the wire dict of every event of one run and judges it
*before* handing it out, with the same machinery a consumer uses: enforcement
(a malformed or unrecognised member is refused), chunk expansion
(:class:`~agui_tools.wire._expand.Expander`) and the strict
:class:`~agui_tools.wire._verify.Verifier`. A refusal is the agent's bug, so it
raises :class:`UsageError` naming the rule and nothing is emitted.

The emitter also keeps its own books — what is open, which calls were started
and answered, which frontend tools were advertised — so the common mistakes
are refused with a precise message and the verifier stays the backstop. If
the backstop ever fires, the two sets of books disagree and the only honest
continuation is ``RUN_ERROR``: the emitter is *poisoned* and refuses
everything else.

Chunk lanes. A consumer closes a chunk stream when a message, tool-call, step,
state, custom or reasoning event arrives in its lane (CHUNK-11). The emitter
therefore refuses any event that would close a chunk stream the agent is still
writing: a chunked item owns its lane until its block ends. Which lanes an
event closes is not decided here: the emitter feeds everything it sends to
its own :class:`~agui_tools.wire._expand.Expander` — the consumer's — and asks it
(``closures``) before sending, so producer and consumer judge lanes by the
same rules, untagged continuations (SUB-10, SUB-12) included. Items in other
lanes (subagent scopes) and the events that stand aside (``RAW``, activity,
``SUBAGENT_STARTED``) are unaffected. A chunked item cannot be abandoned on
the wire — the next event in its lane, ``RUN_ERROR`` included, closes it on
the consumer's side — so the explicit spelling is the default.

Abandoned, not closed. An item whose block is left by an exception is
*abandoned* (:meth:`Emitter.abandon`): closing a tool call declares its
argument text complete (TOOL-5), and text cut off by an exception is not. If
the exception ends the run, ``RUN_ERROR`` ends the item with it. If the agent
catches the exception and the run ends cleanly anyway, the item is closed then
— a call cut off mid-arguments closes like any other (RUN-6), and what to do
with arguments that do not parse is the application's decision (TOOL-6).

The async face agent code holds is :mod:`agui_tools.agent._run`; what ends a run is
decided by :mod:`agui_tools.agent._runner`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import orjson

from .._errors import ProtocolViolation, UsageError
from .._version import PROTOCOL_VERSION
from ..wire._enforce import shared_enforcer
from ..wire._expand import Expander
from ..wire._kinds import SCOPES, STREAMED, WireEvent, message_kind
from ..wire._lifecycle import RunEvent, RunPhase, move, refusal
from ..wire._verify import Limits, Verifier
from ._books import (
    LIVE_RULE,
    NOUN,
    ItemState,
    KnownCall,
    Opened,
    Owner,
    as_list,
    emitter_refusal,
    json_numbers,
    lane_error,
    open_key,
)
from ._subagents import SubagentScopes

__all__ = ["Emitter", "Owner"]

# the producer side logs as one, whichever of its modules speaks
log = logging.getLogger("agui_tools.agent")


# Only JSON-native values: a datetime or dataclass would be encoded as
# something other than what was verified.
_STRICT_JSON: Final = (
    orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


class Emitter(SubagentScopes):
    """The events of one run, built and judged before they are handed out.

    Args:
        run_input: the enforced ``RunAgentInput`` wire dict the run answers
            (``decode_run_input(...).wire``): its ids, its advertised frontend
            tools and its history (so results and reopens are judged against
            the whole thread).
        verify: judge every event with enforcement and the strict verifier.
            ``False`` keeps only the emitter's own bookkeeping (its books and
            the chunk lanes: those refusals stay).
        limits: the verifier's and the expander's resource limits.

    Every method returns the wire events to send, in order (possibly none:
    closing a chunked item sends nothing). A method that raises
    :class:`UsageError` emitted nothing of its own; events an earlier partial
    operation verified are handed out by the next call, so order is kept.
    """

    def __init__(
        self,
        run_input: Mapping[str, Any],
        *,
        verify: bool = True,
        limits: Limits | None = None,
    ) -> None:
        self.input = run_input
        self.thread_id: str = run_input["threadId"]
        self.run_id: str = run_input["runId"]
        self.frontend_tools = frozenset(t["name"] for t in run_input.get("tools") or ())
        history = run_input.get("messages") or ()
        self.verify = verify
        self._max_depth = (limits or Limits()).max_depth
        self._verifier = (
            Verifier(
                strict=True,
                thread_id=self.thread_id,
                frontend_tools=self.frontend_tools,
                history=history,
                limits=limits,
            )
            if verify
            else None
        )
        # the consumer's chunk lanes, fed everything sent; it files untagged continuations
        # by asking who owns what — the verifier, or without one the emitter's own books
        self._expander = Expander(
            max_lanes=(limits or Limits()).max_lanes,
            owner_of=self._owner_of if self._verifier is None else self._verifier.owner_of,
        )
        self._phase = RunPhase.NEW
        self._open: dict[tuple[str, Owner, str], Opened] = {}
        self._out: list[WireEvent] = []
        self._poison: UsageError | None = None
        # thread knowledge (history + this run)
        self._messages: dict[str, str] = {}  # message id → kind that minted it
        self._texts: dict[str, tuple[str, str | None, Owner]] = {}  # id → role, name, owner
        self._calls: dict[str, KnownCall] = {}
        self._answered: set[str] = set()
        # this run
        self._started: list[str] = []
        self._started_set: set[str] = set()
        self._subagents_done: set[str] = set()
        self._subagent_parent: dict[str, Owner] = {}
        self._tags: set[str] = set()
        self._seed(history)

    # -- introspection -------------------------------------------------------------

    @property
    def phase(self) -> RunPhase:
        """``new``, ``active``, ``finished`` (RUN_FINISHED sent) or ``errored``: the run
        lifecycle's phase (:data:`~agui_tools.wire._lifecycle.RUN_MOVES`), one run's worth."""
        return self._phase

    @property
    def pending_tool_call_ids(self) -> list[str]:
        """Calls this run started and did not answer, in the order they were made (FE-5)."""
        return [c for c in self._started if c not in self._answered]

    def is_open(self, kind: str, ident: str, owner: Owner = None) -> bool:
        entry = self._open.get(open_key(kind, ident, owner))
        return entry is not None and entry.state == "open"

    def call_name(self, call_id: str) -> str | None:
        call = self._calls.get(call_id)
        return call.name if call is not None else None

    # -- run lifecycle -------------------------------------------------------------

    def start(self) -> list[WireEvent]:
        """``RUN_STARTED`` with our own ``protocolVersion`` (RUN-2), never the input's."""
        if self._phase is not RunPhase.NEW:  # one emitter, one run
            raise emitter_refusal("start() was already called for this run.", rule="RUN-13")
        ev: WireEvent = {
            "type": "RUN_STARTED",
            "threadId": self.thread_id,
            "runId": self.run_id,
            "protocolVersion": PROTOCOL_VERSION,
        }
        if self.input.get("parentRunId") is not None:
            ev["parentRunId"] = self.input["parentRunId"]
        self._send(ev)
        self._phase = move(self._phase, "RUN_STARTED")
        return self._drain()

    def finish(
        self, *, result: Any = None, usage: Sequence[Mapping[str, Any]] = ()
    ) -> list[WireEvent]:
        """End the run as completed: success, naming the calls left pending (FE-5).

        Anything still *live* — a block still running in another task, a
        handle never closed — is the agent's bug and refused. Items abandoned
        by an exception the agent caught are closed first (RUN-6's reasoning).
        """
        self._require_active("RUN_FINISHED")
        live = [e for e in self._open.values() if e.state == "open"]
        if live:
            first = live[0]
            raise emitter_refusal(
                f"the run cannot finish while {first.describe()} is still open"
                + (f" (and {len(live) - 1} more)" if len(live) > 1 else "")
                + "; every item, step and subagent must be closed before RUN_FINISHED.",
                rule=LIVE_RULE[first.kind],
            )
        self._close_everything("finish")
        pending = self.pending_tool_call_ids
        outcome = {"type": "success", "pendingToolCallIds": pending} if pending else None
        self._run_finished(outcome, result, usage)
        return self._drain()

    def cancel(self, *, usage: Sequence[Mapping[str, Any]] = ()) -> list[WireEvent]:
        """End the run as cancelled (RUN-5), closing everything open first (RUN-6).

        A subagent still active is closed with ``SUBAGENT_ERROR`` code
        ``"cancelled"``: the subagent outcomes are success and suspended, and a
        stopped invocation is neither.
        """
        self._require_active("RUN_FINISHED")
        self._close_everything("cancel")
        self._run_finished({"type": "cancelled"}, None, usage)
        return self._drain()

    def interrupt(
        self, interrupts: Sequence[Mapping[str, Any]], *, usage: Sequence[Mapping[str, Any]] = ()
    ) -> list[WireEvent]:
        """End the run with the interrupt outcome.

        Everything open is closed; every active subagent ends ``suspended``,
        naming the interrupts attributed to it (SUB-18). A run that left an
        advertised frontend call unanswered must not report itself interrupted
        (FE-3): that is refused before anything is sent.
        """
        self._require_active("RUN_FINISHED")
        if not all(isinstance(i, Mapping) for i in interrupts):
            raise emitter_refusal("each interrupt is an object (a wire Interrupt).", rule="RUN-4")
        items = [dict(i) for i in interrupts]
        if not items:
            raise emitter_refusal(
                "an interrupt outcome carries at least one interrupt.", rule="INT-1"
            )
        seen: set[Any] = set()
        for n, item in enumerate(items):
            try:
                _, warnings = shared_enforcer(self._max_depth).definition(
                    "Interrupt", item, f"/outcome/interrupts/{n}"
                )
            except ProtocolViolation as exc:
                raise emitter_refusal(f"malformed interrupt: {exc}", rule=exc.rule) from None
            if warnings:
                raise emitter_refusal(
                    f"interrupt has unrecognised material: {warnings[0]}", rule="PROC-3"
                )
            ident = item.get("id")
            if ident in seen:
                raise emitter_refusal(
                    f"interrupt id {ident!r} is used twice in one run.", rule="INT-3"
                )
            seen.add(ident)
        frontend = [
            c for c in self.pending_tool_call_ids if self.call_name(c) in self.frontend_tools
        ]
        if frontend:
            raise emitter_refusal(
                f"advertised frontend tool call(s) {', '.join(map(repr, frontend))} are "
                "unanswered: a run that stops on a frontend call finishes with the success outcome "
                "(the application answers in the next run), never as interrupted.",
                rule="FE-3",
            )
        self._close_everything("interrupt", interrupts=items)
        self._run_finished({"type": "interrupt", "interrupts": items}, None, usage)
        return self._drain()

    def error(
        self,
        message: str,
        *,
        code: str | None = None,
        usage: Sequence[Mapping[str, Any]] = (),
    ) -> list[WireEvent]:
        """``RUN_ERROR``: the run failed. Whatever is open is abandoned with it (RUN-15).

        Allowed first (a run that failed before it began, RUN-1), while active,
        and once after ``RUN_FINISHED`` (a late failure, RUN-12) — and always
        when the emitter is poisoned, since it is the one honest ending left.
        """
        rule = refusal(self._phase, "RUN_ERROR")
        if rule is not None:
            raise emitter_refusal("the run already ended with RUN_ERROR.", rule=rule)
        for entry in self._open.values():
            entry.state = "abandoned"
        ev: WireEvent = {"type": "RUN_ERROR", "message": message}
        if code is not None:
            ev["code"] = code
        if usage:
            ev["usage"] = as_list(usage)
            json_numbers(ev)
        self._send(ev, trusted=self._poison is not None)
        self._open.clear()
        self._phase = move(self._phase, "RUN_ERROR")
        return self._drain()

    def _run_finished(
        self, outcome: WireEvent | None, result: Any, usage: Sequence[Mapping[str, Any]]
    ) -> None:
        ev: WireEvent = {"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.run_id}
        if outcome is not None:
            ev["outcome"] = outcome
        if result is not None:
            ev["result"] = result
        if usage:
            ev["usage"] = as_list(usage)
        json_numbers(ev)
        self._send(ev)
        self._phase = move(self._phase, "RUN_FINISHED")

    def _close_everything(self, mode: str, interrupts: Sequence[WireEvent] = ()) -> None:
        """Close what is open, newest first, so nothing closes before what it contains.

        Chunked items first of all: they send nothing (the consumer closes
        their streams when the lane closes) but must stop owning their lanes
        before the other closing events go out.
        """
        for entry in list(self._open.values()):
            if entry.chunked:
                self._drop(entry)
        for entry in reversed(list(self._open.values())):
            if entry.kind == "subagent":
                if mode == "interrupt":
                    mine = [i["id"] for i in interrupts if i.get("subagentRunId") == entry.ident]
                    outcome: WireEvent = {"type": "suspended"}
                    if mine:
                        outcome["interruptIds"] = mine
                    self._subagent_terminal(entry, {"outcome": outcome}, error=False)
                else:
                    self._subagent_terminal(
                        entry,
                        {"message": "cancelled with the run", "code": "cancelled"},
                        error=True,
                    )
            else:
                if entry.state == "abandoned" and mode == "finish":
                    # a cancelled run (a stop, RUN-5) cuts what it interrupts by design
                    log.warning(
                        "closing %s, abandoned by an exception, as the run ends cleanly; its "
                        "content may be incomplete",
                        entry.describe(),
                    )
                self._close_entry(entry)

    # -- streamed items: text messages, tool calls, reasoning messages ---------------

    def text_start(
        self,
        message_id: str,
        *,
        role: str = "assistant",
        name: str | None = None,
        owner: Owner = None,
        chunked: bool = False,
    ) -> list[WireEvent]:
        """Open a text message (or its first chunk). Reopening a closed one appends (TEXT-2)."""
        self._require_active()
        self._check_owner(owner)
        known = self._texts.get(message_id)
        if known is not None:
            k_role, k_name, k_owner = known
            if role != k_role or (name is not None and name != k_name):
                raise emitter_refusal(
                    f"reopening text message {message_id!r} as role={role!r} name={name!r}, but it "
                    f"was opened as role={k_role!r} name={k_name!r}; a reopening start must agree.",
                    rule="TEXT-3",
                )
            if owner is not None and owner != k_owner:
                raise emitter_refusal(
                    f"reopening text message {message_id!r} under {owner!r}, but it belongs to "
                    f"{k_owner or 'the parent agent'!r}.",
                    rule="TEXT-4",
                )
        fields: WireEvent = {"role": role}
        if name is not None:
            fields["name"] = name
        self._open_item("text", message_id, owner, chunked, fields)
        if known is None:
            self._texts[message_id] = (role, name, owner)
        return self._drain()

    def text_content(self, message_id: str, delta: str) -> list[WireEvent]:
        self._delta("text", message_id, delta)
        return self._drain()

    def text_end(self, message_id: str) -> list[WireEvent]:
        self._close_item("text", message_id)
        return self._drain()

    def tool_start(
        self,
        call_id: str,
        name: str,
        *,
        parent_message_id: str | None = None,
        owner: Owner = None,
        chunked: bool = False,
    ) -> list[WireEvent]:
        """Open a tool call. Calling a frontend tool is fine; answering one is not (FE-2)."""
        self._require_active()
        self._check_owner(owner)
        effective = owner
        if parent_message_id is not None:
            parent = self._texts.get(parent_message_id)
            if parent is not None:
                if owner is not None and owner != parent[2]:
                    raise emitter_refusal(
                        f"tool call {call_id!r} is attributed to {owner!r} but its message "
                        f"{parent_message_id!r} belongs to {parent[2] or 'the parent agent'!r}; a "
                        "call inherits the attribution of its message.",
                        rule="SUB-12",
                    )
                effective = parent[2]
        known = self._calls.get(call_id)
        if known is not None and (
            known.name != name or known.parent != parent_message_id or known.owner != effective
        ):
            raise emitter_refusal(
                f"reopening tool call {call_id!r} as {name!r} (parent {parent_message_id!r}, owner "
                f"{effective!r}) but it was made as {known.name!r} (parent {known.parent!r}, owner "
                f"{known.owner!r}); a reopening start must agree.",
                rule="TOOL-8",
            )
        fields: WireEvent = {"toolCallName": name}
        if parent_message_id is not None:
            fields["parentMessageId"] = parent_message_id
        self._open_item("tool", call_id, owner, chunked, fields)
        self._calls.setdefault(call_id, KnownCall(name, parent_message_id, effective))
        if call_id not in self._started_set:
            self._started_set.add(call_id)
            self._started.append(call_id)
        return self._drain()

    def tool_args(self, call_id: str, delta: str) -> list[WireEvent]:
        self._delta("tool", call_id, delta)
        return self._drain()

    def tool_end(self, call_id: str) -> list[WireEvent]:
        """Close a call: its argument text is complete (TOOL-6: complete, not valid)."""
        self._close_item("tool", call_id)
        return self._drain()

    def tool_result(
        self,
        call_id: str,
        content: str | Sequence[Mapping[str, Any]],
        *,
        message_id: str,
        owner: Owner = None,
    ) -> list[WireEvent]:
        """Answer an agent-side call in-stream (FE-12); mints tool message ``message_id``."""
        self._require_active()
        self._check_owner(owner)
        ids = f"tool call {call_id!r}"
        call = self._calls.get(call_id)
        if call is None:
            raise emitter_refusal(
                f"{ids} was never made in this thread; a result answers a call.", rule="TOOL-10"
            )
        entry = self._open.get(open_key("tool", call_id))
        if entry is not None:
            raise emitter_refusal(
                f"{ids} is still {'open' if entry.state == 'open' else 'abandoned mid-arguments'}; "
                "a result answers a closed call.",
                rule="TOOL-10",
            )
        if call_id in self._answered:
            raise emitter_refusal(f"{ids} already has a result; a call has one.", rule="TOOL-10")
        if call.name in self.frontend_tools:
            raise emitter_refusal(
                f"{ids} is to {call.name!r}, a frontend tool the run input advertised: the "
                "application executes it and answers in the next run's input; the producer must "
                "not answer it.",
                rule="FE-2",
            )
        self._check_new_message(message_id, "tool")
        ev: WireEvent = {
            "type": "TOOL_CALL_RESULT",
            "messageId": message_id,
            "toolCallId": call_id,
            "content": as_list(content),
        }
        self._tag(ev, owner)
        json_numbers(ev)
        self._send(ev)
        self._answered.add(call_id)
        self._messages[message_id] = "tool"
        return self._drain()

    def reasoning_message_start(
        self, message_id: str, *, owner: Owner = None, chunked: bool = False
    ) -> list[WireEvent]:
        self._require_active()
        self._check_owner(owner)
        self._open_item("reasoning", message_id, owner, chunked, {})
        return self._drain()

    def reasoning_content(self, message_id: str, delta: str) -> list[WireEvent]:
        self._delta("reasoning", message_id, delta)
        return self._drain()

    def reasoning_message_end(self, message_id: str) -> list[WireEvent]:
        self._close_item("reasoning", message_id)
        return self._drain()

    def abandon(self, kind: str, ident: str, owner: Owner = None) -> None:
        """Leave an item open on purpose: its content may be cut off (see the module doc).

        Sends nothing. A chunked item simply stops owning its lane — the
        consumer closes its stream with the next event there.
        """
        entry = self._open.get(open_key(kind, ident, owner))
        if entry is None or entry.state != "open":
            return
        if entry.chunked:
            self._drop(entry, "abandoned")
        else:
            entry.state = "abandoned"

    def _open_item(
        self, kind: str, ident: str, owner: Owner, chunked: bool, fields: Mapping[str, Any]
    ) -> None:
        spec = STREAMED[kind]
        key = open_key(kind, ident)
        current = self._open.get(key)
        if current is not None:
            raise emitter_refusal(
                f"{spec.noun} {ident!r} is already open "
                f"({'abandoned by an exception' if current.state == 'abandoned' else 'close it first'});"
                " an item whose id is open cannot be opened again.",
                rule=spec.opened_twice,
            )
        if kind != "tool":
            self._check_new_message(ident, kind, reopen=True)
        ev: WireEvent = {"type": spec.chunk if chunked else spec.start, spec.id_field: ident}
        if not chunked:
            ev.update(spec.start_fields)
        ev.update(fields)
        self._tag(ev, owner)
        entry = Opened(kind, ident, owner, chunked)
        self._send(ev)
        self._open[key] = entry
        if kind != "tool":
            self._messages[ident] = kind
        if owner is not None:
            self._tags.add(owner)

    def _delta(self, kind: str, ident: str, delta: str) -> None:
        self._require_active()
        spec = STREAMED[kind]
        entry = self._open.get(open_key(kind, ident))
        if entry is None or entry.state != "open":
            why = "abandoned by an exception" if entry is not None else "not open"
            raise emitter_refusal(
                f"cannot add to {spec.noun} {ident!r}: it is {why}.",
                rule=spec.not_open,
            )
        ev: WireEvent = {
            "type": spec.chunk if entry.chunked else spec.content,
            spec.id_field: ident,
            "delta": delta,
        }
        self._tag(ev, entry.owner)
        self._send(ev)

    def _close_item(self, kind: str, ident: str) -> None:
        self._require_active()
        spec = STREAMED[kind]
        entry = self._open.get(open_key(kind, ident))
        if entry is None:
            raise emitter_refusal(
                f"cannot close {spec.noun} {ident!r}: it is not open.",
                rule=spec.not_open,
            )
        self._close_entry(entry)

    def _close_entry(self, entry: Opened) -> None:
        """Send the event that closes ``entry`` (none for a chunked item) and forget it."""
        if entry.chunked:
            self._drop(entry)
            return
        if entry.kind in STREAMED:
            spec = STREAMED[entry.kind]
            ev: WireEvent = {"type": spec.end, spec.id_field: entry.ident}
        elif entry.kind in ("span", "step"):
            scope = SCOPES[entry.kind]
            ev = {"type": scope.end, scope.id_field: entry.ident}
        else:  # pragma: no cover - subagents close through _subagent_terminal
            raise AssertionError(entry.kind)
        # a continuation MAY omit its tag (SUB-10); it must once the owner has ended
        owner = entry.owner if entry.owner not in self._subagents_done else None
        if entry.kind == "step":
            owner = entry.owner  # a step's close carries its start's attribution (SUB-13)
        self._tag(ev, owner)
        self._send(ev)
        del self._open[entry.key]
        entry.state = "closed"

    def _drop(self, entry: Opened, state: ItemState = "closed") -> None:
        """A chunked item stops: nothing is sent, its lane stops being reserved."""
        self._open.pop(entry.key, None)
        entry.state = state

    # -- spans, steps, subagents -------------------------------------------------------

    def reasoning_start(self, span_id: str, *, owner: Owner = None) -> list[WireEvent]:
        """Open a reasoning span; its messages carry their own ids (spans namespace nothing)."""
        self._open_simple("span", span_id, owner)
        return self._drain()

    def reasoning_end(self, span_id: str) -> list[WireEvent]:
        self._close_simple("span", span_id, None)
        return self._drain()

    def step_start(self, name: str, *, owner: Owner = None) -> list[WireEvent]:
        """Open a step; steps are per owner, so parent and subagent may share a name (SUB-13)."""
        self._open_simple("step", name, owner)
        return self._drain()

    def step_end(self, name: str, *, owner: Owner = None) -> list[WireEvent]:
        self._close_simple("step", name, owner)
        return self._drain()

    def _open_simple(self, kind: str, ident: str, owner: Owner) -> None:
        self._require_active()
        self._check_owner(owner)
        scope = SCOPES[kind]
        key = open_key(kind, ident, owner)
        if key in self._open:
            raise emitter_refusal(
                f"{scope.noun} {ident!r} is already open.", rule=scope.opened_twice
            )
        ev: WireEvent = {"type": scope.start, scope.id_field: ident}
        self._tag(ev, owner)
        self._send(ev)
        self._open[key] = Opened(kind, ident, owner)
        if owner is not None:
            self._tags.add(owner)

    def _close_simple(self, kind: str, ident: str, owner: Owner) -> None:
        self._require_active()
        entry = self._open.get(open_key(kind, ident, owner))
        if entry is None:
            raise emitter_refusal(
                f"cannot close {NOUN[kind]} {ident!r}: it is not open.",
                rule=SCOPES[kind].not_open,
            )
        self._close_entry(entry)

    # -- standalone events -------------------------------------------------------------

    def state_snapshot(self, snapshot: Any, *, owner: Owner = None) -> list[WireEvent]:
        """Replace the run's state (STATE-2). From a subagent: provenance only (SUB-16)."""
        return self._standalone({"type": "STATE_SNAPSHOT", "snapshot": snapshot}, owner)

    def state_delta(
        self, patch: Sequence[Mapping[str, Any]], *, owner: Owner = None
    ) -> list[WireEvent]:
        """A JSON Patch against the current state (the input's, until our first snapshot)."""
        return self._standalone({"type": "STATE_DELTA", "delta": as_list(patch)}, owner)

    def custom(self, name: str, value: Any, *, owner: Owner = None) -> list[WireEvent]:
        """Application-defined material; never a carrier for standard semantics (SEC-4)."""
        return self._standalone({"type": "CUSTOM", "name": name, "value": value}, owner)

    def raw(self, event: Any, *, source: str | None = None, owner: Owner = None) -> list[WireEvent]:
        ev: WireEvent = {"type": "RAW", "event": event}
        if source is not None:
            ev["source"] = source
        return self._standalone(ev, owner)

    def activity_snapshot(
        self,
        message_id: str,
        activity_type: str,
        content: Mapping[str, Any],
        *,
        replace: bool | None = None,
        owner: Owner = None,
    ) -> list[WireEvent]:
        self._require_active()
        self._check_new_message(message_id, "activity", reopen=True)
        ev: WireEvent = {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": message_id,
            "activityType": activity_type,
            "content": content,
        }
        if replace is not None:
            ev["replace"] = replace
        out = self._standalone(ev, owner)
        self._messages[message_id] = "activity"
        return out

    def activity_delta(
        self,
        message_id: str,
        activity_type: str,
        patch: Sequence[Mapping[str, Any]],
        *,
        owner: Owner = None,
    ) -> list[WireEvent]:
        ev: WireEvent = {
            "type": "ACTIVITY_DELTA",
            "messageId": message_id,
            "activityType": activity_type,
            "patch": as_list(patch),
        }
        return self._standalone(ev, owner)

    def messages_snapshot(self, messages: Sequence[Mapping[str, Any]]) -> list[WireEvent]:
        """Restate the conversation (RUN-14); run-level, so it closes every chunk lane."""
        out = self._standalone({"type": "MESSAGES_SNAPSHOT", "messages": as_list(messages)}, None)
        self._seed(messages)
        return out

    def _standalone(self, ev: WireEvent, owner: Owner) -> list[WireEvent]:
        self._require_active()
        self._check_owner(owner)
        self._tag(ev, owner)
        json_numbers(ev)
        self._send(ev)
        if owner is not None:
            self._tags.add(owner)
        return self._drain()

    # -- checks and sending --------------------------------------------------------------

    def _require_active(self, event: RunEvent = "ANY_EVENT") -> None:
        """Refuse ``event`` (a run-level move; any other event by default) unless the
        lifecycle table allows it now, and everything but RUN_ERROR once poisoned."""
        if self._poison is not None:
            raise emitter_refusal(
                "an earlier event was refused by verification, so this run can only end with "
                f"RUN_ERROR (error()). The refusal: {self._poison}",
                rule=self._poison.rule,
            )
        rule = refusal(self._phase, event)
        if rule is None:
            return
        if self._phase is RunPhase.NEW:
            raise emitter_refusal("the run has not started: call start() first.", rule=rule)
        closed_by = "RUN_FINISHED" if self._phase is RunPhase.FINISHED else "RUN_ERROR"
        raise emitter_refusal(
            f"the run already ended with {closed_by}; nothing more may be emitted for it.",
            rule=rule,
        )

    def _check_owner(self, owner: Owner) -> None:
        if owner is not None and owner in self._subagents_done:
            raise emitter_refusal(
                f"subagent invocation {owner!r} has ended; nothing more can be attributed to it "
                "(its scope is no longer usable).",
                rule="SUB-5",
            )

    def _check_new_message(self, ident: str, kind: str, *, reopen: bool = False) -> None:
        minted = self._messages.get(ident)
        if minted is not None and (minted != kind or not reopen):
            raise emitter_refusal(
                f"messageId {ident!r} already identifies a {minted} message of this thread; a "
                "messageId is unique within its thread.",
                rule="EVT-8",
            )

    @staticmethod
    def _tag(ev: WireEvent, owner: Owner) -> None:
        if owner is not None:
            ev["subagentRunId"] = owner

    def _drain(self) -> list[WireEvent]:
        out, self._out = self._out, []
        return out

    def _send(self, ev: WireEvent, *, trusted: bool = False) -> None:
        """Check lanes, enforce, verify — then queue. Nothing changes if a check fails.

        The checks that can refuse (lanes, enforcement) change nothing; only
        then is the event fed to the expander and the verifier, whose refusal
        poisons the emitter. ``trusted`` skips the lanes and the verifier (a
        RUN_ERROR from a poisoned emitter, whose state is no longer
        meaningful); enforcement still runs.
        """
        if not trusted:
            self._check_lanes(ev)
        if self.verify:
            self._enforce(ev)
        if not trusted:
            try:
                expanded = self._expander.feed(ev)
                if self._verifier is not None:
                    for item in expanded:
                        self._verifier.feed(item)
            except ProtocolViolation as exc:
                self._poison = emitter_refusal(
                    f"verification refused the event: {exc}", rule=exc.rule
                )
                raise self._poison from exc
        self._out.append(ev)

    def _enforce(self, ev: WireEvent) -> None:
        """Refuse what a consumer would reject, strip or drop, and what is not JSON."""
        try:
            clean, warnings = shared_enforcer(self._max_depth).event(ev)
        except ProtocolViolation as exc:
            raise emitter_refusal(
                f"refusing to emit a malformed event: {exc}", rule=exc.rule
            ) from None
        if clean is None or warnings:
            what = str(warnings[0]) if warnings else f"an event of type {ev['type']!r}"
            raise emitter_refusal(
                f"refusing to emit material a consumer would strip or drop: {what}",
                rule=warnings[0].rule if warnings else "PROC-9",
            )
        try:
            orjson.dumps(ev, option=_STRICT_JSON)
        except TypeError as exc:
            raise emitter_refusal(
                f"refusing to emit {ev['type']}: a value is not JSON ({exc}).", rule="TRANS-4"
            ) from None

    # -- chunk lanes: the consumer's expander decides, the emitter refuses ----------------

    def _check_lanes(self, ev: WireEvent) -> None:
        """Refuse ``ev`` if it would close a chunk stream its item is still writing.

        Which lanes ``ev`` closes is the expander's answer (``closures``); a
        stream whose item ended — closed, abandoned — may close.
        """
        for lane in self._expander.closures(ev):
            held = self._writing(lane)
            if held is not None:
                raise lane_error(ev, held)

    def _writing(self, lane: Owner) -> Opened | None:
        """The item whose chunk stream ``lane`` holds, if the agent is still writing it."""
        stream = self._expander.stream_in(lane)
        if stream is None:
            return None
        entry = self._open.get(open_key(*stream))
        return entry if entry is not None and entry.state == "open" else None

    def _owner_of(self, kind: str, ident: str) -> tuple[bool, Owner]:
        """Who owns item ``ident`` — the verifier's ``owner_of`` from the emitter's books,
        for the expander when there is no verifier: any known message, an open item, a
        call by its message's owner (SUB-12)."""
        if kind == "text":
            text = self._texts.get(ident)
            return (True, text[2]) if text is not None else (False, None)
        entry = self._open.get(open_key(kind, ident))
        if entry is None:
            return False, None
        return True, self._calls[ident].owner if kind == "tool" else entry.owner

    def _seed(self, messages: Iterable[Mapping[str, Any]]) -> None:
        """Thread knowledge from history (or a snapshot we sent): ids, calls, answers."""
        for msg in messages:
            ident, role = msg["id"], msg["role"]
            kind = message_kind(role)
            self._messages.setdefault(ident, kind)
            owner = msg.get("subagentRunId")
            if kind == "text":
                self._texts.setdefault(ident, (role, msg.get("name"), owner))
            if role == "assistant":
                for call in msg.get("toolCalls") or ():
                    self._calls.setdefault(
                        call["id"], KnownCall(call["function"]["name"], ident, owner)
                    )
            elif role == "tool":
                self._answered.add(msg["toolCallId"])
