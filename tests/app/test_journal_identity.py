"""Item 10 (issue 11): the journal knows it is the journal it was.

Before: a 0-byte file in place of the journal opened as a fresh one and every call
ran again (3 of 3); a journal copied without its -wal (after a SIGKILL) did the
same; a random-byte corruption raised a raw UnicodeDecodeError.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from agui_tools._errors import JournalError
from agui_tools.app import SQLiteJournal
from agui_tools.app._journal import Claim, JournalKey

KEY = JournalKey("t", "c1", "fp")


def test_a_new_journal_has_an_identity_that_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "app.sqlite"
    with SQLiteJournal(path) as journal:
        identity = journal.identity
        journal.claim(KEY, tool="pay")
        journal.finish(KEY, {"toolCallId": "c1", "outcome": "executed", "content": "ok"})
    with SQLiteJournal(path) as again:
        assert again.identity == identity
        assert (again.lookup("t", "c1") or None) is not None


def test_an_empty_file_in_place_of_the_journal_is_refused_unless_told_to_create(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.sqlite"
    path.write_bytes(b"")
    with pytest.raises(JournalError, match=r"is empty.*create=True"):
        SQLiteJournal(path)
    with SQLiteJournal(path, create=True) as journal:
        assert journal.claim(KEY, tool="pay").claim is Claim.RUN
    with pytest.raises(JournalError, match="no journal"):
        SQLiteJournal(tmp_path / "absent.sqlite", create=False)


_KILLED = """
import os, sys
from agui_tools.app import SQLiteJournal
from agui_tools.app._journal import JournalKey
j = SQLiteJournal(sys.argv[1])
key = JournalKey("t", "c1", "fp")
j.claim(key, tool="pay")
j.finish(key, {"toolCallId": "c1", "outcome": "executed", "content": "paid"})
os.kill(os.getpid(), 9)
"""


def test_a_journal_copied_without_its_wal_is_refused(tmp_path: Path) -> None:
    """SIGKILL leaves the records in the -wal; a backup of the main file alone holds
    none of them — opening it as a journal would run the paid call again."""
    path = tmp_path / "app.sqlite"
    done = subprocess.run([sys.executable, "-c", _KILLED, str(path)], capture_output=True)
    assert done.returncode == -9, done.stderr
    assert Path(f"{path}-wal").exists()
    with SQLiteJournal(path) as intact:  # with its -wal, the record is there
        assert (intact.lookup("t", "c1") or None) is not None
    done = subprocess.run([sys.executable, "-c", _KILLED, str(tmp_path / "b.sqlite")])
    backup = tmp_path / "backup.sqlite"
    backup.write_bytes((tmp_path / "b.sqlite").read_bytes())  # the main file only
    with pytest.raises(JournalError, match="without its -wal"):
        SQLiteJournal(backup)


def test_a_foreign_database_is_not_taken_for_a_journal(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE users (name TEXT)")
    with pytest.raises(JournalError, match="not an agui-tools journal"):
        SQLiteJournal(path, create=True)


def test_corruption_is_a_journal_error_never_another_exception(tmp_path: Path) -> None:
    source = tmp_path / "good.sqlite"
    with SQLiteJournal(source) as journal:
        for i in range(20):
            key = JournalKey("t", f"c{i}", "fp")
            journal.claim(key, tool="pay")
            journal.finish(key, {"toolCallId": f"c{i}", "outcome": "executed", "content": "x" * 50})
            journal.record_decision({"threadId": "t", "toolCallId": f"c{i}", "approved": True})
    good = source.read_bytes()
    rng = random.Random(11)
    outcomes = {"ok": 0, "refused": 0}
    for trial in range(60):
        damaged = bytearray(good)
        for _ in range(1 + trial % 3):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        path = tmp_path / f"d{trial}.sqlite"
        path.write_bytes(bytes(damaged))
        try:
            with SQLiteJournal(path) as journal:
                for i in range(20):
                    journal.lookup("t", f"c{i}")
                    journal.decisions("t", f"c{i}")
            outcomes["ok"] += 1
        except JournalError:
            outcomes["refused"] += 1
        finally:
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(f"{path}{suffix}"):
                    os.remove(f"{path}{suffix}")
    assert outcomes["refused"] > 0, outcomes  # the damage was seen at least sometimes
