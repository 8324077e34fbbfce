"""The run the proxy attack tests send, and their probes of the proxy.

A ``search`` tool call between RUN_STARTED and RUN_FINISHED (:data:`GOOD`) as SSE
bytes (:func:`sse`); an agent answering with a ``content-encoding`` (:func:`encoded_agent`);
a request target sent byte for byte (:func:`raw_request`) and what the upstream saw
of it (:func:`seen_upstream`); a stream read raw (:func:`raw_stream`) and the wait
for the proxy's findings (:func:`wait_findings`).
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agui_tools.wire._framing import sse_frame
from tests.helpers.proxy import proxied, raw_post, stream_post
from tests.helpers.scripted_server import serve

INPUT: dict[str, Any] = {
    "threadId": "t1",
    "runId": "r1",
    "messages": [{"id": "u1", "role": "user", "content": "hi"}],
}
RS = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
RF = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}
TS = {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "search"}
TA = {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"}
TE = {"type": "TOOL_CALL_END", "toolCallId": "c1"}
GOOD = [RS, TS, TA, TE, RF]


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(sse_frame(orjson.dumps(e)) for e in events)


def encoded_agent(body: bytes, coding: str) -> Starlette:
    async def agent(request: Request) -> Response:
        await request.body()
        return Response(body, media_type="text/event-stream", headers={"content-encoding": coding})

    return Starlette(routes=[Route("/agent", agent, methods=["POST"])])


def raw_request(url: str, method: str, target: bytes) -> tuple[int, bytes]:
    """``target`` sent exactly as given (httpx would resolve ``..`` itself)."""
    line = b"%s %s HTTP/1.1" % (method.encode(), target)
    with raw_post(url, orjson.dumps(INPUT), head=line, extra=b"connection: close\r\n") as sock:
        answer = b""
        while piece := sock.recv(65536):
            answer += piece
    head, _, payload = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), payload


def raw_stream(url: str, **headers: str) -> tuple[httpx.Response, bytes]:
    with stream_post(url, INPUT, **headers) as answer:
        raw = b"".join(answer.iter_raw())
    return answer, raw


def wait_findings(px: Any, n: int = 1, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while len(px.findings) < n and time.monotonic() < deadline:
        time.sleep(0.05)


def seen_upstream(target: bytes) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    seen: list[tuple[bytes, bytes]] = []

    async def anything(request: Request) -> Response:
        seen.append((request.scope["raw_path"], request.scope["query_string"]))
        return Response(sse(GOOD), media_type="text/event-stream")

    upstream = Starlette(routes=[Route("/{rest:path}", anything, methods=["GET", "POST"])])
    with serve(upstream) as base, proxied(f"{base}/agent") as px:
        status, payload = raw_request(px.url, "POST", target)
    return status, payload, seen
