"""A tiny DSL for rule-by-rule consumer-pipeline tests, in the notation of
``spec/RULES.md`` ("Test notation").

Event builders (each returns one wire event as a ``dict``; extra keyword
arguments — ``timestamp``, ``metadata``, ``rawEvent``, unknown fields — are
added verbatim, so malformed events are as easy to write as good ones)::

    RS / RF / RE                     RUN_STARTED / RUN_FINISHED / RUN_ERROR
    TS(c1, name, pm=, s=)            TOOL_CALL_START
    TA(c1, delta) / TE(c1)           TOOL_CALL_ARGS / TOOL_CALL_END
    TK(c=, name=, delta=, pm=, s=)   TOOL_CALL_CHUNK
    TR(m2, c1, content)              TOOL_CALL_RESULT
    MS / MC / ME / MK                TEXT_MESSAGE_START / CONTENT / END / CHUNK
    SS / SF / SE                     SUBAGENT_STARTED / FINISHED / ERROR
    STS / STF                        STEP_STARTED / STEP_FINISHED
    RST / REN                        REASONING_START / REASONING_END (spans)
    RMS / RMC / RME / RMK            REASONING_MESSAGE_START / CONTENT / END / CHUNK
    REV                              REASONING_ENCRYPTED_VALUE
    SNAP / DELTA / MSNAP             STATE_SNAPSHOT / STATE_DELTA / MESSAGES_SNAPSHOT
    ASNAP / ADELTA                   ACTIVITY_SNAPSHOT / ACTIVITY_DELTA
    CUSTOM / RAW                     passthrough

``s=`` is ``subagentRunId``; ``X(event)`` marks the event a verdict lands on
(the failing event of a "fail" case, the warned-about event of a "warn"
case). Without a mark, a failing case must fail on its *last* event — the
streams are written to stop right where the consumer must stop.

A :class:`Case` is one row of the table: a rule ID, a slug, a stream and what
a conforming consumer does with it — ``"pass"`` (completed, no warnings at
all), ``("fail", RULE)`` (rejected, naming RULE) or ``("warn", RULE)``
(completed, warning under RULE and nothing else) — plus optional checks on
what was delivered and on the run summaries.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from agui_tools._errors import ProtocolViolation, ProtocolWarning
from agui_tools.wire._pipeline import ConsumerPipeline, StreamResult

RULE_IDS: frozenset[str] = frozenset(
    re.findall(
        r"^\| ([A-Z]+(?:-[A-Z]+)*-\d+) \|",
        (Path(__file__).resolve().parents[2] / "spec/RULES.md").read_text(),
        re.M,
    )
)
"""Every rule ID ``spec/RULES.md`` states (its table's first column)."""

Event = dict[str, Any]
ABSENT: Any = object()


def _ev(type_: str, fields: Mapping[str, Any], extra: Mapping[str, Any]) -> Event:
    if "s" in extra:  # ``s=`` is ``subagentRunId`` on every builder
        extra = {("subagentRunId" if k == "s" else k): v for k, v in extra.items()}
    out: Event = {"type": type_}
    for key, value in fields.items():
        if value is not ABSENT:
            out[key] = value
    out.update(extra)
    return out


# -- run lifecycle -------------------------------------------------------------


def RS(run: Any = "r", thread: Any = "t", **extra: Any) -> Event:
    return _ev("RUN_STARTED", {"threadId": thread, "runId": run}, extra)


def RF(run: Any = "r", thread: Any = "t", outcome: Any = ABSENT, **extra: Any) -> Event:
    return _ev("RUN_FINISHED", {"threadId": thread, "runId": run, "outcome": outcome}, extra)


def RE(message: str = "boom", **extra: Any) -> Event:
    return _ev("RUN_ERROR", {"message": message}, extra)


def STS(name: str, s: Any = ABSENT, **extra: Any) -> Event:
    return _ev("STEP_STARTED", {"stepName": name, "subagentRunId": s}, extra)


def STF(name: str, s: Any = ABSENT, **extra: Any) -> Event:
    return _ev("STEP_FINISHED", {"stepName": name, "subagentRunId": s}, extra)


# -- outcomes ------------------------------------------------------------------


def success(*pending: str) -> dict[str, Any]:
    """``{"type": "success", "pendingToolCallIds": [...]}`` (the list only when given)."""
    out: dict[str, Any] = {"type": "success"}
    if pending:
        out["pendingToolCallIds"] = list(pending)
    return out


def interrupt(*ids: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "interrupt",
        "interrupts": [{"id": i, "reason": "approval", **extra} for i in ids],
    }


CANCELLED: dict[str, Any] = {"type": "cancelled"}


# -- text messages ---------------------------------------------------------------


def MS(m: Any, role: Any = ABSENT, s: Any = ABSENT, **extra: Any) -> Event:
    return _ev("TEXT_MESSAGE_START", {"messageId": m, "role": role, "subagentRunId": s}, extra)


def MC(m: Any, delta: Any, s: Any = ABSENT, **extra: Any) -> Event:
    return _ev("TEXT_MESSAGE_CONTENT", {"messageId": m, "delta": delta, "subagentRunId": s}, extra)


def ME(m: Any, s: Any = ABSENT, **extra: Any) -> Event:
    return _ev("TEXT_MESSAGE_END", {"messageId": m, "subagentRunId": s}, extra)


def MK(
    m: Any = ABSENT, delta: Any = ABSENT, role: Any = ABSENT, s: Any = ABSENT, **extra: Any
) -> Event:
    return _ev(
        "TEXT_MESSAGE_CHUNK",
        {"messageId": m, "role": role, "delta": delta, "subagentRunId": s},
        extra,
    )


# -- tool calls --------------------------------------------------------------------


def TS(c: Any, name: Any = "f", pm: Any = ABSENT, s: Any = ABSENT, **extra: Any) -> Event:
    return _ev(
        "TOOL_CALL_START",
        {"toolCallId": c, "toolCallName": name, "parentMessageId": pm, "subagentRunId": s},
        extra,
    )


def TA(c: Any, delta: Any, s: Any = ABSENT, **extra: Any) -> Event:
    return _ev("TOOL_CALL_ARGS", {"toolCallId": c, "delta": delta, "subagentRunId": s}, extra)


def TE(c: Any, s: Any = ABSENT, **extra: Any) -> Event:
    return _ev("TOOL_CALL_END", {"toolCallId": c, "subagentRunId": s}, extra)


def TK(
    c: Any = ABSENT,
    name: Any = ABSENT,
    delta: Any = ABSENT,
    pm: Any = ABSENT,
    s: Any = ABSENT,
    **extra: Any,
) -> Event:
    return _ev(
        "TOOL_CALL_CHUNK",
        {
            "toolCallId": c,
            "toolCallName": name,
            "parentMessageId": pm,
            "delta": delta,
            "subagentRunId": s,
        },
        extra,
    )


def TR(m: Any, c: Any, content: Any = "ok", s: Any = ABSENT, **extra: Any) -> Event:
    return _ev(
        "TOOL_CALL_RESULT",
        {"messageId": m, "toolCallId": c, "content": content, "subagentRunId": s},
        extra,
    )


# -- subagents -----------------------------------------------------------------------


def SS(s: Any, name: Any = "helper", **extra: Any) -> Event:
    return _ev("SUBAGENT_STARTED", {"subagentRunId": s, "name": name}, extra)


def SF(s: Any, **extra: Any) -> Event:
    return _ev("SUBAGENT_FINISHED", {"subagentRunId": s}, extra)


def SE(s: Any, message: Any = "sub failed", **extra: Any) -> Event:
    return _ev("SUBAGENT_ERROR", {"subagentRunId": s, "message": message}, extra)


# -- reasoning -------------------------------------------------------------------------


def RST(m: Any, s: Any = ABSENT, **extra: Any) -> Event:
    return _ev("REASONING_START", {"messageId": m, "subagentRunId": s}, extra)


def REN(m: Any, s: Any = ABSENT, **extra: Any) -> Event:
    return _ev("REASONING_END", {"messageId": m, "subagentRunId": s}, extra)


def RMS(m: Any, role: Any = "reasoning", s: Any = ABSENT, **extra: Any) -> Event:
    return _ev("REASONING_MESSAGE_START", {"messageId": m, "role": role, "subagentRunId": s}, extra)


def RMC(m: Any, delta: Any, s: Any = ABSENT, **extra: Any) -> Event:
    return _ev(
        "REASONING_MESSAGE_CONTENT", {"messageId": m, "delta": delta, "subagentRunId": s}, extra
    )


def RME(m: Any, s: Any = ABSENT, **extra: Any) -> Event:
    return _ev("REASONING_MESSAGE_END", {"messageId": m, "subagentRunId": s}, extra)


def RMK(m: Any = ABSENT, delta: Any = ABSENT, s: Any = ABSENT, **extra: Any) -> Event:
    return _ev(
        "REASONING_MESSAGE_CHUNK", {"messageId": m, "delta": delta, "subagentRunId": s}, extra
    )


def REV(entity: str, value: str = "opaque", subtype: str = "message", **extra: Any) -> Event:
    return _ev(
        "REASONING_ENCRYPTED_VALUE",
        {"subtype": subtype, "entityId": entity, "encryptedValue": value},
        extra,
    )


# -- standalone events -----------------------------------------------------------------


def SNAP(snapshot: Any = ABSENT, **extra: Any) -> Event:
    return _ev("STATE_SNAPSHOT", {"snapshot": {"n": 1} if snapshot is ABSENT else snapshot}, extra)


def DELTA(*ops: dict[str, Any], **extra: Any) -> Event:
    patch = list(ops) or [{"op": "add", "path": "/x", "value": 1}]
    return _ev("STATE_DELTA", {"delta": patch}, extra)


def MSNAP(*messages: dict[str, Any], **extra: Any) -> Event:
    return _ev("MESSAGES_SNAPSHOT", {"messages": list(messages)}, extra)


def ASNAP(m: str = "act1", **extra: Any) -> Event:
    return _ev(
        "ACTIVITY_SNAPSHOT",
        {"messageId": m, "activityType": "progress", "content": {"done": 1}},
        extra,
    )


def ADELTA(m: str = "act1", **extra: Any) -> Event:
    return _ev(
        "ACTIVITY_DELTA",
        {
            "messageId": m,
            "activityType": "progress",
            "patch": [{"op": "replace", "path": "/done", "value": 2}],
        },
        extra,
    )


def CUSTOM(name: str = "acme.ping", value: Any = ABSENT, **extra: Any) -> Event:
    return _ev("CUSTOM", {"name": name, "value": {"n": 1} if value is ABSENT else value}, extra)


def RAW(event: Any = ABSENT, **extra: Any) -> Event:
    return _ev("RAW", {"event": {"provider": "x"} if event is ABSENT else event}, extra)


# -- run input -------------------------------------------------------------------------


def run_input(
    *, tools: Iterable[str] = (), messages: Iterable[dict[str, Any]] = (), thread: str = "t"
) -> dict[str, Any]:
    """A ``RunAgentInput`` advertising ``tools`` (frontend tools, by name)."""
    return {
        "threadId": thread,
        "runId": "r",
        "messages": list(messages),
        "tools": [{"name": n, "description": f"the {n} tool"} for n in tools],
    }


def assistant(m: str, *calls: tuple[str, str], **extra: Any) -> dict[str, Any]:
    """A history ``AssistantMessage`` carrying ``(toolCallId, name)`` calls."""
    msg: dict[str, Any] = {"id": m, "role": "assistant", **extra}
    if calls:
        msg["toolCalls"] = [
            {"id": c, "type": "function", "function": {"name": n, "arguments": "{}"}}
            for c, n in calls
        ]
    return msg


def tool_message(m: str, c: str, content: Any = "ok") -> dict[str, Any]:
    return {"id": m, "role": "tool", "toolCallId": c, "content": content}


# -- short type codes ------------------------------------------------------------------

ABBR: dict[str, str] = {
    "RS": "RUN_STARTED",
    "RF": "RUN_FINISHED",
    "RE": "RUN_ERROR",
    "TS": "TOOL_CALL_START",
    "TA": "TOOL_CALL_ARGS",
    "TE": "TOOL_CALL_END",
    "TK": "TOOL_CALL_CHUNK",
    "TR": "TOOL_CALL_RESULT",
    "MS": "TEXT_MESSAGE_START",
    "MC": "TEXT_MESSAGE_CONTENT",
    "ME": "TEXT_MESSAGE_END",
    "MK": "TEXT_MESSAGE_CHUNK",
    "SS": "SUBAGENT_STARTED",
    "SF": "SUBAGENT_FINISHED",
    "SE": "SUBAGENT_ERROR",
    "STS": "STEP_STARTED",
    "STF": "STEP_FINISHED",
    "RST": "REASONING_START",
    "REN": "REASONING_END",
    "RMS": "REASONING_MESSAGE_START",
    "RMC": "REASONING_MESSAGE_CONTENT",
    "RME": "REASONING_MESSAGE_END",
    "RMK": "REASONING_MESSAGE_CHUNK",
    "REV": "REASONING_ENCRYPTED_VALUE",
    "SNAP": "STATE_SNAPSHOT",
    "DELTA": "STATE_DELTA",
    "MSNAP": "MESSAGES_SNAPSHOT",
    "ASNAP": "ACTIVITY_SNAPSHOT",
    "ADELTA": "ACTIVITY_DELTA",
    "CUSTOM": "CUSTOM",
    "RAW": "RAW",
}
_CODE = {v: k for k, v in ABBR.items()}


def codes(events: Iterable[Event]) -> str:
    """``"RS TS TA TE RF"`` for a list of events — the inverse of :data:`ABBR`."""
    return " ".join(str(_CODE.get(e["type"], e["type"])) for e in events)


# -- marks -------------------------------------------------------------------------------


@dataclass(frozen=True)
class X:
    """Marks the event a case's verdict lands on."""

    event: Any


# -- outcome of running a case -----------------------------------------------------------


@dataclass
class Outcome:
    """Everything a case can assert on, after the stream ran through the pipeline."""

    frames: list[list[Event]]
    """Delivered events per fed frame (up to and excluding the failing one)."""
    error: ProtocolViolation | None
    result: StreamResult
    partial: list[Event] = field(default_factory=list)
    """Events of the failing frame delivered before the violation (RUN-16)."""
    stays_failed: bool = True
    """After a violation, the pipeline rejected a further event with the same error."""

    @property
    def delivered(self) -> list[Event]:
        return [e for frame in self.frames for e in frame] + self.partial

    @property
    def warnings(self) -> list[ProtocolWarning]:
        return self.result.warnings

    @property
    def statuses(self) -> list[str]:
        return [r.status for r in self.result.runs]

    @property
    def pending(self) -> list[list[str]]:
        return [list(r.pending) for r in self.result.runs]

    def of(self, ident_field: str, ident: str, *types: str) -> list[Event]:
        """Delivered events naming ``ident`` in ``ident_field``, optionally of some types."""
        full = {ABBR.get(t, t) for t in types}
        return [
            e
            for e in self.delivered
            if e.get(ident_field) == ident and (not full or e["type"] in full)
        ]

    def args(self, call: str) -> str:
        """The argument text of a call: its ARGS deltas, concatenated in arrival order."""
        return "".join(e["delta"] for e in self.of("toolCallId", call, "TA"))

    def text(self, message: str) -> str:
        return "".join(e["delta"] for e in self.of("messageId", message, "MC"))

    def reasoning(self, message: str) -> str:
        return "".join(e["delta"] for e in self.of("messageId", message, "RMC"))

    def call_metadata(self, call: str) -> dict[str, Any]:
        return _merge(self.of("toolCallId", call, "TS", "TA", "TE"))

    def message_metadata(self, message: str) -> dict[str, Any]:
        return _merge(self.of("messageId", message, "MS", "MC", "ME"))

    def tool_call(self, call: str) -> dict[str, Any]:
        """The ``ToolCall`` an application would assemble from the delivered events (TOOL-26)."""
        starts = self.of("toolCallId", call, "TS")
        name = starts[0]["toolCallName"] if starts else None
        return {
            "id": call,
            "type": "function",
            "function": {"name": name, "arguments": self.args(call)},
        }


def _merge(events: Iterable[Event]) -> dict[str, Any]:
    """Metadata merge: key by key, last write wins, no recursion (META-4)."""
    out: dict[str, Any] = {}
    for e in events:
        out.update(e.get("metadata", {}))
    return out


# -- cases -------------------------------------------------------------------------------

Verdict = Literal["pass"] | tuple[Literal["fail", "warn"], str | tuple[str, ...]]


@dataclass(frozen=True)
class Check:
    """One extra assertion: ``get(outcome) == want``, described for a person."""

    what: str
    get: Callable[[Outcome], Any]
    want: Any


def That(what: str, get: Callable[[Outcome], Any], want: Any = True) -> Check:
    return Check(what, get, want)


def Args(call: str, want: str) -> Check:
    return Check(f"argument text of {call}", lambda o: o.args(call), want)


def Text(message: str, want: str) -> Check:
    return Check(f"text of {message}", lambda o: o.text(message), want)


def CallMeta(call: str, want: dict[str, Any]) -> Check:
    return Check(f"merged metadata of call {call}", lambda o: o.call_metadata(call), want)


def MsgMeta(message: str, want: dict[str, Any]) -> Check:
    return Check(
        f"merged metadata of message {message}", lambda o: o.message_metadata(message), want
    )


def Warned(rule: str, fragment: str) -> Check:
    """A warning under ``rule`` whose message contains ``fragment``."""
    return Check(
        f"a {rule} warning mentioning {fragment!r}",
        lambda o: any(w.rule == rule and fragment in w.message for w in o.warnings),
        True,
    )


@dataclass(frozen=True)
class Case:
    """One row of the rule table."""

    rule: str
    title: str
    stream: tuple[Any, ...]
    expect: Verdict = "pass"
    strict: bool = False
    run_input: Mapping[str, Any] | None = None
    types: str | None = None
    """Exact delivered event types, as short codes (``"RS TS TA TE RF"``)."""
    status: tuple[str, ...] | None = None
    """Status of each run, in order (``success``, ``truncated``…)."""
    pending: tuple[tuple[str, ...], ...] | None = None
    """Pending tool call ids of each run, in order."""
    checks: tuple[Check, ...] = ()
    also_warn: frozenset[str] = frozenset()
    """Warning rules tolerated besides the expected one (or at all, for "pass")."""
    xfail: str | None = None

    @property
    def id(self) -> str:
        return f"{self.rule}-{self.title}"

    @property
    def events(self) -> list[Any]:
        return [e.event if isinstance(e, X) else e for e in self.stream]

    @property
    def mark(self) -> int | None:
        marked = [i for i, e in enumerate(self.stream) if isinstance(e, X)]
        assert len(marked) <= 1, f"{self.id}: at most one X() mark per case"
        return marked[0] if marked else None


def case(
    rule: str,
    title: str,
    stream: Iterable[Any],
    *,
    expect: Verdict = "pass",
    strict: bool = False,
    run_input: Mapping[str, Any] | None = None,
    types: str | None = None,
    status: Iterable[str] | None = None,
    pending: Iterable[Iterable[str]] | None = None,
    checks: Iterable[Check] = (),
    also_warn: Iterable[str] = (),
    xfail: str | None = None,
) -> Case:
    return Case(
        rule=rule,
        title=title,
        stream=tuple(stream),
        expect=expect,
        strict=strict,
        run_input=run_input,
        types=types,
        status=tuple(status) if status is not None else None,
        pending=tuple(tuple(p) for p in pending) if pending is not None else None,
        checks=tuple(checks),
        also_warn=frozenset(also_warn),
        xfail=xfail,
    )


def beyond(rule: str, title: str, stream: Iterable[Any], **kw: Any) -> list[Case]:
    """A beyond-the-official-client check: a warning by default, fatal in strict mode.

    The stream must mark the offending event with :class:`X`. The strict twin
    drops the run-summary and delivered-type expectations (the stream stops
    at the violation).
    """
    stream = list(stream)
    assert any(isinstance(e, X) for e in stream), f"{rule}-{title}: mark the offending event"
    warn = case(rule, f"{title}-warns", stream, expect=("warn", rule), **kw)
    strict_kw = {k: v for k, v in kw.items() if k in ("run_input", "also_warn", "xfail")}
    fail = case(
        rule, f"{title}-strict-fails", stream, expect=("fail", rule), strict=True, **strict_kw
    )
    return [warn, fail]


# -- running ---------------------------------------------------------------------------------


def run_case(c: Case, *, as_json: bool = False) -> Outcome:
    """Feed the case's stream — parsed objects, or JSON texts with ``as_json`` —
    through a fresh pipeline, stopping at the first violation; then close it."""
    pipe = ConsumerPipeline(run_input=c.run_input, strict=c.strict)
    frames: list[list[Event]] = []
    error: ProtocolViolation | None = None
    stays_failed = True
    for event in c.events:
        try:
            frames.append(pipe.feed(orjson.dumps(event) if as_json else event))
        except ProtocolViolation as exc:
            error = exc
            break
    partial = list(pipe.partial) if error is not None else []
    if error is not None:
        # a failed pipeline rejects everything after the violation, with the same error
        try:
            pipe.feed({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
            stays_failed = False
        except ProtocolViolation as again:
            stays_failed = again is error
    result = pipe.close()
    return Outcome(frames, error, result, partial, stays_failed)


def _rules(spec: str | tuple[str, ...]) -> tuple[str, ...]:
    return (spec,) if isinstance(spec, str) else spec


def check_case(c: Case, o: Outcome) -> None:
    """Assert everything a case says about its outcome."""
    warned = [(w.rule, w.index, w.message) for w in o.warnings]
    if c.expect == "pass":
        assert o.error is None, f"expected the stream to be consumed, got {o.error}"
        assert o.result.outcome == "completed"
        unexpected = [w for w in warned if w[0] not in c.also_warn]
        assert not unexpected, f"expected a quiet stream, got warnings {unexpected}"
    else:
        verdict, spec = c.expect
        rules = _rules(spec)
        if verdict == "fail":
            assert o.error is not None, (
                f"expected a {'/'.join(rules)} violation, but the stream was consumed "
                f"(warnings: {warned})"
            )
            assert o.error.rule in rules, f"expected {'/'.join(rules)}, got {o.error}"
            at = c.mark if c.mark is not None else len(c.stream) - 1
            assert o.error.index == at, (
                f"expected the violation at event #{at}, got it at #{o.error.index}: {o.error}"
            )
            assert o.result.outcome == "failed"
            assert o.result.error is o.error
            assert o.stays_failed, "the failed pipeline must keep rejecting with the same error"
        else:
            assert o.error is None, f"expected a {'/'.join(rules)} warning, got {o.error}"
            assert o.result.outcome == "completed"
            hits = [w for w in warned if w[0] in rules]
            assert hits, f"expected a {'/'.join(rules)} warning, got {warned}"
            if c.mark is not None:
                assert any(w[1] == c.mark for w in hits), (
                    f"expected the {'/'.join(rules)} warning on event #{c.mark}, got {hits}"
                )
            others = [w for w in warned if w[0] not in rules and w[0] not in c.also_warn]
            assert not others, f"unexpected extra warnings {others}"
    if c.types is not None:
        assert codes(o.delivered) == c.types, "delivered event types"
    if c.status is not None:
        assert tuple(o.statuses) == c.status, "run statuses"
    if c.pending is not None:
        assert tuple(tuple(p) for p in o.pending) == c.pending, "pending tool calls per run"
    for chk in c.checks:
        got = chk.get(o)
        assert got == chk.want, f"{chk.what}: expected {chk.want!r}, got {got!r}"


def by_rule(cases: Iterable[Case]) -> dict[str, list[str]]:
    """``{rule: [case ids]}``, rules in first-appearance order."""
    out: dict[str, list[str]] = {}
    for c in cases:
        out.setdefault(c.rule, []).append(c.id)
    return out
