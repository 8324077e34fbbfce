"""The compatibility boundary translates exactly the registry's retired shapes
(spec/DEPRECATIONS.md), one warning per conversion, and nothing else (VER-4)."""

from __future__ import annotations

from typing import Any

import pytest

from agui_tools import InputRejected, ProtocolViolation
from agui_tools.wire import CompatibilityBoundary, decode_event, decode_run_input
from agui_tools.wire._upgrade import upgrade_run_input


def translate_all(stream: list[dict[str, Any]]) -> tuple[list[Any], list[str]]:
    b = CompatibilityBoundary()
    out, notes = [], []
    for i, ev in enumerate(stream):
        new, w = b.translate(ev, i)
        out.append(new)
        notes += [str(x) for x in w]
    return out, notes


def test_thinking_events_become_reasoning_with_minted_ids() -> None:
    out, notes = translate_all(
        [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
            {"type": "THINKING_START", "title": "Working"},
            {"type": "THINKING_TEXT_MESSAGE_START"},
            {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "Let me check.", "timestamp": 3},
            {"type": "THINKING_TEXT_MESSAGE_END"},
            {"type": "THINKING_END"},
        ]
    )
    assert out[1] == {"type": "REASONING_START", "messageId": "thinking:r1:1"}
    assert out[2] == {
        "type": "REASONING_MESSAGE_START",
        "messageId": "thinking:r1:2",
        "role": "reasoning",
    }
    assert out[3] == {
        "type": "REASONING_MESSAGE_CONTENT",
        "messageId": "thinking:r1:2",
        "delta": "Let me check.",
        "timestamp": 3,
    }
    assert out[4] == {"type": "REASONING_MESSAGE_END", "messageId": "thinking:r1:2"}
    assert out[5] == {"type": "REASONING_END", "messageId": "thinking:r1:1"}
    assert len(notes) == 5 and all("VER-4" in n for n in notes)
    assert "THINKING_START" in notes[0] and "could not carry: title" in notes[0]


@pytest.mark.parametrize(
    ("event", "field"),
    [
        (
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c",
                "toolCallName": "f",
                "parentMessageId": None,
            },
            "parentMessageId",
        ),
        (
            {
                "type": "TOOL_CALL_CHUNK",
                "toolCallId": "c",
                "toolCallName": "f",
                "parentMessageId": None,
            },
            "parentMessageId",
        ),
        ({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": None}, "outcome"),
        ({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": None}, "result"),
        ({"type": "SUBAGENT_FINISHED", "subagentRunId": "s", "result": None}, "result"),
        ({"type": "TEXT_MESSAGE_END", "messageId": "m", "rawEvent": None}, "rawEvent"),
    ],
)
def test_listed_nulls_are_omitted_with_one_warning(event: dict[str, Any], field: str) -> None:
    decoded = decode_event(event, index=2)
    assert decoded.wire is not None and field not in decoded.wire
    assert [(w.rule, w.path) for w in decoded.warnings] == [("VER-4", f"/{field}")]
    assert event[field] is None, "the caller's event is not mutated"


@pytest.mark.parametrize(
    ("event", "rule"),
    [
        ({"type": "TEXT_MESSAGE_START", "messageId": "m", "metadata": None}, "META-1"),
        ({"type": "RUN_STARTED", "threadId": "t", "runId": "r", "parentRunId": None}, "EVT-5"),
        (
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "x", "parentMessageId": None},
            None,
        ),
        ({"type": "RUN_ERROR", "message": "m", "code": None}, "EVT-5"),
    ],
)
def test_nulls_the_registry_does_not_name_stay_malformed(
    event: dict[str, Any], rule: str | None
) -> None:
    if rule is None:  # not a field of TOOL_CALL_ARGS at all: unknown property, stripped
        decoded = decode_event(event)
        assert decoded.wire is not None and "parentMessageId" not in decoded.wire
        assert [w.rule for w in decoded.warnings] == ["PROC-3"]
        return
    with pytest.raises(ProtocolViolation) as info:
        decode_event(event)
    assert info.value.rule == rule


def test_nested_nulls_and_binary_parts_in_snapshots_and_input() -> None:
    snapshot = {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            {
                "id": "u",
                "role": "user",
                "content": [
                    {
                        "type": "binary",
                        "mimeType": "image/png",
                        "url": "https://e.x/a.png",
                        "filename": "a.png",
                    },
                    {
                        "type": "image",
                        "source": {"type": "url", "value": "https://e.x/b.png"},
                        "metadata": None,
                    },
                ],
            },
        ],
    }
    decoded = decode_event(snapshot, index=1)
    assert decoded.wire is not None
    assert decoded.wire["messages"][0]["content"] == [
        {
            "type": "image",
            "source": {"type": "url", "value": "https://e.x/a.png", "mimeType": "image/png"},
        },
        {"type": "image", "source": {"type": "url", "value": "https://e.x/b.png"}},
    ]
    paths = [w.path for w in decoded.warnings]
    assert paths == ["/messages/0/content/0", "/messages/0/content/1/metadata"]
    assert "could not carry: filename" in decoded.warnings[0].message

    started = {
        "type": "RUN_STARTED",
        "threadId": "t",
        "runId": "r",
        "input": {
            "threadId": "t",
            "runId": "r",
            "messages": [],
            "forwardedProps": None,
            "state": None,
            "tools": [{"name": "f", "description": "d", "parameters": None}],
            "resume": [{"interruptId": "i", "status": "resolved", "payload": None}],
        },
    }
    decoded = decode_event(started)
    assert decoded.wire is not None
    assert decoded.wire["input"] == {
        "threadId": "t",
        "runId": "r",
        "messages": [],
        "tools": [{"name": "f", "description": "d"}],
        "resume": [{"interruptId": "i", "status": "resolved"}],
    }
    assert len(decoded.warnings) == 4


def test_binary_part_with_data_becomes_inline_media_by_mime_type() -> None:
    data = {
        "threadId": "t",
        "runId": "r",
        "messages": [
            {
                "id": "u",
                "role": "user",
                "content": [
                    {"type": "binary", "mimeType": "audio/wav", "data": "AAAA"},
                    {"type": "binary", "mimeType": "application/pdf", "id": "file-1"},
                ],
            }
        ],
    }
    out, warnings = upgrade_run_input(data, warn=False)
    assert warnings == []
    assert out["messages"][0]["content"] == [
        {"type": "audio", "source": {"type": "data", "value": "AAAA", "mimeType": "audio/wav"}},
        {
            "type": "document",
            "source": {"type": "file", "value": "file-1", "mimeType": "application/pdf"},
        },
    ]
    decoded = decode_run_input(data)
    assert len(decoded.warnings) == 2


def test_binary_part_without_payload_is_left_for_enforcement_to_strip() -> None:
    decoded = decode_run_input(
        {
            "threadId": "t",
            "runId": "r",
            "messages": [
                {
                    "id": "u",
                    "role": "user",
                    "content": [{"type": "binary", "mimeType": "image/png"}],
                }
            ],
        }
    )
    assert decoded.wire["messages"][0]["content"] == []
    assert [w.rule for w in decoded.warnings] == ["PROC-5"]


def test_malformed_input_after_upgrade_is_still_rejected() -> None:
    with pytest.raises(InputRejected):
        decode_run_input({"threadId": "t", "runId": "r", "messages": [], "parentRunId": None})


RETIRED = [
    {"type": "THINKING_START"},
    {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "x"},
    {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f", "parentMessageId": None},
    {"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "parentMessageId": None},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": None},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": None},
    {"type": "SUBAGENT_FINISHED", "subagentRunId": "s", "result": None},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x", "rawEvent": None},
    {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            {
                "id": "u",
                "role": "user",
                "content": [{"type": "binary", "mimeType": "image/png", "data": "AA"}],
            }
        ],
    },
]


def test_the_decoder_shortcut_never_skips_a_retired_shape() -> None:
    """Decoder.decode skips the boundary when the fast check accepts an event;
    that is only sound if the fast check refuses every shape the boundary
    translates."""
    from agui_tools.wire import Decoder, Enforcer

    checks = Enforcer().fast_checks
    for event in RETIRED:
        check = checks.get(event["type"])
        assert check is None or not check(event), event
        import orjson

        _, warnings = Decoder().decode(orjson.dumps(event), 0)
        assert any(w.rule == "VER-4" for w in warnings), event
