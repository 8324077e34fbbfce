"""``mock_app``: recorded runs served over real loopback HTTP (issue 25, item 2).

The captures are recorded here from a real server running our agent API
(:mod:`tests.interop.our_agent`'s recorder keeps every exchange byte for byte),
then replayed: matching (in order, by the last user message), the request's ids
put into the events, the input judged as our server judges it (409, 422), both
bindings, timing, every capture format, and the ``agui_mock`` fixture. What the
official TypeScript client sees of the same mock: tests/interop/test_mock.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_tools._errors import UsageError
from agui_tools.agent import Run
from agui_tools.app._capture import verify_capture
from agui_tools.app._recorded import RecordedRun, recorded_runs
from agui_tools.testing import MockServer, agui_mock
from agui_tools.transport._client import SyncAgentClient
from agui_tools.transport._mock import mock_app, parse_fault, parse_timing
from agui_tools.transport._server import agent_app
from agui_tools.transport._session import SyncSession
from tests.helpers.scripted_server import serve
from tests.interop.our_agent import Recorder

__all__ = ["agui_mock"]  # the fixture, used by name below


async def shop(run: Run) -> None:
    """Answers by the last user message; asks the frontend to confirm an order."""
    last = run.messages[-1]
    if last["role"] == "tool":
        await run.text(f"Done: {last['content']}.", message_id="m-done")
        return
    prompt = last["content"]
    if "order" in prompt:
        async with run.message(message_id="m-order") as m:
            await m.delta("Please confirm.")
        async with run.tool_call("confirm_order", call_id="call-1", parent_message_id=m.id) as call:
            await call.args('{"sku": "W-1", "qty": 2}')
        return
    await run.text(f"You said: {prompt}", message_id="m-echo")


def new_session(url: str, **client: Any) -> SyncSession:
    session = SyncSession(SyncAgentClient(url, **client))

    @session.tool
    def confirm_order(sku: str, qty: int) -> str:
        """Confirm an order."""
        return f"confirmed {qty} x {sku}"

    return session


def write_exchanges(recorder: Recorder, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for n, ex in enumerate(recorder.exchanges, 1):
        (folder / f"{n:04d}.input.json").write_bytes(ex.request_body)
        (folder / f"{n:04d}.sse").write_bytes(ex.body)
        meta = {"status": ex.status, "contentType": ex.headers.get("content-type")}
        (folder / f"{n:04d}.meta.json").write_text(json.dumps(meta))
    return folder


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[Any]]]:
    """Three exchanges with the real server: an order (2 runs: call, then its answer), a
    greeting; and the messages the session ended the order conversation with."""
    recorder = Recorder(agent_app(shop, path="/agent"))
    with serve(recorder) as base:
        session = new_session(f"{base}/agent")
        assert session.send("order two widgets").status == "success"
        messages = session.conversation.messages
        assert new_session(f"{base}/agent").send("hello").status == "success"
    yield write_exchanges(recorder, tmp_path_factory.mktemp("rec")), messages


def inp(messages: list[Any] | None = None, **fields: Any) -> dict[str, Any]:
    """A run input for a raw POST."""
    return {"threadId": "t", "runId": "r", "messages": messages or [], **fields}


def post(base: str, body: dict[str, Any]) -> httpx.Response:
    """POST a run input asking for SSE (httpx's default ``Accept: */*`` admits protobuf)."""
    return httpx.post(f"{base}/agent", json=body, headers={"accept": "text/event-stream"})


def without_ids(messages: list[Any]) -> list[Any]:
    """The user message's id is the session's own, minted per session."""
    return [
        {k: v for k, v in m.items() if not (m["role"] == "user" and k == "id")} for m in messages
    ]


@pytest.mark.parametrize("transport", ["sse", "proto"])
def test_a_session_replayed_in_order_ends_with_the_recorded_thread(
    recording: tuple[Path, list[Any]], transport: str
) -> None:
    folder, messages = recording
    with serve(mock_app(folder, path="/agent", timing="fast")) as base:
        session = new_session(f"{base}/agent", transport=transport)
        result = session.send("order two widgets")
    assert result.status == "success"
    assert without_ids(session.conversation.messages) == without_ids(messages)


def test_the_request_ids_replace_the_recorded_ones(recording: tuple[Path, list[Any]]) -> None:
    folder, _ = recording
    recorded = json.loads((folder / "0001.input.json").read_bytes())
    body = {**recorded, "threadId": "thread-new", "runId": "run-new"}
    with serve(mock_app(folder, path="/agent", timing="fast")) as base:
        answer = httpx.post(f"{base}/agent", json=body, headers={"accept": "text/event-stream"})
    assert answer.status_code == 200 and answer.headers["content-type"] == "text/event-stream"
    verdict = verify_capture(answer.content, run_input=body)
    assert verdict.result.error is None
    ends = [e for e in verdict.events if e["type"] in ("RUN_STARTED", "RUN_FINISHED")]
    assert [(e["threadId"], e["runId"]) for e in ends] == [("thread-new", "run-new")] * 2
    assert recorded["runId"].encode() not in answer.content  # no recorded run id left


def test_the_protobuf_binding_is_answered_by_accept(recording: tuple[Path, list[Any]]) -> None:
    folder, _ = recording
    body = json.loads((folder / "0003.input.json").read_bytes())
    with serve(mock_app(folder, path="/agent", timing="fast", match="last-user-message")) as base:
        answer = httpx.post(
            f"{base}/agent", json=body, headers={"accept": "application/vnd.ag-ui.event+proto"}
        )
    assert answer.headers["content-type"] == "application/vnd.ag-ui.event+proto"
    verdict = verify_capture(answer.content, run_input=body)
    assert verdict.result.error is None
    assert verdict.thread.messages[-1]["content"] == "You said: hello"


def test_in_order_past_the_last_recorded_run_is_a_404_problem(
    recording: tuple[Path, list[Any]],
) -> None:
    folder, _ = recording
    body = json.loads((folder / "0003.input.json").read_bytes())
    with serve(mock_app(folder, path="/agent", timing="fast")) as base:
        statuses = [httpx.post(f"{base}/agent", json=body).status_code for _ in range(3)]
        last = httpx.post(f"{base}/agent", json=body)
    assert statuses == [200, 200, 200] and last.status_code == 404
    assert "replays 3 run(s) in order and has served them all" in last.json()["error"]["message"]


def test_match_by_last_user_message_picks_the_run_whatever_the_order(
    recording: tuple[Path, list[Any]],
) -> None:
    folder, messages = recording
    with serve(mock_app(folder, path="/agent", timing="fast", match="last-user-message")) as base:
        hello = new_session(f"{base}/agent")
        assert hello.send("hello").status == "success"
        order = new_session(f"{base}/agent")
        assert order.send("order two widgets").status == "success"
        again = new_session(f"{base}/agent")  # a recorded turn is served as often as asked
        assert again.send("order two widgets").status == "success"
        unknown = httpx.post(
            f"{base}/agent",
            json=inp([{"id": "u", "role": "user", "content": "something else"}]),
        )
        no_user = httpx.post(f"{base}/agent", json=inp())
    assert hello.conversation.messages[-1]["content"] == "You said: hello"
    # the turn's continuation (a tool result after the user message) is its own recorded run
    assert without_ids(order.conversation.messages) == without_ids(messages)
    assert without_ids(again.conversation.messages) == without_ids(messages)
    assert unknown.status_code == 404
    assert "'something else'" not in unknown.text and "something else" in unknown.text
    assert "order two widgets" in unknown.json()["error"]["message"]  # what it knows
    assert no_user.status_code == 422 and "no user message" in no_user.text


def test_a_dangling_history_gets_409_and_bad_input_422_as_our_server_says(
    recording: tuple[Path, list[Any]],
) -> None:
    folder, _ = recording
    dangling = {
        "threadId": "t",
        "runId": "r",
        "messages": [
            {"id": "u1", "role": "user", "content": "order two widgets"},
            {"id": "a1", "role": "assistant", "toolCalls": [{"id": "c1", "type": "function",
             "function": {"name": "confirm_order", "arguments": "{}"}}]},
            {"id": "u2", "role": "user", "content": "hello"},
        ],
    }  # fmt: skip
    with serve(mock_app(folder, path="/agent", timing="fast")) as base:
        refused = httpx.post(f"{base}/agent", json=dangling)
        malformed = httpx.post(f"{base}/agent", json=inp(threadId=5))
        served = post(base, inp())
    assert refused.status_code == 409 and refused.json()["error"]["rule"] == "FE-8"
    assert "c1" in refused.text
    assert malformed.status_code == 422 and malformed.json()["error"]["path"] == "/threadId"
    assert served.status_code == 200  # neither refusal used up the first recorded run
    assert b"Please confirm." in served.content


def test_a_recorded_refusal_is_replayed_as_recorded(tmp_path: Path) -> None:
    (tmp_path / "0001.input.json").write_text('{"threadId":"t","runId":"r","messages":[]}')
    (tmp_path / "0001.json").write_text('{"error":{"message":"upstream is down"}}')
    (tmp_path / "0001.meta.json").write_text('{"status":502,"contentType":"application/json"}')
    with serve(mock_app(tmp_path, path="/agent")) as base:
        answer = httpx.post(f"{base}/agent", json=inp())
    assert answer.status_code == 502 and answer.json() == {"error": {"message": "upstream is down"}}


TIMED = b"".join(
    b"data: " + json.dumps(e).encode() + b"\n\n"
    for e in [
        {"type": "RUN_STARTED", "threadId": "t0", "runId": "r0", "timestamp": 1_000},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant", "timestamp": 1_000},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi", "timestamp": 1_600},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "RUN_FINISHED", "threadId": "t0", "runId": "r0", "timestamp": 1_400},
    ]
)


def test_recorded_timing_waits_the_recorded_gaps_and_xn_scales_them(tmp_path: Path) -> None:
    (run,) = recorded_runs(TIMED, source="timed.sse")
    # an unstamped event waits nothing; one stamped earlier than the last stamp neither
    assert run.delays() == [0.0, 0.0, 0.6, 0.0, 0.0]
    assert parse_timing("recorded") == 1 and parse_timing("fast") == 0
    assert parse_timing("x2") == 0.5 and parse_timing("×0.5") == 2
    capture = tmp_path / "timed.sse"
    capture.write_bytes(TIMED)
    took = {}
    for timing in ("recorded", "x4"):
        with serve(mock_app(capture, path="/agent", timing=timing)) as base:
            started = time.monotonic()
            answer = post(base, inp())
            took[timing] = time.monotonic() - started
        assert answer.status_code == 200 and b'"delta":"hi"' in answer.content
    assert took["recorded"] >= 0.6 and took["x4"] >= 0.15  # lower bounds: the waits happened


def test_a_run_save_capture_is_split_into_its_runs(tmp_path: Path) -> None:
    two = TIMED + TIMED.replace(b'"r0"', b'"r1"').replace(b'"hi"', b'"again"')
    capture = tmp_path / "run.sse"
    capture.write_bytes(two)
    with serve(mock_app(capture, path="/agent", timing="fast")) as base:
        first = post(base, inp(runId="a"))
        second = post(base, inp(runId="b"))
    assert b'"delta":"hi"' in first.content and b'"runId":"a"' in first.content
    assert b'"delta":"again"' in second.content and b'"runId":"b"' in second.content


def test_an_inspector_thread_export_is_replayed_from_its_messages(tmp_path: Path) -> None:
    """The shape ``Inspector.thread_export`` writes (ui/inspector/_backend.py): inputs and
    the final thread, no events — each run's stream is rebuilt from what it added."""
    tools = [{"name": "confirm_order", "description": "", "parameters": {"type": "object"}}]
    user = {"id": "u1", "role": "user", "content": "order two widgets"}
    call = {"id": "a1", "role": "assistant", "content": "Please confirm.", "toolCalls": [
        {"id": "c1", "type": "function", "function": {"name": "confirm_order",
                                                      "arguments": '{"sku":"W-1","qty":2}'}}]}  # fmt: skip
    answer = {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "yes"}
    done = {"id": "a2", "role": "assistant", "content": "Done."}
    export = {
        "agent": "http://127.0.0.1:8000/agent",
        "threadId": "th",
        "tools": tools,
        "messages": [user, call, answer, done],
        "state": None,
        "runs": [
            {"run": 1, "input": {"threadId": "th", "runId": "r1", "messages": [user],
             "tools": tools}, "httpStatus": 200, "runId": "r1", "status": "success"},
            {"run": 2, "input": {"threadId": "th", "runId": "r2", "tools": tools,
             "messages": [user, call, answer]}, "httpStatus": 200, "runId": "r2",
             "status": "success"},
        ],
    }  # fmt: skip
    (tmp_path / "thread.json").write_text(json.dumps(export))
    with serve(mock_app(tmp_path / "thread.json", path="/agent", timing="fast")) as base:
        session = new_session(f"{base}/agent")
        result = session.send("order two widgets")
    assert result.status == "success"
    _, replayed_call, answered, replayed_done = session.conversation.messages
    assert replayed_call == call and replayed_done == done
    assert (answered["toolCallId"], answered["content"]) == ("c1", "confirmed 2 x W-1")


@pytest.mark.parametrize(
    ("write", "said"),
    [
        (b"", "no event found"),
        (b"\x00\x00\x01\x00abc", "TRANS-7"),
        (b"data: {not json}\n\n", "event 0"),
        (b"[1, 2]", "event 0 is not an event object"),
        (b"\xff\xfe binary", "not UTF-8"),
    ],
    ids=["empty", "cut-binary", "bad-json", "not-events", "not-utf8"],
)
def test_a_capture_that_is_no_stream_is_a_usage_error_naming_it(
    tmp_path: Path, write: bytes, said: str
) -> None:
    capture = tmp_path / "bad.sse"
    capture.write_bytes(write)
    with pytest.raises(UsageError, match=said) as caught:
        mock_app(capture)
    assert str(capture) in str(caught.value)


def test_a_missing_capture_and_an_empty_directory_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read capture"):
        mock_app(tmp_path / "absent.sse")
    with pytest.raises(UsageError, match="not a proxy --record directory"):
        mock_app(tmp_path)


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("explode:1", "unknown kind 'explode'"),
        ("cut", "cut takes 1 argument"),
        ("cut:-1", "0 or more"),
        ("stall:2", "stall:N:SECONDS"),
        ("stall:2:forever", "not a number of seconds"),
        ("status:200", "400 or more"),
        ("status:700", "no error status"),
        ("drip:1@0", "1 or more"),
    ],
)
def test_a_bad_fault_spec_says_what_is_wrong_and_the_syntax(spec: str, said: str) -> None:
    with pytest.raises(UsageError, match=said) as caught:
        parse_fault(spec)
    assert "cut:N, stall:N:SECONDS" in str(caught.value)


def test_fault_specs_are_read_with_their_request() -> None:
    assert str(parse_fault("stall:3:1.5@2")) == "stall:3:1.5@2"
    fault = parse_fault("status:503:try later: busy@1")
    assert (fault.status, fault.body, fault.request) == (503, "try later: busy", 1)


def test_a_fault_past_every_recorded_run_is_refused(recording: tuple[Path, list[Any]]) -> None:
    folder, _ = recording
    with pytest.raises(UsageError, match="event 99 is past every recorded run"):
        mock_app(folder, faults=["cut:99"])


def test_last_user_message_needs_recorded_inputs(tmp_path: Path) -> None:
    capture = tmp_path / "plain.sse"
    capture.write_bytes(TIMED)
    with pytest.raises(UsageError, match="kept none"):
        mock_app(capture, match="last-user-message")


def test_a_status_fault_on_one_request_leaves_the_next_its_run(
    recording: tuple[Path, list[Any]],
) -> None:
    folder, messages = recording
    with serve(mock_app(folder, path="/agent", timing="fast", faults=["status:503@1"])) as base:
        first = new_session(f"{base}/agent")
        with pytest.raises(Exception, match="503"):
            first.send("order two widgets")
        retry = new_session(f"{base}/agent")
        assert retry.send("order two widgets").status == "success"
    assert without_ids(retry.conversation.messages) == without_ids(messages)


def test_the_fixture_serves_a_mock_for_the_test(
    agui_mock: Any, recording: tuple[Path, list[Any]]
) -> None:
    folder, messages = recording
    mock: MockServer = agui_mock(folder, timing="fast")
    assert mock.url.endswith("/agent") and mock.unused == 3
    session = new_session(mock.url)
    assert session.send("order two widgets").status == "success"
    assert without_ids(session.conversation.messages) == without_ids(messages)
    assert (mock.requests, mock.unused) == (2, 1)


def test_recorded_runs_are_values_too() -> None:
    run = RecordedRun("inline", [
        {"type": "RUN_STARTED", "threadId": "x", "runId": "y"},
        {"type": "RUN_FINISHED", "threadId": "x", "runId": "y"},
    ])  # fmt: skip
    app = mock_app(run, path="/agent")
    assert app.state.mock.matcher.runs == [run]


def test_the_inspectors_own_exports_replay_the_conversation(tmp_path: Path) -> None:
    """A real inspector session with the demo agent (ui/inspector), exported as the page's
    download links export it — run-N.sse + run-N.input.json, and thread.json — then
    replayed to a Session with the demo's tools: the same assistant turns, in order."""
    import asyncio

    from agui_tools.demo.agent import demo_agent
    from agui_tools.demo.tools import register as register_demo
    from agui_tools.testing import serving
    from agui_tools.transport._session import Approval
    from agui_tools.ui.inspector import Inspector
    from tests.helpers.inspector_page import download_exports, order_two_widgets, running

    async def record() -> list[Any]:
        async with serving(agent_app(demo_agent(delay=0, refund=False), path="/agent")) as base:
            inspector = Inspector(f"{base}/agent", register=register_demo)
            async with running(inspector) as page:
                await order_two_widgets(inspector, page)
                (tmp_path / "runs").mkdir()
                await download_exports(inspector, page, tmp_path / "runs", tmp_path / "thread.json")
                return list(inspector.session.conversation.messages)  # type: ignore[union-attr]

    def turns(messages: list[Any]) -> list[Any]:
        return [
            (m.get("content"), [c["function"] for c in m.get("toolCalls") or ()])
            for m in messages
            if m["role"] == "assistant"
        ]

    original = asyncio.run(record())
    # the tool results the agent streamed itself; every other tool message is the frontend's
    agent_results = {
        e["toolCallId"]
        for sse in (tmp_path / "runs").glob("run-*.sse")
        for e in verify_capture(sse.read_bytes()).events
        if e["type"] == "TOOL_CALL_RESULT"
    }
    frontend = {m["toolCallId"] for m in original if m["role"] == "tool"} - agent_results
    assert agent_results and "s4-unsub" in frontend  # an unadvertised call the frontend answers
    for capture in (tmp_path / "runs", tmp_path / "thread.json"):
        with serve(mock_app(capture, path="/agent", timing="fast")) as base:
            session = SyncSession(
                SyncAgentClient(f"{base}/agent"), ask=lambda call: Approval.approve()
            )
            register_demo(session)  # type: ignore[arg-type]
            result = session.send("Order two widgets for me.")
            app_messages = session.conversation.messages
        assert result.status == "success", (capture, result)
        assert turns(app_messages) == turns(original), capture
        assert len(app_messages) == len(original)
        # the frontend is left the same calls to answer: none was turned into the agent's
        answered_here = {c.call_id for r in session.conversation.runs for c in r.pending}
        assert answered_here == frontend, capture


def test_a_frontend_answer_placed_right_after_its_call_is_not_taken_for_the_agents() -> None:
    """A frontend may put its tool messages right after the call's assistant message; an
    answer to an advertised (frontend) tool is the frontend's wherever it sits."""
    from agui_tools.app._recorded import runs_from_thread_export

    tools = [{"name": "pick", "description": "", "parameters": {"type": "object"}}]
    user = {"id": "u", "role": "user", "content": "go"}
    a1 = {"id": "a1", "role": "assistant", "toolCalls": [
        {"id": "c1", "type": "function", "function": {"name": "pick", "arguments": "{}"}}]}  # fmt: skip
    answer = {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "picked"}
    a2 = {"id": "a2", "role": "assistant", "content": "While you pick: hello."}
    export = {
        "messages": [user, a1, answer, a2],
        "runs": [{"input": {"threadId": "t", "runId": "r", "messages": [user], "tools": tools},
                  "httpStatus": 200, "status": "success"}],
    }  # fmt: skip
    (run,) = runs_from_thread_export(export, source="thread.json")
    assert [e["type"] for e in run.events] == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]


def test_a_binary_recording_and_an_ndjson_capture_are_replayed(tmp_path: Path) -> None:
    """A proxy recording of a protobuf exchange (``NNNN.pb``) is served in either binding;
    an NDJSON capture is read like verify reads it."""
    recorder = Recorder(agent_app(shop, path="/agent"))
    with serve(recorder) as base:
        assert new_session(f"{base}/agent", transport="proto").send("hello").status == "success"
    (ex,) = recorder.exchanges
    assert ex.headers["content-type"] == "application/vnd.ag-ui.event+proto"
    folder = tmp_path / "rec"
    folder.mkdir()
    (folder / "0001.input.json").write_bytes(ex.request_body)
    (folder / "0001.pb").write_bytes(ex.body)
    ndjson = tmp_path / "hello.ndjson"
    ndjson.write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in verify_capture(
        ex.body).events))  # fmt: skip
    for capture in (folder, ndjson):
        with serve(mock_app(capture, path="/agent", timing="fast")) as base:
            session = new_session(f"{base}/agent")  # SSE this time
            assert session.send("hello").status == "success"
        assert session.conversation.messages[-1]["content"] == "You said: hello", capture


def test_the_fixture_comes_with_the_plugin_line_a_user_writes(
    pytester: pytest.Pytester, recording: tuple[Path, list[Any]]
) -> None:
    folder, _ = recording
    pytester.makeconftest('pytest_plugins = ["agui_tools.testing"]')
    pytester.makepyfile(
        f"""
        import httpx

        def test_a_frontend_sees_503_then_the_recorded_run(agui_mock):
            mock = agui_mock({str(folder)!r}, timing="fast", faults=["status:503@1"])
            body = {{"threadId": "t", "runId": "r", "messages": []}}
            assert httpx.post(mock.url, json=body).status_code == 503
            assert httpx.post(mock.url, json=body).status_code == 200
            assert (mock.requests, mock.unused) == (2, 2)
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_long_recorded_gap_keeps_an_sse_stream_alive(tmp_path: Path) -> None:
    capture = tmp_path / "timed.sse"
    capture.write_bytes(TIMED)  # a 0.6 s gap before event 2
    with serve(mock_app(capture, path="/agent", keepalive=0.2)) as base:
        answer = post(base, inp())
    head, _, tail = answer.content.partition(b'"delta":"hi"')
    assert b": keep-alive\n\n" in head and b"keep-alive" not in tail


def test_a_browser_frontend_on_an_allowed_origin_gets_cors_and_others_403(tmp_path: Path) -> None:
    capture = tmp_path / "timed.sse"
    capture.write_bytes(TIMED)
    dev = "http://localhost:5173"
    app = mock_app(capture, path="/agent", timing="fast", allowed_origins=[dev])
    with serve(app) as base:
        preflight = httpx.options(f"{base}/agent", headers={
            "origin": dev, "access-control-request-method": "POST",
            "access-control-request-headers": "content-type"})  # fmt: skip
        other = httpx.post(f"{base}/agent", json=inp(), headers={"origin": "https://evil.example"})
        allowed = httpx.post(f"{base}/agent", json=inp(), headers={"origin": dev})
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == dev
    assert other.status_code == 403  # refused before it could use up the recorded run
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == dev
