"""Replaying a captured stream through the whole consumer: pipeline + reducer.

Used by ``agui-tools verify``, the conformance runner and tests. A captured
stream is a JSON array of events, NDJSON, an SSE body or a binary-binding body
(length-prefixed protobuf frames, TRANS-7) — sniffed from its first bytes — and
goes through exactly the stages a live stream does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from .._errors import ProtocolViolation, ProtocolWarning
from ..wire._codec import parse_json
from ..wire._framing import NDJSONReader, SSEReader, sniff_format
from ..wire._kinds import WireEvent
from ..wire._pipeline import ConsumerPipeline, Middleware, StreamResult
from ..wire._verify import Limits
from ._reducer import ThreadState

__all__ = ["CaptureVerdict", "read_frames", "replay", "verify_capture"]


@dataclass
class CaptureVerdict:
    """What a stream amounted to: the verdict, what was delivered, and the thread."""

    result: StreamResult
    events: list[WireEvent]
    thread: ThreadState

    @property
    def warnings(self) -> list[ProtocolWarning]:
        return self.result.warnings

    def to_json(self) -> dict[str, Any]:
        """The ``verify --json`` document."""
        error = self.result.error
        return {
            "outcome": self.result.outcome,
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
            "runs": [r.to_json() for r in self.result.runs],
            "messages": self.thread.messages,
            "state": self.thread.state,
        }


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
        binary = ProtoReader(max_event_bytes=limits.max_event_bytes).feed_frames(data)
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
        return list(events)
    if kind == "ndjson":
        reader = NDJSONReader(max_event_bytes=limits.max_event_bytes)
        return [*reader.feed(data), *reader.close()]
    sse = SSEReader(max_event_bytes=limits.max_event_bytes)
    frames: list[bytes | str | Any] = list(sse.feed(data))
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
        failed = False
        try:
            events = pipe.feed(frame)
        except ProtocolViolation:
            events, failed = pipe.partial, True
        try:
            for ev in events:
                thread.apply(ev, pipe.index)
                delivered.append(ev)
        except ProtocolViolation as exc:  # a limit the reducer keeps (state, message size)
            pipe.reject(exc)
            break
        if failed:
            break
    return CaptureVerdict(pipe.close(), delivered, thread)


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
    ``agui-tools verify --json`` prints. A stream that breaks a rule is a
    verdict (``result.outcome == "failed"``), not an exception; only a capture
    that is no stream at all raises :class:`ProtocolViolation` (TRANS-4).
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return replay(
        read_frames(raw, limits=limits), run_input=run_input, strict=strict, limits=limits
    )


def dumps(document: Any) -> bytes:
    return orjson.dumps(document, option=orjson.OPT_INDENT_2)
