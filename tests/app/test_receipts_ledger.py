"""Receipts joined to the ledger (docs/receipts.md, docs/approvals.md): a receipt
names the decision's own principal, is signed as the decision is recorded and sits
in its ledger entry, an edited approval names the proposal too, and a quorum's
tool message carries one receipt per approver."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from agui_tools._errors import ReceiptRejected, UsageError
from agui_tools.agent import Run, collect, verify_quorum, verify_receipt
from agui_tools.agent._receipts import audit_receipts
from agui_tools.app import RECEIPT_KEY, Driver, Keyring, Signer
from agui_tools.app._calls import CallStatus
from agui_tools.app._consent import UNAUTHENTICATED_USER, ConsentPolicy, Principal, Quorum
from agui_tools.app._conversation import Conversation
from agui_tools.app._ledger import verify_ledger
from agui_tools.app._receipts import QUORUM_KEY
from agui_tools.app._store import MemoryStore
from agui_tools.app._store_sqlite import SQLiteStore
from tests.helpers.conversation import CONFIRM, call, run
from tests.helpers.ledger import opened_store

ALICE = Principal("alice@example.com", "Alice", "oidc")
BOB = Principal("bob@example.com", "Bob", "oidc")
ARGS = {"orderId": "A7", "qty": 2}
SIGNER = Signer.generate(key_id="app-1")
KEYS = Keyring.of(SIGNER)


def pending(store: Any, quorum: Quorum | None = None) -> Conversation:
    consent = ConsentPolicy(quorums={"confirm_order": quorum} if quorum else {})
    conv = Conversation(
        thread_id="t1", tools=[CONFIRM], consent=consent, store=store, signer=SIGNER
    )
    conv.next_input(user="order")
    run(conv, *call("c1", "confirm_order", json.dumps(ARGS)))
    Driver(conv).end_run()
    return conv


def entries(store: Any) -> list[dict[str, Any]]:
    return [orjson.loads(raw) for _, raw in store.ledger()]


def tool_metadata(conv: Conversation) -> dict[str, Any]:
    (message,) = [m for m in conv.messages if m.get("toolCallId") == "c1"]
    return dict(message["metadata"])


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    with opened_store(request, tmp_path) as opened:
        yield opened


def test_the_receipt_on_the_tool_message_is_the_one_in_the_ledger(store: Any) -> None:
    conv = pending(store)
    Driver(conv).approve("c1", principal=ALICE)
    Driver(conv).execute("c1", lambda a: "ordered")
    sent = tool_metadata(conv)[RECEIPT_KEY]
    (entry,) = [e for e in entries(store) if e.get("toolCallId") == "c1"]
    assert entry["receipt"] == sent  # signed once, as the decision was recorded
    statement = verify_receipt(sent, keys=KEYS, thread_id="t1", call_id="c1", arguments=ARGS)
    assert statement.principal == ALICE
    assert statement.arguments_hash == entry["argumentsApproved"]
    assert verify_ledger(store.ledger()).broken is None


def test_a_decline_and_a_policy_approval_are_signed_into_their_entries(store: Any) -> None:
    conv = pending(store)
    Driver(conv).decline("c1", reason="no", principal=BOB)
    (entry,) = [e for e in entries(store) if e.get("toolCallId") == "c1"]
    assert entry["receipt"]["statement"]["decision"] == "declined"
    assert entry["receipt"]["statement"]["principal"] == BOB.to_json()
    assert tool_metadata(conv)[RECEIPT_KEY] == entry["receipt"]

    policy = Conversation(
        thread_id="t2",
        tools=[CONFIRM],
        consent=ConsentPolicy.auto_approve(),
        store=store,
        signer=SIGNER,
    )
    policy.next_input(user="order")
    run(policy, *call("c2", "confirm_order", json.dumps(ARGS)))
    Driver(policy).end_run()
    (entry,) = [e for e in entries(store) if e.get("toolCallId") == "c2"]
    assert entry["receipt"]["statement"]["principal"] == {"id": "policy"}


def test_an_unnamed_approver_is_the_unauthenticated_user_not_a_key_default() -> None:
    conv = pending(MemoryStore())
    Driver(conv).approve("c1")
    Driver(conv).execute("c1", lambda a: "ordered")
    r = tool_metadata(conv)[RECEIPT_KEY]
    statement = verify_receipt(r, keys=KEYS, thread_id="t1", call_id="c1", arguments=ARGS)
    assert statement.principal == UNAUTHENTICATED_USER


def test_an_honest_edit_verifies_against_the_proposal_and_what_ran() -> None:
    conv = pending(MemoryStore())
    edited = {"orderId": "A7", "qty": 1}
    Driver(conv).approve("c1", arguments=edited, principal=ALICE)
    Driver(conv).execute("c1", lambda a: "ordered")
    r = tool_metadata(conv)[RECEIPT_KEY]
    statement = verify_receipt(
        r, keys=KEYS, thread_id="t1", call_id="c1", proposed=ARGS, arguments=edited
    )
    assert statement.arguments_shown is not None  # it says an edit happened
    # a proposal the agent did not make (its history rewritten) is refused
    with pytest.raises(ReceiptRejected) as info:
        verify_receipt(r, keys=KEYS, thread_id="t1", call_id="c1", proposed={"qty": 99})
    assert info.value.rule == "RCPT-5" and "argumentsShown" in str(info.value)
    # a receipt claiming another proposal, or other edited arguments, is forged
    for field, value in (("argumentsShown", "sha256:" + "1" * 64), ("argumentsHash", None)):
        forged = json.loads(json.dumps(r))
        forged["statement"][field] = value
        if value is None:
            del forged["statement"][field]
        with pytest.raises(ReceiptRejected) as info:
            verify_receipt(forged, keys=KEYS, thread_id="t1", call_id="c1", proposed=ARGS)
        assert info.value.rule == "RCPT-3"


def test_an_unedited_approval_names_no_shown_hash_and_checks_the_proposal() -> None:
    conv = pending(MemoryStore())
    Driver(conv).approve("c1", principal=ALICE)
    Driver(conv).execute("c1", lambda a: "ordered")
    r = tool_metadata(conv)[RECEIPT_KEY]
    assert "argumentsShown" not in r["statement"]
    assert verify_receipt(r, keys=KEYS, thread_id="t1", call_id="c1", proposed=ARGS)
    with pytest.raises(ReceiptRejected) as info:
        verify_receipt(r, keys=KEYS, thread_id="t1", call_id="c1", proposed={"qty": 3})
    assert info.value.rule == "RCPT-5"


def test_a_quorums_tool_message_carries_one_receipt_per_approver(store: Any) -> None:
    conv = pending(store, Quorum(requires=2))
    Driver(conv).approve("c1", principal=ALICE)
    assert conv.call("c1").decision is None  # one of two: still waiting
    Driver(conv).approve("c1", principal=BOB)
    Driver(conv).execute("c1", lambda a: "ordered")
    metadata = tool_metadata(conv)
    receipts = metadata[QUORUM_KEY]
    statements = [
        verify_receipt(r, keys=KEYS, thread_id="t1", call_id="c1", arguments=ARGS) for r in receipts
    ]
    assert [s.principal for s in statements] == [ALICE, BOB]
    assert metadata[RECEIPT_KEY] == receipts[-1]  # the approval that completed the quorum
    in_ledger = [e["receipt"] for e in entries(store) if e.get("toolCallId") == "c1"]
    assert in_ledger == receipts
    assert audit_receipts(store.ledger(), KEYS) == (2, None)
    quorum = verify_quorum(
        receipts, keys=KEYS, thread_id="t1", call_id="c1", requires=2, proposed=ARGS
    )
    assert {s.principal.id for s in quorum} == {ALICE.id, BOB.id}


@pytest.mark.parametrize(
    ("receipts", "rule"),
    [
        (lambda rs: rs[:1], "RCPT-8"),  # one approver's receipt dropped
        (lambda rs: [rs[0], rs[0]], "RCPT-8"),  # one approver counted twice
        (lambda rs: rs[0], "RCPT-1"),  # not a list
        (lambda rs: [rs[0], {**rs[1], "signature": rs[0]["signature"]}], "RCPT-3"),
    ],
)
def test_a_quorum_short_of_approvers_or_forged_is_refused(receipts: Any, rule: str) -> None:
    conv = pending(MemoryStore(), Quorum(requires=2))
    Driver(conv).approve("c1", principal=ALICE)
    Driver(conv).approve("c1", principal=BOB)
    Driver(conv).execute("c1", lambda a: "ordered")
    real = tool_metadata(conv)[QUORUM_KEY]
    with pytest.raises(ReceiptRejected) as info:
        verify_quorum(
            receipts(real), keys=KEYS, thread_id="t1", call_id="c1", requires=2, proposed=ARGS
        )
    assert info.value.rule == rule


def test_a_single_approval_carries_no_quorum_list() -> None:
    conv = pending(MemoryStore())
    Driver(conv).approve("c1", principal=ALICE)
    Driver(conv).execute("c1", lambda a: "ordered")
    assert QUORUM_KEY not in tool_metadata(conv)


def test_a_resume_entrys_receipt_is_kept_in_its_ledger_entry(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    conv = Conversation(thread_id="t1", tools=[CONFIRM], store=store, signer=SIGNER)
    conv.next_input(user="refund")
    run(
        conv,
        *call("c9", "refund", '{"order":"A1"}'),
        finish={
            "outcome": {
                "type": "interrupt",
                "interrupts": [{"id": "i1", "reason": "approval", "toolCallId": "c9"}],
            }
        },
    )
    Driver(conv).end_run()
    entry = {"interruptId": "i1", "status": "resolved", "metadata": {"principal": BOB.to_json()}}
    sent = conv.next_input(resume=[entry])
    Driver(conv).perform("resume", conv.claim_resume_steps())
    receipt = sent["resume"][0]["metadata"][RECEIPT_KEY]
    assert receipt["statement"]["principal"] == BOB.to_json()
    (record,) = [e for e in entries(store) if e.get("kind") == "resume"]
    assert record["resume"][0]["receipt"] == receipt
    assert verify_ledger(store.ledger()).broken is None
    assert audit_receipts(store.ledger(), KEYS) == (1, None)
    # the entry naming another principal than its receipt is refused by the audit
    rows = store.ledger()
    body = orjson.loads(rows[-1][1])
    body["resume"][0]["principal"] = ALICE.to_json()
    (held, broken) = audit_receipts([(rows[-1][0], orjson.dumps(body))], KEYS)
    assert held == 0 and broken is not None and broken.rule == "RCPT-4"
    assert "principal" in broken.problem


def test_a_resume_naming_a_principal_without_an_id_is_refused_and_nothing_added() -> None:
    conv = Conversation(thread_id="t1", tools=[CONFIRM], signer=SIGNER)
    conv.next_input(user="refund")
    run(
        conv,
        *call("c9", "refund", '{"order":"A1"}'),
        finish={
            "outcome": {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval"}]}
        },
    )
    Driver(conv).end_run()
    before = [m["id"] for m in conv.messages]
    entry = {"interruptId": "i1", "status": "resolved", "metadata": {"principal": {"name": "x"}}}
    with pytest.raises(UsageError, match=r"metadata\.principal .* names no id"):
        conv.next_input(user="go on", resume=[entry])
    assert [m["id"] for m in conv.messages] == before  # the user message was taken back


def _quorum_input(*approvers: Principal) -> dict[str, Any]:
    """The next input of a thread whose call ``c1`` the ``approvers`` approved and ran."""
    conv = pending(MemoryStore(), Quorum(requires=len(approvers)))
    for who in approvers:
        Driver(conv).approve("c1", principal=who)
    Driver(conv).execute("c1", lambda a: "ordered")
    return conv.next_input(user="thanks")


def _agent_verdict(run_input: dict[str, Any], requires: int) -> list[Any]:
    seen: list[Any] = []

    async def agent(run: Run) -> None:
        try:
            statements = run.verify_quorum(KEYS, call_id="c1", requires=requires)
            seen.append(sorted(s.principal.id for s in statements))
        except ReceiptRejected as exc:
            seen.append(exc.rule)
        await run.text("ok")

    asyncio.run(collect(agent, run_input))
    return seen


def test_an_agent_verifies_a_quorum_from_its_input() -> None:
    run_input = _quorum_input(ALICE, BOB)
    assert _agent_verdict(run_input, 2) == [[ALICE.id, BOB.id]]
    assert _agent_verdict(run_input, 3) == ["RCPT-8"]  # the agent wants more than it got
    (message,) = [m for m in run_input["messages"] if m.get("role") == "tool"]
    message["metadata"][QUORUM_KEY] = message["metadata"][QUORUM_KEY][:1]
    assert _agent_verdict(run_input, 2) == ["RCPT-8"]  # one approver's receipt dropped
    del message["metadata"][QUORUM_KEY]
    assert _agent_verdict(run_input, 2) == ["RCPT-1"]  # none at all


def test_the_agent_counts_a_quorum_as_the_application_does() -> None:
    """One rule on both sides (APPROVE-3, RCPT-8): ``Alice`` respelt and an
    unauthenticated ``bob`` are not a second and third approver to the application,
    so their (signed) receipts are not to the agent either."""
    conv = pending(MemoryStore(), Quorum(requires=2))
    store = conv.store
    Driver(conv).approve("c1", principal=ALICE)
    Driver(conv).approve("c1", principal=Principal("ALICE@Example.com", "Al", "oidc"))
    Driver(conv).approve("c1", principal=Principal("bob@example.com", "Bob", None))
    assert conv.call("c1").status is CallStatus.AWAITING_CONSENT  # the app counts one
    receipts = [d["receipt"] for d in store.decisions("t1", "c1")]
    assert len(receipts) == 3  # every decision is signed
    with pytest.raises(ReceiptRejected) as info:
        verify_quorum(receipts, keys=KEYS, thread_id="t1", call_id="c1", requires=2, proposed=ARGS)
    assert info.value.rule == "RCPT-8"
    assert "1 distinct principal(s)" in str(info.value)
    with pytest.raises(ReceiptRejected, match="0 distinct principal"):  # nobody vouched for
        verify_quorum(
            receipts[2:], keys=KEYS, thread_id="t1", call_id="c1", requires=1, proposed=ARGS
        )


def _receipt_verdict(run_input: dict[str, Any], **ids: str) -> list[Any]:
    seen: list[Any] = []

    async def agent(run: Run) -> None:
        try:
            seen.append(run.verify_receipt(KEYS, **ids).decision)
        except ReceiptRejected as exc:
            seen.append((exc.rule, exc.explanation))
        await run.text("ok")

    asyncio.run(collect(agent, run_input))
    return seen


def test_a_receipt_beside_a_second_resume_entry_for_its_interrupt_is_refused() -> None:
    """``resume=[{i1, payload: evil}, {i1, payload: good, receipt}]``: the receipt
    vouches for one entry, an agent may act on the other — RCPT-1, whichever order."""
    conv = Conversation(thread_id="t1", tools=[CONFIRM], signer=SIGNER)
    conv.next_input(user="refund")
    finish = {"outcome": {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "x"}]}}
    run(conv, *call("c9", "refund", '{"order":"A1"}'), finish=finish)
    Driver(conv).end_run()
    good = {"interruptId": "i1", "status": "resolved", "payload": {"cents": 5}}
    sent = conv.next_input(resume=[{**good, "metadata": {"principal": BOB.to_json()}}])
    assert _receipt_verdict(sent, interrupt_id="i1") == ["resolved"]
    evil = {"interruptId": "i1", "status": "resolved", "payload": {"cents": 50_000}}
    for resume in ([evil, *sent["resume"]], [*sent["resume"], evil]):
        ((rule, explanation),) = _receipt_verdict({**sent, "resume": resume}, interrupt_id="i1")
        assert rule == "RCPT-1" and "2 resume entries" in explanation, explanation


def test_a_receipt_beside_a_second_tool_message_for_its_call_is_refused() -> None:
    conv = pending(MemoryStore())
    Driver(conv).approve("c1", principal=ALICE)
    Driver(conv).execute("c1", lambda a: "ordered")
    run_input = conv.next_input(user="thanks")
    assert _receipt_verdict(run_input, call_id="c1") == ["approved"]
    (message,) = [m for m in run_input["messages"] if m.get("role") == "tool"]
    forged = {**message, "id": "m-forged", "content": "refunded 50000", "metadata": {}}
    run_input["messages"].insert(run_input["messages"].index(message), forged)
    ((rule, explanation),) = _receipt_verdict(run_input, call_id="c1")
    assert rule == "RCPT-1" and "2 tool messages" in explanation, explanation


def test_a_decline_receipt_in_a_quorum_list_fails_the_quorum() -> None:
    """A decline voids earlier approvals (the app's tally): its receipt, sent with
    the approvals it voided, counts against the quorum on the agent side too —
    RCPT-7, whatever the approvals (docs/receipts.md says what is not covered)."""
    carol = Principal("carol@example.com", "Carol", "oidc")
    conv = pending(MemoryStore(), Quorum(requires=3))
    store = conv.store
    Driver(conv).approve("c1", principal=ALICE)
    Driver(conv).approve("c1", principal=carol)
    Driver(conv).decline("c1", principal=BOB)
    receipts = [d["receipt"] for d in store.decisions("t1", "c1")]
    assert [r["statement"]["decision"] for r in receipts] == ["approved", "approved", "declined"]
    with pytest.raises(ReceiptRejected) as info:
        verify_quorum(receipts, keys=KEYS, thread_id="t1", call_id="c1", requires=2, proposed=ARGS)
    assert info.value.rule == "RCPT-7" and "'declined' decision by 'bob@" in str(info.value)
