"""The agent's check of a receipt before it acts on a decision (docs/receipts.md).

A resume entry saying ``resolved`` or a tool message answering a call is the
application's word; a receipt is its signed word, bound to one call or
interrupt of one thread and to the exact arguments decided on. The agent
checks it against what it is about to execute, step by step, each refusal
citing its rule: RCPT-1 malformed, RCPT-2 a key it does not trust, RCPT-3 a
signature that does not verify, RCPT-4 another thread's, call's or
interrupt's, RCPT-5 other arguments or another payload, RCPT-6 expired (or
issued in the future), RCPT-7 a decision that permits nothing, RCPT-8 fewer
distinct approvers than the quorum the agent requires.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from .._errors import ReceiptRejected, UsageError
from ..app._consent import counted_approver, parse_stamp, stamp
from ..app._ledger import Broken
from ..app._receipts import RECEIPT_KEY, Keyring, Statement, arguments_value, unb64url
from ..wire._canonical import CanonicalError, canonical_hash, canonical_json

__all__ = ["audit_receipts", "receipt_in_input", "verify_quorum", "verify_receipt"]

UNSET: Any = object()
"""A value not given: its hash is not checked."""
_UNSET = UNSET
_PERMITS = ("approved", "resolved")


def verify_receipt(
    receipt: Any,
    *,
    keys: Keyring,
    thread_id: str,
    call_id: str | None = None,
    interrupt_id: str | None = None,
    run_id: str | None = None,
    arguments: Any = _UNSET,
    payload: Any = _UNSET,
    proposed: Any = _UNSET,
    now: datetime | None = None,
    leeway: timedelta = timedelta(seconds=60),
    permits: bool = True,
) -> Statement:
    """Check ``receipt`` vouches for acting on a call or an interrupt; the statement.

    Give the thread and the call (``call_id``) or the interrupt
    (``interrupt_id``) it must be about, and ``run_id`` — the run that was
    interrupted (that proposed the call) — when the statement names one: a
    fixed interrupt id such as ``"confirm"`` recurs in every run; ``arguments`` — the arguments about to
    run, parsed — must hash to the receipt's ``argumentsHash``, and ``payload``
    (a resume entry's, ``None`` when it has none) to its ``payloadHash``.
    ``proposed`` — the arguments the agent itself proposed for the call — must
    hash to the receipt's ``argumentsShown`` when the approver edited them, to
    its ``argumentsHash`` otherwise: how an agent ties a frontend call's receipt
    to the call it made, an honest edit included (its ``arguments_shown`` says so).
    ``leeway`` forgives the signer's clock running that far ahead; ``permits``
    (default) refuses a receipt of a decline. Raises :class:`ReceiptRejected`
    naming the first rule the receipt fails, in the order of docs/receipts.md.
    """
    if call_id is None and interrupt_id is None:
        raise UsageError("verify_receipt needs the call_id or the interrupt_id it must be about")
    about = (
        f"call {call_id!r}" if call_id is not None else f"interrupt {interrupt_id!r}"
    ) + f" of thread {thread_id!r}"
    try:
        return _verify(
            receipt,
            keys,
            thread_id,
            call_id,
            interrupt_id,
            run_id,
            arguments,
            payload,
            proposed,
            now,
            leeway,
            permits,
        )
    except ReceiptRejected as exc:
        raise ReceiptRejected(
            exc.rule, exc.explanation, statement=exc.statement, about=about
        ) from None


def _verify(
    receipt: Any,
    keys: Keyring,
    thread_id: str,
    call_id: str | None,
    interrupt_id: str | None,
    run_id: str | None,
    arguments: Any,
    payload: Any,
    proposed: Any,
    now: datetime | None,
    leeway: timedelta,
    permits: bool,
) -> Statement:
    if not isinstance(receipt, Mapping):
        raise ReceiptRejected(
            "RCPT-1", "there is none (an object with 'statement' and 'signature')"
        )
    body = receipt.get("statement")
    statement = Statement.from_json(body)  # RCPT-1
    assert isinstance(body, Mapping)
    now = now or datetime.now(UTC)
    key = keys.key_for(statement, now)  # RCPT-2
    try:
        signature = unb64url(receipt.get("signature"))  # type: ignore[arg-type]
        signed = canonical_json(dict(body))
    except (ValueError, CanonicalError) as exc:
        raise ReceiptRejected("RCPT-1", f"the receipt cannot be read: {exc}") from None
    from cryptography.exceptions import InvalidSignature

    try:
        key.verify(signature, signed)
    except InvalidSignature:
        raise ReceiptRejected(
            "RCPT-3",
            f"the signature does not verify under key {statement.key_id!r}: the statement was "
            "altered after signing, or signed by another key",
            statement=statement,
        ) from None
    _check_subject(statement, thread_id, call_id, interrupt_id, run_id)  # RCPT-4
    _check_hash(statement, "argumentsHash", statement.arguments_hash, arguments)  # RCPT-5
    if statement.arguments_shown is not None:
        _check_hash(statement, "argumentsShown", statement.arguments_shown, proposed, "proposed")
    else:
        _check_hash(statement, "argumentsHash", statement.arguments_hash, proposed, "proposed")
    _check_hash(statement, "payloadHash", statement.payload_hash, payload)
    _check_time(statement, now, leeway)  # RCPT-6
    if permits and statement.decision not in _PERMITS:
        raise ReceiptRejected(
            "RCPT-7",
            f"the receipt records a {statement.decision!r} decision by "
            f"{statement.principal.id!r}: it permits nothing to run",
            statement=statement,
        )
    return statement


def verify_quorum(
    receipts: Any,
    *,
    keys: Keyring,
    thread_id: str,
    call_id: str,
    requires: int,
    arguments: Any = _UNSET,
    proposed: Any = _UNSET,
    now: datetime | None = None,
    leeway: timedelta = timedelta(seconds=60),
) -> tuple[Statement, ...]:
    """Check a quorum's receipts (a tool message's ``metadata["agui-tools/receipts"]``,
    one per approver): each as :func:`verify_receipt` checks one, and together
    from at least ``requires`` distinct principals (RCPT-8), counted as the
    application counts them: one person's two receipts (or two spellings of one id)
    are one approval, a principal nobody authenticated is none. Returns the
    statements."""
    if requires < 1:
        raise UsageError(f"a quorum requires at least 1 approval, not {requires}")
    about = f"call {call_id!r} of thread {thread_id!r}"
    if not isinstance(receipts, list):
        raise ReceiptRejected("RCPT-1", "there is no list of the quorum's receipts", about=about)
    statements = tuple(
        verify_receipt(
            r,
            keys=keys,
            thread_id=thread_id,
            call_id=call_id,
            arguments=arguments,
            proposed=proposed,
            now=now,
            leeway=leeway,
        )
        for r in receipts
    )
    named: dict[str, str] = {}
    for s in statements:
        key = counted_approver(s.principal)
        if key is not None:
            named.setdefault(key, s.principal.id)  # named as first seen
    approvers = sorted(named.values())
    if len(approvers) < requires:
        raise ReceiptRejected(
            "RCPT-8",
            f"{len(approvers)} distinct principal(s) approved ({', '.join(map(repr, approvers))}); "
            f"{requires} are required",
            about=about,
        )
    return statements


def _check_subject(
    statement: Statement,
    thread_id: str,
    call_id: str | None,
    interrupt_id: str | None,
    run_id: str | None,
) -> None:
    # the run: only when the statement names one (a receipt of no run's call has none)
    run = run_id if statement.run_id is not None else None
    for field, expected, found in (
        ("threadId", thread_id, statement.thread_id),
        ("toolCallId", call_id, statement.tool_call_id),
        ("interruptId", interrupt_id, statement.interrupt_id),
        ("runId", run, statement.run_id),
    ):
        if expected is not None and found != expected:
            raise ReceiptRejected(
                "RCPT-4",
                f"the receipt is about {field} {found!r}, not {expected!r}: it vouches for "
                "another decision",
                statement=statement,
            )


def _check_hash(
    statement: Statement, field: str, signed: str | None, value: Any, what: str = "would run"
) -> None:
    if value is _UNSET:
        return
    try:
        actual = canonical_hash(value)
    except CanonicalError as exc:
        raise UsageError(f"the {field} to check cannot be canonicalised: {exc}") from None
    if signed is None:
        raise ReceiptRejected(
            "RCPT-5",
            f"the receipt binds no {field}: it vouches for no exact value",
            statement=statement,
        )
    if signed != actual:
        raise ReceiptRejected(
            "RCPT-5",
            f"the receipt's {field} is {signed}, but what {what} hashes to {actual}: the "
            "value was changed after the decision",
            statement=statement,
        )


def _check_time(statement: Statement, now: datetime, leeway: timedelta) -> None:
    if now >= parse_stamp(statement.expires_at):
        raise ReceiptRejected(
            "RCPT-6",
            f"the receipt expired at {statement.expires_at} (now {stamp(now)})",
            statement=statement,
        )
    if parse_stamp(statement.issued_at) > now + leeway:
        raise ReceiptRejected(
            "RCPT-6",
            f"the receipt is issued at {statement.issued_at}, later than now ({stamp(now)}) "
            f"by more than the {leeway.total_seconds():g}s leeway",
            statement=statement,
        )


def receipt_in_input(
    run_input: Mapping[str, Any],
    *,
    call_id: str | None,
    interrupt_id: str | None,
    key: str = RECEIPT_KEY,
) -> tuple[Any, Any, Any]:
    """Where a run's input carries the receipt about an interrupt or a call:
    ``(receipt, arguments, payload)``. An interrupt's receipt and payload are its
    resume entry's; a call's receipt is its tool message's. The arguments are the
    ones the history gives the call — the agent's proposal (for an interrupt, the
    call it concerns, when ``call_id`` names it). What is missing is ``None``, or
    not to be checked. ``key``: the metadata key read (a quorum's list, say).

    Two resume entries for the interrupt (two tool messages for the call) are
    refused (RCPT-1): a receipt vouches for one, and an agent may act on the other."""
    receipt: Any = None
    arguments: Any = _UNSET
    payload: Any = _UNSET
    about = f"interrupt {interrupt_id!r}" if interrupt_id is not None else f"call {call_id!r}"
    if interrupt_id is not None:
        entries = [e for e in run_input.get("resume") or () if e.get("interruptId") == interrupt_id]
        _one_of(entries, "resume entries", about)
        for entry in entries:
            receipt, payload = _metadata_receipt(entry, key), entry.get("payload")
    replies = [
        m
        for m in run_input.get("messages") or ()
        if m.get("role") == "tool" and m.get("toolCallId") == call_id
    ]
    if interrupt_id is None:
        _one_of(replies, "tool messages", about)
        for message in replies:
            receipt = _metadata_receipt(message, key)
    for message in run_input.get("messages") or ():
        for call in message.get("toolCalls") or ():
            if call_id is not None and call.get("id") == call_id:
                text = (call.get("function") or {}).get("arguments")
                arguments = arguments_value(text if isinstance(text, str) else "")
    return receipt, arguments, payload


def _one_of(items: list[Any], what: str, about: str) -> None:
    if len(items) > 1:
        raise ReceiptRejected(
            "RCPT-1",
            f"the run's input has {len(items)} {what} for it, where one is expected: which "
            "one the receipt vouches for is not known",
            about=about,
        )


def _metadata_receipt(item: Mapping[str, Any], key: str) -> Any:
    metadata = item.get("metadata")
    return metadata.get(key) if isinstance(metadata, Mapping) else None


def audit_receipts(rows: Iterable[tuple[int, bytes]], keys: Keyring) -> tuple[int, Broken | None]:
    """How many receipts the ledger's entries hold that vouch for their entry, and
    the first entry whose receipt does not (``None``: every one does): signed by a key in ``keys`` that was current when it was
    issued, about the entry's thread, call or interrupt, naming its principal, its
    decision and — for an approval — its approved arguments' hash. Expiry is not
    judged: an audit reads receipts long after they stopped vouching for anything."""
    held = 0
    for seq, raw in rows:
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue  # the chain's own verification reports it
        if not isinstance(body, dict):
            continue
        for receipt, subject, expected in _receipted(body):
            ids = {k: v for k, v in subject.items() if isinstance(v, str)}
            try:
                issued = Statement.from_json(receipt.get("statement")).issued_at
                statement = verify_receipt(
                    receipt,
                    keys=keys,
                    thread_id=ids.get("thread_id", ""),
                    call_id=ids.get("call_id"),
                    interrupt_id=ids.get("interrupt_id"),
                    now=parse_stamp(issued),
                    permits=False,
                )
            except ReceiptRejected as exc:
                return held, Broken(seq, exc.rule, exc.explanation, ids=_named(ids))
            except (AttributeError, UsageError) as exc:
                problem = f"the receipt cannot be read: {exc}"
                return held, Broken(seq, "RCPT-1", problem, ids=_named(ids))
            found = statement.to_json()
            for field, value in expected.items():
                if value is not None and found.get(field) != value:
                    return held, Broken(
                        seq,
                        "RCPT-4",
                        f"the receipt's {field} is not the entry's",
                        str(value),
                        str(found.get(field)),
                        _named(ids),
                    )
            held += 1
    return held, None


def _named(ids: Mapping[str, str]) -> dict[str, str]:
    names = {"thread_id": "threadId", "call_id": "toolCallId", "interrupt_id": "interruptId"}
    return {names[k]: v for k, v in ids.items()}


def _receipted(body: Mapping[str, Any]) -> Iterator[tuple[Any, dict[str, Any], dict[str, Any]]]:
    """Each receipt a ledger entry holds: (receipt, what it must be about, the fields
    it must state as the entry does)."""
    thread_id = body.get("threadId")
    if body.get("kind") == "resume":
        for answer in body.get("resume") or ():
            if isinstance(answer, Mapping) and "receipt" in answer:
                subject = {"thread_id": thread_id, "interrupt_id": answer.get("interruptId")}
                expected = {
                    "principal": answer.get("principal"),
                    "payloadHash": answer.get("payload"),
                }
                yield answer["receipt"], subject, expected
        return
    if "receipt" not in body:
        return
    approved = body.get("approved") is True
    principal = body.get("principal") or {"id": body.get("decidedBy")}
    yield (
        body["receipt"],
        {"thread_id": thread_id, "call_id": body.get("toolCallId")},
        {
            "decision": "approved" if approved else "declined",
            "principal": principal,
            "argumentsHash": body.get("argumentsApproved") if approved else None,
        },
    )
