"""The hardened HTTP front every face stands on: serve, proxy, mock and inspect.

A request reaches a face's own logic only through :class:`Front`, which holds
the request phases of a connection to their bounds, in this order:

1. **Shutting down** — ``503`` (``Connection: close``, ``Retry-After``).
2. **Too many at once** — more than ``max_concurrency`` requests being served
   (reading, judging, streaming) is ``503`` with ``Retry-After``, answered at
   once: each request holds a socket, and past the process's descriptor limit a
   server cannot even accept. A request that gives places back (the server's
   stop of a detached run) is admitted past it.
3. **Host** — a name the server is not reached by is ``403`` (DNS rebinding:
   :class:`~agui_tools.transport._auth.HostPolicy`).
4. **The face's own head rules** (``check``) — the server's Origin and
   ``Content-Type``, the inspector's token — judged before the body is read, so
   a refused client costs no reading.
5. **The body** — read whole under ``body_timeout`` (``408``: a body that stops
   half-way holds a connection and a task) and ``max_body_bytes`` (``413``,
   counted while reading, not only from ``Content-Length``); either closes the
   connection, whose unread bytes cannot be the next request.

The face then gets the body in one ``http.request`` message (:func:`received`),
and ``receive`` as it was for what follows (the client leaving). The phases
before the request and after it — the head, idle, the answer's sending — are
bounded by the connection itself: :mod:`agui_tools.transport._deadlines`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._auth import HostPolicy

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_CONCURRENCY",
    "ClientGone",
    "Front",
    "Refusal",
    "received",
    "refuse",
]

DEFAULT_MAX_BODY_BYTES: Final = 8 * 1024 * 1024
DEFAULT_BODY_TIMEOUT: Final = 30.0
"""Seconds a client has to send the whole request body (408 beyond): a body that
trickles in, or stops, holds a connection and a task until then."""
DEFAULT_MAX_CONCURRENCY: Final = 1000
"""Requests served at once — reading, judging or streaming — before new ones are
answered 503 at once. Each holds a socket (a file descriptor); past the process's
descriptor limit a server cannot even accept, so the default stays under the
common ``ulimit -n`` of 1024."""


class Refusal(Exception):
    """A request refused before any answer began: a status and a JSON error body."""

    def __init__(self, status: int, error: Mapping[str, Any], *, close: bool = False) -> None:
        super().__init__(error.get("message"))
        self.status = status
        self.error = {k: v for k, v in error.items() if v is not None}
        self.close = close
        """Answer with ``Connection: close``: the body was not read to its end."""

    def detached(self) -> Refusal:
        """The same refusal with no traceback, cause or context — nothing that keeps
        the frames which judged the request (and their locals) alive."""
        return Refusal(self.status, self.error, close=self.close)


class ClientGone(Exception):
    """The client disconnected before the request body was complete."""


ErrorBody = Callable[[Refusal], Any]
"""What a refusal's JSON body is, per face: ``{"error": {...}}`` unless told."""


def _error_object(refusal: Refusal) -> Any:
    return {"error": refusal.error}


async def refuse(
    scope: Scope,
    receive: Receive,
    send: Send,
    refusal: Refusal,
    error_body: ErrorBody = _error_object,
) -> None:
    """Answer ``refusal``: its status, its JSON body, ``Retry-After`` on a 503."""
    headers = {"connection": "close"} if refusal.close else {}
    if refusal.status == 503:
        headers["retry-after"] = "1"
    response = JSONResponse(error_body(refusal), status_code=refusal.status, headers=headers)
    await response(scope, receive, send)


async def received(receive: Receive) -> bytes:
    """The request body, behind a :class:`Front`: whole, in the first message."""
    message = await receive()
    if message["type"] == "http.disconnect":
        raise ClientGone
    return bytes(message.get("body", b""))


Handler = Callable[[Scope, Receive, Send], Awaitable[None]]
HeadCheck = Callable[[Scope, Headers], None]
"""A face's own rules on a request head; raises :class:`Refusal` to refuse it."""


class Front:
    """The limits and the order they are judged in (see the module's docstring).

    Args:
        hosts: the ``Host`` names answered (``None``: any — a face mounted
            inside another application, whose own front judges them).
        max_body_bytes: the largest request body (413 beyond).
        body_timeout: seconds to receive the whole body (408 beyond; ``None``:
            no deadline).
        max_concurrency: requests served at once before new ones get 503
            (``None``: no limit).
        who: how the refusals name the face (``"server"``, ``"proxy"`` …).
        error_body: the JSON a refusal is answered with.
    """

    def __init__(
        self,
        *,
        hosts: HostPolicy | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
        max_concurrency: int | None = DEFAULT_MAX_CONCURRENCY,
        who: str = "server",
        error_body: ErrorBody = _error_object,
    ) -> None:
        if body_timeout is not None and not body_timeout > 0:
            raise ValueError("body_timeout must be a positive number of seconds, or None")
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1, or None")
        self.hosts = hosts
        self.max_body_bytes = max_body_bytes
        self.body_timeout = body_timeout
        self.max_concurrency = max_concurrency
        self.who = who
        self.error_body = error_body
        self.active = 0
        """Requests being served now."""
        self.closing = False
        """Set when the face shuts down (:meth:`close`): new requests are refused (503)."""
        self._reading: set[asyncio.Task[Any]] = set()
        self._stopped: set[asyncio.Task[Any]] = set()

    def close(self) -> None:
        """The face shuts down: new requests get 503, and so do those still sending
        their bodies — at once, not when the server's grace period cancels them
        (which answers them nothing and logs an error per request)."""
        self.closing = True
        for task in self._reading - self._stopped:
            self._stopped.add(task)
            task.cancel()

    # -- the ASGI faces of the front --------------------------------------------------

    def wrap(self, app: ASGIApp, *, check: HeadCheck | None = None) -> ASGIApp:
        """``app`` behind this front (an ASGI middleware)."""

        async def fronted(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            await self.serve(scope, receive, send, app, check=check)

        return fronted

    async def serve(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        handler: Handler,
        *,
        check: HeadCheck | None = None,
        frees: Callable[[Scope], bool] | None = None,
    ) -> None:
        """One request through every phase; ``handler`` gets it with its body read.
        A request ``frees`` says gives places back (a stop of runs that hold them) is
        admitted past ``max_concurrency``: refusing it would keep the places taken."""
        try:
            self._admit(Headers(scope=scope), limited=frees is None or not frees(scope))
        except Refusal as refusal:
            await refuse(scope, receive, send, refusal, self.error_body)
            return
        with self.slot():
            try:
                if check is not None:
                    check(scope, Headers(scope=scope))
                replay = _replaying(await self.read_body(scope, receive), receive)
            except ClientGone:
                return
            except Refusal as refusal:
                await refuse(scope, receive, send, refusal.detached(), self.error_body)
                return
            await handler(scope, replay, send)

    # -- the phases ------------------------------------------------------------------

    def _admit(self, headers: Headers, *, limited: bool = True) -> None:
        if self.closing:
            raise self._shutting_down()
        if limited and self.max_concurrency is not None and self.active >= self.max_concurrency:
            raise Refusal(
                503,
                {
                    "path": "",
                    "message": f"the {self.who} is serving max_concurrency="
                    f"{self.max_concurrency} requests; retry.",
                },
                close=True,
            )
        problem = self.hosts.problem(headers.get("host")) if self.hosts is not None else None
        if problem is not None:
            raise Refusal(403, {"path": "", "message": problem + "."}, close=True)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """One request counted against ``max_concurrency`` while it is served."""
        self.active += 1
        try:
            yield
        finally:
            self.active -= 1

    async def read_body(self, scope: Scope, receive: Receive) -> bytes:
        """The whole body, under ``body_timeout`` and ``max_body_bytes``."""
        task = asyncio.current_task()
        assert task is not None
        self._reading.add(task)
        try:
            return await self._read_body_in_time(scope, receive)
        except asyncio.CancelledError:
            if task not in self._stopped:
                raise
            task.uncancel()  # cancelled by close(): answered, not cancelled
            raise self._shutting_down() from None
        finally:
            self._reading.discard(task)
            self._stopped.discard(task)

    async def _read_body_in_time(self, scope: Scope, receive: Receive) -> bytes:
        if self.body_timeout is None:
            return await self._read_body(scope, receive)
        try:
            async with asyncio.timeout(self.body_timeout):
                return await self._read_body(scope, receive)
        except TimeoutError:
            raise Refusal(
                408,
                {
                    "path": "",
                    "message": f"the request body did not arrive within {self.body_timeout:g} s "
                    "(body_timeout).",
                },
                close=True,
            ) from None

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        """Read the body, refusing it as soon as it is known to be too large."""
        limit = self.max_body_bytes
        declared = Headers(scope=scope).get("content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                raise Refusal(
                    400,
                    {"rule": "TRANS-4", "path": "", "message": "Content-Length is not a number."},
                ) from None
            if size > limit:
                raise self._too_large()
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone
            body += message.get("body", b"")
            if len(body) > limit:
                raise self._too_large()
            if not message.get("more_body", False):
                return bytes(body)

    def _shutting_down(self) -> Refusal:
        return Refusal(
            503, {"path": "", "message": f"the {self.who} is shutting down; retry."}, close=True
        )

    def _too_large(self) -> Refusal:
        return Refusal(
            413,
            {
                "rule": "LIMIT",
                "path": "",
                "message": f"the request body exceeds max_body_bytes={self.max_body_bytes}.",
            },
            close=True,
        )


def _replaying(body: bytes, receive: Receive) -> Receive:
    """``receive`` with the body already read given first, whole — and then let go,
    so a long answer does not keep the request's bytes."""
    held: list[bytes] = [body]

    async def replayed() -> Message:
        if held:
            return {"type": "http.request", "body": held.pop(), "more_body": False}
        return await receive()

    return replayed
