"""A session's answers name their principal in the approval ledger: the ``ask``
callback's :class:`Approval` and an interrupt's answer, on both faces.

An interrupt's answer reaches the ledger as its resume record: the interrupt's
id, status and principal, and its payload's canonical hash — never the payload."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from agui_tools.app._consent import Principal
from agui_tools.app._ledger import verify_ledger
from agui_tools.app._store import MemoryStore
from agui_tools.app._store_sqlite import SQLiteStore
from agui_tools.transport import Approval, Session, SyncSession
from agui_tools.wire._canonical import canonical_hash
from tests.helpers import interrupts
from tests.helpers.interrupts import REFUND, call, make, resumes
from tests.helpers.session import pending_call

url = interrupts.url
face = interrupts.face
log = interrupts.log

ALICE = Principal("alice@example.com", "Alice", authenticated_by="oidc")
FACES = {"async": Session, "sync": SyncSession}


def _entries(store: Any) -> list[dict[str, Any]]:
    return [orjson.loads(raw) for _, raw in store.ledger()]


@pytest.mark.parametrize("face_", FACES)
def test_an_ask_answer_names_its_principal_and_binds_the_edit(face_: str) -> None:
    store = MemoryStore()
    session = FACES[face_](
        client=None,  # type: ignore[arg-type]
        ask=lambda call: Approval.approve({"qty": 1}, principal=ALICE),
        store=store,
    )
    ran: list[int] = []

    @session.tool(side_effects=True)
    def order(qty: int) -> str:
        """Order."""
        ran.append(qty)
        return "ok"

    pending_call(session, "order", '{"qty": 5}')
    if isinstance(session, SyncSession):
        session.dispose(lambda u: None)
    else:
        asyncio.run(session.dispose(lambda u: None))
    assert ran == [1]
    (entry,) = _entries(store)
    assert entry["principal"] == ALICE.to_json() and entry["approved"] is True
    assert entry["argumentsShown"] == canonical_hash({"qty": 5})
    assert entry["argumentsApproved"] == canonical_hash({"qty": 1})


def test_an_interrupt_answer_names_its_principal_and_the_ledger_keeps_no_payload(
    url: str, face: str, log: Path, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "app.sqlite")
    edited = {"order": "PLANTED-9f3", "cents": 321}
    session = make(
        url,
        face,
        on_interrupt=lambda i: Approval.approve(edited, principal=ALICE),
        store=store,
        thread_id="t-principal",
    )
    assert call(session, "send", REFUND).status == "success"
    (sent,) = resumes(log)
    assert sent["metadata"] == {"principal": ALICE.to_json()}  # the agent is told who
    (entry,) = _entries(store)
    assert entry["kind"] == "resume"
    payload = {"approved": True, "arguments": edited}
    assert entry["resume"] == [
        {
            "interruptId": sent["interruptId"],
            "status": "resolved",
            "payload": canonical_hash(payload),
            "principal": ALICE.to_json(),
        }
    ]
    _, raw = store.ledger()[0]
    assert b"PLANTED-9f3" not in raw  # the payload's values stay out of the ledger
    assert verify_ledger(store.ledger()).broken is None
    store.close()
