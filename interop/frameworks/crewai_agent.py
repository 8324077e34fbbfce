"""CrewAI's AG-UI adapter (``ag-ui-crewai``, from PyPI) serving a CrewAI ``Flow`` whose model
is litellm's own mock (``mock_response`` / ``mock_tool_calls``) — no network, no API key — for
`agui-tools check` and the suite.

    python -m tests.helpers.frameworks build crewai
    .venv-crewai/bin/python interop/frameworks/crewai_agent.py --port 8107 &
    agui-tools check http://127.0.0.1:8107/

The flow is the shape of CrewAI's AG-UI examples (``Flow[CopilotKitState]``, a
``@start`` step streaming through ``copilotkit_stream``), driven by
``_script.py``: the first frontend tool the input advertises
(``state.copilotkit.actions``) is called, else the agent's own ``get_time``,
which the flow runs and appends to its messages before asking the model again;
a tool result is answered in text. Findings: docs/conformance.md.
"""

from __future__ import annotations

import os

# litellm fetches a price list at import, CrewAI sends telemetry: neither may leave the machine
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

import argparse  # noqa: E402
import json  # noqa: E402
from typing import Any  # noqa: E402

import litellm  # noqa: E402
import uvicorn  # noqa: E402
from _script import AGENT_TOOL, get_time, plan  # noqa: E402
from ag_ui_crewai import CopilotKitState, add_crewai_flow_fastapi_endpoint, copilotkit_stream  # noqa: E402
from crewai.flow.flow import Flow, start  # noqa: E402
from fastapi import FastAPI  # noqa: E402


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _tool_result(messages: list[Any]) -> str | None:
    last = messages[-1] if messages else None
    if last is None or _get(last, "role") != "tool":
        return None
    return str(_get(last, "content"))


def _frontend(actions: list[Any]) -> list[tuple[str, dict[str, Any] | None]]:
    out = []
    for action in actions:
        fn = _get(action, "function") or action
        name = _get(fn, "name")
        if name and name != AGENT_TOOL:
            out.append((name, _get(fn, "parameters")))
    return out


class ScriptedFlow(Flow[CopilotKitState]):
    @start()
    async def chat(self) -> None:
        for _ in range(3):  # a call to the agent's own tool, then the answer
            step = plan(_tool_result(self.state.messages), _frontend(self.state.copilotkit.actions))
            if step.tool is None:
                response = await copilotkit_stream(
                    await litellm.acompletion(model="openai/scripted", messages=[], stream=True, mock_response=step.text)
                )
                self.state.messages.append({"role": "assistant", "content": response.choices[0].message.content})
                return
            call = {"id": step.call_id, "type": "function", "function": {"name": step.tool, "arguments": step.args_json}}
            whole = await litellm.acompletion(model="openai/scripted", messages=[], mock_response="", mock_tool_calls=[call])
            await copilotkit_stream(  # litellm streams a ModelResponse given as the mock: the call as deltas
                await litellm.acompletion(model="openai/scripted", messages=[], stream=True, mock_response=whole)
            )
            self.state.messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
            if step.tool != AGENT_TOOL:
                return  # a frontend tool: the application answers it
            result = get_time(**json.loads(step.args_json))
            self.state.messages.append({"role": "tool", "content": result, "tool_call_id": step.call_id})


def build_app() -> FastAPI:
    app = FastAPI()
    add_crewai_flow_fastapi_endpoint(app, ScriptedFlow(), "/")
    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8107)
    args = parser.parse_args()
    print(f"Serving the CrewAI agent at http://127.0.0.1:{args.port}/", flush=True)
    uvicorn.run(build_app(), host="127.0.0.1", port=args.port, log_level="warning")
