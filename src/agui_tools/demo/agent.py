"""The demo agent: a scripted planner that walks every part of the tool-call loop.

No model and no network — it reads the thread it is shown (the run input) and
takes the next step of a fixed plan, so the demo is deterministic and offline.
The plan, one run per step, answering "Order two widgets for me":

1. text streams; an **agent-side tool** (``check_inventory``) runs and is
   answered in-stream; two **parallel frontend calls** (``get_location``,
   ``get_preferences``) are left for the application, answered together;
2. a frontend card whose **arguments fill in visibly** (``show_order_summary``,
   streamed in small deltas at a human pace), and ``place_order`` with
   arguments that **fail the schema** (``qty: "two"``);
3. having read the validation error, ``place_order`` again, correctly — a
   **side-effectful** call the user must consent to (approve / decline / edit);
4. ``email_receipt``, another side effect to consent to, and a call to
   ``unsubscribe_newsletter``, a tool the application **never advertised**;
5. a closing summary that reports what the application decided.

Each step reacts to the answers the previous run left: the agent quotes the
validation error, says whether the order was placed or declined, and explains
the refused tool.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from ..agent import Run

__all__ = ["DEMO_TOOLS", "demo_agent"]

# The frontend tools the demo application advertises (name → parameters schema);
# the agent only needs their names, the application owns the schemas.
DEMO_TOOLS = (
    "get_location",
    "get_preferences",
    "show_order_summary",
    "place_order",
    "email_receipt",
)


def _answers(run: Run) -> dict[str, Mapping[str, Any]]:
    return {m["toolCallId"]: m for m in run.messages if m.get("role") == "tool"}


def _declined_by(answer: Mapping[str, Any]) -> str | None:
    """Who declined the call this answer answers: ``"user"``, ``"application"`` (nobody
    was asked — the input ended, a script ran out), or ``None`` when it was not declined.

    The answer's wording says it (TOOL-22): "The user declined …" is a person's
    decision; "the application declined … (no user was asked)" is not.
    """
    content = str(answer.get("content", ""))
    if content.startswith("The user declined"):
        return "user"
    if "declined this tool call" in content:
        return "application"
    return None


def _step(run: Run) -> int:
    """Which step of the plan this run is: one more than the last call answered."""
    answers = _answers(run)
    for step in (4, 3, 2, 1):
        if any(cid.startswith(f"s{step}-") for cid in answers):
            return step + 1
    return 1


class _Pace:
    """Human-pace streaming: a small pause between deltas, none when ``fast``."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def __call__(self, factor: float = 1.0) -> None:
        if self.delay:
            await asyncio.sleep(self.delay * factor)


async def _say(run: Run, text: str, pace: _Pace) -> str:
    async with run.message() as m:
        for word in text.split(" "):
            await m.delta(word + " ")
            await pace(0.5)
    return m.id


def demo_agent(*, delay: float = 0.04) -> Any:
    """The agent function to serve (``agent_app(demo_agent())``); ``delay=0`` streams at once."""
    pace = _Pace(delay)

    async def agent(run: Run) -> None:
        answers = _answers(run)
        step = _step(run)
        if step == 1:
            mid = await _say(run, "Let me check the inventory first.", pace)
            async with run.tool_call(
                "check_inventory", call_id="s1-inventory", parent_message_id=mid
            ) as call:
                await call.args('{"sku": "widget"}')
            await run.result(call.id, json.dumps({"sku": "widget", "in_stock": 14, "price": 4.5}))
            mid = await _say(
                run, "In stock. I need your location and preferences to ship it.", pace
            )
            async with run.tool_call(
                "get_location", call_id="s1-location", parent_message_id=mid
            ) as c:
                await c.args("{}")
            async with run.tool_call(
                "get_preferences", call_id="s1-preferences", parent_message_id=mid
            ) as c:
                await c.args('{"fields": ["shipping", "currency"]}')
        elif step == 2:
            location = answers.get("s1-location", {}).get("content", "?")
            mid = await _say(run, f"Shipping to {location}. Here is the summary.", pace)
            summary = json.dumps(
                {"item": "widget", "qty": 2, "unit_price": 4.5, "total": 9.0, "ship_to": location},
                indent=None,
            )
            async with run.tool_call(
                "show_order_summary", call_id="s2-summary", parent_message_id=mid
            ) as c:
                for i in range(0, len(summary), 4):  # the card fills in, field by field
                    await c.args(summary[i : i + 4])
                    await pace()
            async with run.tool_call("place_order", call_id="s2-order", parent_message_id=mid) as c:
                await c.args('{"sku": "widget", "qty": "two"}')
        elif step == 3:
            error = answers.get("s2-order", {}).get("error", "")
            mid = await _say(
                run, f"The application rejected my order: {error}. Fixing the quantity.", pace
            )
            async with run.tool_call("place_order", call_id="s3-order", parent_message_id=mid) as c:
                for piece in ('{"sku": ', '"widget", ', '"qty": 2}'):
                    await c.args(piece)
                    await pace()
        elif step == 4:
            order = answers.get("s3-order", {})
            if order.get("error"):
                outcome = f"The order was not placed ({order['error']})."
            elif _declined_by(order) == "user":
                outcome = "You declined the order, so nothing was placed."
            elif _declined_by(order) is not None:
                outcome = (
                    "The application declined the order without asking you, so nothing was placed."
                )
            else:
                outcome = f"Order placed: {order.get('content')}."
            mid = await _say(
                run, f"{outcome} I'll email the receipt and tidy up your subscriptions.", pace
            )
            async with run.tool_call(
                "email_receipt", call_id="s4-email", parent_message_id=mid
            ) as c:
                await c.args('{"to": "you@example.com"}')
            async with run.tool_call(
                "unsubscribe_newsletter", call_id="s4-unsub", parent_message_id=mid
            ) as c:
                await c.args('{"list": "all"}')
        else:
            email, unsub = answers.get("s4-email", {}), answers.get("s4-unsub", {})
            declined = _declined_by(email)
            if declined == "user":
                email_text = "you declined the receipt email"
            elif declined is not None:  # the input ended, a script ran out: nobody was asked
                email_text = (
                    "the receipt email was not sent (no one was asked: the application declined it)"
                )
            else:
                email_text = f"receipt: {email.get('content', '?')}"
            await _say(
                run,
                f"Done — {email_text}; the application refused 'unsubscribe_newsletter' because it "
                f"never offered that tool ({unsub.get('error', 'no reason given')}).",
                pace,
            )

    return agent
