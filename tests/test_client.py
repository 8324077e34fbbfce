"""The HTTP client against a real server on loopback: framing, statuses,
truncation, abandonment (TRANS-2..6, RUN-9, INPUT-4)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import orjson
import pytest

from agui_tools.client import AgentClient, SyncAgentClient, TransportError
from agui_tools.conversation import Conversation, TextDelta
from agui_tools.errors import ProtocolViolation

from .scripted_server import Script, app_for, serve


def sse(events: list[dict[str, Any]], *, eol: bytes = b"\n") -> list[bytes]:
    return [b"data: " + orjson.dumps(e) + eol + eol for e in events]


def events_for(conv: Conversation) -> list[dict[str, Any]]:
    inp = conv.pending_input
    ids = {"threadId": inp["threadId"], "runId": inp["runId"]}
    return [
        {"type": "RUN_STARTED", **ids},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hello, "},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "world."},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "RUN_FINISHED", **ids},
    ]


def test_request_shape_and_a_full_run() -> None:
    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")
    script = Script(chunks=[b": keep-alive\n\n", *sse(events_for(conv))])
    with serve(app_for(script)) as base:
        with SyncAgentClient(f"{base}/agent") as client:
            updates: list[Any] = []
            result = client.run(conv, on_update=updates.append)
    assert result.status == "success"
    assert "".join(u.delta for u in updates if isinstance(u, TextDelta)) == "Hello, world."
    [request] = script.requests
    assert request["headers"]["content-type"] == "application/json"
    assert request["headers"]["accept"] == "text/event-stream"
    body = json.loads(request["body"])
    assert body["protocolVersion"] == "1.1" and body["threadId"] == "t"
    assert body["messages"][0]["content"] == "hi"


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_any_line_ending_and_byte_by_byte_delivery(eol: bytes) -> None:
    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")
    whole = b"".join(sse(events_for(conv), eol=eol))
    script = Script(chunks=[whole[i : i + 1] for i in range(len(whole))])  # one byte per write
    with serve(app_for(script)) as base, SyncAgentClient(f"{base}/agent") as client:
        result = client.run(conv)
    assert result.status == "success"
    assert conv.messages[-1]["content"] == "Hello, world."


def test_non_2xx_is_an_error_with_status_and_body() -> None:
    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")
    body = b'{"error":{"rule":"PROC-2","path":"/messages/0/content"}}'
    script = Script(chunks=[body], status=422, content_type="application/json")
    with serve(app_for(script)) as base, SyncAgentClient(f"{base}/agent") as client:
        with pytest.raises(TransportError) as info:
            client.run(conv)
    assert info.value.status == 422 and "/messages/0/content" in info.value.body
    assert not conv.run_in_progress and conv.runs == []  # the run never started: nothing recorded


def test_200_that_is_not_an_event_stream_is_an_error() -> None:
    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")
    script = Script(chunks=[b'{"ok": true}'], content_type="application/json")
    with serve(app_for(script)) as base, SyncAgentClient(f"{base}/agent") as client:
        with pytest.raises(TransportError) as info:
            client.run(conv)
    assert info.value.status == 200 and "not an event stream" in str(info.value)


def test_a_200_never_implies_success_truncated_body() -> None:
    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")
    events = events_for(conv)[:-1]  # no RUN_FINISHED
    cut = [*sse(events), b'data: {"type":"TEXT_MES']  # and a half event
    script = Script(chunks=cut)
    with serve(app_for(script)) as base, SyncAgentClient(f"{base}/agent") as client:
        result = client.run(conv)
    assert result.status == "truncated"
    assert conv.messages[-1]["content"] == "Hello, world."  # delivered stays delivered


def test_stream_violation_surfaces_and_the_run_ends_rejected() -> None:
    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")
    events = events_for(conv)
    events.insert(2, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "nope", "delta": "x"})
    script = Script(chunks=sse(events))
    with serve(app_for(script)) as base, SyncAgentClient(f"{base}/agent") as client:
        with pytest.raises(ProtocolViolation) as info:
            client.run(conv)
    assert info.value.rule == "STREAM-3"
    assert conv.runs[-1].status == "rejected"


def test_abandoning_a_stream_never_synthesizes_a_finish() -> None:
    async def main() -> None:
        conv = Conversation(thread_id="t")
        conv.next_input(user="hi")
        events = events_for(conv)[:3]
        script = Script(chunks=sse(events), hang_after=True)
        with serve(app_for(script)) as base:
            async with AgentClient(f"{base}/agent") as client:
                task = asyncio.create_task(client.run(conv))
                while not conv.messages or conv.messages[-1].get("content") != "Hello, ":
                    await asyncio.sleep(0.01)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
        assert conv.runs[-1].status == "truncated"
        assert not conv.run_in_progress

    asyncio.run(main())


def test_read_timeout_ends_the_run_as_truncated() -> None:
    import httpx

    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")
    script = Script(chunks=sse(events_for(conv)[:2]), hang_after=True)
    with serve(app_for(script)) as base:
        with SyncAgentClient(f"{base}/agent", timeout=httpx.Timeout(5.0, read=0.5)) as client:
            with pytest.raises(httpx.ReadTimeout):
                client.run(conv)
    assert conv.runs[-1].status == "truncated"


def test_connection_refused_is_a_clear_error() -> None:
    import httpx

    from .scripted_server import free_port

    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")
    with SyncAgentClient(f"http://127.0.0.1:{free_port()}/agent") as client:
        with pytest.raises(httpx.ConnectError):
            client.run(conv)
    assert not conv.run_in_progress
