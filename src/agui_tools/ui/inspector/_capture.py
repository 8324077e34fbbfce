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


class TeeTransport(httpx.AsyncBaseTransport):
    """An httpx transport that copies each exchange into the capture ``current()`` names.

    ``current()`` returns the run being captured (``None`` outside a run: the
    exchange is then passed through untouched).
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
        if capture is None:
            return await self._inner.handle_async_request(request)
        capture.request = await request.aread()
        self._on_request(capture)
        response = await self._inner.handle_async_request(request)
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
