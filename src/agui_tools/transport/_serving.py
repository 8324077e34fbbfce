"""Serving an ASGI application in-process: real uvicorn on a free loopback port.

The inspector, the demo, the ``agui_check`` / ``agui_mock`` fixtures and the
tests all serve this way (``agui_tools.testing`` re-exports both names); it lives
here, in transport/, so that the faces above it import it going down the flow.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import uvicorn

__all__ = ["free_port", "serving"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now, on ``host`` (for tests and examples that
    serve on a port of their own; another process may still take it first)."""
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
    from ._deadlines import deadline_protocol

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
