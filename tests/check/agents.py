"""Agents for testing the checker: one raw-SSE agent with a switch per fault, and one
built only with the official ``ag-ui-protocol`` package.

The raw agent is a plain Starlette app writing SSE text by hand — not our
emitter, which would refuse to break a rule — so each fault class of issue 14
can be produced exactly: with ``fault=None`` it is a conforming agent; each
fault breaks one rule and nothing else.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agui_tools.check import CheckReport, acheck_agent
from agui_tools.testing import serving

ROOT = Path(__file__).resolve().parents[2]


def check_app(app: Any, **options: Any) -> CheckReport:
    """Serve ``app`` on a free loopback port and run the checker against it (real HTTP)."""

    async def main() -> CheckReport:
        async with serving(app) as base:
            return await acheck_agent(base + "/", **options)

    return asyncio.run(main())


@contextmanager
def agui_tools_serve() -> Iterator[str]:
    """``agui-tools serve --port 0`` (the demo agent) as a real process; yield its URL."""
    server = subprocess.Popen(
        [sys.executable, "-m", "agui_tools", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        cwd=ROOT,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        match = re.match(r"Serving AG-UI agent at (http://127\.0\.0\.1:\d+/agent)", line)
        assert match, line
        url = match.group(1)
        deadline = time.monotonic() + 30
        while True:  # the server prints before uvicorn binds: wait until it answers
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


FAULTS = (
    "self-answer",  # FE-2: a TOOL_CALL_RESULT for the advertised tool it called
    "interrupt-outcome",  # FE-3: the run stopped on a frontend call reports interrupt
    "wrong-pending",  # FE-5: pendingToolCallIds names a call it never made
    "result-unknown-call",  # TOOL-10: a result for a call never started
    "resend-on-resume",  # RUN-14: START/ARGS/END of the answered call re-sent
    "finished-after-error",  # RUN-12: RUN_FINISHED after RUN_ERROR
    "missing-thread-id",  # RUN_STARTED without threadId (malformed known event)
    "500-on-malformed",  # INPUT-15: a server error for a body that is not JSON
    "dangling-answered",  # FE-2: a history's unanswered frontend call answered by the agent
    "refuses-newer-minor",  # VER-5: a 400 for an input declaring a newer minor version
    "refuses-unknown-members",  # INPUT-16: a 422 for an input with an unrecognised member
)

MAX_BODY = 1024 * 1024
_INPUT_MEMBERS = {
    "threadId",
    "runId",
    "parentRunId",
    "state",
    "messages",
    "tools",
    "context",
    "forwardedProps",
    "resume",
    "protocolVersion",
}


def _sse(event: dict[str, Any]) -> str:
    return "data: " + json.dumps(event, separators=(",", ":")) + "\n\n"


def sample_arguments(schema: Any) -> dict[str, Any]:
    """Arguments that satisfy a simple object schema (what a good model would send)."""
    out: dict[str, Any] = {}
    if not isinstance(schema, dict):
        return out
    props = schema.get("properties") or {}
    for name in schema.get("required") or []:
        kind = (props.get(name) or {}).get("type")
        out[name] = {"integer": 2, "number": 1.5, "boolean": True, "array": [], "object": {}}.get(
            kind, "Paris"
        )
    return out


def _dangling(messages: list[Any]) -> list[str]:
    calls = [
        c["id"]
        for m in messages
        if isinstance(m, dict) and m.get("role") == "assistant"
        for c in m.get("toolCalls") or []
    ]
    answered = {
        m.get("toolCallId") for m in messages if isinstance(m, dict) and m.get("role") == "tool"
    }
    return [c for c in calls if c not in answered]


def raw_agent(
    fault: str | None = None,
    *,
    text: str = "Hello.",
    pending_ids: bool = True,
    token: str | None = None,
    slip: str | None = None,
    arguments: dict[str, Any] | None = None,
    calls_tools: bool = True,
    declares_version: bool = True,
) -> Starlette:
    """A conforming agent written as raw SSE — or, with ``fault``, one that breaks one rule.

    ``text``: what a plain run says; ``pending_ids=False`` leaves out the
    (recommended, not required) ``pendingToolCallIds``; ``token``: answer 401
    unless the request carries ``Authorization: Bearer <token>``. ``slip``: a producer
    slip a closing ``MESSAGES_SNAPSHOT`` reveals (issue 17) — ``"dropped-first-chunk"``
    (the first argument chunk never sent, the snapshot restating the whole) or
    ``"args-rewritten"`` (the snapshot restating other arguments than were streamed).
    ``arguments``: what the model puts in the call (default: what the schema asks for);
    ``calls_tools=False``: a model that only ever talks; ``declares_version=False``: a
    peer from before ``protocolVersion`` (its ``RUN_STARTED`` declares none).
    """
    if fault is not None and fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}")

    async def endpoint(request: Request) -> Response:
        if token is not None and request.headers.get("authorization") != f"Bearer {token}":
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        declared = int(request.headers.get("content-length") or 0)
        if declared > MAX_BODY:
            return JSONResponse(
                {"error": "body too large"}, status_code=413, headers={"connection": "close"}
            )
        body = await request.body()
        try:
            data = json.loads(body)
        except ValueError:
            if fault == "500-on-malformed":
                return Response("Internal Server Error", status_code=500)
            return JSONResponse({"error": "not JSON"}, status_code=400)
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("threadId"), str)
            or not isinstance(data.get("runId"), str)
            or not isinstance(data.get("messages"), list)
        ):
            return JSONResponse({"error": "not a RunAgentInput"}, status_code=422)
        if fault == "refuses-newer-minor" and data.get("protocolVersion") == "1.9":
            return JSONResponse({"error": "unsupported protocolVersion"}, status_code=400)
        if fault == "refuses-unknown-members" and set(data) - _INPUT_MEMBERS:
            return JSONResponse({"error": "unknown member"}, status_code=422)
        messages = data["messages"]
        if fault != "dangling-answered" and not data.get("resume") and _dangling(messages):
            return JSONResponse(
                {"error": f"unanswered calls {_dangling(messages)}"}, status_code=409
            )
        return StreamingResponse(_run(data), media_type="text/event-stream")

    async def _run(data: dict[str, Any]) -> Any:
        thread, run = data["threadId"], data["runId"]
        started: dict[str, Any] = {
            "type": "RUN_STARTED",
            "threadId": thread,
            "runId": run,
            "protocolVersion": "1.1",
        }
        if fault == "missing-thread-id":
            del started["threadId"]
        if not declares_version:
            del started["protocolVersion"]
        yield _sse(started)
        await asyncio.sleep(0)
        messages = data["messages"]
        tools = data.get("tools") or []
        last = messages[-1] if messages else {}
        if fault == "dangling-answered":  # the application's answer, made up by the agent
            for i, left in enumerate(_dangling(messages)):
                yield _sse(
                    {
                        "type": "TOOL_CALL_RESULT",
                        "messageId": f"r{i}-{run}",
                        "toolCallId": left,
                        "content": "sunny",
                    }
                )
        finished: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": thread, "runId": run}
        mid = f"m-{run}"
        if last.get("role") == "tool":
            if fault == "resend-on-resume":
                call = last["toolCallId"]
                name = next(
                    (
                        c["function"]["name"]
                        for m in messages
                        if m.get("role") == "assistant"
                        for c in m.get("toolCalls") or []
                        if c["id"] == call
                    ),
                    "tool",
                )
                yield _sse({"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": name})
                yield _sse({"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": "{}"})
                yield _sse({"type": "TOOL_CALL_END", "toolCallId": call})
            for ev in _say(mid, "Thanks, done."):
                yield ev
            yield _sse(finished)
            return
        if not tools or data.get("resume") or not calls_tools:
            for ev in _say(mid, text):
                yield ev
            if fault == "finished-after-error":
                yield _sse({"type": "RUN_ERROR", "message": "the model failed"})
            yield _sse(finished)
            return
        tool = tools[0]
        call = f"call-{run}"
        for ev in _say(mid, f"Calling {tool['name']}."):
            yield ev
        args = json.dumps(
            arguments if arguments is not None else sample_arguments(tool.get("parameters"))
        )
        yield _sse(
            {
                "type": "TOOL_CALL_START",
                "toolCallId": call,
                "toolCallName": tool["name"],
                "parentMessageId": mid,
            }
        )
        if slip != "dropped-first-chunk":
            yield _sse({"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": args[:5]})
        yield _sse({"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": args[5:]})
        yield _sse({"type": "TOOL_CALL_END", "toolCallId": call})
        if slip is not None:
            restated = args if slip == "dropped-first-chunk" else json.dumps({"city": "Lyon"})
            assistant = {
                "id": mid,
                "role": "assistant",
                "content": f"Calling {tool['name']}.",
                "toolCalls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {"name": tool["name"], "arguments": restated},
                    }
                ],
            }
            yield _sse({"type": "MESSAGES_SNAPSHOT", "messages": [*messages, assistant]})
        pending = [call]
        if fault == "self-answer":
            yield _sse(
                {
                    "type": "TOOL_CALL_RESULT",
                    "messageId": f"r-{run}",
                    "toolCallId": call,
                    "content": "sunny",
                }
            )
            pending = []
        if fault == "result-unknown-call":
            yield _sse(
                {
                    "type": "TOOL_CALL_RESULT",
                    "messageId": f"r-{run}",
                    "toolCallId": "never-started",
                    "content": "?",
                }
            )
        if fault == "wrong-pending":
            pending = [call, "call-never-made"]
        if fault == "interrupt-outcome":
            finished["outcome"] = {
                "type": "interrupt",
                "interrupts": [{"id": f"i-{run}", "reason": "tool_call", "toolCallId": call}],
            }
        elif pending and pending_ids:
            finished["outcome"] = {"type": "success", "pendingToolCallIds": pending}
        yield _sse(finished)

    return Starlette(routes=[Route("/", endpoint, methods=["POST"])])


def hanging_agent(arrived: threading.Event | None = None) -> Starlette:
    """An agent that opens the stream and then never sends anything (``arrived`` is set
    when a request comes in)."""

    async def endpoint(request: Request) -> Response:
        await request.body()
        if arrived is not None:
            arrived.set()

        async def forever() -> Any:
            yield _sse({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
            await asyncio.sleep(3600)

        return StreamingResponse(forever(), media_type="text/event-stream")

    return Starlette(routes=[Route("/", endpoint, methods=["POST"])])


def endless_agent() -> Starlette:
    """An agent whose run never ends: text content as fast as the socket takes it."""

    async def endpoint(request: Request) -> Response:
        data = json.loads(await request.body())

        async def forever() -> Any:
            yield _sse(
                {"type": "RUN_STARTED", "threadId": data["threadId"], "runId": data["runId"]}
            )
            yield _sse({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"})
            chunk = (
                _sse({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x" * 4000}) * 64
            )
            while not await request.is_disconnected():  # endless, until the client leaves
                yield chunk

        return StreamingResponse(forever(), media_type="text/event-stream")

    return Starlette(routes=[Route("/", endpoint, methods=["POST"])])


def _say(mid: str, text: str) -> list[str]:
    return [
        _sse({"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"}),
        _sse({"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": text}),
        _sse({"type": "TEXT_MESSAGE_END", "messageId": mid}),
    ]


def official_agent() -> Starlette:
    """A conforming agent built only with the official ``ag-ui-protocol`` package.

    Input parsed and validated by the official ``RunAgentInput`` model; every
    event an official model instance, encoded by the official ``EventEncoder``.
    """
    from ag_ui.core import (
        EventType,
        RunAgentInput,
        RunFinishedEvent,
        RunFinishedSuccessOutcome,
        RunStartedEvent,
        TextMessageContentEvent,
        TextMessageEndEvent,
        TextMessageStartEvent,
        ToolCallArgsEvent,
        ToolCallEndEvent,
        ToolCallStartEvent,
    )
    from ag_ui.encoder import EventEncoder
    from pydantic import ValidationError

    encoder = EventEncoder()

    async def endpoint(request: Request) -> Response:
        if int(request.headers.get("content-length") or 0) > MAX_BODY:
            return JSONResponse(
                {"error": "body too large"}, status_code=413, headers={"connection": "close"}
            )
        try:
            data = json.loads(await request.body())
            run_input = RunAgentInput.model_validate(data)
        except ValueError as exc:  # JSONDecodeError and ValidationError are ValueErrors
            status = 422 if isinstance(exc, ValidationError) else 400
            return JSONResponse({"error": str(exc)[:500]}, status_code=status)
        messages = [m.model_dump(by_alias=True) for m in run_input.messages]
        if not run_input.resume and _dangling(messages):
            return JSONResponse(
                {"error": f"unanswered calls {_dangling(messages)}"}, status_code=409
            )
        return StreamingResponse(_events(run_input), media_type=encoder.get_content_type())

    async def _events(run_input: Any) -> Any:
        thread, run = run_input.thread_id, run_input.run_id
        yield encoder.encode(RunStartedEvent(thread_id=thread, run_id=run, protocol_version="1.1"))
        mid = f"m-{run}"
        last_role = run_input.messages[-1].role if run_input.messages else None
        tools = run_input.tools or []
        say = "Thanks, done." if last_role == "tool" or not tools else f"Calling {tools[0].name}."
        yield encoder.encode(TextMessageStartEvent(message_id=mid, role="assistant"))
        yield encoder.encode(TextMessageContentEvent(message_id=mid, delta=say))
        yield encoder.encode(TextMessageEndEvent(message_id=mid))
        if last_role == "tool" or not tools:
            yield encoder.encode(RunFinishedEvent(thread_id=thread, run_id=run))
            return
        tool, call = tools[0], f"call-{run}"
        yield encoder.encode(
            ToolCallStartEvent(tool_call_id=call, tool_call_name=tool.name, parent_message_id=mid)
        )
        yield encoder.encode(
            ToolCallArgsEvent(
                tool_call_id=call, delta=json.dumps(sample_arguments(tool.parameters))
            )
        )
        yield encoder.encode(ToolCallEndEvent(tool_call_id=call))
        yield encoder.encode(
            RunFinishedEvent(
                thread_id=thread,
                run_id=run,
                outcome=RunFinishedSuccessOutcome(type="success", pending_tool_call_ids=[call]),
            )
        )
        assert EventType.RUN_FINISHED  # the official enum, imported to show it is the real package

    return Starlette(routes=[Route("/", endpoint, methods=["POST"])])


BINARY_FAULTS = (
    "truncated-frame",  # TRANS-7: the last header announces more bytes than the body holds
    "trailing-bytes",  # TRANS-7: two stray bytes after the last frame (the run itself ends)
    "huge-length",  # TRANS-7: a header announcing ~4 GiB, then the body ends
    "undecodable-frame",  # TRANS-7: a frame whose bytes are not a protobuf Event
    "empty-frame",  # TRANS-7: a zero-length frame (an Event naming no event)
    "args-before-start",  # TOOL-2: TOOL_CALL_ARGS for a call never started (binary only)
    "other-events",  # TRANS-7: the binary run says other text than the SSE run of one input
    "future-event",  # a frame naming an event this build predates: dropped, a warning
    "flaky-binding",  # protobuf for the first request admitting it, SSE after (a SHOULD)
    "nondeterministic",  # every run says something else: the bindings cannot be compared
)


def binary_agent(fault: str | None = None) -> Starlette:
    """An agent offering the binary binding, its frames written by hand — or broken by ``fault``.

    A plain Starlette app: it answers ``application/vnd.ag-ui.event+proto`` when the
    request's ``Accept`` names it and SSE otherwise, with the same events (a short
    text reply) either way. The events are encoded by our codec, a frame at a time;
    the framing — and every fault — is this function's own bytes. Each fault breaks
    the binary answer only: the agent's SSE answers stay correct.
    """
    from agui_tools.wire._proto_codec import encode_proto_event

    if fault is not None and fault not in BINARY_FAULTS:
        raise ValueError(f"unknown fault {fault!r}")
    runs = 0
    served: dict[str, bool] = {}

    def frame(event: dict[str, Any]) -> bytes:
        message = encode_proto_event(event)
        return len(message).to_bytes(4, "big") + message

    async def endpoint(request: Request) -> Response:
        nonlocal runs
        try:
            data = json.loads(await request.body())
            thread, run = data["threadId"], data["runId"]
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": "not a RunAgentInput"}, status_code=400)
        runs += 1
        mid = f"m-{run}"
        text = f"Hello, run {runs}." if fault == "nondeterministic" else "Hello."
        binary = PROTO in request.headers.get("accept", "")
        if binary and fault == "flaky-binding":
            binary, served["proto"] = not served.get("proto"), True
        if binary and fault == "other-events":
            text = "Hello from the binary side."
        events: list[dict[str, Any]] = [
            {"type": "RUN_STARTED", "threadId": thread, "runId": run, "protocolVersion": "1.1"},
            {"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": text},
            {"type": "TEXT_MESSAGE_END", "messageId": mid},
            {"type": "RUN_FINISHED", "threadId": thread, "runId": run},
        ]
        for i, event in enumerate(events):  # the producer's clock: never the same twice
            event["timestamp"] = time.time_ns() // 1000 + i
        if not binary:
            return Response("".join(_sse(e) for e in events), media_type="text/event-stream")
        if fault == "args-before-start":
            events.insert(1, {"type": "TOOL_CALL_ARGS", "toolCallId": "c-early", "delta": "{}"})
        body = b"".join(frame(e) for e in events)
        if fault == "truncated-frame":
            body = body[:-3]  # the RUN_FINISHED frame's header announces 3 bytes more
        elif fault == "trailing-bytes":
            body += b"\x00\x07"
        elif fault == "huge-length":
            body = frame(events[0]) + b"\xff\xff\xff\xf0" + b"\x0a\x02"
        elif fault == "future-event":  # envelope field 40, after RUN_STARTED
            body = (
                frame(events[0])
                + b"\x00\x00\x00\x06\xc2\x02\x03\x0a\x01\x00"
                + body[len(frame(events[0])) :]
            )
        elif fault == "empty-frame":
            body = frame(events[0]) + b"\x00\x00\x00\x00" + body[len(frame(events[0])) :]
        elif fault == "undecodable-frame":
            body = frame(events[0]) + b"\x00\x00\x00\x02\xff\xff" + b"".join(map(frame, events[1:]))
        return Response(body, media_type=PROTO)

    return Starlette(routes=[Route("/", endpoint, methods=["POST"])])


PROTO = "application/vnd.ag-ui.event+proto"


def scripted_agent(answer: Any) -> Starlette:
    """An agent whose every answer a test writes: ``answer(input)`` returns the events of
    the run (sent as SSE, 200) or a whole :class:`Response`. Malformed bodies get 400 —
    the shapes of issue 23 are about what an agent does with *good* input."""

    async def endpoint(request: Request) -> Response:
        try:
            data = json.loads(await request.body())
            assert isinstance(data, dict) and isinstance(data["messages"], list)
            assert isinstance(data["threadId"], str) and isinstance(data["runId"], str)
        except (ValueError, KeyError, TypeError, AssertionError):
            return JSONResponse({"error": "not a RunAgentInput"}, status_code=400)
        out = answer(data)
        if isinstance(out, Response):
            return out
        return Response("".join(_sse(e) for e in out), media_type="text/event-stream")

    return Starlette(routes=[Route("/", endpoint, methods=["POST"])])


def run_of(data: dict[str, Any], *events: dict[str, Any], **finished: Any) -> list[dict[str, Any]]:
    """``events`` between the input's RUN_STARTED and a RUN_FINISHED (``finished``: its
    extra members, an ``outcome`` say)."""
    thread, run = data["threadId"], data["runId"]
    return [
        {"type": "RUN_STARTED", "threadId": thread, "runId": run, "protocolVersion": "1.1"},
        *events,
        {"type": "RUN_FINISHED", "threadId": thread, "runId": run, **finished},
    ]


def say(mid: str, text: str) -> list[dict[str, Any]]:
    """A whole assistant text message."""
    return [
        {"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": text},
        {"type": "TEXT_MESSAGE_END", "messageId": mid},
    ]


def call(cid: str, name: str, arguments: str = "{}", parent: str | None = None) -> list[Any]:
    """A whole tool call (START, ARGS, END)."""
    start: dict[str, Any] = {"type": "TOOL_CALL_START", "toolCallId": cid, "toolCallName": name}
    if parent is not None:
        start["parentMessageId"] = parent
    return [
        start,
        {"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": arguments},
        {"type": "TOOL_CALL_END", "toolCallId": cid},
    ]


def dangling(messages: list[Any]) -> list[str]:
    """The calls of ``messages`` no tool message answers."""
    return _dangling(messages)


@asynccontextmanager
async def drops_keep_alive_after_500() -> AsyncIterator[str]:
    """A raw HTTP/1.1 server (asyncio, no framework) shaped like CrewAI's behind uvicorn:
    an input without ``tools`` gets a 500 that keeps the connection open — no
    ``Connection: close`` — and the next request on that connection is never answered,
    the server having dropped it. Everything else is a short run, on keep-alive."""

    def answer(writer: asyncio.StreamWriter, status: int, body: bytes, kind: str) -> None:
        head = f"HTTP/1.1 {status} X\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
        writer.write(head.encode("latin-1") + b"\r\n" + body)

    open_: dict[asyncio.StreamWriter, asyncio.Task[Any]] = {}

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        open_[writer] = task
        dropped = False
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                if dropped:
                    break  # the request on the dropped connection: no answer, just the close
                lines = head.split("\r\n")
                length = next(
                    (
                        int(h.split(":", 1)[1])
                        for h in lines
                        if h.lower().startswith("content-length:")
                    ),
                    0,
                )
                body = await reader.readexactly(length)
                if not lines[0].startswith("POST "):
                    answer(writer, 405, b"", "text/plain")
                    continue
                try:
                    data = json.loads(body)
                    thread, run = data["threadId"], data["runId"]
                except (ValueError, KeyError, TypeError):
                    answer(writer, 400, b"not a RunAgentInput", "text/plain")
                    continue
                if "tools" not in data:
                    answer(writer, 500, b"Internal Server Error", "text/plain")
                    dropped = True
                    continue
                events = [
                    {
                        "type": "RUN_STARTED",
                        "threadId": thread,
                        "runId": run,
                        "protocolVersion": "1.1",
                    },
                    *say(f"m-{run}", "Hello."),
                    {"type": "RUN_FINISHED", "threadId": thread, "runId": run},
                ]
                answer(writer, 200, "".join(map(_sse, events)).encode(), "text/event-stream")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            open_.pop(writer, None)
            writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.close()
        tasks = list(open_.values())
        for writer in list(open_):  # idle keep-alive connections: end them, then their tasks
            writer.transport.abort()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


def flood_agent(megabytes: int) -> Any:
    """An agent that answers every request — a GET too — with ``RUN_STARTED`` and then
    200-character ``TEXT_MESSAGE_CONTENT`` events in 64 KiB chunks: without end when
    ``megabytes`` is 0, else that many MiB of them and then the run's end (issue 28's
    endless and 1 GB streams, with small events: what costs a checker most per byte).
    A raw ASGI app, so the flood costs the server nothing per event."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        try:
            run = orjson.loads(body)
            thread, run_id = str(run.get("threadId", "t")), str(run.get("runId", "r"))
        except (orjson.JSONDecodeError, AttributeError):
            thread, run_id = "t", "r"
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )

        def frame(event: dict[str, Any]) -> bytes:
            return b"data: " + orjson.dumps(event) + b"\n\n"

        head = frame({"type": "RUN_STARTED", "threadId": thread, "runId": run_id})
        head += frame({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"})
        await send({"type": "http.response.body", "body": head, "more_body": True})
        one = frame({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x" * 200})
        chunk = one * (65536 // len(one))
        gone = asyncio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watcher = asyncio.ensure_future(watch())
        sent, limit = 0, megabytes * 1048576
        while (not limit or sent < limit) and not gone.is_set():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            sent += len(chunk)
            await asyncio.sleep(0)  # a client that left is noticed
        watcher.cancel()
        if gone.is_set():
            return
        tail = frame({"type": "TEXT_MESSAGE_END", "messageId": "m"})
        tail += frame({"type": "RUN_FINISHED", "threadId": thread, "runId": run_id})
        await send({"type": "http.response.body", "body": tail, "more_body": False})

    return app
