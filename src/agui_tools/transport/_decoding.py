"""A response's content coding undone, a bounded piece at a time (the client's and
the proxy's decoder): gzip and deflate, every gzip member, a bomb refused as
``LIMIT``, bytes that do not decode a TRANS-4 violation naming where."""

from __future__ import annotations

import zlib
from collections.abc import Generator, Iterator
from typing import Any, Final

from .._errors import LimitExceeded, ProtocolViolation
from ..wire._framing import BrokenFrame

__all__ = ["MAX_INFLATION", "_Decoding"]

MAX_INFLATION: Final = 200
"""How much a compressed stream may expand — decoded bytes per byte received,
past the first MiB. A keep-alive-heavy SSE stream compresses ~50:1; gzip can
reach ~1000:1, and decoding at that ratio would make the cost of a stream
a thousand times its size."""
_INFLATION_ALLOWANCE: Final = 1024 * 1024
_PIECE: Final = 256 * 1024


class _Decoding:
    """The response's content coding undone, a bounded piece at a time.

    Not httpx's decoders: they inflate each received chunk whole, so one chunk
    of a gzip bomb becomes a thousand times its size before anything can look at it. Here no
    call returns more than :data:`_PIECE` bytes, and the stream is refused — a
    ``LIMIT`` violation in the frames, the run ending rejected — once what it
    decoded passes :data:`MAX_INFLATION` times what was received (past the first
    MiB).

    A gzip body is RFC 1952's "series of members", each decoded in turn (an agent
    gzipping each flush on its own, a CDN concatenating); bytes after a deflate
    stream's end, or after a member that are not another member (or the zero padding
    gzip(1) itself skips), are a TRANS-4 violation, never dropped. A body that stops decoding yields every byte that
    decoded before the point where it stops, then the violation naming it.
    """

    def __init__(self, coding: str) -> None:
        # gzip: a gzip header (wbits 31); deflate: zlib-wrapped, as RFC 9110 says,
        # with raw deflate (what some servers send) tried when the header is wrong;
        # x-gzip is gzip (RFC 9110 §8.4.1.3)
        self._wbits = 31 if coding in ("gzip", "x-gzip") else 15
        self._inflater = None if coding in ("", "identity") else zlib.decompressobj(self._wbits)
        self._raw_fallback = coding == "deflate"
        self.received = 0
        self.decoded = 0
        self._member = (1, 0)  # gzip: which member is being decoded, from which byte

    def feed(self, chunk: bytes) -> Iterator[bytes | BrokenFrame]:
        start = self.received
        self.received += len(chunk)
        if self._inflater is None:
            yield chunk
            return
        data = chunk
        while data:
            if self._inflater.eof:  # a member ended: what follows must be another
                if self._wbits == 31 and not data.strip(b"\x00"):
                    return  # zero padding after a member: gzip(1) and Python's gzip skip it
                if self._wbits != 31:
                    yield self._broken(
                        f"has {len(data)} byte(s) after its end, at byte "
                        f"{self.received - len(data)} of the body (a deflate stream is one)"
                    )
                    return
                self._inflater = zlib.decompressobj(self._wbits)
                self._member = (self._member[0] + 1, self.received - len(data))
            before = self._inflater.copy()
            try:
                piece = self._inflater.decompress(data, _PIECE)
            except zlib.error as exc:
                if self._raw_fallback and self.decoded == 0:
                    self._raw_fallback = False
                    self._wbits = -15
                    self._inflater = zlib.decompressobj(-15)
                    continue
                # zlib gives nothing of a call that fails: the same bytes again, one at
                # a time, for what decodes before the point where it stops
                yield from self._up_to_error(before, data, exc, start + len(chunk) - len(data))
                return
            data = self._inflater.unconsumed_tail or (
                self._inflater.unused_data if self._inflater.eof else b""
            )
            if not (yield from self._out(piece)):
                return

    def _up_to_error(
        self, inflater: Any, data: bytes, exc: zlib.error, offset: int
    ) -> Iterator[bytes | BrokenFrame]:
        for at in range(len(data)):
            try:
                piece = inflater.decompress(data[at : at + 1])
            except zlib.error as error:
                exc, offset = error, offset + at
                break
            if not (yield from self._out(piece)):
                return
        number, first = self._member
        member = f", in gzip member {number} (from byte {first})" if number > 1 else ""
        yield self._broken(f"does not decode at byte {offset} of the body{member} ({exc})")

    def _out(self, piece: bytes) -> Generator[bytes | BrokenFrame, None, bool]:
        """Yield a decoded piece — or the LIMIT violation, and False, past the bound."""
        self.decoded += len(piece)
        if self.decoded > _INFLATION_ALLOWANCE + MAX_INFLATION * self.received:
            yield BrokenFrame(
                LimitExceeded(
                    "LIMIT",
                    f"the compressed stream inflated to {self.decoded} bytes from "
                    f"{self.received} received, past {MAX_INFLATION} to one.",
                    where="stream framing",
                )
            )
            return False
        if piece:
            yield piece
        return True

    @staticmethod
    def _broken(what: str) -> BrokenFrame:
        return BrokenFrame(
            ProtocolViolation("TRANS-4", f"the compressed stream {what}.", where="stream framing")
        )
