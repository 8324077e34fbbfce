"""Disposition: every call a run left unanswered ends in exactly one answer (FE-8).

Each is executed, fails, or is declined (saying who declined); this is the per-call state
machine and the wording of answers::

    streaming → awaiting_consent → approved → executing → done | failed
                      └──────────────→ declined

Arguments are untrusted (TOOL-21, TOOL-5); an answer never claims an approval that did not
happen (TOOL-22); results are data, never interpreted (TOOL-23).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

import orjson

from .._errors import UsageError
from ._arguments import FinalArguments, ParsedArguments, UnparseableArguments
from ._consent import ConsentDecision, DecidedBy, PolicyVerdict, Tally, fingerprint
from ._tools import ToolSpec
from ._validation import ArgumentError

__all__ = [
    "MOVES",
    "Answer",
    "CallAction",
    "CallStatus",
    "PendingCall",
    "ToolContext",
    "idempotency_key",
    "move",
    "normalize_result",
]

Outcome = Literal["executed", "failed", "declined"]


class CallStatus(StrEnum):
    """Where a tool call is in its life on the application's side: streaming its
    arguments, awaiting the user's consent, approved, executing, then answered —
    done, failed or declined (the ``MOVES`` table says which move leads where)."""

    STREAMING = "streaming"
    AWAITING_CONSENT = "awaiting_consent"
    APPROVED = "approved"
    EXECUTING = "executing"
    DONE = "done"
    FAILED = "failed"
    DECLINED = "declined"

    @property
    def answered(self) -> bool:
        """The call has its answer (done, failed or declined): nothing more happens to it."""
        return self in (CallStatus.DONE, CallStatus.FAILED, CallStatus.DECLINED)


CallAction = Literal["ask", "approve", "execute", "executed", "failed", "declined"]
"""What happens to a call: it is put to the user, approved, starts executing, or is
answered (``executed`` / ``failed`` / ``declined``, the answer's outcome)."""

_UNANSWERED = (
    CallStatus.STREAMING,
    CallStatus.AWAITING_CONSENT,
    CallStatus.APPROVED,
    CallStatus.EXECUTING,
)
_ANSWERED_AS: dict[CallAction, CallStatus] = {
    "executed": CallStatus.DONE,
    "failed": CallStatus.FAILED,
    "declined": CallStatus.DECLINED,
}

MOVES: dict[tuple[CallStatus, CallAction], CallStatus] = {
    (CallStatus.STREAMING, "ask"): CallStatus.AWAITING_CONSENT,
    (CallStatus.STREAMING, "approve"): CallStatus.APPROVED,  # the policy approved it
    (CallStatus.AWAITING_CONSENT, "approve"): CallStatus.APPROVED,
    (CallStatus.APPROVED, "approve"): CallStatus.APPROVED,  # approved again, edited
    (CallStatus.APPROVED, "ask"): CallStatus.AWAITING_CONSENT,  # its approval expired
    (CallStatus.APPROVED, "execute"): CallStatus.EXECUTING,
    # an answer may come to any call not answered yet: the journal's (another process
    # executed it), a decline, a failure, or its own execution's
    **{(status, outcome): to for status in _UNANSWERED for outcome, to in _ANSWERED_AS.items()},
}
"""The call lifecycle, one table: ``(status, action) → status``; anything else is illegal."""


def move(call: PendingCall, action: CallAction) -> None:
    """Move ``call`` by ``action`` along :data:`MOVES`, or refuse, saying which move.

    The one place a call's status changes: an illegal move is a bug of ours or a
    misuse of the conversation, never something to smooth over (an answered call
    answered again, an unapproved call executed).
    """
    to = MOVES.get((call.status, action))
    if to is None:
        allowed = sorted(a for (s, a) in MOVES if s is call.status)
        raise UsageError(
            f"call {call.call_id!r} is {call.status.value}: it cannot be moved by "
            f"{action!r} (from {call.status.value}: {', '.join(allowed) or 'nothing — it is answered'})"
        )
    call.status = to


@dataclass(frozen=True)
class Answer:
    """The one answer a call gets, as the tool message the next run carries."""

    call_id: str
    outcome: Outcome
    content: str | list[dict[str, Any]]
    error: str | None = None
    decided_by: DecidedBy | None = None

    def tool_message(self, message_id: str) -> dict[str, Any]:
        """The wire ``ToolMessage`` (``content`` string or parts, FE-9)."""
        msg: dict[str, Any] = {
            "id": message_id,
            "role": "tool",
            "toolCallId": self.call_id,
            "content": self.content,
        }
        if self.error is not None:
            msg["error"] = self.error
        return msg

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "callId": self.call_id,
            "outcome": self.outcome,
            "content": self.content,
        }
        if self.error is not None:
            out["error"] = self.error
        if self.decided_by is not None:
            out["decidedBy"] = self.decided_by
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Answer:
        return cls(
            call_id=data["callId"],
            outcome=data["outcome"],
            content=data["content"],
            error=data.get("error"),
            decided_by=data.get("decidedBy"),
        )

    # -- the wordings ---------------------------------------------------------

    @classmethod
    def executed(cls, call_id: str, content: str | list[dict[str, Any]]) -> Answer:
        return cls(call_id, "executed", content)

    @classmethod
    def failed(cls, call_id: str, error: str, content: str | list[dict[str, Any]] = "") -> Answer:
        """A failure is still an answer: a tool message with ``error`` set (FE-8)."""
        return cls(call_id, "failed", content or f"Error: {error}", error)

    @classmethod
    def declined(cls, call_id: str, by: DecidedBy, reason: str | None = None) -> Answer:
        """Worded from who declined, never from a guess (TOOL-22)."""
        if by == "user":
            text = "The user declined this tool call; it was not executed."
            if reason:
                text += f" The user said: {reason}"
            return cls(call_id, "declined", text, None, "user")
        who = "the application's policy" if by == "policy" else "the application"
        text = f"Not executed: {who} declined this tool call (no user was asked)."
        if reason:
            text += f" Reason: {reason}"
        return cls(call_id, "declined", text, f"declined by {who}", by)


def normalize_result(value: Any) -> str | list[dict[str, Any]]:
    """What a handler returned, as tool-message content (TOOL-12, TOOL-13).

    A string is content as is; a list of content-part dicts is parts; ``None``
    is the empty string; anything else — a dict, a number, a list of values —
    is structured data, which the protocol carries serialised as text.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if (
        isinstance(value, list)
        and value
        and all(isinstance(p, dict) and isinstance(p.get("type"), str) for p in value)
        and all(p["type"] in ("text", "image", "audio", "video", "document") for p in value)
    ):
        parts = [dict(p) for p in value]
        try:  # parts travel as JSON: what cannot be serialised fails here, as the handler's
            orjson.dumps(parts)
        except TypeError as exc:
            raise TypeError(
                f"the handler returned content parts that are not JSON: {exc}"
            ) from None
        return parts
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return str(value)


@dataclass
class PendingCall:
    """One call a run left unanswered, under disposition: ``arguments`` strictly parsed,
    ``errors`` its schema violations, ``tool`` ``None`` when not advertised (TOOL-24, FE-11).
    """

    thread_id: str
    run_id: str | None
    call_id: str
    name: str
    text: str
    arguments: FinalArguments
    tool: ToolSpec | None
    errors: list[ArgumentError] = field(default_factory=list)
    verdict: PolicyVerdict | None = None
    status: CallStatus = CallStatus.STREAMING
    decision: ConsentDecision | None = None
    answer: Answer | None = None
    edited: dict[str, Any] | None = None
    subagent_run_id: str | None = None
    tally: Tally | None = None
    """The approvals counted toward its tool's quorum, when it needs more than one
    or they expire (what a UI shows as "1 of 2 approvals")."""

    @property
    def proposed(self) -> dict[str, Any] | None:
        """The arguments the agent proposed, parsed; ``None`` when they did not parse."""
        return self.arguments.value if isinstance(self.arguments, ParsedArguments) else None

    @property
    def effective_arguments(self) -> dict[str, Any] | None:
        """What would execute: the user's edited arguments if any, else the proposal."""
        return self.edited if self.edited is not None else self.proposed

    @property
    def executable(self) -> dict[str, Any] | str:
        """The exact arguments that would execute: parsed, or the text that did not parse."""
        effective = self.effective_arguments
        return effective if effective is not None else self.text

    @property
    def fingerprint(self) -> str:
        """Fingerprint of the exact arguments that would execute."""
        return fingerprint(self.executable)

    @property
    def advertised(self) -> bool:
        return self.tool is not None

    @property
    def idempotency_key(self) -> str:
        """The call's idempotency key (:func:`idempotency_key`): what its handler was
        given in its :class:`ToolContext`, so an ``outcome_unknown`` check can look
        the side effect up by the same key."""
        return idempotency_key(self.thread_id, self.call_id)

    def context(self) -> ToolContext:
        """What a handler that asks for it is told about this call."""
        return ToolContext(
            thread_id=self.thread_id,
            run_id=self.run_id,
            call_id=self.call_id,
            tool=self.tool if self.tool is not None else ToolSpec(self.name, ""),
            idempotency_key=self.idempotency_key,
        )

    def problems(self) -> str | None:
        """Why this call cannot run as proposed, in words for the agent; ``None`` if it can."""
        if isinstance(self.arguments, UnparseableArguments):
            return f"the arguments are not valid JSON for a tool call: {self.arguments}"
        if self.errors:
            return "the arguments do not match the tool's schema: " + describe_errors(self.errors)
        return None


def idempotency_key(thread_id: str, call_id: str) -> str:
    """The idempotency key of call ``call_id`` of thread ``thread_id``: ``"agui-"`` and 32 hex
    digits of a SHA-256 over the length-prefixed ids.

    A pure function, so a retry, a restart or another replica gets the same key; 37 ASCII
    characters suit payment APIs. Only as unique as the agent keeps its call ids (EVT-9)."""
    parts = [part.encode("utf-8", "surrogatepass") for part in (thread_id, call_id)]
    digest = hashlib.sha256(b"".join(len(p).to_bytes(8, "big") + p for p in parts)).hexdigest()
    return f"agui-{digest[:32]}"


@dataclass(frozen=True)
class ToolContext:
    """What a tool handler may know about its call (annotate a parameter ``ToolContext``;
    docs/application.md, "A handler that knows its call").

    ``idempotency_key`` is stable across retries and replicas: pass it to a payment API, and
    ``outcome_unknown=`` can ask that API by the same key what became of a call.
    """

    thread_id: str
    run_id: str | None
    """The run that made the call (``None``: not known, a call restored from a bare journal)."""
    call_id: str
    tool: ToolSpec
    """The advertised tool: name, description, ``parameters`` (its JSON Schema)."""
    idempotency_key: str

    @property
    def tool_name(self) -> str:
        return self.tool.name


def describe_errors(errors: Sequence[ArgumentError], limit: int = 10) -> str:
    parts = [str(e) for e in errors[:limit]]
    if len(errors) > limit:
        parts.append(f"… and {len(errors) - limit} more")
    return "; ".join(parts)
