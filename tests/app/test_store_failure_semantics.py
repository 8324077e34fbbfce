"""store= is the one storage knob: a store keeps the thread, a bare journal the calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from agui_tools._errors import ReloadRequired, StoreWriteFailed, UsageError
from agui_tools.app import Driver
from agui_tools.app._conversation import Conversation
from agui_tools.app._journal import MemoryJournal, SQLiteJournal
from agui_tools.app._store import MemoryStore
from tests.helpers.conversation import LOOKUP, call, run


def test_a_bare_journal_given_as_store_records_calls_and_keeps_no_thread(tmp_path: Path) -> None:
    with SQLiteJournal(tmp_path / "j.sqlite") as journal:
        conv = Conversation(thread_id="t", tools=[LOOKUP], store=journal)
        assert conv.store is None and conv.journal is journal
        conv.next_input(user="price?", run_id="r1")
        run(conv, *call("c1", "lookup", '{"q":"widget"}', parent="m1"))
        Driver(conv).end_run()  # nothing to save: the thread is kept nowhere
        Driver(conv).execute("c1", lambda _a: "4.50")
        assert journal.answer_for("t", "c1") is not None


def test_journal_is_the_old_spelling_of_store_and_says_so() -> None:
    journal = MemoryJournal()
    with pytest.warns(DeprecationWarning, match="store="):
        conv = Conversation(thread_id="t", journal=journal)
    assert conv.journal is journal and conv.store is None
    store = MemoryStore()
    with pytest.warns(DeprecationWarning):
        kept = Conversation(thread_id="t2", journal=store)
    assert kept.store is store
    with pytest.raises(UsageError, match="not both"):
        Conversation(thread_id="t3", journal=journal, store=store)


def test_a_session_on_a_bare_journal_cannot_reload_and_says_what_stopped_it() -> None:
    from agui_tools import AgentClient, Session

    journal = MemoryJournal()
    session = Session(AgentClient("http://127.0.0.1:9/agent"), store=journal)
    conv = session._conversation()
    conv._link.failed(StoreWriteFailed("the disk is full"))
    with pytest.raises(ReloadRequired, match="the disk is full"):
        session._reopened()
    assert session.conversation is conv  # not replaced by an empty thread
