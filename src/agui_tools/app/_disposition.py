"""Disposition: the gates a call the run left unanswered passes before anything runs.

In order; the first that rules decides:

1. :func:`journal_holds` — what the journal holds stands (an answer reused, a started
   execution never re-run);
2. :func:`never_closed` — not acted on before ``TOOL_CALL_END`` (TOOL-5);
3. :func:`not_advertised` — refused unless ``unadvertised`` adopts it (TOOL-24);
4. :func:`invalid_arguments` — strict parsing and schema validation (TOOL-21);
5. :func:`decision_recorded` — a recorded decision covering these arguments stands (TOOL-22);
6. :func:`consent_policy` — the policy approves, denies or asks.

Each gate is a pure function of the call and the :class:`Desk` (the journal's record, read
before, so sync and async stores share the gates): it returns a :data:`Ruling` or ``None``.
The conversation carries a ruling out in one place — journal first, then memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from ._arguments import ParsedArguments
from ._calls import Answer, PendingCall
from ._consent import (
    UNAUTHENTICATED_USER,
    ConsentDecision,
    ConsentPolicy,
    DecidedBy,
    PolicyVerdict,
    Principal,
    Quorum,
    arguments_hash,
    stamp,
    tally,
)
from ._journal import ClaimResult
from ._tools import ToolSpec
from ._validation import InvalidToolSchema

__all__ = [
    "Approve",
    "Ask",
    "Desk",
    "Gate",
    "Ruling",
    "Settle",
    "Stand",
    "decide",
    "describe_exception",
    "rule_on",
]

Unadvertised = Callable[[str, Mapping[str, Any] | None], ToolSpec | None]


# -- what a gate can rule ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stand:
    """The journal holds something for the call: its answer, or an execution that
    started and recorded none (whose outcome is then unknown)."""

    record: ClaimResult


@dataclass(frozen=True, slots=True)
class Settle:
    """Answer the call without running it (a refusal, a decline).

    ``decision`` travels with a decline; ``record`` False when the decision is
    already the journal's (it is not written twice).
    """

    answer: Answer
    decision: ConsentDecision | None = None
    record: bool = True


@dataclass(frozen=True, slots=True)
class Approve:
    """The call may execute under ``decision`` (``record`` False: the journal holds it)."""

    decision: ConsentDecision
    record: bool = True


@dataclass(frozen=True, slots=True)
class Ask:
    """Nothing decided yet: the call waits for the user's consent."""


Ruling = Stand | Settle | Approve | Ask


@dataclass(frozen=True, slots=True)
class Desk:
    """What the conversation lends the gates for one call."""

    record: ClaimResult | None
    """What the journal holds for the call (its answer, or an execution's intent)."""
    decisions: Sequence[Mapping[str, Any]]
    """The consent decisions the journal holds for the call, oldest first (read
    only when it holds no record: then they are all the gates need)."""
    consent: ConsentPolicy
    unadvertised: Unadvertised | None
    closed: bool
    """Whether the call was closed by its ``TOOL_CALL_END`` (its arguments are whole)."""


Gate = Callable[[PendingCall, Desk], Ruling | None]


# -- the gates, in order ----------------------------------------------------------


def journal_holds(call: PendingCall, desk: Desk) -> Ruling | None:
    return Stand(desk.record) if desk.record is not None else None


def never_closed(call: PendingCall, desk: Desk) -> Ruling | None:
    if desk.closed:
        return None
    return _refuse(
        call,
        "not executed: the call never closed (the run ended before TOOL_CALL_END), so its "
        "arguments are incomplete",
    )


def not_advertised(call: PendingCall, desk: Desk) -> Ruling | None:
    name, parsed = call.name, call.arguments
    if call.tool is None and desk.unadvertised is not None:
        try:
            call.tool = desk.unadvertised(
                name, parsed.value if isinstance(parsed, ParsedArguments) else None
            )
        except Exception as exc:  # the application's hook failed: refuse, say why
            return _refuse(
                call,
                f"not executed: {name!r} is not a tool this application advertised, and its "
                f"handler for such calls failed ({describe_exception(exc)})",
            )
    if call.tool is None:
        return _refuse(
            call,
            f"not executed: {name!r} is not a tool this application advertised, and "
            "unadvertised tools are not executed",
        )
    return None


def invalid_arguments(call: PendingCall, desk: Desk) -> Ruling | None:
    assert call.tool is not None  # not_advertised passed it
    if isinstance(call.arguments, ParsedArguments):
        try:
            call.errors = call.tool.validator.validate(call.arguments)
        except InvalidToolSchema as exc:  # pragma: no cover - caught at registration
            call.errors = []
            return _refuse(call, f"not executed: the tool is misconfigured: {exc}")
    problem = call.problems()
    return _refuse(call, f"not executed: {problem}") if problem is not None else None


def decision_recorded(call: PendingCall, desk: Desk) -> Ruling | None:
    decisions = desk.decisions
    if not decisions:
        return None
    last = decisions[-1]
    edited = last.get("editedArguments")
    call.edited = dict(edited) if edited is not None else None
    if last["fingerprint"] != call.fingerprint:
        call.edited = None  # it was about other arguments: it does not stand
        return None
    recorded = ConsentDecision.from_json(last)
    if recorded.approved:
        quorum = desk.consent.quorum(call.name)
        if recorded.decided_by == "user" and not quorum.plain:
            # approvals gathered anywhere count; short of the quorum the call waits
            call.tally = tally(decisions, call.fingerprint, quorum, datetime.now(UTC))
            if not call.tally.holds:
                return Ask()
        return Approve(recorded, record=False)
    return Settle(
        Answer.declined(call.call_id, recorded.decided_by, recorded.reason),
        decision=recorded,
        record=False,
    )


def consent_policy(call: PendingCall, desk: Desk) -> Ruling | None:
    assert call.tool is not None  # not_advertised passed it
    try:
        call.verdict = desk.consent.verdict(call.tool, call.proposed or {})
    except Exception as exc:  # the application's policy failed: nothing runs, say why
        return _refuse(
            call,
            f"not executed: the application's consent policy failed ({describe_exception(exc)})",
        )
    if call.verdict is PolicyVerdict.APPROVE:
        return Approve(
            decide(call, approved=True, by="policy", reason="approved by the consent policy")
        )
    if call.verdict is PolicyVerdict.DENY:
        return Settle(
            Answer.declined(call.call_id, "policy"),
            decision=decide(
                call, approved=False, by="policy", reason="denied by the consent policy"
            ),
        )
    return Ask()


GATES: Final[tuple[Gate, ...]] = (
    journal_holds,
    never_closed,
    not_advertised,
    invalid_arguments,
    decision_recorded,
    consent_policy,
)


def rule_on(call: PendingCall, desk: Desk) -> Ruling:
    """The first ruling a gate makes on ``call`` (the last gate always rules)."""
    for gate in GATES:
        ruling = gate(call, desk)
        if ruling is not None:
            return ruling
    raise AssertionError("the consent policy gate always rules")  # pragma: no cover


# -- shared by the gates and the conversation -------------------------------------


def decide(
    call: PendingCall,
    *,
    approved: bool,
    by: DecidedBy,
    reason: str | None = None,
    supersedes: str | None = None,
    principal: Principal | None = None,
    quorum: Quorum | None = None,
    receipt: Mapping[str, Any] | None = None,
) -> ConsentDecision:
    """A decision about ``call`` as it stands now (its arguments' fingerprint, now).

    Edited arguments travel with every decision about them, so a restart can
    rebuild what a later decline or re-approval was about. A person's decision
    names its principal — the unauthenticated ``user`` when none was given
    (APPROVE-4); ``quorum`` (a person's decision) sets the rule and the expiry.
    """
    now = datetime.now(UTC)
    if by == "user" and principal is None:
        principal = UNAUTHENTICATED_USER
    lifetime = quorum.lifetime if quorum is not None else None
    rule: str | None = quorum.rule() if quorum is not None else None
    if by == "policy":
        rule = "consent policy"
    shown = call.proposed
    return ConsentDecision(
        thread_id=call.thread_id,
        call_id=call.call_id,
        tool=call.name,
        fingerprint=call.fingerprint,
        approved=approved,
        decided_by=by,
        decided_at=stamp(now),
        reason=reason,
        edited_arguments=call.edited,
        supersedes=supersedes,
        principal=principal,
        run_id=call.run_id,
        arguments_shown=arguments_hash(shown if shown is not None else call.text),
        arguments_approved=arguments_hash(call.executable) if approved else None,
        rule=rule,
        expires_at=stamp(now + lifetime) if approved and lifetime is not None else None,
        receipt=receipt,
    )


def describe_exception(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _refuse(call: PendingCall, error: str) -> Settle:
    return Settle(Answer.failed(call.call_id, error))
