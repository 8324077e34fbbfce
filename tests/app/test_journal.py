"""Exactly-once execution: the journal across crashes, retries and replays.

The crash test runs a real separate process, kills it with SIGKILL inside a
side-effectful handler, and restarts against the same SQLite file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agui_tools.app._journal import Claim, JournalKey, MemoryJournal, SQLiteJournal

WORKER = Path(__file__).resolve().parents[1] / "helpers" / "journal_worker.py"


def worker(tmp: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(tmp / "app.sqlite"), str(tmp / "effects.log"), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_mid_handler_then_restart_never_reruns(tmp_path: Path) -> None:
    effects = tmp_path / "effects.log"
    proc = worker(tmp_path, "hang")
    assert proc.stdout is not None
    line = proc.stdout.readline()  # waits until c1's handler is running
    assert line.strip() == "IN_HANDLER", proc.stderr.read() if proc.stderr else ""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert effects.read_text() == "charged 500\n"  # c1's side effect happened once

    # restart: the same stream is replayed against the same journal
    proc = worker(tmp_path, "finish")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    answers = json.loads(out.strip().splitlines()[-1])
    assert answers["c1"]["outcome"] == "failed"
    assert "outcome unknown" in answers["c1"]["error"]
    assert answers["c2"] == {"callId": "c2", "outcome": "executed", "content": "charged 700 cents"}
    assert effects.read_text() == "charged 500\ncharged 700\n"  # c1 was NOT run again

    # and again: both calls are answered from the journal, nothing runs
    proc = worker(tmp_path, "finish")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    again = json.loads(out.strip().splitlines()[-1])
    assert again == answers
    assert effects.read_text() == "charged 500\ncharged 700\n"

    # the user's approvals survived the crash, with who and what
    with SQLiteJournal(tmp_path / "app.sqlite") as journal:
        decisions = journal.decisions("thread-crash", "c1")
        assert [d["decidedBy"] for d in decisions] == ["user"]
        assert decisions[0]["tool"] == "charge_card" and decisions[0]["fingerprint"].startswith(
            "sha256:"
        )


@pytest.mark.parametrize("make", [MemoryJournal, "sqlite"])
def test_claim_semantics(tmp_path: Path, make: object) -> None:
    journal = SQLiteJournal(tmp_path / "j.sqlite") if make == "sqlite" else MemoryJournal()
    key = JournalKey("t", "c1", "sha256:aa")
    first = journal.claim(key, tool="f")
    assert first.claim is Claim.RUN
    assert journal.claim(key, tool="f").claim is Claim.UNKNOWN  # started, no answer
    journal.finish(key, {"callId": "c1", "outcome": "executed", "content": "ok"})
    done = journal.claim(key, tool="f")
    assert done.claim is Claim.ANSWERED and done.answer == {
        "callId": "c1",
        "outcome": "executed",
        "content": "ok",
    }
    journal.finish(key, {"callId": "c1", "outcome": "failed", "content": "", "error": "late"})
    assert journal.answer_for("t", "c1") == {"callId": "c1", "outcome": "executed", "content": "ok"}
    # a call id executes at most once, whatever its arguments: edited ones get the answer
    other = journal.claim(JournalKey("t", "c1", "sha256:bb"), tool="f")
    assert other.claim is Claim.ANSWERED and other.fingerprint == "sha256:aa"
    # and an intent is exclusive per call too: another fingerprint cannot start it again
    journal.claim(JournalKey("t", "c2", "sha256:aa"), tool="f")
    assert journal.claim(JournalKey("t", "c2", "sha256:bb"), tool="f").claim is Claim.UNKNOWN


def test_only_one_of_many_concurrent_claimants_runs(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    SQLiteJournal(path).close()
    key = JournalKey("t", "c", "fp")
    results: list[Claim] = []

    def claimant() -> None:
        with SQLiteJournal(path) as journal:  # separate connections, like separate processes
            results.append(journal.claim(key, tool="f").claim)

    threads = [threading.Thread(target=claimant) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == sorted([Claim.RUN] + [Claim.UNKNOWN] * 7)


def test_sqlite_journal_is_wal_and_durable(tmp_path: Path) -> None:
    with SQLiteJournal(tmp_path / "j.sqlite") as journal:
        mode = journal._db.execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
        journal.record_decision({"threadId": "t", "toolCallId": "c", "approved": True})
    with SQLiteJournal(tmp_path / "j.sqlite") as reopened:
        assert reopened.decisions("t", "c") == [
            {"threadId": "t", "toolCallId": "c", "approved": True}
        ]
