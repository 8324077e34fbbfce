"""Receipts under attack: what a holder of a retired key, or a replayed receipt, gets.

Findings in the receipts' join points are recorded here as strict xfails until
their owner fixes them (docs/receipts.md, "Keys and rotation"), then stay as tests.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from agui_tools._errors import ReceiptRejected
from agui_tools.agent import verify_receipt
from agui_tools.app import Keyring, Principal, Signer
from agui_tools.app._consent import stamp
from agui_tools.wire._canonical import canonical_hash

ALICE = Principal("alice", authenticated_by="oidc")
NOW = datetime(2026, 12, 2, 9, 10, tzinfo=UTC)
ARGS = {"orderId": "A7", "qty": 2}


def signer() -> Signer:
    return Signer.from_bytes(bytes(range(32)), key_id="app-2026-12")


def test_a_retired_key_cannot_vouch_now_by_backdating_its_receipt() -> None:
    # docs/receipts.md: "anything it signs afterwards is refused (RCPT-2)"
    retired = NOW - timedelta(days=1)
    keys = Keyring.from_json({"keys": [{**signer().keyring_entry(), "notAfter": stamp(retired)}]})
    s = signer()
    base = s.statement(
        "approved",
        thread_id="t1",
        principal=ALICE,
        now=NOW,  # signed today, after the key was retired …
        tool_call_id="c1",
        tool="confirm_order",
        arguments_hash=canonical_hash(ARGS),
    )
    forged = s.sign(
        dataclasses.replace(
            base,
            issued_at=stamp(retired - timedelta(hours=1)),  # … dated inside its window
            expires_at=stamp(NOW + timedelta(days=365)),
        )
    )
    with pytest.raises(ReceiptRejected) as info:
        verify_receipt(forged, keys=keys, thread_id="t1", call_id="c1", arguments=ARGS, now=NOW)
    assert info.value.rule == "RCPT-2"


def test_a_receipt_of_2_53_does_not_cover_2_53_plus_1() -> None:
    # a neighbour integer once shared the canonical hash (wire/_canonical.py)
    s = signer()
    approved = {"orderId": "A7", "qty": 2**53}
    receipt = s.sign(
        s.statement(
            "approved",
            thread_id="t1",
            principal=ALICE,
            now=NOW - timedelta(minutes=1),
            tool_call_id="c1",
            arguments_hash=canonical_hash(approved),
        )
    )
    keys = Keyring.of(s)
    assert verify_receipt(
        receipt, keys=keys, thread_id="t1", call_id="c1", arguments=approved, now=NOW
    )
    with pytest.raises(ReceiptRejected) as info:
        verify_receipt(
            receipt,
            keys=keys,
            thread_id="t1",
            call_id="c1",
            arguments={"orderId": "A7", "qty": 2**53 + 1},
            now=NOW,
        )
    assert info.value.rule == "RCPT-5"
