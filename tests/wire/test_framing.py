"""SSE and NDJSON framing: the full SSE grammar, any split of the bytes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_tools import LimitExceeded, ProtocolViolation
from agui_tools.wire import NDJSONReader, SSEReader, sse_comment, sse_frame
from agui_tools.wire._framing import sniff_format

STREAM = (
    b"\xef\xbb\xbf"  # a byte-order mark at the very start is skipped
    b": keep-alive\n\n"
    b'data: {"type":"RUN_STARTED"}\r\n\r\n'  # CRLF
    b"event: ignored\nid: 7\nretry: 1000\nfoo: bar\n"
    b'data:{"a":\n'  # no space after the colon
    b"data:  1}\n\n"  # only ONE leading space is removed
    b"data: x\rdata: y\r\r"  # CR line endings, multi-line data joined with LF
    b"data\n\n"  # a field with no colon: empty value
    b": trailing comment\n"
    b'data: {"incomplete": true}'  # never terminated: not dispatched
)
EXPECTED = ['{"type":"RUN_STARTED"}', '{"a":\n 1}', "x\ny", ""]


def feed_all(reader: SSEReader, chunks: list[bytes]) -> list[str]:
    out: list[str] = []
    for c in chunks:
        out += reader.feed(c)
    return out


def test_whole_stream() -> None:
    r = SSEReader()
    assert feed_all(r, [STREAM]) == EXPECTED
    assert r.has_partial_event


def test_byte_by_byte() -> None:
    assert feed_all(SSEReader(), [bytes([b]) for b in STREAM]) == EXPECTED


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(STREAM)), max_size=20))
def test_any_split_gives_the_same_events(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks, last = [], 0
    for p in points:
        chunks.append(STREAM[last:p])
        last = p
    chunks.append(STREAM[last:])
    assert feed_all(SSEReader(), chunks) == EXPECTED


def test_cr_then_lf_across_chunks_is_one_line_break() -> None:
    r = SSEReader()
    assert r.feed(b"data: a\r") == []
    assert r.feed(b"\n\r") == ["a"]
    assert r.feed(b"\ndata: b\n\n") == ["b"]


def test_multibyte_utf8_split_across_chunks() -> None:
    payload = 'data: {"d":"héllo ✓"}\n\n'.encode()
    assert feed_all(SSEReader(), [payload[:12], payload[12:13], payload[13:]]) == [
        '{"d":"héllo ✓"}'
    ]


def test_invalid_utf8_is_a_violation() -> None:
    with pytest.raises(ProtocolViolation) as info:
        SSEReader().feed(b"data: \xff\xfe\n\n")
    assert info.value.rule == "TRANS-4"


def test_a_framing_violation_says_so_and_names_where_the_event_ended() -> None:
    """Not "run input": nothing about the input is wrong when a frame is not UTF-8."""
    with pytest.raises(ProtocolViolation) as info:
        SSEReader().feed(b": hi\n\ndata: \xff\xfe\n\n")
    text = str(info.value)
    assert "run input" not in text
    assert (
        text.startswith("[TRANS-4] stream framing:") and "ending at byte 15" in text
    )  # 6 + 9 bytes before it
    with pytest.raises(LimitExceeded) as limit:
        NDJSONReader(max_event_bytes=8).feed(b'{"a":"long line"')
    assert str(limit.value).startswith("[LIMIT] stream framing:")


def test_feed_frames_hands_a_violation_on_in_place_keeping_the_frames_before_it() -> None:
    from agui_tools.wire._framing import BrokenFrame

    reader = SSEReader()
    frames = reader.feed_frames(b"data: 1\n\ndata: 2\n\ndata: \xff\n\ndata: 3\n\n")
    assert frames[:2] == ["1", "2"]  # completed before the broken one, in the same chunk
    assert len(frames) == 3 and isinstance(frames[2], BrokenFrame)
    assert frames[2].violation.rule == "TRANS-4"
    assert reader.feed_frames(b"data: 4\n\n") == []  # the reader is finished
    oversize = SSEReader(max_event_bytes=16).feed_frames(b"data: 1\n\ndata: " + b"x" * 40)
    assert oversize[0] == "1" and isinstance(oversize[1], BrokenFrame)
    assert oversize[1].violation.rule == "LIMIT"


def test_event_size_limit() -> None:
    r = SSEReader(max_event_bytes=64)
    with pytest.raises(LimitExceeded) as info:
        r.feed(b"data: " + b"x" * 100)
    assert "max_event_bytes=64" in str(info.value)
    r = SSEReader(max_event_bytes=64)
    with pytest.raises(LimitExceeded):
        for _ in range(10):
            r.feed(b"data: " + b"x" * 10 + b"\n")


def test_writer_frames_with_lf_only() -> None:
    assert sse_frame(b'{"a":1}') == b'data: {"a":1}\n\n'
    assert sse_comment() == b": keep-alive\n\n"
    r = SSEReader()
    assert r.feed(sse_comment() + sse_frame(b"{}")) == ["{}"]


def test_ndjson() -> None:
    r = NDJSONReader()
    assert r.feed(b'{"a":1}\n\n{"b"') == [b'{"a":1}']
    assert r.feed(b":2}\r\n") == [b'{"b":2}\r']  # the CR is JSON whitespace
    assert r.feed(b'{"c":3}') == []
    assert r.close() == [b'{"c":3}']
    assert r.feed(b"\r\n \n") == [] and r.close() == []


def test_ndjson_invalid_utf8_is_rejected_by_the_pipeline() -> None:
    from agui_tools.wire._pipeline import ConsumerPipeline

    [line] = NDJSONReader().feed(b'{"type":"RUN_STARTED","threadId":"\xff","runId":"r"}\n')
    with pytest.raises(ProtocolViolation) as info:
        ConsumerPipeline().feed(line)
    assert info.value.rule == "TRANS-4"


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (b'  [{"type"', "json"),
        (b'{"type":1}\n', "ndjson"),
        (b"data: {}", "sse"),
        (b": hi\n", "sse"),
        (b"\xef\xbb\xbf[", "json"),
    ],
)
def test_sniff(head: bytes, kind: str) -> None:
    assert sniff_format(head) == kind


def test_the_reader_notes_each_events_own_id_when_asked() -> None:
    """The resumable binding's ids (docs/resumable.md): each dispatched event's own
    ``id`` field, in order, whatever the split; an event without one notes None."""
    stream = (
        b"id: r:1\ndata: a\n\nid: r:2\r\ndata: b\r\n\r\ndata: c\n\n: ka\n\nid: r\x00x\ndata: d\n\n"
    )
    whole = SSEReader(event_ids=True)
    assert whole.feed(stream) == ["a", "b", "c", "d"]
    assert whole.take_event_ids() == ["r:1", "r:2", None, None]  # a NUL voids the field
    assert whole.take_event_ids() == []
    bytewise = SSEReader(event_ids=True)
    frames = [f for i in range(len(stream)) for f in bytewise.feed(stream[i : i + 1])]
    assert frames == ["a", "b", "c", "d"]
    assert bytewise.take_event_ids() == ["r:1", "r:2", None, None]
    plain = SSEReader()
    assert plain.feed(stream) == ["a", "b", "c", "d"] and plain.take_event_ids() == []


def test_event_ids_survive_the_lf_only_fast_path() -> None:
    """A chunk of LF-only lines (the server's own spelling) is split in one pass: each
    event's id is noted there too, and does not leak into the next event."""
    stream = b"id: r:1\ndata: a\n\nid: r:2\ndata: b\n\ndata: c\n\n"
    reader = SSEReader(event_ids=True)
    assert reader.feed(stream) == ["a", "b", "c"]
    assert reader.take_event_ids() == ["r:1", "r:2", None]
