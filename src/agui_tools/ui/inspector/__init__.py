"""The browser face: ``agui-tools inspect URL`` — a web page that drives any AG-UI agent.

``_backend``  the :class:`Inspector`: one Session driven for a page, told as a
              replayable log of JSON messages (the :class:`Hub`)
``_app``      the Starlette app: the page, its SSE message stream, the posts it
              may make, and the Host/Origin/token checks in front of all of it
``_capture``  each run's input as sent and body as received, for export
``static/``   the page itself (HTML, JS, CSS shipped in the package: no build
              step, no CDN, works offline)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ...testing import free_port, serving
from ._app import inspector_app
from ._backend import Hub, Inspector, Refused

__all__ = ["Hub", "Inspector", "Refused", "inspector_app", "loopback_hosts", "serve_inspector"]

LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARD = ("0.0.0.0", "::", "")


def loopback_hosts(host: str, port: int) -> set[str] | None:
    """The ``Host`` header values a page of this server legitimately sends.

    ``None`` (any) for a wildcard bind (``0.0.0.0``, ``::``), which answers to
    names this process cannot know; the Origin and token checks still hold.
    """
    if host in WILDCARD:
        return None
    names = {host, *LOOPBACK} if host in LOOPBACK else {host}
    return {f"[{n}]:{port}" if ":" in n else f"{n}:{port}" for n in names}


async def serve_inspector(
    inspector: Inspector,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``inspector`` on ``host:port`` until cancelled; ``ready(url)`` once listening."""
    port = port or free_port(host)
    app = inspector_app(inspector, hosts=loopback_hosts(host, port))
    try:
        async with serving(app, host=host, port=port) as base:
            if ready is not None:
                ready(f"{base}/")
            try:
                await asyncio.Event().wait()
            finally:
                inspector.hub.close()  # the page's endless event stream ends, so the server can
    finally:
        await inspector.aclose()
