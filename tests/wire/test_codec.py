"""Round trips: wire → our decoder → official model → our encoder → wire, for
every event type, message role, content part and outcome (issue: foundation)."""

from __future__ import annotations

import copy

import orjson
import pytest
from ag_ui.core import Event, RunAgentInput
from ag_ui.encoder import EventEncoder
from pydantic import TypeAdapter

from agui_tools.wire import decode_event, decode_run_input, encode_event, from_model, sse_frame
from agui_tools.wire._schema import compiled
from tests.helpers.samples import EVENTS, MESSAGES, PARTS, RUN_INPUT

EVENT_ADAPTER = TypeAdapter(Event)


def test_samples_cover_the_schema() -> None:
    schema = compiled()
    assert {e["type"] for e in EVENTS} == set(schema.event.variants)
    assert {m["role"] for m in MESSAGES} == set(schema.message.variants)
    parts = schema.definition("ContentPart")
    assert {p["type"] for p in PARTS} == set(parts.variants)  # type: ignore[attr-defined]
    sources = schema.definition("PartSource")
    assert {p["source"]["type"] for p in PARTS if "source" in p} == set(sources.variants)  # type: ignore[attr-defined]
    outcomes = {
        e["outcome"]["type"] for e in EVENTS if e["type"] == "RUN_FINISHED" and "outcome" in e
    }
    assert outcomes == {"success", "interrupt", "cancelled"}
    ops = {op["op"] for e in EVENTS if e["type"] == "STATE_DELTA" for op in e["delta"]}
    assert ops == set(schema.definition("JsonPatchOperation").variants)  # type: ignore[attr-defined]


@pytest.mark.parametrize("wire", EVENTS, ids=lambda e: e["type"])
def test_round_trip_through_our_codec_and_the_official_models(wire: dict) -> None:
    original = copy.deepcopy(wire)
    text = orjson.dumps(wire)

    decoded = decode_event(text, index=0)
    assert decoded.warnings == ()
    assert decoded.wire == original
    assert decoded.event is not None

    # typed → wire → JSON, by our encoder
    ours = encode_event(decoded.event)
    assert orjson.loads(ours) == original
    # the official models read our bytes and write back the same thing
    official = EVENT_ADAPTER.validate_json(ours)
    assert orjson.loads(official.model_dump_json(by_alias=True)) == original
    # the official encoder and ours agree on the SSE frame's payload
    official_frame = EventEncoder().encode(official)
    assert official_frame.startswith("data: ") and official_frame.endswith("\n\n")
    assert orjson.loads(official_frame[6:]) == orjson.loads(sse_frame(ours)[6:])
    # our encoder never writes null for an optional field without a value
    assert from_model(official) == original
    assert wire == original, "decoding must not mutate its input"


def test_encoder_omits_optional_fields_and_keeps_required_nulls() -> None:
    from ag_ui.core import CustomEvent, ToolCallStartEvent

    start = ToolCallStartEvent(tool_call_id="c1", tool_call_name="f")
    assert orjson.loads(encode_event(start)) == {
        "type": "TOOL_CALL_START",
        "toolCallId": "c1",
        "toolCallName": "f",
    }
    custom = CustomEvent(name="x", value=None)
    assert orjson.loads(encode_event(custom)) == {"type": "CUSTOM", "name": "x", "value": None}


def test_encoding_is_compact_camel_case_and_lf_framed() -> None:
    from ag_ui.core import TextMessageContentEvent

    frame = sse_frame(encode_event(TextMessageContentEvent(message_id="m", delta="a\nb\r")))
    assert frame == b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a\\nb\\r"}\n\n'
    assert b"\r" not in frame


def test_run_input_round_trip() -> None:
    decoded = decode_run_input(orjson.dumps(RUN_INPUT))
    assert decoded.warnings == ()
    assert decoded.wire == RUN_INPUT
    assert isinstance(decoded.input, RunAgentInput)
    assert orjson.loads(decoded.input.model_dump_json(by_alias=True)) == RUN_INPUT
    assert from_model(decoded.input) == RUN_INPUT
