"""Both bindings agree on nesting (issue 28, item 9a; rules LIMIT and TRANS-7).

An open value (state, ``CUSTOM.value``, metadata…) may nest as deeply on the
binary binding as on the JSON one: ``max_depth`` levels, the event counting as
one, judged by the same enforcement. upb alone reads 100 protobuf levels (32
JSON object levels); the deep reader carries the rest, a deeper frame is a
``LIMIT`` violation naming ``max_depth`` (not TRANS-7, not a crash), and the
encoder never writes a frame a consumer refuses.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_tools import ProtocolViolation, UsageError
from agui_tools.wire import _proto_events_pb2 as pb
from agui_tools.wire._enforce import DEFAULT_MAX_DEPTH, Enforcer
from agui_tools.wire._framing import SSEReader, sse_frame
from agui_tools.wire._pipeline import ConsumerPipeline
from agui_tools.wire._proto_codec import (
    UnknownEventArm,
    _decode_deep,
    decode_proto_event,
    encode_proto_event,
)
from agui_tools.wire._proto_framing import ProtoReader, proto_frame
from tests.helpers.attacks import deep, nested_lists, snapshot_frame, varint
from tests.helpers.strategies import event, json_scalars, json_values

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
END = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


# (position, event carrying the value, how many path segments lead to it)
POSITIONS: list[tuple[str, Any, int]] = [
    ("/snapshot", lambda v: {"type": "STATE_SNAPSHOT", "snapshot": v}, 1),
    (
        "/delta/0/value",
        lambda v: {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": v}]},
        3,
    ),
    ("/value", lambda v: {"type": "CUSTOM", "name": "n", "value": v}, 1),
    ("/event", lambda v: {"type": "RAW", "event": v}, 1),
    ("/rawEvent", lambda v: {"type": "CUSTOM", "name": "n", "value": 1, "rawEvent": v}, 1),
    ("/metadata", lambda v: {"type": "CUSTOM", "name": "n", "value": 1, "metadata": v}, 1),
    (
        "/messages/0/metadata",
        lambda v: {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [{"id": "m", "role": "user", "content": "x", "metadata": v}],
        },
        3,
    ),
    (
        "/messages/0/content (activity)",
        lambda v: {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [{"id": "m", "role": "activity", "activityType": "a", "content": v}],
        },
        3,
    ),
    (
        "/content (activity)",
        lambda v: {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "m",
            "activityType": "a",
            "content": v,
        },
        1,
    ),
    ("/result", lambda v: {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": v}, 1),
]


def stream(ev: dict[str, Any]) -> list[dict[str, Any]]:
    if ev["type"] == "RUN_FINISHED":
        return [START, ev]
    return [START, ev, END]


def _outcome(pipeline: ConsumerPipeline, frames: list[Any]) -> tuple[list[Any], Any]:
    try:
        return pipeline.feed_many(frames), None
    except ProtocolViolation as exc:
        return pipeline.partial, (type(exc), exc.rule, exc.index, exc.path, exc.explanation)


def over_both(events: list[dict[str, Any]]) -> tuple[Any, Any]:
    """What a consumer makes of ``events`` sent over SSE, and over protobuf by a
    producer that does not enforce the limit itself."""
    sse = b"".join(sse_frame(orjson.dumps(e)) for e in events)
    binary = b"".join(proto_frame(encode_proto_event(e, max_depth=10_000)) for e in events)
    return (
        _outcome(ConsumerPipeline(), SSEReader().feed_frames(sse)),
        _outcome(ConsumerPipeline(), ProtoReader().feed_frames(binary)),
    )


@pytest.mark.parametrize(("at", "build", "segments"), POSITIONS, ids=[p[0] for p in POSITIONS])
def test_the_deepest_value_the_json_binding_accepts_crosses_the_binary_one(
    at: str, build: Any, segments: int
) -> None:
    ev = build(deep(DEFAULT_MAX_DEPTH - segments))
    Enforcer().event(ev)  # the JSON binding accepts it: no LIMIT
    assert decode_proto_event(encode_proto_event(ev)) == decode_proto_event(
        encode_proto_event(orjson.loads(orjson.dumps(ev)))
    )
    (sse_events, sse_error), (bin_events, bin_error) = over_both(stream(ev))
    assert sse_error is None and bin_error is None
    assert bin_events == sse_events
    assert len(bin_events) == len(stream(ev))


@pytest.mark.parametrize(("at", "build", "segments"), POSITIONS, ids=[p[0] for p in POSITIONS])
def test_one_level_deeper_is_the_same_limit_verdict_on_both_bindings(
    at: str, build: Any, segments: int
) -> None:
    ev = build(deep(DEFAULT_MAX_DEPTH - segments + 1))
    (sse_events, sse_error), (bin_events, bin_error) = over_both(stream(ev))
    assert sse_error is not None and sse_error[1] == "LIMIT" and sse_error[2] == 1
    assert bin_error == sse_error  # class, rule, index, path and explanation
    assert f"max_depth={DEFAULT_MAX_DEPTH}" in sse_error[4]
    assert bin_events == sse_events


def test_the_encoder_refuses_a_value_past_max_depth_naming_the_path() -> None:
    ok = {"type": "STATE_SNAPSHOT", "snapshot": deep(DEFAULT_MAX_DEPTH - 1)}
    encode_proto_event(ok)
    with pytest.raises(UsageError) as info:
        encode_proto_event({"type": "STATE_SNAPSHOT", "snapshot": [deep(DEFAULT_MAX_DEPTH - 1)]})
    assert info.value.rule == "LIMIT"
    text = str(info.value)
    assert f"max_depth={DEFAULT_MAX_DEPTH}" in text and "STATE_SNAPSHOT" in text
    # the first value past the limit, as enforcement names it on SSE
    assert "the value at /snapshot/0/k/1/k/1/" in text
    with pytest.raises(UsageError, match=r"max_depth=10 "):
        encode_proto_event(ok, max_depth=10)


def test_the_encoder_writes_only_what_its_decoder_reads_back() -> None:
    for levels in (1, 30, 31, 32, 49, 50, 60, 100, DEFAULT_MAX_DEPTH - 1):
        ev = {"type": "CUSTOM", "name": "n", "value": deep(levels)}
        assert decode_proto_event(encode_proto_event(ev))["value"] == ev["value"]


# -- hostile frames --------------------------------------------------------------------


def test_nested_lists_builds_what_upb_reads() -> None:
    value = pb.JsonValue.FromString(nested_lists(3, b"\x11\x00\x00\x00\x00\x00\x00\xf0\x3f"))
    assert value.list_value.values[0].list_value.values[0].list_value.values[0].number_value == 1


def test_a_frame_nested_100k_levels_is_a_limit_violation_in_bounded_work() -> None:
    """A child process: a reader that let upb (or Python) recurse that deep would
    crash it, not fail the test politely."""
    code = (
        "from tests.helpers.attacks import nested_lists, snapshot_frame\n"
        "from agui_tools.wire._proto_framing import ProtoReader, proto_frame\n"
        "from agui_tools.wire._framing import BrokenFrame\n"
        "frames = ProtoReader().feed_frames(proto_frame(snapshot_frame(nested_lists(100_000))))\n"
        "assert len(frames) == 1 and isinstance(frames[0], BrokenFrame), frames\n"
        "v = frames[0].violation\n"
        "print(type(v).__name__, v.rule, v)\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("LimitExceeded LIMIT "), done.stdout
    assert f"max_depth={DEFAULT_MAX_DEPTH}" in done.stdout
    assert "STATE_SNAPSHOT at /snapshot/0/0/" in done.stdout  # enforcement's words, as on SSE
    assert "not a protobuf message" not in done.stdout


def test_a_deep_frame_in_a_stream_names_the_event_index() -> None:
    body = proto_frame(encode_proto_event(START)) + proto_frame(snapshot_frame(nested_lists(500)))
    _, error = _outcome(ConsumerPipeline(), ProtoReader().feed_frames(body))
    assert error is not None
    cls, rule, index, path, explanation = error
    assert cls.__name__ == "LimitExceeded" and rule == "LIMIT" and index == 1
    assert path == "/snapshot" + "/0" * (DEFAULT_MAX_DEPTH - 1)  # the first list past the limit
    assert f"max_depth={DEFAULT_MAX_DEPTH}" in explanation


def test_max_depth_is_the_decoders_bound() -> None:
    frame = snapshot_frame(nested_lists(60))
    assert decode_proto_event(frame, max_depth=60)["snapshot"] is not None
    with pytest.raises(ProtocolViolation) as info:
        decode_proto_event(frame, max_depth=59)
    assert info.value.rule == "LIMIT" and "max_depth=59" in str(info.value)


@pytest.mark.parametrize(
    "bottom",
    [
        b"\x1a\x02\xc3\x28",  # a string that is not UTF-8
        b"\x1a\x05ab",  # a length past the end
        b"\x0f",  # wire type 7
        b"\x32\x03\x0a\x05\x00",  # a list whose element overruns it
    ],
)
def test_garbage_below_upbs_limit_stays_trans_7(bottom: bytes) -> None:
    for levels in (3, 70):  # read by upb whole; read by the deep reader
        with pytest.raises(ProtocolViolation) as info:
            decode_proto_event(snapshot_frame(nested_lists(levels, bottom)))
        assert info.value.rule == "TRANS-7"
        assert "not a protobuf message" in str(info.value)


# -- the deep reader reads what upb reads ------------------------------------------------


def _same(read: Any) -> Any:
    try:
        return read()
    except ProtocolViolation as exc:
        return ("violation", exc.rule, exc.explanation)
    except UnknownEventArm as exc:
        return ("unknown arm", exc.fields)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(event(), st.data())
def test_the_deep_reader_reads_every_frame_as_upb_does(ev: dict[str, Any], data: Any) -> None:
    """Whatever upb reads whole — our frames, and the same bytes damaged — the deep
    reader reads to the same event (or the same refusal)."""
    frame = bytearray(encode_proto_event(ev))
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(0, max(len(frame) - 1, 0)))
        how = data.draw(st.sampled_from(["flip", "insert", "delete", "duplicate"]))
        if how == "flip" and frame:
            frame[at] ^= data.draw(st.integers(1, 255))
        elif how == "insert":
            frame[at:at] = bytes([data.draw(st.integers(0, 255))])
        elif how == "delete" and frame:
            del frame[at]
        elif how == "duplicate":
            frame += frame[at : at + data.draw(st.integers(1, 16))]
    damaged = bytes(frame)
    try:
        pb.Event.FromString(damaged)
    except Exception:
        return  # upb refuses it: decode_proto_event hands it to the deep reader anyway
    assert _same(lambda: _decode_deep(damaged, None, DEFAULT_MAX_DEPTH)) == _same(
        lambda: decode_proto_event(damaged)
    )


def _merged(kind: int, parts: list[bytes]) -> bytes:
    """A JsonValue whose container field ``kind`` occurs once per part (protobuf merges them)."""
    return b"".join(bytes([kind << 3 | 2]) + varint(len(p)) + p for p in parts)


def test_a_container_field_written_twice_is_merged_as_upb_merges_it() -> None:
    one = pb.JsonList(values=[pb.JsonValue(number_value=1)]).SerializeToString()
    two = pb.JsonList(values=[pb.JsonValue(string_value="x")]).SerializeToString()
    for bottom in (_merged(6, [one, two]), _merged(6, [one]) + b"\x20\x01" + _merged(6, [two])):
        frame = snapshot_frame(nested_lists(2, bottom))  # shallow: upb reads it whole
        assert _decode_deep(frame, None, DEFAULT_MAX_DEPTH) == decode_proto_event(frame)
    # the same where upb cannot read it: the first part holds 60 more levels
    chain: Any = 2
    for _ in range(60):
        chain = [chain]
    element = nested_lists(60, b"\x11" + bytes(7) + b"\x40")  # 60 lists around 2.0
    first = one + b"\x0a" + varint(len(element)) + element
    value = _merged(6, [first, two])
    assert decode_proto_event(snapshot_frame(value))["snapshot"] == [1, chain, "x"]
    switched = _merged(6, [first]) + b"\x20\x01" + _merged(6, [two])  # a bool between
    assert decode_proto_event(snapshot_frame(switched))["snapshot"] == ["x"]


# -- SSE and protobuf, random nesting up to the limit -------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(1, DEFAULT_MAX_DEPTH + 100).flatmap(
        lambda levels: st.tuples(
            st.lists(st.booleans(), min_size=levels, max_size=levels), json_scalars, json_values
        )
    )
)
def test_random_nesting_reads_the_same_on_both_bindings(drawn: Any) -> None:
    """Up to the limit, the same events; past it — however far — the same violation,
    word for word, at the same event."""
    kinds, sibling, extra = drawn
    value = {"deep": deep(len(kinds), kinds, sibling), "extra": extra}  # one more level
    levels = len(kinds) + 1
    ev = {"type": "CUSTOM", "name": "n", "value": value}
    sse, binary = over_both(stream(ev))
    assert (sse[1] is None) == (levels <= DEFAULT_MAX_DEPTH - 1)  # /value: one segment
    assert binary == sse


def test_a_frame_too_deep_and_broken_further_on_is_the_decoders_own_limit() -> None:
    """The cut event cannot be read for enforcement's words (its value is not UTF-8):
    the decoder's own LIMIT stands, naming the event type and the path inside the value."""
    ev = {"type": "CUSTOM", "name": "n", "value": "QZ", "metadata": deep(200, [True] * 200)}
    frame = encode_proto_event(ev, max_depth=10_000)
    assert frame.count(b"\x1a\x02QZ") == 1
    with pytest.raises(ProtocolViolation) as info:
        decode_proto_event(frame.replace(b"\x1a\x02QZ", b"\x1a\x02\xc3\x28"))
    assert info.value.rule == "LIMIT" and info.value.event_type == "CUSTOM"
    assert "a binary frame's CUSTOM event carries a value nested deeper than max_depth=128" in str(
        info.value
    )
    assert "/k" * (DEFAULT_MAX_DEPTH - 1) in str(info.value)
