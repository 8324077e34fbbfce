"""Interrupts as an application sees them, and the answers it gives (INT-4, INT-6/7/8).

A run that ends with the interrupt outcome asks for something; :func:`open_interrupts`
turns what it asked into typed :class:`Interrupt` values — the call it names looked
up in the thread — and a :class:`Resolution` per interrupt becomes the next input's
``resume`` list (:func:`resume_entries`), each payload validated against the
interrupt's ``responseSchema`` first. Sans-I/O: the session and the command line
share it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .._errors import InvalidPayload
from ._consent import Principal
from ._conversation import Conversation
from ._resume import expired
from ._validation import ArgumentError, ArgumentValidator, InvalidToolSchema

__all__ = [
    "Interrupt",
    "InterruptedCall",
    "InvalidPayload",
    "Resolution",
    "open_interrupts",
    "resume_entries",
]


@dataclass(frozen=True)
class InterruptedCall:
    """The tool call an interrupt names (an approval request): as the thread holds it.

    ``arguments`` is the parsed argument object (``None`` when its text does not
    parse; ``text`` is the raw text either way); ``description`` and ``parameters``
    the advertised tool's, when the application advertised it (an agent-side tool
    has none here).
    """

    call_id: str
    name: str
    arguments: Any
    text: str
    description: str | None = None
    parameters: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Interrupt:
    """One interrupt of the interrupted run, as its ``RUN_FINISHED`` delivered it.

    ``raw`` is the wire object; ``call`` the call a ``toolCallId`` names (``None``
    when it names none, or one the thread does not hold); ``expired`` the reference
    reading of ``expiresAt`` at the time it was read (an expired interrupt can only
    be cancelled, INT-8).
    """

    id: str
    reason: str | None
    message: str | None = None
    metadata: Mapping[str, Any] | None = None
    expires_at: str | None = None
    response_schema: Mapping[str, Any] | None = None
    tool_call_id: str | None = None
    call: InterruptedCall | None = None
    expired: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict)

    def validate(self, payload: Any) -> list[ArgumentError]:
        """Every way ``payload`` fails the ``responseSchema`` (empty: valid, or no schema).

        A schema that is not a usable JSON Schema cannot judge anything: it is
        reported as one error at the root rather than raised.
        """
        if self.response_schema is None:
            return []
        try:
            validator = ArgumentValidator(self.response_schema)
        except InvalidToolSchema as exc:
            return [ArgumentError("", "responseSchema", str(exc), exc.schema_path)]
        return validator.validate_value(payload)


@dataclass(frozen=True)
class Resolution:
    """The answer to one interrupt: resolved with a ``payload``, or cancelled.

    ``Resolution.resolve(payload)`` answers it; ``Resolution.cancel(reason)``
    abandons it (the reason travels in the entry's ``metadata``). A ``None``
    payload is left out of the entry (the wire's payload is never ``null``).
    ``principal`` names who answered; it travels in the entry's ``metadata``
    and the approval ledger records it (docs/approvals.md).
    """

    resolved: bool
    payload: Any = None
    reason: str | None = None
    principal: Principal | None = None

    @classmethod
    def resolve(cls, payload: Any = None, *, principal: Principal | None = None) -> Resolution:
        return cls(True, payload, principal=principal)

    @classmethod
    def cancel(cls, reason: str | None = None, *, principal: Principal | None = None) -> Resolution:
        return cls(False, None, reason, principal)

    def entry(self, interrupt_id: str) -> dict[str, Any]:
        """The wire ``ResumeEntry`` this answer is for the interrupt ``interrupt_id``."""
        out: dict[str, Any] = {
            "interruptId": interrupt_id,
            "status": "resolved" if self.resolved else "cancelled",
        }
        if self.resolved and self.payload is not None:
            out["payload"] = self.payload
        metadata: dict[str, Any] = {}
        if not self.resolved and self.reason:
            metadata["reason"] = self.reason
        if self.principal is not None:
            metadata["principal"] = self.principal.to_json()
        if metadata:
            out["metadata"] = metadata
        return out


def open_interrupts(conv: Conversation, now: datetime | None = None) -> list[Interrupt]:
    """The interrupts the conversation's last run left open (none unless it was
    interrupted): the run being continued is always the last one (INT-6)."""
    last = conv.runs[-1] if conv.runs else None
    if last is None or last.status != "interrupt":
        return []
    when = now or datetime.now(UTC)
    return [_typed(conv, raw, when) for raw in last.interrupts]


def _typed(conv: Conversation, raw: Mapping[str, Any], now: datetime) -> Interrupt:
    call_id = raw.get("toolCallId")
    call: InterruptedCall | None = None
    if isinstance(call_id, str):
        wire = conv.thread.tool_call(call_id)
        if wire is not None:
            function = wire.get("function") or {}
            name = str(function.get("name", ""))
            text = str(function.get("arguments", ""))
            try:
                arguments: Any = json.loads(text) if text else {}
            except ValueError:
                arguments = None
            tool = conv.tools.get(name)
            call = InterruptedCall(
                call_id,
                name,
                arguments,
                text,
                tool.description if tool is not None else None,
                tool.parameters if tool is not None else None,
            )
    schema = raw.get("responseSchema")
    metadata = raw.get("metadata")
    expires = raw.get("expiresAt")
    return Interrupt(
        id=str(raw["id"]),
        reason=raw.get("reason") if isinstance(raw.get("reason"), str) else None,
        message=raw.get("message") if isinstance(raw.get("message"), str) else None,
        metadata=metadata if isinstance(metadata, Mapping) else None,
        expires_at=expires if isinstance(expires, str) else None,
        response_schema=schema if isinstance(schema, Mapping) else None,
        tool_call_id=call_id if isinstance(call_id, str) else None,
        call=call,
        expired=expired(raw, now),
        raw=dict(raw),
    )


def resume_entries(
    interrupts: Sequence[Interrupt], answers: Mapping[str, Resolution]
) -> list[dict[str, Any]]:
    """The ``resume`` list answering ``interrupts`` with ``answers`` (by interrupt id).

    Each resolved payload is validated against its interrupt's ``responseSchema``
    first (:class:`InvalidPayload`); coverage, unknown ids and expiry are judged by
    the conversation when the input is made (INT-6/7/8), so nothing is sent unless
    the whole list holds.
    """
    by_id = {i.id: i for i in interrupts}
    for iid, answer in answers.items():
        interrupt = by_id.get(iid)
        if interrupt is not None and answer.resolved:
            errors = interrupt.validate(answer.payload)
            if errors:
                raise InvalidPayload(interrupt, errors)
    return [answer.entry(iid) for iid, answer in answers.items()]
