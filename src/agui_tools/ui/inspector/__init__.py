"""The browser face: ``agui-tools inspect URL`` — a web page that drives any AG-UI agent.

``_backend``  the :class:`Inspector`: one Session driven for a page, told as a
              replayable log of JSON messages; its threads, turns and runs
``_hub``      the :class:`Hub` (that log) and the bounds of its messages
``_cards``    the tool-call cards, consent questions and interrupts (a mixin)
``_mocks``    mock tools defined in the page and answered there (a mixin)
``_app``      the Starlette app: the page, its SSE message stream, the posts it
              may make, and the Host/Origin/token checks in front of all of it
``_capture``  each run's input as sent and body as received, for export
``_replay``   an imported capture judged as ``agui-tools verify`` judges it, and a
              composed ``RunAgentInput`` checked against the schema
``static/``   the page itself (HTML, JS, CSS shipped in the package: no build
              step, no CDN, works offline)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from ...transport._auth import LOOPBACK_NAMES, WILDCARD_ADDRESSES, HostPolicy
from ...transport._serving import free_port, serving
from ._app import inspector_app
from ._backend import Agent, Hub, Inspector, Refused

__all__ = [
    "Agent",
    "Hub",
    "Inspector",
    "Refused",
    "host_policy",
    "inspector_app",
    "serve_inspector",
]

LOOPBACK = LOOPBACK_NAMES
WILDCARD = WILDCARD_ADDRESSES


def host_policy(host: str, allowed: Iterable[str] = ()) -> HostPolicy:
    """The ``Host`` names a page of an inspector bound to ``host`` may send, at any bind:
    ``localhost``, IP addresses, the bound name and ``allowed`` (``--allow-host``) — never any
    name, since the page carries the token and a DNS-rebinding page brings its own name.
    """
    return HostPolicy(allowed, bound=host)


async def serve_inspector(
    inspector: Inspector,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    ready: Callable[[str], None] | None = None,
    allowed_hosts: Iterable[str] = (),
) -> None:
    """Serve ``inspector`` on ``host:port`` until cancelled; ``ready(url)`` once listening.

    ``allowed_hosts``: names the page may be reached by besides the defaults (see
    :func:`host_policy`)."""
    port = port or free_port(host)
    app = inspector_app(inspector, hosts=host_policy(host, allowed_hosts))
    try:
        async with serving(app, host=host, port=port) as base:
            await inspector.start()  # a thread restored from the store is shown, carried on
            if ready is not None:
                ready(f"{base}/")
            try:
                await asyncio.Event().wait()
            finally:
                inspector.hub.close()  # the page's endless event stream ends, so the server can
    finally:
        await inspector.aclose()
