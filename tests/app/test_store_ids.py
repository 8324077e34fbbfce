"""Ids no store can hold are refused the same way by every store (issue 28, item 7).

A NUL in an agent-chosen tool-call id bricked a PostgreSQL thread — no call of the
run executed, and every later process failed to load the thread — while SQLite and
memory took it; a 1 MB thread id could not be saved on PostgreSQL either. Now: the
pipeline refuses such an id in a stream (a ``LIMIT`` violation naming the event and
``MAX_ID_BYTES``) before anything is stored, and every store refuses one an
application hands it (``StoreWriteFailed`` / ``StoreReadFailed``, ``[LIMIT]``,
nothing written) — memory, SQLite, PostgreSQL sync and async alike.
"""

from __future__ import annotations

import pytest

from agui_tools._errors import LimitExceeded, StoreReadFailed, StoreWriteFailed
from agui_tools.app import Driver
from agui_tools.app._conversation import Conversation
from agui_tools.app._journal import JournalKey
from agui_tools.app._store import Snapshot
from agui_tools.wire._enforce import MAX_ID_BYTES
from tests.helpers.conversation import CONFIRM, LOOKUP, call, run

from ..conftest import StoreFactory

NUL_ID = "call\x00one"
LONG_ID = "x" * (1024 * 1024)


@pytest.mark.parametrize("bad", [NUL_ID, LONG_ID], ids=["NUL", "1 MB"])
def test_an_agent_chosen_call_id_no_store_can_hold_is_refused_before_anything_is_stored(
    open_store: StoreFactory, bad: str
) -> None:
    conv = Conversation(thread_id="t-ids", tools=[CONFIRM, LOOKUP], store=open_store())
    conv.next_input(user="look it up", run_id="r1")
    with pytest.raises(LimitExceeded) as caught:
        run(conv, *call(bad, "lookup", '{"q":"widget"}'))
    assert caught.value.rule == "LIMIT" and caught.value.index == 1
    assert "/toolCallId" in str(caught.value) and f"{MAX_ID_BYTES}" in str(caught.value)
    result = Driver(conv).end_run()
    assert result.status == "rejected"
    # the thread is not bricked: another process loads it, and the next run works
    again = Conversation(thread_id="t-ids", tools=[CONFIRM, LOOKUP], store=open_store())
    again.next_input(user="try again", run_id="r2")
    run(again, *call("c2", "lookup", '{"q":"widget"}'))
    assert [c.call_id for c in Driver(again).end_run().pending] == ["c2"]
    assert Driver(again).execute("c2", lambda _a: "found").content == "found"


@pytest.mark.parametrize("bad", [NUL_ID, LONG_ID], ids=["NUL", "1 MB"])
def test_an_application_chosen_id_no_store_can_hold_is_the_same_refusal_on_every_store(
    open_store: StoreFactory, bad: str
) -> None:
    store = open_store()
    outcomes = []
    for attempt in (
        lambda: store.load(bad),
        lambda: store.save_run(bad, 0, Snapshot(b"[]", 0, b"null", b"{}", b"{}")),
        lambda: store.claim(JournalKey("t", bad, "fp"), tool="lookup"),
        lambda: store.lookup("t", bad),
        lambda: Conversation(thread_id=bad, store=store),
    ):
        with pytest.raises((StoreWriteFailed, StoreReadFailed)) as caught:
            attempt()
        text = str(caught.value)
        assert text.startswith("[LIMIT]") and "MAX_ID_BYTES" in text and len(text) < 400
        assert caught.value.written == "no"
        outcomes.append(type(caught.value).__name__)
    assert outcomes == [
        "StoreReadFailed",
        "StoreWriteFailed",
        "StoreWriteFailed",
        "StoreReadFailed",
        "StoreReadFailed",
    ]
    assert open_store().load("t") is None  # nothing was written


def test_ids_up_to_the_limit_are_stored_exactly(open_store: StoreFactory) -> None:
    """The limit is in bytes of UTF-8: 1,024 of them, unicode and SQL metacharacters kept."""
    store = open_store()
    for cid in ["é" * (MAX_ID_BYTES // 2), "x" * MAX_ID_BYTES, "'; DROP TABLE x; --\u202e"]:
        key = JournalKey("t-exact", cid, "fp")
        assert store.claim(key, tool="lookup").fingerprint == "fp"
        found = open_store().lookup("t-exact", cid)
        assert found is not None and found.fingerprint == "fp"
