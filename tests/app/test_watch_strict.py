"""Strict mode's whole-chunk judge (``StreamWatch.admit`` on SSE) against the event-at-a-time
path it replaced (``_admit_pieces``): the same bytes forwarded, the same finding to cut on,
the same findings in the same order and the same outcome — on the conformance corpus and on
streams built to trip the reader, split at every byte and fed in odd-sized chunks."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agui_tools.app._watch import StreamWatch, WatchFinding
from agui_tools.wire._framing import SSEReader, sse_frame
from agui_tools.wire._verify import Limits
from tests.helpers import conformance

RS = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
RF = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
MS = {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}
MC = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hé"}
ME = {"type": "TEXT_MESSAGE_END", "messageId": "m"}
LIMITS = Limits(max_event_bytes=300)


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(sse_frame(orjson.dumps(e)) for e in events)


EDGES: dict[str, bytes] = {
    # comments, an event with no data, runs of blank lines between events
    "quiet-lines": _sse([RS, MS])
    + b": keep-alive\n\nevent: ping\n\n\n\n"
    + _sse([MC])
    + b"\n\n\n"
    + _sse([ME, RF]),
    "bom-cr-only": b"\xef\xbb\xbf" + _sse([RS, MS, MC, ME, RF]).replace(b"\n", b"\r"),
    "mixed-endings": _sse([RS, MS]).replace(b"\n\n", b"\r\n\n") + _sse([MC, ME, RF]),
    "not-utf8": _sse([RS, MS]) + b'data: {"x": "\xff"}\n\n' + _sse([ME, RF]),
    "over-the-limit": _sse([RS, MS, {**MC, "delta": "y" * 400}, ME, RF]),
    "limit-mid-stream": _sse([RS, MS, MC]) + b"data: " + b"z" * 400,
    "breaks-late": _sse([RS, MS, MC, MC, ME, MC, RF]),
    "warns-only": _sse([RS, {**MS, "extra": 1}, MC, ME, RF, RS]),
    "chunk-then-plain": _sse(
        [RS, {"type": "TEXT_MESSAGE_CHUNK", "messageId": "c", "delta": "a"}, MS, MC, ME, RF]
    ),
    # a producer MUST broken (an error from a warning), then events that earn findings
    "warning-fatal-then-more": _sse(
        [RS, MS, MC, ME, {**MS, "role": "user"}, MC, ME, {**MS, "messageId": "n", "x": 1}, RF]
    ),
    # an odd run of blank lines (the pieces pair them from its start) before the breaking event
    "odd-blank-run-then-break": _sse([RS, MS, ME]) + b"\n" + _sse([MC, RF]),
    # a chunk type's name in a delta: judged a frame at a time from there, the same verdict
    "chunk-in-text": _sse([RS, MS, {**MC, "delta": "CHUNK"}, ME, MC, RF]),
    "cut": _sse([RS, MS, MC])[:-5],
}


def _corpus() -> dict[str, tuple[bytes, dict[str, Any] | None]]:
    cases: dict[str, tuple[bytes, dict[str, Any] | None]] = {}
    for name in conformance.names():
        case = conformance.load(name)
        body = _sse(case["stream"])
        cases[name] = (body, case.get("input"))
        cases[f"{name}-crlf"] = (body.replace(b"\n", b"\r\n"), case.get("input"))
    return cases


CORPUS = _corpus()


def _old_admit(watch: StreamWatch, chunk: bytes) -> tuple[bytes, WatchFinding | None]:
    """``admit`` as it was: an event at a time."""
    watch._count(chunk)
    watch._strict = True
    if watch.fatal is not None or watch.failed:
        return b"", watch.fatal
    return watch._admit_pieces(chunk)


def _run(body: bytes, chunks: list[int], run_input: dict[str, Any] | None, old: bool) -> Any:
    """What the proxy would forward and say: bytes out, the cut, findings, outcome."""
    watch = StreamWatch("sse", run_input=run_input, limits=LIMITS)
    out, fatal, at = bytearray(), None, 0
    for size in chunks:
        chunk, at = body[at : at + size], at + size
        sent, fatal = _old_admit(watch, chunk) if old else watch.admit(chunk)
        out += sent
        if fatal is not None:
            out += watch.run_error(fatal)
            break
    outcome = watch.outcome(run_input or {})
    return (
        bytes(out),
        fatal.to_json() if fatal else None,
        [f.to_json() for f in watch.findings],
        watch.cut,
        outcome,
    )


def _splits(n: int) -> list[list[int]]:
    """Every split of ``n`` bytes in two, and runs of 1, 3, 7 and 64 bytes."""
    two = [[at, n - at] for at in range(n + 1)]
    return two + [[step] * (n // step + 1) for step in (1, 3, 7, 64)]


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_corpus_is_judged_and_cut_as_event_by_event(name: str) -> None:
    body, run_input = CORPUS[name]
    for chunks in _splits(len(body)):
        assert _run(body, chunks, run_input, old=False) == _run(
            body, chunks, run_input, old=True
        ), chunks[:2]


@pytest.mark.parametrize("name", sorted(EDGES))
def test_streams_that_trip_the_reader_are_judged_and_cut_as_event_by_event(name: str) -> None:
    body = EDGES[name]
    seen_cut = False
    for chunks in _splits(len(body)):
        new = _run(body, chunks, None, old=False)
        assert new == _run(body, chunks, None, old=True), chunks[:2]
        seen_cut = seen_cut or new[1] is not None
    if name not in (
        "quiet-lines",
        "bom-cr-only",
        "mixed-endings",
        "warns-only",
        "chunk-then-plain",
        "cut",
    ):
        assert seen_cut  # the case breaks a rule: its cut is what is compared


def test_a_whole_chunk_is_forwarded_up_to_the_breaking_event() -> None:
    # one chunk holding good events, the breaking one (content after the end) and more
    body = EDGES["breaks-late"]
    watch = StreamWatch("sse")
    out, fatal = watch.admit(body)
    assert fatal is not None and fatal.index == 5
    got = [orjson.loads(d) for d in SSEReader().feed(out + watch.run_error(fatal))]
    assert [e["type"] for e in got] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_ERROR",
    ]
    # nothing is judged past it: no finding about the RUN_FINISHED after it
    assert [f.index for f in watch.findings] == [5]
