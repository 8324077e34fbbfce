"""Enforcement: unknown material stripped with a warning naming its path,
malformed known values fatal with the rule, index and path (PROC-1..5, EVT-5,
META-1, RUN-4)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agui_tools import InputRejected, ProtocolViolation
from agui_tools.wire import Enforcer, decode_event, decode_run_input

ENF = Enforcer()


def enforce(event: dict[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    original = copy.deepcopy(event)
    clean, warnings = ENF.event(event, 7)
    assert event == original, "enforcement must never mutate its input"
    return clean, [w.path for w in warnings]


def violation(event: dict[str, Any]) -> ProtocolViolation:
    with pytest.raises(ProtocolViolation) as info:
        ENF.event(event, 7)
    assert info.value.index == 7
    return info.value


def test_clean_event_is_returned_unchanged_and_quiet() -> None:
    ev = {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"a"', "metadata": {"x": None}}
    clean, warnings = ENF.event(ev, 0)
    assert clean is ev and warnings == []


def test_unknown_event_type_is_dropped_with_a_warning_naming_the_type() -> None:
    clean, warnings = ENF.event({"type": "TOOL_CALL_PROGRESS", "toolCallId": "c1"}, 3)
    assert clean is None
    assert len(warnings) == 1 and "TOOL_CALL_PROGRESS" in warnings[0].message
    assert warnings[0].rule == "PROC-3" and warnings[0].index == 3


def test_unknown_property_is_stripped_and_known_values_survive() -> None:
    clean, paths = enforce(
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x", "futureProp": 1}
    )
    assert clean == {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"}
    assert paths == ["/futureProp"]


def test_unknown_properties_deep_inside_run_input_are_stripped() -> None:
    ev = {
        "type": "RUN_STARTED",
        "threadId": "t",
        "runId": "r",
        "input": {
            "threadId": "t",
            "runId": "r",
            "future": 1,
            "messages": [
                {
                    "id": "u",
                    "role": "user",
                    "content": [{"type": "text", "text": "hi", "lang": "en"}],
                },
                {
                    "id": "a",
                    "role": "assistant",
                    "toolCalls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}", "strict": True},
                        }
                    ],
                },
            ],
        },
    }
    clean, paths = enforce(ev)
    assert sorted(paths) == [
        "/input/future",
        "/input/messages/0/content/0/lang",
        "/input/messages/1/toolCalls/0/function/strict",
    ]
    assert clean is not None
    assert clean["input"]["messages"][0]["content"] == [{"type": "text", "text": "hi"}]
    assert clean["input"]["messages"][1]["toolCalls"][0]["function"] == {
        "name": "f",
        "arguments": "{}",
    }


def test_unknown_outcome_is_stripped_and_means_success() -> None:
    clean, paths = enforce(
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "paused"}}
    )
    assert clean == {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    assert paths == ["/outcome"]


def test_pending_ids_on_an_interrupt_outcome_are_an_unknown_member() -> None:
    # FE-14: the interrupt outcome is closed; pendingToolCallIds there is stripped
    ev = {
        "type": "RUN_FINISHED",
        "threadId": "t",
        "runId": "r",
        "outcome": {
            "type": "interrupt",
            "interrupts": [{"id": "i", "reason": "r"}],
            "pendingToolCallIds": ["c"],
        },
    }
    clean, paths = enforce(ev)
    assert paths == ["/outcome/pendingToolCallIds"]
    assert clean is not None and "pendingToolCallIds" not in clean["outcome"]


def test_unknown_part_in_required_position_removes_the_part_not_the_list() -> None:
    ev = {
        "type": "TOOL_CALL_RESULT",
        "messageId": "m",
        "toolCallId": "c",
        "content": [
            {"type": "text", "text": "a"},
            {"type": "image", "source": {"type": "s3", "value": "bucket/key"}},
            {"type": "hologram", "data": 1},
            {"type": "text", "text": "b"},
        ],
    }
    clean, paths = enforce(ev)
    assert clean is not None
    assert clean["content"] == [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert paths == ["/content/1", "/content/2"]


def test_unknown_member_in_a_required_event_field_drops_the_event() -> None:
    clean, warnings = ENF.event(
        {
            "type": "REASONING_ENCRYPTED_VALUE",
            "subtype": "span",
            "entityId": "x",
            "encryptedValue": "v",
        },
        1,
    )
    assert clean is None and "/subtype" in warnings[0].message


def test_unknown_role_in_closed_set_is_stripped_per_position() -> None:
    # basic/processing: an unrecognised member of a closed string set is stripped
    clean, paths = enforce({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "narrator"})
    assert clean == {"type": "TEXT_MESSAGE_START", "messageId": "m"}
    assert paths == ["/role"]


def test_unknown_patch_op_dropped_but_op_extras_preserved() -> None:
    ev = {
        "type": "STATE_DELTA",
        "delta": [
            {"op": "increment", "path": "/n", "value": 1},
            {"op": "remove", "path": "/x", "value": "leftover", "x-why": None},
        ],
    }
    clean, paths = enforce(ev)
    assert paths == ["/delta/0"]
    assert clean is not None
    assert clean["delta"] == [{"op": "remove", "path": "/x", "value": "leftover", "x-why": None}]


def test_open_objects_are_data() -> None:
    ev = {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": "a",
        "activityType": "t",
        "content": {"anything": {"nested": None}},
        "metadata": {"acme/x": None, "deep": {"k": [None]}},
    }
    clean, paths = enforce(ev)
    assert clean == ev and paths == []
    custom = {"type": "CUSTOM", "name": "n", "value": {"future": {"type": "NOT_AN_EVENT"}}}
    assert enforce(custom) == (custom, [])


@pytest.mark.parametrize(
    ("event", "rule", "path"),
    [
        ({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 42}, "PROC-2", "/delta"),
        (
            {"type": "TOOL_CALL_START", "toolCallId": 42, "toolCallName": "f"},
            "TOOL-2",
            "/toolCallId",
        ),
        ({"type": "TOOL_CALL_START", "toolCallId": "c"}, "TOOL-2", "/toolCallName"),
        (
            {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f", "metadata": None},
            "META-1",
            "/metadata",
        ),
        (
            {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f", "metadata": [1]},
            "META-1",
            "/metadata",
        ),
        (
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "x", "subagentRunId": None},
            "SUB-1",
            "/subagentRunId",
        ),
        ({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": None}, "EVT-5", "/role"),
        (
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "parentRunId": None},
            "EVT-5",
            "/parentRunId",
        ),
        (
            {
                "type": "RUN_FINISHED",
                "threadId": "t",
                "runId": "r",
                "outcome": [{"type": "interrupt"}],
            },
            "RUN-4",
            "/outcome",
        ),
        (
            {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": 3}},
            "RUN-4",
            "/outcome/type",
        ),
        (
            {
                "type": "RUN_FINISHED",
                "threadId": "t",
                "runId": "r",
                "outcome": {"type": "interrupt", "interrupts": []},
            },
            "INT-1",
            "/outcome/interrupts",
        ),
        ({"type": "SUBAGENT_STARTED", "subagentRunId": "s"}, "SUB-3", "/name"),
        (
            {"type": "REASONING_MESSAGE_START", "messageId": "m", "role": "assistant"},
            "REAS-4",
            "/role",
        ),
        (
            {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": {"a": 1}},
            "TOOL-12",
            "/content",
        ),
        (
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x", "timestamp": "5"},
            "PROC-2",
            "/timestamp",
        ),
        (
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x", "timestamp": 2**60},
            "PROC-2",
            "/timestamp",
        ),
        (
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x", "timestamp": True},
            "PROC-2",
            "/timestamp",
        ),
        (
            {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "no-slash", "value": 1}]},
            "PROC-2",
            "/delta/0/path",
        ),
        ({"type": "STATE_DELTA", "delta": {"op": "add"}}, "PROC-2", "/delta"),
        ({"type": "RAW", "event": {}, "rawEvent": None}, "EVT-5", "/rawEvent"),
        ({"type": 5}, "PROC-2", "/type"),
        ({"messageId": "m"}, "PROC-2", "/type"),
        (
            {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "usage": [{"inputTokens": -1}]},
            "PROC-2",
            "/usage/0/inputTokens",
        ),
    ],
)
def test_malformed_known_values_are_fatal(event: dict[str, Any], rule: str, path: str) -> None:
    exc = violation(event)
    assert (exc.rule, exc.path) == (rule, path)
    text = str(exc)
    assert rule in text and "event #7" in text and (path in text if path else True)


def test_no_coercion_of_numbers_to_strings() -> None:
    exc = violation({"type": "TEXT_MESSAGE_START", "messageId": 42})
    assert "42 (integer)" in str(exc)


def test_integral_float_is_the_same_json_integer() -> None:
    clean, _ = enforce({"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": 5.0})
    assert clean is not None and clean["timestamp"] == 5 and type(clean["timestamp"]) is int


def test_violation_value_is_truncated() -> None:
    exc = violation({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": ["x" * 10_000]})
    assert exc.value is not None and len(exc.value) < 120


def test_non_object_event_is_fatal() -> None:
    exc = violation([1, 2])  # type: ignore[arg-type]
    assert exc.rule == "TRANS-4"


def test_invalid_json_is_fatal_with_the_index() -> None:
    with pytest.raises(ProtocolViolation) as info:
        decode_event(b'{"type": "RUN_STARTED",', index=4)
    assert info.value.rule == "TRANS-4" and info.value.index == 4


def test_run_input_malformed_is_rejected_with_path() -> None:
    with pytest.raises(InputRejected) as info:
        decode_run_input({"threadId": "t", "runId": "r", "messages": "x"})
    assert info.value.path == "/messages" and info.value.index is None
    assert "run input" in str(info.value)
    with pytest.raises(InputRejected) as info:
        decode_run_input({"threadId": "t", "messages": []})
    assert info.value.rule == "INPUT-2" and info.value.path == "/runId"


def test_run_input_unknown_material_is_stripped() -> None:
    decoded = decode_run_input(
        {
            "threadId": "t",
            "runId": "r",
            "messages": [
                {
                    "id": "u",
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "a"},
                        {"type": "image", "source": {"type": "s3", "value": "k"}},
                    ],
                },
                {"id": "x", "role": "narrator", "content": "?"},
            ],
            "futureField": {"a": 1},
        }
    )
    assert decoded.wire["messages"] == [
        {"id": "u", "role": "user", "content": [{"type": "text", "text": "a"}]}
    ]
    assert sorted(w.path for w in decoded.warnings) == [
        "/futureField",
        "/messages/0/content/1",
        "/messages/1",
    ]
