"""Replaying a captured stream through the whole consumer: pipeline + reducer.

A capture (JSON array, NDJSON, SSE or binary frames, TRANS-7, sniffed from its first bytes)
goes through exactly the stages a live stream does.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from .._errors import LimitExceeded, ProtocolViolation, ProtocolWarning
from ..wire._codec import parse_json
from ..wire._event_ids import EventSeq
from ..wire._framing import BrokenFrame, NDJSONReader, SSEReader, sniff_format
from ..wire._kinds import WireEvent
from ..wire._pipeline import ConsumerPipeline, Middleware, StreamResult
from ..wire._verify import Limits
from ._reducer import ThreadState

__all__ = [
    "CaptureVerdict",
    "FrameStream",
    "ndjson_unfinished_at",
    "read_frames",
    "read_frames_and_ids",
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
    ids: dict[str, Any] | None = None
    """The resumable binding's event ids the capture carried (:meth:`EventSeq.report`:
    each run's last seq, the replayed events dropped); ``None`` when it had none."""

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
            **({"ids": self.ids} if self.ids is not None else {}),
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
        if self.ids is not None:
            out.append(_ids_line(self.ids))
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


def _ids_line(ids: Mapping[str, Any]) -> str:
    runs = ", ".join(f"run {run!r} seq 1–{last}" for run, last in ids["runs"].items())
    line = f"  event ids (docs/resumable.md): {runs or 'none'}"
    replayed = ids["replayed"]
    if replayed:
        line += (
            f"; {len(replayed)} replayed event(s) dropped as already read (RESUME-5), "
            "first: " + ", ".join(f"{r['runId']!r}:{r['seq']}" for r in replayed[:3])
        )
    return line


_SSE_LINE: Final = re.compile(rb"^(?::|(?:data|event|id|retry)(?::|$))", re.MULTILINE)


def read_frames(data: bytes, *, limits: Limits | None = None) -> list[bytes | str | Any]:
    """Split a captured stream into frames (JSON texts or parsed events).

    Raises :class:`ProtocolViolation` (TRANS-4) when it is no format: not UTF-8, bad JSON, or
    nothing in it an event or SSE line — an empty file is not an empty, "completed" stream.
    """
    stream = FrameStream(limits=limits)
    return stream.feed(data) + stream.close()


def read_frames_and_ids(
    data: bytes, *, limits: Limits | None = None
) -> tuple[list[bytes | str | Any], dict[str, Any] | None]:
    """:func:`read_frames`, and what the resumable binding's ids in it amount to
    (:attr:`CaptureVerdict.ids`)."""
    stream = FrameStream(limits=limits)
    frames = stream.feed(data) + stream.close()
    return frames, stream.seq.report()


_SNIFF_BYTES: Final = 64
_BOM: Final = b"\xef\xbb\xbf"
_SSE_ENDS: Final = (b"\n\n", b"\r\n\r\n", b"\r\r")


class FrameStream:
    """:func:`read_frames` fed in chunks, handing on each frame as it completes, so a loader
    never holds the capture's text too (``agui-tools mock``).

    Only a JSON array is held whole until :meth:`close`, which also says where an unfinished
    last event starts (:attr:`unfinished_at`).
    """

    def __init__(self, *, limits: Limits | None = None) -> None:
        self._limits = limits or Limits()
        self._head = bytearray()  # the first bytes, until they say the format
        self.kind: str | None = None
        self.size = 0
        """Bytes fed so far."""
        self.unfinished_at: int | None = None
        """After :meth:`close`: where the capture's unfinished last event starts."""
        self._announced = 0  # a binary body: the length its first header announces
        self._framed = False  # a frame (or a dropped frame's note) came out
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._proto: Any = None
        self._sse: SSEReader | None = None
        self._ndjson: NDJSONReader | None = None
        self._whole = bytearray()  # a JSON array's text
        self._tail = bytearray()  # SSE: the bytes since the last event's end …
        self._tail_at = 0  # … and the capture offset they start at
        self._sse_seen = False  # an SSE field or comment line was read
        self.seq = EventSeq()
        """SSE: the resumable binding's ids, judged (a replayed event dropped, a gap
        refused in its place); standard events without ids pass."""

    def feed(self, chunk: bytes) -> list[bytes | str | Any]:
        """The frames ``chunk`` completed."""
        if self.kind is None:
            self._head += chunk
            if len(self._head) < _SNIFF_BYTES:
                return []
            chunk, self._head = bytes(self._head), bytearray()
            self._start(chunk)
        return self._feed(chunk)

    def close(self) -> list[bytes | str | Any]:
        """The frames the end of the capture completes; raises when it was no stream."""
        out: list[bytes | str | Any] = []
        if self.kind is None:
            head, self._head = bytes(self._head), bytearray()
            self._start(head)
            out = self._feed(head)
        if self.kind == "proto":
            if not self._framed:
                raise ProtocolViolation(
                    "TRANS-7",
                    f"no complete binary frame: the first announces {self._announced} bytes "
                    f"and {max(self.size - 4, 0)} follow — not a binary-binding body, or a cut "
                    "one.",
                    where="capture",
                )
            pending = self._proto.pending_frame()
            self.unfinished_at = pending.offset if pending is not None else None
            return out
        self._utf8_check(b"", final=True)
        if self.kind == "json":
            whole, self._whole = self._whole, bytearray()
            events = parse_json(whole, where="capture")
            if not isinstance(events, list):
                raise ProtocolViolation(
                    "TRANS-4", "a JSON capture must be an array of events.", where="capture"
                )
            if not events:  # as an empty file: nothing was captured, which is no stream
                raise ProtocolViolation(
                    "TRANS-4", "an empty JSON array: no event was captured.", where="capture"
                )
            return out + events
        if self._ndjson is not None:
            return out + self._ndjson_end()
        rest = self._tail.removeprefix(_BOM) if self._tail_at == 0 else self._tail
        if not self._framed and not self._sse_seen and _SSE_LINE.search(rest) is None:
            raise ProtocolViolation(
                "TRANS-4",
                "no event found: not a JSON array, NDJSON, or an SSE body (no data, event, "
                "id or retry field and no comment line).",
                where="capture",
            )
        found = sse_unfinished_at(bytes(self._tail))
        self.unfinished_at = None if found is None else self._tail_at + found
        return out

    def _start(self, head: bytes) -> None:
        self.kind = sniff_format(head[:_SNIFF_BYTES])
        limits = self._limits
        if self.kind == "proto":
            from ..wire._proto_framing import ProtoReader

            self._announced = int.from_bytes(head[:4].ljust(4, b"\x00"), "big")
            self._proto = ProtoReader(
                max_event_bytes=limits.max_event_bytes, max_depth=limits.max_depth
            )
        elif self.kind == "sse":
            self._sse = SSEReader(max_event_bytes=limits.max_event_bytes, event_ids=True)
        elif self.kind == "ndjson":
            # a line is refused for its size only when it is the last (as read_frames does)
            self._ndjson = NDJSONReader(max_event_bytes=1 << 62)

    def _feed(self, chunk: bytes) -> list[bytes | str | Any]:
        self.size += len(chunk)
        if self.kind == "proto":
            frames: list[bytes | str | Any] = self._proto.feed_frames(chunk)
            self._framed = self._framed or bool(frames)
            return frames
        self._utf8_check(chunk)
        if self.kind == "json":
            self._whole += chunk
            return []
        if self._ndjson is not None:
            return list(self._ndjson.feed(chunk))
        assert self._sse is not None
        self._sse_tail(chunk)
        frames = self._sse.feed_frames(chunk)
        self._framed = self._framed or bool(frames)
        return self.seq.admit(frames, self._sse.take_event_ids())

    def _utf8_check(self, chunk: bytes, *, final: bool = False) -> None:
        pending = len(self._utf8.getstate()[0])
        try:
            self._utf8.decode(chunk, final)
        except UnicodeDecodeError as exc:
            at = self.size - len(chunk) - pending + exc.start
            raise ProtocolViolation(
                "TRANS-4",
                f"not UTF-8 text (byte {at}); a JSON array, NDJSON or an SSE body always is.",
                where="capture",
            ) from None

    def _sse_tail(self, chunk: bytes) -> None:
        """Keep the bytes since the last event's end (where an unfinished event starts)."""
        tail = self._tail
        tail += chunk
        lines_end = max(tail.rfind(b"\n"), tail.rfind(b"\r")) + 1
        if not self._sse_seen and not self._framed and lines_end:
            whole_lines = bytes(tail[:lines_end])
            if self._tail_at == 0:
                whole_lines = whole_lines.removeprefix(_BOM)
            self._sse_seen = _SSE_LINE.search(whole_lines) is not None
        found = [tail.rfind(sep) + len(sep) for sep in _SSE_ENDS if sep in tail]
        # as sse_unfinished_at counts an event's end: one past the capture's 4th byte
        end = max([e for e in found if self._tail_at + e >= 4] or [0])
        if end:
            del tail[:end]
            self._tail_at += end

    def _ndjson_end(self) -> list[bytes | str | Any]:
        assert self._ndjson is not None
        last = self._ndjson.close()
        if not last:
            return []
        line = last[0]
        start = self.size - len(line)
        try:
            orjson.loads(line)
        except orjson.JSONDecodeError:
            self.unfinished_at = start  # the capture stops inside its last line
            return []
        if len(line) > self._limits.max_event_bytes:
            return [
                BrokenFrame(
                    LimitExceeded(
                        "LIMIT",
                        f"an NDJSON line exceeded max_event_bytes={self._limits.max_event_bytes}; "
                        "raise the limit if such events are expected.",
                        where="stream framing",  # as NDJSONReader says it
                    )
                )
            ]
        return [line]


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
    """One frame through the pipeline, then its events into the thread — every judge's step
    (:func:`replay`, :class:`~._watch.StreamWatch`).

    ``True`` when the stream broke here (a violation, or a reducer limit then held as
    ``pipe.error``); the events taken, those before a break included, go to ``delivered``.
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

    :meth:`CaptureVerdict.to_json` is ``verify --json``'s document; ``truncated`` says where a
    cut capture stops (TRANS-2). A broken stream is a ``"failed"`` verdict; only a capture
    that is no stream raises :class:`ProtocolViolation` (TRANS-4).
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    frames, ids = read_frames_and_ids(raw, limits=limits)
    verdict = replay(frames, run_input=run_input, strict=strict, limits=limits)
    verdict.truncated = truncation(verdict, raw)
    verdict.ids = ids
    return verdict


def truncation(outcome: CaptureVerdict, data: bytes) -> dict[str, Any] | None:
    """Where the capture ends mid-run (``None``: every run it started ended).

    A truncated run is never a success (TRANS-2; RUN-9): the verdict names the run, the last
    event, the byte it stops at and where an unfinished event begins. Keep-alives only is no run.
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
