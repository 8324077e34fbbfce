"""Framing for the binary binding: length-prefixed protobuf frames out of bytes, and back.

Sans-I/O like ``_framing`` (TRANS-7): a 4-byte big-endian length, then one encoded event.
A length over ``max_event_bytes`` is refused at its header; an undecodable frame is fatal, as
is one nested past ``max_depth`` (``LIMIT``); a frame naming only an unknown arm is dropped
with a warning; a body ending mid-frame is a truncated run (TRANS-2), not an error.
"""

from __future__ import annotations

import struct
from typing import Any, Final, NamedTuple

from .._errors import LimitExceeded, ProtocolViolation, ProtocolWarning
from ._enforce import DEFAULT_MAX_DEPTH, checked_max_depth
from ._framing import DEFAULT_MAX_EVENT_BYTES, FrameNote, _StreamReader
from ._proto_codec import PROTO_MEDIA_TYPE, UnknownEventArm, decode_proto_event

__all__ = ["PROTO_MEDIA_TYPE", "PendingFrame", "ProtoReader", "proto_frame", "unfinished_frame_at"]

_HEADER: Final = 4
_LENGTH: Final = struct.Struct(">I")
_WHERE: Final = "binary framing"
_FRAME_RULE: Final = "TRANS-7"  # the decoder's own refusals; any other rule is enforcement's


def proto_frame(message: bytes) -> bytes:
    """One encoded event as a frame: its length (uint32, big-endian), then its bytes."""
    return len(message).to_bytes(_HEADER, "big") + message


def unfinished_frame_at(data: bytes) -> int | None:
    """Where a binary body's last frame starts when the body stops inside it (its
    header or its bytes), ``None`` when it ends on a frame boundary. Framing only:
    no frame is decoded, so no limit (``max_depth``, ``max_event_bytes``) a reader
    would judge the frames by can make a whole frame look unfinished."""
    pos, end = 0, len(data)
    while end - pos >= _HEADER:
        stop = pos + _HEADER + _LENGTH.unpack_from(data, pos)[0]
        if stop > end:
            return pos
        pos = stop
    return None if pos == end else pos


class PendingFrame(NamedTuple):
    """The frame a reader stands in when bytes stop (see :meth:`ProtoReader.pending_frame`)."""

    number: int
    """Its position among the body's frames (``#0`` is the first)."""
    offset: int
    """The body byte its 4-byte length header starts at."""
    announced: int | None
    """The length its header announces; ``None`` when fewer than 4 header bytes arrived."""


class ProtoReader(_StreamReader):
    """Incremental reader of a binary-binding body, yielding the events it carries.

    >>> from agui_tools.wire._proto_codec import encode_proto_event
    >>> body = proto_frame(encode_proto_event({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}))
    >>> r = ProtoReader()
    >>> r.feed(body[:5]), r.has_partial_event
    ([], True)
    >>> r.feed(body[5:])
    [{'threadId': 't', 'runId': 'r', 'type': 'RUN_STARTED'}]
    """

    def __init__(
        self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES, max_depth: int = DEFAULT_MAX_DEPTH
    ) -> None:
        self._buf = bytearray()
        self._max = max_event_bytes
        self._max_depth = checked_max_depth(max_depth)
        self._offset = 0  # stream offset of _buf[0], to say where a bad frame began
        self._frames = 0
        self._broken = False
        self._notes: list[ProtocolWarning] = []  # a decoded frame's dropped parts, handed on
        self.warnings: list[ProtocolWarning] = []
        """Frames dropped by :meth:`feed` (an event this build predates), with why."""
        self.closed = False

    @property
    def has_partial_event(self) -> bool:
        """True when bytes of a frame arrived that did not complete it."""
        return bool(self._buf)

    def pending_frame(self) -> PendingFrame | None:
        """The incomplete frame (``None`` on a boundary): where a body stopped mid-frame, or the
        frame a ``LIMIT`` refused — for a checker to name by index and byte offset.
        """
        if not self._buf:
            return None
        header = bytes(self._buf[:_HEADER])
        announced = _LENGTH.unpack(header)[0] if len(header) == _HEADER else None
        return PendingFrame(self._frames, self._offset, announced)

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """Consume ``chunk``; return the events of every frame it completed.

        Raises :class:`ProtocolViolation` (TRANS-7) or :class:`LimitExceeded`, losing this chunk's
        earlier events — the client uses :meth:`feed_frames`. A dropped frame goes to :attr:`warnings`.
        """
        out: list[Any] = []
        self._feed(chunk, out)
        events = []
        for item in out:
            if isinstance(item, FrameNote):
                self.warnings.append(item.warning)
            else:
                events.append(item)
        return events

    def _feed(self, chunk: bytes, out: list[Any]) -> None:
        buf = self._buf
        buf += chunk
        pos = 0
        end = len(buf)
        unpack = _LENGTH.unpack_from
        append = out.append
        notes = self._notes
        try:
            while end - pos >= _HEADER:
                (length,) = unpack(buf, pos)
                if length > self._max:
                    raise LimitExceeded(
                        "LIMIT",
                        f"binary frame #{self._frames} (at byte {self._offset + pos}) announces "
                        f"{length} bytes, over max_event_bytes={self._max}; refused before they "
                        "arrive. Raise the limit if such events are expected.",
                        where=_WHERE,
                    )
                stop = pos + _HEADER + length
                if stop > end:
                    break
                message = bytes(buf[pos + _HEADER : stop])
                try:
                    event = decode_proto_event(message, warnings=notes, max_depth=self._max_depth)
                except UnknownEventArm as exc:
                    append(FrameNote(exc.warning, dropped=True))
                except LimitExceeded:  # a value nested too deep: enforcement's own words
                    raise
                except ProtocolViolation as exc:
                    if exc.rule != _FRAME_RULE:  # enforcement's verdict on a frame cut past
                        raise  # max_depth (META-1…): its path and words, as SSE gives them

                    raise type(exc)(
                        exc.rule,
                        f"{exc.explanation} (binary frame #{self._frames}, {length} bytes at byte "
                        f"{self._offset + pos} of the body)",
                        event_type=exc.event_type,
                        where=_WHERE,
                    ) from None
                else:
                    if notes:
                        out.extend(FrameNote(note) for note in notes)
                        notes.clear()
                    append(event)
                self._frames += 1
                pos = stop
        finally:
            del buf[:pos]
            self._offset += pos

    def close(self) -> None:
        """Mark the end of the body; a partial frame is discarded (a truncated run)."""
        self.closed = True
