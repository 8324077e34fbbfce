"""Binary-binding framing (TRANS-7): 4-byte big-endian length-prefixed frames, any split."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_tools import LimitExceeded, ProtocolViolation
from agui_tools.wire import ConsumerPipeline
from agui_tools.wire._framing import BrokenFrame, FrameNote, sniff_format
from agui_tools.wire._proto_codec import encode_proto_event
from agui_tools.wire._proto_framing import PendingFrame, ProtoReader, proto_frame

CORPUS = json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "proto" / "corpus.json").read_text()
)
BODY = b"".join(proto_frame(bytes.fromhex(c["hex"])) for c in CORPUS)
EXPECTED = [c["decoded"] for c in CORPUS]

RUN = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hé"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]


def body_of(events: list[dict[str, Any]]) -> bytes:
    return b"".join(proto_frame(encode_proto_event(e)) for e in events)


def test_the_frame_header_is_a_big_endian_uint32() -> None:
    assert proto_frame(b"\x01" * 258) == b"\x00\x00\x01\x02" + b"\x01" * 258


def test_a_whole_body_in_one_chunk() -> None:
    reader = ProtoReader()
    assert reader.feed(BODY) == EXPECTED
    assert not reader.has_partial_event


def test_byte_by_byte() -> None:
    reader = ProtoReader()
    out: list[Any] = []
    for b in BODY:
        out += reader.feed(bytes([b]))
    assert out == EXPECTED


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(BODY) - 1), max_size=30))
def test_any_split_gives_the_same_events(cuts: list[int]) -> None:
    reader = ProtoReader()
    out: list[Any] = []
    last = 0
    for p in [*sorted(set(cuts)), len(BODY)]:
        out += reader.feed_frames(BODY[last:p])
        last = p
    assert out == EXPECTED


def test_a_body_that_ends_mid_frame_is_a_truncated_run_not_an_error() -> None:
    body = body_of(RUN)
    cut = body[:-3]
    reader = ProtoReader()
    pipe = ConsumerPipeline()
    pipe.feed_many(reader.feed_frames(cut))
    assert reader.has_partial_event
    result = pipe.close()
    assert result.error is None
    assert result.runs[0].status == "truncated"


def test_the_pending_frame_names_where_a_body_stopped_mid_frame() -> None:
    """What a checker needs to say where a producer's framing broke: index, offset, header."""
    body = body_of(RUN)
    last = len(body_of(RUN[:-1]))
    announced = len(body) - last - 4
    reader = ProtoReader()
    reader.feed(body)
    assert reader.pending_frame() is None  # ends on a frame boundary
    for cut, header in ((last + 2, None), (len(body) - 3, announced)):
        reader = ProtoReader()
        reader.feed(body[:cut])
        assert reader.pending_frame() == PendingFrame(4, last, header)
    first = body_of(RUN[:1])
    refused = ProtoReader(max_event_bytes=len(first) - 4)
    frames = refused.feed_frames(first + (len(first) - 3).to_bytes(4, "big") + b"x")
    assert isinstance(frames[-1], BrokenFrame)
    assert refused.pending_frame() == PendingFrame(1, len(first), len(first) - 3)


def test_an_undecodable_frame_is_fatal_after_the_events_before_it() -> None:
    body = body_of(RUN[:2]) + proto_frame(b"\xff\xff") + body_of(RUN[2:])
    reader = ProtoReader()
    frames = reader.feed_frames(body)
    assert len(frames) == 3
    assert isinstance(frames[2], BrokenFrame)
    violation = frames[2].violation
    assert violation.rule == "TRANS-7"
    assert "binary frame #2" in str(violation)
    assert f"at byte {len(body_of(RUN[:2]))}" in str(violation)
    assert reader.feed_frames(body_of(RUN)) == []  # finished
    pipe = ConsumerPipeline()
    with pytest.raises(ProtocolViolation) as info:
        pipe.feed_many(frames)
    assert info.value.rule == "TRANS-7"
    assert info.value.index == 2
    assert [e["type"] for e in pipe.partial] == ["RUN_STARTED", "TEXT_MESSAGE_START"]


def test_feed_raises_what_feed_frames_hands_on() -> None:
    with pytest.raises(ProtocolViolation, match="TRANS-7"):
        ProtoReader().feed(proto_frame(b"\x08"))


def test_a_length_over_the_limit_is_refused_before_the_bytes_arrive() -> None:
    reader = ProtoReader(max_event_bytes=1000)
    reader.feed(body_of(RUN[:1]))
    with pytest.raises(LimitExceeded) as info:
        reader.feed((1001).to_bytes(4, "big"))  # the header alone
    assert "announces 1001 bytes, over max_event_bytes=1000" in str(info.value)
    assert "binary frame #1" in str(info.value)


def test_a_length_at_the_limit_is_read() -> None:
    message = encode_proto_event({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"})
    assert ProtoReader(max_event_bytes=len(message)).feed(proto_frame(message))


def test_a_frame_from_a_later_protocol_is_dropped_with_a_warning_and_the_run_goes_on() -> None:
    future = proto_frame(b"\xc2\x02\x03\x0a\x01\x00")  # envelope field 40: a message
    body = body_of(RUN[:2]) + future + body_of(RUN[2:])
    frames = ProtoReader().feed_frames(body)
    assert isinstance(frames[2], FrameNote) and frames[2].dropped
    pipe = ConsumerPipeline()
    delivered = pipe.feed_many(frames)
    assert [e["type"] for e in delivered] == [e["type"] for e in RUN]
    result = pipe.close()
    assert result.runs[0].status == "success"
    assert [(w.rule, w.index) for w in result.warnings] == [("TRANS-7", 2)]
    assert result.events == len(RUN) + 1  # the dropped frame had a position
    reader = ProtoReader()
    assert reader.feed(body) == [encode_and_back(e) for e in RUN]
    assert [w.rule for w in reader.warnings] == ["TRANS-7"]


def test_a_dropped_frame_takes_its_position_on_the_one_event_path_too() -> None:
    pipe = ConsumerPipeline()
    for frame in ProtoReader().feed_frames(body_of(RUN[:1]) + proto_frame(b"\xc2\x02\x00")):
        pipe.feed(frame)
    pipe.feed(RUN[-1])
    assert [(w.rule, w.index) for w in pipe.close().warnings] == [("TRANS-7", 1)]


def encode_and_back(event: dict[str, Any]) -> dict[str, Any]:
    from agui_tools.wire._proto_codec import decode_proto_event

    return decode_proto_event(encode_proto_event(event))


def test_an_unknown_outcome_reaches_enforcement_and_is_stripped_as_on_sse() -> None:
    """PROC-6: the same stream, the same verdict and warnings on both bindings."""
    events = [*RUN[:-1], {**RUN[-1], "outcome": {"type": "handed_off"}}]
    sse = ConsumerPipeline()
    sse.feed_many([json.dumps(e) for e in events])
    binary = ConsumerPipeline()
    delivered = binary.feed_many(ProtoReader().feed_frames(body_of(events)))
    assert "outcome" not in delivered[-1]
    a, b = sse.close(), binary.close()
    assert (a.outcome, [r.status for r in a.runs]) == (b.outcome, [r.status for r in b.runs])
    assert [(w.rule, w.path) for w in a.warnings] == [(w.rule, w.path) for w in b.warnings]
    assert a.warnings


def test_a_dropped_content_part_is_said_at_the_event_it_came_with() -> None:
    from agui_tools.wire import _proto_events_pb2 as pb

    envelope = pb.Event()
    result = envelope.tool_call_result
    result.base_event.type = pb.TOOL_CALL_RESULT
    result.message_id, result.tool_call_id = "r", "c"
    inner = result.SerializeToString() + b"\x3a\x04\x4a\x02\x08\x01"
    message = b"\xb2\x01" + bytes([len(inner)]) + inner
    frames = ProtoReader().feed_frames(body_of(RUN[:1]) + proto_frame(message))
    assert isinstance(frames[1], FrameNote) and not frames[1].dropped
    pipe = ConsumerPipeline()
    pipe.feed_many(frames)
    assert [(w.rule, w.index) for w in pipe.warnings if w.rule == "TRANS-7"] == [("TRANS-7", 1)]
    assert pipe.index == 1  # the note took no position of its own


def test_a_binary_capture_is_recognised() -> None:
    assert sniff_format(BODY[:64]) == "proto"
    assert sniff_format(b'data: {"type":"RUN_STARTED"}\n\n') == "sse"
    assert sniff_format(b'{"type":"RUN_STARTED"}\n') == "ndjson"


FIXTURES = Path(__file__).resolve().parents[1] / "conformance" / "streams"
NO_BINARY_FORM = {
    # an event or value the binary wire has no spelling for: nothing to send
    "era-0-0-45-thinking-translated.json": "no binary wire form for an event of type 'THINKING_START'",
    "unknown-event-dropped.json": "no binary wire form for an event of type 'FUTURE_EVENT'",
    "state-delta-unknown-op-dropped.json": "'increment' is not a JSON Patch operation",
    "malformed-known-field-fatal.json": "TEXT_MESSAGE_CONTENT",
}
MALFORMED_THE_WIRE_CANNOT_CARRY = {
    # a malformed value of a known field: its binary spelling is a well-formed one (a
    # missing required string reads as "", an array outcome as no outcome), exactly as
    # the official encoder and decoder do — the verdict on the bytes is not the JSON one
    "subagent-started-missing-name-fatal.json",
    "unknown-outcome-array-fatal.json",
}


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.json")))
def test_every_conformance_fixture_gets_the_same_verdict_on_both_bindings(name: str) -> None:
    """PROC-6: "if a stream survives as JSON, it MUST survive as protobuf, and if it
    fails, it MUST fail the same way" — the same outcome, run statuses, thread and state
    — except where the binary wire cannot spell the stream at all (listed, with why)."""
    from agui_tools.app._capture import replay

    fixture = json.loads((FIXTURES / name).read_text())
    stream, run_input = fixture["stream"], fixture.get("input")
    try:
        body = body_of(stream)
    except ValueError as exc:
        assert NO_BINARY_FORM.get(name, "(unexpected)") in str(exc)
        return
    assert name not in NO_BINARY_FORM
    sse = replay([json.dumps(e) for e in stream], run_input=run_input)
    binary = replay(ProtoReader().feed_frames(body), run_input=run_input)

    def verdict(v: Any) -> Any:
        return (
            v.result.outcome,
            [r.status for r in v.result.runs],
            v.thread.messages,
            v.thread.state,
        )

    if name in MALFORMED_THE_WIRE_CANNOT_CARRY:
        assert sse.result.outcome == "failed" and binary.result.outcome == "completed"
    else:
        assert verdict(binary) == verdict(sse)
