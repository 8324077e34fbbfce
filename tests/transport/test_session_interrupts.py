"""Interrupts end to end through the session (issue #22, item 1): a real agent on
loopback interrupts, the handler — or a later ``resume`` — answers, on both faces;
payloads validated against ``responseSchema``; INT-6/7/8 before anything is sent;
a resume after a restart, from the store, sent exactly once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agui_tools._errors import UsageError
from agui_tools.app._store_sqlite import SQLiteStore
from agui_tools.transport import (
    AgentClient,
    Approval,
    Interrupt,
    InvalidPayload,
    Resolution,
    Session,
    agent_app,
)
from agui_tools.transport._session import BaseSession, InterruptedCall, interrupt_resolution
from tests.helpers import interrupts
from tests.helpers.cli_agents import scripted
from tests.helpers.interrupts import REFUND, call, make, resumes
from tests.helpers.scripted_server import serve

# the interrupting agent, the two faces and the agent's resume log (shared with
# test_resume_once.py)
url = interrupts.url
face = interrupts.face
log = interrupts.log


CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def text_of(session: BaseSession[Any]) -> str:
    assert session.conversation is not None
    return str(session.conversation.messages[-1]["content"])


def test_the_handler_sees_a_typed_approval_request_and_an_edit_runs(
    url: str, face: str, log: Path
) -> None:
    seen: list[Interrupt] = []

    def on_interrupt(interrupt: Interrupt) -> Approval:
        seen.append(interrupt)
        return Approval.approve({"order": "A1", "cents": 300})

    session = make(url, face, on_interrupt=on_interrupt)
    result = call(session, "send", REFUND)
    assert result.status == "success"
    (interrupt,) = seen
    assert interrupt.reason == "approval" and interrupt.message == "May I refund?"
    assert interrupt.call is not None and interrupt.call.name == "refund"
    assert interrupt.call.arguments == {"order": "A1", "cents": 500}
    assert interrupt.response_schema is not None and not interrupt.expired
    assert resumes(log) == [
        {
            "interruptId": interrupt.id,
            "status": "resolved",
            "payload": {"approved": True, "arguments": {"order": "A1", "cents": 300}},
        }
    ]
    assert "resolved" in text_of(session)


def test_a_declined_approval_is_cancelled_never_approved(url: str, face: str, log: Path) -> None:
    session = make(url, face, on_interrupt=lambda i: Approval.decline("too much"))
    result = call(session, "send", REFUND)
    assert result.status == "success"
    (entry,) = resumes(log)
    assert entry["status"] == "cancelled" and "payload" not in entry
    assert entry["metadata"] == {"reason": "too much"}
    assert session.conversation is not None
    tool = [m for m in session.conversation.messages if m["role"] == "tool"]
    assert tool[-1]["content"] == "not done"


def test_an_async_handler_on_the_async_face() -> None:
    async def on_interrupt(interrupt: Interrupt) -> Resolution:
        await asyncio.sleep(0)
        return Resolution.resolve({"city": "Oslo"})

    with serve(agent_app(scripted)) as base:
        session = Session(AgentClient(f"{base}/"), on_interrupt=on_interrupt)
        result = asyncio.run(session.send("ask " + json.dumps(CITY)))
    assert result.status == "success" and '{"city": "Oslo"}' in text_of(session)


def test_without_a_handler_send_returns_the_interrupt_and_resume_continues(
    url: str, face: str, log: Path
) -> None:
    session = make(url, face)
    result = call(session, "send", "ask " + json.dumps(CITY))
    assert result.status == "interrupt"
    (interrupt,) = session.interrupts
    assert interrupt.metadata == {"step": 2} and interrupt.call is None
    # an invalid payload is refused at its path, and nothing is sent
    with pytest.raises(InvalidPayload) as info:
        call(session, "resume", {interrupt.id: Resolution.resolve({"city": 3})})
    assert [e.path for e in info.value.errors] == ["/city"]
    assert resumes(log) == []
    # INT-7 / INT-6: every interrupt covered, no unknown id — before anything is sent
    with pytest.raises(UsageError, match="INT-7"):
        call(session, "resume", {})
    with pytest.raises(UsageError, match="INT-6"):
        call(
            session,
            "resume",
            {interrupt.id: Resolution.cancel(), "nope": Resolution.cancel()},
        )
    with pytest.raises(UsageError, match="INT-7"):
        call(session, "send", "something else")  # not past an open interrupt
    assert resumes(log) == []
    result = call(session, "resume", {interrupt.id: Resolution.resolve({"city": "Oslo"})})
    assert result.status == "success" and session.interrupts == []
    # a resume that was sent is not sent again
    with pytest.raises(UsageError, match="nothing to resume"):
        call(session, "resume", {interrupt.id: Resolution.resolve({"city": "Oslo"})})
    assert len(resumes(log)) == 1


def test_an_expired_interrupt_can_only_be_cancelled(url: str, face: str, log: Path) -> None:
    session = make(url, face)
    call(session, "send", "expired")
    (interrupt,) = session.interrupts
    assert interrupt.expired and interrupt.expires_at == "2000-01-01T00:00:00Z"
    with pytest.raises(UsageError, match="INT-8"):
        call(session, "resume", {interrupt.id: Resolution.resolve("late")})
    assert resumes(log) == []
    result = call(session, "resume", {interrupt.id: Resolution.cancel("too late")})
    assert result.status == "success"
    assert resumes(log)[0]["status"] == "cancelled"


def test_a_resume_after_a_restart_is_restored_from_the_store_and_sent_once(
    url: str, face: str, log: Path, tmp_path: Path
) -> None:
    db = tmp_path / "threads.db"
    first = make(url, face, store=SQLiteStore(db), thread_id="t-restart")
    assert call(first, "send", REFUND).status == "interrupt"
    # "the process died while the user was deciding": a new session, the same store
    second = make(url, face, store=SQLiteStore(db), thread_id="t-restart")
    call(second, "open")
    (interrupt,) = second.interrupts
    assert interrupt.call is not None and interrupt.call.arguments["cents"] == 500
    result = call(second, "resume", {interrupt.id: Approval.approve()})
    assert result.status == "success"
    # a third process, the same store: the interrupt is answered, nothing is resumed again
    third = make(url, face, store=SQLiteStore(db), thread_id="t-restart")
    with pytest.raises(UsageError, match="nothing to resume"):
        call(third, "resume", {interrupt.id: Approval.approve()})
    assert resumes(log) == [
        {"interruptId": interrupt.id, "status": "resolved", "payload": {"approved": True}}
    ]


def test_a_restored_interrupt_goes_to_the_handler_before_the_next_message(
    url: str, face: str, log: Path, tmp_path: Path
) -> None:
    db = tmp_path / "threads.db"
    first = make(url, face, store=SQLiteStore(db), thread_id="t-handler")
    assert call(first, "send", REFUND).status == "interrupt"
    second = make(
        url, face, store=SQLiteStore(db), thread_id="t-handler", on_interrupt=lambda i: False
    )
    result = call(second, "send", "hello")
    assert result.status == "success"
    assert [e["status"] for e in resumes(log)] == ["cancelled"]


def test_ask_sees_an_approval_request_as_it_sees_a_call(url: str, face: str, log: Path) -> None:
    asked: list[Any] = []

    def ask(pending: Any) -> Approval:
        asked.append(pending)
        return Approval.approve({"order": "A1", "cents": 100})

    session = make(url, face, ask=ask)
    assert call(session, "send", REFUND).status == "success"
    (pending,) = asked
    assert pending.name == "refund" and pending.proposed == {"order": "A1", "cents": 500}
    assert resumes(log)[0]["payload"] == {
        "approved": True,
        "arguments": {"order": "A1", "cents": 100},
    }
    # declined through ask: cancelled, never approved
    session = make(url, face, ask=lambda pending: False)
    assert call(session, "send", REFUND).status == "success"
    assert resumes(log)[1]["status"] == "cancelled"
    # an interrupt naming no call is not ask's to answer: send returns it
    session = make(url, face, ask=ask)
    assert call(session, "send", "ask " + json.dumps(CITY)).status == "interrupt"
    assert len(asked) == 1 and len(resumes(log)) == 2


def test_edited_arguments_are_validated_against_the_advertised_tool() -> None:
    schema = {
        "type": "object",
        "properties": {"order": {"type": "string"}, "cents": {"type": "integer"}},
        "required": ["order", "cents"],
    }
    named = InterruptedCall("c1", "refund", {"order": "A1", "cents": 5}, "{}", "Refund.", schema)
    interrupt = Interrupt("i1", "approval", tool_call_id="c1", call=named)
    with pytest.raises(UsageError, match="TOOL-21") as info:
        interrupt_resolution(interrupt, Approval.approve({"cents": "all"}))
    assert "/cents" in str(info.value) and "order" in str(info.value)
    edited = interrupt_resolution(interrupt, Approval.approve({"order": "A1", "cents": 1}))
    assert edited.payload == {"approved": True, "arguments": {"order": "A1", "cents": 1}}
    with pytest.raises(UsageError, match="names no call"):
        interrupt_resolution(Interrupt("i2", "input"), Approval.approve({"x": 1}))
    with pytest.raises(UsageError, match="answers with a Resolution"):
        interrupt_resolution(interrupt, "yes")
