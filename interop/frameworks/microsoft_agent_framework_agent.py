"""Microsoft Agent Framework's AG-UI adapter (``agent-framework-ag-ui``, from PyPI) serving an
``Agent`` on a scripted chat client — no network, no API key — for `agui-tools check`.

    python -m tests.helpers.frameworks build microsoft-agent-framework
    .venv-microsoft-agent-framework/bin/python interop/frameworks/microsoft_agent_framework_agent.py --port 8104 &
    agui-tools check http://127.0.0.1:8104/

The client is a ``BaseChatClient`` with the framework's own
``FunctionInvocationLayer`` (the custom-client recipe of the framework's
docstring), streaming ``ChatResponseUpdate``s that follow ``_script.py``: the
first advertised frontend tool is called (arguments in two updates), else the
agent's own ``get_time``, which the framework runs; a tool result is answered
in text. Findings: docs/conformance.md.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import uvicorn
from _script import AGENT_TOOL, AGENT_TOOL_DESCRIPTION, get_time, plan
from agent_framework import (
    Agent,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    tool,
)
from agent_framework._tools import FunctionInvocationLayer
from agent_framework_ag_ui import add_agent_framework_fastapi_endpoint
from fastapi import FastAPI


def _tool_result(messages: Sequence[Message]) -> str | None:
    last = messages[-1] if messages else None
    if last is None or str(getattr(last, "role", "")) != "tool":
        return None
    for content in last.contents:
        if content.type == "function_result":
            return str(content.result)
    return None


def _frontend(options: Mapping[str, Any]) -> list[tuple[str, dict[str, Any] | None]]:
    out = []
    for t in options.get("tools") or []:
        name = getattr(t, "name", None)
        if name and name != AGENT_TOOL:
            params = t.parameters() if callable(getattr(t, "parameters", None)) else None
            out.append((name, params))
    return out


class ScriptedClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """A chat client that follows a script instead of calling a provider."""

    OTEL_PROVIDER_NAME = "scripted"

    def _updates(self, messages: Sequence[Message], options: Mapping[str, Any]) -> list[ChatResponseUpdate]:
        step = plan(_tool_result(messages), _frontend(options))
        if step.tool is None:
            return [
                ChatResponseUpdate(role="assistant", contents=[Content.from_text(word + " ")])
                for word in (step.text or "").split(" ")
            ]
        first, second = step.halves()
        return [
            ChatResponseUpdate(
                role="assistant",
                contents=[Content.from_function_call(step.call_id, step.tool, arguments=first)],
            ),
            ChatResponseUpdate(
                role="assistant",
                contents=[Content.from_function_call(step.call_id, step.tool, arguments=second)],
            ),
        ]

    def _inner_get_response(self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any) -> Any:
        updates = self._updates(messages, options)
        if stream:
            async def _stream() -> AsyncIterator[ChatResponseUpdate]:
                for update in updates:
                    yield update

            return self._build_response_stream(_stream())

        async def _whole() -> ChatResponse:
            return ChatResponse.from_updates(updates)

        return _whole()


@tool(name=AGENT_TOOL, description=AGENT_TOOL_DESCRIPTION)
def time_tool(zone: str) -> str:
    return get_time(zone)


def build_app() -> FastAPI:
    agent = Agent(name="scripted", instructions="Follow the script.", client=ScriptedClient(), tools=[time_tool])
    app = FastAPI()
    add_agent_framework_fastapi_endpoint(app, agent, "/", single_user=True)  # one local caller
    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8104)
    args = parser.parse_args()
    print(f"Serving the Microsoft Agent Framework agent at http://127.0.0.1:{args.port}/", flush=True)
    uvicorn.run(build_app(), host="127.0.0.1", port=args.port, log_level="warning")
