"""The inspector's decisions name ``inspect --principal``'s principal in the approval
ledger, known by the inspector's token; without one, the unauthenticated user. With
``inspect --signing-key`` each decision's entry holds its signed receipt, naming them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from agui_tools.agent import Keyring, verify_receipt
from agui_tools.app import Signer
from agui_tools.app._consent import Principal
from agui_tools.app._store_sqlite import SQLiteStore
from agui_tools.testing import serving
from agui_tools.transport import agent_app
from agui_tools.ui.inspector import Inspector
from tests.helpers.inspector_page import idle, running, until

from .inspector_agents import register_three, three_calls_agent

ALICE = Principal("alice@example.com", authenticated_by="inspector-token")
SIGNER = Signer.generate()


@pytest.mark.parametrize("principal", [ALICE, None])
def test_the_pages_decisions_are_the_principals(
    tmp_path: Path, principal: Principal | None
) -> None:
    store = SQLiteStore(tmp_path / "threads.sqlite")

    async def go() -> None:
        async with serving(agent_app(three_calls_agent(delay=0), path="/agent")) as base:
            inspector = Inspector(
                f"{base}/agent",
                register=register_three,
                store=store,
                principal=principal,
                signer=SIGNER if principal is not None else None,
            )
            async with running(inspector) as page:
                assert (await page.post("/api/prompt", json={"text": "go"})).status_code == 200
                for cid, decision in (("c0", "approve"), ("c1", "decline"), ("c2", "decline")):
                    await until(
                        inspector,
                        lambda m, cid=cid: m["kind"] == "consent" and m["callId"] == cid,
                    )
                    body: dict[str, Any] = {"callId": cid, "decision": decision}
                    assert (await page.post("/api/consent", json=body)).status_code == 200
                await until(inspector, idle)

    asyncio.run(go())
    entries = [orjson.loads(raw) for _, raw in store.ledger()]
    store.close()
    expected = principal.to_json() if principal is not None else {"id": "user"}
    assert [(e["toolCallId"], e["approved"], e["principal"]) for e in entries] == [
        ("c0", True, expected),
        ("c1", False, expected),
        ("c2", False, expected),
    ]
    if principal is None:
        assert all("receipt" not in e for e in entries)
        return
    for e in entries:
        statement = verify_receipt(
            e["receipt"],
            keys=Keyring.of(SIGNER),
            thread_id=e["threadId"],
            call_id=e["toolCallId"],
            permits=False,
        )
        assert statement.principal == principal
