"""The proxy's read-only inspector, sans-I/O (issue 25, item 1): what the page is told of
an exchange, that nothing it may post drives anything, and that a proxy running for a long
time holds its recent traffic only (the page in Chromium: test_inspector_proxy.py)."""

from __future__ import annotations

import asyncio
import tracemalloc
from typing import Any

import orjson
import pytest

from agui_tools.app._watch import WatchFinding
from agui_tools.ui.inspector import Hub, Refused
from agui_tools.ui.inspector._live import THREADS_KEPT, LiveInspector

URL = "http://127.0.0.1:9/agent"
TOOLS = [
    {
        "name": "place_order",
        "description": "Place an order.",
        "parameters": {
            "type": "object",
            "properties": {"qty": {"type": "integer"}},
            "required": ["qty"],
        },
    }
]


def run_input(thread: str, run: str, messages: list[dict[str, Any]]) -> bytes:
    return orjson.dumps(
        {
            "threadId": thread,
            "runId": run,
            "messages": messages,
            "tools": TOOLS,
            "state": {},
            "context": [],
            "forwardedProps": {},
        }
    )


def frames(thread: str, run: str, events: list[dict[str, Any]]) -> list[str]:
    """Each event as the SSE reader hands it over: the frame's data."""
    started = {"type": "RUN_STARTED", "threadId": thread, "runId": run}
    finished = {"type": "RUN_FINISHED", "threadId": thread, "runId": run}
    return [orjson.dumps(e).decode() for e in (started, *events, finished)]


def stream(
    live: LiveInspector, number: int, thread: str, run: str, body: bytes, events: Any
) -> None:
    live.exchange_started(number, URL, body)
    for index, frame in enumerate(frames(thread, run, events)):
        live.exchange_event(number, index, frame)
    live.exchange_ended(number, 200, None)


def kinds(live: LiveInspector, kind: str) -> list[dict[str, Any]]:
    return [m for m in live.hub.messages if m["kind"] == kind]


ORDER = [
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "place_order"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"qty": '},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '"two"}'},
    {"type": "TOOL_CALL_END", "toolCallId": "c1"},
]


def test_a_card_builds_up_is_left_to_the_frontend_then_answered_by_it() -> None:
    live = LiveInspector(URL)
    user = {"id": "u1", "role": "user", "content": "Order two"}
    stream(live, 1, "t1", "r1", run_input("t1", "r1", [user]), ORDER)
    assert [m["text"] for m in kinds(live, "user")] == ["Order two"]
    cards = [m for m in kinds(live, "call") if m["callId"] == "c1"]
    assert [c["status"] for c in cards][-2:] == ["called", "frontend"]
    assert {c["threadId"] for c in cards} == {"t1"}
    # judged against the schema the frontend advertised (TOOL-21)
    assert [e["path"] for e in cards[-1]["errors"]] == ["/qty"]
    assert kinds(live, "run-end")[-1]["threadId"] == "t1"

    # the next input answers the call: its card says so, with the frontend's answer
    history = [
        user,
        {
            "id": "a1",
            "role": "assistant",
            "toolCalls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "place_order", "arguments": '{"qty": "two"}'},
                }
            ],
        },
        {"id": "m1", "role": "tool", "toolCallId": "c1", "content": "", "error": "qty: bad"},
    ]
    live.exchange_started(2, URL, run_input("t1", "r2", history))
    answered = kinds(live, "call")[-1]
    assert answered["status"] == "answered" and answered["threadId"] == "t1"
    assert answered["answer"]["outcome"] == "failed" and answered["answer"]["error"] == "qty: bad"
    assert [m["text"] for m in kinds(live, "user")] == ["Order two"]  # nothing new said


def test_the_next_input_may_come_before_the_previous_run_is_told_ended() -> None:
    # the proxy tells an exchange's end once the judging process answered; a fast
    # frontend's next input on the thread is told first: its answers still land
    live = LiveInspector(URL)
    live.exchange_started(1, URL, run_input("t1", "r1", []))
    for index, frame in enumerate(frames("t1", "r1", ORDER)):
        live.exchange_event(1, index, frame)
    call = {"id": "c1", "type": "function"}
    call["function"] = {"name": "place_order", "arguments": '{"qty": "two"}'}
    history = [
        {"id": "a1", "role": "assistant", "toolCalls": [call]},
        {"id": "m1", "role": "tool", "toolCallId": "c1", "content": "placed"},
    ]
    live.exchange_started(2, URL, run_input("t1", "r2", history))
    live.exchange_ended(1, 200, None)
    statuses = [m["status"] for m in kinds(live, "call") if m["callId"] == "c1"]
    assert statuses[-2:] == ["frontend", "answered"], statuses
    assert [m["run"] for m in kinds(live, "run-end")] == [1]


def test_findings_carry_their_side_and_threads_are_told_apart() -> None:
    live = LiveInspector(URL)
    live.exchange_started(1, URL, run_input("t1", "r1", []))
    live.exchange_finding(
        1, WatchFinding("FE-8", "error", "frontend", "the call c1 is not answered", "t1", "r1")
    )
    live.exchange_finding(
        1, WatchFinding("TOOL-20", "error", "agent", "args after end", "t1", "r1", index=3)
    )
    live.exchange_started(2, URL, run_input("t2", "r1", []))
    live.exchange_started(3, URL, run_input("t1", "r2", []))
    found = kinds(live, "violation")
    assert [(f["rule"], f["side"], f["index"]) for f in found] == [
        ("FE-8", "frontend", None),
        ("TOOL-20", "agent", 3),
    ]
    assert [(m["threadId"], m["seen"]) for m in kinds(live, "live-thread")] == [
        ("t1", False),
        ("t2", False),
        ("t1", True),
    ]


@pytest.mark.parametrize(
    ("method", "args"),
    [
        ("send", ("hi",)),
        ("decide", ("c1", "approve")),
        ("answer", ("c1",)),
        ("add_mock_tool", ("x", "y", None)),
        ("next_input", (None,)),
        ("resolve_interrupt", ("i1", "resolve")),
        ("compose", ({},)),
        ("configure", ()),
        ("stop", ()),
        ("new_thread", ()),
    ],
)
def test_every_action_is_refused_403(method: str, args: tuple[Any, ...]) -> None:
    live = LiveInspector(URL)
    with pytest.raises(Refused) as refused:
        getattr(live, method)(*args)
    assert refused.value.status == 403 and "read-only" in refused.value.message
    with pytest.raises(Refused):
        asyncio.run(live.open_thread("t1"))


def test_the_hub_keeps_within_its_budget_and_a_late_reader_goes_on_from_the_oldest_kept() -> None:
    hub = Hub(budget=20_000)
    for i in range(2_000):
        hub.push("event", supersedes="preview:c1" if i % 7 == 0 else None, index=i, raw="x" * 80)
    assert hub.bytes <= 20_000 and hub.dropped > 1_500
    assert hub.next_seq == 2_000 and hub.first_seq > 0
    kept = hub.since(0)
    assert kept[0]["seq"] >= hub.first_seq and kept[-1]["index"] == 1_999

    async def first_batch() -> list[dict[str, Any]]:
        async for batch in hub.batches(0):
            return batch
        raise AssertionError("no batch")

    assert asyncio.run(first_batch()) == kept


def test_a_long_session_through_the_live_inspector_stays_bounded() -> None:
    budget = 1_000_000
    live = LiveInspector(URL, budget=budget)
    deltas = [
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        *({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "word "} for _ in range(50)),
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        *ORDER,
    ]
    tracemalloc.start()
    try:
        for n in range(1, 301):  # 300 threads, one run each: 17,400 events
            thread = f"t{n}"
            body = run_input(thread, "r1", [{"id": "u", "role": "user", "content": "go"}])
            stream(live, n, thread, "r1", body, deltas)
            if n == 60:
                tracemalloc.reset_peak()
                early, _ = tracemalloc.get_traced_memory()
        late, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert live.hub.bytes <= budget and live.hub.dropped > 0
    assert not live._exchanges and not live._cards and not live._previews and not live._shown
    assert len(live._threads) == THREADS_KEPT and len(live._left) == 300
    # what the process holds stops growing with the traffic: 240 more runs, once the
    # budget was reached, add at most the remembered threads and calls
    print(f"traced: {early=} {late=} {peak=} kept={live.hub.bytes}")
    assert late - early < budget, (early, late, peak)


def test_a_frame_is_shown_raw_whether_data_text_or_a_decoded_protobuf_event() -> None:
    live = LiveInspector(URL)
    live.exchange_started(1, URL, run_input("t1", "r1", []))
    live.exchange_event(1, 0, {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"})
    live.exchange_event(1, 1, "not json")
    shown = kinds(live, "event")
    assert shown[0]["type"] == "RUN_STARTED" and orjson.loads(shown[0]["raw"])["runId"] == "r1"
    assert shown[1]["type"] == "(not an event)" and shown[1]["raw"] == "not json"


HOSTILE_INPUTS = [
    b"not json",
    b"[1, 2]",
    b'{"threadId": ["t"], "messages": "no"}',
    orjson.dumps({"threadId": "t1", "messages": [{"id": ["unhashable"], "role": "user"}]}),
    orjson.dumps({"threadId": "t1", "messages": [{"id": {"x": 1}, "role": "tool"}, 5, None]}),
    orjson.dumps({"threadId": "t1", "messages": [], "tools": [{"name": ""}, "x", {"name": 5}]}),
    orjson.dumps({"threadId": "t1", "messages": [], "tools": [{"name": "a", "parameters": 7}]}),
]
HOSTILE_FRAMES = [
    "[1, 2]",
    '{"type": 5}',
    '{"type": "TOOL_CALL_ARGS", "toolCallId": ["c"], "delta": 1}',
    '{"type": "TEXT_MESSAGE_CONTENT"}',
    "[" * 5000 + "]" * 5000,
    '{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "\\ud800"}',  # a lone surrogate
    {"type": "STATE_DELTA", "delta": "not a patch"},
]


@pytest.mark.parametrize("body", HOSTILE_INPUTS)
def test_hostile_traffic_never_raises_into_the_proxy(body: bytes) -> None:
    # an exception here would break the proxy's forwarding of the stream
    live = LiveInspector(URL)
    live.exchange_started(1, URL, body)
    live.exchange_started(2, URL, body)  # the same thread again: its input compared
    for index, frame in enumerate([*frames("t1", "r1", [])[:1], *HOSTILE_FRAMES]):
        live.exchange_event(1, index, frame)
        live.exchange_event(2, index, frame)
    live.exchange_ended(1, 200, None)
    live.exchange_ended(2, None, None)
    assert [m["run"] for m in kinds(live, "run-end")] == [1, 2]
    assert len(kinds(live, "event")) == 2 * (1 + len(HOSTILE_FRAMES))


def test_a_threads_state_is_told_with_its_thread_and_run_before_its_next_input() -> None:
    # the State tab keeps one history per thread (state.js): each ``thread`` message names
    # its thread and run, and a thread's state after a run is told before that thread's
    # next input, even when the proxy tells the run's end later (its judge's verdict)
    live = LiveInspector(URL)
    snapshot = {"type": "STATE_SNAPSHOT", "snapshot": {"thread": "A", "log": ["A:1"]}}
    live.exchange_started(1, URL, run_input("A", "r1", []))
    for index, frame in enumerate(frames("A", "r1", [snapshot])):
        live.exchange_event(1, index, frame)
    live.exchange_started(2, URL, run_input("B", "r1", []))  # another thread: A's run open
    delta = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/log/-", "value": "A:2"}]}
    body = orjson.loads(run_input("A", "r2", []))
    body["state"] = {"thread": "A", "log": ["A:1"]}
    live.exchange_started(3, URL, orjson.dumps(body))  # back to A before run 1's end is told
    for index, frame in enumerate(frames("A", "r2", [delta])):
        live.exchange_event(3, index, frame)
    live.exchange_ended(1, 200, None)
    live.exchange_ended(3, 200, None)
    live.exchange_ended(2, 200, None)
    told = [
        (m["kind"], m["run"], m.get("threadId"))
        for m in live.hub.messages
        if m["kind"] in ("run-start", "thread")
    ]
    assert told == [
        ("run-start", 1, "A"),
        ("run-start", 2, "B"),
        ("thread", 1, "A"),  # A after run 1, before A's next input
        ("run-start", 3, "A"),
        ("thread", 3, "A"),
        ("thread", 2, "B"),
    ], told
    states = {m["run"]: m["state"] for m in kinds(live, "thread")}
    assert states == {1: snapshot["snapshot"], 3: {"thread": "A", "log": ["A:1", "A:2"]}, 2: {}}
