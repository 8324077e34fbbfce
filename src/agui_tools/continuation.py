"""The run input judged before anything runs: does it continue its thread soundly?

A server receives a ``RunAgentInput`` whose ``messages`` are the thread so far.
Before an agent runs on it, two conflicts with the thread's own history are
refused (:func:`check_continuation`): a tool message that answers no call, and
a call that no tool message answers. Neither is malformed JSON — enforcement
(``codec.decode_run_input``) has already accepted the input — so the refusal is
its own exception, :class:`ContinuationRejected`, which a server answers with
409 naming the ids. Nothing is ever repaired.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InputRejected

__all__ = ["ContinuationRejected", "check_continuation"]


class ContinuationRejected(InputRejected):
    """The run input continues a thread in a way the producer must not accept.

    A dangling call or an answer to nothing is not malformed JSON: it is a
    conflict with the thread's own history, which is why a server answers it
    with 409 rather than 422, naming the ids in ``tool_call_ids``.
    """

    def __init__(
        self, rule: str, explanation: str, *, tool_call_ids: Sequence[str] = (), **kw: Any
    ) -> None:
        self.tool_call_ids = tuple(tool_call_ids)
        kw.setdefault("ids", {"toolCallIds": ",".join(self.tool_call_ids)})
        super().__init__(rule, explanation, **kw)

    def at(self, index: int) -> ContinuationRejected:
        return self  # run input has no stream position

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        out.pop("ids", None)
        out["toolCallIds"] = list(self.tool_call_ids)
        return out


def check_continuation(run_input: Mapping[str, Any]) -> None:
    """Refuse a history that answers nothing or leaves a call unanswered.

    Two checks on an *enforced* run input (``decode_run_input(...).wire``),
    raising :class:`ContinuationRejected`:

    * a tool message whose ``toolCallId`` names no call of the history
      (EVT-9: the id ties a result back to its call — here there is none);
    * an assistant tool call that no tool message answers (FE-8: a thread that
      continues MUST answer every call first). Skipped when the input carries
      ``resume`` entries: an interrupt may stand for the call (an approval
      gate), and which interrupts cover which calls is the agent's knowledge,
      not the transport's.

    Never repaired: no tool message is invented, none is dropped.
    """
    messages = run_input.get("messages") or ()
    calls: dict[str, str] = {}
    for i, msg in enumerate(messages):
        if msg.get("role") == "assistant":
            for j, call in enumerate(msg.get("toolCalls") or ()):
                calls.setdefault(call["id"], f"/messages/{i}/toolCalls/{j}/id")
    answered: set[str] = set()
    orphans: list[tuple[int, str]] = []
    for i, msg in enumerate(messages):
        if msg.get("role") == "tool":
            call_id = msg["toolCallId"]
            if call_id in calls:
                answered.add(call_id)
            else:
                orphans.append((i, call_id))
    if orphans:
        ids = [c for _, c in orphans]
        raise ContinuationRejected(
            "EVT-9",
            f"tool message(s) answer tool call(s) {', '.join(map(repr, ids))} that no assistant "
            "message of the history made; a tool message answers a call of the thread.",
            path=f"/messages/{orphans[0][0]}/toolCallId",
            tool_call_ids=ids,
        )
    if run_input.get("resume"):
        return
    dangling = [c for c in calls if c not in answered]
    if dangling:
        raise ContinuationRejected(
            "FE-8",
            f"tool call(s) {', '.join(map(repr, dangling))} of the history have no tool message "
            "answering them; a thread that continues must answer every call first (a failure or "
            "a declined call is still an answer).",
            path=calls[dangling[0]],
            tool_call_ids=dangling,
        )
