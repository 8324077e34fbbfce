"""The two agent servers the transport benchmark compares, as runnable programs.

    python -m bench.servers ours PORT       # agui-tools agent_app + the Run API
    python -m bench.servers ours-noverify PORT
    python -m bench.servers ours-asgi PORT  # ours, events through ASGI (no direct writer)
    python -m bench.servers ours-frozen PORT  # ours, start-up's objects frozen (gc.freeze)
    python -m bench.servers official PORT   # FastAPI + ag_ui.encoder.EventEncoder, the
                                             # official quickstart's shape
    python -m bench.servers floor PORT      # a bare ASGI app writing ready-made frames
                                             # ("model" mode only: the per-event floor)
    python -m bench.servers KIND PORT STACK # on one of STACKS (default: auto)
Both serve the same agent at POST /agent: with ``forwardedProps.mode ==
"burst"`` it streams ``forwardedProps.n`` text deltas and as many tool-call
argument deltas as fast as it can; with ``"idle"`` it opens a message and then
waits (for the concurrent-idle-streams memory measurement); ``"paced"`` (ours only)
sends ``n`` deltas ``interval`` seconds apart, each the ``time.monotonic_ns()`` it
was sent at (the proxy benchmark's per-event latency); ``"model"`` streams like a
model at ``tps`` deltas a second: ``tokens`` text deltas, then ``calls`` tool calls
of ``args`` argument deltas each, every call answered (bench/capacity.py).
"""

import asyncio
import gc
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
        if props.get("mode") == "model":
            await model_pace(run, props)
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

    async def collections(request: Any) -> JSONResponse:
        """The collector's passes so far (:func:`count_collections`)."""
        return JSONResponse(GC_PASSES)

    app = agent_app(agent, path="/agent", verify=verify)
    app.router.routes.insert(0, Route("/runs", runs, methods=["GET"]))
    app.router.routes.insert(0, Route("/gc", collections, methods=["GET"]))
    return app


GC_PASSES: dict[str, Any] = {
    "full_ms": [],
    "full_cpu_ms": [],
    "young": 0,
    "young_ms": 0.0,
    "frozen": 0,
}
"""What ``GET /gc`` answers (ours only): each full (generation 2) collection's pause in
ms — wall clock, and the process's CPU time, which a busy machine does not stretch —
the younger collections' count and total ms, and how many objects were frozen."""


def count_collections() -> None:
    """Time every collection the process runs (``gc.callbacks``) into :data:`GC_PASSES`."""
    started = [0.0, 0.0]

    def timed(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[:] = time.perf_counter(), time.process_time()
            return
        ms = (time.perf_counter() - started[0]) * 1e3
        if info["generation"] == 2:
            GC_PASSES["full_ms"].append(round(ms, 3))
            GC_PASSES["full_cpu_ms"].append(round((time.process_time() - started[1]) * 1e3, 3))
        else:
            GC_PASSES["young"] += 1
            GC_PASSES["young_ms"] += ms

    gc.callbacks.append(timed)


def ours_through_asgi() -> Any:
    """Ours with every event sent through ASGI, as before the direct writer
    (transport/_direct.py): the A/B of what writing below ASGI saves."""
    from agui_tools.transport import _server

    _server.direct_body = lambda scope: None  # type: ignore[assignment]  # the A/B's switch
    return ours(True)


def model_shape(props: dict[str, Any]) -> tuple[float, int, int, int]:
    """``(seconds between deltas, text deltas, tool calls, argument deltas per call)``."""
    return (
        1 / float(props.get("tps", 40)),
        int(props.get("tokens", 120)),
        int(props.get("calls", 1)),
        int(props.get("args", 40)),
    )


async def model_pace(run: Any, props: dict[str, Any]) -> None:
    """Ours, streaming like a model: one delta every ``1 / tps`` seconds."""
    pause, tokens, calls, args = model_shape(props)
    async with run.message() as m:
        for _ in range(tokens):
            await asyncio.sleep(pause)
            await m.delta(WORD)
    for c in range(calls):
        async with run.tool_call("search", parent_message_id=m.id) as call:
            for _ in range(args):
                await asyncio.sleep(pause)
                await call.args(ARG)
        await run.result(call.id, f"done {c}")


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
            if props.get("mode") == "model":  # the same pace and shape as ours
                pause, tokens, calls, args = model_shape(props)
                for _ in range(tokens):
                    await asyncio.sleep(pause)
                    yield encoder.encode(TextMessageContentEvent(message_id="m1", delta=WORD))
                yield encoder.encode(TextMessageEndEvent(message_id="m1"))
                for c in range(calls):
                    yield encoder.encode(
                        ToolCallStartEvent(
                            tool_call_id=f"c{c}", tool_call_name="search", parent_message_id="m1"
                        )
                    )
                    for _ in range(args):
                        await asyncio.sleep(pause)
                        yield encoder.encode(ToolCallArgsEvent(tool_call_id=f"c{c}", delta=ARG))
                    yield encoder.encode(ToolCallEndEvent(tool_call_id=f"c{c}"))
                    yield encoder.encode(
                        ToolCallResultEvent(
                            message_id=f"r{c}", tool_call_id=f"c{c}", content=f"done {c}"
                        )
                    )
                yield encoder.encode(RunFinishedEvent(thread_id=tid, run_id=rid))
                return
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


def floor() -> Any:
    """The per-event floor of any ASGI app on this server: ``"model"`` mode's pace and
    frames, each frame made once at start-up — no encoding, no checks, one task."""
    import orjson

    def frame(event: dict[str, Any]) -> bytes:
        return b"data: " + orjson.dumps(event) + b"\n\n"

    text = frame({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": WORD})
    arg = frame({"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": ARG})
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["method"] != "POST":  # the benchmark's "is it up yet" probe
            await send({"type": "http.response.start", "status": 405, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        run = orjson.loads(body)
        pause, tokens, calls, args = model_shape(run.get("forwardedProps") or {})
        ids = {"threadId": run["threadId"], "runId": run["runId"]}

        async def out(chunk: bytes) -> None:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})

        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await out(frame({"type": "RUN_STARTED", **ids}))
        await out(frame({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}))
        for _ in range(tokens):
            await asyncio.sleep(pause)
            await out(text)
        await out(frame({"type": "TEXT_MESSAGE_END", "messageId": "m1"}))
        for _ in range(calls):
            await out(frame({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "s"}))
            for _ in range(args):
                await asyncio.sleep(pause)
                await out(arg)
            await out(frame({"type": "TOOL_CALL_END", "toolCallId": "c1"}))
            await out(
                frame(
                    {
                        "type": "TOOL_CALL_RESULT",
                        "messageId": "r1",
                        "toolCallId": "c1",
                        "content": "d",
                    }
                )
            )
        await out(frame({"type": "RUN_FINISHED", **ids}))
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app


STACKS = {
    "auto": ("auto", "auto"),  # what uvicorn picks: uvloop and httptools when installed
    "h11": ("asyncio", "h11"),  # uvicorn's pure-Python stack
    "httptools": ("asyncio", "httptools"),
    "uvloop": ("uvloop", "httptools"),  # what uvicorn[standard] installs
    "uvloop-h11": ("uvloop", "h11"),  # `agui-tools serve` with uvloop installed
}
"""The HTTP stacks a server may run on (``python -m bench.servers KIND PORT STACK``):
uvicorn's event loop and HTTP parser, each named explicitly."""


def main() -> None:
    kind, port = sys.argv[1], int(sys.argv[2])
    loop, http = STACKS[sys.argv[3] if len(sys.argv) > 3 else "auto"]
    app = {
        "ours": lambda: ours(True),
        "ours-noverify": lambda: ours(False),
        "ours-asgi": ours_through_asgi,
        "ours-frozen": lambda: ours(True),
        "official": official,
        "floor": floor,
    }[kind]()
    count_collections()
    if kind == "ours-frozen":  # what start-up allocated leaves the collector's generations
        gc.collect()
        gc.freeze()
        GC_PASSES["frozen"] = gc.get_freeze_count()
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
        limit_concurrency=None,
        backlog=4096,
        loop=loop,
        http=http,
    )


if __name__ == "__main__":
    main()
