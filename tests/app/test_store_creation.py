"""Issue 21: a SQLite store's (or journal's) first open that a crash cannot break.

Before: a SIGKILL during the first ``SQLiteStore(path)`` left a file (0 or 4,096
bytes) that every later open refused as "empty" (8 and 13 of 30 in the tester's
runs), and the ``create=True`` the refusal advised raised ``TypeError``;
concurrent first opens of one path failed 1–2 times in 60 ("database is
locked", or the file another opener had just made refused as "empty").

Now the file is built aside and linked into place whole: a path holds a fully
initialised store or nothing.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import random
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from agui_tools._errors import JournalError, StoreError
from agui_tools.app import SQLiteJournal
from agui_tools.app._journal import Claim, JournalKey, create_aside
from agui_tools.app._store import encode_snapshot
from agui_tools.app._store_sqlite import SQLiteStore

FORK = multiprocessing.get_context("fork")
KINDS = {"store": SQLiteStore, "journal": SQLiteJournal}
KEY = JournalKey("t", "c1", "fp")
RUN = {"runId": "r1", "status": "success", "calls": []}


def works(kind: str, path: Path) -> str:
    """Open ``path`` as ``kind``, write and read back a record: its identity."""
    if kind == "store":
        with SQLiteStore(path, timeout=10) as store:
            version = store.save_run(
                "t", 0, encode_snapshot(messages=[], state={"n": 1}, resumed=[], run=RUN)
            )
            record = store.load("t")
            assert record is not None and record.version == version == 1
            return store.identity
    with SQLiteJournal(path, timeout=10) as journal:
        assert journal.claim(KEY, tool="pay").claim is Claim.RUN
        journal.finish(KEY, {"toolCallId": "c1", "outcome": "executed", "content": "ok"})
        return journal.identity


def _create_forever(kind: str, folder: str, started: Any, finished: Any, ready: Any) -> None:
    opener = KINDS[kind]
    ready.set()
    i = 0
    while True:
        started.value = i
        opener(Path(folder) / f"s{i}.sqlite").close()
        finished.value = i
        i += 1


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_sigkill_during_the_first_open_leaves_a_working_file_or_none(
    kind: str, tmp_path: Path
) -> None:
    """40 children each create one fresh file after another until SIGKILLed 0–30 ms
    in; every path any of them touched then either does not exist or works."""
    trials, mid_creation = 40, 0
    broken: list[str] = []
    rng = random.Random(21)
    deadline = time.monotonic() + 20
    for trial in range(trials):
        folder = tmp_path / f"k{trial}"
        folder.mkdir()
        started = FORK.RawValue("i", -1)  # no lock: the child dies at any instruction
        finished = FORK.RawValue("i", -1)
        ready = FORK.Event()
        child = FORK.Process(
            target=_create_forever, args=(kind, str(folder), started, finished, ready)
        )
        child.start()
        assert ready.wait(10), "the child did not start"
        time.sleep(trial / trials * 0.030 + rng.random() * 0.001)  # swept 0–30 ms
        os.kill(child.pid, signal.SIGKILL)  # type: ignore[arg-type]
        child.join(10)
        assert child.exitcode == -signal.SIGKILL
        mid_creation += started.value != finished.value
        for i in range(started.value + 1):  # every path the child began to create
            path = folder / f"s{i}.sqlite"
            assert path.exists() or i > finished.value, f"{path.name} was made, and is gone"
            if path.exists():
                try:
                    works(kind, path)
                except (JournalError, OSError) as exc:
                    broken.append(f"trial {trial}: {path.name} ({path.stat().st_size} B): {exc}")
        assert time.monotonic() < deadline, f"only {trial + 1} trials in 20 s"
    assert broken == [], f"{len(broken)} of {trials} trials left a broken file: {broken[:2]}"
    # the kills landed inside a creation, not only between two
    assert mid_creation >= trials // 2, (mid_creation, trials)


def _open_rounds(
    kind: str, folder: str, rounds: int, n: int, barrier: Any, out: Any, create: bool | None
) -> None:
    for r in range(rounds):
        try:
            barrier.wait(30)
            opened = KINDS[kind](Path(folder) / f"r{r}.sqlite", timeout=10, create=create)
            try:
                if isinstance(opened, SQLiteStore):
                    opened.save_run(
                        f"w{n}", 0, encode_snapshot(messages=[], state={}, resumed=[], run=RUN)
                    )
                else:
                    opened.claim(JournalKey(f"w{n}", "c1", "fp"), tool="pay")
                out.put((r, n, opened.identity, None))
            finally:
                opened.close()
        except Exception as exc:
            out.put((r, n, None, f"{type(exc).__name__}: {exc}"))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("start", ["no file", "an empty file, create=True"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_concurrent_first_opens_of_one_path_agree_on_one_store(
    kind: str, start: str, tmp_path: Path
) -> None:
    """8 processes open the same fresh path at the same moment, 20 rounds."""
    workers, rounds = 8, 20
    create = None
    if start != "no file":
        create = True
        for r in range(rounds):
            (tmp_path / f"r{r}.sqlite").write_bytes(b"")
    barrier = FORK.Barrier(workers)
    out = FORK.Queue()
    procs = [
        FORK.Process(
            target=_open_rounds, args=(kind, str(tmp_path), rounds, n, barrier, out, create)
        )
        for n in range(workers)
    ]
    for p in procs:
        p.start()
    results: list[tuple[int, int, str | None, str | None]] = []
    try:
        for _ in range(workers * rounds):
            results.append(out.get(timeout=30))
    except queue.Empty:
        pass
    for p in procs:
        p.join(30)
    failures = [f"round {r} worker {n}: {err}" for r, n, _, err in results if err is not None]
    assert failures == [], f"{len(failures)} of {workers * rounds} opens failed: {failures[:3]}"
    assert len(results) == workers * rounds
    for r in range(rounds):
        identities = {ident for rr, _, ident, _ in results if rr == r}
        assert len(identities) == 1, (r, identities)
        with KINDS[kind](tmp_path / f"r{r}.sqlite") as again:  # every worker wrote to the one file
            assert again.identity in identities
            for n in range(workers):
                if isinstance(again, SQLiteStore):
                    assert again.load(f"w{n}") is not None
                else:
                    assert again.lookup(f"w{n}", "c1") is not None
    assert not [p.name for p in tmp_path.iterdir() if ".creating" in p.name]  # nothing left aside


def _half_created_by_an_older_version(path: Path) -> None:
    """What an older agui-tools left when killed mid-creation: WAL set, no tables."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.close()
    assert path.stat().st_size == 4096


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("left", ["0 bytes", "4096 bytes"])
def test_create_true_starts_a_store_in_a_file_that_holds_nothing(
    kind: str, left: str, tmp_path: Path
) -> None:
    path = tmp_path / "app.sqlite"
    if left == "0 bytes":
        path.write_bytes(b"")
    else:
        _half_created_by_an_older_version(path)
    error = StoreError if kind == "store" else JournalError
    with pytest.raises(error) as info:
        KINDS[kind](path)
    text = str(info.value)
    assert "is empty" in text and "create=True" in text and "killed while creating" in text
    with KINDS[kind](path, create=True) as made:  # what the message advertises works
        identity = made.identity
    assert works(kind, path) == identity  # a store like any other, from then on
    with KINDS[kind](path) as again:
        assert again.identity == identity


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_create_true_never_replaces_a_file_that_holds_a_store(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "app.sqlite"
    identity = works(kind, path)
    with KINDS[kind](path, create=True) as again:
        assert again.identity == identity
        if isinstance(again, SQLiteStore):
            assert again.load("t") is not None
        else:
            assert again.lookup("t", "c1") is not None


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_create_false_never_creates(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "absent.sqlite"
    error = StoreError if kind == "store" else JournalError
    with pytest.raises(error, match="create=False"):
        KINDS[kind](path, create=False)
    assert list(tmp_path.iterdir()) == []
    works(kind, path)
    with KINDS[kind](path, create=False):
        pass


def test_a_store_of_a_missing_folder_says_so_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        SQLiteStore(tmp_path / "nowhere" / "app.sqlite")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_file_linked_but_never_opened_opens_and_its_copy_without_the_wal_does_not(
    kind: str, tmp_path: Path
) -> None:
    """The moment a SIGKILL can also land in: the new file linked into place, its
    identity not yet written. The temporary name still linked to it says it is new;
    the same bytes elsewhere are a journal copied without its -wal."""
    path = tmp_path / "app.sqlite"
    create_aside(path, KINDS[kind]._schema)
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(path.read_bytes())
    births = [p for p in tmp_path.iterdir() if p.name.endswith(".creating")]
    assert len(births) == 1 and births[0].samefile(path)
    identity = works(kind, path)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".creating")] == []
    with KINDS[kind](path) as again:
        assert again.identity == identity
    error = StoreError if kind == "store" else JournalError
    with pytest.raises(error, match=r"no identity row.*without its -wal.*create=True"):
        KINDS[kind](copy)
    with KINDS[kind](copy, create=True) as started:  # it holds no record: may start afresh
        assert started.identity != identity


def test_what_a_creation_killed_before_linking_left_is_swept_an_hour_later(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.sqlite"
    old, fresh = (
        tmp_path / ".app.sqlite.00000000000a.creating",
        tmp_path / ".app.sqlite.00000000000b.creating",
    )
    for leftover in (old, Path(f"{old}-journal"), fresh):
        leftover.write_bytes(b"x")
    # another store's file, linked but never opened (its creator killed after the link)
    other = tmp_path / "app.sqlite.x"
    create_aside(other, SQLiteStore._schema)
    hours_ago = time.time() - 7200
    for aged in (old, Path(f"{old}-journal"), *tmp_path.glob(".app.sqlite.x.*")):
        os.utime(aged, (hours_ago, hours_ago))
    works("store", path)
    # the fresh one may be another process's creation in progress: left alone
    left = sorted(p.name for p in tmp_path.iterdir())
    assert [n for n in left if not n.startswith(".app.sqlite.x.")] == [
        fresh.name,
        path.name,
        other.name,
    ]
    works("store", other)  # the other store is still known to be new
