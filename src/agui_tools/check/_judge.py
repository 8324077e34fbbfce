"""Judging one stream the agent sent: the full consumer pipeline, then the producer's duties.

Every stream goes through the :class:`~agui_tools.wire.ConsumerPipeline` and
:class:`~agui_tools.app.ThreadState` a client uses, seeded with its run input. On top, what
only a checker knowing its request can judge:

* a fatal violation is a ``fail``; producer MUSTs among the warnings
  (:data:`PRODUCER_MUSTS`: FE-2, FE-3, FE-5, TOOL-10 …) ``fail``, other warnings ``warn``;
* a body without a terminal event is a truncated run (TRANS-1);
* a binary body is replayed as the client does and must end on a frame boundary (TRANS-7,
  naming the frame's index and offset);
* the run echoes the input's ``runId`` (INPUT-3);
* history already carried is restated as snapshots, never re-streamed (RUN-14, TOOL-7).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import orjson

from .._errors import LimitExceeded, ProtocolViolation
from ..app._capture import replay
from ..app._reducer import ThreadState
from ..wire._framing import FrameNote
from ..wire._kinds import WireEvent
from ..wire._verify import PRODUCER_MUSTS, Limits, RunSummary, beside_its_call
from ._report import Exchange, Finding, Verdict

if TYPE_CHECKING:
    from ._probe import Sent

__all__ = ["PRODUCER_MUSTS", "Judged", "judge_stream", "slow_advice"]

_RESTREAM: Final = {
    "TOOL_CALL_START": ("toolCallId", "tool call"),
    "TOOL_CALL_CHUNK": ("toolCallId", "tool call"),
    "TEXT_MESSAGE_START": ("messageId", "message"),
    "TEXT_MESSAGE_CHUNK": ("messageId", "message"),
}


@dataclass
class Judged:
    """What one stream amounted to."""

    findings: list[Finding] = field(default_factory=list)
    runs: list[RunSummary] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    """The raw events as parsed (``{}`` for a frame that is not a JSON object)."""
    delivered: list[WireEvent] = field(default_factory=list)
    """What the pipeline delivered (enforced, chunks expanded): what an application sees."""
    thread: ThreadState | None = None
    error: ProtocolViolation | None = None

    @property
    def clean(self) -> bool:
        return not any(f.verdict is Verdict.FAIL for f in self.findings)

    @property
    def last(self) -> RunSummary | None:
        return self.runs[-1] if self.runs else None

    def of_type(self, kind: str) -> list[tuple[int, dict[str, Any]]]:
        return [(i, ev) for i, ev in enumerate(self.events) if ev.get("type") == kind]


def slow_advice(bound: float) -> int:
    """The ``--timeout`` to suggest when ``bound`` seconds cut a stream still streaming."""
    return max(30, math.ceil(bound * 3))


def judge_stream(
    exchange: Exchange,
    at: int,
    run_input: Mapping[str, Any],
    *,
    abandoned: bool = False,
    capped: bool = False,
    binary: Sent | None = None,
    slow: float | None = None,
) -> Judged:
    """Judge ``exchange`` (the ``at``-th of its case) as the answer to ``run_input``.

    ``abandoned``: the checker dropped it on purpose (a missing end is not the agent's).
    ``capped``: reading stopped at ``_probe.STREAM_CAP`` (a warning). ``binary``: the frames as
    the reader handed them on, and where the body ended. ``slow``: the time bound (seconds)
    passed mid-stream; the finding says to give more time.
    """
    out = Judged()
    frames: list[Any] = binary.items if binary is not None else list(exchange.frames)
    # a note of a dropped frame (or part) takes no event index, in the pipeline or here
    out.events = [_parse(f) for f in frames if not isinstance(f, FrameNote)]
    # the same fold as `agui-tools verify`: pipeline, then reducer (whose limits —
    # state and message size — reject the stream like the pipeline's do)
    folded = replay(frames, run_input=run_input, limits=Limits())
    out.delivered = folded.events
    out.thread = folded.thread
    result = folded.result
    out.runs = result.runs
    out.error = result.error
    if result.error is not None:
        err = result.error
        verdict = Verdict.WARN if isinstance(err, LimitExceeded) else Verdict.FAIL
        out.findings.append(Finding(verdict, err.rule, _text(err.rule, err), at, err.index))
    for warning in result.warnings:
        verdict = Verdict.FAIL if warning.rule in PRODUCER_MUSTS else Verdict.WARN
        text = _text(warning.rule, warning)
        if warning.rule == "AGT-SNAP-2":
            verdict, text = _restated_result(out, run_input, warning.index, warning.ids)
        out.findings.append(Finding(verdict, warning.rule, text, at, warning.index))
    if capped:
        out.findings.append(
            Finding(
                Verdict.WARN,
                "LIMIT",
                f"{exchange.error}: a run that does not end within that is not one a client "
                "can hold; what arrived is judged.",
                at,
                len(exchange.frames) - 1 if exchange.frames else None,
            )
        )
    if slow is not None:
        out.findings.append(
            Finding(
                Verdict.INFO,
                "TIMEOUT",
                f"{exchange.error}: the agent was streaming, not hung, and what arrived is "
                "judged — what it would have sent after could not be; give a slow agent more "
                f"time: --timeout {slow_advice(slow)}.",
                at,
                len(exchange.frames) - 1 if exchange.frames else None,
            )
        )
    if result.error is None and not abandoned and not capped and slow is None:
        for run in result.runs:
            if run.status == "truncated":
                last = len(exchange.frames) - 1 if exchange.frames else None
                why = f" ({exchange.error})" if exchange.error else ""
                out.findings.append(
                    Finding(
                        Verdict.FAIL,
                        "TRANS-1",
                        f"the response body ended without a terminal event{why}: a truncated "
                        "run; the producer closes the body after the run's RUN_FINISHED or "
                        "RUN_ERROR.",
                        at,
                        last,
                    )
                )
    if binary is not None and not abandoned and not capped:
        _check_frames(out, at, binary, result.error)
    if result.error is None:
        _check_echo(out, at, run_input)
    _check_restream(out, at, run_input)
    _check_snapshot_answers(out, at, run_input)
    return out


def _text(rule: str, what: object) -> str:
    """The pipeline's message without its ``[RULE]`` prefix: the finding carries the rule."""
    return str(what).removeprefix(f"[{rule}] ")


def _check_frames(out: Judged, at: int, body: Sent, error: ProtocolViolation | None) -> None:
    """A binary body ends on a frame boundary (TRANS-7): nothing cut, nothing trailing."""
    tail = body.tail
    if tail is None or (error is not None and not isinstance(error, LimitExceeded)):
        return  # whole frames; or a frame that does not decode, failed at its position
    after = body.received - tail.offset  # the body's bytes from the frame's header on
    frame = "a frame is a 4-byte big-endian length, then exactly that many bytes of one event"
    if tail.announced is None:
        where = f"after frame #{tail.number - 1}" if tail.number else "before any frame"
        message = (
            f"the body ends with {after} byte(s) at byte {tail.offset}, {where}: fewer than a "
            f"frame's length header. Frames abut with nothing between or after them; {frame}."
        )
    elif after - 4 < tail.announced:
        message = (
            f"frame #{tail.number} at byte {tail.offset} announces {tail.announced} bytes, but "
            f"the body ends {after - 4} byte(s) into it: {frame}; a body that ends mid-frame is "
            "a truncated run (TRANS-2)."
        )
    else:
        return  # a frame over the checker's own limit that did arrive whole: LIMIT says so
    out.findings.append(Finding(Verdict.FAIL, "TRANS-7", message, at, None))


def _parse(frame: Any) -> dict[str, Any]:
    if isinstance(frame, dict):
        return frame
    try:
        value = orjson.loads(frame)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _check_echo(out: Judged, at: int, run_input: Mapping[str, Any]) -> None:
    """The requested run echoes the input's runId (INPUT-3); replayed runs come first."""
    wanted = run_input.get("runId")
    started = out.of_type("RUN_STARTED")
    if not started or wanted is None:
        return
    index, last = started[-1]
    if last.get("runId") != wanted:
        out.findings.append(
            Finding(
                Verdict.FAIL,
                "INPUT-3",
                f"event #{index} RUN_STARTED carries runId {last.get('runId')!r}, but the "
                f"requested run must echo the input's runId {wanted!r} (replayed runs carry "
                "their own, before it).",
                at,
                index,
            )
        )


def _check_restream(out: Judged, at: int, run_input: Mapping[str, Any]) -> None:
    """History restated by re-streaming instead of a snapshot (RUN-14)."""
    known: dict[str, str] = {}
    for message in run_input.get("messages") or ():
        if isinstance(message, Mapping):
            known[str(message.get("id"))] = "message"
            for call in message.get("toolCalls") or ():
                if isinstance(call, Mapping):
                    known[str(call.get("id"))] = "tool call"
    if not known:
        return
    for index, ev in enumerate(out.events):
        spec = _RESTREAM.get(ev.get("type", ""))
        if spec is None:
            continue
        key, noun = spec
        ident = ev.get(key)
        if isinstance(ident, str) and known.get(ident) == noun:
            what = (
                "its arguments are appended to the call's own (TOOL-7), so the thread now holds "
                "them twice"
                if noun == "tool call"
                else "its text is appended to the message's own (TEXT-2)"
            )
            out.findings.append(
                Finding(
                    Verdict.FAIL,
                    "RUN-14",
                    f"event #{index} {ev['type']} re-streams {noun} {ident!r}, which the run "
                    f"input already carried; {what}. History is restated as MESSAGES_SNAPSHOT, "
                    "never re-streamed.",
                    at,
                    index,
                )
            )
            return


def _tool_messages(ev: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    messages = ev.get("messages")
    if not isinstance(messages, list):
        return []
    return [m for m in messages if isinstance(m, Mapping) and m.get("role") == "tool"]


def _check_snapshot_answers(out: Judged, at: int, run_input: Mapping[str, Any]) -> None:
    """A tool message a ``MESSAGES_SNAPSHOT`` brings for a call nothing had answered.

    To an advertised tool it is the fabricated result FE-2 forbids (``fail``); to the agent's
    own, a result a consumer deriving pending calls from the stream never sees (FE-5, FE-6) —
    FE-12's in-stream ``TOOL_CALL_RESULT`` not used (``warn``).
    """
    advertised = {t.get("name") for t in run_input.get("tools") or () if isinstance(t, Mapping)}
    names: dict[str, str] = {}
    answered: set[str] = set()
    from_input: set[str] = set()
    for message in run_input.get("messages") or ():
        if not isinstance(message, Mapping):
            continue
        if message.get("role") == "tool":
            answered.add(str(message.get("toolCallId")))
        for c in message.get("toolCalls") or ():
            if isinstance(c, Mapping) and isinstance(c.get("function"), Mapping):
                names[str(c.get("id"))] = str(c["function"].get("name"))
                from_input.add(str(c.get("id")))
    for index, ev in enumerate(out.events):
        kind = ev.get("type")
        if kind in ("TOOL_CALL_START", "TOOL_CALL_CHUNK") and isinstance(
            ev.get("toolCallName"), str
        ):
            names.setdefault(str(ev.get("toolCallId")), ev["toolCallName"])
        elif kind == "TOOL_CALL_RESULT":
            answered.add(str(ev.get("toolCallId")))
        elif kind == "MESSAGES_SNAPSHOT":
            for message in ev.get("messages") or ():
                if not isinstance(message, Mapping):
                    continue
                for c in message.get("toolCalls") or ():
                    if isinstance(c, Mapping) and isinstance(c.get("function"), Mapping):
                        names.setdefault(str(c.get("id")), str(c["function"].get("name")))
            for message in _tool_messages(ev):
                cid = str(message.get("toolCallId"))
                if cid in answered:
                    continue
                answered.add(cid)
                name = names.get(cid, "?")
                whose = "the run input left unanswered" if cid in from_input else "this run made"
                if name in advertised:
                    out.findings.append(
                        Finding(
                            Verdict.FAIL,
                            "FE-2",
                            f"event #{index} MESSAGES_SNAPSHOT carries tool message "
                            f"{message.get('id')!r} answering call {cid!r} to {name!r}, a "
                            f"frontend tool the run input advertised, which {whose}: a "
                            "fabricated tool message. A producer that calls a frontend tool "
                            "MUST NOT answer it; the result is the application's to produce.",
                            at,
                            index,
                        )
                    )
                else:
                    out.findings.append(
                        Finding(
                            Verdict.WARN,
                            "FE-12",
                            f"event #{index} MESSAGES_SNAPSHOT is the only answer to call "
                            f"{cid!r} to {name!r} (the agent's own tool, which {whose}): no "
                            "TOOL_CALL_RESULT carried it. The producer's own tools answer "
                            "in-stream via TOOL_CALL_RESULT; a consumer deriving the pending "
                            "calls from the stream (FE-5, FE-6: every call the run started "
                            "that received no result) counts this one as left to the "
                            "application.",
                            at,
                            index,
                        )
                    )


def _restated_result(
    out: Judged, run_input: Mapping[str, Any], index: int | None, ids: Mapping[str, str]
) -> tuple[Verdict, str]:
    """AGT-SNAP-2 as this stream shows it: where the earlier id came from, and whether the
    restated result moved away from its call in the consumer's thread (``warn``) or every id
    was re-minted in order, keeping the thread's shape (``info``).
    """
    call_id, restated = ids.get("toolCallId", "?"), ids.get("messageId", "?")
    earlier = ids.get("resultMessageId", "?")
    origin = f"the thread held it as message {earlier!r}"
    for i, ev in enumerate(out.events[: index if index is not None else None]):
        if ev.get("type") == "TOOL_CALL_RESULT" and ev.get("messageId") == earlier:
            origin = f"its TOOL_CALL_RESULT at event #{i} minted it as message {earlier!r}"
            break
        if ev.get("type") == "MESSAGES_SNAPSHOT" and any(
            m.get("id") == earlier for m in _tool_messages(ev)
        ):
            origin = f"the MESSAGES_SNAPSHOT at event #{i} restated it as message {earlier!r}"
            break
    else:
        if any(
            isinstance(m, Mapping) and m.get("id") == earlier
            for m in run_input.get("messages") or ()
        ):
            origin = f"the run input carried it as message {earlier!r}"
    where = f"event #{index} MESSAGES_SNAPSHOT: " if index is not None else ""
    head = f"{where}MESSAGES_SNAPSHOT restates the result of tool call {call_id!r} as message "
    if _beside_its_call(out, call_id):
        return Verdict.INFO, (
            f"{head}{restated!r}, but {origin}. Reconciled by id, {earlier!r} is dropped and "
            f"{restated!r} appended; the snapshot re-mints the messages around it too, so the "
            "result stays beside its call and the thread keeps its shape — only what an "
            f"application keyed to {earlier!r} loses its message."
        )
    return Verdict.WARN, (
        f"{head}{restated!r}, but {origin}; reconciled by id, {earlier!r} is dropped and "
        f"{restated!r} is appended after the messages the thread kept, away from its call."
    )


def _beside_its_call(out: Judged, call_id: str) -> bool:
    """In the thread the stream left, the call's tool message sits beside its call."""
    return out.thread is not None and beside_its_call(out.thread.messages, call_id)
