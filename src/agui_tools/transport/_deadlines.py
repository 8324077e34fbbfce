"""Every phase of a connection has a deadline: uvicorn's where it has one, ours where not.

A connection costs a socket (a file descriptor) and counts against uvicorn's
``limit_concurrency`` until it closes; past the limit every new request is
answered 503. So a peer that opens connections and then does nothing — or
sends half a request head, or never reads what it asked for — must not be able
to hold them. What bounds each phase:

=================================  ==========================================  ========
phase                              bound                                       whose
=================================  ==========================================  ========
connected, request head not (yet)  ``header_timeout`` (10 s), then ``408`` and  ours
complete — the first request, or   closed (uvicorn arms no timer before the
the next one on a kept-alive       first request, and its keep-alive timer is
connection                         cancelled by the first byte of the next)
idle between requests              ``timeout_keep_alive`` (5 s)                uvicorn
request head too large             16 KiB (``h11_max_incomplete_event_size``)  h11
                                   → ``431`` and closed
request body                       ``body_timeout`` (30 s) → 408, and          ours
                                   ``max_body_bytes`` → 413                    (front)
response not read by the client    ``send_timeout`` (30 s) without the client  ours
                                   reading anything while output waits → the
                                   connection is reset (the run sees a
                                   disconnect and is cancelled); 1 s once the
                                   server is stopping
connections open at once           uvicorn's ``limit_concurrency`` → the       ours
                                   front's ``503`` (``Retry-After: 1``)
=================================  ==========================================  ========

``send_timeout`` counts time *without progress*, not the response's length: a
client that reads, however slowly, resets it; one whose window stays shut while
bytes wait in our buffer does not — a plain ``close()`` would wait for that
buffer forever. A stream that only sends a keep-alive every 15 s never fills a
socket buffer, so a quiet run is not cut.

:func:`deadline_protocol` is the uvicorn ``http=`` protocol class that does
this (h11's protocol with a watchdog per connection); ``agui-tools serve``,
``agui-tools inspect`` and :func:`agui_tools.testing.serving` use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
from typing import Any, Final

import h11
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from ._front import Refusal, refuse

__all__ = ["DEFAULT_HEADER_TIMEOUT", "DEFAULT_SEND_TIMEOUT", "deadline_protocol"]

log = logging.getLogger("agui_tools.transport")

DEFAULT_HEADER_TIMEOUT: Final = 10.0
"""Seconds from a connection's opening (or its previous response) to a complete
request head. Without it, connections that sent nothing, or half a head, would be
held forever, and with them uvicorn's ``limit_concurrency`` slots."""
DEFAULT_SEND_TIMEOUT: Final = 30.0
"""Seconds output may wait for a client that reads nothing before the connection
is aborted."""
STOPPING_SEND_TIMEOUT: Final = 1.0
"""Seconds output may wait for a client that reads nothing once the server is
stopping: its runs were given their grace and ended; a client that reads gets the
end, one that does not must not hold the process."""
_TIMEOUT_RESPONSE: Final = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s"
)
_HEAD_TOO_LARGE: Final = 431
H11_HEAD_LIMIT: Final = 16 * 1024
"""h11's own limit on a request head (``max_incomplete_event_size``), uvicorn's default."""


def deadline_protocol(
    *,
    header_timeout: float | None = DEFAULT_HEADER_TIMEOUT,
    send_timeout: float | None = DEFAULT_SEND_TIMEOUT,
) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with these deadlines (``None``: that phase unbounded);
    pass it as ``uvicorn.Config(app, http=deadline_protocol())``."""
    for name, value in (("header_timeout", header_timeout), ("send_timeout", send_timeout)):
        if value is not None and not value > 0:
            raise ValueError(f"{name} must be a positive number of seconds, or None")
    bounds = [t for t in (header_timeout, send_timeout) if t is not None]
    tick = min([1.0, *(t / 4 for t in bounds)])

    class DeadlineH11Protocol(H11Protocol):
        """One watchdog per connection, every ``tick`` seconds: the head's deadline,
        and whether buffered output has moved since the last look."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # uvicorn's connection cap answers a plain-text 503 naming nothing; the cap
            # is kept, judged as the request starts, and answered as the front answers
            self._cap: int | None = self.limit_concurrency
            self.limit_concurrency = None
            self._app = self.app
            if self._cap is not None:
                self.app = self._capped

        async def _capped(self, scope: Scope, receive: Receive, send: Send) -> None:
            cap = self._cap
            assert cap is not None
            # uvicorn's test when a head arrives; by now this request's own task counts
            if len(self.connections) >= cap or len(self.tasks) > cap:
                message = f"the server holds limit_concurrency={cap} connections; retry."
                refusal = Refusal(503, {"path": "", "message": message}, close=True)
                await refuse(scope, receive, send, refusal)
                return
            await self._app(scope, receive, send)

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._head_since: float | None = self.loop.time()
            self._cycle_seen: Any = None
            self._stalled_since: float | None = None
            self._queued = 0
            self._watch: asyncio.TimerHandle | None = (
                self.loop.call_later(tick, self._check) if bounds else None
            )
            self._refused_status = 400
            self._stopping = False
            next_event = self.conn.next_event

            def judged() -> Any:  # h11's hint on what a broken head deserves
                try:
                    return next_event()
                except h11.RemoteProtocolError as exc:
                    self._refused_status = exc.error_status_hint
                    raise

            self.conn.next_event = judged  # type: ignore[method-assign]

        def send_400_response(self, msg: str) -> None:
            """A head past h11's size limit is 431, naming the limit; others stay 400."""
            if self._refused_status != _HEAD_TOO_LARGE:
                super().send_400_response(msg)
                return
            limit = self.config.h11_max_incomplete_event_size or H11_HEAD_LIMIT
            body = f"the request head exceeds {limit} bytes.".encode()
            headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]
            for event in (
                h11.Response(status_code=_HEAD_TOO_LARGE, headers=headers),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event) or b"")
            self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._watch is not None:
                self._watch.cancel()
                self._watch = None
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not None and self.cycle is not self._cycle_seen:
                self._cycle_seen = self.cycle  # a request head arrived: its clock stops
                self._head_since = None

        def on_response_complete(self) -> None:
            self._head_since = self.loop.time()  # the next head's clock (pipelined: stopped
            super().on_response_complete()  # again at once, by handle_events)

        def shutdown(self) -> None:
            """The server stops (its runs already ended): from now a client that reads
            nothing is reset after :data:`STOPPING_SEND_TIMEOUT`, not ``send_timeout`` —
            its task, blocked on a full buffer, would hold the process until uvicorn's
            graceful timeout cancels it."""
            self._stopping = True
            super().shutdown()

        def resume_writing(self) -> None:
            self._stalled_since = None  # the client read: progress
            super().resume_writing()

        def _check(self) -> None:
            self._watch = None
            now = self.loop.time()
            transport = self.transport
            if (
                header_timeout is not None
                and self._head_since is not None
                and now - self._head_since > header_timeout
                and not transport.is_closing()
            ):
                message = (
                    f"no complete request head within {header_timeout:g} s (header_timeout)"
                ).encode()
                transport.write(_TIMEOUT_RESPONSE % (len(message), message))
                transport.close()
                self._head_since = None
            buffered = transport.get_write_buffer_size()
            queued = buffered + _kernel_queued(transport) if buffered else 0
            if not buffered:
                self._stalled_since = None
            elif self._stalled_since is None or queued < self._queued:
                self._stalled_since = now  # output waits (or moved since the last look)
            self._queued = queued
            limit = send_timeout
            if self._stopping:
                limit = min(limit or STOPPING_SEND_TIMEOUT, STOPPING_SEND_TIMEOUT)
            if (
                limit is not None
                and self._stalled_since is not None
                and now - self._stalled_since > limit
            ):
                log.info(
                    "a client read nothing for %g s (%s) with %d bytes waiting; connection aborted",
                    limit,
                    "the server is stopping" if self._stopping else "send_timeout",
                    buffered,
                )
                _reset(transport)
                return
            self._watch = self.loop.call_later(tick, self._check)

    return DeadlineH11Protocol


_LINGER_OFF: Final = struct.pack("ii", 1, 0)


def _kernel_queued(transport: asyncio.Transport) -> int:
    """Bytes the kernel holds for the peer, not yet acknowledged (``SIOCOUTQ``).

    Our own buffer moves only when the kernel's (megabytes on loopback) has room
    again; a client reading steadily drains the kernel's first, and that is its
    progress. 0 where the platform cannot tell."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return 0
    try:
        import fcntl  # POSIX only
        import termios

        answer = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
    except (ImportError, OSError, AttributeError):
        return 0
    return int(struct.unpack("i", answer)[0])


def _reset(transport: asyncio.Transport) -> None:
    """Drop the connection and everything queued for it: a reset, not a close.

    ``transport.abort()`` only closes the socket; the kernel then keeps what it
    had queued (megabytes) and goes on offering it to a peer that reads nothing,
    which is never told. With ``SO_LINGER`` 0 the close is a reset: the queue is
    freed at once and the peer learns the connection is gone."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):  # already gone: abort() is all there is to do
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_OFF)
    transport.abort()
