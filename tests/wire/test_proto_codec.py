"""The binary binding's codec against the pinned corpus, and the narrower-wire rules (TRANS-7).

The corpus (``tests/data/proto/corpus.json``) holds the bytes ``@ag-ui/proto``
1.0.0 writes for each canonical event and the event its decoder reads back;
``tests/interop/test_proto.py`` keeps it honest against the live package.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_tools import ProtocolViolation
from agui_tools.wire import _proto_events_pb2 as pb
from agui_tools.wire._proto_codec import (
    UnknownEventArm,
    decode_proto_event,
    encode_proto_event,
    js_key_order,
)
from tests.helpers.strategies import event, json_values

CORPUS = json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "proto" / "corpus.json").read_text()
)
BY_NAME = {c["name"]: c for c in CORPUS}


def test_the_corpus_covers_every_event_type() -> None:
    types = {c["event"]["type"] for c in CORPUS}
    assert types == set(pb.EventType.keys())


@pytest.mark.parametrize("case", CORPUS, ids=[c["name"] for c in CORPUS])
def test_our_bytes_are_the_official_bytes(case: dict[str, Any]) -> None:
    assert encode_proto_event(case["event"]).hex() == case["hex"]


@pytest.mark.parametrize("case", CORPUS, ids=[c["name"] for c in CORPUS])
def test_the_official_bytes_decode_to_the_official_event(case: dict[str, Any]) -> None:
    assert decode_proto_event(bytes.fromhex(case["hex"])) == case["decoded"]


def test_object_keys_go_in_javascript_order() -> None:
    assert js_key_order({"b": 1, "10": 2, "2": 3, "01": 4, "4294967295": 5, "4294967294": 6}) == [
        "2",
        "10",
        "4294967294",
        "b",
        "01",
        "4294967295",
    ]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(event())
def test_every_valid_event_is_a_fixed_point_after_one_round_trip(ev: dict[str, Any]) -> None:
    """Whatever the mapping narrows happens once: decoding our bytes and encoding
    the result again gives the same bytes, for every event type the schema allows."""
    data = encode_proto_event(ev)
    again = decode_proto_event(data)
    assert again["type"] == ev["type"]
    assert encode_proto_event(again) == data


@settings(max_examples=200)
@given(json_values)
def test_open_json_survives_the_binary_wire(value: Any) -> None:
    """State, results, ``rawEvent``: any JSON value comes back as the same JSON
    (a number as the number it spells — JSON has one number type)."""
    ev: dict[str, Any] = {"type": "STATE_SNAPSHOT", "snapshot": value}
    assert decode_proto_event(encode_proto_event(ev))["snapshot"] == json.loads(json.dumps(value))


# -- the binary wire is narrower (http-protobuf "The wire schema") --------------------


def test_json_patch_extension_members_do_not_survive() -> None:
    ev = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1, "x-ext": 2}]}
    plain = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}]}
    assert encode_proto_event(ev) == encode_proto_event(plain)
    assert decode_proto_event(encode_proto_event(ev)) == plain


def test_members_the_schema_does_not_model_are_not_written() -> None:
    ev = {"type": "TEXT_MESSAGE_END", "messageId": "m", "futureProp": {"x": 1}}
    assert decode_proto_event(encode_proto_event(ev)) == {
        "type": "TEXT_MESSAGE_END",
        "messageId": "m",
    }


def test_a_field_this_build_predates_is_skipped_silently() -> None:
    """A later schema's field inside a known event: protobuf skips it, no warning."""
    envelope = pb.Event()
    envelope.text_message_end.base_event.type = pb.TEXT_MESSAGE_END
    envelope.text_message_end.message_id = "m"
    inner = envelope.text_message_end.SerializeToString() + b"\xca\x05\x03new"  # field 89
    data = b"\x1a" + bytes([len(inner)]) + inner
    warnings: list[Any] = []
    assert decode_proto_event(data, warnings=warnings) == {
        "type": "TEXT_MESSAGE_END",
        "messageId": "m",
    }
    assert warnings == []


def test_1_1_members_ride_on_their_frozen_numbers() -> None:
    ev = {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": "message",
        "entityId": "m",
        "encryptedValue": "x",
        "encryptedValueType": "redacted",
    }
    assert decode_proto_event(encode_proto_event(ev)) == ev
    snapshot = {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            {
                "id": "a",
                "role": "assistant",
                "encryptedValue": "v",
                "encryptedValueType": "sig",
                "toolCalls": [
                    {
                        "id": "c",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{}"},
                        "encryptedValueType": "t",
                    }
                ],
            }
        ],
    }
    assert decode_proto_event(encode_proto_event(snapshot)) == snapshot


def test_an_unrecognised_outcome_survives_decoding() -> None:
    """The binding MUST NOT reject it at decode time: enforcement strips it, as on SSE."""
    case = BY_NAME["run-finished-unknown-outcome"]
    assert decode_proto_event(bytes.fromhex(case["hex"]))["outcome"] == {"type": "handed_off"}


def _future_arm(number: int, payload: bytes) -> bytes:
    tag = (number << 3) | 2
    head = bytes([tag & 0x7F | 0x80, tag >> 7]) if tag > 0x7F else bytes([tag])
    return head + bytes([len(payload)]) + payload


def test_an_envelope_arm_this_build_predates_is_dropped_with_a_warning() -> None:
    data = _future_arm(40, b"\x0a\x02\x08\x20\x12\x01x")  # a well-formed message
    with pytest.raises(UnknownEventArm) as info:
        decode_proto_event(data)
    assert info.value.warning.rule == "TRANS-7"
    assert "40" in info.value.warning.message
    assert "predates" in info.value.warning.message


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"\xff\xff\xff", "not a protobuf message"),
        (b"\x12\x05\x0a\x02", "not a protobuf message"),  # a length past the end
        (b"", "names no event"),
        (_future_arm(40, b"\xff\xff"), "names no event"),  # an unknown arm whose bytes are broken
        (b"\x08\x01", "names no event"),  # a varint where only messages are
        (b"\x1a\x03\x12\x01m", "no base_event"),
        (b"\x1a\x05\x0a\x03\x08\x01\x12", "not a protobuf message"),
        (b"\x1a\x07\x0a\x02\x08\x01\x12\x01m", "declares TEXT_MESSAGE_CONTENT"),
        (b"\x1a\x02\x0a\x00\x12\x02\x0a\x00", "more than one event"),
        (b"\x12\x06\x0a\x02\x08\x01\x1a\x00\xff", "not a protobuf message"),
    ],
)
def test_bytes_that_are_not_one_known_event_are_fatal(data: bytes, says: str) -> None:
    with pytest.raises(ProtocolViolation) as info:
        decode_proto_event(data)
    assert info.value.rule == "TRANS-7"
    assert says in str(info.value)


def test_invalid_utf8_in_a_string_is_fatal() -> None:
    with pytest.raises(ProtocolViolation, match="TRANS-7"):
        decode_proto_event(b"\x1a\x08\x0a\x02\x08\x02\x12\x02\xc3\x28")


def test_a_content_part_naming_no_known_arm_is_dropped_with_a_warning() -> None:
    envelope = pb.Event()
    result = envelope.tool_call_result
    result.base_event.type = pb.TOOL_CALL_RESULT
    result.message_id, result.tool_call_id = "r", "c"
    result.content_parts.add().text.text = "kept"
    data = envelope.SerializeToString()
    inner = result.SerializeToString() + b"\x3a\x04\x4a\x02\x08\x01"  # a part with arm 9 only
    data = b"\xb2\x01" + bytes([len(inner)]) + inner
    warnings: list[Any] = []
    ev = decode_proto_event(data, warnings=warnings)
    assert ev["content"] == [{"type": "text", "text": "kept"}]
    assert [w.rule for w in warnings] == ["TRANS-7"]
    assert "content part" in warnings[0].message


@pytest.mark.parametrize(
    "message",
    [
        {"id": "a", "role": "assistant", "contentParts": True},
        {"id": "u", "role": "user", "content": "x", "contentParts": True},
        {"id": "s", "role": "system", "activityContent": True},
        {"id": "x", "role": "activity", "content": "x", "activityContent": True},
        {"id": "f", "role": "future", "content": "x", "contentParts": True},
    ],
)
def test_a_message_carrying_contradictory_content_forms_is_fatal(message: dict[str, Any]) -> None:
    envelope = pb.Event()
    snap = envelope.messages_snapshot
    snap.base_event.type = pb.MESSAGES_SNAPSHOT
    m = snap.messages.add()
    m.id, m.role = message["id"], message["role"]
    if "content" in message:
        m.content = message["content"]
    if message.get("contentParts"):
        m.content_parts.add().text.text = "p"
    if message.get("activityContent"):
        m.activity_content.SetInParent()
    with pytest.raises(ProtocolViolation, match="TRANS-7"):
        decode_proto_event(envelope.SerializeToString())


def test_a_message_of_an_unknown_role_rides_on_for_enforcement() -> None:
    ev = {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "f", "role": "future", "content": "x"}]}
    assert decode_proto_event(encode_proto_event(ev)) == ev


@pytest.mark.parametrize(
    "ev",
    [
        {"messageId": "m"},
        {"type": "NOT_AN_EVENT"},
        {"type": "STATE_DELTA", "delta": [{"op": "frobnicate", "path": "/a"}]},
        {"type": "STATE_SNAPSHOT", "snapshot": {1, 2}},
        {"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": 1.5},
    ],
)
def test_an_event_no_frame_can_carry_is_refused_by_name(ev: dict[str, Any]) -> None:
    with pytest.raises(ValueError) as info:
        encode_proto_event(ev)
    assert str(ev.get("type")) in str(info.value) or "op" in str(info.value)


def test_decoding_never_shares_structure_with_a_later_decode() -> None:
    data = bytes.fromhex(BY_NAME["messages-snapshot"]["hex"])
    first = decode_proto_event(data)
    first["messages"][0]["content"] = "changed"
    assert decode_proto_event(data) == BY_NAME["messages-snapshot"]["decoded"]


@given(st.binary(max_size=64))
def test_arbitrary_bytes_decode_or_fail_by_rule_never_crash(data: bytes) -> None:
    try:
        decode_proto_event(data)
    except ProtocolViolation as exc:
        assert exc.rule == "TRANS-7"
    except UnknownEventArm as exc:
        assert exc.warning.rule == "TRANS-7"
