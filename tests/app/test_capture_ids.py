"""``verify`` reading the resumable binding's ids (docs/resumable.md): a capture's
``id: <runId>:<seq>`` judged as a resumable client judges them — a replayed event
dropped and reported, a gap refused with RESUME-2 — and a standard stream's own ids
left alone."""

from __future__ import annotations

import orjson
import pytest

from agui_tools.app._capture import verify_capture
from agui_tools.wire._event_ids import EventSeq

RUN = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r:1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Hi"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r:1"},
]


def sse(numbered: list[tuple[str | None, int]]) -> bytes:
    """The events of RUN at the given (id prefix, 1-based index) pairs."""
    out = b""
    for prefix, n in numbered:
        if prefix is not None:
            out += f"id: {prefix}:{n}\n".encode()
        out += b"data: " + orjson.dumps(RUN[n - 1]) + b"\n\n"
    return out


def test_contiguous_ids_are_reported_with_the_runs_last_seq() -> None:
    verdict = verify_capture(sse([("r:1", n) for n in range(1, 6)]))
    assert verdict.outcome == "completed"
    assert verdict.ids == {"runs": {"r:1": 5}, "replayed": []}
    assert "event ids (docs/resumable.md): run 'r:1' seq 1–5" in "\n".join(verdict.lines())
    assert verdict.to_json()["ids"] == verdict.ids


def test_a_replayed_event_is_dropped_and_reported_as_a_rejoining_client_would() -> None:
    # a capture of a cut run and its rejoin, which began one event too early
    capture = sse([("r:1", n) for n in (1, 2, 3)] + [("r:1", n) for n in (3, 4, 5)])
    verdict = verify_capture(capture)
    assert verdict.outcome == "completed" and len(verdict.events) == 5
    assert verdict.thread.messages[0]["content"] == "Hi"  # not "HiHi"
    assert verdict.ids == {"runs": {"r:1": 5}, "replayed": [{"runId": "r:1", "seq": 3}]}
    assert "1 replayed event(s) dropped" in "\n".join(verdict.lines())


def test_a_gap_in_the_ids_rejects_the_run_there() -> None:
    verdict = verify_capture(sse([("r:1", n) for n in (1, 2, 4, 5)]))
    assert verdict.outcome == "failed"
    error = verdict.result.error
    assert error is not None and error.rule == "RESUME-2"
    assert "jumped from seq 2 to seq 4" in str(error) and len(verdict.events) == 2


@pytest.mark.parametrize("prefix", [None, "evt", "other-run"])
def test_a_standard_streams_own_ids_are_not_judged(prefix: str | None) -> None:
    # ids that do not name the run in progress: no binding, nothing dropped or refused
    verdict = verify_capture(sse([(prefix, n) for n in (1, 2, 3, 3, 4, 5)]))
    assert verdict.ids is None
    assert verdict.thread.messages[0]["content"] == "HiHi"  # both deltas, as sent


def test_event_seq_for_one_run_requires_every_id() -> None:
    seq = EventSeq("r")
    [broken] = seq.admit(["x", "y"], [None, "r:1"])
    assert seq.broken and "came with no id" in str(broken.violation)
