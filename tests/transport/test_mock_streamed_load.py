"""``mock`` loads a capture as a stream (issue #37): the body is read
:data:`READ_CHUNK` bytes at a time and each frame becomes its event as it completes,
so what the mock holds is the events, never the capture's text as well. Read in any
chunks, a capture gives the events, the cut and the errors it gives read whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agui_tools import UsageError
from agui_tools.app._capture import read_frames, unfinished_at
from agui_tools.app._recorded import RecordedEvents, recorded_runs
from agui_tools.transport import _captures
from agui_tools.transport._captures import load_captures
from agui_tools.wire._codec import parse_json
from agui_tools.wire._proto_codec import encode_proto_event
from agui_tools.wire._proto_framing import proto_frame

EVENTS: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "héllo\nworld ✓"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]
LINES = [json.dumps(e, ensure_ascii=False).encode() for e in EVENTS]
PROTO = b"".join(proto_frame(encode_proto_event(e)) for e in EVENTS)
BODIES = {
    "sse": b"".join(b"data: " + line + b"\n\n" for line in LINES),
    "sse-crlf-comments": b": hi\r\n\r\n" + b"".join(b"data:" + x + b"\r\n\r\n" for x in LINES),
    "sse-bom-cr": b"\xef\xbb\xbf" + b"".join(b"event: x\rdata: " + x + b"\r\r" for x in LINES),
    "sse-cut": b"".join(b"data: " + x + b"\n\n" for x in LINES) + b'data: {"type": "RUN_STA',
    "sse-cut-after-comment": b"".join(b"data: " + x + b"\n\n" for x in LINES) + b": c\nid: 9\n",
    "ndjson": b"\n".join(LINES) + b"\n\n",
    "ndjson-unterminated": b"\n".join(LINES),
    "ndjson-cut": b"\n".join(LINES) + b'\n{"type": "RUN_STA',
    "json": json.dumps(EVENTS, indent=1, ensure_ascii=False).encode(),
    "proto": PROTO,
    "proto-cut": PROTO + PROTO[:7],
}
SIZES = (1, 2, 3, 5, 7, 64, 1000)


def fed(data: bytes, size: int) -> RecordedEvents:
    reader = RecordedEvents("capture")
    for start in range(0, len(data), size):
        reader.feed(data[start : start + size])
    return reader


def whole(data: bytes) -> list[Any]:
    """The events of ``data`` as :func:`read_frames` reads the body whole."""
    return [f if isinstance(f, dict) else parse_json(f) for f in read_frames(data)]


@pytest.mark.parametrize("name", sorted(BODIES))
@pytest.mark.parametrize("size", SIZES)
def test_a_body_fed_in_any_chunks_gives_what_it_gives_whole(name: str, size: int) -> None:
    data = BODIES[name]
    reader = fed(data, size)
    assert reader.close() == whole(data) == EVENTS
    assert reader.frames.unfinished_at == unfinished_at(data)
    assert reader.frames.size == len(data)
    assert (reader.frames.unfinished_at is not None) == name.endswith(("-cut", "-comment"))


def test_a_cut_capture_is_still_said_at_its_byte() -> None:
    data = BODIES["sse-cut"]
    (run,) = recorded_runs(fed(data, 3), source="cut.sse")
    start = data.rfind(b"data: ")
    assert run.events == EVENTS
    assert run.notes == [
        f"the capture stops inside an event at byte {start} of {len(data)} (TRANS-2): "
        "that unfinished event is not replayed"
    ]


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (BODIES["sse"][:100] + b"\xff" + BODIES["sse"][100:], "not UTF-8 text (byte 100)"),
        # a UTF-8 sequence the capture stops inside of is no text either
        (BODIES["sse"] + b": \xe2\x9c", f"not UTF-8 text (byte {len(BODIES['sse']) + 2})"),
        (BODIES["sse"] + b"data: {nope\n\n", "event 5: "),
        (b"data: 1\n\n" + BODIES["sse"], "event 0 is not an event object with a type (a JSON int)"),
        (b"just some text\nand more of it, no field at all\n" * 3, "no event found"),
        (b"\x00\x00\x10\x00" + b"\x01" * 70, "no complete binary frame: the first announces 4096"),
    ],
)
def test_a_bad_capture_is_refused_alike_in_any_chunks(data: bytes, words: str) -> None:
    said = set()
    for size in (*SIZES, len(data)):
        with pytest.raises(UsageError) as caught:
            fed(data, size).close()
        said.add(str(caught.value))
    (message,) = said  # one message, whatever the chunks
    assert words in message and "capture: " in message


def test_the_first_bad_event_is_said_and_nothing_is_kept() -> None:
    reader = fed(BODIES["ndjson"] + b"[1]\n" + b"\n".join(LINES) + b"\n", 4)
    assert reader.events == []  # nothing of a refused capture is held on to
    with pytest.raises(UsageError, match=r"event 5 is not an event object .*a JSON list"):
        reader.close()


def test_the_mock_reads_a_capture_in_chunks_and_decodes_as_it_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": f"{n} " * 9} for n in range(400)
    ]
    body = b"".join(
        b"data: " + json.dumps(e).encode() + b"\n\n"
        for e in [EVENTS[0], EVENTS[1], *events, *EVENTS[3:]]
    )
    capture = tmp_path / "big.sse"
    capture.write_bytes(body)
    monkeypatch.setattr(_captures, "READ_CHUNK", 1000)
    reads: list[int] = []
    kept: list[int] = []  # the events held after each chunk
    opened = _captures._open

    class Spy:
        def __init__(self, file: Any) -> None:
            self.file = file

        def read(self, size: int = -1) -> bytes:
            data: bytes = self.file.read(size)
            reads.append(len(data))
            return data

        def __enter__(self) -> Spy:
            return self

        def __exit__(self, *exc: object) -> None:
            self.file.close()

    feed = RecordedEvents.feed

    def counted(self: RecordedEvents, chunk: bytes) -> None:
        feed(self, chunk)
        kept.append(len(self.events))

    monkeypatch.setattr(_captures, "_open", lambda *a, **k: Spy(opened(*a, **k)))
    monkeypatch.setattr(RecordedEvents, "feed", counted)
    (run,) = load_captures([capture])
    assert len(run.events) == 404 and len(body) > 40_000
    assert max(reads) <= 1000 and sum(reads) == len(body)  # never more than a chunk at a time
    # each chunk's events are kept as it is read, not once the whole body is in
    assert len(kept) == len(reads) - 1 and kept == sorted(kept)
    assert 0 < kept[len(kept) // 2] < 404 and kept[-1] == 404


@pytest.mark.parametrize("name", ["sse", "ndjson"])
def test_a_text_capture_keeps_each_event_as_its_text_not_as_an_object(name: str) -> None:
    events = fed(BODIES[name], 7).close()
    first = events[0]
    assert first == EVENTS[0] and first is not events[0]  # parsed afresh on each read
    first["type"] = "CHANGED"  # what a reader does to its copy is not kept
    assert list(events) == EVENTS and events[1:3] == EVENTS[1:3] and len(events) == 5
    assert "5 events" in repr(events)


def test_a_binary_capture_keeps_its_events_as_decoded() -> None:
    events = fed(BODIES["proto"], 7).close()
    assert events == EVENTS and events[0] is events[0]  # no JSON text to keep


def test_a_capture_with_no_input_is_split_at_its_runs_as_it_is_read() -> None:
    second = [dict(e, runId="r2") if "runId" in e else e for e in EVENTS]
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in [*EVENTS, *second])
    runs = recorded_runs(fed(body, 5), source="two.sse")
    assert [r.source for r in runs] == ["two.sse run 1", "two.sse run 2"]
    assert [list(r.events) for r in runs] == [EVENTS, second]
