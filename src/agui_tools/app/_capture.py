"""Replaying a captured stream through the whole consumer: pipeline + reducer.

Used by ``agui-tools verify``, the conformance runner and tests. A captured
stream is a JSON array of events, NDJSON, an SSE body or a binary-binding body
(length-prefixed protobuf frames, TRANS-7) — sniffed from its first bytes — and
goes through exactly the stages a live stream does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from .._errors import ProtocolViolation, ProtocolWarning
from ..wire._codec import parse_json
from ..wire._framing import BrokenFrame, NDJSONReader, SSEReader, sniff_format
from ..wire._kinds import WireEvent
from ..wire._pipeline import ConsumerPipeline, Middleware, StreamResult
from ..wire._verify import Limits
from ._reducer import ThreadState

__all__ = [
    "CaptureVerdict",
    "ndjson_unfinished_at",
    "read_frames",
    "replay",
    "sse_unfinished_at",
    "truncation",
    "truncation_at",
    "unfinished_at",
    "verify_capture",
]


@dataclass
class CaptureVerdict:
    """What a stream amounted to: the verdict, what was delivered, and the thread."""

    result: StreamResult
    events: list[WireEvent]
    thread: ThreadState
    truncated: dict[str, Any] | None = None
    """Where the capture ends mid-run (:func:`truncation`); ``None`` when no run was cut
    — or when the verdict was not made from the capture's bytes."""

    @property
    def warnings(self) -> list[ProtocolWarning]:
        return self.result.warnings

    @property
    def outcome(self) -> str:
        """``"completed"``, ``"failed"``, ``"truncated"`` — or ``"empty"``: the capture
        holds no run (keep-alives only), and nothing was completed."""
        if self.truncated is not None:  # cut mid-run or mid-event: no outcome (TRANS-2)
            return "truncated"
        if self.result.error is None and not self.runs:
            return "empty"
        return self.result.outcome

    @property
    def runs(self) -> list[Any]:
        """The runs the capture holds (the verifier's entry for a stream that started none
        is no run)."""
        return [r for r in self.result.runs if r.run_id is not None]

    def to_json(self) -> dict[str, Any]:
        """The ``verify --json`` document."""
        error = self.result.error
        return {
            "outcome": self.outcome,
            "error": None
            if error is None
            else {
                "rule": error.rule,
                "index": error.index,
                "message": str(error),
                **error.to_json(),
            },
            "warnings": [w.to_json() | {"text": str(w)} for w in self.result.warnings],
            "events": self.events,
            "runs": [r.to_json() for r in self.runs],
            "messages": self.thread.messages,
            "state": self.thread.state,
            "truncated": self.truncated,
        }

    def lines(self) -> list[str]:
        """The verdict as ``agui-tools verify`` prints it, line by line (the agent's text
        in it unescaped: a terminal escapes each line, a page shows it as text)."""
        result = self.result
        out = [f"warning {w}" for w in result.warnings]
        if result.error is not None:
            out.append(f"VIOLATION {result.error}")
            if result.error.rule == "LIMIT":
                out.append("  (a limit: --limit NAME=N sets it)")
        out.append(
            f"{result.events} event(s) read, {len(self.events)} delivered, "
            f"{len(result.warnings)} warning(s)"
        )
        for r in self.runs:
            line = f"  thread {r.thread_id!r} run {r.run_id!r}: {r.status}"
            if r.pending:
                line += f", pending tool calls: {', '.join(r.pending)}"
            if r.error:
                line += f", error: {r.error.get('message')}"
            out.append(line)
        cut = self.truncated
        if cut is not None:
            out.append(f"TRUNCATED [{cut['rule']}] {cut['message']}")
            out.append("outcome: truncated (not a success)")
            return out
        if self.outcome == "empty":
            out.append("outcome: empty (no run in the capture: keep-alives only — not a success)")
            return out
        out.append(f"outcome: {result.outcome}" + (" (stream rejected)" if result.error else ""))
        return out


_SSE_LINE: Final = re.compile(rb"^(?::|(?:data|event|id|retry)(?::|$))", re.MULTILINE)


def read_frames(data: bytes, *, limits: Limits | None = None) -> list[bytes | str | Any]:
    """Split a captured stream into frames (JSON texts or parsed events).

    Raises :class:`ProtocolViolation` (rule TRANS-4) when the capture cannot
    be read as any of the three formats: it is not UTF-8 text (every format
    is), it is not valid JSON where JSON is expected, or nothing in it is an
    event, an SSE field or an SSE comment — an empty or binary file is not an
    empty stream, and judging it "completed" would say something untrue.
    """
    limits = limits or Limits()
    if sniff_format(data[:64]) == "proto":
        from ..wire._proto_framing import ProtoReader

        # events, notes of dropped frames, and a BrokenFrame where a frame did not decode:
        # the pipeline judges each at its position; a body cut mid-frame is a truncated run
        binary = ProtoReader(
            max_event_bytes=limits.max_event_bytes, max_depth=limits.max_depth
        ).feed_frames(data)
        if not binary:
            announced = int.from_bytes(data[:4].ljust(4, b"\x00"), "big")
            raise ProtocolViolation(
                "TRANS-7",
                f"no complete binary frame: the first announces {announced} bytes and "
                f"{max(len(data) - 4, 0)} follow — not a binary-binding body, or a cut one.",
                where="capture",
            )
        return binary
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolViolation(
            "TRANS-4",
            f"not UTF-8 text (byte {exc.start}); a JSON array, NDJSON or an SSE body always is.",
            where="capture",
        ) from None
    kind = sniff_format(data[:64])
    if kind == "json":
        events = parse_json(data, where="capture")
        if not isinstance(events, list):
            raise ProtocolViolation(
                "TRANS-4", "a JSON capture must be an array of events.", where="capture"
            )
        if not events:  # as an empty file: nothing was captured, which is no stream
            raise ProtocolViolation(
                "TRANS-4", "an empty JSON array: no event was captured.", where="capture"
            )
        return list(events)
    if kind == "ndjson":
        cut = ndjson_unfinished_at(data)
        if cut is not None:  # a capture cut inside its last line: that event is unfinished
            data = data[:cut]
        reader = NDJSONReader(max_event_bytes=limits.max_event_bytes)
        lines: list[bytes | str | Any] = []
        for line in data.splitlines(keepends=True):
            try:
                lines.extend(reader.feed(line))
            except ProtocolViolation as exc:
                # a line over a limit is judged at its position (LIMIT, exit 1), as a live
                # stream's is — the capture is readable, the stream is refused
                lines.append(BrokenFrame(exc))
                return lines
        return [*lines, *reader.close()]
    sse = SSEReader(max_event_bytes=limits.max_event_bytes)
    frames: list[bytes | str | Any] = list(sse.feed_frames(data))
    if not frames and _SSE_LINE.search(data.removeprefix(b"\xef\xbb\xbf")) is None:
        raise ProtocolViolation(
            "TRANS-4",
            "no event found: not a JSON array, NDJSON, or an SSE body (no data, event, id or "
            "retry field and no comment line).",
            where="capture",
        )
    return frames


def replay(
    frames: Iterable[bytes | str | Mapping[str, Any]],
    *,
    run_input: Mapping[str, Any] | None = None,
    strict: bool = False,
    middleware: Sequence[Middleware] = (),
    limits: Limits | None = None,
    initial_messages: Sequence[Mapping[str, Any]] | None = None,
) -> CaptureVerdict:
    """Run frames through pipeline and reducer; never raises for a bad stream.

    A rejected stream shows as ``result.outcome == "failed"``; everything
    delivered before the violation stays in ``events`` and the thread.
    """
    messages = (
        initial_messages if initial_messages is not None else (run_input or {}).get("messages", ())
    )
    pipe = ConsumerPipeline(
        run_input=run_input, strict=strict, middleware=middleware, limits=limits
    )
    # reducer warnings join the stream's, in order
    thread = ThreadState(
        messages, (run_input or {}).get("state"), on_warning=pipe.record_warning, limits=limits
    )
    delivered: list[WireEvent] = []
    for frame in frames:
        if fold_frame(pipe, thread, frame, delivered):
            break
    return CaptureVerdict(pipe.close(), delivered, thread)


def fold_frame(
    pipe: ConsumerPipeline,
    thread: ThreadState,
    frame: bytes | str | Mapping[str, Any],
    delivered: list[WireEvent] | None = None,
) -> bool:
    """One frame through the pipeline, then its events into the thread: the step every
    judge of a stream takes (:func:`replay`, the proxy's :class:`~._watch.StreamWatch`).

    ``True`` when the stream broke here — the pipeline's violation, or a limit the
    reducer keeps (state, message size), which the pipeline then holds as its error
    (``pipe.error``). The events the thread took, those before a break included, are
    appended to ``delivered``.
    """
    failed = False
    try:
        events = pipe.feed(frame)
    except ProtocolViolation:
        events, failed = pipe.partial, True
    try:
        for ev in events:
            thread.apply(ev, pipe.index)
            if delivered is not None:
                delivered.append(ev)
    except ProtocolViolation as exc:  # a limit the reducer keeps (state, message size)
        pipe.reject(exc)
        return True
    return failed


def verify_capture(
    data: bytes | str,
    *,
    run_input: Mapping[str, Any] | None = None,
    strict: bool = False,
    limits: Limits | None = None,
) -> CaptureVerdict:
    """Judge a captured stream as a conforming consumer would — ``agui-tools verify`` as a call.

    ``data`` is a JSON array of events, NDJSON, an SSE body or a binary-binding
    body (sniffed from its first bytes). The verdict's :meth:`CaptureVerdict.to_json` is the document
    ``agui-tools verify --json`` prints; ``truncated`` says where a capture cut
    mid-run stops (TRANS-2). A stream that breaks a rule is a
    verdict (``result.outcome == "failed"``), not an exception; only a capture
    that is no stream at all raises :class:`ProtocolViolation` (TRANS-4).
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    verdict = replay(
        read_frames(raw, limits=limits), run_input=run_input, strict=strict, limits=limits
    )
    verdict.truncated = truncation(verdict, raw)
    return verdict


def truncation(outcome: CaptureVerdict, data: bytes) -> dict[str, Any] | None:
    """Where the capture ends mid-run (``None``: every run it started ended).

    A truncated run has no outcome and is never a success (TRANS-2; RUN-9): the
    verdict names the run, the last event read, and the byte the capture stops
    at — and where an unfinished event (an SSE event without its blank line, a
    binary frame without all its bytes) begins. A capture holding no event at
    all (keep-alives only) started no run, and is not cut.
    """
    return truncation_at(outcome.result, len(data), lambda: unfinished_at(data))


def truncation_at(
    result: StreamResult, size: int, unfinished: Callable[[], int | None]
) -> dict[str, Any] | None:
    """:func:`truncation` for a stream judged as it went by, whose bytes are not kept:
    ``size`` bytes in all, ``unfinished()`` where its last, unfinished event begins
    (asked only when a run was cut) — what ``agui-tools proxy`` knows of a live body."""
    if result.error is not None:
        return None
    # a capture holding no whole event (keep-alives only) started no run
    cut = [r for r in result.runs if r.status == "truncated"] if result.events else []
    # a capture may also stop inside an event no run holds yet: the first event of the
    # capture, or the first event of the next run after one that ended — still cut
    start = unfinished()
    if not cut and start is None:
        return None  # every run ended and nothing follows but whole events or keep-alives
    run = cut[-1] if cut else None
    where = (
        f"after event {result.events - 1}, at byte {size}"
        if result.events
        else f"before any whole event, at byte {size}"
    )
    if start is not None:
        where += f", inside an unfinished event that starts at byte {start}"
    run_id = run.run_id if run is not None else None
    if run is None:
        ident = "the stream:"
        what = "the capture ends inside an event"
    else:
        ident = f"run {run_id!r}" if run_id else "the stream"
        what = "has no terminal event: the capture ends mid-run"
    return {
        "rule": "TRANS-2",
        "runId": run_id,
        "index": result.events - 1 if result.events else None,
        "offset": size,
        "unfinishedAt": start,
        "message": f"{ident} {what} {where}; a truncated run has no outcome and is not a success",
    }


def unfinished_at(data: bytes) -> int | None:
    """The byte offset where the capture's last, unfinished event starts (``None``: none)."""
    kind = sniff_format(data[:64])
    if kind == "proto":
        from ..wire._proto_framing import unfinished_frame_at

        # framing only: a frame the verdict's reader (its limits raised) read whole is
        # whole here too, whatever a default-limit decode would make of it
        return unfinished_frame_at(data)
    if kind == "ndjson":
        return ndjson_unfinished_at(data)
    if kind != "sse":
        return None
    return sse_unfinished_at(data)


def ndjson_unfinished_at(data: bytes) -> int | None:
    """Where an NDJSON capture's last line starts when the capture stops inside it: no
    newline after it, and it is not yet a JSON text (``None``: it ends on a whole line)."""
    end = data.rfind(b"\n") + 1
    rest = data[end:]
    if not rest.strip():
        return None
    try:
        orjson.loads(rest)
    except orjson.JSONDecodeError:
        return end
    return None


def sse_unfinished_at(data: bytes) -> int | None:
    """Where an SSE body's last, unfinished event starts (``None``: it ends on an event's
    end, or with comments only) — for a body read from its start, or from an event's end."""
    ends = [data.rfind(sep) + len(sep) for sep in (b"\n\n", b"\r\n\r\n", b"\r\r")]
    end = max([e for e in ends if e >= 4] or [0])  # found: past its separator
    rest = data[end:]
    if all(line.startswith(b":") for line in rest.splitlines() if line.strip()):
        return None  # the last event ended; only blank or comment lines follow
    return end


def dumps(document: Any) -> bytes:
    return orjson.dumps(document, option=orjson.OPT_INDENT_2)
