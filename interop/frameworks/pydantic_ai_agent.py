"""Pydantic AI's built-in AG-UI adapter (``pydantic-ai-slim[ag-ui]``, from PyPI) serving an
agent driven by a scripted ``FunctionModel`` — no network, no API key — for `agui-tools check`.

    python -m tests.helpers.frameworks build pydantic-ai
    .venv-pydantic-ai/bin/python interop/frameworks/pydantic_ai_agent.py --port 8102 &
    agui-tools check http://127.0.0.1:8102/ --html pydantic-ai.html

The scripted model follows ``_script.py``: it calls the first frontend tool the
AG-UI input advertises (arguments streamed in two chunks), else the agent's own
``get_time`` (a pydantic-ai tool the agent runs); a tool result is answered in
text. Findings: docs/conformance.md.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from _script import AGENT_TOOL, AGENT_TOOL_DESCRIPTION, get_time, plan
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def _answered(messages: list[ModelMessage]) -> str | None:
    last = messages[-1] if messages else None
    if isinstance(last, ModelRequest):
        for part in last.parts:
            if isinstance(part, ToolReturnPart):
                return str(part.content)
    return None


def _step(messages: list[ModelMessage], info: AgentInfo) -> Any:
    frontend = [(t.name, t.parameters_json_schema) for t in info.function_tools if t.name != AGENT_TOOL]
    return plan(_answered(messages), frontend)


def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    step = _step(messages, info)
    if step.tool is None:
        return ModelResponse(parts=[TextPart(step.text or "")])
    return ModelResponse(parts=[ToolCallPart(step.tool, step.args_json, tool_call_id=step.call_id)])


async def stream_reply(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    step = _step(messages, info)
    if step.tool is None:
        for word in (step.text or "").split(" "):
            yield word + " "
        return
    first, second = step.halves()
    yield {0: DeltaToolCall(name=step.tool, json_args=first, tool_call_id=step.call_id)}
    yield {0: DeltaToolCall(json_args=second)}


agent = Agent(FunctionModel(reply, stream_function=stream_reply))


@agent.tool_plain(name=AGENT_TOOL, description=AGENT_TOOL_DESCRIPTION)
def time_tool(zone: str) -> str:
    return get_time(zone)


async def endpoint(request: Request) -> Response:
    return await AGUIAdapter.dispatch_request(request, agent=agent)


app = Starlette(routes=[Route("/", endpoint, methods=["POST"])])

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8102)
    args = parser.parse_args()
    print(f"Serving the Pydantic AI agent at http://127.0.0.1:{args.port}/", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
