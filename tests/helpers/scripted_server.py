"""A real HTTP server on loopback whose responses a test scripts byte by byte.

Used to test the client against exactly the bytes, splits, statuses and
failures a test needs (a keep-alive between events, a CRLF stream, a body cut
mid-event, a server that dies), over a real socket with uvicorn.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from agui_tools.testing import free_port


async def thread_and_run(request: Request) -> tuple[str, str]:
    """The thread and run a POST asks for (``t``/``r`` when it names none), so an agent
    answers in them and a client follows the run to its end."""
    import orjson

    try:
        asked = orjson.loads(await request.body())
        return str(asked["threadId"]), str(asked["runId"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return "t", "r"


@dataclass
class Script:
    """What the next POST gets: a status, a content type, and body chunks."""

    chunks: list[bytes] = field(default_factory=list)
    status: int = 200
    content_type: str = "text/event-stream"
    delay: float = 0.0
    hang_after: bool = False  # keep the connection open after the last chunk
    requests: list[dict[str, Any]] = field(default_factory=list)


def app_for(script: Script) -> Starlette:
    async def endpoint(request: Request) -> Response:
        body = await request.body()
        script.requests.append({"headers": dict(request.headers), "body": body})
        streamed = script.hang_after or (
            script.content_type in ("text/event-stream", "application/vnd.ag-ui.event+proto")
            and script.status == 200
        )
        if not streamed:
            return Response(
                b"".join(script.chunks), status_code=script.status, media_type=script.content_type
            )

        async def gen() -> AsyncIterator[bytes]:
            for chunk in script.chunks:
                if script.delay:
                    await asyncio.sleep(script.delay)
                yield chunk
            if script.hang_after:
                await asyncio.sleep(3600)

        return StreamingResponse(gen(), status_code=script.status, media_type=script.content_type)

    return Starlette(routes=[Route("/agent", endpoint, methods=["POST"])])


@contextmanager
def serve(app: Any, **options: Any) -> Iterator[str]:
    """Run ``app`` with uvicorn on a free loopback port; yield its base URL.
    ``options``: more ``uvicorn.Config`` options (``date_header=False`` …)."""
    port = free_port()
    # as the commands serve: asyncio and h11, whatever else the dev install holds
    options = {"loop": "asyncio", "http": "h11", **options}
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", lifespan="off", **options
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def address(url: str) -> tuple[str, int]:
    """``(host, port)`` of ``http://host:port[/path]``, for a raw socket."""
    host, port = url.removeprefix("http://").split("/", 1)[0].rsplit(":", 1)
    return host, int(port)
