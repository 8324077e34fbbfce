"""LangGraph's AG-UI adapter (ag-ui-langgraph, from PyPI) serving a graph driven by a
scripted chat model — no network, no API key — for `agui-tools check`.

    python -m venv /tmp/lg && /tmp/lg/bin/pip install -r interop/frameworks/langgraph-requirements.txt
    /tmp/lg/bin/python interop/frameworks/langgraph_agent.py --port 8100 &
    agui-tools check http://127.0.0.1:8100/ --html langgraph.html

The model behaves like a chat-completions model would: asked with frontend
tools in state, it calls the first one, streaming the arguments in two chunks
(the first chunk carrying the name, the id and the start of the arguments, as
OpenAI streams them); shown a tool result, it answers in text; otherwise it
says hello. The graph is the standard shape: one model node, frontend tools
left to the application (the run ends on the call). Findings: docs/conformance.md.
"""

from __future__ import annotations

import argparse
import json
import uuid
from collections.abc import Iterator
from typing import Annotated, Any

from typing_extensions import TypedDict

import uvicorn
from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages


def _args_for(tool: dict[str, Any]) -> dict[str, Any]:
    schema = tool.get("parameters") or {}
    props = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for name in schema.get("required") or []:
        kind = (props.get(name) or {}).get("type")
        out[name] = {"integer": 2, "number": 1.5, "boolean": True}.get(kind, "Paris")
    return out


class ScriptedModel(BaseChatModel):
    """A chat model that follows a script instead of calling a provider."""

    tools: list[dict[str, Any]] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _plan(self, messages: list[BaseMessage]) -> tuple[str, dict[str, Any] | None]:
        last = messages[-1] if messages else None
        if isinstance(last, ToolMessage):
            return f"Thanks — the tool said: {last.content}", None
        if self.tools:
            return "", self.tools[0]
        return "Hello! How can I help?", None

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        text, tool = self._plan(messages)
        calls = []
        if tool is not None:
            calls = [{"name": tool["name"], "args": _args_for(tool), "id": f"call_{uuid.uuid4().hex[:12]}"}]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text, tool_calls=calls))])

    def _stream(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> Iterator[ChatGenerationChunk]:
        text, tool = self._plan(messages)
        if tool is None:
            for word in text.split(" "):
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=word + " "))
                if run_manager:
                    run_manager.on_llm_new_token(word + " ", chunk=chunk)
                yield chunk
            return
        args = json.dumps(_args_for(tool))
        cut = len(args) // 2
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        pieces = [
            {"name": tool["name"], "args": args[:cut], "id": call_id, "index": 0},
            {"name": None, "args": args[cut:], "id": None, "index": 0},
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


def build_app() -> FastAPI:
    graph = StateGraph(State)
    graph.add_node("model", model_node)
    graph.add_edge(START, "model")
    graph.add_edge("model", END)
    agent = LangGraphAgent(name="scripted", graph=graph.compile(checkpointer=MemorySaver()))
    app = FastAPI()
    add_langgraph_fastapi_endpoint(app, agent, "/")
    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8100)
    args = parser.parse_args()
    print(f"Serving the LangGraph agent at http://127.0.0.1:{args.port}/", flush=True)
    uvicorn.run(build_app(), host="127.0.0.1", port=args.port, log_level="warning")
