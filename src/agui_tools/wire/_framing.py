"""Framing: the bytes on the wire to JSON texts and back (SSE and NDJSON).

Sans-I/O, like everything below the transports: feed bytes in as they arrive
(any split, down to one byte at a time), take complete payloads out. Nothing
here parses JSON — a frame is a ``str`` holding one event — so the decoder is
the only stage that judges content.

The SSE reader implements the full grammar of the WHATWG event-stream format,
which a consumer MAY accept (TRANS-5): LF, CR and CRLF line endings (a CR at
the end of one chunk and an LF at the start of the next are one line break),
a leading byte-order mark, comment lines, multi-line ``data`` joined with LF,
one optional space after the colon, and fields other than ``data`` ignored
(the binding has no ``Last-Event-ID`` resumption, TRANS-6). The writer emits
only LF, as a producer MUST (TRANS-5).

An event that has not been terminated by a blank line when the stream ends is
not dispatched (the SSE rule): the run it belonged to is truncated, which the
pipeline reports, never repairs.
"""

from __future__ import annotations

from typing import Any, Final

from .._errors import LimitExceeded, ProtocolViolation, ProtocolWarning

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "PROTO_MEDIA_TYPE",
    "SSE_MEDIA_TYPE",
    "BrokenFrame",
    "FrameNote",
    "NDJSONReader",
    "SSEReader",
    "ndjson_frame",
    "sniff_format",
    "sse_comment",
    "sse_frame",
]

DEFAULT_MAX_EVENT_BYTES: Final = 16 * 1024 * 1024
PROTO_MEDIA_TYPE: Final = "application/vnd.ag-ui.event+proto"
"""The binary binding's media type (http-protobuf, TRANS-7); its frames: ``_proto_framing``."""
SSE_MEDIA_TYPE: Final = "text/event-stream"
_BOM: Final = b"\xef\xbb\xbf"


def sse_frame(payload: bytes) -> bytes:
    """Frame one JSON event as an SSE event: ``data: <json>\\n\\n``.

    Compact JSON never contains a raw line break (control characters inside
    strings are escaped), so one ``data`` line always suffices.
    """
    return b"data: " + payload + b"\n\n"


def sse_comment(text: str = "keep-alive") -> bytes:
    """An SSE comment line, used for keep-alives; consumers MUST ignore it."""
    return b": " + text.encode() + b"\n\n"


def ndjson_frame(payload: bytes) -> bytes:
    return payload + b"\n"


_FRAMING: Final = "stream framing"


class BrokenFrame(str):
    """Stands in the frame sequence where the framing layer met a frame it could not
    produce (not UTF-8, over the size limit), carrying the violation.

    A ``str``, so it travels wherever frames travel; the consumer pipeline
    recognises it and rejects the stream at that position with ``violation``.
    The frames before it are delivered and the run ends ``rejected``, exactly
    as for a violation the decoder finds — rather than an exception escaping
    the transport before the conversation has seen the stream.
    """

    violation: ProtocolViolation

    def __new__(cls, violation: ProtocolViolation) -> BrokenFrame:
        frame = super().__new__(cls, "")
        frame.violation = violation
        return frame

    def __repr__(self) -> str:
        return f"BrokenFrame({self.violation!r})"


class FrameNote(str):
    """Stands in the frame sequence where the framing layer dropped something and
    said so: a whole frame (``dropped``: the binary binding's event from a later
    protocol, which has no type string to hand onward — TRANS-7), or a part of the
    event that follows (a content part naming no arm this build knows).

    A ``str`` like :class:`BrokenFrame`, so it travels wherever frames travel. The
    pipeline records ``warning`` — at the dropped frame's own stream position, or
    at the next event's — and delivers nothing for it: the answer enforcement
    gives an unknown event on SSE, spelled at the transport.
    """

    warning: ProtocolWarning
    dropped: bool

    def __new__(cls, warning: ProtocolWarning, *, dropped: bool = False) -> FrameNote:
        frame = super().__new__(cls, "")
        frame.warning = warning
        frame.dropped = dropped
        return frame

    def __repr__(self) -> str:
        return f"FrameNote({self.warning!r}, dropped={self.dropped})"


def _decode(raw: bytes | bytearray, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolViolation(
            "TRANS-4",
            f"{what} is not valid UTF-8 (byte {exc.start} of the payload); each data payload "
            "must be one JSON text.",
            where=_FRAMING,
        ) from None


class _StreamReader:
    """What every stream reader shares: :meth:`feed_frames`, which never raises.

    A subclass implements ``_feed(chunk, out)`` (which may raise a
    :class:`ProtocolViolation`) and sets ``_broken = False`` on construction.
    """

    _broken: bool

    def _feed(self, chunk: bytes, out: list[Any]) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def feed_frames(self, chunk: bytes) -> list[Any]:
        """Like ``feed``, but never raises: a violation takes its place in the
        frames, as a :class:`BrokenFrame` after the frames completed before it.

        For a reader feeding the consumer pipeline (the client): the pipeline
        rejects the stream at that position, so the run ends ``rejected`` with
        the violation like any other. The reader is finished after a broken
        frame; later chunks give nothing.
        """
        if self._broken:
            return []
        out: list[Any] = []
        try:
            self._feed(chunk, out)
        except ProtocolViolation as exc:
            self._broken = True
            out.append(BrokenFrame(exc))
        return out


class SSEReader(_StreamReader):
    """Incremental Server-Sent Events parser yielding each event's ``data``.

    >>> r = SSEReader()
    >>> r.feed(b'data: {"a":1}\\r\\n\\r')
    ['{"a":1}']
    >>> r.feed(b'\\n: keep-alive\\n\\ndata: x\\ndata: y\\n')
    []
    >>> r.feed(b'\\n')
    ['x\\ny']
    """

    def __init__(self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self._buf = bytearray()
        # the event's data, joined as it arrives: one buffer, not an object per line
        # (an object per short line would hold many times the event's size)
        self._data = bytearray()
        self._has_data = False
        self._started = False
        self._pending_cr = False
        self._max = max_event_bytes
        self._total = 0  # bytes received, to name where a broken event ended
        self._broken = False
        self.closed = False

    @property
    def has_partial_event(self) -> bool:
        """True when bytes of an event arrived that no blank line dispatched yet."""
        return self._has_data or bool(self._buf)

    def feed(self, chunk: bytes) -> list[str]:
        """Consume ``chunk``; return the ``data`` of every event it completed.

        Raises :class:`ProtocolViolation` for a payload that is not UTF-8 and
        :class:`LimitExceeded` for an event over ``max_event_bytes``; the events
        this chunk completed before it are lost with the exception — a consumer
        that must keep them uses :meth:`feed_frames`.
        """
        out: list[str] = []
        self._feed(chunk, out)
        return out

    def _feed(self, chunk: bytes, out: list[Any]) -> None:
        if not chunk:
            return
        self._total += len(chunk)
        buf = self._buf
        if self._pending_cr:
            self._pending_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        buf += chunk
        if not self._started:
            if len(buf) < 3 and _BOM.startswith(bytes(buf)):
                return
            if buf.startswith(_BOM):
                del buf[:3]
            self._started = True
        start = 0
        n = len(buf)
        base = self._total - n  # the stream offset of buf[0]
        last = buf.rfind(b"\n")
        if last >= 0 and buf.find(b"\r", 0, last) < 0:
            # LF only, the common case: split once, then one cheap step per line
            # (a flood of tiny lines costs a few hundred ns each, not microseconds)
            line_start = base
            line, data_line, data = self._line, self._data_line, self._data
            for raw in bytes(buf[:last]).split(b"\n"):
                if raw[:6] == b"data: ":  # the usual spelling: no field parsing
                    data_line(raw[6:])
                elif not raw and data:  # the blank line ending an event: dispatched
                    del data[-1:]  # the LF after the last line is not part of the data
                    try:
                        out.append(data.decode("utf-8"))
                    except UnicodeDecodeError:
                        _decode(data, f"the SSE event ending at byte {line_start} of the stream")
                    data.clear()
                    self._has_data = False
                elif raw[:5] == b"data:":
                    data_line(raw[5:])
                else:
                    line(raw, out, line_start)
                line_start += len(raw) + 1
            start = last + 1
        find_lf = buf.find
        while start < n:
            lf = find_lf(b"\n", start)
            cr = find_lf(b"\r", start, lf if lf >= 0 else n)
            if cr >= 0:
                end, nxt = cr, cr + 1
                if nxt < n:
                    if buf[nxt] == 0x0A:
                        nxt += 1
                else:
                    self._pending_cr = True  # a following LF belongs to this break
            elif lf >= 0:
                end, nxt = lf, lf + 1
            else:
                break
            self._line(bytes(buf[start:end]), out, base + start)
            start = nxt
        del buf[:start]
        if len(buf) + len(self._data) > self._max:
            raise LimitExceeded(
                "LIMIT",
                f"an SSE event exceeded max_event_bytes={self._max}; raise the limit if "
                "such events are expected.",
                where=_FRAMING,
            )

    def _line(self, line: bytes, out: list[str], offset: int) -> None:
        if not line:
            if self._has_data:
                data = self._data
                del data[-1:]  # the LF after the last line is not part of the data
                out.append(_decode(data, f"the SSE event ending at byte {offset} of the stream"))
                data.clear()
                self._has_data = False
            return
        if line[0] == 0x3A:  # ':' comment
            return
        colon = line.find(b":")
        if colon < 0:
            name, value = line, b""
        else:
            name, value = line[:colon], line[colon + 1 :]
            if value[:1] == b" ":
                value = value[1:]
        if name == b"data":
            self._data_line(value)
        # event:, id:, retry: and unknown fields are ignored (TRANS-5)

    def _data_line(self, value: bytes) -> None:
        data = self._data
        data += value
        data += b"\n"
        self._has_data = True
        if len(data) > self._max:
            raise LimitExceeded(
                "LIMIT",
                f"an SSE event exceeded max_event_bytes={self._max}; raise the limit if "
                "such events are expected.",
                where=_FRAMING,
            )

    def close(self) -> None:
        """Mark the end of the byte stream; an undispatched event is discarded."""
        self.closed = True


class NDJSONReader:
    """Incremental newline-delimited JSON splitter (one event per line).

    Lines are handed on as ``bytes``: the JSON parser validates UTF-8 itself,
    so decoding here would only copy every line once more.
    """

    def __init__(self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        # a bytearray grown in place: a long line arriving in many chunks is not
        # re-copied whole on every chunk (which is quadratic in the line's length)
        self._buf = bytearray()
        self._max = max_event_bytes

    @property
    def has_partial_event(self) -> bool:
        return bool(self._buf.strip())

    def feed(self, chunk: bytes) -> list[bytes]:
        buf = self._buf
        searched = len(buf)  # the kept tail holds no newline
        buf += chunk
        last = buf.rfind(b"\n", searched)
        out: list[bytes] = []
        if last >= 0:
            # blank (or CR-only) lines between events carry nothing
            out = [line for line in bytes(buf[:last]).split(b"\n") if len(line) > 2 or line.strip()]
            del buf[: last + 1]
        if len(buf) > self._max:
            raise LimitExceeded(
                "LIMIT",
                f"an NDJSON line exceeded max_event_bytes={self._max}; raise the limit if "
                "such events are expected.",
                where=_FRAMING,
            )
        return out

    def close(self) -> list[bytes]:
        """End of input: a final line without a newline is still a line."""
        line = bytes(self._buf)
        self._buf.clear()
        return [line] if line.strip() else []


def sniff_format(head: bytes) -> str:
    """Guess how a captured stream is framed: ``"json"``, ``"ndjson"``, ``"proto"``
    or ``"sse"``.

    A binary-binding body starts with a frame's 4-byte big-endian length, whose
    first byte is zero for any frame under 16 MiB — a byte no text format starts
    with. A JSON array starts with ``[``; NDJSON with ``{``; anything else
    (``data:``, ``:`` comments, ``event:``) is taken for SSE.
    """
    if head[:1] == b"\x00":
        return "proto"
    text = head.lstrip(_BOM).lstrip()
    if text.startswith(b"["):
        return "json"
    if text.startswith(b"{"):
        return "ndjson"
    return "sse"
