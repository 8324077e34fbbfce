"""Google ADK's AG-UI adapter (``ag-ui-adk``, from PyPI) serving an ``LlmAgent`` on a scripted
``BaseLlm`` — no network, no API key — for `agui-tools check` and the suite.

    python -m tests.helpers.frameworks build google-adk
    .venv-google-adk/bin/python interop/frameworks/google_adk_agent.py --port 8105 &
    agui-tools check http://127.0.0.1:8105/

The model is a ``google.adk.models.BaseLlm`` subclass (ADK's own interface for a
model) answering ``generate_content_async`` by ``_script.py``: the first
frontend tool (``AGUIToolset``: the tools the AG-UI input advertises) is called,
else the agent's own ``get_time``, which ADK runs; a function response is
answered in text (streamed as partial responses, then the whole, as Gemini
does). Findings: docs/conformance.md.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncGenerator
from typing import Any

import uvicorn
from _script import AGENT_TOOL, get_time, plan
from ag_ui_adk import ADKAgent, AGUIToolset, add_adk_fastapi_endpoint
from fastapi import FastAPI
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types


def _tool_result(request: LlmRequest) -> str | None:
    last = request.contents[-1] if request.contents else None
    for part in (last.parts or []) if last is not None else []:
        if part.function_response is not None:
            response = part.function_response.response or {}
            return str(response.get("result", response))
    return None


def _json_schema(schema: types.Schema | None) -> dict[str, Any] | None:
    if schema is None:
        return None
    props = {name: {"type": str(getattr(p.type, "value", p.type) or "string").lower()} for name, p in (schema.properties or {}).items()}
    return {"type": "object", "properties": props, "required": list(schema.required or [])}


def _frontend(request: LlmRequest) -> list[tuple[str, dict[str, Any] | None]]:
    out = []
    for name, tool in request.tools_dict.items():
        if name == AGENT_TOOL:
            continue
        declaration = tool._get_declaration()
        schema = getattr(declaration, "parameters_json_schema", None) if declaration else None
        out.append((name, schema or _json_schema(declaration.parameters if declaration else None)))
    return out


class ScriptedLlm(BaseLlm):
    """An ADK model that follows a script instead of calling Gemini."""

    model: str = "scripted"

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        step = plan(_tool_result(llm_request), _frontend(llm_request))
        if step.tool is not None:
            call = types.FunctionCall(id=step.call_id, name=step.tool, args=step.args)
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))
            return
        text = step.text or ""
        if stream:
            for word in text.split(" "):
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=word + " ")]), partial=True)
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]), turn_complete=True)


def time_tool(zone: str) -> str:
    """Tell the time in a time zone (the agent runs this tool itself).

    Args:
        zone: an IANA time zone
    """
    return get_time(zone)


time_tool.__name__ = AGENT_TOOL


def build_app() -> FastAPI:
    llm_agent = LlmAgent(name="scripted", model=ScriptedLlm(), instruction="Follow the script.", tools=[time_tool, AGUIToolset()])
    agent = ADKAgent(adk_agent=llm_agent, app_name="scripted", user_id="local", use_in_memory_services=True)
    app = FastAPI()
    add_adk_fastapi_endpoint(app, agent, "/")
    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8105)
    args = parser.parse_args()
    print(f"Serving the Google ADK agent at http://127.0.0.1:{args.port}/", flush=True)
    uvicorn.run(build_app(), host="127.0.0.1", port=args.port, log_level="warning")
