"""The pipeline as a whole: stage order, middleware, truncation, limits, failure
semantics (PROC-7, TRANS-2, RUN-9, RUN-16)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agui_tools import LimitExceeded, ProtocolViolation, ProtocolWarning, UsageError
from agui_tools.wire._pipeline import ConsumerPipeline
from agui_tools.wire._verify import Limits

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


def _nested(depth: int) -> Any:
    """A value nesting ``depth`` containers, objects and lists alternately (an object outside)."""
    value: Any = 0
    for i in range(depth):
        value = {"k": value} if (depth - i) % 2 else [value]
    return value


_DEEP_CUSTOM = b'{"type":"CUSTOM","name":"x","value":' + b"[" * 600 + b"]" * 600 + b"}"


@pytest.mark.parametrize("form", ["bytes", "dict"])
@pytest.mark.parametrize(
    ("frame", "field"),
    [
        (orjson.dumps({"type": "STATE_SNAPSHOT", "snapshot": _nested(200)}), "snapshot"),
        (_DEEP_CUSTOM, "value"),  # deep enough to exhaust the reducer's deepcopy
        (
            orjson.dumps(
                {"type": "TEXT_MESSAGE_START", "messageId": "m", "metadata": _nested(130)}
            ),
            "metadata",  # an open map, on an event the fast path would otherwise wave through
        ),
        (
            orjson.dumps(
                {
                    "type": "STATE_DELTA",
                    "delta": [{"op": "add", "path": "/a", "value": _nested(130)}],
                }
            ),
            "delta",
        ),
    ],
    ids=["snapshot", "custom", "metadata", "patch-value"],
)
def test_nesting_depth_limit_names_the_limit_the_path_and_the_event(
    frame: bytes, field: str, form: str
) -> None:
    """Open values are bounded where they enter, before a recursive stage meets them."""
    pipe = ConsumerPipeline()
    pipe.feed(RS)
    with pytest.raises(LimitExceeded) as info:
        pipe.feed_many([frame if form == "bytes" else orjson.loads(frame)])
    error = info.value
    assert (error.rule, error.index) == ("LIMIT", 1)
    assert error.event_type == orjson.loads(frame)["type"]
    assert "max_depth=128" in str(error)
    assert error.path.startswith(f"/{field}/")
    assert error.path.count("/") == 128  # the first value past the limit, at level 129
    assert pipe.close().runs[0].status == "rejected"


def test_nesting_depth_limit_is_configurable_and_counts_the_event_as_level_one() -> None:
    inside = {"type": "CUSTOM", "name": "x", "value": _nested(127)}  # 1 + 127 = 128 levels
    assert len(ConsumerPipeline().feed_many([RS, orjson.dumps(inside), RF])) == 3
    deeper = {"type": "CUSTOM", "name": "x", "value": _nested(128)}
    with pytest.raises(LimitExceeded):
        ConsumerPipeline().feed_many([RS, deeper])
    assert len(ConsumerPipeline(limits=Limits(max_depth=129)).feed_many([RS, deeper, RF])) == 3


def test_nesting_past_what_the_parser_reads_is_the_limit_not_invalid_json() -> None:
    frame = b'{"type":"CUSTOM","name":"x","value":' + b"[" * 1100 + b"]" * 1100 + b"}"
    pipe = ConsumerPipeline()
    pipe.feed(RS)
    with pytest.raises(LimitExceeded) as info:
        pipe.feed_many([frame])
    assert info.value.rule == "LIMIT" and info.value.index == 1


def test_an_uninterpretable_huge_protocol_version_warns_and_proceeds() -> None:
    """VER-5: a declaration that cannot be interpreted is handled like a newer one."""
    pipe = ConsumerPipeline()
    for version in ("1." + "9" * 5000, "١.٠"):  # thousands of digits; non-ASCII digits
        pipe.feed({**RS, "runId": version[:3], "protocolVersion": version})
        pipe.feed({**RF, "runId": version[:3]})
    result = pipe.close()
    assert [r.status for r in result.runs] == ["success", "success"]
    assert [w.rule for w in result.warnings] == ["VER-5", "VER-5"]
    assert len(str(result.warnings[0])) < 400  # the peer's text is quoted truncated


def test_a_broken_frame_rejects_the_stream_at_its_position() -> None:
    from agui_tools.wire._framing import BrokenFrame

    broken = BrokenFrame(ProtocolViolation("TRANS-4", "not UTF-8.", where="stream framing"))
    for feed_many in (True, False):
        pipe = ConsumerPipeline()
        frames = [orjson.dumps(RS).decode(), broken, orjson.dumps(RF).decode()]
        with pytest.raises(ProtocolViolation) as info:
            if feed_many:
                pipe.feed_many(frames)
            else:
                for frame in frames:
                    pipe.feed(frame)
        assert (info.value.rule, info.value.index) == ("TRANS-4", 1)
        assert str(info.value).startswith("[TRANS-4] event #1:")
        result = pipe.close()
        assert result.outcome == "failed" and result.runs[0].status == "rejected"
