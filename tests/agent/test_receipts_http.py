"""An agent on our ``Run`` API, served over real loopback HTTP, checks the receipt of
each decision before it acts (docs/receipts.md): the real one is accepted and the
call executed once; a forged, replayed, edited or expired one is refused, by its
rule, and nothing is executed.

The application is a real :class:`Session` with a :class:`Signer`; the tampered
inputs are the real resume input the agent received, changed one way each and
POSTed again to the same server.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_tools._errors import ReceiptRejected
from agui_tools.agent import Keyring, Run, verify_receipt
from agui_tools.app import RECEIPT_KEY, Signer, Statement
from agui_tools.app._consent import Principal
from agui_tools.app._conversation import Conversation
from agui_tools.app._store_sqlite import SQLiteStore
from agui_tools.app._tools import ToolSpec
from agui_tools.transport import (
    AgentClient,
    Approval,
    Session,
    SyncAgentClient,
    SyncSession,
    agent_app,
)
from tests.helpers.scripted_server import serve

GRACE = Principal("u-7", "Grace", "oidc")
SIGNER = Signer.generate(key_id="app-1")
KEYS = Keyring.of(SIGNER)
TRANSFER = {"to": "bob", "cents": 500}
NOTE = ToolSpec(
    "post_note",
    "Post a note on the shared board.",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}},
    side_effects=True,
)


@dataclasses.dataclass
class Ledger:
    """What the agent did: each execution, each refusal (by rule), each input."""

    executed: list[tuple[str, dict[str, Any]]] = dataclasses.field(default_factory=list)
    refused: list[str] = dataclasses.field(default_factory=list)
    verified: list[Statement] = dataclasses.field(default_factory=list)
    inputs: list[dict[str, Any]] = dataclasses.field(default_factory=list)


BOOK = Ledger()


def _interrupt_id(call_id: str) -> str:
    return f"approve-{call_id}"


async def transfer_agent(run: Run) -> None:
    """Proposes a transfer (its own tool), interrupts for approval, and on resume
    executes it only on a receipt that vouches for exactly that call."""
    BOOK.inputs.append(copy.deepcopy(dict(run.input)))
    if run.resume:
        entry = run.resume[0]
        call_id = str(entry["interruptId"]).removeprefix("approve-")
        try:
            statement = run.verify_receipt(
                KEYS, interrupt_id=_interrupt_id(call_id), call_id=call_id
            )
        except ReceiptRejected as exc:
            BOOK.refused.append(exc.rule)
            await run.result(call_id, f"refused: {exc}")
            return
        (call,) = [c for m in run.messages for c in m.get("toolCalls") or () if c["id"] == call_id]
        BOOK.executed.append((call_id, json.loads(call["function"]["arguments"])))
        BOOK.verified.append(statement)
        await run.result(call_id, "transferred")
        return
    if any(m.get("role") == "tool" for m in run.messages):  # the frontend note came back
        (message,) = [m for m in run.messages if m.get("role") == "tool"]
        try:
            BOOK.verified.append(run.verify_receipt(KEYS, call_id=message["toolCallId"]))
        except ReceiptRejected as exc:
            BOOK.refused.append(exc.rule)
        await run.text("noted")
        return
    if "note" in str(run.messages[-1].get("content")):
        async with run.tool_call("post_note", call_id="note-1") as c:
            await c.args('{"text": "hello"}')
        return
    call_id = f"tx-{run.thread_id}"
    async with run.tool_call("transfer", call_id=call_id) as c:
        await c.args(json.dumps(TRANSFER))
    run.interrupt({"id": _interrupt_id(call_id), "reason": "approval", "toolCallId": call_id})


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve(agent_app(transfer_agent)) as base:
        yield f"{base}/"


@pytest.fixture(autouse=True)
def fresh_book() -> None:
    BOOK.executed.clear()
    BOOK.refused.clear()
    BOOK.verified.clear()
    BOOK.inputs.clear()


def approve_through_a_session(url: str, thread_id: str) -> dict[str, Any]:
    """A real application approves the transfer; the resume input the agent got."""

    async def main() -> None:
        async with AgentClient(url) as client:
            session = Session(
                client,
                thread_id=thread_id,
                signer=SIGNER,
                on_interrupt=lambda i: Approval.approve(principal=GRACE),
            )
            result = await session.send("send bob 5 EUR")
            assert result.status == "success"

    asyncio.run(main())
    (resumed,) = [i for i in BOOK.inputs if i.get("resume") and i["threadId"] == thread_id]
    return resumed


def post(url: str, run_input: dict[str, Any]) -> str:
    """POST a run input to the agent; the SSE body it streamed, whole."""
    body = {**run_input, "runId": f"{run_input['runId']}-again-{len(BOOK.inputs)}"}
    response = httpx.post(url, json=body, headers={"accept": "text/event-stream"}, timeout=30.0)
    assert response.status_code == 200, response.text
    assert "RUN_FINISHED" in response.text, response.text
    return response.text


def receipt_of(run_input: dict[str, Any]) -> dict[str, Any]:
    return run_input["resume"][0]["metadata"][RECEIPT_KEY]


def test_the_real_receipt_is_accepted_and_the_call_executed_once(url: str) -> None:
    approve_through_a_session(url, "t-real")
    assert BOOK.refused == []
    assert BOOK.executed == [("tx-t-real", TRANSFER)]
    (statement,) = BOOK.verified
    assert statement.principal == Principal("u-7", "Grace", "oidc")
    assert statement.decision == "resolved" and statement.tool == "transfer"


def _flip_signature(i: dict[str, Any]) -> None:
    r = receipt_of(i)
    r["signature"] = ("A" if r["signature"][0] != "A" else "B") + r["signature"][1:]


def _edit_principal(i: dict[str, Any]) -> None:
    receipt_of(i)["statement"]["principal"] = {"id": "admin", "authenticatedBy": "oidc"}


def _attacker_key(i: dict[str, Any]) -> None:
    statement = Statement.from_json(receipt_of(i)["statement"])
    forged = Signer.generate(key_id="app-1").sign(statement)
    i["resume"][0]["metadata"][RECEIPT_KEY] = forged


def _unknown_key(i: dict[str, Any]) -> None:
    attacker = Signer.generate(key_id="attacker")
    statement = dataclasses.replace(
        Statement.from_json(receipt_of(i)["statement"]), key_id="attacker"
    )
    i["resume"][0]["metadata"][RECEIPT_KEY] = attacker.sign(statement)


def _stripped(i: dict[str, Any]) -> None:
    del i["resume"][0]["metadata"]


def _edited_arguments(i: dict[str, Any]) -> None:
    for message in i["messages"]:
        for call in message.get("toolCalls") or ():
            call["function"]["arguments"] = json.dumps({"to": "mallory", "cents": 500})


def _edited_payload(i: dict[str, Any]) -> None:
    i["resume"][0]["payload"] = {"approved": True, "arguments": {"to": "mallory", "cents": 500}}


def _expired(i: dict[str, Any]) -> None:
    statement = Statement.from_json(receipt_of(i)["statement"])
    old = datetime.now(UTC) - timedelta(hours=2)
    stale = dataclasses.replace(
        statement,
        issued_at=old.isoformat().replace("+00:00", "Z"),
        expires_at=(old + timedelta(hours=1)).isoformat().replace("+00:00", "Z"),
    )
    i["resume"][0]["metadata"][RECEIPT_KEY] = SIGNER.sign(stale)  # the real key, long ago


@pytest.mark.parametrize(
    ("tamper", "rule"),
    [
        (_flip_signature, "RCPT-3"),
        (_edit_principal, "RCPT-3"),
        (_attacker_key, "RCPT-3"),
        (_unknown_key, "RCPT-2"),
        (_stripped, "RCPT-1"),
        (_edited_arguments, "RCPT-5"),
        (_edited_payload, "RCPT-5"),
        (_expired, "RCPT-6"),
    ],
    ids=lambda v: getattr(v, "__name__", v).strip("_") if callable(v) else v,
)
def test_a_forged_edited_or_expired_receipt_is_refused(url: str, tamper: Any, rule: str) -> None:
    real = approve_through_a_session(url, f"t-{tamper.__name__.strip('_')}")
    BOOK.executed.clear()
    BOOK.verified.clear()
    forged = copy.deepcopy(real)
    tamper(forged)
    body = post(url, forged)
    assert BOOK.refused == [rule]
    assert BOOK.executed == []  # nothing ran on its strength
    assert f"[{rule}]" in body  # the agent said which rule, in its tool result


def test_another_calls_receipt_is_refused(url: str) -> None:
    mine = approve_through_a_session(url, "t-mine")
    theirs = approve_through_a_session(url, "t-theirs")
    BOOK.executed.clear()
    replayed = copy.deepcopy(mine)
    replayed["resume"][0]["metadata"][RECEIPT_KEY] = receipt_of(theirs)
    body = post(url, replayed)
    assert BOOK.refused == ["RCPT-4"] and BOOK.executed == []
    assert "threadId 't-theirs', not 't-mine'" in body
    # the same receipt replayed onto another interrupt of the same thread
    other = SIGNER.sign(
        dataclasses.replace(
            Statement.from_json(receipt_of(mine)["statement"]), interrupt_id="approve-tx-other"
        )
    )
    replayed["resume"][0]["metadata"][RECEIPT_KEY] = other
    post(url, replayed)
    assert BOOK.refused == ["RCPT-4", "RCPT-4"] and BOOK.executed == []


def test_a_frontend_calls_tool_message_receipt_reaches_the_agent(url: str) -> None:
    async def main() -> None:
        async with AgentClient(url) as client:
            session = Session(
                client,
                thread_id="t-note",
                signer=SIGNER,
                ask=lambda call: Approval.approve(principal=GRACE),
            )
            session.add_tool(NOTE, lambda args: "posted")
            result = await session.send("note please")
            assert result.status == "success"

    asyncio.run(main())
    assert BOOK.refused == []
    (statement,) = BOOK.verified
    assert statement.tool_call_id == "note-1" and statement.decision == "approved"
    assert statement.principal.id == "u-7"


def test_an_honestly_edited_frontend_call_verifies_at_the_agent(url: str) -> None:
    ran: list[Any] = []

    async def main() -> None:
        async with AgentClient(url) as client:
            session = Session(
                client,
                thread_id="t-edit",
                signer=SIGNER,
                ask=lambda call: Approval.approve({"text": "hello, edited"}, principal=GRACE),
            )
            session.add_tool(NOTE, ran.append)
            assert (await session.send("note please")).status == "success"

    asyncio.run(main())
    assert ran == [{"text": "hello, edited"}]
    assert BOOK.refused == []  # the agent's default check: its proposal, as shown
    (statement,) = BOOK.verified
    assert statement.arguments_shown is not None  # and it learns the call was edited
    assert statement.arguments_hash != statement.arguments_shown


def test_a_receipt_is_kept_with_the_thread_in_its_store(url: str, tmp_path: Path) -> None:
    db = tmp_path / "threads.db"

    async def main() -> None:
        async with AgentClient(url) as client:
            session = Session(
                client,
                thread_id="t-kept",
                store=SQLiteStore(db),
                signer=SIGNER,
                ask=lambda call: Approval.approve(principal=GRACE),
            )
            session.add_tool(NOTE, lambda args: "posted")
            assert (await session.send("note please")).status == "success"

    asyncio.run(main())
    reloaded = Conversation(thread_id="t-kept", tools=[NOTE], store=SQLiteStore(db))
    (message,) = [m for m in reloaded.messages if m.get("role") == "tool"]
    statement = verify_receipt(
        message["metadata"][RECEIPT_KEY],
        keys=KEYS,
        thread_id="t-kept",
        call_id="note-1",
        arguments={"text": "hello"},
    )
    assert statement.principal.id == "u-7"


def test_the_blocking_face_signs_alike(url: str) -> None:
    with SyncAgentClient(url) as client:
        session = SyncSession(
            client,
            thread_id="t-sync",
            signer=SIGNER,
            on_interrupt=lambda i: Approval.approve(principal=GRACE),
        )
        assert session.send("send bob 5 EUR").status == "success"
    assert BOOK.refused == [] and BOOK.executed == [("tx-t-sync", TRANSFER)]
