"""LlamaIndex's AG-UI adapter (``llama-index-protocols-ag-ui``, from PyPI) serving its
``AGUIChatWorkflow`` on LlamaIndex's own ``MockFunctionCallingLLM`` — no network, no API key —
for `agui-tools check` and the suite.

    python -m tests.helpers.frameworks build llamaindex
    .venv-llamaindex/bin/python interop/frameworks/llamaindex_agent.py --port 8106 &
    agui-tools check http://127.0.0.1:8106/

The mock's ``response_generator`` follows ``_script.py``: the first frontend tool
the input advertises is called, else the agent's own ``get_time`` (a backend
tool the workflow runs); a tool result is answered in text. The adapter's
router serves ``POST /run``; the same handler is mounted at ``/`` so every
harness has one URL shape. Findings: docs/conformance.md.
"""

from __future__ import annotations

import argparse
from typing import Any

import uvicorn
from _script import AGENT_TOOL, AGENT_TOOL_DESCRIPTION, get_time, plan
from fastapi import FastAPI
from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool
from llama_index.protocols.ag_ui.router import AGUIWorkflowRouter, get_default_workflow_factory


def _tool_result(messages: list[ChatMessage]) -> str | None:
    last = messages[-1] if messages else None
    if last is None:
        return None
    # the adapter hands an application's tool message to the model as a *user* message
    # carrying the call's id (its own tool results stay role "tool")
    if last.role == MessageRole.TOOL or last.additional_kwargs.get("tool_call_id"):
        return str(last.content)
    return None


def script(messages: Any, **kwargs: Any) -> ChatMessage:
    frontend = [
        (tool.metadata.name, tool.metadata.get_parameters_dict())
        for tool in kwargs.get("tools") or []
        if tool.metadata.name != AGENT_TOOL
    ]
    step = plan(_tool_result(list(messages)), frontend)
    if step.tool is None:
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[TextBlock(text=step.text or "")])
    call = ToolCallBlock(tool_call_id=step.call_id, tool_name=step.tool, tool_kwargs=step.args or {})
    return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])


def time_tool(zone: str) -> str:
    """Tell the time in a time zone (the agent runs this tool itself)."""
    return get_time(zone)


def build_app() -> FastAPI:
    llm = MockFunctionCallingLLM(response_generator=script, is_chat_model=True)
    backend = FunctionTool.from_defaults(fn=time_tool, name=AGENT_TOOL, description=AGENT_TOOL_DESCRIPTION)
    factory = get_default_workflow_factory(llm, None, [backend], None, None, 120)
    router = AGUIWorkflowRouter(factory)
    app = FastAPI()
    app.include_router(router.router)
    app.add_api_route("/", router.run, methods=["POST"])
    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8106)
    args = parser.parse_args()
    print(f"Serving the LlamaIndex agent at http://127.0.0.1:{args.port}/", flush=True)
    uvicorn.run(build_app(), host="127.0.0.1", port=args.port, log_level="warning")
