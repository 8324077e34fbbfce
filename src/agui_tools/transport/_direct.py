"""A started response's body written straight to its connection, below ASGI.

At a model's pace every event leaves alone, and on the ASGI path each one costs a
message dict, a coroutine through every middleware's ``send`` wrapper, uvicorn's
``send`` (h11's state machine on the h11 stack), and a task step for the writer
that awaits it. :class:`DirectBody` frames a body chunk itself — HTTP/1.1 chunked
encoding, as uvicorn would — and hands it to the connection's transport
synchronously, so the run's own task writes its events as it emits them.

What stays on the ASGI path, so the server's view of the exchange stays whole:
the response's head (status, headers — and what middleware adds to them) and its
end (``more_body: False``, through which uvicorn closes the message and h11 moves
on; h11 never sees the chunks between, which change none of its state). What is
kept from uvicorn's ``send``:

* **flow control** — nothing is written while the transport has paused writing
  (its buffer is full): :meth:`DirectBody.write` says so and the caller queues,
  then awaits :meth:`DirectBody.drain`;
* **the client leaving** — nothing is written once the connection is lost, or
  closing (its EOF read: ``connection_lost`` comes a loop turn later);
* **the send deadline** — :mod:`~agui_tools.transport._deadlines` watches the
  transport's buffer, whoever filled it, and resets a client that reads nothing.

It is used only where it is exact: a response to a non-``HEAD`` request, on
uvicorn's h11 or httptools protocol, whose ``send`` reached the application
unwrapped (:class:`DirectRouted` keeps it) and whose body is chunked (or, for an
HTTP/1.0 client on h11, delimited by the close). Anything else — another server,
an application mounted inside another one or wrapped in middleware, middleware
added that may rewrite bodies —
gets ``None`` and the ASGI path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http import h11_impl

try:  # httptools is uvicorn's optional parser (uvicorn[standard]): without it, h11 only
    from uvicorn.protocols.http import httptools_impl
except ImportError:  # pragma: no cover - the dev venv has it; the wheel smoke has not
    httptools_impl = None  # type: ignore[assignment]

__all__ = ["DirectBody", "DirectRouted", "direct_body"]

_SERVER_SEND: Final = "agui_tools.server_send"
"""The scope key under which :class:`DirectRouted` keeps the server's own ``send``."""


class DirectBody:
    """Body chunks of one started response, written to its transport as they come."""

    __slots__ = ("_chunked", "_closing", "_cycle", "_flow", "_write")

    def __init__(self, cycle: Any, *, chunked: bool) -> None:
        self._cycle = cycle
        self._flow = cycle.flow
        self._write: Callable[[bytes], None] = cycle.transport.write
        # closed (a client's EOF, say) but not yet lost: a write would be dropped
        self._closing: Callable[[], bool] = cycle.transport.is_closing
        self._chunked = chunked

    @property
    def ready(self) -> bool:
        """A write now would be taken: writing is not paused and the client is there."""
        return not (self._flow.write_paused or self.gone)

    @property
    def gone(self) -> bool:
        """The client disconnected, or its connection is closing: nothing more can be
        written."""
        return bool(self._cycle.disconnected or self._closing())

    def write(self, data: bytes) -> bool:
        """Write ``data`` now; ``False`` (nothing written) while the transport has paused
        writing — await :meth:`drain` — or once the client is gone."""
        if self._flow.write_paused or self.gone:
            return False
        if data:
            self._write(b"%x\r\n%b\r\n" % (len(data), data) if self._chunked else data)
        return True

    def framed(self, frame: Callable[[bytes], bytes]) -> Callable[[bytes], bool]:
        """:meth:`write` of ``frame(payload)``, as one call: what a stream's
        :class:`~agui_tools.agent._channel.EventChannel` hands each payload to."""
        cycle, flow, write, chunked = self._cycle, self._flow, self._write, self._chunked
        closing = self._closing

        def sink(payload: bytes) -> bool:
            if cycle.disconnected or flow.write_paused or closing():
                return False
            data = frame(payload)
            write(b"%x\r\n%b\r\n" % (len(data), data) if chunked else data)
            return True

        return sink

    async def drain(self) -> None:
        """Return once the transport takes writes again, or the client is gone."""
        if self._flow.write_paused and not self.gone:
            await self._flow.drain()

    async def put(self, data: bytes) -> None:
        """Write ``data``, waiting for the transport if it paused writing; raises
        :class:`ConnectionResetError` when the client is gone."""
        while not self.write(data):
            if self.gone:
                raise ConnectionResetError("the client disconnected")
            await self.drain()


_CYCLES: Final[tuple[type, ...]] = (
    h11_impl.RequestResponseCycle,
    *(() if httptools_impl is None else (httptools_impl.RequestResponseCycle,)),
)
"""uvicorn's request-response cycles: the only ``send`` owners written below."""


def direct_body(scope: Scope) -> DirectBody | None:
    """The writer for the response just started on ``scope``'s request (its head sent
    through ASGI), or ``None`` where writing below ASGI would not be exact."""
    send = scope.get(_SERVER_SEND)
    # a bound method of uvicorn's cycle — not of a wrapping middleware's own responder
    cycle = getattr(send, "__self__", None)
    if cycle is None or type(cycle) not in _CYCLES or scope.get("method") == "HEAD":
        return None
    if not cycle.response_started or cycle.response_complete or cycle.disconnected:
        return None
    if type(cycle) is h11_impl.RequestResponseCycle:
        writer = type(cycle.conn._writer).__name__  # h11's framing of this response
        if writer == "ChunkedWriter":
            return DirectBody(cycle, chunked=True)
        if writer == "Http10Writer":
            return DirectBody(cycle, chunked=False)
        return None
    if cycle.chunked_encoding is True:  # httptools' cycle, the only other one
        return DirectBody(cycle, chunked=True)
    return None


_HEADERS_ONLY: Final[tuple[Any, ...]] = (CORSMiddleware,)
"""Middleware that touches a response's head only: a body written below it is
what it would have passed on unchanged."""


class DirectRouted(Starlette):
    """A Starlette application that keeps the server's ``send`` in the scope, for
    :func:`direct_body` — only while its middleware leaves bodies alone (one added
    later that may rewrite them, compression say, turns it off)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and all(m.cls in _HEADERS_ONLY for m in self.user_middleware):
            scope[_SERVER_SEND] = send
        await super().__call__(scope, receive, send)
