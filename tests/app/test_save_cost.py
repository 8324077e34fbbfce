"""A save encodes what the run changed: ``ThreadState.encoded`` reuses the bytes of
every message no event touched since the last save, and is never stale.

The property: whatever events arrive, answers are added or messages withdrawn
between two saves, what ``encoded`` returns is exactly the whole thread encoded
afresh, and ``keep`` is exactly the number of leading messages whose bytes are
unchanged — the cheap path may skip work, never change the result.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_tools.app import _reducer
from agui_tools.app._reducer import ThreadState

from ..helpers.gen_streams import GeneratedStream, streams


def _reference_keep(before: list[bytes], after: list[bytes]) -> int:
    n = 0
    for old, new in zip(before, after, strict=False):
        if old != new:
            break
        n += 1
    return n


@settings(max_examples=150, deadline=None)
@given(streams(max_runs=3, max_actions=25), st.data())
def test_the_reused_encoding_is_the_whole_thread_encoded_afresh(
    gs: GeneratedStream, data: st.DataObject
) -> None:
    thread = ThreadState()
    previous: list[tuple[object, bytes]] = []
    answered = 0
    for event in gs.explicit:
        thread.apply(event)
        if data.draw(st.integers(0, 4), label="save here") == 0:
            unanswered = thread.unanswered_calls()
            if unanswered and data.draw(st.booleans(), label="answer one"):
                answered += 1
                thread.add_tool_message(
                    {
                        "id": f"answer-{answered}",
                        "role": "tool",
                        "toolCallId": unanswered[0],
                        "content": "done",
                    }
                )
            keep, encoded = thread.encoded(previous)
            fresh = [orjson.dumps(m) for m in thread.messages]
            assert [blob for _, blob in encoded] == fresh
            assert keep == _reference_keep([b for _, b in previous], fresh)
            previous = encoded
    keep, encoded = thread.encoded(previous)
    assert [blob for _, blob in encoded] == [orjson.dumps(m) for m in thread.messages]


class _CountingJson:
    """orjson, counting what is encoded (the reducer's module attribute, patched)."""

    def __init__(self) -> None:
        self.dumped = 0

    def dumps(self, value: Any) -> bytes:
        self.dumped += 1
        return orjson.dumps(value)

    def __getattr__(self, name: str) -> Any:
        return getattr(orjson, name)


def test_an_untouched_thread_is_not_encoded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cheap path is taken: a save after nothing changed encodes nothing; an event
    re-encodes the message it named, not the thread."""
    messages: list[dict[str, Any]] = [
        {"id": f"m{n}", "role": "user", "content": f"question {n}"} for n in range(50)
    ]
    thread = ThreadState(messages)
    counting = _CountingJson()
    monkeypatch.setattr(_reducer, "orjson", counting)
    keep, first = thread.encoded([])
    assert keep == 0 and len(first) == 50 and counting.dumped == 50
    keep, again = thread.encoded(first)
    assert keep == 50 and again == first and counting.dumped == 50  # nothing encoded
    thread.apply({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m7", "delta": "!"})
    keep, third = thread.encoded(again)
    assert counting.dumped == 51 and keep == 7  # the one message the event named
    assert third[7][1] == orjson.dumps({"id": "m7", "role": "user", "content": "question 7!"})
