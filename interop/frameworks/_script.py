"""The one script every framework harness's scripted model follows (stdlib only).

Each ``*_agent.py`` here wraps this in its framework's own testing kind of model
(pydantic-ai's ``FunctionModel``, a LangChain chat model, a Strands model
provider, …) and imports it from its own directory — the harnesses run in their
frameworks' venvs, never the project's. The script, for the model's turn:

1. the last message is a tool result → answer in text, quoting it;
2. the application advertised frontend tools → call the first one, arguments
   made from its schema's required members;
3. otherwise → call the agent's own tool ``get_time`` (``AGENT_TOOL``), which the
   framework runs and answers itself; in a harness's ``--interrupt`` mode that
   call waits on a person's approval (the framework's interrupt).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

AGENT_TOOL = "get_time"
AGENT_TOOL_DESCRIPTION = "Tell the time in a time zone (the agent runs this tool itself)."
AGENT_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"zone": {"type": "string", "description": "an IANA time zone"}},
    "required": ["zone"],
}
AGENT_TOOL_ARGS: dict[str, Any] = {"zone": "UTC"}


def get_time(zone: str) -> str:
    """The agent-side tool: a fixed clock, so every run is the same."""
    return f"12:00 in {zone}"


def args_for(schema: dict[str, Any] | None) -> dict[str, Any]:
    props = (schema or {}).get("properties") or {}
    out: dict[str, Any] = {}
    for name in (schema or {}).get("required") or []:
        kind = (props.get(name) or {}).get("type")
        out[name] = {"integer": 2, "number": 1.5, "boolean": True}.get(kind, "Paris")
    return out


def reply_text(tool_result: str | None) -> str:
    return f"Thanks — the tool said: {tool_result}" if tool_result is not None else "Hello!"


@dataclass
class Step:
    """What the model does this turn: say ``text``, or call ``tool`` with ``args``."""

    text: str | None = None
    tool: str | None = None
    args: dict[str, Any] | None = None
    call_id: str = ""

    @property
    def args_json(self) -> str:
        return json.dumps(self.args or {})

    def halves(self) -> tuple[str, str]:
        """The arguments in two chunks, as a provider streams them."""
        text = self.args_json
        cut = len(text) // 2
        return text[:cut], text[cut:]


def plan(tool_result: str | None, frontend: list[tuple[str, dict[str, Any] | None]]) -> Step:
    """``tool_result``: the content of the last message when it is a tool result;
    ``frontend``: (name, parameters schema) of each tool the application advertised."""
    if tool_result is not None:
        return Step(text=reply_text(tool_result))
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    if frontend:
        name, schema = frontend[0]
        return Step(tool=name, args=args_for(schema), call_id=call_id)
    return Step(tool=AGENT_TOOL, args=dict(AGENT_TOOL_ARGS), call_id=call_id)
