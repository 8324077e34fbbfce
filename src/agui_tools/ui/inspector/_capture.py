"""What the inspector captures of each run: the input as sent, the body as received —
taken below the unchanged :class:`~agui_tools.transport.AgentClient`, in the httpx
transport, so an export is exactly what crossed the wire, framing faults included.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

__all__ = ["CapturedRun", "TeeTransport"]


@dataclass
class CapturedRun:
    """One run's exchange: the request body exactly as sent, the response body as received."""

    number: int
    url: str
    request: bytes = b""
    status: int | None = None
    body: bytearray = field(default_factory=bytearray)
    result: dict[str, Any] | None = None
    composed: bool = False
    """Sent from the raw request editor: outside the thread."""


class _TeeStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, sink: bytearray) -> None:
        self._inner = inner
        self._sink = sink

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._sink += chunk
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def _events_end(body: bytearray) -> int:
    """Where the last complete SSE event of ``body`` ends (0: none is complete)."""
    return max(
        (
            at + len(blank)
            for blank in (b"\n\n", b"\r\n\r\n", b"\r\r")
            if (at := body.rfind(blank)) >= 0
        ),
        default=0,
    )


class TeeTransport(httpx.AsyncBaseTransport):
    """An httpx transport that copies each exchange into the capture ``current()`` names.

    ``current()`` returns the run being captured (``None`` outside a run: the
    exchange is then passed through untouched). A resumable run's later exchanges
    (docs/resumable.md) are not new runs: a rejoin's body is appended to the run's,
    the cut fragment dropped first (the rejoin sends that event whole); a stop
    request passes through untouched.
    """

    def __init__(
        self,
        current: Callable[[], CapturedRun | None],
        on_request: Callable[[CapturedRun], None],
        inner: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._current = current
        self._on_request = on_request
        self._inner = inner or httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        capture = self._current()
        rejoin = capture is not None and capture.status is not None and request.method == "GET"
        if capture is None or (capture.status is not None and not rejoin):
            return await self._inner.handle_async_request(request)
        if rejoin:
            del capture.body[_events_end(capture.body) :]
        else:
            capture.request = await request.aread()
            self._on_request(capture)
        response = await self._inner.handle_async_request(request)
        if rejoin and response.status_code >= 300:
            return response  # an answer before any stream (RESUME-7): no event of the run
        capture.status = response.status_code
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_TeeStream(response.stream, capture.body),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()
