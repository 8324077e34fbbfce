"""Agents and tools the inspector's tests drive: real servers, real SSE, on loopback.

* :func:`three_calls_agent` — three side-effectful calls in one run (one to
  approve, one to decline, one to edit), arguments streamed in small pieces,
  then a final answer that quotes each answer;
* :func:`markup_agent` — text and an agent-side result full of hostile markup;
* :func:`broken_app` — a stream that breaks a rule and then keeps the
  connection open, so a client that waits for the body to end would hang.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from agui_tools.agent import Run
from agui_tools.transport import Session

HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"><b>bold</b>'

THREE_ARGS = {
    "place_order": {"sku": "widget", "qty": 2, "note": "leave it at the door please"},
    "email_receipt": {"to": "you@example.com"},
    "delete_account": {"user": "alice"},
}


def three_calls_agent(delay: float = 0.02) -> Any:
    async def agent(run: Run) -> None:
        answers = {m["toolCallId"]: m for m in run.messages if m.get("role") == "tool"}
        if not answers:
            # no random hex id: one may hold "c1" (the frame filter's tests type it)
            mid = await run.text(
                "Three things need your consent.", message_id=f"intro-{len(run.messages)}"
            )
            for n, (name, arguments) in enumerate(THREE_ARGS.items()):
                text = json.dumps(arguments)
                async with run.tool_call(name, call_id=f"c{n}", parent_message_id=mid) as call:
                    for i in range(
                        0, len(text), 3
                    ):  # the card fills in, a few characters at a time
                        await call.args(text[i : i + 3])
                        await asyncio.sleep(delay)
            return
        summary = "; ".join(f"{cid}: {answers[cid]['content']}" for cid in sorted(answers))
        await run.text(f"Final answer. {summary}")

    return agent


def register_three(session: Session) -> None:
    """The real frontend tools for :func:`three_calls_agent` (all side-effectful)."""

    @session.tool(side_effects=True)
    def place_order(sku: str, qty: int, note: str = "") -> str:
        """Place an order. Charges the user's card."""
        return f"placed {qty} x {sku}"

    @session.tool(side_effects=True)
    def email_receipt(to: str) -> str:
        """Email the receipt."""
        return f"emailed {to}"

    @session.tool(side_effects=True)
    def delete_account(user: str) -> str:
        """Delete a user's account."""
        return f"deleted {user}"


def markup_agent() -> Any:
    async def agent(run: Run) -> None:
        mid = await run.text(f"Here is markup: {HOSTILE}")
        async with run.tool_call("lookup", call_id="m1", parent_message_id=mid) as call:
            await call.args(json.dumps({"q": HOSTILE}))
        await run.result(call.id, HOSTILE)
        await run.text("Done.")

    return agent


def weather_agent() -> Any:
    """Calls ``get_weather`` (a mock tool the test defines in the page), then quotes the answer."""

    async def agent(run: Run) -> None:
        answers = [m for m in run.messages if m.get("role") == "tool"]
        if answers:
            await run.text(f"The weather: {answers[-1]['content']}")
            return
        mid = await run.text("Let me look.")
        async with run.tool_call("get_weather", call_id="w1", parent_message_id=mid) as call:
            await call.args('{"city": "Lisbon"}')

    return agent


def state_agent() -> Any:
    """Sets the state with a snapshot, changes it with a delta, and says so."""

    async def agent(run: Run) -> None:
        await run.state_snapshot({"cart": [], "step": 1})
        await run.state_delta([{"op": "add", "path": "/cart/-", "value": "widget"}])
        await run.text("Your cart has a widget.")

    return agent


def _sse(event: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(event)}\n\n".encode()


def raw_app(
    events: Callable[[Request, dict[str, str]], list[dict[str, Any]]], *, stall: bool = False
) -> Starlette:
    """An agent that writes the SSE by hand (what our emitter would refuse to send).

    ``events(request, ids)`` gives the run's events; with ``stall`` the
    response then stays open for a minute instead of ending.
    """

    async def endpoint(request: Request) -> StreamingResponse:
        body = await request.json()
        ids = {"threadId": body["threadId"], "runId": body["runId"]}

        async def stream() -> AsyncIterator[bytes]:
            for event in events(request, ids):
                yield _sse(event)
            if stall:
                await asyncio.sleep(60)

        return StreamingResponse(stream(), media_type="text/event-stream")

    return Starlette(routes=[Route("/agent", endpoint, methods=["POST"])])


def _text(mid: str, delta: str, **extra: Any) -> list[dict[str, Any]]:
    return [
        {"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant", **extra},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": delta},
        {"type": "TEXT_MESSAGE_END", "messageId": mid},
    ]


def broken_app() -> Starlette:
    """Sends arguments for a call it never started (TOOL-20 at event #4), then stalls."""
    return raw_app(
        lambda request, ids: [
            {"type": "RUN_STARTED", **ids},
            *_text("b1", "Working"),
            {"type": "TOOL_CALL_ARGS", "toolCallId": "ghost", "delta": "{}"},
        ],
        stall=True,
    )


def echo_header_app() -> Starlette:
    """Says which Authorization header it was sent (for ``-H``)."""
    return raw_app(
        lambda request, ids: [
            {"type": "RUN_STARTED", **ids},
            *_text("h1", request.headers.get("authorization", "(none)")),
            {"type": "RUN_FINISHED", **ids},
        ]
    )


def future_prop_app() -> Starlette:
    """A run that succeeds with one warning: an unknown property (PROC-3 at event #1)."""
    return raw_app(
        lambda request, ids: [
            {"type": "RUN_STARTED", **ids},
            *_text("f1", "From the future.", futureProp=1),
            {"type": "RUN_FINISHED", **ids},
        ]
    )


def broken_after_call_app() -> Starlette:
    """Makes a whole call to ``place_order``, then breaks a rule: the call is left pending."""
    return raw_app(
        lambda request, ids: [
            {"type": "RUN_STARTED", **ids},
            {"type": "TOOL_CALL_START", "toolCallId": "c9", "toolCallName": "place_order"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c9", "delta": '{"sku": "w", "qty": 1}'},
            {"type": "TOOL_CALL_END", "toolCallId": "c9"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "ghost", "delta": "{}"},
        ]
    )


REFUND_SCHEMA = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}},
    "required": ["approved"],
}
ADDRESS_SCHEMA = {
    "type": "object",
    "properties": {"street": {"type": "string", "minLength": 3}, "zip": {"type": "integer"}},
    "required": ["street", "zip"],
}


def interrupt_agent() -> Any:
    """Asks for two things at once: approval of its own ``refund`` call, and an address.

    The next run (carrying the resume) tells what it was given — the refund's result
    when approved — so a test sees the thread go on to the agent's answer.
    """

    async def agent(run: Run) -> None:
        resume = {entry["interruptId"]: entry for entry in run.resume}
        asked = len([m for m in run.messages if m.get("role") == "user"])
        call_id = f"r{asked}"  # a call of each request: r1, r2…
        if not resume:
            mid = await run.text("I need two things from you.")
            async with run.tool_call("refund", call_id=call_id, parent_message_id=mid) as call:
                await call.args(json.dumps({"order": "A-17", "amount": 40}))
            run.interrupt(
                [
                    {
                        "id": "approve-refund",
                        "reason": "approval",
                        "message": "May I refund 40 EUR for order A-17?",
                        "toolCallId": call_id,
                        "responseSchema": REFUND_SCHEMA,
                    },
                    {
                        "id": "address",
                        "reason": "input",
                        "message": "Where should the replacement go?",
                        "responseSchema": ADDRESS_SCHEMA,
                    },
                ]
            )
        refund = resume["approve-refund"]
        if refund["status"] == "resolved" and refund.get("payload", {}).get("approved"):
            await run.result(call_id, "refunded 40 EUR")
        said = "; ".join(
            f"{iid}: {entry['status']} {json.dumps(entry.get('payload', entry.get('metadata')))}"
            for iid, entry in sorted(resume.items())
        )
        await run.text(f"Final answer. {said}")

    return agent


def slow_agent() -> Any:
    """Streams a word every 50 ms for a long time: a run to stop."""

    async def agent(run: Run) -> None:
        async with run.message() as m:
            await m.delta("Counting: ")
            for i in range(600):
                await m.delta(f"{i} ")
                await asyncio.sleep(0.05)

    return agent


def deltas_agent(n: int, *, paragraph: int = 50) -> Any:
    """One assistant message streamed as ``n`` text deltas (``"word{i} "``), a blank
    line every ``paragraph`` deltas — the long stream of issue 24."""

    async def agent(run: Run) -> None:
        async with run.message() as m:
            for i in range(n):
                await m.delta(f"word{i} " if (i + 1) % paragraph else f"word{i}\n\n")

    return agent


def echo_agent(tag: str) -> Any:
    """Says its ``tag``, the Authorization header it was sent (a raw app reads headers),
    and how many user messages its thread holds."""

    def events(request: Request, ids: dict[str, str]) -> list[dict[str, Any]]:
        return [
            {"type": "RUN_STARTED", **ids},
            *_text(
                f"e-{ids['runId']}",
                f"{tag} heard {request.headers.get('authorization', '(no authorization)')}",
            ),
            {"type": "RUN_FINISHED", **ids},
        ]

    return raw_app(events)


def broken_mid_call_app() -> Starlette:
    """Starts a call, streams half its arguments, then breaks a rule (TOOL-20)."""
    return raw_app(
        lambda request, ids: [
            {"type": "RUN_STARTED", **ids},
            {"type": "TOOL_CALL_START", "toolCallId": "c7", "toolCallName": "place_order"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c7", "delta": '{"sku": "w'},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "ghost", "delta": "{}"},
        ]
    )


def big_argument_agent(size: int, chunk: int = 1024) -> Any:
    """A call to ``upload`` whose ``size``-character argument streams in ``chunk``-sized
    deltas (issue 28, item 3); once the call is answered, a short text."""

    async def agent(run: Run) -> None:
        if any(m.get("role") == "tool" for m in run.messages):
            await run.text("uploaded")
            return
        text = json.dumps({"blob": "x" * (size - 12)})
        async with run.tool_call("upload", call_id="big") as call:
            for i in range(0, len(text), chunk):
                await call.args(text[i : i + chunk])

    return agent


def register_upload(session: Session) -> None:
    """The frontend tool :func:`big_argument_agent` calls (no side effects: no consent)."""

    @session.tool
    def upload(blob: str) -> str:
        """Store a blob."""
        return f"stored {len(blob)} characters"


MARKDOWN = (
    "# Report\n\nSome **bold**, some *emphasis*, `code <b>`, and raw <b>html</b> here.\n\n"
    "- a [safe link](https://example.com/a?b=1)\n"
    "- a [bad link](javascript:window.pwned=3)\n"
    "- a [data link](data:text/html,<script>window.pwned=4</script>)\n"
    "- ![an image](https://example.com/x.png)\n\n"
    "```\n<script>window.pwned = 5</script>\n```\n\n"
    '> quoted <img src=x onerror="window.pwned=6">\n'
)


def markdown_agent() -> Any:
    """Assistant text in Markdown, with hostile links and markup, streamed in pieces."""

    async def agent(run: Run) -> None:
        async with run.message() as m:
            for i in range(0, len(MARKDOWN), 7):
                await m.delta(MARKDOWN[i : i + 7])

    return agent


def state_history_agent() -> Any:
    """A snapshot, three deltas, a second snapshot: a state history to step through."""

    async def agent(run: Run) -> None:
        await run.state_snapshot({"cart": [], "step": 1})
        await run.state_delta([{"op": "add", "path": "/cart/-", "value": "widget"}])
        await run.state_delta([{"op": "replace", "path": "/step", "value": 2}])
        await run.state_delta([{"op": "add", "path": "/cart/-", "value": "gadget"}])
        await run.state_snapshot({"cart": ["gadget"], "step": 3, "paid": True})
        await run.text("Paid.")

    return agent


def hostile_interrupt_agent() -> Any:
    """An interrupt whose every field is hostile markup — reason, message, metadata, the
    schema's property names and enum — on a call whose arguments are markup too."""

    async def agent(run: Run) -> None:
        async with run.tool_call("lookup", call_id="h1") as call:
            await call.args(json.dumps({"q": HOSTILE}))
        run.interrupt(
            {
                "id": "hostile",
                "reason": HOSTILE,
                "message": HOSTILE,
                "toolCallId": "h1",
                "metadata": {HOSTILE: HOSTILE},
                "responseSchema": {
                    "type": "object",
                    "properties": {HOSTILE: {"enum": [HOSTILE, "ok"]}},
                },
            }
        )

    return agent


def expired_interrupt_agent() -> Any:
    """Interrupts with an ``expiresAt`` long past (INT-8: it can only be cancelled), then
    says what the resume carried."""

    async def agent(run: Run) -> None:
        if not run.resume:
            run.interrupt({"id": "late", "reason": "input", "expiresAt": "2000-01-01T00:00:00Z"})
        await run.text(f"resumed with {json.dumps(run.resume)}")

    return agent


def hostile_ids_app() -> Starlette:
    """Markup in every field the frame list, waterfall and state history show: message
    and call ids, a tool name, a step name, state keys and values, a custom event, and an
    unknown property (a warning whose message quotes it)."""
    return raw_app(
        lambda request, ids: [
            {"type": "RUN_STARTED", **ids},
            {"type": "STEP_STARTED", "stepName": HOSTILE},
            *_text(f"m-{HOSTILE}", f"**{HOSTILE}** [x]({HOSTILE})", **{HOSTILE: 1}),
            {"type": "TOOL_CALL_START", "toolCallId": f"c-{HOSTILE}", "toolCallName": HOSTILE},
            {
                "type": "TOOL_CALL_ARGS",
                "toolCallId": f"c-{HOSTILE}",
                "delta": json.dumps({"q": HOSTILE}),
            },
            {"type": "TOOL_CALL_END", "toolCallId": f"c-{HOSTILE}"},
            {"type": "STATE_SNAPSHOT", "snapshot": {HOSTILE: HOSTILE}},
            {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/x", "value": HOSTILE}]},
            {"type": "CUSTOM", "name": HOSTILE, "value": HOSTILE},
            {"type": "STEP_FINISHED", "stepName": HOSTILE},
            {"type": "RUN_FINISHED", **ids},
        ]
    )
