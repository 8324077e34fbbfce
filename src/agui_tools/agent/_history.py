"""The run input judged before anything runs: does it continue its thread soundly?

Conflicts of the history with the identity and continuation rules are refused
(:func:`check_continuation`) with :class:`ContinuationRejected` — 409 naming the ids, not a
malformed-input error, since enforcement already accepted it. Nothing is repaired.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._errors import ContinuationRejected

__all__ = ["ContinuationRejected", "check_continuation"]


def _listed(ids: Sequence[str]) -> str:
    return ", ".join(map(repr, ids))


def check_continuation(run_input: Mapping[str, Any]) -> None:
    """Refuse a history whose ids or answers conflict; raise :class:`ContinuationRejected`.

    On an *enforced* run input, in order: a message id used twice (EVT-8); a call id naming two
    calls (EVT-9); a tool message answering no call (EVT-9) or placed before its call
    (INPUT-5); a call answered twice (FE-8); a call no tool message answers (FE-8) — skipped
    with ``resume`` entries, where an interrupt may stand for it. Nothing is invented, dropped
    or reordered.
    """
    messages = run_input.get("messages") or ()
    first_use: dict[str, int] = {}
    reused: list[tuple[int, str]] = []
    for i, msg in enumerate(messages):
        ident = msg["id"]
        if ident in first_use:
            reused.append((i, ident))
        else:
            first_use[ident] = i
    if reused:
        ids = list(dict.fromkeys(m for _, m in reused))
        raise ContinuationRejected(
            "EVT-8",
            f"message id(s) {_listed(ids)} identify more than one message of the history; a "
            "messageId must be unique within its thread.",
            path=f"/messages/{reused[0][0]}/id",
            message_ids=ids,
        )
    calls: dict[str, tuple[int, str]] = {}  # call id → (message index, path of its id)
    doubled: list[tuple[str, str]] = []
    for i, msg in enumerate(messages):
        if msg.get("role") == "assistant":
            for j, call in enumerate(msg.get("toolCalls") or ()):
                path = f"/messages/{i}/toolCalls/{j}/id"
                if call["id"] in calls:
                    doubled.append((path, call["id"]))
                else:
                    calls[call["id"]] = (i, path)
    if doubled:
        ids = list(dict.fromkeys(c for _, c in doubled))
        raise ContinuationRejected(
            "EVT-9",
            f"tool call id(s) {_listed(ids)} name more than one call of the history; a "
            "toolCallId identifies one call and ties its answer to it.",
            path=doubled[0][0],
            tool_call_ids=ids,
        )
    answered: dict[str, int] = {}
    orphans: list[tuple[int, str]] = []
    early: list[tuple[int, str]] = []
    twice: list[tuple[int, str]] = []
    for i, msg in enumerate(messages):
        if msg.get("role") != "tool":
            continue
        call_id = msg["toolCallId"]
        if call_id not in calls:
            orphans.append((i, call_id))
        elif calls[call_id][0] > i:
            early.append((i, call_id))
        elif call_id in answered:
            twice.append((i, call_id))
        else:
            answered[call_id] = i
    if orphans:
        ids = [c for _, c in orphans]
        raise ContinuationRejected(
            "EVT-9",
            f"tool message(s) answer tool call(s) {_listed(ids)} that no assistant "
            "message of the history made; a tool message answers a call of the thread.",
            path=f"/messages/{orphans[0][0]}/toolCallId",
            tool_call_ids=ids,
        )
    if early:
        i, call_id = early[0]
        ids = [c for _, c in early]
        raise ContinuationRejected(
            "INPUT-5",
            f"tool message(s) answer tool call(s) {_listed(ids)} before the history makes them "
            f"(the first answer is /messages/{i}, its call {calls[call_id][1]}); the history is "
            "the conversation in order, and an answer follows its call.",
            path=f"/messages/{i}/toolCallId",
            tool_call_ids=ids,
        )
    if twice:
        i, call_id = twice[0]
        ids = list(dict.fromkeys(c for _, c in twice))
        raise ContinuationRejected(
            "FE-8",
            f"tool call(s) {_listed(ids)} are answered by more than one tool message (the first "
            f"answer is /messages/{answered[call_id]}, another /messages/{i}); a thread answers "
            "each call with one tool message.",
            path=f"/messages/{i}/toolCallId",
            tool_call_ids=ids,
        )
    if run_input.get("resume"):
        return
    dangling = [c for c in calls if c not in answered]
    if dangling:
        raise ContinuationRejected(
            "FE-8",
            f"tool call(s) {_listed(dangling)} of the history have no tool message "
            "answering them; a thread that continues must answer every call first (a failure or "
            "a declined call is still an answer).",
            path=calls[dangling[0]][1],
            tool_call_ids=dangling,
        )
