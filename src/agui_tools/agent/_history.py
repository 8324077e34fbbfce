"""The run input judged before anything runs: does it continue its thread soundly?

A server receives a ``RunAgentInput`` whose ``messages`` are the thread so far.
Before an agent runs on it, the conflicts of the history with the protocol's
identity and continuation rules are refused (:func:`check_continuation`): a
message id used twice, a tool call id naming two calls, a tool message that
answers no call — or a call the history makes only later — a call answered
twice, and a call that no tool message answers. None of these is malformed
JSON — enforcement (``codec.decode_run_input``) has already accepted the
input — so the refusal is its own exception, :class:`ContinuationRejected`,
which a server answers with 409 naming the ids. Nothing is ever repaired.
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

    Checks on an *enforced* run input (``decode_run_input(...).wire``), in order:

    * a message id used by two messages (EVT-8: a ``messageId`` MUST be unique
      within its thread — a later snapshot restates a message by it);
    * a tool call id naming two calls (EVT-9: the id identifies *one* call and
      ties its answer to it — with two, no answer can say which it answers);
    * a tool message whose ``toolCallId`` names no call of the history (EVT-9);
    * a tool message placed before the call it answers (INPUT-5: the history
      is the conversation *in order*; an answer cannot precede its question);
    * a call answered by two tool messages (FE-8: a tool message *per call* —
      an agent handed two answers would act on one of them, unknowably);
    * an assistant tool call that no tool message answers (FE-8: a thread that
      continues MUST answer every call first). Skipped when the input carries
      ``resume`` entries: an interrupt may stand for the call (an approval
      gate), and which interrupts cover which calls is the agent's knowledge,
      not the transport's.

    Never repaired: no tool message is invented, none is dropped or reordered.
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
