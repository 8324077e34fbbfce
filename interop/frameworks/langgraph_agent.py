"""LangGraph's AG-UI adapter (ag-ui-langgraph, from PyPI) serving a graph driven by a
scripted chat model — no network, no API key — for `agui-tools check` and the suite.

    python -m tests.helpers.frameworks build langgraph
    .venv-langgraph/bin/python interop/frameworks/langgraph_agent.py --port 8100 [--interrupt] &
    agui-tools check http://127.0.0.1:8100/ --html langgraph.html

The model (a LangChain ``BaseChatModel``, the kind LangChain's own fake chat
models are) follows ``_script.py`` the way a chat-completions model would: it
calls the first frontend tool in state, streaming the arguments in two chunks
(the first carrying the name, the id and the start of the arguments, as OpenAI
streams them), else the agent's own ``get_time``, which the graph's ``tools``
node (LangGraph's ``ToolNode``) runs; a tool result is answered in text. Frontend calls are left to the
application (the run ends on the call). ``--interrupt``: the ``tools`` node asks
for approval with LangGraph's ``interrupt()`` before it runs ``get_time``, and
``LangGraphAgent(emit_interrupt_outcome=True)`` ends that run with the AG-UI
interrupt outcome (by default the adapter only sends its legacy ``on_interrupt``
CUSTOM event and finishes with success — docs/conformance.md); a resume entry
``{"approved": true}`` runs the tool. Findings: docs/conformance.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Annotated, Any

from typing_extensions import TypedDict

import uvicorn
from _script import AGENT_TOOL, AGENT_TOOL_DESCRIPTION, get_time, plan
from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt

APPROVAL_SCHEMA = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
}


def _frontend(tools: list[Any]) -> list[tuple[str, dict[str, Any] | None]]:
    out = []
    for tool in tools:
        fn = tool.get("function", tool) if isinstance(tool, dict) else tool
        name = fn.get("name") if isinstance(fn, dict) else None
        if name and name != AGENT_TOOL:
            out.append((name, fn.get("parameters")))
    return out


class ScriptedModel(BaseChatModel):
    """A chat model that follows a script instead of calling a provider."""

    tools: list[dict[str, Any]] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _step(self, messages: list[BaseMessage]) -> Any:
        last = messages[-1] if messages else None
        result = str(last.content) if isinstance(last, ToolMessage) else None
        return plan(result, _frontend(self.tools))

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        step = self._step(messages)
        calls = [{"name": step.tool, "args": step.args, "id": step.call_id}] if step.tool else []
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=step.text or "", tool_calls=calls))])

    def _stream(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> Iterator[ChatGenerationChunk]:
        step = self._step(messages)
        if step.tool is None:
            for word in (step.text or "").split(" "):
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=word + " "))
                if run_manager:
                    run_manager.on_llm_new_token(word + " ", chunk=chunk)
                yield chunk
            return
        first, second = step.halves()
        pieces = [
            {"name": step.tool, "args": first, "id": step.call_id, "index": 0},
            {"name": None, "args": second, "id": None, "index": 0},
        ]
        for piece in pieces:
            chunk = ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[piece]))
            if run_manager:
                run_manager.on_llm_new_token("", chunk=chunk)
            yield chunk


class State(TypedDict, total=False):
    messages: Annotated[list[BaseMessage], add_messages]
    tools: list[Any]


async def model_node(state: State, config: RunnableConfig) -> dict[str, Any]:
    model = ScriptedModel(tools=list(state.get("tools") or []))
    reply = await model.ainvoke(state["messages"], config)
    return {"messages": [reply]}


def route(state: State) -> str:
    last = state["messages"][-1] if state.get("messages") else None
    calls = getattr(last, "tool_calls", None) or []
    return "tools" if any(c["name"] == AGENT_TOOL for c in calls) else END


def time_tool(gated: bool) -> Any:
    @tool(AGENT_TOOL, description=AGENT_TOOL_DESCRIPTION)
    def get_time_tool(zone: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Tell the time in a time zone."""
        if gated:  # LangGraph's human-in-the-loop: pause here until a resume answers
            answer = interrupt(
                {
                    "reason": "approval",
                    "message": f"May I run {AGENT_TOOL}?",
                    "toolCallId": tool_call_id,
                    "responseSchema": APPROVAL_SCHEMA,
                }
            )
            if not (isinstance(answer, dict) and answer.get("approved") is True):
                return f"{AGENT_TOOL} was not approved"
        return get_time(zone)

    return get_time_tool


def build_app(gated: bool, outcome: bool = True) -> FastAPI:
    graph = StateGraph(State)
    graph.add_node("model", model_node)
    graph.add_node("tools", ToolNode([time_tool(gated)]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    agent = LangGraphAgent(name="scripted", graph=graph.compile(checkpointer=MemorySaver()), emit_interrupt_outcome=gated and outcome)
    app = FastAPI()
    add_langgraph_fastapi_endpoint(app, agent, "/")
    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--interrupt", action="store_true", help="get_time waits on an approval")
    parser.add_argument(
        "--legacy-interrupts",
        action="store_true",
        help="with --interrupt: the adapter's default signalling (a CUSTOM on_interrupt event, no interrupt outcome)",
    )
    args = parser.parse_args()
    print(f"Serving the LangGraph agent at http://127.0.0.1:{args.port}/", flush=True)
    app = build_app(args.interrupt, outcome=not args.legacy_interrupts)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
