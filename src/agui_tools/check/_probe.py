"""The checker's HTTP side: send exactly the bytes a case chooses, keep everything.

Not :class:`~agui_tools.transport.AgentClient`, which refuses malformed input — a checker
sends it on purpose. Status, content type, every ``data`` payload, comments and raw line
endings are kept for the transcript; a binary answer (TRANS-7) is cut by
:class:`~agui_tools.wire._proto_framing.ProtoReader`, kept as the judge replays it
(:attr:`Sent.items`), with the frame it stopped in (:attr:`Sent.tail`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import httpx
import orjson

from .. import _telemetry
from ..wire._framing import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, BrokenFrame, FrameNote, SSEReader
from ..wire._proto_framing import PendingFrame, ProtoReader
from ._report import Exchange

__all__ = ["BODY_CAP", "Probe", "Sent", "Stalled"]

BODY_CAP = 64 * 1024
"""An error body is kept up to this many bytes (the rest is not read)."""
RAW_CAP = 4 * 1024 * 1024
"""Raw stream bytes kept for the framing checks (events are kept whole regardless)."""
STREAM_CAP = 2 * 1024 * 1024
"""A stream is read up to this many bytes by default (``--max-stream-bytes``), so an
agent that never stops cannot fill memory: an exchange costs a few times its bytes and a
check makes some thirty (docs/security.md, "The cost of a stream is bounded by its bytes")."""
_SHOWN_REQUEST = 2000


class Stalled(TimeoutError):
    """A request the agent did not finish within the time bound, and not because it was
    still streaming: no answer, or a stream that went quiet. Its exchange, as far as it
    got, is the evidence (:attr:`exchange`)."""

    def __init__(self, exchange: Exchange) -> None:
        super().__init__(exchange.error)
        self.exchange = exchange


class _Clock:
    """When one exchange started and when its last event arrived."""

    def __init__(self) -> None:
        self.start = self.last_event = time.perf_counter()
        self.events = False

    def event(self) -> None:
        self.last_event = time.perf_counter()
        self.events = True

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def since_event(self) -> float:
        return time.perf_counter() - self.last_event


def _still_streaming(exchange: Exchange, clock: _Clock, bound: float) -> bool:
    """A stream whose events were still coming when the time bound passed: slow, not hung.

    "Still coming" means an event within the last quarter of the bound (at most 5 s): an
    agent sending a word at a model's pace is streaming, one that sent ``RUN_STARTED`` and went
    quiet (or keep-alives only) has stalled."""
    return clock.events and clock.since_event() <= min(bound / 4, 5.0) and bool(exchange.frames)


def _progress(exchange: Exchange, clock: _Clock) -> str:
    """How far a stalled exchange got, for its error."""
    if exchange.status is None:
        return "no answer"
    got = f"HTTP {exchange.status}"
    if not exchange.frames:
        return f"{got}, no event"
    return f"{got}, {len(exchange.frames):,} event(s), none in the last {clock.since_event():.1f} s"


class Sent:
    """What one exchange's stream looked like on the wire, beyond its events."""

    def __init__(self) -> None:
        self.raw = bytearray()
        self.cr = False  # a CR anywhere in the stream (TRANS-5: LF only)
        self.received = 0
        self.capped = False  # the checker stopped reading at STREAM_CAP
        self.slow = False  # still streaming when the time bound passed: cut, judged as is
        self.binary = False  # the answer was the binary binding (TRANS-7)
        self.items: list[Any] = []
        """A binary answer's frames as the reader handed them on: events, notes, a broken frame."""
        self.tail: PendingFrame | None = None
        """The frame a binary body ended in, when the body ended (not cut by the checker)."""


class Probe:
    """POSTs to one agent endpoint, with the user's extra headers on every request."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = 10.0,
        max_stream_bytes: int = STREAM_CAP,
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.max_stream_bytes = max_stream_bytes
        self.http = self._client()
        self.raw: dict[int, Sent] = {}

    def _client(self) -> httpx.AsyncClient:
        t = self.timeout
        return httpx.AsyncClient(timeout=httpx.Timeout(connect=t, read=t, write=t, pool=t))

    async def aclose(self) -> None:
        await self.http.aclose()

    async def fresh_after(self, status: int | None, error: str = "") -> None:
        """After an error status or a broken exchange, the next request opens a new connection:
        a server may drop keep-alive after an error silently (uvicorn after a 500), and the next
        case would be judged on that.
        """
        if error or status is None or status >= 400:
            old, self.http = self.http, self._client()
            await old.aclose()

    async def get(self) -> int:
        """One GET of the endpoint, on a connection of its own: its status.

        At most :data:`BODY_CAP` bytes are read (httpx's ``get`` reads whole), and the whole GET is
        under the time bound: a byte-at-a-time answer never trips httpx's per-read timeouts.
        """
        try:
            async with asyncio.timeout(self.timeout):
                async with self.http.stream("GET", self.url, headers=self.headers) as resp:
                    status = resp.status_code
                    await _read_body(resp)
        except (httpx.HTTPError, TimeoutError):
            await self.fresh_after(None, "failed")
            raise
        await self.fresh_after(None, "read at most BODY_CAP: the rest is unread")
        return status

    async def post(
        self,
        label: str,
        body: Mapping[str, Any] | bytes,
        into: list[Exchange],
        *,
        accept: str = "text/event-stream",
        stop_after: int | None = None,
    ) -> Exchange:
        """POST ``body``; return the :class:`Exchange`, appended to ``into`` *before* sending and
        filled as bytes arrive, so a timed-out case still shows what came. ``stop_after``: drop the
        connection after that many events.
        """
        if isinstance(body, bytes):
            content = body
            shown = body[:_SHOWN_REQUEST].decode("utf-8", "replace")
            exchange = Exchange(label, None, raw_request=_shorten(shown, len(body)))
        else:
            content = orjson.dumps(body)
            exchange = Exchange(label, dict(body))
        into.append(exchange)
        sent = self.raw[id(exchange)] = Sent()
        headers = {"Content-Type": "application/json", "Accept": accept, **self.headers}
        reader = SSEReader()
        clock = _Clock()
        stalled = False
        # each run the checker sends is a client run span, as a session's is (its
        # context propagated), so a check shows up in the agent's traces
        with _telemetry.run_span(exchange.request or {}, "check") as span:
            headers = dict(_telemetry.inject(headers))
            try:
                async with asyncio.timeout(self.timeout):
                    await self._stream(content, headers, exchange, sent, reader, clock, stop_after)
            except (TimeoutError, httpx.TimeoutException):
                if _still_streaming(exchange, clock, self.timeout):
                    sent.slow = True
                    exchange.error = (
                        f"still streaming when the checker's time bound of {self.timeout:g} s "
                        f"passed ({len(exchange.frames):,} event(s) in {clock.elapsed():.1f} s, "
                        f"the last {clock.since_event():.1f} s before); the checker stopped "
                        "reading (--timeout)"
                    )
                else:
                    stalled = True
                    exchange.error = (
                        f"did not finish within {self.timeout:g} s ({_progress(exchange, clock)})"
                    )
                if not sent.binary:
                    exchange.comments = _comments(sent.raw)
            except httpx.HTTPError as exc:
                exchange.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            finally:
                exchange.seconds = clock.elapsed()
                if span is not None:
                    span.set_attribute("agui.run.events", len(exchange.frames))
                    if exchange.status is not None:
                        span.set_attribute("http.response.status_code", exchange.status)
                await self.fresh_after(exchange.status, exchange.error)
        if stalled:
            raise Stalled(exchange)
        return exchange

    async def _stream(
        self,
        content: bytes,
        headers: dict[str, str],
        exchange: Exchange,
        sent: Sent,
        reader: SSEReader,
        clock: _Clock,
        stop_after: int | None,
    ) -> None:
        """The POST itself, filling ``exchange`` and ``sent`` as bytes arrive."""
        async with self.http.stream("POST", self.url, content=content, headers=headers) as resp:
            exchange.status = resp.status_code
            exchange.content_type = resp.headers.get("content-type", "")
            kind = exchange.content_type.split(";")[0].strip().lower()
            if resp.status_code >= 300 or kind not in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE):
                exchange.body = await _read_body(resp)
                return
            binary = ProtoReader() if kind == PROTO_MEDIA_TYPE else None
            sent.binary = binary is not None
            async for chunk in resp.aiter_raw():
                if len(sent.raw) < RAW_CAP:
                    sent.raw += chunk[: RAW_CAP - len(sent.raw)]
                before = len(exchange.frames)
                # a frame the reader cannot produce stays in place as a BrokenFrame,
                # which the judge's pipeline rejects at its position
                if binary is not None:
                    items = binary.feed_frames(chunk)
                    sent.items += items
                    exchange.frames += (_shown(i) for i in items if not isinstance(i, FrameNote))
                else:
                    if b"\r" in chunk:
                        sent.cr = True
                    exchange.frames.extend(reader.feed_frames(chunk))
                if len(exchange.frames) > before:
                    clock.event()
                sent.received += len(chunk)
                if sent.received > self.max_stream_bytes:
                    sent.capped = True
                    exchange.error = (
                        f"the stream exceeded the checker's budget of "
                        f"{self.max_stream_bytes:,} bytes per exchange (max_stream_bytes) "
                        f"after {len(exchange.frames):,} events without ending; the checker "
                        "stopped reading"
                    )
                    break
                if stop_after is not None and len(exchange.frames) >= stop_after:
                    exchange.error = (
                        f"the checker dropped the connection after {len(exchange.frames)} "
                        "event(s), on purpose"
                    )
                    break
            else:
                if binary is not None:  # the body ended: in which frame, if inside one
                    sent.tail = binary.pending_frame()
            if binary is None:
                exchange.comments = _comments(sent.raw)

    async def post_large(self, label: str, body: bytes, into: list[Exchange]) -> Exchange:
        """POST a large body while listening for an early answer: a 413 sent before the upload
        ends (and the connection closed) is read, where an ordinary client sees a broken upload.
        """
        exchange = Exchange(
            label,
            None,
            raw_request=_shorten(body[:_SHOWN_REQUEST].decode("utf-8", "replace"), len(body)),
        )
        into.append(exchange)
        url = httpx.URL(self.url)
        port = url.port or (443 if url.scheme == "https" else 80)
        start = time.perf_counter()
        writer = None
        pending: list[asyncio.Task[bytes]] = []
        try:
            async with asyncio.timeout(self.timeout):  # the whole exchange, not each step
                reader, writer = await asyncio.open_connection(
                    url.host, port, ssl=url.scheme == "https"
                )
                target = url.raw_path.decode("ascii") or "/"
                head = [
                    f"POST {target} HTTP/1.1",
                    f"Host: {url.netloc.decode('ascii')}",
                    "Content-Type: application/json",
                    "Accept: text/event-stream",
                    f"Content-Length: {len(body)}",
                    "Connection: close",
                    "Expect: 100-continue",
                    *(f"{k}: {v}" for k, v in self.headers.items()),
                ]
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
                await writer.drain()
                # a server refusing by Content-Length answers now, before the body: read it
                # without sending the body, so it is not lost to the reset that closing a
                # socket with unread data causes
                try:
                    early = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _EXPECT_WAIT)
                except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                    early = b""
                if _status(early) >= 200:
                    raw = early + await _read_answer(reader)
                else:
                    answer = asyncio.create_task(_read_answer(reader))
                    pending.append(answer)
                    try:
                        for i in range(0, len(body), 256 * 1024):
                            if answer.done():
                                break
                            writer.write(body[i : i + 256 * 1024])
                            await writer.drain()
                    except OSError:
                        pass  # the server stopped reading: its answer, if any, is being read
                    raw = await answer
                while (
                    100 <= _status(raw) < 200
                ):  # interim answers (100 Continue) precede the final one
                    raw = raw.partition(b"\r\n\r\n")[2]
                status_line, _, rest = raw.partition(b"\r\n")
                parts = status_line.split(b" ", 2)
                if len(parts) >= 2 and parts[1].isdigit():
                    exchange.status = int(parts[1])
                    headers, _, payload = rest.partition(b"\r\n\r\n")
                    for line in headers.split(b"\r\n"):
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"content-type":
                            exchange.content_type = value.strip().decode("latin-1")
                    exchange.body = payload[:BODY_CAP].decode("utf-8", "replace")
                else:
                    exchange.error = "the connection closed without an HTTP answer"
        except (OSError, TimeoutError) as exc:
            exchange.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if isinstance(exc, TimeoutError) and not str(exc):
                exchange.error = f"no whole answer within {self.timeout:g} s (TimeoutError)"
        finally:
            for task in pending:
                task.cancel()
            if writer is not None:
                writer.close()
            exchange.seconds = time.perf_counter() - start
        return exchange

    def sent(self, exchange: Exchange) -> Sent:
        return self.raw.get(id(exchange)) or Sent()


_EXPECT_WAIT = 1.0
"""How long to wait for an answer to ``Expect: 100-continue`` before sending the body anyway."""


def _status(head: bytes) -> int:
    parts = head.split(b"\r\n", 1)[0].split(b" ", 2)
    return int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else 0


async def _read_answer(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sends, up to :data:`BODY_CAP`; a reset keeps what arrived."""
    data = bytearray()
    try:
        while len(data) < BODY_CAP:
            chunk = await reader.read(64 * 1024)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    return bytes(data)


async def _read_body(resp: httpx.Response) -> str:
    body = bytearray()
    async for chunk in resp.aiter_bytes():
        body += chunk
        if len(body) >= BODY_CAP:
            break
    return bytes(body[:BODY_CAP]).decode("utf-8", "replace")


def _shown(item: Any) -> str:
    """A binary frame's item as the transcript shows it: the event as JSON text."""
    if isinstance(item, BrokenFrame):
        return f"(no event: {item.violation})"
    return orjson.dumps(item, default=repr).decode()


def _comments(raw: bytes | bytearray) -> int:
    return sum(1 for line in raw.replace(b"\r", b"\n").split(b"\n") if line.startswith(b":"))


def _shorten(text: str, size: int) -> str:
    if size <= _SHOWN_REQUEST:
        return text
    return f"{text}… ({size} bytes in all)"
