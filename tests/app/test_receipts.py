"""Receipts (docs/receipts.md): the statement, its signature, the keys, the test
vectors, the verifier's refusal by rule (RCPT-1 … RCPT-7), and the conversation's
hooks — a decided call's tool message and a resolved resume entry carry one."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_tools._errors import ReceiptRejected, UsageError
from agui_tools.agent import verify_receipt
from agui_tools.agent._receipts import UNSET
from agui_tools.app import RECEIPT_KEY, Driver, Keyring, Signer, Statement
from agui_tools.app._consent import ConsentPolicy, Principal
from agui_tools.app._conversation import Conversation
from agui_tools.app._receipts import b64url, unb64url
from agui_tools.wire._canonical import canonical_hash, canonical_json
from tests.helpers.conversation import CONFIRM, LOOKUP, call, run

VECTORS = json.loads(
    (Path(__file__).parents[1] / "data" / "receipts" / "vectors.json").read_text(encoding="utf-8")
)
SEED = unb64url(VECTORS["privateKeySeed"])
NOW = datetime(2026, 12, 2, 9, 10, tzinfo=UTC)
ARGS = {"orderId": "A7", "qty": 2}
ADA = Principal("u-1", "Ada", "oidc")


def signer(**kw: Any) -> Signer:
    return Signer.from_bytes(SEED, key_id="app-2026-12", **kw)


def receipt(**fields: Any) -> dict[str, Any]:
    """A receipt the vectors' key issued at ``NOW`` for call c1 of thread t1 (``fields``
    override the statement's)."""
    s = signer()
    base = s.statement(
        "approved",
        thread_id="t1",
        principal=ADA,
        now=NOW - timedelta(minutes=1),
        tool_call_id="c1",
        tool="confirm_order",
        arguments_hash=canonical_hash(ARGS),
    )
    return s.sign(dataclasses.replace(base, **fields))


def check(r: Any, **kw: Any) -> Statement:
    kw.setdefault("keys", Keyring.of(signer()))
    kw.setdefault("thread_id", "t1")
    kw.setdefault("call_id", "c1")
    kw.setdefault("arguments", ARGS)
    kw.setdefault("now", NOW)
    return verify_receipt(r, **kw)


# -- the vectors: another implementation checks itself against these ---------------------


def test_the_vectors_key_is_rfc_8032_test_1() -> None:
    # RFC 8032 §7.1 TEST 1: the empty message's signature under this seed
    key = ed25519.Ed25519PrivateKey.from_private_bytes(SEED)
    assert (
        key.sign(b"")
        .hex()
        .startswith("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e0652249")
    )
    assert b64url(key.public_key().public_bytes_raw()) == VECTORS["publicKey"]


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: v["name"])
def test_each_vector_signs_to_its_bytes_and_verifies(vector: dict[str, Any]) -> None:
    statement = Statement.from_json(vector["statement"])
    assert statement.to_json() == vector["statement"]
    assert canonical_json(vector["statement"]).decode() == vector["canonical"]
    assert signer().sign(statement)["signature"] == vector["signature"]
    inputs = vector["inputs"]
    assert statement.arguments_hash == canonical_hash(inputs["arguments"])
    found = verify_receipt(
        {"statement": vector["statement"], "signature": vector["signature"]},
        keys=Keyring.from_json(VECTORS["keys"]),
        thread_id=statement.thread_id,
        call_id=statement.tool_call_id,
        interrupt_id=statement.interrupt_id,
        now=NOW,
        **inputs,
    )
    assert found == statement


# -- the verifier: accepts the real one, refuses each forgery by its rule -------------


def test_the_real_receipt_is_accepted() -> None:
    statement = check(receipt())
    assert statement.decision == "approved" and statement.tool_call_id == "c1"


@pytest.mark.parametrize(
    ("bad", "rule", "says"),
    [
        (None, "RCPT-1", "there is none"),
        ({"statement": "x", "signature": "y"}, "RCPT-1", "not an object"),
        ({"statement": {"version": 2, "alg": "Ed25519"}}, "RCPT-1", "version 2"),
        ({"statement": {"version": 1, "alg": "RS256"}}, "RCPT-1", "'RS256'"),
    ],
)
def test_a_malformed_receipt_is_rcpt_1(bad: Any, rule: str, says: str) -> None:
    with pytest.raises(ReceiptRejected) as info:
        check(bad)
    assert info.value.rule == rule and says in str(info.value)
    assert "call 'c1' of thread 't1'" in str(info.value)


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("threadId", 7, "'threadId' is missing or not text"),
        ("decision", "maybe", "decision 'maybe'"),
        ("issuedAt", "yesterday", "not an RFC 3339 time"),
        ("principal", {"name": "x"}, "no principal"),
        ("toolCallId", ["c1"], "'toolCallId' is not text"),
    ],
)
def test_each_malformed_field_is_named(field: str, value: Any, says: str) -> None:
    r = receipt()
    r["statement"][field] = value
    with pytest.raises(ReceiptRejected, match=says) as info:
        check(r)
    assert info.value.rule == "RCPT-1"


def test_a_bad_signature_text_is_rcpt_1() -> None:
    r = receipt()
    r["signature"] = "not base64url=="
    with pytest.raises(ReceiptRejected) as info:
        check(r)
    assert info.value.rule == "RCPT-1"


def test_an_unknown_key_is_rcpt_2() -> None:
    r = Signer.generate(key_id="attacker").sign(
        Statement.from_json({**receipt()["statement"], "keyId": "attacker"})
    )
    with pytest.raises(ReceiptRejected, match="'attacker' is not one this agent trusts") as info:
        check(r)
    assert info.value.rule == "RCPT-2"


def test_another_key_claiming_the_trusted_id_is_rcpt_3() -> None:
    forged = Signer.generate(key_id="app-2026-12").sign(Statement.from_json(receipt()["statement"]))
    with pytest.raises(ReceiptRejected) as info:
        check(forged)
    assert info.value.rule == "RCPT-3"


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s["principal"].update(id="admin"),
        lambda s: s.update(expiresAt="2030-01-01T00:00:00.000Z"),
        lambda s: s.update(extra="signed fields are all of them"),
    ],
    ids=["principal", "expiry", "an added field"],
)
def test_a_statement_edited_after_signing_is_rcpt_3(edit: Any) -> None:
    r = receipt()
    edit(r["statement"])
    with pytest.raises(ReceiptRejected, match="does not verify") as info:
        check(r)
    assert info.value.rule == "RCPT-3"


def test_a_flipped_signature_bit_is_rcpt_3() -> None:
    r = receipt()
    raw = bytearray(unb64url(r["signature"]))
    raw[5] ^= 1
    r["signature"] = b64url(bytes(raw))
    with pytest.raises(ReceiptRejected) as info:
        check(r)
    assert info.value.rule == "RCPT-3"


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"call_id": "c2"}, "toolCallId 'c1', not 'c2'"),
        ({"thread_id": "t2"}, "threadId 't1', not 't2'"),
        ({"interrupt_id": "i1"}, "interruptId None, not 'i1'"),
    ],
)
def test_another_decisions_receipt_is_rcpt_4(kw: dict[str, Any], says: str) -> None:
    with pytest.raises(ReceiptRejected, match=says) as info:
        check(receipt(), **kw)
    assert info.value.rule == "RCPT-4"


def test_edited_arguments_are_rcpt_5() -> None:
    with pytest.raises(ReceiptRejected) as info:
        check(receipt(), arguments={"orderId": "A7", "qty": 20})
    assert info.value.rule == "RCPT-5" and canonical_hash(ARGS) in str(info.value)
    # key order and spelling do not matter: the hash is of the canonical form
    assert check(receipt(), arguments={"qty": 2.0, "orderId": "A7"}).decision == "approved"


def test_a_receipt_binding_no_payload_cannot_vouch_for_one() -> None:
    with pytest.raises(ReceiptRejected, match="binds no payloadHash") as info:
        check(receipt(), payload={"approved": True})
    assert info.value.rule == "RCPT-5"


def test_expired_and_future_receipts_are_rcpt_6() -> None:
    r = receipt()
    expires = datetime.fromisoformat(r["statement"]["expiresAt"].replace("Z", "+00:00"))
    assert check(r, now=expires - timedelta(milliseconds=1))
    with pytest.raises(ReceiptRejected, match="expired at") as info:
        check(r, now=expires)
    assert info.value.rule == "RCPT-6"
    issued = NOW - timedelta(minutes=1)
    with pytest.raises(ReceiptRejected, match="leeway") as info:
        check(r, now=issued - timedelta(seconds=61))
    assert info.value.rule == "RCPT-6"
    assert check(r, now=issued - timedelta(seconds=59))


def test_a_decline_permits_nothing_rcpt_7() -> None:
    r = receipt(decision="declined")
    with pytest.raises(ReceiptRejected, match="permits nothing") as info:
        check(r)
    assert info.value.rule == "RCPT-7"
    assert check(r, permits=False).decision == "declined"


def test_a_check_about_nothing_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="call_id or the interrupt_id"):
        verify_receipt(receipt(), keys=Keyring.of(signer()), thread_id="t1")


# -- keys: loading, rotation --------------------------------------------------------------


def test_a_signer_from_a_pem_file_and_its_keys_document(tmp_path: Path) -> None:
    key = ed25519.Ed25519PrivateKey.generate()
    pem = tmp_path / "receipts.pem"
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    s = Signer.from_pem_file(pem)
    assert s.public_key == key.public_key().public_bytes_raw()
    assert s.key_id.startswith("ed25519:")
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"keys": [s.keyring_entry()]}))
    r = s.sign(s.statement("approved", thread_id="t1", principal=ADA, tool_call_id="c1"))
    assert verify_receipt(r, keys=Keyring.load(keys), thread_id="t1", call_id="c1")


def test_unusable_keys_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="32 bytes, not 31"):
        Signer.from_bytes(b"x" * 31)
    with pytest.raises(UsageError, match="not a usable private key"):
        Signer.from_pem(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
    ec_pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with pytest.raises(UsageError, match="Ed25519 keys, not"):
        Signer.from_pem(ec_pem)
    with pytest.raises(UsageError, match="some time"):
        signer(lifetime=0)
    with pytest.raises(UsageError, match="cannot read the keys file"):
        Keyring.load(tmp_path / "none.json")


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ([], '"keys" list'),
        ({"keys": [{"alg": "Ed25519"}]}, 'keys\\[0\\] is not an object with a "kid"'),
        ({"keys": [{"kid": "k", "publicKey": "AAAA"}]}, "3 bytes, not 32"),
        ({"keys": [{"kid": "k", "alg": "ES256", "publicKey": "AAAA"}]}, "alg 'ES256'"),
        ({"keys": [{"kid": "k"}]}, "keys\\[0\\] \\('k'\\)"),
        (
            {"keys": [VECTORS["keys"]["keys"][0], VECTORS["keys"]["keys"][0]]},
            "listed twice",
        ),
    ],
)
def test_a_bad_keys_document_names_the_entry(document: Any, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        Keyring.from_json(document)


def test_a_retired_key_vouches_only_for_what_it_signed_while_current() -> None:
    # receipt() issues at 09:09, expiring an hour later; signing stopped at 09:30
    entry = {**signer().keyring_entry(), "notAfter": "2026-12-02T10:30:00.000Z"}
    keys = Keyring.from_json({"keys": [entry]})
    assert check(receipt(), keys=keys)  # in flight at the switch-over, verified before notAfter
    with pytest.raises(ReceiptRejected, match="not current") as info:
        check(receipt(issued_at="2026-12-02T10:31:00.000Z"), keys=keys)
    assert info.value.rule == "RCPT-2"
    later = Keyring.from_json(
        {"keys": [{**entry, "notAfter": None, "notBefore": "2026-12-03T00:00:00Z"}]}
    )
    with pytest.raises(ReceiptRejected, match="not current"):
        check(receipt(), keys=later)


def test_a_retired_key_vouches_for_nothing_once_its_notafter_has_passed() -> None:
    entry = {**signer().keyring_entry(), "notAfter": "2026-12-02T09:20:00.000Z"}
    keys = Keyring.from_json({"keys": [entry]})
    long_lived = receipt()  # issued 09:09 inside the window, expiring at 10:09
    assert check(long_lived, keys=Keyring.of(signer()), now=NOW + timedelta(minutes=20))
    with pytest.raises(ReceiptRejected, match="is retired") as info:
        check(long_lived, keys=keys, now=NOW + timedelta(minutes=20))  # 09:30
    assert info.value.rule == "RCPT-2"


def test_a_receipt_may_not_claim_to_outlive_its_key() -> None:
    entry = {**signer().keyring_entry(), "notAfter": "2026-12-02T09:20:00.000Z"}
    keys = Keyring.from_json({"keys": [entry]})
    assert check(receipt(expires_at="2026-12-02T09:20:00.000Z"), keys=keys)
    with pytest.raises(ReceiptRejected, match="cannot outlive its key") as info:
        check(receipt(expires_at="2026-12-02T09:20:00.001Z"), keys=keys)
    assert info.value.rule == "RCPT-2"


def test_without_cryptography_the_package_imports_and_signing_names_the_extra() -> None:
    script = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "cryptography" or name.startswith("cryptography."):
            raise ImportError("blocked")
sys.meta_path.insert(0, Block())
import agui_tools, agui_tools.app, agui_tools.agent, agui_tools.transport
from agui_tools.app import Signer
try:
    Signer.generate()
except agui_tools.UsageError as exc:
    print(exc)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert "pip install 'agui-tools[receipts]'" in done.stdout, done.stderr


# -- the hooks: a conversation with a signer ----------------------------------------------


def conversation(**kw: Any) -> Conversation:
    kw.setdefault("tools", [CONFIRM, LOOKUP])
    return Conversation(thread_id="t1", signer=signer(), **kw)


def tool_message(conv: Conversation, call_id: str) -> dict[str, Any]:
    (message,) = [m for m in conv.messages if m.get("toolCallId") == call_id]
    return dict(message)


def test_an_approved_frontend_calls_tool_message_carries_its_receipt() -> None:
    conv = conversation()
    conv.next_input(user="order")
    run(conv, *call("c1", "confirm_order", json.dumps(ARGS)), *call("c2", "lookup", '{"q":"w"}'))
    Driver(conv).end_run()
    Driver(conv).approve("c1", principal=ADA)
    Driver(conv).execute("c1", lambda a: "ordered")
    Driver(conv).execute("c2", lambda a: "found")  # the policy approved it
    sent = conv.next_input(user="thanks")
    by_call = {m["toolCallId"]: m for m in sent["messages"] if m["role"] == "tool"}
    r1 = by_call["c1"]["metadata"][RECEIPT_KEY]
    statement = verify_receipt(
        r1, keys=Keyring.of(signer()), thread_id="t1", call_id="c1", arguments=ARGS
    )
    assert statement.principal == ADA  # the decision's, not a default of the key
    assert statement.tool == "confirm_order" and statement.run_id == conv.runs[0].run_id
    r2 = by_call["c2"]["metadata"][RECEIPT_KEY]
    assert r2["statement"]["principal"] == {"id": "policy"}


def test_an_edited_approval_binds_the_edited_arguments() -> None:
    conv = conversation()
    conv.next_input(user="order")
    run(conv, *call("c1", "confirm_order", json.dumps(ARGS)))
    Driver(conv).end_run()
    edited = {"orderId": "A7", "qty": 1}
    Driver(conv).approve("c1", arguments=edited)
    Driver(conv).execute("c1", lambda a: "ordered")
    r = tool_message(conv, "c1")["metadata"][RECEIPT_KEY]
    keys = Keyring.of(signer())
    assert verify_receipt(r, keys=keys, thread_id="t1", call_id="c1", arguments=edited)
    with pytest.raises(ReceiptRejected) as info:
        verify_receipt(r, keys=keys, thread_id="t1", call_id="c1", arguments=ARGS)
    assert info.value.rule == "RCPT-5"


def test_a_declined_call_carries_a_receipt_of_the_decline() -> None:
    conv = conversation()
    conv.next_input(user="order")
    run(conv, *call("c1", "confirm_order", json.dumps(ARGS)))
    Driver(conv).end_run()
    Driver(conv).decline("c1", reason="no")
    r = tool_message(conv, "c1")["metadata"][RECEIPT_KEY]
    assert r["statement"]["decision"] == "declined"
    with pytest.raises(ReceiptRejected) as info:
        verify_receipt(r, keys=Keyring.of(signer()), thread_id="t1", call_id="c1", arguments=ARGS)
    assert info.value.rule == "RCPT-7"


def test_without_a_signer_nothing_is_added() -> None:
    conv = Conversation(thread_id="t1", tools=[CONFIRM], consent=ConsentPolicy.auto_approve())
    conv.next_input(user="order")
    run(conv, *call("c1", "confirm_order", json.dumps(ARGS)))
    Driver(conv).end_run()
    Driver(conv).execute("c1", lambda a: "ordered")
    assert "metadata" not in tool_message(conv, "c1")


def interrupted(conv: Conversation) -> None:
    conv.next_input(user="refund")
    run(
        conv,
        *call("c9", "refund", '{"order":"A1","cents":500}'),
        finish={
            "outcome": {
                "type": "interrupt",
                "interrupts": [
                    {"id": "i1", "reason": "approval", "toolCallId": "c9"},
                    {"id": "i2", "reason": "input"},
                ],
            }
        },
    )
    Driver(conv).end_run()


def test_resolved_resume_entries_carry_receipts_cancelled_ones_none() -> None:
    conv = conversation()
    interrupted(conv)
    sent = conv.next_input(
        resume=[
            {
                "interruptId": "i1",
                "status": "resolved",
                "payload": {"approved": True},
                "metadata": {"trace": "x", "principal": ADA.to_json()},
            },
            {"interruptId": "i2", "status": "cancelled", "metadata": {"reason": "later"}},
        ]
    )
    first, second = sent["resume"]
    assert first["metadata"]["trace"] == "x"  # the entry's own metadata kept
    statement = verify_receipt(
        first["metadata"][RECEIPT_KEY],
        keys=Keyring.of(signer()),
        thread_id="t1",
        interrupt_id="i1",
        call_id="c9",
        arguments={"order": "A1", "cents": 500},
        payload={"approved": True},
    )
    assert statement.decision == "resolved" and statement.tool == "refund"
    assert statement.principal == ADA  # who resolved it, as the entry names
    assert statement.run_id == conv.runs[0].run_id
    assert second["metadata"] == {"reason": "later"}
    with pytest.raises(ReceiptRejected) as info:
        verify_receipt(
            first["metadata"][RECEIPT_KEY],
            keys=Keyring.of(signer()),
            thread_id="t1",
            interrupt_id="i1",
            payload={"approved": True, "arguments": {"cents": 50_000}},
        )
    assert info.value.rule == "RCPT-5"


FIELDS = sorted(receipt()["statement"])


@settings(max_examples=200, deadline=None)
@given(
    field=st.sampled_from([*FIELDS, "principal.id", "principal.displayName"]),
    value=st.one_of(st.text(max_size=40), st.integers(), st.none(), st.booleans()),
)
def test_any_one_field_changed_after_signing_is_refused(field: str, value: Any) -> None:
    r = receipt()
    target = r["statement"]
    if field.startswith("principal."):
        target, field = target["principal"], field.split(".", 1)[1]
    if target.get(field) == value:
        return  # not a change
    target[field] = value
    with pytest.raises(ReceiptRejected) as info:
        check(r)
    assert info.value.rule in ("RCPT-1", "RCPT-2", "RCPT-3")  # before any subject is read


@settings(max_examples=200, deadline=None)
@given(index=st.integers(0, 63), bit=st.integers(0, 7))
def test_any_one_signature_bit_flipped_is_refused(index: int, bit: int) -> None:
    r = receipt()
    raw = bytearray(unb64url(r["signature"]))
    raw[index] ^= 1 << bit
    r["signature"] = b64url(bytes(raw))
    with pytest.raises(ReceiptRejected) as info:
        check(r)
    assert info.value.rule == "RCPT-3"


def test_a_receipt_from_another_run_is_refused_by_RCPT_4() -> None:
    """A fixed interrupt id ("confirm") recurs in every run: a receipt resolving it in
    run R1 — same payload, still unexpired — does not vouch for R2's interrupt."""
    r1 = receipt(run_id="R1", tool_call_id=None, interrupt_id="confirm", decision="resolved")
    kw: dict[str, Any] = {"call_id": None, "interrupt_id": "confirm", "arguments": UNSET}
    assert check(r1, run_id="R1", **kw).run_id == "R1"
    with pytest.raises(ReceiptRejected) as info:
        check(r1, run_id="R2", **kw)
    assert info.value.rule == "RCPT-4"
    assert "runId 'R1', not 'R2'" in info.value.explanation
    # a statement naming no run (a call no run proposed) is judged on the rest
    assert check(receipt(), run_id="R2").run_id is None
