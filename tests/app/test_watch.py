"""The proxy's stream judge, sans-I/O: whatever the chunking, it says what ``verify`` says,
and in strict mode forwards exactly the whole events before the one that breaks a rule."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agui_tools.app._capture import truncation, verify_capture
from agui_tools.app._watch import StreamWatch
from agui_tools.wire._framing import SSEReader, sse_frame
from agui_tools.wire._proto_codec import encode_proto_event
from agui_tools.wire._proto_framing import ProtoReader, proto_frame

INPUT: dict[str, Any] = {
    "threadId": "t",
    "runId": "r",
    "messages": [],
    "tools": [{"name": "confirm_order", "description": "Confirm."}],
}
RS = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
RF = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
TS = {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "confirm_order"}
TA = {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"qty":2}'}
TE = {"type": "TOOL_CALL_END", "toolCallId": "c1"}
TR = {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "m9", "content": "ok"}
TEXT = {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "hé"}
STREAMS = {
    "good": ([RS, TEXT, TS, TA, TE, RF], None),
    "args-after-end": ([RS, TS, TE, TA, RF], 3),
    "fabricated": ([RS, TS, TA, TE, TR, RF], 4),
    "cut": ([RS, TS, TA], None),
}


def _encode(events: list[dict[str, Any]], binding: str, crlf: bool = False) -> list[bytes]:
    if binding == "proto":
        return [proto_frame(encode_proto_event(e)) for e in events]
    frames = [sse_frame(orjson.dumps(e)) for e in events]
    return [f.replace(b"\n", b"\r\n") for f in frames] if crlf else frames


def _verify_says(body: bytes) -> set[tuple[str, int | None, str]]:
    verdict = verify_capture(body, run_input=INPUT)
    said = {(w.rule, w.index, "") for w in verdict.warnings}
    if verdict.result.error is not None:
        said.add((verdict.result.error.rule, verdict.result.error.index, ""))
    cut = truncation(verdict, body)
    if cut is not None:
        said.add((cut["rule"], cut["index"], cut["message"]))
    return said


def _watch_says(watch: StreamWatch) -> set[tuple[str, int | None, str]]:
    out = set()
    for f in watch.findings:
        out.add((f.rule, f.index, f.message if f.rule == "TRANS-2" else ""))
    return out


@pytest.mark.parametrize("binding", ["sse", "sse-crlf", "proto"])
@pytest.mark.parametrize("name", sorted(STREAMS))
def test_every_split_in_two_says_what_verify_says(name: str, binding: str) -> None:
    events, _ = STREAMS[name]
    body = b"".join(_encode(events, binding.removesuffix("-crlf"), crlf=binding.endswith("crlf")))
    if name == "cut":
        body += body[-7:]  # an unfinished event after the last whole one
    expected = _verify_says(body)
    for at in range(len(body) + 1):
        watch = StreamWatch(binding.removesuffix("-crlf"), run_input=INPUT)
        watch.feed(body[:at])
        watch.feed(body[at:])
        watch.close()
        assert _watch_says(watch) == expected, at


@pytest.mark.parametrize("binding", ["sse", "sse-crlf", "proto"])
@pytest.mark.parametrize("name", sorted(STREAMS))
def test_strict_forwards_whole_events_up_to_the_breaking_one(name: str, binding: str) -> None:
    events, breaking = STREAMS[name]
    kind = binding.removesuffix("-crlf")
    frames = _encode(events, kind, crlf=binding.endswith("crlf"))
    body = b"".join(frames)
    for step in (1, 3, 7, len(body)):  # byte by byte, odd sizes, all at once
        watch = StreamWatch(kind, run_input=INPUT)
        out, fatal = b"", None
        for start in range(0, len(body), step):
            sent, fatal = watch.admit(body[start : start + step])
            out += sent
            # never half an event: what went out so far ends on an event's end (a CRLF
            # stream's last LF may follow with the next bytes: the CR already ended the line)
            ends = [b"".join(frames[:k]) for k in range(len(frames) + 1)]
            assert any(out in (end, end.removesuffix(b"\n")) for end in ends), out[-20:]
            if fatal is not None:
                out += watch.run_error(fatal)
                break
        if breaking is None:
            assert fatal is None and out == body
            continue
        assert fatal is not None and fatal.index == breaking
        got = (
            ProtoReader().feed(out)
            if kind == "proto"
            else [orjson.loads(d) for d in SSEReader().feed(out)]
        )
        assert [e["type"] for e in got] == [e["type"] for e in events[:breaking]] + ["RUN_ERROR"]
        assert got[-1]["code"] == fatal.rule
