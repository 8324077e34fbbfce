"""A reference server of the resumable binding (docs/resumable.md), test-only.

Small on purpose: it speaks the binding's HTTP face (opt-in header, ``id:
<runId>:<seq>``, detached runs in an in-memory run log, rejoin with
``Last-Event-ID`` or ``?after=``, stop, 404/400/410) over a real loopback socket,
so the client and the fault campaign are held to the contract itself. The agent
is any :data:`~agui_tools.agent.Agent`, driven by the library's own runner.
``faulty`` spoils the ids (a gap, another run's id) for the client's refusals.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agui_tools.agent import Run
from agui_tools.agent._channel import EventChannel
from agui_tools.agent._runner import Agent, drive

RESUMABLE = "agui-resumable"


@dataclass
class RunLog:
    """One opted-in run's events, in order, and whether its terminal event is in."""

    thread_id: str
    run_id: str
    events: list[bytes] = field(default_factory=list)
    done: bool = False
    finished_at: float | None = None
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    inner: asyncio.Task[Any] | None = None
    pump: asyncio.Task[Any] | None = None
    driver: asyncio.Future[Any] | None = None


@dataclass
class ReferenceServer:
    agent: Agent
    path: str = "/agent"
    retention: float = 300.0
    faulty: str | None = None  # "gap" | "other-run": spoil the ids of opted-in streams
    forget: bool = False  # rejoin and stop find no run (a server without the log)
    logs: dict[tuple[str, str], RunLog] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    stops: int = 0

    def app(self) -> Starlette:
        base = self.path.rstrip("/")
        run_path = base + "/threads/{thread}/runs/{run}"
        return Starlette(
            routes=[
                Route(self.path, self._run, methods=["POST"]),
                Route(run_path + "/events", self._rejoin, methods=["GET"]),
                Route(run_path + "/stop", self._stop, methods=["POST"]),
            ]
        )

    # -- the run request -----------------------------------------------------
    async def _run(self, request: Request) -> Response:
        self.requests.append(("POST", request.url.path, dict(request.headers)))
        run_input = orjson.loads(await request.body())
        if request.headers.get(RESUMABLE) != "1":
            return StreamingResponse(self._standard(run_input), media_type="text/event-stream")
        key = (str(run_input["threadId"]), str(run_input["runId"]))
        if key in self.logs:
            return self._error(409, "RESUME-4", "the run is in the log: rejoin it", key)
        log = RunLog(*key)
        self.logs[key] = log
        channel = EventChannel(high_water=None)

        async def stoppable(run: Run) -> None:
            # a stop cancels this inner task: the runner then ends the run cancelled
            log.inner = asyncio.ensure_future(self.agent(run))
            await log.inner

        log.driver = asyncio.ensure_future(drive(stoppable, run_input, channel))
        log.pump = asyncio.ensure_future(self._pump(channel, log))
        return self._stream(log, 0)

    async def _standard(self, run_input: dict[str, Any]) -> AsyncIterator[bytes]:
        channel = EventChannel(high_water=None)
        task = asyncio.ensure_future(drive(self.agent, run_input, channel))
        try:
            while True:
                await channel.wait(None)
                for payload in channel.take():
                    yield b"data: " + payload + b"\n\n"
                if channel.closed and not channel.has_events:
                    return
        finally:
            task.cancel()  # the standard binding: a disconnect ends the run

    async def _pump(self, channel: EventChannel, log: RunLog) -> None:
        while True:
            await channel.wait(None)
            taken = channel.take()
            async with log.changed:
                log.events += taken
                if channel.closed and not channel.has_events:
                    log.done = True
                    log.finished_at = time.monotonic()
                log.changed.notify_all()
            if log.done:
                return

    def _frame(self, log: RunLog, seq: int, payload: bytes) -> bytes:
        run_id, shown = log.run_id, seq
        if self.faulty == "gap" and seq >= 3:
            shown = seq + 1
        if self.faulty == "other-run" and seq == 3:
            run_id = "another"
        return f"id: {run_id}:{shown}\n".encode() + b"data: " + payload + b"\n\n"

    def _stream(self, log: RunLog, after: int) -> Response:
        async def body() -> AsyncIterator[bytes]:
            sent = after
            while True:
                async with log.changed:
                    ready = len(log.events) > sent or log.done
                    while not ready:
                        await log.changed.wait()
                        ready = len(log.events) > sent or log.done
                    new = log.events[sent:]
                    done = log.done
                for payload in new:
                    sent += 1
                    yield self._frame(log, sent, payload)
                if done and sent >= len(log.events):
                    return

        return StreamingResponse(
            body(), media_type="text/event-stream", headers={"Agui-Resumable": "1"}
        )

    # -- rejoin and stop -----------------------------------------------------
    def _error(self, status: int, rule: str, message: str, log_key: tuple[str, str]) -> Response:
        thread_id, run_id = log_key
        return JSONResponse(
            {"error": message, "rule": rule, "runId": run_id, "threadId": thread_id},
            status_code=status,
        )

    def _found(self, request: Request) -> tuple[RunLog | None, Response | None]:
        key = (request.path_params["thread"], request.path_params["run"])
        log = None if self.forget else self.logs.get(key)
        if log is None:
            return None, self._error(404, "RESUME-7", "no such run in the log", key)
        if log.finished_at is not None and time.monotonic() - log.finished_at > self.retention:
            return None, self._error(410, "RESUME-8", "the run's log has expired", key)
        return log, None

    async def _rejoin(self, request: Request) -> Response:
        self.requests.append(("GET", request.url.path, dict(request.headers)))
        log, error = self._found(request)
        if log is None:
            assert error is not None
            return error
        key = (log.thread_id, log.run_id)
        last = request.headers.get("last-event-id")
        after_text = request.query_params.get("after")
        after = 0
        if last is not None:
            run_id, sep, seq = last.rpartition(":")
            if not sep or not seq.isdecimal():
                return self._error(400, "RESUME-7", "malformed Last-Event-ID", key)
            if run_id != log.run_id:
                return self._error(400, "RESUME-7", "the id names another run", key)
            after = int(seq)
        elif after_text is not None:
            if not after_text.isdecimal():
                return self._error(400, "RESUME-7", "malformed after", key)
            after = int(after_text)
        if after > len(log.events):
            return self._error(400, "RESUME-7", "seq beyond the log's end", key)
        return self._stream(log, after)

    async def _stop(self, request: Request) -> Response:
        self.requests.append(("POST", request.url.path, dict(request.headers)))
        log, error = self._found(request)
        if log is None:
            assert error is not None
            return error
        if log.done:
            return JSONResponse({"status": "finished"}, status_code=409)
        self.stops += 1
        if log.inner is not None:
            log.inner.cancel()
        return JSONResponse({"runId": log.run_id, "status": "stopping"}, status_code=202)


def two_tool_agent(executions: dict[str, int], pause: float = 0.0) -> Agent:
    """A run with an agent-side tool (each execution counted in ``executions``, by
    thread) and a frontend tool ``confirm``; its continuation answers in text.
    Ids derive from the thread, so two threads' messages compare equal once the
    thread id is replaced."""

    async def agent(run: Run) -> None:
        t = run.thread_id
        answered = [m for m in run.messages if m["role"] == "tool" and m["toolCallId"] == t + "-c"]
        if answered:
            await run.text(f"Done: {answered[0]['content']}", message_id=t + "-m3")
            return
        async with run.message(message_id=t + "-m1") as m:
            await m.delta("Looking ")
            await m.delta("it up.")
        async with run.tool_call("lookup", call_id=t + "-s", parent_message_id=m.id) as c:
            await c.args('{"q": "stock"}')
        executions[t] = executions.get(t, 0) + 1  # the side effect
        await run.result(c.id, "7 in stock", message_id=t + "-r")
        if pause:
            await asyncio.sleep(pause)
        async with run.tool_call("confirm", call_id=t + "-c") as c2:
            await c2.args('{"qty": ')
            await c2.args("2}")

    return agent


def slow_agent(ticks: int = 400, every: float = 0.02) -> Agent:
    async def agent(run: Run) -> None:
        async with run.message() as m:
            for i in range(ticks):
                await m.delta(f"tick {i} ")
                await asyncio.sleep(every)

    return agent


def confirm(qty: int) -> str:
    """Confirm the order (the frontend tool of :func:`two_tool_agent`)."""
    return f"confirmed {qty}"


TOOLS = [confirm]  # for ``agui-tools run --tools tests.helpers.resumable_server``
