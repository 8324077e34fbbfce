"""An upstream agent for the proxy's query tests: it answers one good run and keeps
each query string it was sent."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agui_tools.wire._framing import sse_frame

INPUT: dict[str, Any] = {
    "threadId": "t1",
    "runId": "r1",
    "messages": [{"id": "u1", "role": "user", "content": "hi"}],
}
EVENTS = [
    {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
]


def upstream(seen: list[bytes]) -> Starlette:
    async def agent(request: Request) -> Response:
        await request.body()
        seen.append(request.scope["query_string"])
        body = b"".join(sse_frame(orjson.dumps(e)) for e in EVENTS)
        return Response(body, media_type="text/event-stream")

    return Starlette(
        routes=[
            Route("/agent", agent, methods=["POST"]),
            Route("/agent/{rest:path}", agent, methods=["POST"]),
        ]
    )
