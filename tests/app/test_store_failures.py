"""When the store fails: a clear error, never a duplicate, nothing lost after recovery.

PostgreSQL: the connection killed mid-claim (``pg_terminate_backend``), the
server stopped and started again. SQLite: a read-only disk, a full disk, a
damaged file. Read-only and full disks are real: a tmpfs mounted for the test
(as root — CI runs as root; elsewhere read-only falls back to file modes).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agui_tools._errors import ReloadRequired, StoreError, StoreOutcomeUnknown
from agui_tools.app import Driver
from agui_tools.app._calls import Answer
from agui_tools.app._conversation import Conversation
from agui_tools.app._journal import Claim, JournalKey
from agui_tools.app._store import encode_snapshot
from agui_tools.app._store_postgres import PostgresStore
from agui_tools.app._store_sqlite import SQLiteStore
from tests.helpers.conversation import LOOKUP, call, run

from ..helpers.postgres import PostgresServer

THREAD = "t-fail"
ROOT = os.geteuid() == 0


def looked_up(store: Any) -> Conversation:
    """A thread whose run left one read-only call, approved by policy."""
    conv = Conversation(thread_id=THREAD, tools=[LOOKUP], store=store)
    conv.next_input(user="look", run_id="r1")
    run(conv, *call("c1", "lookup", '{"q":"widget"}', parent="m1"))
    Driver(conv).end_run()
    return conv


# -- PostgreSQL ----------------------------------------------------------------------------


def test_a_connection_killed_mid_claim_is_a_clear_error_and_the_call_runs_once(
    postgres_dsn: str,
) -> None:
    import psycopg

    store = PostgresStore(postgres_dsn, max_size=2, timeout=10)
    conv = looked_up(store)
    fingerprint = conv.call("c1").fingerprint
    # another transaction holds the call's row: our claim waits on its lock …
    blocker = psycopg.connect(postgres_dsn)
    blocker.execute(
        "INSERT INTO agui_calls (thread_id, call_id, fingerprint, tool, started_at) "
        "VALUES (%s, 'c1', %s, 'lookup', 0)",
        (THREAD, fingerprint),
    )
    ran: list[str] = []
    outcome: dict[str, Any] = {}

    def execute() -> None:
        try:
            outcome["answer"] = Driver(conv).execute("c1", lambda _a: ran.append("ran") or "found")
        except Exception as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=execute)
    worker.start()
    admin = psycopg.connect(postgres_dsn, autocommit=True)
    try:
        pid = None
        for _ in range(500):  # … and is killed by the server's administrator while waiting
            row = admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE 'INSERT INTO agui_calls%%'"
            ).fetchone()
            if row is not None:
                pid = row[0]
                break
            time.sleep(0.01)
        assert pid is not None, "the claim never waited on the row lock"
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        worker.join(30)
    finally:
        blocker.rollback()
        blocker.close()
        admin.close()
    error = outcome.get("error")
    assert isinstance(error, StoreError), outcome
    text = str(error)
    assert "record the intent to execute call 'c1'" in text
    assert "connection to the server was lost" in text and "never run twice" in text
    assert isinstance(error, StoreOutcomeUnknown) and error.written == "unknown"
    assert ran == []  # nothing ran on a claim that did not commit
    # the conversation stopped there: it refuses to go on, and says reload
    with pytest.raises(ReloadRequired, match="reload the thread") as refused:
        Driver(conv).execute("c1", lambda _a: ran.append("ran") or "found")
    assert refused.value.cause is error and ran == []
    # recovered as documented: reloaded, the pool hands out a fresh connection and the
    # call — whose claim did not commit — runs, once
    reloaded = Conversation(thread_id=THREAD, tools=[LOOKUP], store=store)
    assert Driver(reloaded).execute(
        "c1", lambda _a: ran.append("ran") or "found"
    ) == Answer.executed("c1", "found")
    again = Conversation(thread_id=THREAD, tools=[LOOKUP], store=store)
    assert again.call("c1").answer == Answer.executed("c1", "found")
    assert ran == ["ran"]
    store.close()


def test_a_lock_waited_on_too_long_says_so_and_writes_nothing(postgres_dsn: str) -> None:
    import psycopg

    store = PostgresStore(postgres_dsn.replace("options='", "options='-c lock_timeout=200 "))
    conv = looked_up(store)
    blocker = psycopg.connect(postgres_dsn)  # another replica's transaction holds the row
    blocker.execute(
        "INSERT INTO agui_calls (thread_id, call_id, fingerprint, tool, started_at) "
        "VALUES (%s, 'c1', %s, 'lookup', 0)",
        (THREAD, conv.call("c1").fingerprint),
    )
    try:
        with pytest.raises(StoreError, match="waited longer than the server allows") as caught:
            Driver(conv).execute("c1", lambda _a: pytest.fail("ran without a claim"))
    finally:
        blocker.rollback()
        blocker.close()
    assert "lost or refused" not in str(caught.value)  # not told the connection was lost
    assert store.lookup(THREAD, "c1") is None  # nothing of the claim was written
    store.close()


def test_a_server_restart_costs_the_calls_in_flight_not_the_store(
    postgres_dsn: str, postgres_server: PostgresServer
) -> None:
    store = PostgresStore(postgres_dsn, max_size=2, timeout=2)
    first = JournalKey(THREAD, "c1", "fp")
    assert store.claim(first, tool="t").claim is Claim.RUN
    postgres_server.stop()
    try:
        with pytest.raises(StoreError) as info:
            store.claim(JournalKey(THREAD, "c2", "fp"), tool="t")
        text = str(info.value)
        assert "could not record the intent to execute call 'c2'" in text
        assert "no connection could be had" in text and "is the server up?" in text
        assert "lost" not in text  # nothing was sent: no connection was had
    finally:
        postgres_server.start()
    # back up: the same store object works again, and what was recorded survived
    assert store.claim(JournalKey(THREAD, "c2", "fp"), tool="t").claim is Claim.RUN
    assert store.claim(first, tool="t").claim is Claim.UNKNOWN  # never a second RUN
    store.close()


def test_an_unreachable_server_is_named_without_its_password() -> None:
    with pytest.raises(StoreError) as info:
        PostgresStore("host=127.0.0.1 port=1 user=app password=s3cret dbname=x", timeout=1)
    text = str(info.value)
    assert "127.0.0.1:1/x" in text and "s3cret" not in text and "is the server running?" in text
    assert "Connection refused" in text  # the reason, not the pool's timeout


# -- SQLite ------------------------------------------------------------------------------------


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A small real filesystem of the test's own (root only): it can fill up, or go read-only."""
    if not ROOT:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true: the disk-failure tests need root to mount a tmpfs")
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_a_clear_error_and_nothing_half_written(tmpfs: Path) -> None:
    store = SQLiteStore(tmpfs / "app.sqlite", timeout=1)
    conv = looked_up(store)
    Driver(conv).execute("c1", lambda _a: "found")
    version = 1
    with pytest.raises(StoreError) as info:
        for _ in range(100):  # each run's snapshot holds the growing state: the disk fills
            version = store.save_run(
                THREAD,
                version,
                encode_snapshot(
                    messages=[],
                    state={"blob": "x" * 200_000, "v": version},
                    resumed=[],
                    run={"runId": f"r{version + 1}", "status": "success", "calls": []},
                ),
            )
    text = str(info.value)
    assert "disk is full" in text and "nothing of this operation was written" in text
    store.close()
    again = SQLiteStore(tmpfs / "app.sqlite", timeout=1)  # still readable, as last committed
    record = again.load(THREAD)
    assert record is not None and record.version == version
    assert again.answer_for(THREAD, "c1") == Answer.executed("c1", "found").to_json()
    again.close()


def test_a_read_only_disk_is_a_clear_error_and_the_record_survives(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    if ROOT:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)], check=True)
    try:
        store = SQLiteStore(folder / "app.sqlite")
        Driver(looked_up(store)).execute("c1", lambda _a: "found")
        store.close()
        if ROOT:
            subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        else:
            (folder / "app.sqlite").chmod(0o444)
            folder.chmod(0o555)
        with pytest.raises(StoreError) as info:
            reopened = SQLiteStore(folder / "app.sqlite", timeout=1)
            reopened.claim(JournalKey(THREAD, "c2", "fp"), tool="t")
        assert "read-only" in str(info.value) and "write access" in str(info.value)
        if ROOT:
            subprocess.run(["mount", "-o", "remount,rw", str(folder)], check=True)
        else:
            folder.chmod(0o755)
            (folder / "app.sqlite").chmod(0o644)
        recovered = SQLiteStore(folder / "app.sqlite")
        again = Conversation(thread_id=THREAD, tools=[LOOKUP], store=recovered)
        assert again.call("c1").answer == Answer.executed("c1", "found")  # nothing lost
        recovered.close()
    finally:
        if ROOT:
            subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.parametrize("where", ["header", "pages"])
def test_a_damaged_file_is_a_clear_error_naming_it(tmp_path: Path, where: str) -> None:
    path = tmp_path / "app.sqlite"
    store = SQLiteStore(path)
    for n in range(40):
        store.save_run(
            f"t{n}",
            0,
            encode_snapshot(
                messages=[{"id": "u", "role": "user", "content": "x" * 2000}],
                state={},
                resumed=[],
                run={"runId": "r1", "status": "success", "calls": []},
            ),
        )
    store.close()
    data = bytearray(path.read_bytes())
    if where == "header":
        data[:100] = b"\xde\xad\xbe\xef" * 25
    else:  # every page after the first: the schema reads, the data does not
        for offset in range(4096, len(data), 4096):
            data[offset : offset + 64] = b"\x00\xff" * 32
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError) as info:
        damaged = SQLiteStore(path)
        for n in range(40):
            damaged.load(f"t{n}")
    text = str(info.value)
    assert str(path) in text
    assert "damaged" in text and "backup" in text


def test_a_run_row_that_keeps_more_than_there_was_is_damage_not_a_short_history(
    tmp_path: Path,
) -> None:
    """A thread's messages are rebuilt run by run; a run that says it keeps more
    messages than the runs before it wrote is damage, named — never a silently
    shorter (or padded) history."""
    import sqlite3

    path = tmp_path / "app.sqlite"
    store = SQLiteStore(path)
    for version in range(2):
        store.save_run(
            "t",
            version,
            encode_snapshot(
                messages=[{"id": f"u{version}", "role": "user", "content": "hi"}],
                state={},
                resumed=[],
                run={"runId": f"r{version}", "status": "success", "calls": []},
                keep=version,
            ),
        )
    assert [m["id"] for m in store.load("t").messages] == ["u0", "u1"]  # type: ignore[union-attr]
    db = sqlite3.connect(path)
    db.execute("UPDATE runs SET keep = 5 WHERE seq = 2")
    db.commit()
    db.close()
    with pytest.raises(
        StoreError, match=r"thread 't' \(version 2\) is stored damaged.*run 2 keeps 5"
    ):
        store.load("t")
    store.close()


def test_replicas_starting_together_migrate_once_and_an_old_replica_refuses_a_newer_schema(
    postgres_dsn: str,
) -> None:
    import psycopg

    from agui_tools.app._store_postgres import MIGRATIONS

    opened: list[PostgresStore] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def start() -> None:
        barrier.wait()
        try:
            opened.append(PostgresStore(postgres_dsn, max_size=1))
        except BaseException as exc:
            errors.append(exc)

    replicas = [threading.Thread(target=start) for _ in range(4)]
    for t in replicas:
        t.start()
    for t in replicas:
        t.join(60)
    assert errors == [] and len(opened) == 4
    for store in opened:
        store.close()
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM agui_schema").fetchall() == [(len(MIGRATIONS),)]
        conn.execute("UPDATE agui_schema SET version = %s", (len(MIGRATIONS) + 1,))
    with pytest.raises(StoreError, match="newer than this agui-tools knows") as info:
        PostgresStore(postgres_dsn)
    assert "upgrade agui-tools on this replica" in str(info.value)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_idle_pooled_connection_the_server_killed_is_never_handed_out(
    postgres_dsn: str, kind: str
) -> None:
    """The pool checks a connection with a round trip only when its socket heard from
    the server while idle; a backend terminated while idle is found so and replaced,
    and the next store call — a read and a write — succeeds on the first try."""
    import psycopg

    from agui_tools.app._store_postgres import AsyncPostgresStore

    def backends(admin: Any) -> list[int]:
        rows = admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
            "AND datname = current_database() AND backend_type = 'client backend'"
        ).fetchall()
        return [r[0] for r in rows]

    admin = psycopg.connect(postgres_dsn, autocommit=True)
    key = JournalKey(THREAD, "idle-1", "fp")
    try:
        if kind == "sync":
            store = PostgresStore(postgres_dsn, min_size=2, max_size=2, timeout=5)
            assert store.lookup(THREAD, "idle-0") is None  # the pool's connections are up
            killed = backends(admin)
            for pid in killed:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            time.sleep(0.2)  # the server closes the sockets
            assert store.lookup(THREAD, "idle-0") is None  # a read: no error
            assert store.claim(key, tool="t").claim is Claim.RUN  # a write: no error
            store.close()
        else:

            async def scenario() -> None:
                store = await AsyncPostgresStore(
                    postgres_dsn, min_size=2, max_size=2, timeout=5
                ).open()
                assert await store.lookup(THREAD, "idle-0") is None
                for pid in backends(admin):
                    admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                await asyncio.sleep(0.2)
                assert await store.lookup(THREAD, "idle-0") is None
                assert (await store.claim(key, tool="t")).claim is Claim.RUN
                await store.aclose()

            asyncio.run(scenario())
    finally:
        admin.close()
