"""Strands' AG-UI adapter (``ag-ui-strands``, from PyPI) serving a Strands ``Agent`` on a
scripted model provider — no network, no API key — for `agui-tools check` and the suite.

    python -m tests.helpers.frameworks build strands
    .venv-strands/bin/python interop/frameworks/strands_agent.py --port 8103 [--interrupt] &
    agui-tools check http://127.0.0.1:8103/

The model is a Strands ``Model`` subclass (the custom-provider interface) that
streams ConverseStream events following ``_script.py``: it calls the first
frontend tool the input advertises (arguments in two deltas), else the agent's
own ``get_time`` tool, and answers a tool result in text. ``--interrupt`` gates
``get_time`` on a person's approval with the adapter's own
``ToolBehavior(interrupt_on_call=True)``: the run ends with the interrupt
outcome, and a resume entry ``{"approved": true}`` lets the tool run.
Findings: docs/conformance.md.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import AsyncGenerator, AsyncIterable
from typing import Any

import uvicorn
from _script import AGENT_TOOL, AGENT_TOOL_DESCRIPTION, get_time, plan
from ag_ui_strands import StrandsAgent, StrandsAgentConfig, ToolBehavior, create_strands_app
from strands import Agent, tool
from strands.models.model import Model


def _tool_result(messages: list[dict[str, Any]]) -> str | None:
    last = messages[-1] if messages else None
    if not last or last.get("role") != "user":
        return None
    for block in last.get("content") or []:
        result = block.get("toolResult") if isinstance(block, dict) else None
        if result is not None:
            parts = []
            for part in result.get("content") or []:
                if "text" in part:
                    parts.append(str(part["text"]))
                elif "json" in part:
                    parts.append(json.dumps(part["json"]))
            return " ".join(parts)
    return None


class ScriptedModel(Model):
    """A Strands model provider that follows a script instead of calling a provider."""

    def __init__(self) -> None:
        self.config: dict[str, Any] = {"model_id": "scripted"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, output_model: Any, prompt: Any, system_prompt: Any = None, **kw: Any) -> AsyncGenerator[dict[str, Any], None]:
        raise NotImplementedError("the scripted model has no structured output")

    async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kw: Any) -> AsyncIterable[Any]:
        frontend = [
            (spec["name"], (spec.get("inputSchema") or {}).get("json"))
            for spec in tool_specs or []
            if spec["name"] != AGENT_TOOL
        ]
        step = plan(_tool_result(list(messages)), frontend)
        yield {"messageStart": {"role": "assistant"}}
        if step.tool is None:
            yield {"contentBlockStart": {"start": {}}}
            for word in (step.text or "").split(" "):
                yield {"contentBlockDelta": {"delta": {"text": word + " "}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        yield {"contentBlockStart": {"start": {"toolUse": {"name": step.tool, "toolUseId": step.call_id}}}}
        for half in step.halves():
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": half}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


@tool(name=AGENT_TOOL, description=AGENT_TOOL_DESCRIPTION)
def time_tool(zone: str) -> str:
    """Tell the time in a time zone.

    Args:
        zone: an IANA time zone
    """
    return get_time(zone)


def build_app(interrupt: bool) -> Any:
    behaviors = {AGENT_TOOL: ToolBehavior(interrupt_on_call=True)} if interrupt else {}
    agent = StrandsAgent(
        Agent(model=ScriptedModel(), tools=[time_tool], callback_handler=None),
        name="scripted",
        config=StrandsAgentConfig(tool_behaviors=behaviors),
    )
    return create_strands_app(agent, "/", origins=["http://127.0.0.1"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8103)
    parser.add_argument("--interrupt", action="store_true", help="get_time waits on an approval")
    args = parser.parse_args()
    print(f"Serving the Strands agent at http://127.0.0.1:{args.port}/", flush=True)
    uvicorn.run(build_app(args.interrupt), host="127.0.0.1", port=args.port, log_level="warning")
