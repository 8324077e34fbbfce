"""The binary binding over real HTTP on loopback (TRANS-7): negotiation, the stream, errors,
and the client choosing its parser by the answer's Content-Type."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from agui_tools import ProtocolViolation, UsageError
from agui_tools.agent import Run
from agui_tools.app._conversation import Conversation
from agui_tools.transport._client import AgentClient, SyncAgentClient
from agui_tools.transport._server import accepts_proto, agent_app
from agui_tools.wire._enforce import DEFAULT_MAX_DEPTH
from agui_tools.wire._framing import PROTO_MEDIA_TYPE, SSEReader
from agui_tools.wire._pipeline import ConsumerPipeline
from agui_tools.wire._proto_codec import encode_proto_event
from agui_tools.wire._proto_framing import ProtoReader, proto_frame
from tests.helpers.attacks import deep
from tests.helpers.scripted_server import Script, app_for, serve

INPUT: dict[str, Any] = {
    "threadId": "t1",
    "runId": "r1",
    "messages": [{"id": "u1", "role": "user", "content": "Weather in Paris? ☀"}],
    "tools": [{"name": "show_card", "description": "Render a weather card."}],
}
BOTH = f"{PROTO_MEDIA_TYPE}, text/event-stream"


async def happy(run: Run) -> None:
    async with run.message() as m:
        await m.delta("Let me check — ")
        async with run.tool_call("get_weather", parent_message_id=m.id) as call:
            await call.args('{"city":"Paris"}')
    await run.result(call.id, "18C, sunny")
    await run.state_snapshot({"city": "Paris", "temps": [18, 19.5, None], "10": {"ü": True}})
    await run.state_delta([{"op": "replace", "path": "/city", "value": "Lyon"}])
    run.set_result({"answer": 18})
    run.add_usage({"provider": "p", "inputTokens": 2**53 - 1})
    async with run.tool_call("show_card", chunked=True) as card:
        await card.args('{"temp":18}')


async def boom(run: Run) -> None:
    await run.text("About to")
    raise RuntimeError("secret")


quiet_until = threading.Event()


async def quiet(run: Run) -> None:
    await run.text("Thinking…")
    while not quiet_until.is_set():
        await _sleep(0.01)
    await run.text("Done.")


DEEPEST = deep(DEFAULT_MAX_DEPTH - 1)  # the deepest state /snapshot may hold (issue 28, 9a)


async def deep_state(run: Run) -> None:
    await run.state_snapshot(DEEPEST)


async def _sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    app = Starlette(
        routes=[
            Mount("/happy", agent_app(happy)),
            Mount("/boom", agent_app(boom)),
            Mount("/quiet", agent_app(quiet, keepalive=0.02)),
            Mount("/deep", agent_app(deep_state)),
        ]
    )
    with serve(app) as url:
        yield url


def post(base: str, path: str, accept: str | None, body: Any = INPUT) -> httpx.Response:
    with httpx.Client(timeout=10) as http:
        del http.headers["accept"]  # httpx sends */* unless told otherwise
        headers = {"content-type": "application/json"}
        if accept is not None:
            headers["accept"] = accept
        return http.post(f"{base}{path}", content=orjson.dumps(body), headers=headers)


def normalized(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events with the ids a run mints (messages, calls) numbered by first sight,
    and no timestamps: two runs of one agent, whatever the binding."""
    names: dict[str, str] = {}

    def walk(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items() if k != "timestamp"}
        if isinstance(value, list):
            return [walk(v, key) for v in value]
        if key in ("messageId", "toolCallId", "parentMessageId", "id", "pendingToolCallIds"):
            return names.setdefault(value, f"id{len(names)}")
        return value

    return [walk(e) for e in events]


# -- negotiation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("accept", "binary"),
    [
        (None, False),
        ("", False),
        ("text/event-stream", False),
        (PROTO_MEDIA_TYPE, True),
        (BOTH, True),
        ("text/event-stream, application/vnd.ag-ui.event+proto;q=0.1", True),  # q not compared
        ("*/*", True),
        ("application/*", True),
        ("APPLICATION/VND.AG-UI.EVENT+PROTO", True),
        (f"{PROTO_MEDIA_TYPE};q=0", False),
        (f"{PROTO_MEDIA_TYPE};q=0, */*", False),  # the most specific range decides
        (f"*/*;q=0, {PROTO_MEDIA_TYPE}", True),
        ("application/*;q=0, */*", False),
        ("application/*;q=0.5", True),
        (f"{PROTO_MEDIA_TYPE};q=nonsense", False),
        (f"{PROTO_MEDIA_TYPE};version=2", False),  # a parameter this type does not carry
        ("text/*", False),
        ("application/json", False),
        ("garbage", False),
    ],
)
def test_accept_admits_the_binding_as_the_page_says(accept: str | None, binary: bool) -> None:
    assert accepts_proto(accept) is binary


# -- the server --------------------------------------------------------------------------


def test_the_same_run_over_both_bindings(base: str) -> None:
    sse = post(base, "/happy/", "text/event-stream")
    binary = post(base, "/happy/", BOTH)
    assert sse.status_code == binary.status_code == 200
    assert sse.headers["content-type"] == "text/event-stream"
    assert binary.headers["content-type"] == PROTO_MEDIA_TYPE  # exactly, no parameters
    assert binary.content[:1] == b"\x00"  # a frame header, not text
    reader = ProtoReader()
    events = reader.feed(binary.content)
    assert not reader.has_partial_event and reader.warnings == []
    expected = [orjson.loads(f) for f in SSEReader().feed(sse.content)]
    assert normalized(events) == normalized(expected)
    assert {e["type"] for e in events} >= {"STATE_SNAPSHOT", "STATE_DELTA", "TOOL_CALL_RESULT"}
    pipe = ConsumerPipeline(run_input=INPUT, strict=True)
    pipe.feed_many(events)
    result = pipe.close()
    assert result.completed and result.warnings == []
    assert result.runs[0].status == "success"
    assert len(binary.content) < len(sse.content)


def test_a_wildcard_gets_the_binary_binding_and_no_accept_gets_sse(base: str) -> None:
    assert post(base, "/happy/", "*/*").headers["content-type"] == PROTO_MEDIA_TYPE
    assert post(base, "/happy/", None).headers["content-type"] == "text/event-stream"


@pytest.mark.run_error("RuntimeError")
def test_an_agent_failure_is_a_run_error_frame(base: str) -> None:
    response = post(base, "/boom/", BOTH)
    assert response.status_code == 200
    events = ProtoReader().feed(response.content)
    assert events[-1]["type"] == "RUN_ERROR"
    assert "secret" not in response.content.decode("latin-1")


def test_a_rejection_before_the_stream_is_an_http_error_not_frames(base: str) -> None:
    response = post(base, "/happy/", BOTH, body={"threadId": "t"})
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/json")
    assert orjson.loads(response.content)["error"]["rule"]


def test_a_quiet_binary_stream_sends_no_keepalive(base: str) -> None:
    """The binding has no comment frame: anything sent while the agent is quiet would
    have to be a frame, and a frame that is not an event is fatal to a consumer."""
    chunks: list[bytes] = []
    with httpx.Client(timeout=10) as http:
        with http.stream(
            "POST",
            f"{base}/quiet/",
            content=orjson.dumps(INPUT),
            headers={"content-type": "application/json", "accept": BOTH},
        ) as response:
            stream = response.iter_raw()
            chunks.append(next(stream))
            time.sleep(0.2)  # ten keep-alive periods, for an SSE stream
            quiet_until.set()
            chunks.extend(stream)
    quiet_until.clear()
    reader = ProtoReader()
    events = [e for c in chunks for e in reader.feed_frames(c)]
    assert [e["type"] for e in events][-1] == "RUN_FINISHED"
    assert all(isinstance(e, dict) for e in events)


# -- the client ---------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["proto", "auto"])
def test_the_client_asks_for_the_binding_and_reads_it(base: str, transport: str) -> None:
    results = {}
    for t in ("sse", transport):
        conv = Conversation(thread_id="t")
        conv.next_input(user="Weather in Paris?")
        with SyncAgentClient(f"{base}/happy/", transport=t) as client:  # type: ignore[arg-type]
            results[t] = (client.run(conv), conv.messages)
    (sse_run, sse_messages), (bin_run, bin_messages) = results["sse"], results[transport]
    assert bin_run.status == sse_run.status == "success"
    assert normalized(bin_messages) == normalized(sse_messages)


def test_the_async_client_reads_the_binding_too(base: str) -> None:
    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")

    async def main() -> Any:
        async with AgentClient(f"{base}/happy/", transport="proto") as client:
            return await client.run(conv)

    assert asyncio.run(main()).status == "success"
    assert any(m.get("toolCalls") for m in conv.messages)


def test_the_accept_header_each_transport_sends() -> None:
    assert SyncAgentClient("http://x", transport="sse").headers["Accept"] == "text/event-stream"
    assert SyncAgentClient("http://x", transport="proto").headers["Accept"] == BOTH
    assert SyncAgentClient("http://x").headers["Accept"] == "text/event-stream"
    with pytest.raises(UsageError, match="transport"):
        SyncAgentClient("http://x", transport="grpc")  # type: ignore[arg-type]


def _events(conv: Conversation) -> list[dict[str, Any]]:
    ids = {"threadId": conv.pending_input["threadId"], "runId": conv.pending_input["runId"]}
    return [
        {"type": "RUN_STARTED", **ids},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hello"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "RUN_FINISHED", **ids},
    ]


def test_the_proto_client_is_prepared_for_sse(caplog: pytest.LogCaptureFixture) -> None:
    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")
    script = Script(chunks=[b"data: " + orjson.dumps(e) + b"\n\n" for e in _events(conv)])
    with serve(app_for(script)) as url, SyncAgentClient(f"{url}/agent", transport="proto") as c:
        with caplog.at_level("INFO", logger="agui_tools.transport"):
            assert c.run(conv).status == "success"
    assert script.requests[0]["headers"]["accept"] == BOTH
    assert "does not serve the binary binding" in caplog.text


def test_frames_split_anywhere_across_network_chunks() -> None:
    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")
    body = b"".join(proto_frame(encode_proto_event(e)) for e in _events(conv))
    script = Script(chunks=[body[i : i + 3] for i in range(0, len(body), 3)], delay=0.001)
    script.content_type = PROTO_MEDIA_TYPE
    with serve(app_for(script)) as url, SyncAgentClient(f"{url}/agent", transport="auto") as c:
        assert c.run(conv).status == "success"
    assert conv.messages[-1]["content"] == "Hello"


def test_a_body_ending_mid_frame_is_a_truncated_run() -> None:
    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")
    body = b"".join(proto_frame(encode_proto_event(e)) for e in _events(conv))
    script = Script(chunks=[body[:-2]], content_type=PROTO_MEDIA_TYPE)
    with serve(app_for(script)) as url, SyncAgentClient(f"{url}/agent", transport="proto") as c:
        result = c.run(conv)
    assert result.status == "truncated"
    assert conv.messages[-1]["content"] == "Hello"  # what arrived is kept


def test_an_undecodable_frame_rejects_the_run_naming_the_rule() -> None:
    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")
    events = _events(conv)
    body = b"".join(proto_frame(encode_proto_event(e)) for e in events[:2])
    body += proto_frame(b"\xff\x01") + proto_frame(encode_proto_event(events[-1]))
    script = Script(chunks=[body], content_type=PROTO_MEDIA_TYPE)
    with serve(app_for(script)) as url, SyncAgentClient(f"{url}/agent", transport="proto") as c:
        with pytest.raises(ProtocolViolation) as info:
            c.run(conv)
    assert info.value.rule == "TRANS-7" and info.value.index == 2
    assert "binary frame #2" in str(info.value)
    assert conv.runs[-1].status == "rejected"
    assert conv.messages[-1]["role"] == "assistant"  # what arrived before it stays


# -- nesting: the bindings agree (issue 28, item 9a) -------------------------------------


def test_a_state_at_the_nesting_limit_crosses_both_bindings(base: str) -> None:
    """Our server encodes it, our client decodes it: 127 levels under /snapshot (32
    object levels were all upb reads before)."""
    for transport in ("sse", "proto"):
        conv = Conversation(thread_id="t")
        conv.next_input(user="hi")
        with SyncAgentClient(f"{base}/deep/", transport=transport) as client:  # type: ignore[arg-type]
            assert client.run(conv).status == "success", transport
        assert conv.state == DEEPEST, transport


def test_one_level_past_the_limit_is_the_same_limit_verdict_on_both_bindings() -> None:
    """A producer that does not enforce the limit sends a state one level too deep:
    the client rejects the run with the same LIMIT violation whichever binding."""
    verdicts = []
    for binary in (False, True):
        conv = Conversation(thread_id="t")
        conv.next_input(user="hi")
        ids = {"threadId": conv.pending_input["threadId"], "runId": conv.pending_input["runId"]}
        events = [
            {"type": "RUN_STARTED", **ids},
            {"type": "STATE_SNAPSHOT", "snapshot": [DEEPEST]},
            {"type": "RUN_FINISHED", **ids},
        ]
        if binary:
            body = b"".join(proto_frame(encode_proto_event(e, max_depth=1000)) for e in events)
            script = Script(chunks=[body], content_type=PROTO_MEDIA_TYPE)
        else:
            script = Script(chunks=[b"data: " + orjson.dumps(e) + b"\n\n" for e in events])
        transport = "proto" if binary else "sse"
        with (
            serve(app_for(script)) as url,
            SyncAgentClient(f"{url}/agent", transport=transport) as c,
        ):
            with pytest.raises(ProtocolViolation) as info:
                c.run(conv)
        exc = info.value
        verdicts.append((type(exc), exc.rule, exc.index, exc.path, exc.explanation))
        assert conv.runs[-1].status == "rejected"
    assert verdicts[0] == verdicts[1]
    assert verdicts[0][1] == "LIMIT" and verdicts[0][2] == 1
    assert f"max_depth={DEFAULT_MAX_DEPTH}" in verdicts[0][4]
