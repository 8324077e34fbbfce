"""The HTTP client against a real server on loopback: framing, statuses,
truncation, abandonment (TRANS-2..6, RUN-9, INPUT-4)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import orjson
import pytest

from agui_tools._errors import LimitExceeded, ProtocolViolation, UsageError
from agui_tools.app._conversation import Conversation, TextDelta
from agui_tools.transport._client import AgentClient, SyncAgentClient, TransportError
from tests.helpers.scripted_server import Script, app_for, serve


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
            with pytest.raises(TransportError, match="failed mid-stream") as info:
                client.run(conv)
    assert isinstance(info.value.__cause__, httpx.ReadTimeout) and info.value.status is None
    assert conv.runs[-1].status == "truncated"


def test_connection_refused_is_a_clear_error() -> None:
    import httpx

    from tests.helpers.scripted_server import free_port

    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")
    url = f"http://127.0.0.1:{free_port()}/agent"
    with SyncAgentClient(url) as client:
        with pytest.raises(TransportError, match="cannot reach the agent") as info:
            client.run(conv)
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert info.value.status is None and info.value.url == url
    assert not conv.run_in_progress


def test_a_framing_violation_ends_the_run_rejected_with_it() -> None:
    """A frame the SSE reader cannot produce is a stream violation like any other: the run
    is recorded ``rejected`` with it, and what arrived before it stays delivered."""
    for sync in (True, False):
        conv = Conversation(thread_id="t")
        conv.next_input(user="hi")
        frames = sse(events_for(conv))
        # one network chunk: the broken event arrives with the ones before it
        script = Script(chunks=[b"".join(frames[:3]) + b"data: \xff\xfe\n\n" + frames[5]])
        with serve(app_for(script)) as base, pytest.raises(ProtocolViolation) as info:
            if sync:
                with SyncAgentClient(f"{base}/agent") as client:
                    client.run(conv)
            else:

                async def main(url: str, conv: Conversation) -> None:
                    async with AgentClient(url) as client:
                        await client.run(conv)

                asyncio.run(main(f"{base}/agent", conv))
        assert (info.value.rule, info.value.index) == ("TRANS-4", 3)
        run = conv.runs[-1]
        assert run.status == "rejected"
        assert run.violation is not None and run.violation.rule == "TRANS-4"
        assert conv.messages[-1]["content"] == "Hello, "  # delivered before the violation


def test_state_nested_past_the_limit_is_rejected_and_the_next_request_still_sends() -> None:
    """Deep state used to crash the reducer (deepcopy) or the next request (orjson writes
    254 levels); now the snapshot is a LIMIT violation and the agreed state is kept."""
    conv = Conversation(thread_id="t", state={"agreed": True})
    conv.next_input(user="hi")
    ids = {"threadId": "t", "runId": conv.pending_input["runId"]}
    for depth in (300, 700):
        deep = b'{"type":"STATE_SNAPSHOT","snapshot":{"a":' + b"[" * depth + b"]" * depth + b"}}"
        chunks = [*sse([{"type": "RUN_STARTED", **ids}]), b"data: " + deep + b"\n\n"]
        script = Script(chunks=chunks)
        with serve(app_for(script)) as base, SyncAgentClient(f"{base}/agent") as client:
            with pytest.raises(LimitExceeded) as info:
                client.run(conv)
        assert info.value.path.startswith("/snapshot/a/0")
        assert conv.runs[-1].status == "rejected" and conv.state == {"agreed": True}
        conv.next_input(user="again")
        ids = {"threadId": "t", "runId": conv.pending_input["runId"]}
    script = Script(chunks=sse(events_for(conv)))
    with serve(app_for(script)) as base, SyncAgentClient(f"{base}/agent") as client:
        assert client.run(conv).status == "success"
    assert json.loads(script.requests[0]["body"])["state"] == {"agreed": True}


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_state_is_refused_before_anything_is_sent(bad: float) -> None:
    """orjson would send NaN and ±Infinity as null: the agent would see another state."""
    conv = Conversation(thread_id="t", state={"plot": {"y": [1.0, bad]}})
    conv.next_input(user="hi")
    script = Script(chunks=sse(events_for(conv)))
    with serve(app_for(script)) as base, SyncAgentClient(f"{base}/agent") as client:
        with pytest.raises(UsageError) as info:
            client.run(conv)
    assert info.value.rule == "TRANS-4" and "/state/plot/y/1" in str(info.value)
    assert script.requests == []  # nothing was sent
    assert conv.runs == [] and not conv.run_in_progress


def test_an_error_body_is_read_only_up_to_the_limit() -> None:
    """A 500 whose body never ends must not hold the client: 64 KiB is read, then it stops."""
    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")
    script = Script(
        chunks=[b"<h1>boom</h1>" + b"x" * 70_000],
        status=500,
        content_type="text/html",
        hang_after=True,  # the body never ends
    )
    with serve(app_for(script)) as base:
        # the read timeout only bounds a failure: a client that read to the end would wait
        # for it and raise ReadTimeout instead of the TransportError asserted here
        with SyncAgentClient(f"{base}/agent", timeout=httpx.Timeout(10.0)) as client:
            with pytest.raises(TransportError) as info:
                client.run(conv)
    assert info.value.status == 500
    assert info.value.body.startswith("<h1>boom</h1>") and len(info.value.body) == 64 * 1024
