"""Pydantic AI's built-in AG-UI adapter (``pydantic-ai-slim[ag-ui]``, from PyPI) serving an
agent driven by a scripted ``FunctionModel`` — no network, no API key — for `agui-tools check`.

    python -m venv /tmp/pa && /tmp/pa/bin/pip install -r interop/frameworks/pydantic-ai-requirements.txt
    /tmp/pa/bin/python interop/frameworks/pydantic_ai_agent.py --port 8102 &
    agui-tools check http://127.0.0.1:8102/ --html pydantic-ai.html

The scripted model: shown a tool result, it answers in text; offered tools (the
frontend tools the AG-UI input advertises), it calls the first one, streaming
the arguments in two chunks; otherwise it says hello. Findings: docs/conformance.md.
"""

from __future__ import annotations

import argparse
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def _args_for(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for name in schema.get("required") or []:
        kind = (props.get(name) or {}).get("type")
        out[name] = {"integer": 2, "number": 1.5, "boolean": True}.get(kind, "Paris")
    return out


def _answered(messages: list[ModelMessage]) -> str | None:
    last = messages[-1] if messages else None
    if isinstance(last, ModelRequest):
        for part in last.parts:
            if isinstance(part, ToolReturnPart):
                return str(part.content)
    return None


def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    answered = _answered(messages)
    if answered is not None or not info.function_tools:
        return ModelResponse(parts=[TextPart(f"Thanks: {answered}" if answered else "Hello!")])
    raise NotImplementedError("the streaming path is the one AG-UI uses")


async def stream_reply(
    messages: list[ModelMessage], info: AgentInfo
) -> AsyncIterator[str | DeltaToolCalls]:
    answered = _answered(messages)
    if answered is not None or not info.function_tools:
        for word in (f"Thanks — the tool said: {answered}" if answered else "Hello! How can I help?").split(" "):
            yield word + " "
        return
    tool = info.function_tools[0]
    args = json.dumps(_args_for(tool.parameters_json_schema))
    cut = len(args) // 2
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    yield {0: DeltaToolCall(name=tool.name, json_args=args[:cut], tool_call_id=call_id)}
    yield {0: DeltaToolCall(json_args=args[cut:])}


agent = Agent(FunctionModel(reply, stream_function=stream_reply))


async def endpoint(request: Request) -> Response:
    return await AGUIAdapter.dispatch_request(request, agent=agent)


app = Starlette(routes=[Route("/", endpoint, methods=["POST"])])

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8102)
    args = parser.parse_args()
    print(f"Serving the Pydantic AI agent at http://127.0.0.1:{args.port}/", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
