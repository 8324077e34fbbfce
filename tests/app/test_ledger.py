"""The approval ledger, principals, binding, quorum and expiry (docs/approvals.md).

Every decision names who made it and lands in the store's hash-chained ledger in
the same transaction; a call runs only on the arguments an unexpired quorum of
distinct principals approved; ``verify`` finds any changed byte of any entry.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from agui_tools._errors import (
    ApprovalRefused,
    ResumeOutcomeUnknown,
    StoreWriteFailed,
    UsageError,
)
from agui_tools.app import Driver
from agui_tools.app._calls import CallStatus
from agui_tools.app._consent import (
    UNAUTHENTICATED_USER,
    ConsentPolicy,
    Principal,
    Quorum,
)
from agui_tools.app._conversation import Conversation
from agui_tools.app._ledger import GENESIS, verify_ledger
from agui_tools.app._store import MemoryStore
from agui_tools.app._store_sqlite import SQLiteStore
from agui_tools.wire._canonical import canonical_hash

from ..helpers.conversation import CONFIRM, call, run
from ..helpers.ledger import opened_store

ALICE = Principal("alice@example.com", "Alice", authenticated_by="oidc")
BOB = Principal("bob@example.com", "Bob", authenticated_by="oidc")
ARGS = '{"orderId":"o-1","qty":2}'


def _pending(store: Any, *, quorum: Quorum | None = None, thread: str = "t1") -> Conversation:
    consent = ConsentPolicy(quorums={"confirm_order": quorum} if quorum else {})
    conv = Conversation(thread_id=thread, tools=[CONFIRM], consent=consent, store=store)
    conv.next_input()
    run(conv, *call("c1", "confirm_order", ARGS))
    Driver(conv).end_run()
    assert conv.call("c1").status is CallStatus.AWAITING_CONSENT
    return conv


def _restored(store: Any, quorum: Quorum | None, thread: str = "t1") -> Conversation:
    consent = ConsentPolicy(quorums={"confirm_order": quorum} if quorum else {})
    conv = Conversation(thread_id=thread, tools=[CONFIRM], consent=consent, store=store)
    Driver(conv).restore()
    return conv


def _entries(store: Any) -> list[dict[str, Any]]:
    return [orjson.loads(raw) for _, raw in store.ledger()]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    with opened_store(request, tmp_path) as opened:
        yield opened


# -- principals and what an entry records ---------------------------------------------


def test_an_approval_names_its_principal_and_the_arguments_hashes(store: Any) -> None:
    conv = _pending(store)
    decision = Driver(conv).approve("c1", principal=ALICE, arguments={"orderId": "o-1", "qty": 3})
    assert decision.principal == ALICE
    (entry,) = _entries(store)
    assert entry["principal"] == {
        "id": "alice@example.com",
        "displayName": "Alice",
        "authenticatedBy": "oidc",
    }
    assert entry["argumentsShown"] == canonical_hash({"orderId": "o-1", "qty": 2})
    assert entry["argumentsApproved"] == canonical_hash({"orderId": "o-1", "qty": 3})
    assert entry["threadId"] == "t1" and entry["toolCallId"] == "c1"
    assert entry["runId"] == conv.call("c1").run_id is not None
    assert entry["seq"] == 1 and entry["prev"] == GENESIS
    assert "editedArguments" not in entry  # values stay in the decision, hashes in the ledger
    assert b"o-1" not in store.ledger()[0][1]


def test_a_person_unnamed_is_recorded_unauthenticated_never_dressed_up(store: Any) -> None:
    conv = _pending(store)
    Driver(conv).decline("c1")
    (entry,) = _entries(store)
    assert entry["principal"] == UNAUTHENTICATED_USER.to_json() == {"id": "user"}
    assert entry["decidedBy"] == "user" and entry["approved"] is False
    assert "argumentsApproved" not in entry


def test_every_decision_is_an_entry_chained_to_the_one_before(store: Any) -> None:
    for n in range(3):
        conv = _pending(store, thread=f"t{n}")
        Driver(conv).approve("c1", principal=ALICE)
    entries = _entries(store)
    assert [e["seq"] for e in entries] == [1, 2, 3]
    assert [e["prev"] for e in entries] == [GENESIS, entries[0]["hash"], entries[1]["hash"]]
    report = verify_ledger(store.ledger())
    assert report.broken is None and report.entries == 3 and report.head == entries[2]["hash"]


def test_an_approval_not_recorded_leaves_no_entry_and_no_approval(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "app.sqlite")
    conv = _pending(store)
    store._db.execute("DROP TABLE ledger")  # the append fails inside the transaction
    with pytest.raises(StoreWriteFailed, match="no such table: ledger"):
        Driver(conv).approve("c1", principal=ALICE)
    assert conv.call("c1").status is CallStatus.AWAITING_CONSENT
    assert store.decisions("t1", "c1") == []  # rolled back with it: nothing half-recorded
    store.close()


# -- tampering: any byte --------------------------------------------------------------


def _tampered(raw: bytes, at: int) -> bytes:
    data = bytearray(raw)
    data[at] = (data[at] + 1) % 256 if data[at] != 0x7F else 0x20
    return bytes(data)


def test_any_single_byte_changed_in_any_entry_is_reported(tmp_path: Path) -> None:
    store = MemoryStore()
    for n in range(3):
        conv = _pending(store, thread=f"t{n}")
        Driver(conv).approve("c1", principal=BOB, reason="ok")
    rows = store.ledger()
    for index, (_, raw) in enumerate(rows):
        for at in range(len(raw)):
            changed = list(rows)
            changed[index] = (rows[index][0], _tampered(raw, at))
            report = verify_ledger(changed)
            assert report.broken is not None, (index, at)
            assert report.broken.index == index + 1
            assert report.entries == index


def test_a_removed_or_reordered_entry_breaks_the_chain() -> None:
    store = MemoryStore()
    for n in range(3):
        Driver(_pending(store, thread=f"t{n}")).approve("c1", principal=BOB)
    rows = store.ledger()
    gap = verify_ledger([rows[0], rows[2]])
    assert gap.broken is not None and gap.broken.rule == "LEDGER-4" and gap.broken.index == 3
    renumbered = [(1, rows[0][1]), (2, rows[2][1])]
    broken = verify_ledger(renumbered).broken
    assert broken is not None and broken.index == 2
    assert broken.ids is not None
    assert (broken.ids["threadId"], broken.ids["toolCallId"]) == ("t2", "c1")


def test_a_rewritten_entry_with_its_hash_recomputed_breaks_the_next_link() -> None:
    store = MemoryStore()
    for n in range(2):
        Driver(_pending(store, thread=f"t{n}")).approve("c1", principal=BOB)
    rows = store.ledger()
    from agui_tools.app._ledger import chained

    first = orjson.loads(rows[0][1])
    first["principal"] = {"id": "mallory"}
    forged, _ = chained(
        {k: v for k, v in first.items() if k not in ("seq", "prev", "hash")}, 1, GENESIS
    )
    broken = verify_ledger([(1, forged), rows[1]]).broken
    assert broken is not None and broken.index == 2 and broken.rule == "LEDGER-2"
    assert broken.expected != broken.found


# -- binding, quorum, expiry ----------------------------------------------------------


def test_a_quorum_call_waits_until_two_distinct_principals_approved(store: Any) -> None:
    conv = _pending(store, quorum=Quorum(requires=2))
    driver = Driver(conv)
    driver.approve("c1", principal=ALICE)
    assert conv.call("c1").status is CallStatus.AWAITING_CONSENT
    assert conv.call("c1").tally is not None and conv.call("c1").tally.principals == (ALICE.id,)
    driver.approve("c1", principal=ALICE)  # the same person twice is one approval
    assert conv.call("c1").status is CallStatus.AWAITING_CONSENT
    with pytest.raises(UsageError, match="TOOL-22"):
        driver.execute("c1", lambda args: "ran")
    driver.approve("c1", principal=BOB)
    assert conv.call("c1").status is CallStatus.APPROVED
    assert driver.execute("c1", lambda args: "ran").outcome == "executed"
    assert [e["rule"] for e in _entries(store)] == ["quorum 2"] * 3


@pytest.mark.parametrize(
    "again",
    [
        "Alice@Example.com",  # case
        " alice@example.com\t",  # spacing
        "alice\u200b@example.com",  # an invisible format character
        "\uff41lice@example.com",  # a fullwidth a: the same under NFKC
    ],
)
def test_one_person_under_a_respelt_id_is_one_approval_toward_a_quorum(
    store: Any, again: str
) -> None:
    conv = _pending(store, quorum=Quorum(requires=2))
    driver = Driver(conv)
    driver.approve("c1", principal=ALICE)
    driver.approve("c1", principal=Principal(again, "Alice", authenticated_by="oidc"))
    call_ = conv.call("c1")
    assert call_.status is CallStatus.AWAITING_CONSENT
    assert call_.tally is not None and call_.tally.principals == (ALICE.id,)
    with pytest.raises(UsageError, match="TOOL-22"):
        driver.execute("c1", lambda args: "ran")
    assert store.lookup("t1", "c1") is None
    driver.approve("c1", principal=BOB)
    assert driver.execute("c1", lambda args: "ran").outcome == "executed"


def test_unauthenticated_principals_do_not_make_a_quorum(store: Any) -> None:
    # `run --principal alice`, then `--principal bob`: one person typing two names
    conv = _pending(store, quorum=Quorum(requires=2))
    driver = Driver(conv)
    driver.approve("c1", principal=Principal("alice"))
    driver.approve("c1", principal=Principal("bob"))
    driver.approve("c1")  # the unauthenticated "user"
    driver.approve("c1", principal=ALICE)
    call_ = conv.call("c1")
    assert call_.status is CallStatus.AWAITING_CONSENT
    assert call_.tally is not None and call_.tally.principals == (ALICE.id,)
    assert call_.tally.unauthenticated == 3
    assert len(_entries(store)) == 4  # each recorded all the same
    assert store.lookup("t1", "c1") is None
    driver.approve("c1", principal=BOB)
    assert driver.execute("c1", lambda args: "ran").outcome == "executed"


def test_approvals_from_another_process_count_toward_the_quorum(store: Any) -> None:
    quorum = Quorum(requires=2)
    mine = _pending(store, quorum=quorum)
    Driver(mine).approve("c1", principal=ALICE)
    theirs = _restored(store, quorum)  # another replica, restoring the thread
    assert theirs.call("c1").status is CallStatus.AWAITING_CONSENT
    Driver(theirs).approve("c1", principal=BOB)
    assert theirs.call("c1").status is CallStatus.APPROVED
    again = _restored(store, quorum)
    assert again.call("c1").status is CallStatus.APPROVED  # the quorum is read back


def test_approvals_of_other_arguments_do_not_count(store: Any) -> None:
    conv = _pending(store, quorum=Quorum(requires=2))
    driver = Driver(conv)
    driver.approve("c1", principal=ALICE)
    driver.approve("c1", principal=BOB, arguments={"orderId": "o-1", "qty": 9})
    call_ = conv.call("c1")
    assert call_.status is CallStatus.AWAITING_CONSENT and call_.tally is not None
    assert call_.tally.principals == (BOB.id,)  # Alice approved qty 2, not 9
    driver.approve("c1", principal=ALICE)  # now of the edited arguments
    assert call_.status is CallStatus.APPROVED
    seen: list[Any] = []
    driver.execute("c1", seen.append)
    assert seen == [{"orderId": "o-1", "qty": 9}]


def test_an_expired_approval_is_refused_at_execution_and_the_call_waits_again(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    conv = _pending(store, quorum=Quorum(expires=timedelta(seconds=30)))
    driver = Driver(conv)
    decision = driver.approve("c1", principal=ALICE)
    assert decision.expires_at is not None
    _advance(monkeypatch, seconds=31)
    ran: list[Any] = []
    with pytest.raises(ApprovalRefused, match=r"\[APPROVE-2\].*expired") as caught:
        driver.execute("c1", ran.append)
    assert caught.value.call_id == "c1"
    assert ran == [] and conv.call("c1").status is CallStatus.AWAITING_CONSENT
    assert store.lookup("t1", "c1") is None  # no intent: nothing was claimed
    driver.approve("c1", principal=ALICE)
    assert driver.execute("c1", ran.append).outcome == "executed" and len(ran) == 1


def test_an_expired_quorum_member_no_longer_counts(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    conv = _pending(store, quorum=Quorum(requires=2, expires=60))
    driver = Driver(conv)
    driver.approve("c1", principal=ALICE)
    _advance(monkeypatch, seconds=50)
    driver.approve("c1", principal=BOB)
    assert conv.call("c1").status is CallStatus.APPROVED
    _advance(monkeypatch, seconds=61)  # Alice's approval is 61 s old, Bob's 11 s
    with pytest.raises(ApprovalRefused, match=r"\[APPROVE-2\] .*1 of the 2 approvals"):
        driver.execute("c1", lambda args: "ran")
    assert store.lookup("t1", "c1") is None


def test_changed_arguments_after_approval_are_refused(store: Any) -> None:
    conv = _pending(store)
    driver = Driver(conv)
    driver.approve("c1", principal=ALICE)
    conv.call("c1").edited = {"orderId": "o-1", "qty": 1000}  # behind the approval's back
    with pytest.raises(UsageError, match="TOOL-22"):
        driver.execute("c1", lambda args: "ran")
    assert store.lookup("t1", "c1") is None


def test_an_approved_hash_that_does_not_match_is_refused_by_APPROVE_1(store: Any) -> None:
    import dataclasses

    conv = _pending(store)
    driver = Driver(conv)
    driver.approve("c1", principal=ALICE)
    call_ = conv.call("c1")
    assert call_.decision is not None
    call_.decision = dataclasses.replace(call_.decision, arguments_approved="sha256:" + "1" * 64)
    with pytest.raises(ApprovalRefused, match=r"\[APPROVE-1\]"):
        driver.execute("c1", lambda args: "ran")
    assert store.lookup("t1", "c1") is None


def test_a_quorum_of_less_than_one_or_no_lifetime_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Quorum(requires=0)
    with pytest.raises(ValueError, match="some time"):
        Quorum(expires=0)


def test_a_journal_file_from_before_the_ledger_gains_one(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    SQLiteStore(path).close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE ledger")
    db.commit()
    db.close()
    store = SQLiteStore(path)
    Driver(_pending(store)).approve("c1", principal=ALICE)
    assert len(store.ledger()) == 1
    store.close()


def test_a_postgres_store_from_before_the_ledger_is_upgraded_and_keeps_its_decisions(
    postgres_dsn: str,
) -> None:
    import psycopg

    from agui_tools.app._store_postgres import PostgresStore

    store = PostgresStore(postgres_dsn, max_size=1)
    _pending(store)
    store.close()
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:  # as schema version 1 left it
        conn.execute("DROP TABLE agui_ledger")
        conn.execute("UPDATE agui_schema SET version = 1")
    store = PostgresStore(postgres_dsn, max_size=1)
    assert store.ledger() == []
    restored = _restored(store, None)
    assert restored.call("c1").status is CallStatus.AWAITING_CONSENT
    Driver(restored).approve("c1", principal=ALICE)
    assert [e["seq"] for e in _entries(store)] == [1]
    store.close()


def _advance(monkeypatch: pytest.MonkeyPatch, *, seconds: float) -> None:
    """Set the clock the approvals and their binding read to ``seconds`` past now."""
    from datetime import UTC, datetime

    import agui_tools.app._answering as answering
    import agui_tools.app._disposition as disposition

    base = timedelta(seconds=seconds)

    class Later(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return datetime.now(tz or UTC) + base

    monkeypatch.setattr(answering, "datetime", Later)
    monkeypatch.setattr(disposition, "datetime", Later)


def test_an_integer_beyond_every_double_is_approved_bound_and_run(store: Any) -> None:
    # arguments parse big integers exactly: their fingerprint and hash once failed
    # (orjson's 64 bits, a double's overflow) and the call could never be approved
    conv = Conversation(thread_id="t1", tools=[CONFIRM], store=store)
    conv.next_input()
    huge = 10**400
    run(conv, *call("c1", "confirm_order", f'{{"orderId":"o-1","qty":{huge}}}'))
    driver = Driver(conv)
    driver.end_run()
    driver.approve("c1", principal=ALICE)
    (entry,) = _entries(store)
    assert entry["argumentsApproved"] == canonical_hash({"orderId": "o-1", "qty": huge})
    assert entry["argumentsApproved"] != canonical_hash({"orderId": "o-1", "qty": huge + 1})
    assert driver.execute("c1", lambda args: f"qty {args['qty'] == huge}").outcome == "executed"


# -- one resume, one entry ---------------------------------------------------------


def _interrupted(store: Any) -> Conversation:
    """A replica's view of thread ``t-r``, whose last run stopped on interrupt ``i1``."""
    conv = Conversation(thread_id="t-r", tools=[CONFIRM], store=store)
    if Driver(conv).restore():
        return conv
    conv.next_input(user="refund")
    finish = {"outcome": {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "x"}]}}
    run(conv, *call("c9", "refund", '{"order":"A1"}'), finish=finish)
    Driver(conv).end_run()
    return conv


def test_two_replicas_sending_one_resume_leave_exactly_one_ledger_entry(
    open_store: Any,
) -> None:
    """Replicas A and B both send the resume of ``i1``: A's claim wins, B's finds it and
    sends nothing — and only the winning claim's decision is in the ledger (kept in the
    claim's own write), on every store."""
    a, b = _interrupted(open_store()), _interrupted(open_store())
    entry = {"interruptId": "i1", "status": "resolved", "payload": {"ok": True}}
    a.next_input(resume=[entry])
    b.next_input(resume=[entry])
    Driver(a).perform("resume", a.claim_resume_steps())
    with pytest.raises(ResumeOutcomeUnknown):
        Driver(b).perform("resume", b.claim_resume_steps())
    store = open_store()
    resumes = [e for e in _entries(store) if e.get("kind") == "resume"]
    assert [r["runId"] for r in resumes] == [a.pending_input["runId"]]
    assert verify_ledger(store.ledger()).broken is None
