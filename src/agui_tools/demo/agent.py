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
5. what the application decided — and a **refund that needs approval**: the
   agent calls its *own* ``refund`` tool and **interrupts** the run, naming the
   call, with a ``responseSchema`` (``{approved: bool, amount?: number}``)
   (``pages/basic/patterns/interrupt-resume.mdx``);
6. resumed: the refund is issued (``resolved`` and approved) or not
   (``cancelled``, or resolved with ``approved: false``) — answered in-stream,
   as the agent's own call — and a closing summary.

Each step reacts to the answers the previous run left: the agent quotes the
validation error, says whether the order was placed or declined, explains the
refused tool, and says what became of the refund. A thread whose last user
message asks for a refund goes straight to the refund (what ``agui-tools
check`` asks, to exercise its interrupt cases).
"""

from __future__ import annotations

import asyncio
import json
import logging
import zlib
from collections.abc import Mapping
from typing import Any, Final, NoReturn

from ..agent import Run

__all__ = ["DEMO_TOOLS", "REFUND_SCHEMA", "demo_agent"]

_log = logging.getLogger("agui_tools.demo")

REFUND_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean", "description": "whether the refund may be issued"},
        "amount": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "the amount to refund instead of the one proposed (EUR)",
        },
    },
    "required": ["approved"],
}
"""What the refund interrupt asks for: an approval, and optionally another amount."""

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


def _open_refund(run: Run) -> tuple[str, dict[str, Any]] | None:
    """The agent's own ``refund`` call the thread holds unanswered: (id, arguments)."""
    answered = set(_answers(run))
    for message in run.messages:
        for call in message.get("toolCalls") or () if message.get("role") == "assistant" else ():
            function = call.get("function") or {}
            if function.get("name") == "refund" and call.get("id") not in answered:
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except ValueError:
                    arguments = {}
                return str(call["id"]), arguments if isinstance(arguments, dict) else {}
    return None


def _asks_for_refund(run: Run) -> bool:
    users = [m for m in run.messages if m.get("role") == "user"]
    content = users[-1].get("content") if users else None
    return isinstance(content, str) and "refund" in content.lower()


def _eur(amount: Any) -> str:
    return f"{amount:.2f} EUR" if isinstance(amount, (int, float)) else f"{amount} EUR"


def _interrupt_id(call_id: str) -> str:
    return f"approve-{call_id}"


async def _ask_refund(run: Run, pace: _Pace, call_id: str, why: str) -> NoReturn:
    """Call the agent's own ``refund`` tool and stop the run to ask for its approval."""
    amount = 4.5
    mid = await _say(run, f"{why} I'll refund {amount:.2f} EUR — that needs your approval.", pace)
    arguments = {"order": "A1042", "amount": amount, "currency": "EUR"}
    async with run.tool_call("refund", call_id=call_id, parent_message_id=mid) as c:
        await c.args(json.dumps(arguments))
    _interrupt_refund(run, call_id, arguments)


def _interrupt_refund(run: Run, call_id: str, arguments: Mapping[str, Any]) -> NoReturn:
    run.interrupt(
        {
            "id": _interrupt_id(call_id),
            "reason": "tool_approval",
            "message": f"May I refund {_eur(arguments.get('amount'))} on order "
            f"{arguments.get('order', '?')}?",
            "toolCallId": call_id,
            "responseSchema": REFUND_SCHEMA,
        }
    )


async def _settle_refund(run: Run, pace: _Pace, call_id: str, arguments: Mapping[str, Any]) -> str:
    """The run resuming the refund interrupt: issue the refund or not, as the entry says
    (answering the agent's own call in-stream); what became of it, in a sentence. With no
    entry for it the interrupt stays open (INT-10): the run interrupts again."""
    wanted = _interrupt_id(call_id)
    entries = {str(e.get("interruptId")): e for e in run.resume}
    for stray in sorted(set(entries) - {wanted}):  # INT-9: proceed without it, and say so
        _log.warning("resume entry %r names no interrupt this agent raised; ignored", stray)
    entry = entries.get(wanted)
    if entry is None:
        _interrupt_refund(run, call_id, arguments)
    payload = entry.get("payload")
    reason = (entry.get("metadata") or {}).get("reason")
    if entry.get("status") == "resolved" and isinstance(payload, dict) and payload.get("approved"):
        amount = payload.get("amount", arguments.get("amount", 0))
        reference = f"RF-{zlib.crc32(call_id.encode()) % 10000:04d}"
        await run.result(
            call_id,
            json.dumps({"refunded": amount, "currency": "EUR", "reference": reference}),
        )
        return f"refunded {_eur(amount)} (reference {reference})"
    if entry.get("status") == "resolved":
        said = "you declined the refund, so none was issued"
    else:
        said = "the refund was cancelled, so none was issued" + (f" ({reason})" if reason else "")
    await run.result(call_id, json.dumps({"refunded": 0, "status": "not issued"}))
    return said


def demo_agent(*, delay: float = 0.04, refund: bool = True) -> Any:
    """The agent function to serve (``agent_app(demo_agent())``); ``delay=0`` streams at once.

    ``refund=False`` ends the order plan after step 4's answers, without the refund's
    interrupt (for a face that cannot answer interrupts yet: the inspector); a thread
    asking for a refund still gets one."""
    pace = _Pace(delay)

    async def agent(run: Run) -> None:
        asked = _open_refund(run)
        if asked is not None:  # resuming the refund interrupt
            call_id, arguments = asked
            said = await _settle_refund(run, pace, call_id, arguments)
            if not call_id.startswith("s5-"):  # a refund asked for on its own
                await _say(run, f"Done — {said}.", pace)
                return
            await _say(run, f"Done — {said}. That is everything for your order.", pace)
            return
        if _asks_for_refund(run) and _step(run) == 1:
            await _ask_refund(
                run, pace, f"r-refund-{run.run_id[-8:]}", "I found the duplicate charge."
            )
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
                f"{'So:' if refund else 'Done —'} {email_text}; the application refused "
                "'unsubscribe_newsletter' because it never offered that tool "
                f"({unsub.get('error', 'no reason given')}).",
                pace,
            )
            if not refund:
                return
            await _ask_refund(
                run, pace, "s5-refund", "One more thing: your shipping was charged twice."
            )

    return agent
