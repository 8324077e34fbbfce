"""A :class:`Conversation` fed by hand: two tools and the events of a run.

:data:`CONFIRM` (side effects, a strict schema) and :data:`LOOKUP` (read-only) are
the tools; :func:`run` feeds one whole run for the conversation's pending input and
:func:`call` spells one tool call, its arguments split over two chunks.
"""

from __future__ import annotations

from typing import Any

from agui_tools.app._conversation import Conversation
from agui_tools.app._tools import ToolSpec

CONFIRM = ToolSpec(
    "confirm_order",
    "Ask the user to confirm an order.",
    parameters={
        "type": "object",
        "properties": {"orderId": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
        "required": ["orderId", "qty"],
        "additionalProperties": False,
    },
    side_effects=True,
)
LOOKUP = ToolSpec(
    "lookup",
    "Read-only lookup.",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}},
)


def run(
    conv: Conversation, *events: dict[str, Any], finish: dict[str, Any] | None = None
) -> list[Any]:
    """Feed one run (RUN_STARTED … RUN_FINISHED) for the conversation's pending input."""
    inp = conv._run_input
    assert inp is not None
    rs = {"type": "RUN_STARTED", "threadId": inp["threadId"], "runId": inp["runId"]}
    rf = {
        "type": "RUN_FINISHED",
        "threadId": inp["threadId"],
        "runId": inp["runId"],
        **(finish or {}),
    }
    return conv.receive_many([rs, *events, rf])


def call(cid: str, name: str, args: str, parent: str | None = None) -> list[dict[str, Any]]:
    start: dict[str, Any] = {"type": "TOOL_CALL_START", "toolCallId": cid, "toolCallName": name}
    if parent:
        start["parentMessageId"] = parent
    half = len(args) // 2
    return [
        start,
        {"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": args[:half]},
        {"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": args[half:]},
        {"type": "TOOL_CALL_END", "toolCallId": cid},
    ]
