"""End to end on loopback: a real uvicorn server running our agent API, the real
client and the application session (issue: HTTP transport, acceptance)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_tools._errors import InputRejected
from agui_tools.app._calls import CallStatus, PendingCall
from agui_tools.app._conversation import CallUpdate, Conversation, TextDelta
from agui_tools.transport._client import AgentClient, SyncAgentClient, TransportError
from agui_tools.transport._session import Approval, BaseSession, Session, SyncSession
from tests.helpers.e2e_agent import app
from tests.helpers.scripted_server import free_port, serve

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve(app) as base:
        yield f"{base}/agent"


@pytest.fixture(params=["async", "sync"])
def face(request: pytest.FixtureRequest) -> str:
    """Every session scenario runs on both faces: Session and SyncSession share one loop."""
    return str(request.param)


def make_session(url: str, face: str, ask: Any = None, **kw: Any) -> BaseSession[Any]:
    if face == "sync":
        session: BaseSession[Any] = SyncSession(SyncAgentClient(url), ask=ask, **kw)
    else:
        session = Session(AgentClient(url), ask=ask, **kw)

    @session.tool(side_effects=True)
    def confirm_order(sku: str, qty: int) -> str:
        """Place an order after the user confirmed it."""
        if sku == "FAIL":
            raise RuntimeError("the shop is closed")
        return f"ordered {qty} x {sku}"

    @session.tool
    async def show_chart(series: list[int]) -> str:
        """Render a chart."""
        return f"chart of {len(series)} points"

    return session


def send(session: BaseSession[Any], text: str, updates: list[Any] | None = None) -> Any:
    on_update = updates.append if updates is not None else None
    if isinstance(session, SyncSession):
        with session.client:
            return session.send(text, on_update=on_update)
    assert isinstance(session, Session)

    async def main() -> Any:
        try:
            return await session.send(text, on_update=on_update)
        finally:
            await session.client.aclose()

    return asyncio.run(main())


def test_text_streams(url: str, face: str) -> None:
    updates: list[Any] = []
    session = make_session(url, face)
    result = send(session, "text", updates)
    assert result.status == "success"
    assert "".join(u.delta for u in updates if isinstance(u, TextDelta)) == "Hello from the agent."


def test_one_frontend_call_round_trip_with_consent(url: str, face: str) -> None:
    asked: list[PendingCall] = []
    updates: list[Any] = []

    def ask(call: PendingCall) -> Approval:
        asked.append(call)
        return Approval.approve()

    session = make_session(url, face, ask=ask)
    result = send(session, "frontend", updates)
    assert result.status == "success" and result.pending == []
    assert [c.name for c in asked] == ["confirm_order"]  # side effects: the user was asked
    statuses = [u.status for u in updates if isinstance(u, CallUpdate)]
    assert statuses[0] is CallStatus.STREAMING
    assert CallStatus.AWAITING_CONSENT in statuses and CallStatus.EXECUTING in statuses
    assert statuses[-1] is CallStatus.DONE
    conv = session.conversation
    assert conv is not None and conv.messages[-1]["content"] == "Noted. c1: ordered 2 x W-1"
    assert len(conv.runs) == 2


def test_parallel_frontend_calls(url: str, face: str) -> None:
    session = make_session(url, face, ask=lambda call: True)
    result = send(session, "parallel")
    assert result.status == "success"
    conv = session.conversation
    assert conv is not None
    assert conv.messages[-1]["content"] == "Noted. c1: ordered 1 x A; c2: chart of 2 points"


def test_decline_is_answered_and_the_agent_hears_it(url: str, face: str) -> None:
    session = make_session(url, face, ask=lambda call: Approval.decline("not today"))
    send(session, "decline")
    conv = session.conversation
    assert conv is not None
    final = conv.messages[-1]["content"]
    assert "The user declined this tool call" in final and "not today" in final


def test_handler_failure_becomes_an_error_tool_message(url: str, face: str) -> None:
    def ask(call: PendingCall) -> Approval:
        return Approval.approve({"sku": "FAIL", "qty": 1})  # the user edits the arguments

    session = make_session(url, face, ask=ask)
    send(session, "failure")
    conv = session.conversation
    assert conv is not None
    tool = next(m for m in conv.messages if m["role"] == "tool")
    assert tool["error"] == "RuntimeError: the shop is closed"
    assert "(error: RuntimeError: the shop is closed)" in conv.messages[-1]["content"]


def test_schema_invalid_arguments_are_answered_with_an_error(url: str, face: str) -> None:
    asked: list[Any] = []
    session = make_session(url, face, ask=lambda call: asked.append(call) or True)
    send(session, "invalid")
    conv = session.conversation
    assert conv is not None and asked == []  # never offered for consent
    tool = next(m for m in conv.messages if m["role"] == "tool")
    assert "/qty" in tool["error"] and "[type]" in tool["error"]
    assert "error:" in conv.messages[-1]["content"]


def test_agent_side_results(url: str, face: str) -> None:
    session = make_session(url, face)
    result = send(session, "agent-side")
    assert result.status == "success"
    conv = session.conversation
    assert conv is not None and [m["role"] for m in conv.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


def test_no_consent_callback_means_no_side_effect(url: str, face: str) -> None:
    session = make_session(url, face)  # nobody to ask
    send(session, "frontend")
    conv = session.conversation
    assert conv is not None
    tool = next(m for m in conv.messages if m["role"] == "tool")
    assert "policy" in tool["content"] and "no user was asked" in tool["content"]


def test_dangling_call_rejected_by_the_server(url: str) -> None:
    body = {
        "threadId": "t",
        "runId": "r2",
        "messages": [
            {
                "id": "a",
                "role": "assistant",
                "toolCalls": [
                    {
                        "id": "c-dangling",
                        "type": "function",
                        "function": {"name": "confirm_order", "arguments": "{}"},
                    }
                ],
            },
            {"id": "u", "role": "user", "content": "continue"},
        ],
    }
    r = httpx.post(url, json=body, headers={"Accept": "text/event-stream"})
    assert (
        r.status_code == 409
        and "c-dangling" in r.text
        and "text/event-stream" not in r.headers["content-type"]
    )
    # and our own client refuses to send such an input in the first place
    conv = Conversation(thread_id="t", messages=body["messages"])
    with pytest.raises(Exception) as info:
        conv.next_input()
    assert "c-dangling" in str(info.value)


def test_malformed_input_is_4xx_naming_the_field(url: str) -> None:
    r = httpx.post(url, json={"threadId": "t", "runId": 7, "messages": []})
    assert r.status_code == 422 and "/runId" in r.text
    r = httpx.post(url, content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400

    async def main() -> None:
        async with AgentClient(url) as client:
            async for _ in client.frames(
                {"threadId": "t", "runId": "r", "messages": [], "tools": [{"name": "x"}]}
            ):
                raise AssertionError("the client must refuse the malformed input before sending")

    with pytest.raises(InputRejected) as info:
        asyncio.run(main())
    assert info.value.path == "/tools/0/description"


def test_keepalives_are_ignored(url: str) -> None:
    # the agent streams slowly and the server sends keep-alive comments every 50 ms
    conv = Conversation(thread_id="slow-thread")
    conv.next_input(user="slow")

    async def main() -> int:
        deltas = 0
        async with AgentClient(url) as client:
            task = asyncio.create_task(client.run(conv, on_update=lambda u: None))
            while len(
                [m for m in conv.messages if m["role"] == "assistant"]
            ) == 0 or "tick 3 " not in conv.messages[-1].get("content", ""):
                await asyncio.sleep(0.02)
            deltas = conv.messages[-1]["content"].count("tick")
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        return deltas

    assert asyncio.run(main()) >= 4
    assert conv.runs[-1].status == "truncated" and conv.warnings == []


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_server_killed_mid_run_is_a_truncated_run() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.helpers.e2e_agent", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/agent", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and proc.poll() is None, (
                    proc.stderr.read() if proc.stderr else ""
                )
                time.sleep(0.05)
        conv = Conversation(thread_id="kill-thread")
        conv.next_input(user="slow")

        async def main() -> None:
            async with AgentClient(f"http://127.0.0.1:{port}/agent") as client:
                task = asyncio.create_task(client.run(conv))
                while not any("tick 2" in str(m.get("content")) for m in conv.messages):
                    await asyncio.sleep(0.02)
                os.kill(proc.pid, signal.SIGKILL)
                with pytest.raises(TransportError, match="failed mid-stream"):
                    await task

        asyncio.run(main())
        run = conv.runs[-1]
        assert run.status == "truncated"
        assert "tick 2" in conv.messages[-1]["content"]  # what arrived stays
    finally:
        proc.kill()
        proc.wait(timeout=10)
