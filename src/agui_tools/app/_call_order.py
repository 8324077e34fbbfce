"""Tool messages out of their calls' order, found before the next input is sent.

A chat-completions model refuses a tool message that does not follow its call's assistant
message, and a producer slip makes one (an adapter restating a result under a fresh id,
upstream ag-ui #1745, reconciled by id, STATE-1). We say so (AGT-HIST-1) and reorder only
when asked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Misplaced", "in_call_order", "misplaced_tool_messages"]


@dataclass(frozen=True, slots=True)
class Misplaced:
    """A tool message that does not follow the assistant message that made its call."""

    tool_message_id: str
    call_id: str
    assistant_message_id: str


def _callers(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Call id → the id of the assistant message that made the call."""
    callers: dict[str, str] = {}
    for msg in messages:
        if msg.get("role") == "assistant":
            for call in msg.get("toolCalls") or ():
                callers.setdefault(call["id"], msg["id"])
    return callers


def misplaced_tool_messages(messages: Sequence[Mapping[str, Any]]) -> list[Misplaced]:
    """Every tool message whose nearest preceding non-tool message is not its caller.

    A tool message for a call no assistant message made is not reported here:
    that is an orphan answer, another rule's business (TOOL-10).
    """
    callers = _callers(messages)
    found: list[Misplaced] = []
    current: str | None = None  # the assistant message whose tool block we are in
    for msg in messages:
        role = msg.get("role")
        if role != "tool":
            current = msg["id"] if role == "assistant" else None
            continue
        call_id = msg.get("toolCallId", "")
        caller = callers.get(call_id)
        if caller is not None and caller != current:
            found.append(Misplaced(msg["id"], call_id, caller))
    return found


def in_call_order(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The history with each tool message right after its caller, tools in call order.

    Every message is kept exactly once; only tool messages move. Tool messages
    of calls no assistant message made stay where they were.
    """
    callers = _callers(messages)
    order = {
        call["id"]: i
        for msg in messages
        if msg.get("role") == "assistant"
        for i, call in enumerate(msg.get("toolCalls") or ())
    }
    answers: dict[str, list[Mapping[str, Any]]] = {}
    rest: list[Mapping[str, Any]] = []
    for msg in messages:
        caller = callers.get(msg.get("toolCallId", "")) if msg.get("role") == "tool" else None
        if caller is None:
            rest.append(msg)
        else:
            answers.setdefault(caller, []).append(msg)
    out: list[Mapping[str, Any]] = []
    for msg in rest:
        out.append(msg)
        block = answers.get(msg["id"]) if msg.get("role") == "assistant" else None
        if block:
            out += sorted(block, key=lambda m: order.get(m["toolCallId"], len(order)))
    return out
