"""Framing: the bytes on the wire to JSON texts and back (SSE and NDJSON).

Sans-I/O: feed bytes in any split, take payloads out; nothing here parses JSON. The SSE
reader takes the full WHATWG grammar a consumer MAY accept (TRANS-5: any line ending, a
BOM, comments, multi-line ``data``; other fields ignored, TRANS-6, except ``id`` when
asked for ``event_ids``: the opt-in resumable binding, docs/resumable.md); the writer emits LF
only. An event unterminated at the end of the stream is not dispatched: its run is
truncated, reported, never repaired.
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
    """One event's JSON as a line of the NDJSON binding (``payload`` holds no newline:
    compact JSON escapes them)."""
    return payload + b"\n"


_FRAMING: Final = "stream framing"


class BrokenFrame(str):
    """Stands in the frame sequence where a frame could not be produced (not UTF-8, too big).

    A ``str``, so it travels where frames travel; the pipeline rejects the stream at its
    position with ``violation`` — the earlier frames delivered, as for a decoder violation.
    """

    violation: ProtocolViolation

    def __new__(cls, violation: ProtocolViolation) -> BrokenFrame:
        frame = super().__new__(cls, "")
        frame.violation = violation
        return frame

    def __repr__(self) -> str:
        return f"BrokenFrame({self.violation!r})"


class FrameNote(str):
    """Stands in the frame sequence where framing dropped something and said so: a whole
    frame (an unknown binary-binding event, TRANS-7) or a part of the next event.

    The pipeline records ``warning`` at that position and delivers nothing for it.
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
        """Like ``feed``, but a violation becomes a :class:`BrokenFrame` in the frames instead
        of raising, so the pipeline rejects the run at that position; the reader is then finished.
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

    def __init__(
        self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES, event_ids: bool = False
    ) -> None:
        self._buf = bytearray()
        # each dispatched event's own ``id`` field (None: it had none), in order,
        # when asked for: take them with take_event_ids()
        self._ids: list[str | None] | None = [] if event_ids else None
        self._event_id: str | None = None
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

    def copy(self) -> SSEReader:
        """A reader in this one's state: the same bytes fed to both give the same frames (a
        judge that read a chunk whole reads it again, event by event, to find one's place)."""
        twin = object.__new__(SSEReader)
        twin.__dict__.update(self.__dict__)
        twin._buf, twin._data = bytearray(self._buf), bytearray(self._data)
        if self._ids is not None:
            twin._ids = list(self._ids)
        return twin

    def feed(self, chunk: bytes) -> list[str]:
        """Consume ``chunk``; return the ``data`` of every event it completed.

        Raises :class:`ProtocolViolation` (not UTF-8) or :class:`LimitExceeded` (over
        ``max_event_bytes``), losing this chunk's earlier events — :meth:`feed_frames` keeps them.
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
                    if self._ids is not None:
                        self._ids.append(self._event_id)
                    self._event_id = None
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

    def take_event_ids(self) -> list[str | None]:
        """The ``id`` field of each event dispatched since the last call, in order
        (``None`` for an event without one); empty unless made with ``event_ids``."""
        ids = self._ids
        if not ids:
            return []
        self._ids = []
        return ids

    def _line(self, line: bytes, out: list[str], offset: int) -> None:
        if not line:
            if self._has_data:
                data = self._data
                del data[-1:]  # the LF after the last line is not part of the data
                out.append(_decode(data, f"the SSE event ending at byte {offset} of the stream"))
                data.clear()
                self._has_data = False
                if self._ids is not None:
                    self._ids.append(self._event_id)
            self._event_id = None
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
        elif name == b"id" and self._ids is not None and b"\0" not in value:
            # a NUL makes the field ignored (WHATWG); a bad id is the caller's to judge
            self._event_id = value.decode("utf-8", "replace")
        # event:, retry: and unknown fields are ignored (TRANS-5)

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
    """Guess how a captured stream is framed: ``"json"``, ``"ndjson"``, ``"proto"`` or ``"sse"``.

    A binary frame's length starts with a zero byte (under 16 MiB), which no text format does;
    ``[`` is JSON, ``{`` NDJSON, anything else SSE.
    """
    if head[:1] == b"\x00":
        return "proto"
    text = head.lstrip(_BOM).lstrip()
    if text.startswith(b"["):
        return "json"
    if text.startswith(b"{"):
        return "ndjson"
    return "sse"
