"""The eight interop scenarios, written with OUR agent API (:class:`agui_tools.agent.Run`).

The same conversations as :mod:`tests.interop.scenarios` (which spells them as
wire events for the server built with the official Python package), but every
event here is emitted through ``Run`` and judged by the emitter before it is
sent — so what a peer consumes is exactly what an application written against
agui-tools emits. The scenario is chosen by ``forwardedProps.scenario``.

Frontend calls (``confirm_order``, ``show_chart``, advertised in the run input)
are left pending: ``RUN_FINISHED`` names them (FE-5) and the client answers
them with tool messages in the next run's input; the continuation run reacts
to those answers. Everything else answers itself in-stream (agent-side tools).

Ids are derived from the ``runId`` (or fixed, for the frontend calls, as in
``scenarios.py``) so captured streams are readable.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agui_tools.agent import Run
from agui_tools.transport._server import agent_app

from .scenarios import FRONTEND_TOOLS, SCENARIOS, scenario_of

__all__ = ["AGENTS", "FRONTEND_TOOLS", "SCENARIOS", "Exchange", "Recorder", "agent", "app"]


def _answers(run: Run) -> dict[str, Any]:
    return {m["toolCallId"]: m["content"] for m in run.messages if m.get("role") == "tool"}


async def _say(run: Run, message_id: str, text: str) -> str:
    """A text message in two deltas, like the wire scenarios."""
    async with run.message(message_id=message_id) as m:
        await m.delta(text[: len(text) // 2])
        await m.delta(text[len(text) // 2 :])
    return m.id


async def _call(run: Run, call_id: str, name: str, args: str, parent: str) -> None:
    async with run.tool_call(name, call_id=call_id, parent_message_id=parent) as c:
        await c.args(args[:5])
        await c.args(args[5:])


async def text(run: Run) -> None:
    await _say(run, f"{run.run_id}-m1", "Hello from the agent.")


async def frontend_call(run: Run) -> None:
    answers = _answers(run)
    if "fe-c1" in answers:
        await _say(run, f"{run.run_id}-m2", f"The user answered: {answers['fe-c1']}")
        return
    mid = await _say(run, f"{run.run_id}-m1", "I need your confirmation.")
    # a frontend tool: left pending, RUN_FINISHED names it (FE-5)
    await _call(run, "fe-c1", "confirm_order", '{"sku":"W-1","qty":2}', mid)


async def parallel_calls(run: Run) -> None:
    answers = _answers(run)
    if "par-c1" in answers and "par-c2" in answers:
        await _say(run, f"{run.run_id}-m2", "Both answered.")
        return
    mid = await _say(run, f"{run.run_id}-m1", "Two things at once.")
    # interleaved: both calls open at once, the second closes first
    async with run.tool_call("confirm_order", call_id="par-c1", parent_message_id=mid) as c1:
        async with run.tool_call("show_chart", call_id="par-c2", parent_message_id=mid) as c2:
            await c1.args('{"sku":"A",')
            await c2.args('{"series":[1,2]}')
            await c1.args('"qty":1}')


async def agent_side_results(run: Run) -> None:
    rid = run.run_id
    mid = await _say(run, f"{rid}-m1", "Searching.")
    await _call(run, f"{rid}-s1", "web_search", '{"q":"ag-ui"}', mid)
    await run.result(f"{rid}-s1", "3 results", message_id=f"{rid}-r1")
    await _call(run, f"{rid}-s2", "read_page", '{"url":"https://example.com"}', mid)
    # content parts (TOOL-12)
    await run.result(f"{rid}-s2", [{"type": "text", "text": "page text"}], message_id=f"{rid}-r2")
    await _say(run, f"{rid}-m2", "Found it.")


async def chunked(run: Run) -> None:
    rid = run.run_id
    async with run.message(message_id=f"{rid}-m1", chunked=True) as m:
        await m.delta("Chunks ")
        await m.delta("expand.")
    async with run.tool_call(
        "lookup", call_id=f"{rid}-k1", parent_message_id=m.id, chunked=True
    ) as c:
        await c.args('{"q":')
        await c.args('"x"}')
    await run.result(c.id, "found", message_id=f"{rid}-r1")


async def reopened_call(run: Run) -> None:
    rid = run.run_id
    mid = await _say(run, f"{rid}-m1", "Working.")
    cid = f"{rid}-c1"
    async with run.tool_call("lookup", call_id=cid, parent_message_id=mid) as c:
        await c.args('{"q":')
    # a closed call MAY be reopened, and further arguments append (TOOL-7)
    async with run.tool_call("lookup", call_id=cid, parent_message_id=mid) as c:
        await c.args('"reopened"}')
    await run.result(cid, "ok", message_id=f"{rid}-r1")


async def subagents(run: Run) -> None:
    rid = run.run_id
    async with run.subagent("researcher", subagent_run_id=f"{rid}-sub1") as sub:
        async with sub.step("research"):
            mid = await _say(sub, f"{rid}-m1", "Subagent speaking.")
            await _call(sub, f"{rid}-c1", "lookup", '{"q":"sub"}', mid)
            await sub.result(f"{rid}-c1", "sub result", message_id=f"{rid}-r1")
    await _say(run, f"{rid}-m2", "Parent again.")


async def state_deltas(run: Run) -> None:
    await run.state_snapshot({"items": [], "status": "draft"})
    await run.state_delta([{"op": "add", "path": "/items/0", "value": {"sku": "W-1"}}])
    await run.state_delta([{"op": "replace", "path": "/status", "value": "ready"}])


AGENTS: dict[str, Callable[[Run], Awaitable[None]]] = {
    "text": text,
    "frontend_call": frontend_call,
    "parallel_calls": parallel_calls,
    "agent_side_results": agent_side_results,
    "chunked": chunked,
    "reopened_call": reopened_call,
    "subagents": subagents,
    "state_deltas": state_deltas,
}
assert AGENTS.keys() == SCENARIOS.keys(), "one agent per shared scenario"


async def agent(run: Run) -> None:
    await AGENTS[scenario_of(run.input)](run)


app = agent_app(agent, path="/agent")


# -- recording what the server sent --------------------------------------------------------------


@dataclass
class Exchange:
    """One HTTP exchange as it crossed the socket: the request body and the response bytes."""

    request_body: bytes = b""
    request_headers: dict[str, str] = field(default_factory=dict)
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    complete: bool = False  # the response's last body message was sent

    @property
    def request(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.request_body)
        return document


class Recorder:
    """ASGI middleware keeping every exchange byte for byte (a recording proxy in process).

    The app's ``send`` is wrapped, so ``body`` holds exactly the bytes handed to
    the server for the wire — the SSE a peer parsed — in order, keep-alives
    included. Exchanges are grouped by the request's ``threadId``.
    """

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner
        self.exchanges: list[Exchange] = []

    def for_thread(self, thread_id: str) -> list[Exchange]:
        return [
            ex
            for ex in self.exchanges
            if ex.complete and json.loads(ex.request_body or b"{}").get("threadId") == thread_id
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        ex = Exchange()
        ex.request_headers = {k.decode(): v.decode() for k, v in scope.get("headers", [])}
        self.exchanges.append(ex)

        async def recv() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                ex.request_body += message.get("body", b"")
            return message

        async def snd(message: Message) -> None:
            if message["type"] == "http.response.start":
                ex.status = message["status"]
                ex.headers = {k.decode(): v.decode() for k, v in message.get("headers", [])}
            elif message["type"] == "http.response.body":
                ex.body += message.get("body", b"")
                if not message.get("more_body", False):
                    ex.complete = True
            await send(message)

        await self.inner(scope, recv, snd)


if __name__ == "__main__":  # python -m tests.interop.our_agent PORT
    import sys

    import uvicorn

    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    print(json.dumps({"url": f"http://127.0.0.1:{port}/agent"}), flush=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
