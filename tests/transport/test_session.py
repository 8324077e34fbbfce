"""Tools from Python callables: schemas from type hints or a pydantic model,
timeouts, sync and async handlers (issue: application session)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from pydantic import BaseModel, Field

from agui_tools._errors import UsageError
from agui_tools.app import Driver
from agui_tools.app._calls import CallStatus
from agui_tools.app._conversation import Conversation
from agui_tools.app._validation import ArgumentValidator
from agui_tools.transport._session import (
    Approval,
    BaseSession,
    RegisteredTool,
    Session,
    SyncSession,
    tool_spec_from_function,
)


def test_schema_from_type_hints_is_strict_2020_12() -> None:
    def book(city: str, nights: int = 1, tags: list[str] | None = None) -> str:
        """Book a hotel."""
        return city

    spec, handler = tool_spec_from_function(book, side_effects=True)
    assert spec.name == "book" and spec.description == "Book a hotel." and spec.side_effects
    schema = dict(spec.parameters or {})
    assert schema["$schema"].endswith("2020-12/schema")
    assert schema["required"] == ["city"] and schema["additionalProperties"] is False
    assert schema["properties"]["nights"]["type"] == "integer"
    validator = ArgumentValidator(schema)
    assert validator.validate({"city": "Oslo"}) == []
    assert {e.keyword for e in validator.validate({"city": 3, "extra": 1})} == {
        "type",
        "additionalProperties",
    }
    assert handler({"city": "Oslo", "nights": 2}) == "Oslo"


class Order(BaseModel):
    sku: str
    qty: int = Field(ge=1)


def test_schema_from_a_pydantic_model() -> None:
    def place(order: Order) -> str:
        """Place an order."""
        return f"{order.qty} x {order.sku}"

    spec, handler = tool_spec_from_function(place)
    assert spec.validator.validate({"sku": "A", "qty": 0})[0].keyword == "minimum"
    assert handler({"sku": "A", "qty": 2}) == "2 x A"


def test_a_tool_needs_a_description_and_resolvable_hints() -> None:
    def nameless(x: int) -> int:
        return x

    with pytest.raises(UsageError):
        tool_spec_from_function(nameless)

    class Local(BaseModel):
        a: int

    def uses_local(arg: Local) -> int:
        """Uses a class only this function's scope knows."""
        return arg.a

    with pytest.raises(UsageError) as info:
        tool_spec_from_function(uses_local)
    assert "Local" in str(info.value)


def _pending_call(session: BaseSession[Any], name: str, args: str) -> Conversation:
    conv = session._conversation()
    conv.next_input(user="go", run_id="r1")
    conv.receive_many(
        [
            {"type": "RUN_STARTED", "threadId": conv.thread_id, "runId": "r1"},
            {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": name},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": args},
            {"type": "TOOL_CALL_END", "toolCallId": "c1"},
            {"type": "RUN_FINISHED", "threadId": conv.thread_id, "runId": "r1"},
        ]
    )
    Driver(conv).end_run()
    return conv


FACES = {"async": Session, "sync": SyncSession}


def _session(face: str, **kw: Any) -> BaseSession[Any]:
    return FACES[face](client=None, **kw)  # type: ignore[arg-type]


def _dispose(session: BaseSession[Any]) -> None:
    """The face's own dispose: awaited for Session, called for SyncSession."""
    if isinstance(session, SyncSession):
        session.dispose(lambda u: None)
    else:
        assert isinstance(session, Session)
        asyncio.run(session.dispose(lambda u: None))


@pytest.mark.parametrize("face", FACES)
def test_handler_timeout_is_an_error_answer_not_a_hang(face: str) -> None:
    session = _session(face, timeout=0.2)

    @session.tool
    def slow(seconds: float) -> str:
        """Sleep."""
        time.sleep(seconds)
        return "woke"

    conv = _pending_call(session, "slow", '{"seconds": 1}')
    _dispose(session)
    call = conv.call("c1")
    assert call.status is CallStatus.FAILED and call.answer is not None
    assert "did not finish within 0.2 s" in (call.answer.error or "")


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("timeout", [60.0, None])
def test_a_handlers_own_timeout_error_is_its_failure(face: str, timeout: float | None) -> None:
    session = _session(face, timeout=timeout)

    @session.tool
    def lookup(q: str) -> str:
        """Look something up."""
        raise TimeoutError("upstream socket timed out after 2 s")

    conv = _pending_call(session, "lookup", '{"q": "x"}')
    _dispose(session)
    error = conv.call("c1").answer.error or ""  # type: ignore[union-attr]
    assert "upstream socket timed out" in error and "did not finish within" not in error


@pytest.mark.parametrize("face", FACES)
def test_async_and_sync_handlers_and_exceptions(face: str) -> None:
    session = _session(face)
    seen: list[Any] = []

    @session.tool
    async def fetch(url: str) -> list[dict[str, Any]]:
        """Fetch a page."""
        await asyncio.sleep(0)
        seen.append(url)
        return [{"type": "text", "text": f"page {url}"}]

    conv = _pending_call(session, "fetch", '{"url": "https://example.com"}')
    _dispose(session)
    assert conv.call("c1").answer.content == [{"type": "text", "text": "page https://example.com"}]  # type: ignore[union-attr]
    assert seen == ["https://example.com"]


@pytest.mark.parametrize("face", FACES)
def test_the_user_is_asked_and_the_approved_edit_runs(face: str) -> None:
    asked: list[str] = []
    ran: list[int] = []

    def ask(call: Any) -> Approval:
        asked.append(call.call_id)
        return Approval.approve({"qty": 1})

    session = _session(face, ask=ask)

    @session.tool(side_effects=True)
    def order(qty: int) -> str:
        """Order."""
        ran.append(qty)
        return "ok"

    conv = _pending_call(session, "order", '{"qty": 5}')
    _dispose(session)
    assert asked == ["c1"] and ran == [1]
    assert conv.call("c1").status is CallStatus.DONE


@pytest.mark.parametrize("face", FACES)
def test_an_ask_that_answers_false_declines_and_nothing_runs(face: str) -> None:
    session = _session(face, ask=lambda call: False)

    @session.tool(side_effects=True)
    def order(qty: int) -> str:
        """Order."""
        raise AssertionError("nobody approved this")

    conv = _pending_call(session, "order", '{"qty": 5}')
    _dispose(session)
    answer = conv.call("c1").answer
    assert answer is not None and answer.outcome == "declined" and answer.decided_by == "user"


def test_a_sync_sessions_ask_must_answer_directly_and_nothing_is_lost() -> None:
    async def ask(call: Any) -> bool:
        return True

    session = _session("sync", ask=ask)

    @session.tool(side_effects=True)
    def order(qty: int) -> str:
        """Order."""
        raise AssertionError("nobody approved this")

    conv = _pending_call(session, "order", '{"qty": 5}')
    with pytest.raises(UsageError, match="must answer directly"):
        _dispose(session)
    assert conv.call("c1").status is CallStatus.AWAITING_CONSENT  # still waiting, not lost


def test_registration_rules() -> None:
    session = Session(client=None)  # type: ignore[arg-type]

    @session.tool(name="x", description="an x")
    def f() -> None:
        return None

    with pytest.raises(UsageError):
        session.add_tool(*tool_spec_from_function(f, name="x", description="dup"))
    session._conversation()
    with pytest.raises(UsageError):
        session.add_tool(*tool_spec_from_function(f, name="y", description="late"))
    assert isinstance(session._tools["x"], RegisteredTool)
