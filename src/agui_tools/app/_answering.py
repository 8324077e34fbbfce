"""Every way a call of a conversation gets its one answer: the disposition gates'
ruling carried out, consent (approve, decline), execution, failure — durable first,
then in memory, then in the thread.

:class:`Answering` is the part of :class:`~agui_tools.app._conversation.Conversation`
that answers calls; it performs no I/O either: each operation that reads or writes
the journal is a ``*_steps`` method, performed by a driver (app/_driver.py).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from .._errors import ApprovalRefused, StoreError, StoreOutcomeUnknown, UsageError
from ._arguments import parse_arguments
from ._calls import Answer, CallStatus, PendingCall, describe_errors, move
from ._consent import (
    ConsentDecision,
    ConsentPolicy,
    DecidedBy,
    Principal,
    arguments_hash,
    tally,
)
from ._disposition import (
    Approve,
    Desk,
    Settle,
    Stand,
    decide,
    describe_exception,
    rule_on,
)
from ._journal import Claim, ClaimResult, Journal, JournalKey
from ._link import Link
from ._receipts import QUORUM_KEY, RECEIPT_KEY, Signer, decision_receipt
from ._reducer import ThreadState
from ._steps import Pause, StoreSteps, ask
from ._store import AsyncStore
from ._tools import ToolSpec
from ._updates import Update, call_update

__all__ = ["Answering", "OutcomeUnknown"]

OutcomeUnknown = Callable[[PendingCall, datetime], Answer | None]


class Answering:
    """The calls of one thread and their answers (a part of ``Conversation``, which
    sets every attribute below)."""

    thread_id: str
    thread: ThreadState
    tools: dict[str, ToolSpec]
    consent: ConsentPolicy
    journal: Journal | AsyncStore
    unadvertised: Callable[[str, Mapping[str, Any] | None], ToolSpec | None] | None
    outcome_unknown: OutcomeUnknown | None
    in_flight_wait: float
    signer: Signer | None
    _link: Link
    _calls: dict[str, PendingCall]
    _updates: list[Update]

    # -- the link to the store ------------------------------------------------------

    @property
    def link(self) -> Link:
        """This copy of the thread's relation to its store (app/_link.py): what a
        driver of the ``*_steps`` checks each operation against and moves out of step
        when a store call fails."""
        return self._link

    @property
    def in_step(self) -> bool:
        """Whether this conversation's copy of the thread is in step with its store.

        ``False`` after a store operation failed (app/_link.py): every further
        operation that reads or writes the store raises
        :class:`~agui_tools._errors.ReloadRequired` (or the
        :class:`~agui_tools._errors.StaleThread` that stopped it) — reload.
        """
        return self._link.in_step

    @property
    def pending(self) -> list[PendingCall]:
        """Calls still waiting for an answer, in the order they were made."""
        return [c for c in self._calls.values() if not c.status.answered]

    def call(self, call_id: str) -> PendingCall:
        try:
            return self._calls[call_id]
        except KeyError:
            raise UsageError(
                f"no call {call_id!r} is awaiting disposition in this conversation"
            ) from None

    # -- disposition -------------------------------------------------------------

    def _pending_call(self, call_id: str, run_id: str | None) -> PendingCall:
        """The call as the thread holds it, registered for disposition."""
        name = self.thread.call_name(call_id) or ""
        text = self.thread.arguments(call_id) or ""
        call = PendingCall(
            thread_id=self.thread_id,
            run_id=run_id,
            call_id=call_id,
            name=name,
            text=text,
            arguments=parse_arguments(text),
            tool=self.tools.get(name),
            subagent_run_id=self.thread.call_owner(call_id),
        )
        self._calls[call_id] = call
        return call

    def _dispose_steps(
        self, call_id: str, run_id: str | None, *, closed: bool = True
    ) -> StoreSteps[PendingCall]:
        """Put a call through the disposition gates (:mod:`._disposition`) and carry
        out their ruling: durable first, then in memory.

        What the gates need of the journal is read first (the record; the
        decisions when there is no record), so the gates stay pure functions."""
        call = self._pending_call(call_id, run_id)
        record: ClaimResult | None = yield from ask("lookup", self.thread_id, call_id)
        decisions: list[dict[str, Any]] = (
            [] if record is not None else (yield from ask("decisions", self.thread_id, call_id))
        )
        ruling = rule_on(call, Desk(record, decisions, self.consent, self.unadvertised, closed))
        if isinstance(ruling, Stand):
            if ruling.record.claim is Claim.ANSWERED:
                assert ruling.record.answer is not None
                self._answer(call, Answer.from_json(ruling.record.answer))
            else:
                yield from self._unknown_steps(call, ruling.record)
        elif isinstance(ruling, Settle):
            yield from self._settle_steps(
                call, ruling.answer, decision=ruling.decision, record=ruling.record
            )
        elif isinstance(ruling, Approve):
            if ruling.record:
                yield from self._record_steps(call, ruling.decision)
            else:
                call.decision = ruling.decision
            move(call, "approve")
        else:
            move(call, "ask")
        return call

    def _undisposable(self, call_id: str, run_id: str | None, exc: Exception) -> PendingCall:
        """A call :meth:`_dispose` could not finish: answered failed, in memory only.

        Nothing ran, so nothing is lost if the answer is not durable: after a
        restart the call is disposed of again.
        """
        call = self._calls.get(call_id) or self._pending_call(call_id, run_id)
        if call.answer is None:
            self._answer(
                call,
                Answer.failed(
                    call_id,
                    f"not executed: the application could not dispose of the call "
                    f"({describe_exception(exc)})",
                ),
            )
        return call

    def approve_steps(
        self,
        call_id: str,
        *,
        by: DecidedBy = "user",
        arguments: Mapping[str, Any] | None = None,
        reason: str | None = None,
        principal: Principal | None = None,
        receipt: Mapping[str, Any] | None = None,
    ) -> StoreSteps[ConsentDecision]:
        """Approve a call (``Driver.approve``), with edited ``arguments`` validated
        like the proposal was; the approval binds their fingerprint.

        When the call's tool needs a quorum (``ConsentPolicy.quorums``), the call
        is approved once that many distinct principals' unexpired approvals of
        the same arguments are in the store — this one and those any process
        recorded; until then it stays awaiting consent (``call.tally`` counts)."""
        call = self.call(call_id)
        if call.status not in (CallStatus.AWAITING_CONSENT, CallStatus.APPROVED):
            raise UsageError(f"call {call_id!r} is {call.status.value}; it cannot be approved now")
        quorum = self.consent.quorum(call.name) if by == "user" else None
        previous = call.edited
        supersedes = None
        if arguments is not None:
            edited = dict(arguments)
            assert call.tool is not None
            errors = call.tool.validator.validate(edited)
            if errors:
                raise UsageError(
                    f"the edited arguments for {call_id!r} do not match the tool's schema: "
                    f"{describe_errors(errors)}",
                    rule="TOOL-21",
                )
            supersedes = call.fingerprint
            call.edited = edited
        try:
            decision = decide(
                call,
                approved=True,
                by=by,
                reason=reason,
                supersedes=supersedes,
                principal=principal,
                quorum=quorum,
                receipt=receipt,
            )
            decision = self._signed(call, decision)
            yield from ask("record_decision", decision.to_json())
        except BaseException:
            call.edited = previous  # not recorded: the approval did not happen
            raise
        if quorum is not None and quorum.requires > 1:
            recorded = yield from ask("decisions", self.thread_id, call_id)
            call.tally = tally(recorded, call.fingerprint, quorum, datetime.now(UTC))
            if not call.tally.holds:
                call.decision = None
                if call.status is CallStatus.APPROVED:
                    move(call, "ask")  # edited: the approvals of the old arguments are void
                self._updates.append(call_update(call))
                return decision
        call.decision = decision
        move(call, "approve")
        self._updates.append(call_update(call))
        return decision

    def decline_steps(
        self,
        call_id: str,
        *,
        by: DecidedBy = "user",
        reason: str | None = None,
        principal: Principal | None = None,
        receipt: Mapping[str, Any] | None = None,
    ) -> StoreSteps[Answer]:
        """Decline a call (``Driver.decline``): answered, saying who declined — or
        "outcome unknown" when its execution already started elsewhere."""
        call = self.call(call_id)
        if call.status.answered or call.status is CallStatus.EXECUTING:
            raise UsageError(f"call {call_id!r} is {call.status.value}; it cannot be declined now")
        return (
            yield from self._settle_steps(
                call,
                Answer.declined(call_id, by, reason),
                decision=decide(
                    call,
                    approved=False,
                    by=by,
                    reason=reason,
                    principal=principal,
                    receipt=receipt,
                ),
            )
        )

    def fail_steps(self, call_id: str, error: str) -> StoreSteps[Answer]:
        """Answer a call as failed without running it (``Driver.fail``)."""
        call = self.call(call_id)
        if call.status.answered:
            raise UsageError(f"call {call_id!r} is already answered")
        if call.status is CallStatus.EXECUTING:
            raise UsageError(
                f"call {call_id!r} is executing: its handler's return (or its failure) answers "
                "it; a call is never answered twice"
            )
        return (yield from self._settle_steps(call, Answer.failed(call_id, error)))

    def claim_steps(self, call_id: str) -> StoreSteps[tuple[PendingCall, JournalKey | None]]:
        """Take the right to execute; ``(call, None)`` when the call got its answer instead."""
        call = self.call(call_id)
        if call.status is not CallStatus.APPROVED:
            raise UsageError(
                f"call {call_id!r} is {call.status.value}: only an approved call executes"
                + (" (ask the user first)" if call.status is CallStatus.AWAITING_CONSENT else ""),
                rule="TOOL-22",
            )
        decision = call.decision
        if decision is None or not decision.approved or decision.fingerprint != call.fingerprint:
            raise UsageError(
                f"the recorded consent for {call_id!r} does not cover the arguments that would run",
                rule="TOOL-22",
            )
        yield from self._binding_steps(call, decision)
        key = JournalKey(self.thread_id, call_id, call.fingerprint)
        claim: ClaimResult = yield from ask("claim", key, tool=call.name)
        if claim.claim is Claim.ANSWERED:
            assert claim.answer is not None
            self._answer(call, Answer.from_json(claim.answer))
            return call, None
        if claim.claim is Claim.UNKNOWN:
            yield from self._unknown_steps(call, claim)
            return call, None
        move(call, "execute")
        self._updates.append(call_update(call))
        return call, key

    def _binding_steps(self, call: PendingCall, decision: ConsentDecision) -> StoreSteps[None]:
        """The approval binding, judged as the call is about to execute: the approved
        hash is the hash of what would run (APPROVE-1), the approval has not expired
        (APPROVE-2), and a quorum still holds in the store (APPROVE-3). A refusal
        puts the call back to awaiting consent: nothing ran, and approving again
        (or declining) is up to the application."""
        now = datetime.now(UTC)
        refusal: ApprovalRefused | None = None
        would_run = arguments_hash(call.executable)
        if decision.arguments_approved is not None and decision.arguments_approved != would_run:
            refusal = ApprovalRefused(
                call,
                "APPROVE-1",
                f"the arguments that would run (hash {would_run}) are not those approved "
                f"({decision.arguments_approved})",
            )
        elif decision.decided_by == "user":
            quorum = self.consent.quorum(call.name)
            if quorum.requires > 1:
                recorded = yield from ask("decisions", self.thread_id, call.call_id)
                call.tally = tally(recorded, call.fingerprint, quorum, now)
                if not call.tally.holds:
                    refusal = ApprovalRefused(
                        call,
                        "APPROVE-2" if call.tally.expired else "APPROVE-3",
                        f"{len(call.tally.principals)} of the {quorum.requires} approvals "
                        f"its tool requires hold now ({call.tally.expired} expired, "
                        f"{call.tally.unauthenticated} by unauthenticated principals)",
                    )
            elif decision.expired(now):
                refusal = ApprovalRefused(
                    call, "APPROVE-2", f"its approval expired at {decision.expires_at}"
                )
        if refusal is not None:
            call.decision = None
            move(call, "ask")
            self._updates.append(call_update(call))
            raise refusal

    def _record_steps(
        self, call: PendingCall, decision: ConsentDecision
    ) -> StoreSteps[ConsentDecision]:
        """A decision that answers nothing yet (an approval): recorded, then it holds."""
        decision = self._signed(call, decision)
        yield from ask("record_decision", decision.to_json())
        call.decision = decision
        return decision

    # -- answers: three ways in, one way to the thread ---------------------------------

    def _answer(self, call: PendingCall, answer: Answer) -> Answer:
        """Give ``call`` its answer in memory and in the thread; an answer is never replaced."""
        if call.answer is not None:
            return call.answer
        move(call, answer.outcome)
        call.answer = answer
        self._post(call, answer)
        self._updates.append(call_update(call, answer))
        return answer

    def _post(self, call: PendingCall, answer: Answer) -> None:
        """Put the answer's tool message in the thread, unless one already answers the call."""
        if self.thread.has_result(call.call_id):
            return
        message_id = f"result-{call.call_id}"
        n = 1
        while self.thread.has_message(message_id):
            n += 1
            message_id = f"result-{call.call_id}-{n}"
        message = answer.tool_message(message_id)
        if (receipts := self._receipts(call)) is not None:
            message["metadata"] = receipts
        if call.subagent_run_id is not None:
            message["subagentRunId"] = call.subagent_run_id
        self.thread.add_tool_message(message)

    def _signed(self, call: PendingCall, decision: ConsentDecision) -> ConsentDecision:
        """``decision`` with its signed receipt, when the conversation signs: made before
        the decision is recorded, so the ledger entry holds it (docs/receipts.md)."""
        if self.signer is None or decision.receipt is not None:
            return decision
        return dataclasses.replace(decision, receipt=decision_receipt(self.signer, call, decision))

    def _receipts(self, call: PendingCall) -> dict[str, Any] | None:
        """The tool message's receipts: the decision's (the one the ledger holds), and
        for a tool needing a quorum, one per approver counted when the call was
        claimed. ``None`` without a signer or a decision."""
        decision = call.decision
        if self.signer is None or decision is None:
            return None
        receipt = decision.receipt or decision_receipt(self.signer, call, decision)
        out: dict[str, Any] = {RECEIPT_KEY: dict(receipt)}
        counted = call.tally
        if decision.approved and counted is not None and counted.requires > 1 and counted.holds:
            out[QUORUM_KEY] = [dict(r) for r in counted.receipts]
        return out

    def _settle_steps(
        self,
        call: PendingCall,
        answer: Answer,
        *,
        decision: ConsentDecision | None = None,
        record: bool = True,
    ) -> StoreSteps[Answer]:
        """An answer that ran nothing: made durable, then given — unless the journal
        already holds something for the call, which then stands (and is returned)."""
        if decision is not None and record:
            decision = self._signed(call, decision)
        found: ClaimResult = yield from ask(
            "settle",
            JournalKey(self.thread_id, call.call_id, call.fingerprint),
            answer.to_json(),
            decision=decision.to_json() if decision is not None and record else None,
        )
        if found.claim is Claim.UNKNOWN:
            return (yield from self._unknown_steps(call, found))
        assert found.answer is not None
        if found.answer == answer.to_json():
            if decision is not None:
                call.decision = decision
            return self._answer(call, answer)
        return self._answer(call, Answer.from_json(found.answer))

    def executed_steps(
        self, call: PendingCall, key: JournalKey, answer: Answer
    ) -> StoreSteps[Answer]:
        """An execution's answer, made durable, then given — the answer that stands:
        ours, or the one recorded first over our intent (a replica that answered the
        call "outcome unknown" while it ran), so every reader agrees with the journal.

        If it cannot be recorded, ours is given in memory (the side effect happened)
        and the error raised; the conversation stops (nothing of it is saved), and a
        reload reads the intent without an answer: "outcome unknown", never a re-run.
        """
        try:
            standing = yield from ask("finish", key, answer.to_json())
        except BaseException as exc:  # a cancellation too: the side effect happened
            self._answer(call, answer)
            if not isinstance(exc, StoreError):
                raise
            raise StoreOutcomeUnknown(
                f"call {call.call_id!r} was executed and is answered, but its answer could not be "
                f"recorded ({exc}); the journal still holds its intent, so after a restart its "
                "outcome reads as unknown and it is not run again"
            ) from exc
        if isinstance(standing, Mapping) and dict(standing) != answer.to_json():
            return self._answer(call, Answer.from_json(standing))  # another answered first
        return self._answer(call, answer)

    def _unknown_steps(self, call: PendingCall, record: ClaimResult) -> StoreSteps[Answer]:
        """A call whose execution started and recorded no answer: never run again.

        An execution that started less than ``in_flight_wait`` seconds ago may
        still be running in another process: its answer is waited for (the
        journal polled, backing off) until that much time has passed since it
        started; an answer that arrives is this call's answer too.
        """
        deadline = (record.started_at or 0.0) + self.in_flight_wait
        pause = 0.02
        while (now := time.time()) < deadline:
            yield Pause(min(pause, deadline - now))
            pause = min(pause * 2, 0.5)
            found: ClaimResult | None = yield from ask("lookup", self.thread_id, call.call_id)
            if found is not None and found.claim is Claim.ANSWERED:
                assert found.answer is not None
                return self._answer(call, Answer.from_json(found.answer))
        started = datetime.fromtimestamp(record.started_at or 0, UTC)
        known: Answer | None = None
        note = ""
        if self.outcome_unknown is not None:
            try:
                known = self.outcome_unknown(call, started)
            except Exception as exc:  # the hook could not tell: the outcome stays unknown
                note = f"; the application's check of it failed ({describe_exception(exc)})"
            if known is not None and not isinstance(known, Answer):
                note = (
                    f"; the application's outcome_unknown hook returned "
                    f"{type(known).__name__}, not an Answer or None"
                )
                known = None
        if known is None:
            unknown = Answer.failed(
                call.call_id,
                f"outcome unknown: an execution of this call started at "
                f"{started.isoformat(timespec='seconds')} and recorded no result (the "
                "application may have stopped mid-call, or is still running it); it was not "
                f"run again{note}",
            )
            # given, not recorded: the intent stays open — the execution may still be
            # running in another replica, whose result is then what the journal keeps
            # (in_flight_wait= waits for it instead), and a later outcome_unknown check
            # may still establish what happened
            return self._answer(call, unknown)
            # recorded over the open intent, first answer wins: if the execution was still
            # running elsewhere and answers meanwhile, the answer recorded first stands for
            # both — the thread and the journal never disagree on a call
            standing = yield from ask(
                "finish",
                JournalKey(self.thread_id, call.call_id, record.fingerprint),
                unknown.to_json(),
            )
            if isinstance(standing, Mapping):
                return self._answer(call, Answer.from_json(standing))
            return self._answer(call, unknown)
        # the application established what happened: that is the execution's answer —
        # unless another answer was recorded first, which stands
        known = dataclasses.replace(known, call_id=call.call_id)
        assert record.fingerprint is not None
        standing = yield from ask(
            "finish", JournalKey(self.thread_id, call.call_id, record.fingerprint), known.to_json()
        )
        if isinstance(standing, Mapping) and dict(standing) != known.to_json():
            return self._answer(call, Answer.from_json(standing))
        return self._answer(call, known)
