"""The binary binding byte for byte against the official ``@ag-ui/proto`` 1.0.0, in Node.

Both directions, on the whole canonical corpus (``tests/data/proto/corpus.json``)
and on events drawn from the schema:

* our bytes are the official encoder's bytes;
* the official decoder reads our bytes as the event our decoder reads from them,
  and our decoder reads the official bytes as the event the official decoder
  reads;
* the pinned corpus is what the live package writes today.

The narrower-wire cases the page names are checked against the peer too: a 1.1
member the package predates is skipped by its decoder; an envelope arm it
predates is dropped (``AGUIUnknownEventTypeError``) as ours drops it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from agui_tools.app._capture import read_frames, replay
from agui_tools.wire._framing import PROTO_MEDIA_TYPE
from agui_tools.wire._proto_codec import UnknownEventArm, decode_proto_event, encode_proto_event
from tests.helpers.gen_proto_corpus import C as CORPUS_EVENTS
from tests.helpers.scripted_server import serve
from tests.helpers.strategies import event
from tests.interop.node import run_node, skip_reason
from tests.interop.our_agent import FRONTEND_TOOLS, SCENARIOS, Recorder, app

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or ""),
]

CORPUS_FILE = Path(__file__).resolve().parents[1] / "data" / "proto" / "corpus.json"


def official(tmp_path: Path, **request: Any) -> dict[str, Any]:
    path = tmp_path / f"request-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(request))
    return run_node("proto.mjs", "codec", str(path))


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def same_numbers(value: Any) -> Any:
    """JSON as the two languages hold it, every number a double: JavaScript prints
    an integral double past 2^53 in digits Python would read as a different int."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list):
        return [same_numbers(v) for v in value]
    return {k: same_numbers(v) for k, v in value.items()}


def test_the_pinned_corpus_is_what_the_package_writes_today(tmp_path: Path) -> None:
    pinned = json.loads(CORPUS_FILE.read_text())
    assert [c["event"] for c in pinned] == as_json([c["event"] for c in CORPUS_EVENTS])
    got = official(tmp_path, encode=[c["event"] for c in pinned], decode=[c["hex"] for c in pinned])
    assert [e["hex"] for e in got["encoded"]] == [c["hex"] for c in pinned]
    assert [d["event"] for d in got["decoded"]] == [c["decoded"] for c in pinned]


def without_1_1(value: Any) -> Any:
    """The event as the 1.0.0 package can hold it: without ``encryptedValueType``,
    the one member 1.1 added (its decoder skips the field, its encoder cannot write it)."""
    if isinstance(value, list):
        return [without_1_1(v) for v in value]
    if isinstance(value, dict):
        return {k: without_1_1(v) for k, v in value.items() if k != "encryptedValueType"}
    return value


def check_both_directions(tmp_path: Path, events: list[dict[str, Any]]) -> None:
    ours = [encode_proto_event(ev).hex() for ev in events]
    got = official(tmp_path, encode=events, decode=ours)
    for ev, mine, theirs, read in zip(events, ours, got["encoded"], got["decoded"], strict=True):
        older = encode_proto_event(without_1_1(ev))
        assert theirs == {"hex": older.hex()}, ev
        # theirs read ours as ours read ours, less what 1.0.0 predates
        expected = without_1_1(decode_proto_event(bytes.fromhex(mine)))
        assert same_numbers(read) == same_numbers({"event": expected}), ev
        assert decode_proto_event(older) == expected, ev


def test_the_corpus_in_both_directions(tmp_path: Path) -> None:
    check_both_directions(tmp_path, [c["event"] for c in CORPUS_EVENTS])


@settings(
    max_examples=4,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no shrinking: each try runs Node
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(event(), min_size=40, max_size=40))
def test_events_drawn_from_the_schema_in_both_directions(
    tmp_path: Path, events: list[dict[str, Any]]
) -> None:
    """A differential corpus: every event type the schema allows, open payloads
    included, round-tripped through both encoders, byte-equal."""
    check_both_directions(tmp_path, events)


def test_a_1_1_member_the_package_predates_is_skipped_by_its_decoder(tmp_path: Path) -> None:
    ev = {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": "message",
        "entityId": "m",
        "encryptedValue": "x",
        "encryptedValueType": "redacted",
    }
    older = {k: v for k, v in ev.items() if k != "encryptedValueType"}
    mine = encode_proto_event(ev)
    got = official(tmp_path, encode=[ev], decode=[mine.hex()])
    assert got["decoded"] == [{"event": older}]  # skipped silently, by protobuf itself
    assert got["encoded"] == [{"hex": encode_proto_event(older).hex()}]  # it cannot write it
    assert decode_proto_event(mine) == ev  # we, at 1.1, keep it


def test_an_envelope_arm_both_predate_is_dropped_by_both(tmp_path: Path) -> None:
    data = bytes([0xC2, 0x02, 0x05]) + b"\x0a\x03\x08\x20\x01"[:5]  # field 40, a message
    got = official(tmp_path, decode=[data.hex()])
    assert got["decoded"] == [{"unknown": True}]
    with pytest.raises(UnknownEventArm):
        decode_proto_event(data)


def test_extension_members_of_a_patch_are_lost_by_both(tmp_path: Path) -> None:
    ev = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1, "x-ext": 2}]}
    mine = encode_proto_event(ev)
    got = official(tmp_path, encode=[ev], decode=[mine.hex()])
    assert got["encoded"] == [{"hex": mine.hex()}]
    lost = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}]}
    assert got["decoded"] == [{"event": lost}]
    assert decode_proto_event(mine) == lost


# -- the official HttpAgent against our server, over the binary binding ------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Recorder]]:
    recorder = Recorder(app)
    with serve(recorder) as base:
        yield f"{base}/agent", recorder


def drive(url: str, scenario: str, *, binary: bool) -> tuple[str, dict[str, Any]]:
    thread_id = f"ts-{scenario}-{uuid.uuid4().hex[:8]}"
    args = ["--scenario", scenario, "--thread-id", thread_id, "--tools", json.dumps(FRONTEND_TOOLS)]
    out = run_node("httpagent.mjs", url, *args, *(["--binary", "1"] if binary else []))
    return thread_id, out


def run_ids_named(value: Any, runs: list[dict[str, Any]]) -> Any:
    """The thread with each run's client-minted id replaced by its position (a subagent's
    run id embeds it), so two conversations of one scenario compare."""
    text = json.dumps(value)
    for k, run in enumerate(runs):
        text = text.replace(run["runId"], f"run-{k}")
    return json.loads(text)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_official_http_agent_over_the_binary_binding(
    server: tuple[str, Recorder], scenario: str
) -> None:
    url, recorder = server
    _, sse = drive(url, scenario, binary=False)
    thread_id, binary = drive(url, scenario, binary=True)

    assert binary["outcome"] == "completed", binary["error"]
    assert all(r["outcome"] == "completed" for r in binary["runs"]), binary["runs"]
    assert binary["consoleErrors"] == []
    assert binary["warnings"] == sse["warnings"]  # the protocol-version note, nothing more
    # the same conversation as over SSE
    assert len(binary["runs"]) == len(sse["runs"])
    assert run_ids_named(binary["messages"], binary["runs"]) == run_ids_named(
        sse["messages"], sse["runs"]
    )
    assert binary["state"] == sse["state"]

    exchanges = recorder.for_thread(thread_id)
    assert len(exchanges) == len(binary["runs"])
    for ex, run in zip(exchanges, binary["runs"], strict=True):
        assert ex.status == 200 and ex.headers["content-type"] == PROTO_MEDIA_TYPE
        assert PROTO_MEDIA_TYPE in ex.request_headers["accept"]
        # our consumer over the very bytes the official one read
        request = json.loads(ex.request_body)
        ours = replay(read_frames(ex.body), run_input=request)
        assert ours.result.outcome == "completed", ours.result.error
        assert [r.run_id for r in ours.result.runs] == [run["runId"]]


# -- our client against a body the official encoder framed ------------------------------------


def official_run(thread_id: str, run_id: str) -> list[dict[str, Any]]:
    ids = {"threadId": thread_id, "runId": run_id}
    return [
        {"type": "RUN_STARTED", **ids, "protocolVersion": "1.0"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Checking — ✓ "},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c1",
            "toolCallName": "lookup",
            "parentMessageId": "m1",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"q":"ü"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "r1",
            "toolCallId": "c1",
            "content": [{"type": "text", "text": "found"}],
        },
        {"type": "STATE_SNAPSHOT", "snapshot": {"n": 1, "10": [True, None]}},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/m", "value": 2}]},
        {
            "type": "TOOL_CALL_CHUNK",
            "toolCallId": "c2",
            "toolCallName": "confirm_order",
            "parentMessageId": "m2",
            "delta": '{"sku":',
        },
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "c2", "delta": '"W-1"}'},
        {
            "type": "RUN_FINISHED",
            **ids,
            "outcome": {"type": "success", "pendingToolCallIds": ["c2"]},
        },
    ]


@pytest.mark.parametrize("transport", ["proto", "auto"])
def test_our_client_reads_a_body_the_official_encoder_framed(
    tmp_path: Path, transport: str
) -> None:
    from agui_tools.app._conversation import Conversation
    from agui_tools.app._tools import ToolSpec
    from agui_tools.transport._client import SyncAgentClient
    from tests.helpers.scripted_server import Script, app_for

    outcomes = {}
    for binding in ("sse", "binary"):
        conv = Conversation(thread_id="t", tools=[ToolSpec("confirm_order", "Confirm.")])
        conv.next_input(user="hi")
        events = official_run("t", conv.pending_input["runId"])
        if binding == "binary":
            got = official(tmp_path, frame=[events])
            assert got["contentType"] == PROTO_MEDIA_TYPE
            body = bytes.fromhex(got["framed"][0])
            chunks = [body[i : i + 7] for i in range(0, len(body), 7)]  # split mid-frame
            script = Script(chunks=chunks, content_type=PROTO_MEDIA_TYPE)
        else:
            script = Script(chunks=[b"data: " + json.dumps(e).encode() + b"\n\n" for e in events])
        with serve(app_for(script)) as base:
            with SyncAgentClient(f"{base}/agent", transport=transport) as client:  # type: ignore[arg-type]
                result = client.run(conv)
        outcomes[binding] = (
            result.status,
            [p.call_id for p in result.pending],
            conv.messages[1:],  # after the user message, whose id each conversation mints
            conv.state,
            [str(w) for w in result.warnings],
        )
    assert outcomes["binary"] == outcomes["sse"]
    assert outcomes["binary"][0] == "success" and outcomes["binary"][1] == ["c2"]


def test_the_deepest_state_both_bindings_carry_crosses_to_the_official_codec(
    tmp_path: Path,
) -> None:
    """Issue 28, item 9a: 127 levels under /snapshot (the most SSE takes), objects and
    lists alternating, in both directions — the official codec reads and writes what
    ours does at the limit, as it does at any depth the corpus holds."""
    from agui_tools.wire._enforce import DEFAULT_MAX_DEPTH
    from tests.helpers.attacks import deep

    events = [
        {"type": "STATE_SNAPSHOT", "snapshot": deep(DEFAULT_MAX_DEPTH - 1)},
        {"type": "CUSTOM", "name": "n", "value": deep(DEFAULT_MAX_DEPTH - 1, [False] * 127)},
    ]
    check_both_directions(tmp_path, events)
