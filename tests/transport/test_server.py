"""The HTTP + SSE producer binding, over a real socket (uvicorn on loopback).

Every stream is read as raw bytes, parsed by our SSE reader and judged by the
strict consumer pipeline; every rejection is checked to be JSON naming the
field or the ids, with no event stream. Waiting is done on flags the agents
and the client set, never on how long something took.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI
from starlette.exceptions import StarletteDeprecationWarning

with warnings.catch_warnings():  # starlette 1.x nudges towards httpx2; httpx is what we pin
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

import agui_tools.transport._server as server_module
from agui_tools.agent import Emitter, EventChannel, Run
from agui_tools.transport._server import agent_app
from agui_tools.wire._framing import SSEReader
from agui_tools.wire._pipeline import StreamResult
from tests.helpers.judging import judge_sse

Event = dict[str, Any]
SSE = {"accept": "text/event-stream"}
"""What a client that reads SSE only sends: a default ``*/*`` admits the binary
binding (TRANS-7), which tests/transport/test_proto_transport.py covers."""

INPUT: dict[str, Any] = {
    "threadId": "t1",
    "runId": "r1",
    "messages": [{"id": "u1", "role": "user", "content": "Weather in Paris?"}],
    "tools": [{"name": "show_card", "description": "Render a weather card."}],
}


# -- agents ------------------------------------------------------------------------------


async def happy(run: Run) -> None:
    async with run.message() as m:
        await m.delta("Let me check.")
        async with run.tool_call("get_weather", parent_message_id=m.id) as call:
            await call.args('{"city":"Paris"}')
    await run.result(call.id, "18C, sunny")
    if "show_card" in run.frontend_tools:
        async with run.tool_call("show_card", chunked=True) as card:
            await card.args('{"temp":18}')


saw_keepalive = threading.Event()


async def slow(run: Run) -> None:
    await run.text("Thinking…")
    while not saw_keepalive.is_set():  # quiet until the client has seen a keep-alive
        await asyncio.sleep(0.01)
    await run.text("Done.")


hang_streaming = threading.Event()
hang_cancelled = threading.Event()


async def hang(run: Run) -> None:
    async with run.message() as m:
        await m.delta("Working")
        hang_streaming.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            hang_cancelled.set()
            raise


async def boom(run: Run) -> None:
    async with run.message() as m:
        await m.delta("About to")
        raise RuntimeError("db password is hunter2")


async def echo_props(run: Run) -> None:
    """Hands back what it was given, so a test can see it arrived unaltered."""
    await run.custom("forwardedProps", run.forwarded_props)


async def run_tasks() -> dict[str, list[str]]:
    """Our run tasks still alive in the server's loop (none, once runs have ended)."""
    names = [t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("agui-run-")]
    return {"runs": names}


def build_api() -> FastAPI:
    api = FastAPI()
    api.get("/tasks")(run_tasks)
    api.mount("/happy", agent_app(happy))
    api.mount("/slow", agent_app(slow, keepalive=0.05))
    api.mount("/hang", agent_app(hang))
    api.mount("/boom", agent_app(boom))
    api.mount("/small", agent_app(happy, max_body_bytes=1000))
    api.mount("/lenient", agent_app(happy, strict_input=False))
    api.mount("/props", agent_app(echo_props))
    return api


# -- the server ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    import uvicorn

    port = _free_port()
    config = uvicorn.Config(
        build_api(), host="127.0.0.1", port=port, log_config=None, lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive(), "uvicorn exited during startup"
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as c:
        yield c


def post_stream(client: httpx.Client, url: str, body: Any) -> tuple[httpx.Response, bytes]:
    """POST and read the whole response body as raw bytes."""
    content = body if isinstance(body, bytes) else orjson.dumps(body)
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    with client.stream("POST", url, content=content, headers=headers) as response:
        raw = b"".join(response.iter_raw())
    return response, raw


def judge(
    raw: bytes, run_input: dict[str, Any] = INPUT, *, run_error: bool = False
) -> tuple[StreamResult, list[Event]]:
    """The strict consumer's verdict on raw SSE bytes (:func:`tests.helpers.judging.judge_sse`)."""
    return judge_sse(raw, run_input, run_error=run_error)


def assert_rejected(response: httpx.Response, raw: bytes, status: int) -> dict[str, Any]:
    assert response.status_code == status, raw
    assert response.headers["content-type"].startswith("application/json")
    assert b"data:" not in raw, "no event stream on a rejection"
    error: dict[str, Any] = orjson.loads(raw)["error"]
    assert {"rule", "path", "message"} <= error.keys()
    return error


# -- the stream -------------------------------------------------------------------------------


def test_happy_path_is_a_conforming_lf_framed_event_stream(
    base_url: str, client: httpx.Client
) -> None:
    response, raw = post_stream(client, f"{base_url}/happy/", INPUT)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["cache-control"] == "no-cache"
    assert b"\r" not in raw, "the producer frames with LF only (TRANS-5)"
    assert raw.startswith(b'data: {"type":"RUN_STARTED"')
    assert raw.endswith(b"\n\n")
    result, events = judge(raw)
    run = result.runs[0]
    assert run.status == "success"
    assert [e["type"] for e in events][-1] == "RUN_FINISHED"
    card = next(e for e in events if e.get("toolCallName") == "show_card")
    assert run.pending == [card["toolCallId"]]
    assert events[-1]["outcome"]["pendingToolCallIds"] == [card["toolCallId"]]


def test_fastapi_mount_coexists_with_the_hosts_routes(base_url: str, client: httpx.Client) -> None:
    assert client.get(f"{base_url}/tasks").status_code == 200
    response, raw = post_stream(client, f"{base_url}/happy/", {**INPUT, "runId": "r-mount"})
    assert response.status_code == 200
    judge(raw, {**INPUT, "runId": "r-mount"})


def test_keepalive_comments_while_the_agent_is_quiet(base_url: str, client: httpx.Client) -> None:
    saw_keepalive.clear()
    raw = b""
    # explicit, as a client that cannot read the binary binding must be: httpx's default
    # Accept, */*, admits it (TRANS-7)
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    with client.stream(
        "POST", f"{base_url}/slow/", content=orjson.dumps(INPUT), headers=headers
    ) as response:
        for chunk in response.iter_raw():
            raw += chunk
            if b"\n: keep-alive\n\n" in raw:
                saw_keepalive.set()  # the agent may now finish
    assert saw_keepalive.is_set()
    assert b"\r" not in raw
    _, events = judge(raw)  # the comments are ignored by a consumer (TRANS-5)
    assert [e["type"] for e in events].count("TEXT_MESSAGE_START") == 2


@pytest.mark.run_error("RuntimeError")
def test_an_agent_exception_is_run_error_in_a_200_stream_that_ends(
    base_url: str, client: httpx.Client
) -> None:
    response, raw = post_stream(client, f"{base_url}/boom/", INPUT)
    assert response.status_code == 200
    _, events = judge(raw, run_error=True)
    assert events[-1] == {
        "type": "RUN_ERROR",
        "message": "the agent failed (RuntimeError)",
        "code": "RuntimeError",
    }
    assert b"hunter2" not in raw
    assert "TEXT_MESSAGE_END" not in [e["type"] for e in events]  # abandoned (RUN-15)


def test_client_disconnect_cancels_the_agent_and_the_server_keeps_serving(
    base_url: str, client: httpx.Client
) -> None:
    hang_streaming.clear()
    hang_cancelled.clear()
    reader = SSEReader()
    with client.stream("POST", f"{base_url}/hang/", json=INPUT, headers=SSE) as response:
        assert response.status_code == 200
        for chunk in response.iter_raw():
            frames = reader.feed(chunk)
            if any('"TEXT_MESSAGE_CONTENT"' in f for f in frames):
                break
    # leaving the block closed the connection mid-stream
    assert hang_streaming.is_set()
    assert hang_cancelled.wait(10), "the agent task was not cancelled on disconnect"
    deadline = time.monotonic() + 10
    while client.get(f"{base_url}/tasks").json()["runs"]:
        assert time.monotonic() < deadline, "a run task outlived its request"
        time.sleep(0.01)
    response, raw = post_stream(client, f"{base_url}/happy/", {**INPUT, "runId": "r-after"})
    assert response.status_code == 200
    judge(raw, {**INPUT, "runId": "r-after"})


# -- input handling -----------------------------------------------------------------------------


def test_body_that_is_not_json_is_400(base_url: str, client: httpx.Client) -> None:
    response, raw = post_stream(client, f"{base_url}/happy/", b"{not json")
    error = assert_rejected(response, raw, 400)
    assert error["rule"] == "TRANS-4"


def test_malformed_run_input_is_422_naming_the_field(base_url: str, client: httpx.Client) -> None:
    body = {"threadId": "t1", "runId": "r1", "messages": "not a list"}
    response, raw = post_stream(client, f"{base_url}/happy/", body)
    error = assert_rejected(response, raw, 422)
    assert error["path"] == "/messages"
    assert error["rule"] == "PROC-2"
    response, raw = post_stream(client, f"{base_url}/happy/", [1, 2])
    assert assert_rejected(response, raw, 422)["path"] == ""


def test_oversized_body_is_413_by_content_length(base_url: str, client: httpx.Client) -> None:
    body = {**INPUT, "messages": [{"id": "u1", "role": "user", "content": "x" * 2000}]}
    response, raw = post_stream(client, f"{base_url}/small/", body)
    assert assert_rejected(response, raw, 413)["rule"] == "LIMIT"


def test_oversized_body_is_413_while_reading_without_content_length(
    base_url: str, client: httpx.Client
) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"'
        for _ in range(10):
            yield b"x" * 300
        yield b'"}]}'

    headers = {"content-type": "application/json"}
    response = client.post(f"{base_url}/small/", content=chunks(), headers=headers)
    assert "content-length" not in response.request.headers
    assert assert_rejected(response, response.content, 413)["rule"] == "LIMIT"


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "show_card", "arguments": "{}"}}


def test_a_dangling_frontend_call_is_409_naming_the_ids(
    base_url: str, client: httpx.Client
) -> None:
    body = {
        **INPUT,
        "messages": [
            *INPUT["messages"],
            {"id": "a1", "role": "assistant", "toolCalls": [_call("c1"), _call("c2")]},
            {"id": "t1", "role": "tool", "toolCallId": "c2", "content": "shown"},
        ],
    }
    response, raw = post_stream(client, f"{base_url}/happy/", body)
    error = assert_rejected(response, raw, 409)
    assert error["rule"] == "FE-8"
    assert error["toolCallIds"] == ["c1"]
    assert error["path"] == "/messages/1/toolCalls/0/id"
    # resume entries may cover the call (an approval gate): the transport does not judge it
    resumed = {**body, "resume": [{"interruptId": "i1", "status": "resolved"}]}
    response, raw = post_stream(client, f"{base_url}/happy/", resumed)
    assert response.status_code == 200
    judge(raw, resumed)
    # and a lenient endpoint logs it and runs (never repairing the input)
    response, raw = post_stream(client, f"{base_url}/lenient/", body)
    assert response.status_code == 200
    judge(raw, body)


def test_a_tool_message_answering_no_call_is_409(base_url: str, client: httpx.Client) -> None:
    body = {
        **INPUT,
        "messages": [
            *INPUT["messages"],
            {"id": "t1", "role": "tool", "toolCallId": "ghost", "content": "?"},
        ],
    }
    response, raw = post_stream(client, f"{base_url}/happy/", body)
    error = assert_rejected(response, raw, 409)
    assert error["rule"] == "EVT-9"
    assert error["toolCallIds"] == ["ghost"]


def test_unrecognised_members_are_stripped_and_logged(
    base_url: str, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    body = {**INPUT, "runId": "r-extra", "futureField": 1}
    with caplog.at_level(logging.WARNING, logger="agui_tools.transport"):
        response, raw = post_stream(client, f"{base_url}/happy/", body)
    assert response.status_code == 200
    judge(raw, {**INPUT, "runId": "r-extra"})
    warnings = [r for r in caplog.records if r.name == "agui_tools.transport"]
    assert any("PROC-3" in r.getMessage() and "/futureField" in r.getMessage() for r in warnings)


def test_a_newer_client_version_is_served_with_a_warning(
    base_url: str, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    body = {**INPUT, "runId": "r-newer", "protocolVersion": "1.99"}
    with caplog.at_level(logging.WARNING, logger="agui_tools.transport"):
        response, raw = post_stream(client, f"{base_url}/happy/", body)
    assert response.status_code == 200
    judge(raw, body)
    assert any(
        "VER-5" in r.getMessage() for r in caplog.records if r.name == "agui_tools.transport"
    )


def test_a_huge_protocol_version_is_served_with_a_warning_not_a_500(
    base_url: str, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    """Thousands of digits are a declaration we cannot interpret: proceed and warn (VER-5)."""
    body = {**INPUT, "runId": "r-huge-version", "protocolVersion": "1." + "9" * 5000}
    with caplog.at_level(logging.WARNING, logger="agui_tools.transport"):
        response, raw = post_stream(client, f"{base_url}/happy/", body)
    assert response.status_code == 200, raw[:300]
    judge(raw, body)
    [warning] = [r.getMessage() for r in caplog.records if "VER-5" in r.getMessage()]
    assert len(warning) < 400  # the client's text is quoted truncated, not 5,000 digits


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (orjson.dumps(orjson.dumps(INPUT).decode()), "string"),  # a JSON string holding JSON
        (b"[]", "array"),
        (b"null", "null"),
        (b"42", "integer"),
    ],
)
def test_a_body_that_is_not_an_object_is_422_naming_what_it_was(
    base_url: str, client: httpx.Client, body: bytes, kind: str
) -> None:
    response, raw = post_stream(client, f"{base_url}/happy/", body)
    error = assert_rejected(response, raw, 422)
    assert (error["rule"], error["path"]) == ("TRANS-4", "")
    assert f"a JSON {kind}, not an object" in error["message"]


@pytest.mark.parametrize(
    ("body", "path"),
    [
        (b'{"threadId":"t1","runId":7,"runId":"r1","messages":[]}', "/runId"),
        (
            b'{"threadId":"t1","runId":"r1","messages":'
            b'[{"id":"u1","role":"user","content":"yes","content":"no"}]}',
            "/messages/0/content",
        ),
        (b'{"threadId":"t1","runId":"r1","messages":[], "state":{"a" :1,"a":2}}', "/state/a"),
    ],
    ids=["top-level", "in-a-message", "spaced-in-state"],
)
def test_a_member_named_twice_is_422_naming_it_and_its_path(
    base_url: str, client: httpx.Client, body: bytes, path: str
) -> None:
    response, raw = post_stream(client, f"{base_url}/happy/", body)
    error = assert_rejected(response, raw, 422)
    assert (error["rule"], error["path"]) == ("TRANS-4", path)
    assert f"member {path.rsplit('/', 1)[1]!r} appears twice" in error["message"]


def test_an_integer_beyond_64_bits_is_422_never_rounded(
    base_url: str, client: httpx.Client
) -> None:
    wide = b"123456789012345678901234567890"
    head = b'{"threadId":"t1","runId":"r1","messages":[],'
    response, raw = post_stream(
        client, f"{base_url}/props/", head + b'"forwardedProps":{"n":' + wide + b"}}"
    )
    error = assert_rejected(response, raw, 422)
    assert (error["rule"], error["path"]) == ("INPUT-14", "/forwardedProps/n")
    assert wide.decode() in error["value"]
    response, raw = post_stream(client, f"{base_url}/props/", head + b'"state":[' + wide + b"]}")
    assert assert_rejected(response, raw, 422)["path"] == "/state/0"
    # what fits in 64 bits (orjson reads up to 2**64 - 1 exactly) reaches the agent unaltered
    exact = {**INPUT, "runId": "r-exact", "forwardedProps": {"n": 2**64 - 1, "m": -(2**63)}}
    response, raw = post_stream(client, f"{base_url}/props/", exact)
    assert response.status_code == 200
    _, events = judge(raw, exact)
    assert events[1]["value"] == {"n": 2**64 - 1, "m": -(2**63)}


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [200, 1100])
def test_nesting_beyond_max_depth_is_422_naming_the_limit_and_path(
    base_url: str, client: httpx.Client, depth: int
) -> None:
    body = b'{"threadId":"t1","runId":"r1","messages":[],"state":{"a":' + b"[" * depth
    body += b"]" * depth + b"}}"
    response, raw = post_stream(client, f"{base_url}/happy/", body)
    error = assert_rejected(response, raw, 422)
    assert error["rule"] == "LIMIT"
    if depth < 1024:  # within what the parser reads, the path names the first value past it
        assert error["path"].startswith("/state/a/0/0") and "max_depth=128" in error["message"]
    # within the limit, the same shape is served
    ok = {**INPUT, "runId": "r-deep-ok", "state": {"a": _nested(100)}}
    response, raw = post_stream(client, f"{base_url}/happy/", ok)
    assert response.status_code == 200


def test_a_large_body_is_judged_off_the_event_loop(
    base_url: str, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Judging is proportional to the body; on the loop it would stall every other stream."""
    threads: list[str] = []
    judge_body = server_module.AgentEndpoint._judge

    def recording(self: server_module.AgentEndpoint, body: bytes) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        return judge_body(self, body)

    monkeypatch.setattr(server_module.AgentEndpoint, "_judge", recording)
    big = {**INPUT, "runId": "r-big", "context": [{"description": "pad", "value": "x" * 100_000}]}
    response, raw = post_stream(client, f"{base_url}/happy/", big)
    assert response.status_code == 200
    judge(raw, big)
    response, raw = post_stream(client, f"{base_url}/happy/", {**INPUT, "runId": "r-small"})
    assert response.status_code == 200
    loop_thread = "uvicorn-test"
    assert threads[0] != loop_thread, "a large body was judged on the event loop"
    assert threads[1] == loop_thread  # a small one is not worth the thread hop


def test_a_413_closes_the_connection_instead_of_leaving_unread_bytes(base_url: str) -> None:
    """The unread rest of a refused body must not be parsed as the next request."""
    port = int(base_url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(10)  # a guard against hanging, not a measurement
        sock.sendall(
            b"POST /small/ HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: 200000\r\n\r\n" + b"x" * 5000
        )
        raw = b""
        while chunk := sock.recv(65536):  # ends only if the server closes the connection
            raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413")
    assert b"connection: close" in head.lower()
    assert orjson.loads(body)["error"]["rule"] == "LIMIT"


def _assistant(message_id: str, *call_ids: str) -> dict[str, Any]:
    return {"id": message_id, "role": "assistant", "toolCalls": [_call(c) for c in call_ids]}


def _answer(message_id: str, call_id: str) -> dict[str, Any]:
    return {"id": message_id, "role": "tool", "toolCallId": call_id, "content": "done"}


@pytest.mark.parametrize(
    ("history", "rule", "path", "ids"),
    [
        (
            [
                {"id": "u1", "role": "user", "content": "a"},
                {"id": "u1", "role": "user", "content": "b"},
            ],
            "EVT-8",
            "/messages/1/id",
            {"messageIds": ["u1"]},
        ),
        (
            [_assistant("a1", "c1"), _assistant("a2", "c1"), _answer("t1", "c1")],
            "EVT-9",
            "/messages/1/toolCalls/0/id",
            {"toolCallIds": ["c1"]},
        ),
        (
            [_assistant("a1", "c1"), _answer("t1", "c1"), _answer("t2", "c1")],
            "FE-8",
            "/messages/2/toolCallId",
            {"toolCallIds": ["c1"]},
        ),
        (
            [_answer("t1", "c1"), _assistant("a1", "c1")],
            "INPUT-5",
            "/messages/0/toolCallId",
            {"toolCallIds": ["c1"]},
        ),
    ],
    ids=["message-id-twice", "call-id-twice", "two-answers", "answer-before-call"],
)
def test_a_history_with_conflicting_ids_or_answers_is_409_naming_them(
    base_url: str,
    client: httpx.Client,
    history: list[dict[str, Any]],
    rule: str,
    path: str,
    ids: dict[str, list[str]],
) -> None:
    body = {**INPUT, "messages": history}
    response, raw = post_stream(client, f"{base_url}/happy/", body)
    error = assert_rejected(response, raw, 409)
    assert (error["rule"], error["path"]) == (rule, path)
    assert {k: error[k] for k in ids} == ids


def test_only_post_is_served(base_url: str, client: httpx.Client) -> None:
    assert client.get(f"{base_url}/happy/").status_code == 405


# -- in process -------------------------------------------------------------------------------------


def test_starlette_testclient_in_process() -> None:
    with TestClient(agent_app(happy, path="/agent"), base_url="http://localhost") as tc:
        response = tc.post("/agent", json=INPUT, headers=SSE)
        assert response.status_code == 200
        result, _ = judge(response.content)
        assert result.runs[0].status == "success"
        json_type = {"content-type": "application/json"}
        assert tc.post("/agent", content=b"nope", headers=json_type).status_code == 400


@pytest.mark.run_error("RuntimeError")
def test_a_bug_of_ours_still_ends_the_stream_with_run_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken_finish(self: Emitter, **kw: Any) -> list[Event]:
        raise RuntimeError("emitter bug")

    monkeypatch.setattr(Emitter, "finish", broken_finish)
    with TestClient(agent_app(happy), base_url="http://localhost") as tc:
        response = tc.post("/", json=INPUT, headers=SSE)
    assert response.status_code == 200
    _, events = judge(response.content, run_error=True)
    assert events[-1]["code"] == "InternalError"


@pytest.mark.run_error("RuntimeError", "without a terminal event")
def test_a_producer_that_dies_without_a_word_still_yields_run_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def dead_drive(*args: Any, **kw: Any) -> None:
        raise RuntimeError("died before RUN_STARTED")

    monkeypatch.setattr(server_module, "start", lambda *args, **kw: None)  # nothing queued early
    monkeypatch.setattr(server_module, "drive", dead_drive)
    with TestClient(agent_app(happy), base_url="http://localhost") as tc:
        response = tc.post("/", json=INPUT, headers=SSE)
    assert response.status_code == 200
    _, events = judge(response.content, run_error=True)
    assert [e["type"] for e in events] == ["RUN_ERROR"]  # a stream may open with RUN_ERROR (RUN-1)


def test_the_channel_never_reorders_concurrent_writers() -> None:
    """Two tasks emitting at once: the wire order is the verified order."""

    async def agent(run: Run) -> None:
        async def worker(name: str) -> None:
            async with run.subagent(name) as sub:
                for i in range(20):
                    await sub.text(f"{name}-{i}")

        async with asyncio.TaskGroup() as group:
            group.create_task(worker("a"))
            group.create_task(worker("b"))

    async def main() -> list[bytes]:
        from agui_tools.agent import drive

        channel = EventChannel(high_water=3)  # force writers to wait on the reader
        task = asyncio.create_task(drive(agent, INPUT, channel))
        out: list[bytes] = []
        while not (channel.closed and not channel.has_events):
            await channel.wait(None)
            out += channel.take()
        await task
        return out

    payloads = asyncio.run(main())
    judge(b"".join(b"data: " + p + b"\n\n" for p in payloads))


# -- the first event is prompt ---------------------------------------------------------------


def test_run_started_is_written_before_the_agents_task_first_runs() -> None:
    """The first event does not wait for the agent's task (nor, under load, for every
    other stream's events queued before it): it is handed to the connection right
    after the headers, before the agent's first line runs."""
    order: list[str] = []

    async def agent(run: Run) -> None:
        order.append("agent")

    endpoint = server_module.AgentEndpoint(agent)
    body = orjson.dumps(INPUT)
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "headers": [
            (b"host", b"localhost"),
            (b"content-type", b"application/json"),
            (b"accept", b"text/event-stream"),
        ],
    }
    delivered = [{"type": "http.request", "body": body, "more_body": False}]
    written: list[bytes] = []

    async def receive() -> dict[str, Any]:
        if delivered:
            return delivered.pop()
        await asyncio.sleep(3600)  # the client stays
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        chunk = message.get("body", b"")
        if b"RUN_STARTED" in chunk:
            order.append("RUN_STARTED written")
        written.append(chunk)

    asyncio.run(asyncio.wait_for(endpoint(scope, receive, send), 10))
    assert order == ["RUN_STARTED written", "agent"]
    events = [orjson.loads(f) for f in SSEReader().feed(b"".join(written))]
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_FINISHED"]
