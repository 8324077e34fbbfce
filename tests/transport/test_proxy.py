"""``agui-tools proxy`` over real loopback HTTP: forwarding, both judges, strict mode, recording.

Every test runs a real upstream (a scripted byte-for-byte server, or our own
``agent_app``) and a real :class:`ProxyApp`, each on its own uvicorn, and talks
to the proxy with httpx as a frontend would.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from agui_tools.agent import Run
from agui_tools.app._capture import read_frames, replay
from agui_tools.transport._server import agent_app
from agui_tools.wire._framing import PROTO_MEDIA_TYPE, SSEReader, sse_frame
from agui_tools.wire._proto_codec import encode_proto_event
from agui_tools.wire._proto_framing import ProtoReader, proto_frame
from tests.helpers.proxy import proxied, sse_events, stream_post, verify_says, wait_until
from tests.helpers.proxy_order import ARGS_AFTER_END, INPUT, RF, RS, TA, TE, TS, post, sse
from tests.helpers.scripted_server import Script, app_for, free_port, serve

TR = {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "m9", "content": "ok"}
GOOD = [RS, TS, TA, TE, RF]
FABRICATED = [RS, TS, TA, TE, TR, RF]


def on_thread(events: list[dict[str, Any]], thread_id: str) -> list[dict[str, Any]]:
    return [{**e, "threadId": thread_id} if "threadId" in e else e for e in events]


def proto(events: list[dict[str, Any]]) -> list[bytes]:
    return [proto_frame(encode_proto_event(e)) for e in events]


def scripted(
    chunks: list[bytes], content_type: str = "text/event-stream"
) -> tuple[Script, Starlette]:
    script = Script(chunks=chunks, content_type=content_type)
    return script, app_for(script)


# -- forwarding ---------------------------------------------------------------------------------


def test_sse_is_forwarded_byte_for_byte() -> None:
    # odd splits, a keep-alive comment, CRLF: what arrives is exactly what was sent
    f = sse(GOOD)
    chunks = [f[0][:7], f[0][7:], b": keep-alive\r\n\r\n", f[1] + f[2][:10], f[2][10:], f[3] + f[4]]
    script, app = scripted(chunks)
    with serve(app) as base, proxied(f"{base}/agent") as px:
        answer = post(px.url, INPUT)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.content == b"".join(chunks)
    assert px.findings == []
    # the request reached the agent as the frontend sent it
    (request,) = script.requests
    assert orjson.loads(request["body"]) == INPUT
    assert request["headers"]["accept"] == "text/event-stream"


def test_protobuf_is_forwarded_byte_for_byte_with_accept_untouched() -> None:
    accept = f"{PROTO_MEDIA_TYPE}, text/event-stream"
    frames = proto(GOOD)
    raw = b"".join(frames)
    chunks = [raw[:3], raw[3:20], raw[20:]]  # frames cut mid-header and mid-body
    script, app = scripted(chunks, PROTO_MEDIA_TYPE)
    with serve(app) as base, proxied(f"{base}/agent") as px:
        answer = post(px.url, INPUT, accept=accept)
    assert answer.headers["content-type"] == PROTO_MEDIA_TYPE
    assert answer.content == raw
    assert script.requests[0]["headers"]["accept"] == accept
    assert px.findings == []


def test_our_server_through_the_proxy_both_bindings() -> None:
    async def agent(run: Run) -> None:
        async with run.message() as m:
            await m.delta("Let me ask — ")
            async with run.tool_call("confirm_order", parent_message_id=m.id) as call:
                await call.args('{"qty":2}')

    recorded: list[bytes] = []

    class Tap:  # what the upstream put on the wire, byte for byte
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            async def snd(message: Any) -> None:
                if message["type"] == "http.response.body":
                    recorded.append(message.get("body", b""))
                await send(message)

            await self.inner(scope, receive, snd)

    with serve(Tap(agent_app(agent, path="/agent"))) as base, proxied(f"{base}/agent") as px:
        for accept in ("text/event-stream", f"{PROTO_MEDIA_TYPE}, text/event-stream"):
            recorded.clear()
            answer = post(px.url, {**INPUT, "threadId": accept}, accept=accept)
            assert answer.status_code == 200
            assert answer.content == b"".join(recorded)
        assert px.findings == []


def test_no_added_buffering_the_first_event_arrives_before_the_upstream_ends() -> None:
    release = threading.Event()
    finished = threading.Event()

    async def endpoint(request: Request) -> Response:
        await request.body()

        async def gen() -> AsyncIterator[bytes]:
            import asyncio

            yield sse_frame(orjson.dumps(RS))
            # the rest only once the client has seen the first event through the proxy:
            # a proxy holding bytes back would never let the client see it
            # (bounded: a buffering proxy fails the test below, it does not hang it)
            for _ in range(2000):
                if release.is_set():
                    break
                await asyncio.sleep(0.01)
            yield sse_frame(orjson.dumps(RF))
            finished.set()

        return StreamingResponse(gen(), media_type="text/event-stream")

    upstream = Starlette(routes=[Route("/agent", endpoint, methods=["POST"])])
    with serve(upstream) as base, proxied(f"{base}/agent") as px:
        with stream_post(px.url, INPUT) as answer:
            reader = SSEReader()
            seen: list[str] = []
            chunks = answer.iter_raw()
            while not seen:
                seen += reader.feed(next(chunks))
            assert json.loads(seen[0])["type"] == "RUN_STARTED"
            assert not finished.is_set()  # the upstream has not finished: nothing was held
            release.set()
            rest = b"".join(chunks)
        assert [e["type"] for e in sse_events(rest)] == ["RUN_FINISHED"]
    assert px.findings == []


def test_upstream_unreachable_is_502_naming_it() -> None:
    dead = f"http://127.0.0.1:{free_port()}/agent"
    with proxied(dead) as px:
        answer = post(px.url, INPUT)
    assert answer.status_code == 502
    error = answer.json()["error"]
    assert error["upstream"] == dead
    assert dead in error["message"] and "cannot be reached" in error["message"]
    ((url, message),) = px.upstream_errors
    assert url == dead and "ConnectError" in message


def test_hop_by_hop_headers_are_not_forwarded() -> None:
    script, app = scripted(sse(GOOD))
    with serve(app) as base, proxied(f"{base}/agent") as px:
        httpx.post(
            px.url,
            content=orjson.dumps(INPUT),
            headers={
                "content-type": "application/json",
                "connection": "keep-alive, x-hop",
                "x-hop": "1",
                "x-end-to-end": "2",
                "authorization": "Bearer t",
            },
            timeout=30,
        )
    headers = script.requests[0]["headers"]
    assert "x-hop" not in headers
    assert headers["x-end-to-end"] == "2" and headers["authorization"] == "Bearer t"


def test_a_foreign_host_is_refused() -> None:
    script, app = scripted(sse(GOOD))
    with serve(app) as base, proxied(f"{base}/agent") as px:
        answer = httpx.post(
            px.url, content=orjson.dumps(INPUT), headers={"host": "evil.test"}, timeout=30
        )
    assert answer.status_code == 403
    assert script.requests == []


# -- the agent judged -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("events", "rule", "index"),
    [(ARGS_AFTER_END, "TOOL-20", 3), (FABRICATED, "FE-2", 4)],
    ids=["args-after-end", "fabricated-frontend-result"],
)
def test_a_broken_agent_is_reported_and_forwarded_unchanged(
    events: list[dict[str, Any]], rule: str, index: int
) -> None:
    chunks = sse(events)
    _, app = scripted(chunks)
    with serve(app) as base, proxied(f"{base}/agent") as px:
        answer = post(px.url, INPUT)
    assert answer.content == b"".join(chunks)  # not strict: the frontend gets what was sent
    (finding,) = px.findings
    assert (finding.rule, finding.side, finding.severity, finding.index) == (
        rule,
        "agent",
        "error",
        index,
    )
    assert (finding.thread_id, finding.run_id) == ("t1", "r1")
    assert finding.tool_call_ids == ["c1"]
    line = finding.to_json()
    assert line["toolCallIds"] == ["c1"] and line["rule"] == rule


@pytest.mark.parametrize(
    ("events", "rule", "index"),
    [(ARGS_AFTER_END, "TOOL-20", 3), (FABRICATED, "FE-2", 4)],
    ids=["args-after-end", "fabricated-frontend-result"],
)
@pytest.mark.parametrize("binding", ["sse", "proto"])
def test_strict_ends_the_stream_with_one_run_error_naming_the_rule(
    events: list[dict[str, Any]], rule: str, index: int, binding: str
) -> None:
    if binding == "sse":
        raw = b"".join(sse(events))
        chunks, media, accept = [raw[:30], raw[30:]], "text/event-stream", "text/event-stream"
    else:
        raw = b"".join(proto(events))
        chunks, media = [raw[:30], raw[30:]], PROTO_MEDIA_TYPE
        accept = f"{PROTO_MEDIA_TYPE}, text/event-stream"
    _, app = scripted(chunks, media)
    with serve(app) as base, proxied(f"{base}/agent", strict=True) as px:
        answer = post(px.url, INPUT, accept=accept)
    got = sse_events(answer.content) if binding == "sse" else ProtoReader().feed(answer.content)
    assert [e["type"] for e in got] == [e["type"] for e in events[:index]] + ["RUN_ERROR"]
    error = got[-1]
    assert error["code"] == rule and error["message"].startswith(f"[{rule}]")
    assert f"event #{index}" in error["message"]
    assert [f.rule for f in px.findings] == [rule]


def test_strict_forwards_good_events_as_they_come() -> None:
    _, app = scripted(sse(GOOD))
    with serve(app) as base, proxied(f"{base}/agent", strict=True) as px:
        answer = post(px.url, INPUT)
    assert answer.content == b"".join(sse(GOOD))
    assert px.findings == []


def test_a_body_cut_mid_run_is_a_truncated_run() -> None:
    raw = b"".join(sse([RS, TS]))
    _, app = scripted([raw + b'data: {"type":"TOOL_CALL_A'])
    with serve(app) as base, proxied(f"{base}/agent") as px:
        post(px.url, INPUT)
    (finding,) = px.findings
    assert finding.rule == "TRANS-2" and finding.index == 1
    assert f"starts at byte {len(raw)}" in finding.message


# -- the frontend judged ----------------------------------------------------------------------------

DANGLING = {
    **INPUT,
    "runId": "r2",
    "messages": [
        *INPUT["messages"],
        {
            "id": "a1",
            "role": "assistant",
            "toolCalls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "confirm_order", "arguments": "{}"},
                }
            ],
        },
        {"id": "u2", "role": "user", "content": "and 3 more"},
    ],
}


def test_a_dangling_history_is_reported_and_forwarded() -> None:
    script, app = scripted(sse(GOOD))
    with serve(app) as base, proxied(f"{base}/agent") as px:
        answer = post(px.url, DANGLING)
    assert answer.status_code == 200 and len(script.requests) == 1
    # (then the agent's answer, judged against the body it was sent: it calls c1 again)
    finding, *agent = px.findings
    assert [(f.rule, f.side) for f in agent] == [("TOOL-8", "agent")], px.findings
    assert (finding.rule, finding.side, finding.status) == ("FE-8", "frontend", 409)
    assert finding.tool_call_ids == ["c1"] and finding.run_id == "r2"


def test_strict_refuses_a_dangling_history_as_our_server_does() -> None:
    script, app = scripted(sse(GOOD))

    async def nothing(run: Run) -> None:
        pass

    with serve(agent_app(nothing, path="/agent")) as ours:
        theirs = post(f"{ours}/agent", DANGLING)
    with serve(app) as base, proxied(f"{base}/agent", strict=True) as px:
        answer = post(px.url, DANGLING)
    assert answer.status_code == theirs.status_code == 409
    assert answer.json() == theirs.json()  # the same problem JSON, rule FE-8 and the ids
    assert answer.json()["error"]["rule"] == "FE-8"
    assert script.requests == []  # never forwarded
    assert px.rules("frontend") == ["FE-8"]


def test_a_malformed_input_is_422_in_strict_mode() -> None:
    script, app = scripted(sse(GOOD))
    with serve(app) as base, proxied(f"{base}/agent", strict=True) as px:
        answer = post(px.url, {"threadId": "t1", "runId": "r1", "messages": "hello"})
    assert answer.status_code == 422
    assert script.requests == []
    assert px.findings[0].status == 422


@pytest.mark.parametrize("strict", [False, True], ids=["watch", "strict"])
def test_a_pending_call_lost_by_the_frontend_is_fe_8(strict: bool) -> None:
    # run 1 leaves c1 (a frontend call) pending; the "reloaded" frontend sends a history
    # without the call — nothing for our server's history rules to see, only the proxy
    # knows the thread's last run left it pending
    script = Script(chunks=sse([RS, TS, TA, TE, RF]))
    with (
        serve(app_for(script)) as base,
        proxied(f"{base}/agent", strict=strict) as px,
    ):
        assert post(px.url, INPUT).status_code == 200
        forgot = {
            **INPUT,
            "runId": "r2",
            "messages": [*INPUT["messages"], {"id": "u2", "role": "user", "content": "hi?"}],
        }
        answer = post(px.url, forgot)
    if not strict:  # watched, forwarded
        assert answer.status_code == 200 and len(script.requests) == 2
    else:  # strict: refused
        assert answer.status_code == 409
        assert answer.json()["error"]["rule"] == "FE-8"
        assert answer.json()["error"]["toolCallIds"] == ["c1"]
        assert len(script.requests) == 1
    # the call is lost (FE-8, refused), and with it the assistant message (INPUT-5, a warning)
    assert [(f.rule, f.severity, f.side, f.thread_id) for f in px.findings] == [
        ("FE-8", "error", "frontend", "t1"),
        ("INPUT-5", "warning", "frontend", "t1"),
    ]


def test_an_answered_pending_call_is_not_a_finding() -> None:
    script = Script(chunks=sse([RS, TS, TA, TE, RF]))
    with serve(app_for(script)) as base, proxied(f"{base}/agent", strict=True) as px:
        post(px.url, INPUT)
        verdict = replay(read_frames(b"".join(script.chunks)), run_input=INPUT)
        script.chunks = sse(
            [
                {**RS, "runId": "r2"},
                {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m2", "delta": "ok"},
                {**RF, "runId": "r2"},
            ]
        )
        answered = {
            **INPUT,
            "runId": "r2",
            "messages": [
                *verdict.thread.messages,
                {"id": "t9", "role": "tool", "toolCallId": "c1", "content": "confirmed"},
            ],
        }
        assert post(px.url, answered).status_code == 200
    assert px.findings == []


def test_a_resume_that_leaves_an_interrupt_uncovered_is_int_7() -> None:
    interrupted = {
        "type": "RUN_FINISHED",
        "threadId": "t1",
        "runId": "r1",
        "outcome": {
            "type": "interrupt",
            "interrupts": [
                {"id": "i1", "reason": "tool_call", "toolCallId": "c1"},
                {"id": "i2", "reason": "confirmation"},
            ],
        },
    }
    backend = {**TS, "toolCallName": "delete_files"}
    script = Script(chunks=sse([RS, backend, TA, TE, interrupted]))
    with serve(app_for(script)) as base, proxied(f"{base}/agent", strict=True) as px:
        assert post(px.url, INPUT).status_code == 200
        verdict = replay(read_frames(b"".join(script.chunks)), run_input=INPUT)
        partial = {
            **INPUT,
            "runId": "r2",
            "messages": verdict.thread.messages,
            "resume": [{"interruptId": "i1", "status": "resolved", "payload": {"ok": True}}],
        }
        answer = post(px.url, partial)
    assert answer.status_code == 409
    assert answer.json()["error"]["rule"] == "INT-7"
    assert "i2" in answer.json()["error"]["message"]
    assert px.rules() == ["INT-7"]


# -- recording ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", ["sse", "proto"])
def test_recording_follows_the_contract_and_verify_agrees(tmp_path: Path, binding: str) -> None:
    bodies = [GOOD, FABRICATED, ARGS_AFTER_END, [RS, TS]]  # the last one cut mid-run
    if binding == "sse":
        encode, media, accept, ext = sse, "text/event-stream", "text/event-stream", "sse"
    else:
        encode, media, ext = proto, PROTO_MEDIA_TYPE, "pb"
        accept = f"{PROTO_MEDIA_TYPE}, text/event-stream"
    script = Script(content_type=media)
    answers: list[list[bytes]] = []
    sent: list[bytes] = []
    with (
        serve(app_for(script)) as base,
        proxied(f"{base}/agent", record=tmp_path) as px,
    ):
        for k, events in enumerate(bodies):
            script.chunks = encode(on_thread(events, f"t{k}"))
            answers.append(script.chunks)
            body = orjson.dumps({**INPUT, "threadId": f"t{k}"})
            sent.append(body)
            post(px.url, body, accept=accept)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(
        f"{n:04d}.{kind}" for n in range(1, 5) for kind in ("input.json", ext, "meta.json")
    )
    for n, (chunks, body) in enumerate(zip(answers, sent, strict=True), start=1):
        prefix = tmp_path / f"{n:04d}"
        assert Path(f"{prefix}.input.json").read_bytes() == body
        stream = Path(f"{prefix}.{ext}")
        assert stream.read_bytes() == b"".join(chunks)
        meta = orjson.loads(Path(f"{prefix}.meta.json").read_bytes())
        assert meta["status"] == 200 and meta["contentType"].startswith(media)
        assert meta["url"] == f"{base}/agent"
        assert (meta["threadId"], meta["runId"]) == (f"t{n - 1}", "r1")
        # the proxy's findings on this exchange are what verify says of the recording
        agent = {(f["rule"], f["index"]) for f in meta["findings"] if f["side"] == "agent"}
        assert agent == verify_says(stream, Path(f"{prefix}.input.json"))
    rules = [
        orjson.loads(Path(f"{tmp_path}/{n:04d}.meta.json").read_bytes())["findings"]
        for n in range(1, 5)
    ]
    assert [sorted({f["rule"] for f in fs if f["side"] == "agent"}) for fs in rules] == [
        [],
        ["FE-2"],
        ["TOOL-20"],
        ["TRANS-2"],
    ]
    assert len(px.findings) == 3


def test_recording_goes_on_after_an_earlier_session(tmp_path: Path) -> None:
    (tmp_path / "0007.input.json").write_bytes(b"{}")
    _, app = scripted(sse(GOOD))
    with serve(app) as base, proxied(f"{base}/agent", record=tmp_path) as px:
        post(px.url, INPUT)
    assert (tmp_path / "0008.sse").read_bytes() == b"".join(sse(GOOD))


def test_a_frontend_that_leaves_mid_stream_is_no_truncation_of_the_agent() -> None:

    script = Script(chunks=sse([RS, TS]), hang_after=True)
    with (
        serve(app_for(script)) as base,
        proxied(f"{base}/agent") as px,
    ):
        with stream_post(px.url, INPUT) as answer:
            next(answer.iter_raw())
        # the proxy saw the frontend leave
        wait_until(lambda: px.app.abandoned, "the proxy never saw the frontend leave", 20)
    assert px.findings == []  # the run was cut by the frontend, not by the agent (TRANS-2)


@pytest.mark.parametrize("binding", ["sse", "proto"])
def test_mock_replays_a_proxy_recording_byte_for_byte(tmp_path: Path, binding: str) -> None:
    """The recording contract, read by its other party: `mock` serves what `proxy` kept."""
    from agui_tools.transport._mock import mock_app

    accept = "text/event-stream" if binding == "sse" else f"{PROTO_MEDIA_TYPE}, text/event-stream"
    script = Script(
        chunks=(sse if binding == "sse" else proto)(GOOD),
        content_type="text/event-stream" if binding == "sse" else PROTO_MEDIA_TYPE,
    )
    with serve(app_for(script)) as base, proxied(f"{base}/agent", record=tmp_path) as px:
        recorded = post(px.url, INPUT, accept=accept).content
    with serve(mock_app(tmp_path, timing="fast")) as mock:
        replayed = post(f"{mock}/", INPUT, accept=accept)
    assert replayed.status_code == 200
    assert replayed.content == recorded == b"".join(script.chunks)


# -- judged inline: the verdict is in when the body ends ------------------------------------


def test_a_long_stream_is_forwarded_whole_and_its_last_event_judged() -> None:
    # 40,000 events, a TOOL-20 near the end: forwarded whole, and the finding told
    # before the frontend has the body's end (the verdict is in when the body ends)
    text = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "tok " * 8}
    body = [
        RS,
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        *[text] * 40_000,
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        *ARGS_AFTER_END[1:],
    ]
    script = Script(chunks=[b"".join(sse(body[i : i + 100])) for i in range(0, len(body), 100)])
    with serve(app_for(script)) as base, proxied(f"{base}/agent") as px:
        for run in ("ra", "rb"):
            answer = post(px.url, {**INPUT, "runId": run})
            assert answer.content == b"".join(script.chunks), "not forwarded whole"
            assert px.rules().count("TOOL-20") == (1 if run == "ra" else 2), px.rules()
        assert [f.index for f in px.findings if f.rule == "TOOL-20"] == [len(body) - 2] * 2
        assert not any(f.rule == "PROXY-JUDGE" for f in px.findings)


def test_the_answer_to_a_refused_input_is_judged_against_the_body_sent(tmp_path: Path) -> None:
    # a dangling history (FE-8: our server would answer 409) is still forwarded without
    # --strict, and the agent answers it — fabricating the frontend's result: its stream
    # is judged against the body it was sent (the tools it advertised: FE-2; the call id
    # it already held: TOOL-8), as verify judges the recording; it was judged with no
    # input, and FE-2 went unsaid
    script = Script(chunks=sse(FABRICATED))
    with (
        serve(app_for(script)) as base,
        proxied(f"{base}/agent", record=tmp_path) as px,
    ):
        assert post(px.url, DANGLING).status_code == 200
        wait_until(lambda: (tmp_path / "0001.meta.json").exists(), "no meta")
    meta = orjson.loads((tmp_path / "0001.meta.json").read_bytes())
    assert [(f["side"], f["rule"]) for f in meta["findings"]] == [
        ("frontend", "FE-8"),
        ("agent", "TOOL-8"),
        ("agent", "FE-2"),
    ]
    agent = {(f["rule"], f["index"]) for f in meta["findings"] if f["side"] == "agent"}
    assert agent == verify_says(tmp_path / "0001.sse", tmp_path / "0001.input.json")
    assert px.rules() == ["FE-8", "TOOL-8", "FE-2"]
