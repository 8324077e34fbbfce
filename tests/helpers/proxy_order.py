"""The proxy tests' run: the user orders two widgets, the agent calls ``confirm_order``.

Its events (:data:`RS` … :data:`TE`, :data:`ARGS_AFTER_END` breaking TOOL-20), framed
as SSE one frame each (:func:`sse`), and the frontend's POST (:func:`post`).
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from agui_tools.wire._framing import sse_frame

TOOLS = [{"name": "confirm_order", "description": "Ask the user to confirm an order."}]
INPUT: dict[str, Any] = {
    "threadId": "t1",
    "runId": "r1",
    "messages": [{"id": "u1", "role": "user", "content": "Order 2 widgets"}],
    "tools": TOOLS,
}
RS = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
RF = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}
TS = {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "confirm_order"}
TA = {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"qty":2}'}
TE = {"type": "TOOL_CALL_END", "toolCallId": "c1"}
ARGS_AFTER_END = [RS, TS, TE, TA, RF]


def sse(events: list[dict[str, Any]]) -> list[bytes]:
    return [sse_frame(orjson.dumps(e)) for e in events]


def post(
    url: str, body: dict[str, Any] | bytes, *, accept: str = "text/event-stream"
) -> httpx.Response:
    content = body if isinstance(body, bytes) else orjson.dumps(body)
    return httpx.post(
        url,
        content=content,
        headers={"content-type": "application/json", "accept": accept},
        timeout=30,
    )
