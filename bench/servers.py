"""The two agent servers the transport benchmark compares, as runnable programs.

    python -m bench.servers ours PORT       # agui-tools agent_app + the Run API
    python -m bench.servers ours-noverify PORT
    python -m bench.servers official PORT   # FastAPI + ag_ui.encoder.EventEncoder, the
                                             # official quickstart's shape
Both serve the same agent at POST /agent: with ``forwardedProps.mode ==
"burst"`` it streams ``forwardedProps.n`` text deltas and as many tool-call
argument deltas as fast as it can; with ``"idle"`` it opens a message and then
waits (for the concurrent-idle-streams memory measurement); ``"paced"`` (ours only)
sends ``n`` deltas ``interval`` seconds apart, each the ``time.monotonic_ns()`` it
was sent at (the proxy benchmark's per-event latency).
"""

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import uvicorn

WORD = "token "
ARG = '{"q": "x"} '


def ours(verify: bool) -> Any:
    from agui_tools.agent import Run
    from agui_tools.transport._server import agent_app

    async def agent(run: Run) -> None:
        props = run.forwarded_props or {}
        if props.get("mode") == "idle":
            async with run.message() as m:
                await m.delta("waiting")
                await asyncio.sleep(3600)
            return
        n = int(props.get("n", 1000))
        if props.get("mode") == "paced":  # one event per chunk, each saying when it left
            interval = float(props.get("interval", 0.001))
            async with run.message() as m:
                for _ in range(n):
                    await m.delta(str(time.monotonic_ns()))
                    await asyncio.sleep(interval)
            return
        async with run.message() as m:
            for _ in range(n):
                await m.delta(WORD)
        async with run.tool_call("search", parent_message_id=m.id) as call:
            for _ in range(n):
                await call.args(ARG)
        await run.result(call.id, "done")

    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def runs(request: Any) -> JSONResponse:
        """Run tasks alive in this server (the disconnect storm waits for none)."""
        alive = [t for t in asyncio.all_tasks() if t.get_name().startswith("agui-run-")]
        return JSONResponse({"runs": len(alive)})

    app = agent_app(agent, path="/agent", verify=verify)
    app.router.routes.insert(0, Route("/runs", runs, methods=["GET"]))
    return app


def official() -> Any:
    from ag_ui.core import (
        RunAgentInput,
        RunFinishedEvent,
        RunStartedEvent,
        TextMessageContentEvent,
        TextMessageEndEvent,
        TextMessageStartEvent,
        ToolCallArgsEvent,
        ToolCallEndEvent,
        ToolCallResultEvent,
        ToolCallStartEvent,
    )
    from ag_ui.encoder import EventEncoder
    from fastapi import FastAPI, Request
    from fastapi.responses import StreamingResponse

    app = FastAPI()

    @app.post("/agent")
    async def agent(input_data: RunAgentInput, request: Request) -> StreamingResponse:
        encoder = EventEncoder(accept=request.headers.get("accept"))
        props = input_data.forwarded_props or {}
        tid, rid = input_data.thread_id, input_data.run_id

        async def events() -> AsyncIterator[str]:
            yield encoder.encode(RunStartedEvent(thread_id=tid, run_id=rid))
            yield encoder.encode(TextMessageStartEvent(message_id="m1", role="assistant"))
            if props.get("mode") == "idle":
                yield encoder.encode(TextMessageContentEvent(message_id="m1", delta="waiting"))
                await asyncio.sleep(3600)
                return
            n = int(props.get("n", 1000))
            for _ in range(n):
                yield encoder.encode(TextMessageContentEvent(message_id="m1", delta=WORD))
            yield encoder.encode(TextMessageEndEvent(message_id="m1"))
            yield encoder.encode(
                ToolCallStartEvent(
                    tool_call_id="c1", tool_call_name="search", parent_message_id="m1"
                )
            )
            for _ in range(n):
                yield encoder.encode(ToolCallArgsEvent(tool_call_id="c1", delta=ARG))
            yield encoder.encode(ToolCallEndEvent(tool_call_id="c1"))
            yield encoder.encode(
                ToolCallResultEvent(message_id="r1", tool_call_id="c1", content="done")
            )
            yield encoder.encode(RunFinishedEvent(thread_id=tid, run_id=rid))

        return StreamingResponse(events(), media_type=encoder.get_content_type())

    return app


def main() -> None:
    kind, port = sys.argv[1], int(sys.argv[2])
    app = {"ours": lambda: ours(True), "ours-noverify": lambda: ours(False), "official": official}[
        kind
    ]()
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
        limit_concurrency=None,
        backlog=4096,
    )


if __name__ == "__main__":
    main()
