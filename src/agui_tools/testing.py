"""Running an agent in-process for tests, demos and examples.

``serving(app)`` starts a real uvicorn server for an ASGI app on a free
loopback port inside the current event loop and yields its base URL — real
HTTP, real SSE, no subprocess — and stops it on exit.

As a pytest plugin (``pytest_plugins = ["agui_tools.testing"]``) it gives the
``agui_mock`` fixture: ``agui_mock(captures, **options)`` serves
:func:`~agui_tools.transport.mock_app` on a free loopback port in a background
thread for the test and returns a :class:`MockServer` (its ``url``, and the
endpoint: requests seen, runs left) — a frontend under test talks to recorded
runs, faults included, with no model behind them.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import uvicorn

if TYPE_CHECKING:
    from .transport._mock import MockEndpoint

__all__ = ["MockServer", "agui_mock", "free_port", "serving"]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class _InProcessServer(uvicorn.Server):
    """uvicorn, minus its Ctrl-C handling: in-process, Ctrl-C belongs to the application.

    ``uvicorn.Server`` takes SIGINT for itself while it serves and raises it
    again once stopped; inside a demo or a test that makes Ctrl-C first cut
    the application's own stream, then interrupt it a second time, late.
    """

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@asynccontextmanager
async def serving(app: Any, *, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn in this event loop; yield ``http://host:port``.

    Every phase of a connection has a deadline (see
    :mod:`agui_tools.transport._deadlines`): the inspector is served this way."""
    from .transport._deadlines import deadline_protocol

    config = uvicorn.Config(
        app,
        host=host,
        port=port or free_port(host),
        log_level="warning",
        lifespan="off",
        http=deadline_protocol(),
    )
    server = _InProcessServer(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # raises why it could not start
            raise RuntimeError("uvicorn stopped before it started")
        await asyncio.sleep(0.01)
    try:
        yield f"http://{host}:{config.port}"
    except BaseException:
        # interrupted (Ctrl-C, a cancelled test): stop now, not after open connections drain
        server.force_exit = True
        raise
    finally:
        server.should_exit = True
        await task


@dataclass
class MockServer:
    """A mock agent serving for one test: POST runs to ``url``."""

    url: str
    endpoint: MockEndpoint

    @property
    def requests(self) -> int:
        """Requests the mock has received (refused ones included)."""
        return self.endpoint.requests

    @property
    def unused(self) -> int:
        """Recorded runs no request has been given yet."""
        return self.endpoint.matcher.unused

    def __str__(self) -> str:
        return self.url


try:
    import pytest
except ImportError:  # pragma: no cover - pytest is only needed to use the fixture
    pass
else:

    @pytest.fixture
    def agui_mock() -> Iterator[Callable[..., MockServer]]:
        """Serve recorded runs as an agent for this test: ``agui_mock(captures, **options)``.

        ``captures`` and ``options`` are :func:`~agui_tools.transport.mock_app`'s
        (``path`` defaults to ``"/agent"``: the URL ends with it). Each call starts
        one mock on its own free port; all stop when the test ends.
        """
        from .check.pytest_plugin import serving_in_thread
        from .transport._mock import mock_app

        with ExitStack() as stack:

            def start(captures: Any, *, path: str = "/agent", **options: Any) -> MockServer:
                app = mock_app(captures, path=path, **options)
                url = stack.enter_context(serving_in_thread(app, path=path))
                return MockServer(url, app.state.mock)

            yield start
