"""Verification: the sequence rules of a stream, after chunk expansion.

Theory of operation (the h11 habit: every rule that decides whether a stream
is acceptable lives in this file, next to the rule ID that states it).

The verifier consumes expanded events in arrival order and keeps:

* the **stream** phase: before the first event, a run active, a run closed by
  ``RUN_FINISHED`` or by ``RUN_ERROR`` (``events/lifecycle``), moved along the
  lifecycle table the emitter shares (:mod:`~agui_tools.wire._lifecycle`);
* **run-scoped** tracking, reset by every ``RUN_STARTED`` (RUN-15): the open
  streamed items — text messages, tool calls, reasoning messages (one table
  keyed by item kind, since the streaming pattern is one discipline), plus
  reasoning spans, steps per owner, and active subagent invocations;
* **thread-scoped** knowledge that crosses runs: every message id and tool call
  seen (from the run input's history and the stream), which calls have results,
  so that results, reopens and ``pendingToolCallIds`` can be judged.

Fatal sequences raise :class:`ProtocolViolation` with the rule's ID. The
"beyond the official client" checks — rules a consumer may skip but that cost
users real bugs (TOOL-8, TOOL-10, EVT-8, FE-2, FE-3, FE-5, SUB-4, SUB-14) — go
through :meth:`Verifier._beyond`: a warning by default, a violation in strict
mode.

The verifier never repairs: it does not close what a producer left open, does
not synthesize ``RUN_FINISHED`` for a truncated run (RUN-9, TRANS-2), and does
not invent an item an orphaned fragment names (REAS-4).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from .._errors import LimitExceeded, ProtocolViolation, ProtocolWarning, describe_value
from .._version import PROTOCOL_VERSION, parse_version
from ._kinds import (
    CHUNK_TYPES,
    SPAN,
    STEP,
    STREAMED,
    SUBAGENT,
    Handler,
    WireEvent,
    event_types,
    handlers,
    message_kind,
)
from ._lifecycle import (
    REJECTED,
    STREAM_ENDED,
    RunEvent,
    RunPhase,
    RunStatus,
    RunSummary,
    move,
    refusal,
    run_event,
)
from ._limits import Limits
from ._restated import beside_its_call, restated_slips
from ._verify_scopes import ScopeRules

# Limits, RunStatus, RunSummary and beside_its_call live in _limits / _lifecycle /
# _restated; named here too, where the verifier's callers have always found them
__all__ = [
    "PRODUCER_MUSTS",
    "Limits",
    "RunStatus",
    "RunSummary",
    "Verifier",
    "beside_its_call",
]

PRODUCER_MUSTS: Final = frozenset(
    {"FE-2", "FE-3", "FE-5", "TOOL-10", "EVT-7", "EVT-8", "TOOL-8", "TEXT-3", "SUB-4", "SUB-14"}
)
"""Rules the pipeline reports as warnings (a consumer need not reject the stream)
that bind the producer with a MUST: a checker judging the producer — ``check``,
the proxy — fails them."""


@dataclass(slots=True)
class _Item:
    """A streamed item (text/reasoning message or tool call) the stream opened."""

    kind: str
    owner: str | None
    tag: str | None  # the opener's own subagentRunId (None when untagged)
    run: int
    name: str | None = None  # toolCallName / role
    parent: str | None = None  # parentMessageId / message name
    open: bool = True
    args: int = 0
    ended: bool = False  # closed by its END (not abandoned by RUN_ERROR or truncation)
    # a streamed tool call's argument deltas, kept so a later MESSAGES_SNAPSHOT that
    # restates the call can be compared with what the stream said (AGT-SNAP-1, AGT-ARGS-1);
    # bounded by Limits.max_argument_bytes like the reducer's own copy
    chunks: list[str] | None = None


@cache
def _event_types() -> frozenset[str]:
    """The types the verifier sees: the schema's, after chunk expansion (CHUNK-1)."""
    return event_types() - CHUNK_TYPES


class Verifier(ScopeRules):
    """The sequence-rule state machine for one stream.

    Args:
        strict: make the beyond-the-official-client checks violations instead
            of warnings.
        thread_id: the run input's ``threadId``; every run must carry it
            (INPUT-3). Without it, the first run's thread id is used.
        frontend_tools: names of the tools the run input advertised (FE-2, FE-3).
        history: the run input's ``messages`` (wire dicts), so results and
            reopens of earlier calls are judged against the whole thread.
        limits: resource limits.
        on_warning: called with each warning as it is raised.
    """

    def __init__(
        self,
        *,
        strict: bool = False,
        thread_id: str | None = None,
        frontend_tools: Iterable[str] = (),
        history: Iterable[Mapping[str, Any]] = (),
        limits: Limits | None = None,
        on_warning: Callable[[ProtocolWarning], None] | None = None,
    ) -> None:
        self.strict = strict
        self.limits = limits or Limits()
        self._max_args = self.limits.max_argument_bytes
        self.frontend_tools = frozenset(frontend_tools)
        self.warnings: list[ProtocolWarning] = []
        self.runs: list[RunSummary] = []
        self._warning_sink = on_warning
        self._phase = RunPhase.NEW
        self._thread_id = thread_id
        self._run_no = 0
        self._run: RunSummary | None = None
        self._run_ids: set[str] = set()
        # thread-scoped knowledge
        self._messages: dict[str, str] = {}  # id → what minted it ("text", "tool", …)
        self._items: dict[tuple[str, str], _Item] = {}  # (kind, id) → item
        self._results: dict[str, str] = {}  # toolCallId → result messageId
        self._result_origin: dict[str, str] = {}  # toolCallId → what minted its result id
        # run-scoped tracking
        # open streamed items, one table per kind keyed by id (no tuple per lookup)
        self._open_text: dict[str, _Item] = {}
        self._open_tool: dict[str, _Item] = {}
        self._open_reasoning: dict[str, _Item] = {}
        self._open: dict[str, dict[str, _Item]] = {
            "text": self._open_text,
            "tool": self._open_tool,
            "reasoning": self._open_reasoning,
        }
        self._spans: set[str] = set()
        self._steps: set[tuple[str | None, str]] = set()
        self._subagents: set[str] = set()
        self._subagents_done: set[str] = set()
        self._tags_seen: set[str] = set()
        self._activities: dict[str, str | None] = {}  # activity id → owner (this run)
        self._seed(history, "the thread history")
        # every expanded event type has a handler for the active state: its ``_on_*``
        # method, or — state, RAW, CUSTOM, encrypted values — the standalone one
        own = handlers(self)
        self._active: dict[str, Handler] = {
            kind: own.get(kind, self._standalone) for kind in _event_types()
        }
        self._gated: dict[str, Handler] = dict.fromkeys(_event_types(), self._gate)
        self.dispatch = self._gated
        """Event type → the handler for the current state. Callers that already
        know the type (the pipeline's loop) may call ``dispatch[type](event, index)``
        instead of :meth:`feed`; the table is swapped on every state change."""

    # -- public --------------------------------------------------------------

    @property
    def current_run(self) -> RunSummary | None:
        return self._run

    @property
    def phase(self) -> RunPhase:
        """Where the stream stands in the run lifecycle (:data:`~agui_tools.wire._lifecycle.RUN_MOVES`)."""
        return self._phase

    def owner_of(self, kind: str, ident: str) -> tuple[bool, str | None]:
        """Who owns item ``ident``: ``(found, subagentRunId or None for the parent)``.

        Open items for continuations; for ``text``, any message the thread
        knows (a tool call inherits its message's owner).
        """
        item = self._open[kind].get(ident)
        if item is None and kind == "text":
            item = self._items.get((kind, ident))
        return (True, item.owner) if item is not None else (False, None)

    def was_closed(self, kind: str, ident: str) -> bool:
        """Whether item ``ident`` (``kind``: text/tool/reasoning) was closed by its END.

        A call abandoned by ``RUN_ERROR``, cut off by truncation or left open
        by a rejected stream was never closed: its arguments are a prefix.
        """
        item = self._items.get((kind, ident))
        return item is not None and item.ended and not item.open

    def feed(self, ev: WireEvent, index: int | None = None) -> None:
        """Judge one expanded event; raise :class:`ProtocolViolation` if fatal."""
        self.dispatch[ev["type"]](ev, index)

    def _move(self, event: RunEvent) -> None:
        """Take a legal lifecycle move, swapping the dispatch table with the phase."""
        self._phase = move(self._phase, event)
        self.dispatch = self._active if self._phase is RunPhase.ACTIVE else self._gated

    def _gate(self, ev: WireEvent, index: int | None) -> None:
        self._lifecycle_gate(ev, ev["type"], index)

    def _standalone(self, ev: WireEvent, index: int | None) -> None:
        """State, activity, passthrough and encrypted-value events: no sequence of their own."""
        tag = ev.get("subagentRunId")
        if tag is not None:
            self._tags_seen.add(tag)

    def _on_run_started(self, ev: WireEvent, index: int | None) -> None:
        rule = refusal(self._phase, "RUN_STARTED")  # a run is active: RUN-13
        assert rule is not None
        raise self._violation(
            rule,
            "a RUN_STARTED arrived while the current run is still active; a producer must "
            "close a run before opening the next.",
            ev,
            index,
            ids={"runId": self._run.run_id} if self._run and self._run.run_id else None,
        )

    def rejected(self) -> None:
        """The consumer rejected the stream: the active run ends as ``rejected``.

        Kept apart from ``error`` (a producer's own RUN_ERROR): a consumer MUST
        NOT present one as the other (RUN-16).
        """
        if self._phase is RunPhase.ACTIVE and self._run is not None:
            self._run.status = "rejected"
            self._run.pending = self._pending()
        self._move(REJECTED)

    def end_of_stream(self) -> None:
        """The byte stream ended. An active run is truncated — never finished (TRANS-2)."""
        if self._phase is RunPhase.ACTIVE and self._run is not None:
            self._run.status = "truncated"
            self._run.pending = self._pending()
        elif self._phase is RunPhase.NEW:
            self.runs.append(RunSummary(None, None, "truncated"))
        self._move(STREAM_ENDED)

    # -- lifecycle -------------------------------------------------------------

    def _lifecycle_gate(self, ev: WireEvent, kind: str, index: int | None) -> None:
        """Events arriving while no run is active: the lifecycle table decides (RUN-1, RUN-12)."""
        rule = refusal(self._phase, run_event(kind))
        if rule is not None:
            if self._phase is RunPhase.NEW:
                explanation = f"the first event must be RUN_STARTED (or RUN_ERROR), not {kind}."
            else:
                closed_by = "RUN_FINISHED" if self._phase is RunPhase.FINISHED else "RUN_ERROR"
                allowed = (
                    "only a new RUN_STARTED or a late RUN_ERROR may follow"
                    if refusal(self._phase, "RUN_ERROR") is None
                    else "only a new RUN_STARTED may follow"
                )
                explanation = f"the run has already closed with {closed_by}; {allowed}, not {kind}."
            run_id = self._run.run_id if self._run is not None else None
            raise self._violation(
                rule, explanation, ev, index, ids={"runId": run_id} if run_id else None
            )
        if kind == "RUN_STARTED":
            self._open_run(ev, index)
            return
        if self._run is None:  # a run that failed before it began (RUN-1)
            self.runs.append(RunSummary(None, None, "error", error=_error_of(ev)))
        else:  # a late failure after RUN_FINISHED: the run is failed (RUN-12)
            self._run.status = "error"
            self._run.error = _error_of(ev)
        self._move("RUN_ERROR")

    def _open_run(self, ev: WireEvent, index: int | None) -> None:
        thread_id, run_id = ev["threadId"], ev["runId"]
        if self._thread_id is None:
            self._thread_id = thread_id
        elif thread_id != self._thread_id:
            raise self._violation(
                "INPUT-3",
                f"every run on the stream must carry the input's threadId {self._thread_id!r}; "
                f"this RUN_STARTED carries {thread_id!r}.",
                ev,
                index,
                path="/threadId",
                ids={"runId": run_id},
            )
        if run_id in self._run_ids:
            self._beyond(
                "EVT-7",
                f"runId {run_id!r} was already used by an earlier run of this thread.",
                index,
                "RUN_STARTED",
                {"runId": run_id},
            )
        self._run_ids.add(run_id)
        self._run_no += 1
        run = RunSummary(thread_id, run_id, protocol_version=ev.get("protocolVersion"))
        self.runs.append(run)
        self._run = run
        self._move("RUN_STARTED")
        for table in self._open.values():
            table.clear()
        self._spans.clear()
        self._steps.clear()
        self._subagents.clear()
        self._subagents_done.clear()
        self._tags_seen.clear()
        self._activities.clear()
        version = ev.get("protocolVersion")
        if version is not None:
            self._check_version(version, index)
        if "input" in ev:
            self._seed(ev["input"].get("messages", ()), "the input RUN_STARTED echoed")

    def _check_version(self, declared: str, index: int | None) -> None:
        ours = parse_version(PROTOCOL_VERSION)
        theirs = parse_version(declared)
        if theirs is None:
            self._warn(
                "VER-5",
                f"cannot interpret the producer's protocolVersion {describe_value(declared)}; "
                f"proceeding as for a newer version (this consumer speaks {PROTOCOL_VERSION}).",
                index,
                "RUN_STARTED",
                path="/protocolVersion",
            )
        elif ours is not None and theirs > ours:
            self._warn(
                "VER-5",
                f"the producer declares protocol version {declared}, newer than the "
                f"{PROTOCOL_VERSION} this consumer speaks; proceeding under the processing model.",
                index,
                "RUN_STARTED",
                path="/protocolVersion",
            )

    def _on_run_finished(self, ev: WireEvent, index: int | None) -> None:
        run = self._run
        assert run is not None
        for key in ("threadId", "runId"):
            expected = run.thread_id if key == "threadId" else run.run_id
            if ev[key] != expected:
                raise self._violation(
                    "INPUT-3",
                    f"RUN_FINISHED names {key} {ev[key]!r} but the run it would close started as "
                    f"{expected!r}; both boundary events must carry the input's threadId and agree on "
                    "their runId.",
                    ev,
                    index,
                    path=f"/{key}",
                )
        self._require_all_closed(ev, index)
        outcome = ev.get("outcome")
        pending = self._pending()
        run.pending = pending
        run.outcome = outcome
        kind = outcome["type"] if outcome is not None else "success"
        if kind == "interrupt":
            interrupts = outcome["interrupts"] if outcome is not None else []
            seen: set[str] = set()
            for i, interrupt in enumerate(interrupts):
                if interrupt["id"] in seen:
                    raise self._violation(
                        "INT-3",
                        f"interrupt id {interrupt['id']!r} appears twice in one run; each "
                        "interrupt's id must be unique within the run.",
                        ev,
                        index,
                        path=f"/outcome/interrupts/{i}/id",
                    )
                seen.add(interrupt["id"])
            run.interrupts = list(interrupts)
            frontend = [c for c in pending if self._call_name(c) in self.frontend_tools]
            if frontend:
                self._beyond(
                    "FE-3",
                    "the run left advertised frontend tool call(s) "
                    f"{', '.join(map(repr, frontend))} unanswered but reports itself interrupted; "
                    "a run that stops on a frontend call must finish with the success outcome.",
                    index,
                    "RUN_FINISHED",
                    {"toolCallIds": ",".join(frontend)},
                )
        elif kind == "success" and outcome is not None and outcome.get("pendingToolCallIds"):
            named = outcome["pendingToolCallIds"]
            if set(named) != set(pending) or len(named) != len(pending):
                self._beyond(
                    "FE-5",
                    f"pendingToolCallIds names {named} but the run started and left unanswered "
                    f"{pending}; when sent, the list must contain exactly those calls.",
                    index,
                    "RUN_FINISHED",
                    {"runId": run.run_id or ""},
                )
        run.status = kind  # type: ignore[assignment]
        self._move("RUN_FINISHED")

    def _require_all_closed(self, ev: WireEvent, index: int | None) -> None:
        for kind, ident in ((k, i) for k, table in self._open.items() for i in table):
            raise self._violation(
                STREAMED[kind].left_open,
                f"cannot finish the run while {STREAMED[kind].noun} {ident!r} is still open; every item a "
                "producer opens must be closed before the run finishes.",
                ev,
                index,
                ids={STREAMED[kind].id_field: ident},
            )
        for span in self._spans:
            raise self._violation(
                SPAN.left_open,
                f"cannot finish the run while {SPAN.noun} {span!r} is still open.",
                ev,
                index,
                ids={"messageId": span},
            )
        for owner, name in self._steps:
            raise self._violation(
                STEP.left_open,
                f"cannot finish the run while {STEP.noun} {name!r}"
                f"{f' of subagent {owner!r}' if owner else ''} is still open.",
                ev,
                index,
                ids={"stepName": name},
            )
        for sub in self._subagents:
            raise self._violation(
                SUBAGENT.left_open,
                f"cannot finish the run while {SUBAGENT.noun} {sub!r} is still active; close "
                "it with SUBAGENT_FINISHED or SUBAGENT_ERROR first.",
                ev,
                index,
                ids={"subagentRunId": sub},
            )

    def _on_run_error(self, ev: WireEvent, index: int | None) -> None:
        run = self._run
        assert run is not None
        run.status = "error"
        run.error = _error_of(ev)
        run.pending = self._pending()
        # RUN_ERROR ends whatever was still open along with the run (RUN-15, SUB-17)
        for table in self._open.values():
            for item in table.values():
                item.open = False
            table.clear()
        self._move("RUN_ERROR")

    def _pending(self) -> list[str]:
        run = self._run
        if run is None:
            return []
        return [c for c in run.started if c not in self._results]

    # -- streamed items (text, tool calls, reasoning messages) ----------------

    # The hot path: one small method per event type, no dispatch inside.

    def _on_text_message_start(self, ev: WireEvent, index: int | None) -> None:
        ident = ev["messageId"]
        self._start(ev, index, "text", ident, ("text", ident))

    def _on_text_message_content(self, ev: WireEvent, index: int | None) -> None:
        item = self._open_text.get(ev["messageId"])
        if item is None:
            self._not_open(ev, index, "text", ev["messageId"])
        tag = ev.get("subagentRunId")
        if tag is not None:
            self._continuation_tag(ev, index, item, tag)

    def _on_text_message_end(self, ev: WireEvent, index: int | None) -> None:
        self._end(ev, index, "text", ev["messageId"])

    def _on_reasoning_message_start(self, ev: WireEvent, index: int | None) -> None:
        ident = ev["messageId"]
        self._start(ev, index, "reasoning", ident, ("reasoning", ident))

    def _on_reasoning_message_content(self, ev: WireEvent, index: int | None) -> None:
        item = self._open_reasoning.get(ev["messageId"])
        if item is None:
            self._not_open(ev, index, "reasoning", ev["messageId"])
        tag = ev.get("subagentRunId")
        if tag is not None:
            self._continuation_tag(ev, index, item, tag)

    def _on_reasoning_message_end(self, ev: WireEvent, index: int | None) -> None:
        self._end(ev, index, "reasoning", ev["messageId"])

    def _on_tool_call_start(self, ev: WireEvent, index: int | None) -> None:
        ident = ev["toolCallId"]
        self._start(ev, index, "tool", ident, ("tool", ident))

    def _on_tool_call_args(self, ev: WireEvent, index: int | None) -> None:
        ident = ev["toolCallId"]
        item = self._open_tool.get(ident)
        if item is None:
            self._not_open(ev, index, "tool", ident)
        tag = ev.get("subagentRunId")
        if tag is not None:
            self._continuation_tag(ev, index, item, tag)
        item.args += len(ev["delta"])  # type: ignore[union-attr]
        if item.chunks is not None:  # type: ignore[union-attr]
            item.chunks.append(ev["delta"])  # type: ignore[union-attr]
        if item.args > self._max_args:  # type: ignore[union-attr]
            raise LimitExceeded(
                "LIMIT",
                f"tool call {ident!r} has more than max_argument_bytes="
                f"{self.limits.max_argument_bytes} of argument text.",
                index=index,
                event_type=ev["type"],
                ids={"toolCallId": ident},
            )

    def _on_tool_call_end(self, ev: WireEvent, index: int | None) -> None:
        self._end(ev, index, "tool", ev["toolCallId"])

    def _end(self, ev: WireEvent, index: int | None, kind: str, ident: str) -> None:
        table = self._open[kind]
        item = table.get(ident)
        if item is None:
            self._not_open(ev, index, kind, ident)
        tag = ev.get("subagentRunId")
        if tag is not None:
            self._continuation_tag(ev, index, item, tag)
        del table[ident]
        item.open = False  # type: ignore[union-attr]
        item.ended = True  # type: ignore[union-attr]

    def _continuation_tag(
        self, ev: WireEvent, index: int | None, item: _Item | None, tag: str
    ) -> None:
        """A tagged continuation must agree with its opener (SUB-11); untagged is fine."""
        assert item is not None
        if tag != item.owner:
            ident = ev[STREAMED[item.kind].id_field]
            self._mismatch(ev, index, item.kind, ident, item.owner)
        self._tags_seen.add(tag)

    def _start(
        self, ev: WireEvent, index: int | None, kind: str, ident: str, key: tuple[str, str]
    ) -> None:
        if ident in self._open[kind]:
            raise self._violation(
                STREAMED[kind].opened_twice,
                f"{ev['type']} reopens {STREAMED[kind].noun} {ident!r}, which is still open; close it "
                "before its id is used again.",
                ev,
                index,
                ids={STREAMED[kind].id_field: ident},
            )
        open_items = len(self._open_text) + len(self._open_tool) + len(self._open_reasoning)
        if open_items + len(self._spans) + len(self._steps) + len(self._subagents) >= (
            self.limits.max_open_items
        ):
            raise LimitExceeded(
                "LIMIT",
                f"more than max_open_items={self.limits.max_open_items} items open in one run.",
                index=index,
                event_type=ev["type"],
            )
        tag = ev.get("subagentRunId")
        if tag is not None:
            self._tags_seen.add(tag)
        owner = tag
        if kind == "tool":
            name, parent = ev["toolCallName"], ev.get("parentMessageId")
            if parent is not None:
                parent_item = self._items.get(("text", parent))
                if parent_item is not None:
                    if tag is None:
                        owner = parent_item.owner  # a call inherits its message's owner (SUB-12)
                    elif tag != parent_item.owner:
                        raise self._violation(
                            "SUB-12",
                            f"tool call {ident!r} is attributed to {tag!r} but the message carrying "
                            f"it, {parent!r}, belongs to {parent_item.owner or 'the parent agent'!r}; "
                            "a tool call inherits the attribution of its message.",
                            ev,
                            index,
                            path="/subagentRunId",
                            ids={"toolCallId": ident, "parentMessageId": parent},
                        )
        else:
            name, parent = ev.get("role"), ev.get("name")
        known = self._items.get(key)
        if known is not None:
            self._reopen(ev, index, kind, ident, known, tag, owner, name, parent)
            known.open = True
            known.ended = False
            item = known
        else:
            if len(self._items) >= self.limits.max_tracked_ids:
                raise LimitExceeded(
                    "LIMIT",
                    f"more than max_tracked_ids={self.limits.max_tracked_ids} items in one thread.",
                    index=index,
                    event_type=ev["type"],
                )
            item = _Item(kind, owner, tag, self._run_no, name, parent)
            self._items[key] = item
            if kind == "tool":
                item.chunks = []
            if kind != "tool":
                self._mint_message(ident, kind, ev, index)
            else:
                assert self._run is not None
                self._run.started.append(ident)
        if item.run != self._run_no:
            item.run = self._run_no
            if kind == "tool" and self._run is not None and ident not in self._run.started:
                self._run.started.append(ident)
        self._open[kind][ident] = item

    def _reopen(
        self,
        ev: WireEvent,
        index: int | None,
        kind: str,
        ident: str,
        known: _Item,
        tag: str | None,
        owner: str | None,
        name: str | None,
        parent: str | None,
    ) -> None:
        """A closed item reopened: allowed (TEXT-2, TOOL-7); it must agree with itself."""
        same_run = known.run == self._run_no
        if kind == "tool":
            diffs = []
            if name != known.name:
                diffs.append(f"toolCallName {name!r} ≠ {known.name!r}")
            if parent != known.parent:
                diffs.append(f"parentMessageId {parent!r} ≠ {known.parent!r}")
            if owner != known.owner:
                diffs.append(f"owner {owner!r} ≠ {known.owner!r}")
            if diffs:
                self._beyond(
                    "TOOL-8",
                    f"a reopening TOOL_CALL_START disagrees with the call it reopens ({'; '.join(diffs)}); "
                    "the established values are kept.",
                    index,
                    ev["type"],
                    {"toolCallId": ident},
                )
            return
        if same_run and tag is not None and tag != known.owner:
            raise self._violation(
                "TEXT-4",
                f"{ev['type']} reopens {STREAMED[kind].noun} {ident!r} under owner {tag!r}, but it was opened by "
                f"{known.owner or 'the parent agent'!r}; within a run that is an attribution mismatch.",
                ev,
                index,
                path="/subagentRunId",
                ids={"messageId": ident},
            )
        # an absent role on the reopening start means "assistant" (TEXT-1) and must agree too
        if kind == "text" and (
            (name or "assistant") != (known.name or "assistant")
            or (parent is not None and parent != known.parent)
        ):
            self._beyond(
                "TEXT-3",
                f"a reopening TEXT_MESSAGE_START disagrees with message {ident!r} (role/name); the "
                "message's established values stand.",
                index,
                ev["type"],
                {"messageId": ident},
            )

    def _mint_message(self, ident: str, minted_by: str, ev: WireEvent, index: int | None) -> None:
        existing = self._messages.get(ident)
        if existing is not None and existing != minted_by:
            self._beyond(
                "EVT-8",
                f"{ev['type']} uses messageId {ident!r}, which already identifies a {existing} "
                "message of this thread; a messageId must be unique within its thread.",
                index,
                ev["type"],
                {"messageId": ident},
            )
        self._messages.setdefault(ident, minted_by)

    def _not_open(self, ev: WireEvent, index: int | None, kind: str, ident: str) -> None:
        known = self._items.get((kind, ident))
        why = "it was closed" if known is not None and not known.open else "nothing opened it"
        raise self._violation(
            STREAMED[kind].not_open,
            f"{ev['type']} names {STREAMED[kind].noun} {ident!r}, but no active "
            f"{STREAMED[kind].noun} has that id "
            f"({why}); content and end events must follow an open start.",
            ev,
            index,
            ids={STREAMED[kind].id_field: ident},
        )

    def _mismatch(
        self, ev: WireEvent, index: int | None, kind: str, ident: str, owner: str | None
    ) -> None:
        raise self._violation(
            "SUB-11",
            f"{ev['type']} is attributed to {ev.get('subagentRunId')!r} but {STREAMED[kind].noun} {ident!r} "
            f"was opened by {owner or 'the parent agent'!r}; a continuation must agree with its "
            "opener about the owner.",
            ev,
            index,
            path="/subagentRunId",
            ids={STREAMED[kind].id_field: ident},
        )

    # -- results ----------------------------------------------------------------

    def _on_tool_call_result(self, ev: WireEvent, index: int | None) -> None:
        call_id, message_id = ev["toolCallId"], ev["messageId"]
        ids = {"toolCallId": call_id, "messageId": message_id}
        item = self._items.get(("tool", call_id))
        if item is None:
            self._beyond(
                "TOOL-10",
                f"TOOL_CALL_RESULT answers tool call {call_id!r}, which this thread never started.",
                index,
                ev["type"],
                ids,
            )
        elif item.open:
            self._beyond(
                "TOOL-10",
                f"TOOL_CALL_RESULT answers tool call {call_id!r} while it is still open; its "
                "arguments are not complete until TOOL_CALL_END.",
                index,
                ev["type"],
                ids,
            )
        previous = self._results.get(call_id)
        if previous is not None:
            self._beyond(
                "TOOL-10",
                f"a second TOOL_CALL_RESULT for tool call {call_id!r} (the first was message "
                f"{previous!r}); a call has one result.",
                index,
                ev["type"],
                ids,
            )
        if message_id in self._messages:
            self._beyond(
                "EVT-8",
                f"TOOL_CALL_RESULT mints tool message {message_id!r}, but that id already identifies a "
                f"{self._messages[message_id]} message of this thread.",
                index,
                ev["type"],
                ids,
            )
        if item is not None and item.name in self.frontend_tools:
            self._beyond(
                "FE-2",
                f"the producer answered tool call {call_id!r} to {item.name!r}, a frontend tool the "
                "run input advertised; its result is the application's to produce.",
                index,
                ev["type"],
                ids,
            )
        self._messages.setdefault(message_id, "tool")
        if call_id not in self._results:
            self._results[call_id] = message_id
            self._result_origin[call_id] = "its TOOL_CALL_RESULT" + (
                f" at event #{index}" if index is not None else ""
            )
        if self._run is not None:
            self._run.answered.add(call_id)

    def _call_name(self, call_id: str) -> str | None:
        item = self._items.get(("tool", call_id))
        return item.name if item is not None else None

    def _on_messages_snapshot(self, ev: WireEvent, index: int | None) -> None:
        self._compare_restated(ev, index)
        self._seed(
            ev["messages"],
            "a MESSAGES_SNAPSHOT" + (f" at event #{index}" if index is not None else ""),
        )

    def _compare_restated(self, ev: WireEvent, index: int | None) -> None:
        """Producer slips the snapshot reveals (:mod:`~agui_tools.wire._restated`)."""
        for slip in restated_slips(
            ev["messages"], self._closed_arguments, self._results, self._result_origin
        ):
            self._beyond(slip.rule, slip.text, index, ev["type"], slip.ids)

    def _closed_arguments(self, call_id: str) -> str | None:
        """The argument text the stream closed call ``call_id`` with; ``None`` when it
        was not streamed here or not closed."""
        item = self._items.get(("tool", call_id))
        if item is None or not item.ended or item.chunks is None:
            return None
        return "".join(item.chunks)

    # -- thread knowledge ------------------------------------------------------------

    def _seed(self, messages: Iterable[Mapping[str, Any]], origin: str) -> None:
        """Learn message ids, tool calls and results from restated history (``origin``:
        where it was restated, named when a later snapshot re-mints a result's id)."""
        for msg in messages:
            ident, role = msg["id"], msg["role"]
            minted = message_kind(role)
            self._messages.setdefault(ident, minted)
            if minted == "text" and ("text", ident) not in self._items:
                self._items[("text", ident)] = _Item(
                    "text",
                    msg.get("subagentRunId"),
                    msg.get("subagentRunId"),
                    0,
                    role,
                    msg.get("name"),
                    open=False,
                    ended=True,
                )
            if role == "assistant":
                for call in msg.get("toolCalls", ()):
                    key = ("tool", call["id"])
                    if key not in self._items:
                        self._items[key] = _Item(
                            "tool",
                            msg.get("subagentRunId"),
                            None,
                            0,
                            call["function"]["name"],
                            ident,
                            open=False,
                            ended=True,
                        )
            elif role == "tool" and msg["toolCallId"] not in self._results:
                self._results[msg["toolCallId"]] = ident
                self._result_origin[msg["toolCallId"]] = origin

    # -- reporting --------------------------------------------------------------------

    def _violation(
        self,
        rule: str,
        explanation: str,
        ev: WireEvent,
        index: int | None,
        *,
        path: str = "",
        ids: Mapping[str, str] | None = None,
    ) -> ProtocolViolation:
        value = describe_value(ev[path[1:]]) if path and path[1:] in ev else None
        return ProtocolViolation(
            rule, explanation, index=index, path=path, value=value, event_type=ev["type"], ids=ids
        )

    def _warn(
        self,
        rule: str,
        message: str,
        index: int | None,
        event_type: str | None,
        ids: Mapping[str, str] | None = None,
        path: str = "",
    ) -> None:
        warning = ProtocolWarning(rule, message, index, path, event_type, dict(ids or {}))
        self.warnings.append(warning)
        if self._warning_sink is not None:
            self._warning_sink(warning)

    def _beyond(
        self, rule: str, message: str, index: int | None, event_type: str, ids: Mapping[str, str]
    ) -> None:
        """A rule the official client does not check: warn, or fail in strict mode."""
        if self.strict:
            raise ProtocolViolation(rule, message, index=index, event_type=event_type, ids=ids)
        self._warn(rule, message, index, event_type, ids)


def _error_of(ev: WireEvent) -> dict[str, Any]:
    out = {"message": ev["message"]}
    if "code" in ev:
        out["code"] = ev["code"]
    return out
