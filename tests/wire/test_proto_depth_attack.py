"""Adversarial tests of the binary binding's nesting claim (issue 28, item 9; rules
LIMIT and TRANS-7), written from docs/security.md and docs/transport.md alone.

The claims: what the JSON/SSE binding accepts, the binary binding carries; one
level past the limit is the same ``LIMIT`` verdict on both (same path, message,
event index); a frame upb refuses is read by the deep reader exactly as protobuf
would read it. The oracles: the SSE binding fed the same document, and upb itself
with its nesting limit raised (in a child process: 200 levels is far from the
30,000 at which it overflows the C stack). Each test was a finding,
``xfail(strict=True)`` until fixed; now each guards its fix.
"""

from __future__ import annotations

import contextlib
import json
import pickle
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from agui_tools import LimitExceeded, Limits, ProtocolViolation, UsageError
from agui_tools.app._conversation import Conversation
from agui_tools.app._reducer import ThreadState
from agui_tools.cli import main
from agui_tools.transport._client import SyncAgentClient
from agui_tools.wire import _proto_events_pb2 as pb
from agui_tools.wire._enforce import MAX_DEPTH_CEILING, depth_excess
from agui_tools.wire._framing import PROTO_MEDIA_TYPE, SSEReader, sse_frame
from agui_tools.wire._pipeline import ConsumerPipeline
from agui_tools.wire._proto_codec import decode_proto_event, encode_proto_event
from agui_tools.wire._proto_framing import ProtoReader, proto_frame
from tests.helpers.attacks import deep, varint
from tests.helpers.scripted_server import Script, app_for, serve

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
END = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


# -- raw protobuf, written by hand (the encoder refuses what a hostile peer sends) --------


def _ld(field: int, data: bytes) -> bytes:
    return varint(field << 3 | 2) + varint(len(data)) + data


def _num(x: float) -> bytes:  # JsonValue.number_value
    return varint(2 << 3 | 1) + struct.pack("<d", x)


def _entry(key: str, value: bytes) -> bytes:  # JsonObject.Entry
    return _ld(1, key.encode()) + _ld(2, value)


def _obj(*entries: bytes) -> bytes:  # JsonValue.struct_value
    return _ld(5, b"".join(_ld(1, e) for e in entries))


def _lists(levels: int, bottom: bytes) -> bytes:  # JsonValue.list_value, nested
    value = bottom
    for _ in range(levels):
        value = _ld(6, _ld(1, value))
    return value


def _custom(value: bytes) -> bytes:
    """An Event whose CUSTOM arm carries ``value`` (a JsonValue's bytes)."""
    base = _ld(1, varint(1 << 3) + varint(pb.EventType.Value("CUSTOM")))
    return _ld(11, base + _ld(2, b"n") + _ld(3, value))


def _outcome(frames: Any, limits: Limits | None = None) -> tuple[list[Any], Any]:
    pipeline = ConsumerPipeline(limits=limits)
    try:
        return pipeline.feed_many(frames), None
    except ProtocolViolation as exc:
        return pipeline.partial, (type(exc), exc.rule, exc.index, exc.path, exc.explanation)


def over_sse(texts: list[bytes]) -> tuple[list[Any], Any]:
    """A consumer fed these JSON documents as SSE events."""
    return _outcome(SSEReader().feed_frames(b"".join(sse_frame(t) for t in texts)))


def over_proto(messages: list[bytes]) -> tuple[list[Any], Any]:
    """A consumer fed these Event messages as binary frames."""
    return _outcome(ProtoReader().feed_frames(b"".join(proto_frame(m) for m in messages)))


def _json(event: Any) -> bytes:  # the stdlib writes past orjson's 254 levels
    return json.dumps(event, separators=(",", ":")).encode()


_UPB = r"""
import pickle, sys
from google._upb import _message
_message.SetAllowOversizeProtos(True)
from agui_tools.wire._proto_codec import decode_proto_event
print(repr(decode_proto_event(pickle.load(sys.stdin.buffer))), end="")
"""


def upb_reads(message: bytes) -> str:
    """What upb itself makes of ``message`` with its nesting limit raised (a child
    process: the switch is process-wide), as the decoded event's repr."""
    done = subprocess.run(
        [sys.executable, "-c", _UPB], input=pickle.dumps(message), capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return done.stdout.decode()


# -- findings --------------------------------------------------------------------------


_DEEP_TEXT = b"[" * 200 + b"1" + b"]" * 200


def _activity_twice() -> bytes:
    """ACTIVITY_SNAPSHOT whose ``content`` (a JsonObject) is written twice: protobuf
    merges the two — the entries concatenate, ``a`` twice, the last one kept."""
    base = _ld(1, varint(1 << 3) + varint(pb.EventType.Value("ACTIVITY_SNAPSHOT")))
    first = _ld(5, _ld(1, _entry("a", _lists(200, _num(1)))))
    second = _ld(5, _ld(1, _entry("a", _num(1))))
    return _ld(23, base + _ld(3, b"m") + _ld(4, b"a") + first + second)


DUPLICATES = [
    pytest.param(
        _custom(_obj(_entry("a", _lists(200, _num(1))), _entry("a", _num(2)))),
        {"type": "CUSTOM", "name": "n", "value": {"a": 2}},
        b'{"type":"CUSTOM","name":"n","value":{"a":' + _DEEP_TEXT + b',"a":2}}',
        id="CUSTOM.value-key-twice",
    ),
    pytest.param(
        _activity_twice(),
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "m", "activityType": "a", "content": {"a": 1}},
        b'{"type":"ACTIVITY_SNAPSHOT","messageId":"m","activityType":"a","content":{"a":'
        + _DEEP_TEXT
        + b',"a":1}}',
        id="ACTIVITY_SNAPSHOT.content-merged",
    ),
]


@pytest.mark.parametrize(("message", "event", "text"), DUPLICATES)
def test_a_duplicate_key_overridden_by_a_shallow_value_reads_as_protobuf_and_sse_read_it(
    message: bytes, event: dict[str, Any], text: bytes
) -> None:
    """``{"a": <200 nested lists>, "a": 2}`` is ``{"a": 2}``: orjson keeps the last
    duplicate on SSE, and upb (limit raised) decodes the same protobuf to the same
    event (so does the official ``@ag-ui/proto`` decoder, checked by hand). The deep
    reader gave up on the first ``a`` — a value nobody keeps — and refused the
    frame with its own LIMIT (empty path). Now the frame's cut reading, which
    enforcement accepts (so nothing cut is in it), is the event."""
    assert upb_reads(message) == repr(event)  # protobuf's own reading
    sse = over_sse([_json(START), text, _json(END)])
    assert sse == ([START, event, END], None)  # the JSON binding accepts it
    binary = over_proto([encode_proto_event(START), message, encode_proto_event(END)])
    assert binary == sse


def _nested_lists(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def test_a_cut_frame_keeps_enforcements_path_when_its_verdict_is_not_limit() -> None:
    """An interrupt's ``metadata`` 200 lists deep: SSE says META-1 at
    ``/outcome/interrupts/0/metadata`` (the shape is judged before the depth). At
    128 levels the binary binding says the same; past the deep reader's bound the
    cut frame's verdict came back with an empty path and a frame note appended. The
    reader now hands on enforcement's verdict as it is (only its own TRANS-7
    refusals get the frame note): the same violation, index, path and message."""
    for levels in (128, 200):
        finished = {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {
                "type": "interrupt",
                "interrupts": [{"id": "i", "reason": "r", "metadata": _nested_lists(levels)}],
            },
        }
        sse = over_sse([_json(START), _json(finished)])
        assert sse[1] is not None and sse[1][1:4] == ("META-1", 1, "/outcome/interrupts/0/metadata")
        binary = over_proto([encode_proto_event(e, max_depth=10_000) for e in (START, finished)])
        assert binary == sse, levels


def test_verify_with_a_raised_max_depth_reads_a_deep_binary_capture_as_its_sse_twin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--limit max_depth=200`` lets a 150-level state through on SSE ("completed").
    The binary twin delivers all three events, the run is a success — and the
    outcome is "truncated" (TRANS-2, "the capture ends inside an event ... that
    starts at byte 16": the snapshot's frame, which was read whole). At 128 levels
    (inside the default bound) the two agree."""
    events = [START, {"type": "STATE_SNAPSHOT", "snapshot": deep(150)}, END]
    docs = []
    for name, data in (
        ("c.sse", b"".join(sse_frame(_json(e)) for e in events)),
        ("c.pb", b"".join(proto_frame(encode_proto_event(e, max_depth=10_000)) for e in events)),
    ):
        (tmp_path / name).write_bytes(data)
        code = main(["verify", "--json", "--limit", "max_depth=200", str(tmp_path / name)])
        docs.append((code, json.loads(capsys.readouterr().out)))
    (sse_code, sse), (bin_code, binary) = docs
    assert sse_code == 0 and sse["outcome"] == "completed" and sse["truncated"] is None
    assert binary["events"] == sse["events"]  # every event read and delivered
    assert (bin_code, binary["outcome"], binary["truncated"]) == (0, "completed", None)


@pytest.mark.parametrize(
    ("event", "deep_values"),
    [
        pytest.param(
            {"type": "CUSTOM", "name": "n", "value": deep(128), "rawEvent": deep(128)},
            ["/value", "/rawEvent"],
            id="value-and-rawEvent",
        ),
        pytest.param(
            {"type": "CUSTOM", "name": "n", "value": {"1": deep(127), "0": deep(127)}},
            ["/value/1", "/value/0"],
            id="integer-like-keys",
        ),
    ],
)
def test_one_level_past_with_two_deep_values_is_one_verdict_naming_either_path(
    event: dict[str, Any], deep_values: list[str]
) -> None:
    """A known, bounded difference (docs/security.md, "Resource limits"): one level
    past the limit, twice in one event. SSE names the value its member order
    reaches first (``/value/…``, ``/value/0/…``); the binary binding keeps no
    member order — it writes the schema's field order and JavaScript key order,
    as the official encoder does — and may name the other (``/rawEvent/…``,
    ``/value/1/…``). The verdict is the same: violation type, rule ``LIMIT``, event
    index, and nothing delivered past ``RUN_STARTED``; each path is that of the
    first container past the limit inside one of the too-deep values, and each
    message names the value it is in. The producer does not enforce the limit
    (``max_depth=10_000``), as in tests/wire/test_proto_depth.py."""
    candidates = set()
    for pointer in deep_values:
        value: Any = event
        for key in pointer.split("/")[1:]:
            value = value[key]
        candidates.add(depth_excess(value, 128 - pointer.count("/"), pointer))
    sse = over_sse([_json(START), _json(event), _json(END)])
    binary = over_proto([encode_proto_event(e, max_depth=10_000) for e in (START, event, END)])
    for delivered, verdict in (sse, binary):
        assert delivered == [START]
        assert verdict is not None and verdict[:3] == (LimitExceeded, "LIMIT", 1)
        assert verdict[3] in candidates
        top = "/" + verdict[3].split("/")[1]
        assert verdict[4].startswith(f"the value at {top} nests deeper than max_depth=128")


def test_a_max_depth_past_the_ceiling_is_refused_where_it_is_given() -> None:
    """The attack raised both knobs to 300 and a 255-level state crashed ``client.run``
    (``TypeError: Recursion limit reached``: orjson writes 254 levels). The class is
    closed at construction: every place taking ``max_depth`` refuses one above
    ``MAX_DEPTH_CEILING`` with a ``UsageError`` (rule LIMIT) naming the ceiling and
    why — the correct verdict for 300, given before any byte is read."""
    too_deep = MAX_DEPTH_CEILING + 1
    makers: list[Any] = [
        lambda: Limits(max_depth=too_deep),
        lambda: ProtoReader(max_depth=too_deep),
        lambda: decode_proto_event(encode_proto_event(START), max_depth=too_deep),
        lambda: SyncAgentClient("http://127.0.0.1:9/agent", max_depth=too_deep),
        lambda: ThreadState(max_depth=too_deep),
    ]
    for make in makers:
        with pytest.raises(UsageError) as caught:
            make()
        assert caught.value.rule == "LIMIT"
        assert f"ceiling of {MAX_DEPTH_CEILING} levels" in str(caught.value)
        assert "orjson writes at most 254 levels" in str(caught.value)
    assert Limits(max_depth=MAX_DEPTH_CEILING).max_depth == MAX_DEPTH_CEILING


@pytest.mark.parametrize("binary", [False, True], ids=["sse", "proto"])
@pytest.mark.parametrize("past", [False, True], ids=["at-the-ceiling", "one-past"])
def test_a_raised_max_depth_never_turns_a_deep_state_into_a_traceback(
    binary: bool, past: bool
) -> None:
    """At the ceiling itself (both knobs raised, as the docs say): a state that fills
    ``MAX_DEPTH_CEILING`` levels with its event is delivered, reduced and re-sent in
    the next run input (orjson writes it) on both bindings; one level more is a
    LIMIT verdict, never a traceback. A real loopback server sends the bytes."""
    ceiling = MAX_DEPTH_CEILING
    conv = Conversation(thread_id="t", limits=Limits(max_depth=ceiling))
    conv.next_input(user="hi")
    ids = {"threadId": conv.pending_input["threadId"], "runId": conv.pending_input["runId"]}
    snapshot = {"type": "STATE_SNAPSHOT", "snapshot": deep(ceiling - 1 + past)}
    events = [{"type": "RUN_STARTED", **ids}, snapshot, {"type": "RUN_FINISHED", **ids}]
    if binary:
        body = b"".join(proto_frame(encode_proto_event(e, max_depth=300)) for e in events)
        script = Script(chunks=[body], content_type=PROTO_MEDIA_TYPE)
    else:
        script = Script(chunks=[b"".join(sse_frame(_json(e)) for e in events)])
    transport = "proto" if binary else "sse"
    with (
        serve(app_for(script)) as url,
        SyncAgentClient(f"{url}/agent", transport=transport, max_depth=ceiling) as client,
    ):
        try:
            result = client.run(conv)
        except ProtocolViolation as exc:  # one past: a verdict naming the rule
            assert past and exc.rule == "LIMIT", exc
            return
        if past:
            assert result.status == "rejected" and result.violation is not None
            assert result.violation.rule == "LIMIT"
            return
        assert result.status == "success"
        assert conv.state == snapshot["snapshot"]
        conv.next_input(user="again")  # the state re-sent, re-nested: still writable
        assert orjson.loads(orjson.dumps(conv.pending_input))["state"] == snapshot["snapshot"]
        with contextlib.suppress(ProtocolViolation):  # the scripted answer is the first run's
            client.run(conv)  # the client sends it
    assert len(script.requests) == 2
    assert orjson.loads(script.requests[1]["body"])["state"] == snapshot["snapshot"]


def _state_deep(levels: int) -> tuple[bytes, bytes]:
    """A STATE_SNAPSHOT ``levels`` lists deep: its JSON text, and its Event message."""
    text = b'{"type":"STATE_SNAPSHOT","snapshot":' + b"[" * levels + b"1" + b"]" * levels + b"}"
    base = _ld(1, varint(1 << 3) + varint(pb.EventType.Value("STATE_SNAPSHOT")))
    return text, _ld(7, base + _ld(2, _lists(levels, _num(1))))  # Event.state_snapshot


# (levels of the state's lists, the verdict at max_depth=MAX_DEPTH_CEILING): the event
# counts as one level more, so CEILING - 1 lists fill the limit exactly
DEEP_STATES = [
    pytest.param(MAX_DEPTH_CEILING - 1, None, id="at-the-ceiling"),
    pytest.param(MAX_DEPTH_CEILING, "LIMIT", id="one-past-the-ceiling"),
    pytest.param(1100, "LIMIT", id="1100-levels"),
]


@pytest.mark.parametrize(("levels", "rule"), DEEP_STATES)
def test_a_raised_max_depth_past_1024_gives_one_verdict_on_both_bindings(
    levels: int, rule: str | None
) -> None:
    """The attack gave ``Limits(max_depth=2000)`` (accepted then without a word) and
    a 1,100-level state: LIMIT over SSE, a RecursionError in enforcement over
    protobuf. 2000 is now refused at construction (``UsageError`` naming the
    ceiling, the correct verdict); at the ceiling itself the two bindings give one
    verdict — the state that fills it delivered, one level more and 1,100 levels
    the same LIMIT (rule, index, path, message)."""
    with pytest.raises(UsageError, match=f"ceiling of {MAX_DEPTH_CEILING} levels"):
        Limits(max_depth=2000)
    with pytest.raises(UsageError, match=f"ceiling of {MAX_DEPTH_CEILING} levels"):
        ProtoReader(max_depth=2000)
    limits = Limits(max_depth=MAX_DEPTH_CEILING)
    text, message = _state_deep(levels)
    sse = _outcome(SSEReader().feed_frames(b"".join(map(sse_frame, [_json(START), text]))), limits)
    if rule is None:
        assert sse[1] is None and len(sse[0]) == 2
    else:
        assert sse[1] is not None and sse[1][1:3] == (rule, 1)
    frames = ProtoReader(max_depth=MAX_DEPTH_CEILING).feed_frames(
        proto_frame(encode_proto_event(START)) + proto_frame(message)
    )
    assert _outcome(frames, limits) == sse


@pytest.mark.parametrize(("levels", "rule"), DEEP_STATES)
def test_verify_with_max_depth_2000_judges_a_1100_level_binary_capture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], levels: int, rule: str | None
) -> None:
    """The attack's ``--limit max_depth=2000`` made the binary capture a RecursionError
    traceback out of ``agui-tools verify``: it is now bad usage (exit 2, the
    ceiling named). At the ceiling, the SSE capture and its binary twin get one
    verdict: "completed" when the state fills the limit, "failed" (LIMIT at event
    1) past it."""
    text, message = _state_deep(levels)
    (tmp_path / "c.sse").write_bytes(b"".join(map(sse_frame, [_json(START), text, _json(END)])))
    body = proto_frame(message).join(
        [proto_frame(encode_proto_event(START)), proto_frame(encode_proto_event(END))]
    )
    (tmp_path / "c.pb").write_bytes(body)
    with pytest.raises(SystemExit) as refused:
        main(["verify", "--limit", "max_depth=2000", str(tmp_path / "c.pb")])
    assert refused.value.code == 2
    assert f"ceiling of {MAX_DEPTH_CEILING} levels" in capsys.readouterr().err
    verdicts = []
    for name in ("c.sse", "c.pb"):
        limit = f"max_depth={MAX_DEPTH_CEILING}"
        code = main(["verify", "--json", "--limit", limit, str(tmp_path / name)])
        doc = json.loads(capsys.readouterr().out)
        verdicts.append((code, doc["outcome"], doc["error"], doc["truncated"]))
    if rule is None:
        assert verdicts[0] == (0, "completed", None, None)
    else:
        assert verdicts[0][:2] == (1, "failed") and verdicts[0][2]["rule"] == rule
    assert verdicts[1] == verdicts[0]


@pytest.mark.parametrize("binary", [False, True], ids=["sse", "proto"])
def test_at_the_ceiling_verify_json_writes_an_activity_that_fills_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], binary: bool
) -> None:
    """The ceiling's derivation, checked: an activity's ``content`` is re-nested two
    levels deeper than in its event (``messages[i].content`` of the verdict's
    document, and of the next run input) and an event sits at level 3 of
    ``verify --json``'s document. At ``max_depth=MAX_DEPTH_CEILING`` an
    ``ACTIVITY_SNAPSHOT`` filling the limit is delivered and written — a ceiling
    past what orjson writes re-nested would be a traceback here."""
    content = deep(MAX_DEPTH_CEILING - 1)
    activity = {"type": "ACTIVITY_SNAPSHOT", "messageId": "m", "activityType": "a"}
    events = [START, {**activity, "content": content}, END]
    if binary:
        body = b"".join(proto_frame(encode_proto_event(e, max_depth=300)) for e in events)
    else:
        body = b"".join(sse_frame(_json(e)) for e in events)
    (tmp_path / "c").write_bytes(body)
    limit = f"max_depth={MAX_DEPTH_CEILING}"
    assert main(["verify", "--json", "--limit", limit, str(tmp_path / "c")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["outcome"] == "completed" and doc["events"][1]["content"] == content
    assert [m["content"] for m in doc["messages"]] == [content]


_TOOL_CALL = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(
            {"type": "STATE_DELTA", "delta": [{"op": op, "path": "/a", "value": deep(200)}]}
            if op == "remove"
            else {
                "type": "STATE_DELTA",
                "delta": [{"op": op, "from": "/b", "path": "/a", "value": deep(200)}],
            },
            id=f"STATE_DELTA-{op}-with-a-value",
        )
        for op in ("remove", "move", "copy")
    ]
    + [
        pytest.param(
            {
                "type": "ACTIVITY_DELTA",
                "messageId": "m",
                "activityType": "a",
                "patch": [{"op": "remove", "path": "/a", "value": deep(200)}],
            },
            id="ACTIVITY_DELTA-remove-with-a-value",
        ),
        pytest.param(
            {
                "type": "MESSAGES_SNAPSHOT",
                "messages": [
                    {
                        "id": "m",
                        "role": "user",
                        "content": "x",
                        "toolCalls": [{**_TOOL_CALL, "metadata": {"a": deep(200)}}],
                    }
                ],
            },
            id="user-message-toolCalls-stripped",
        ),
    ],
)
def test_a_deep_value_enforcement_does_not_keep_gets_one_verdict_on_both_bindings(
    event: dict[str, Any],
) -> None:
    """A value 200 levels deep where enforcement did not judge depth: a
    ``remove``/``move``/``copy`` operation's stray ``value`` (SSE delivered it as is,
    no warning, no LIMIT), a user message's ``toolCalls`` (SSE stripped them,
    PROC-3). SSE accepted the event; the binary binding refused it with the
    decoder's own LIMIT (empty path). The rule now: every member of an event,
    stripped or unjudged ones included, nests within ``max_depth`` (as every member
    of a run input does) — one LIMIT on both bindings, naming the same path."""
    sse = over_sse([_json(START), _json(event), _json(END)])
    assert sse[1] is not None and sse[1][:3] == (LimitExceeded, "LIMIT", 1)
    assert sse[1][3] == depth_excess(event, 128) and sse[1][3].count("/") == 128
    assert len(sse[0]) == 1  # RUN_STARTED only: the deep event is not delivered
    binary = over_proto([encode_proto_event(e, max_depth=10_000) for e in (START, event, END)])
    assert binary == sse


@pytest.mark.parametrize(
    "part",
    [
        pytest.param({"type": "hologram", "data": deep(200)}, id="unknown-union-member"),
        pytest.param(
            {"type": "image", "source": {"type": "s3", "value": "k"}, "extra": deep(200)},
            id="after-an-unrecognised-required-member",
        ),
    ],
)
def test_a_deep_value_inside_a_stripped_member_is_limit_too(part: dict[str, Any]) -> None:
    """The same rule where the walker stops early: a content part of an unknown kind
    (stripped whole, PROC-5) and the members after an image part's unknown
    ``source`` (the part stripped at it) are never walked — they are measured all
    the same, so a 200-level value there is LIMIT, not a silent strip."""
    event = {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": [part]}
    sse = over_sse([_json(START), _json(event), _json(END)])
    assert sse[1] is not None and sse[1][1:3] == ("LIMIT", 1)
    assert sse[1][3] == depth_excess(event, 128)
    shallow = {**event, "content": [{**part, **{k: 1 for k in ("data", "extra") if k in part}}]}
    assert over_sse([_json(START), _json(shallow), _json(END)])[1] is None  # stripped, fine


def test_verify_json_survives_a_deep_value_the_stream_delivers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Default limits. SSE enforcement delivered a ``remove`` operation's stray
    ``value`` however deep (up to orjson's 1,024 levels), so ``verify`` judged the
    run "completed" — and ``--json`` then wrote the delivered events with orjson
    (254 levels at most): ``TypeError: Recursion limit reached``, a traceback. Now
    the value is LIMIT (every member within ``max_depth``): "failed", both ways."""
    delta = b'{"type":"STATE_DELTA","delta":[{"op":"remove","path":"/a","value":'
    delta += b"[" * 300 + b"1" + b"]" * 300 + b"}]}"
    body = b"".join(sse_frame(t) for t in (_json(START), delta, _json(END)))
    (tmp_path / "c.sse").write_bytes(body)
    assert main(["verify", str(tmp_path / "c.sse")]) == 1  # judged: failed (LIMIT)
    assert "LIMIT" in capsys.readouterr().out
    code = main(["verify", "--json", str(tmp_path / "c.sse")])
    doc = json.loads(capsys.readouterr().out)
    assert (code, doc["outcome"]) in ((0, "completed"), (1, "failed"))
