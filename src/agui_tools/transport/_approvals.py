"""The answers a person (or a script) gives a session: an :class:`Approval` of a
pending call, and what an interrupt handler's answer means for an interrupt."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import UsageError
from ..app._arguments import parse_arguments
from ..app._calls import CallStatus, PendingCall
from ..app._consent import DecidedBy, Principal
from ..app._conversation import Conversation
from ..app._interrupts import Interrupt, Resolution
from ..app._validation import ArgumentValidator

__all__ = ["Approval", "approval_request", "as_resolution", "interrupt_resolution"]


@dataclass(frozen=True)
class Approval:
    """The answer to a consent prompt: ``approved`` False declines; ``arguments`` approves
    *edited* arguments (validated, then run instead). ``decided_by`` is ``"user"`` or
    ``"system"`` (nobody could answer), so no answer claims a user decided (TOOL-22).
    ``principal`` names the person (docs/approvals.md); unnamed is the unauthenticated ``user``.
    """

    approved: bool
    arguments: Mapping[str, Any] | None = None
    reason: str | None = None
    decided_by: DecidedBy = "user"
    principal: Principal | None = None

    @classmethod
    def approve(
        cls, arguments: Mapping[str, Any] | None = None, *, principal: Principal | None = None
    ) -> Approval:
        return cls(True, arguments, principal=principal)

    @classmethod
    def decline(
        cls,
        reason: str | None = None,
        *,
        by: DecidedBy = "user",
        principal: Principal | None = None,
    ) -> Approval:
        return cls(False, None, reason, by, principal)


def interrupt_resolution(interrupt: Interrupt, answer: Any) -> Resolution:
    """What a handler's answer means for ``interrupt``: a :class:`Resolution` is itself; an
    :class:`Approval` (or bool) for an approval request resolves it ``{"approved": true}`` (with
    validated edited ``"arguments"``) or cancels it with the reason — never the other way.
    """
    if isinstance(answer, Resolution):
        return answer
    if isinstance(answer, bool):
        answer = Approval(answer)
    if not isinstance(answer, Approval):
        raise UsageError(
            f"an interrupt handler answers with a Resolution (or, for an approval request, "
            f"an Approval or a bool), not {type(answer).__name__}"
        )
    if not answer.approved:
        return Resolution.cancel(answer.reason or "declined", principal=answer.principal)
    if interrupt.call is None and answer.arguments is not None:
        raise UsageError(
            f"interrupt {interrupt.id!r} names no call: there are no arguments to edit"
        )
    payload: dict[str, Any] = {"approved": True}
    if answer.arguments is not None:
        assert interrupt.call is not None
        if interrupt.call.parameters is not None:
            errors = ArgumentValidator(interrupt.call.parameters).validate(answer.arguments)
            if errors:
                raise UsageError(
                    f"the edited arguments of {interrupt.call.name!r} do not satisfy its schema: "
                    + "; ".join(str(e) for e in errors),
                    rule="TOOL-21",
                )
        payload["arguments"] = dict(answer.arguments)
    return Resolution.resolve(payload, principal=answer.principal)


def approval_request(conv: Conversation, interrupt: Interrupt) -> PendingCall:
    """The call an approval request names, as ``ask`` sees a call awaiting consent."""
    call = interrupt.call
    assert call is not None
    last = conv.runs[-1] if conv.runs else None
    return PendingCall(
        conv.thread_id,
        last.run_id if last is not None else None,
        call.call_id,
        call.name,
        call.text,
        parse_arguments(call.text),
        conv.tools.get(call.name),
        status=CallStatus.AWAITING_CONSENT,
    )


def as_resolution(answer: Any) -> Resolution:
    if isinstance(answer, Resolution):
        return answer
    approved = answer.approved if isinstance(answer, Approval) else bool(answer)
    return Resolution.resolve({"approved": True}) if approved else Resolution.cancel()
