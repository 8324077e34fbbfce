"""The pipeline as a whole: stage order, middleware, truncation, limits, failure
semantics (PROC-7, TRANS-2, RUN-9, RUN-16)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agui_tools import LimitExceeded, ProtocolViolation, ProtocolWarning, UsageError
from agui_tools.pipeline import ConsumerPipeline
from agui_tools.verify import Limits

RS = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
RF = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def test_middleware_sees_unknown_material_after_the_boundary_and_before_enforcement() -> None:
    seen: list[dict[str, Any]] = []

    def spy(ev: dict[str, Any]) -> list[dict[str, Any]]:
        seen.append(ev)
        return [ev]

    pipe = ConsumerPipeline(middleware=[spy])
    pipe.feed(RS)
    pipe.feed({"type": "THINKING_START", "title": "t"})  # the boundary translated it first
    pipe.feed({"type": "REASONING_END", "messageId": seen[-1]["messageId"], "future": 1})
    pipe.feed({"type": "FUTURE_EVENT"})
    pipe.feed(RF)
    assert types(seen) == [
        "RUN_STARTED",
        "REASONING_START",
        "REASONING_END",
        "FUTURE_EVENT",
        "RUN_FINISHED",
    ]
    assert seen[2]["future"] == 1, "middleware must see what enforcement will strip"
    rules = [w.rule for w in pipe.close().warnings]
    assert rules == ["VER-4", "PROC-3", "PROC-3"]


def test_middleware_can_translate_split_drop_and_warn() -> None:
    def rename(ev: dict[str, Any]) -> list[Any]:
        if ev.get("type") == "LEGACY_SAY":  # a private shape a middleware translates
            mid = "m-legacy"
            return [
                {"type": "TEXT_MESSAGE_START", "messageId": mid},
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": ev["text"]},
                {"type": "TEXT_MESSAGE_END", "messageId": mid},
                ProtocolWarning("VER-4", "translated LEGACY_SAY"),
            ]
        if ev.get("type") == "CUSTOM":
            return []
        return [ev]

    pipe = ConsumerPipeline(middleware=[rename])
    delivered = pipe.feed_many(
        [RS, {"type": "LEGACY_SAY", "text": "hi"}, {"type": "CUSTOM", "name": "x", "value": 1}, RF]
    )
    assert types(delivered) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    result = pipe.close()
    assert [(w.rule, w.index) for w in result.warnings] == [("VER-4", 1)]


def test_middleware_output_is_still_enforced_and_verified() -> None:
    def corrupt(ev: dict[str, Any]) -> list[dict[str, Any]]:
        if ev["type"] == "TEXT_MESSAGE_CONTENT":
            return [{**ev, "delta": 5}]
        return [ev]

    pipe = ConsumerPipeline(middleware=[corrupt])
    pipe.feed_many([RS, {"type": "TEXT_MESSAGE_START", "messageId": "m"}])
    with pytest.raises(ProtocolViolation) as info:
        pipe.feed({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "ok"})
    assert (info.value.rule, info.value.index, info.value.path) == ("PROC-2", 2, "/delta")


def test_truncated_run_gets_no_synthetic_finish_and_is_not_success() -> None:
    pipe = ConsumerPipeline()
    delivered = pipe.feed_many(
        [
            RS,
            {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "partial"},
            {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
        ]
    )
    result = pipe.close()
    assert result.outcome == "completed"
    assert [r.status for r in result.runs] == ["truncated"]
    assert result.runs[0].pending == ["c"]
    # the chunk stream was closed by the explicit event; nothing was synthesized at EOF
    assert types(delivered) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
    ]
    assert pipe.close().runs[0].status == "truncated"  # idempotent


def test_empty_stream_is_truncated() -> None:
    result = ConsumerPipeline().close()
    assert [r.status for r in result.runs] == ["truncated"] and result.outcome == "completed"


def test_failure_is_sticky_and_keeps_what_was_delivered() -> None:
    pipe = ConsumerPipeline()
    delivered = pipe.feed_many([RS, {"type": "TEXT_MESSAGE_START", "messageId": "m"}])
    with pytest.raises(ProtocolViolation) as first:
        pipe.feed_many([{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "a"}, RF])
    assert first.value.rule == "STREAM-4" and first.value.index == 3
    assert types(pipe.partial) == ["TEXT_MESSAGE_CONTENT"]
    with pytest.raises(ProtocolViolation) as again:
        pipe.feed(RS)
    assert again.value is first.value
    result = pipe.close()
    assert result.outcome == "failed" and result.error is first.value
    assert result.runs[0].status == "rejected"
    assert len(delivered) == 2 and result.delivered == 3


def test_feed_after_close_is_a_usage_error() -> None:
    pipe = ConsumerPipeline()
    pipe.close()
    with pytest.raises(UsageError):
        pipe.feed(RS)


def test_run_input_thread_id_binds_every_run() -> None:
    pipe = ConsumerPipeline(run_input={"threadId": "input-thread", "runId": "r", "messages": []})
    with pytest.raises(ProtocolViolation) as info:
        pipe.feed(RS)
    assert info.value.rule == "INPUT-3" and "input-thread" in str(info.value)


def test_feed_and_feed_many_agree() -> None:
    stream = [
        RS,
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "toolCallName": "f", "delta": "{"},
        {"type": "TOOL_CALL_CHUNK", "delta": "}"},
        {"type": "RAW", "event": 1},
        {"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c", "content": "ok"},
        RF,
    ]
    one = ConsumerPipeline()
    a = [e for ev in stream for e in one.feed(orjson.dumps(ev))]
    b = ConsumerPipeline().feed_many([orjson.dumps(ev) for ev in stream])
    c = ConsumerPipeline().feed_many(stream)
    assert a == b == c
    assert types(a) == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_ARGS",
        "RAW",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "RUN_FINISHED",
    ]


# -- limits: exceeding one is a clear violation naming it, and memory stays bounded ------


def test_event_size_limit() -> None:
    pipe = ConsumerPipeline(limits=Limits(max_event_bytes=100))
    pipe.feed(orjson.dumps(RS))
    big = orjson.dumps({"type": "CUSTOM", "name": "x", "value": "y" * 200})
    with pytest.raises(LimitExceeded) as info:
        pipe.feed_many([big])
    assert "max_event_bytes=100" in str(info.value) and info.value.index == 1


def test_argument_text_limit_counts_across_deltas_and_reopens() -> None:
    pipe = ConsumerPipeline(limits=Limits(max_argument_bytes=10))
    pipe.feed_many(
        [
            RS,
            {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "123456"},
            {"type": "TOOL_CALL_END", "toolCallId": "c"},
            {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
        ]
    )
    with pytest.raises(LimitExceeded) as info:
        pipe.feed({"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "7890X"})
    assert "max_argument_bytes=10" in str(info.value) and info.value.ids == {"toolCallId": "c"}


def test_open_items_limit() -> None:
    pipe = ConsumerPipeline(limits=Limits(max_open_items=3))
    pipe.feed(RS)
    for i in range(3):
        pipe.feed({"type": "TEXT_MESSAGE_START", "messageId": f"m{i}"})
    with pytest.raises(LimitExceeded) as info:
        pipe.feed({"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"})
    assert "max_open_items=3" in str(info.value)


def test_lane_limit() -> None:
    pipe = ConsumerPipeline(limits=Limits(max_lanes=2))
    pipe.feed(RS)
    pipe.feed({"type": "TEXT_MESSAGE_CHUNK", "messageId": "a", "delta": "x", "subagentRunId": "s1"})
    pipe.feed({"type": "TEXT_MESSAGE_CHUNK", "messageId": "b", "delta": "x", "subagentRunId": "s2"})
    with pytest.raises(LimitExceeded) as info:
        pipe.feed(
            {"type": "TEXT_MESSAGE_CHUNK", "messageId": "c", "delta": "x", "subagentRunId": "s3"}
        )
    assert "max_lanes=2" in str(info.value)


def test_tracked_ids_limit_bounds_memory() -> None:
    pipe = ConsumerPipeline(limits=Limits(max_tracked_ids=5))
    pipe.feed(RS)
    with pytest.raises(LimitExceeded) as info:
        for i in range(10):
            pipe.feed({"type": "TEXT_MESSAGE_START", "messageId": f"m{i}"})
            pipe.feed({"type": "TEXT_MESSAGE_END", "messageId": f"m{i}"})
    assert "max_tracked_ids=5" in str(info.value)
