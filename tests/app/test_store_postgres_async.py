"""AsyncPostgresStore on its own event loop: what the sync view of the contract suite
cannot show — many tasks on one store, a wait that lets the loop run, a cancelled
task, a killed connection and a restarted server, each awaited.

The contract itself (claims, answers, decisions, threads, versions) runs on this
store in tests/app/test_store.py (backend "postgres-async").
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agui_tools._errors import StoreError, UsageError
from agui_tools.app._journal import Claim, JournalKey
from agui_tools.app._store import is_async_store
from agui_tools.app._store_postgres import MIGRATIONS, AsyncPostgresStore, PostgresStore

from ..helpers.postgres import PostgresServer

THREAD = "t-async"
KEY = JournalKey(THREAD, "c1", "fp")
ANSWER = {"callId": "c1", "outcome": "executed", "content": "found"}


def with_lock_timeout(dsn: str) -> str:
    """A claim that waits on a lock gives up after 5 s: a loop blocked by the wait
    (nobody left to release the lock) fails the test instead of hanging it."""
    return dsn.replace("options='", "options='-c lock_timeout=5000 ")


async def hold_row(dsn: str, key: JournalKey) -> Any:
    """Another transaction, left open, holding the call's row: a claim of it must wait."""
    import psycopg

    blocker = await psycopg.AsyncConnection.connect(dsn)
    await blocker.execute(
        "INSERT INTO agui_calls (thread_id, call_id, fingerprint, tool, started_at) "
        "VALUES (%s, %s, %s, 'lookup', 0)",
        (key.thread_id, key.call_id, key.fingerprint),
    )
    return blocker


async def waiting_claim(dsn: str) -> tuple[Any, int]:
    """An admin connection, and the pid of the backend whose claim waits on a row lock."""
    import psycopg

    admin = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    for _ in range(500):
        cur = await admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND query LIKE 'INSERT INTO agui_calls%%'"
        )
        row = await cur.fetchone()
        if row is not None:
            return admin, row[0]
        await asyncio.sleep(0.01)
    await admin.close()
    raise AssertionError("the claim never waited on the row lock")


def test_the_store_is_async_and_never_blocks(postgres_dsn: str) -> None:
    store = AsyncPostgresStore(postgres_dsn)
    assert is_async_store(store) and store.blocking is False
    assert not is_async_store(PostgresStore)  # the sync store: run in a worker thread


def test_of_many_concurrent_tasks_exactly_one_claim_runs_each_call(postgres_dsn: str) -> None:
    async def scenario() -> list[list[Claim]]:
        async with AsyncPostgresStore(postgres_dsn, max_size=8, timeout=10) as store:
            calls = [JournalKey(THREAD, f"c{n}", "fp") for n in range(5)]
            results = await asyncio.gather(
                *(store.claim(calls[n % 5], tool="t") for n in range(60))
            )
            return [[r.claim for r in results[n::5]] for n in range(5)]

    for per_call in asyncio.run(scenario()):
        assert len(per_call) == 12
        assert per_call.count(Claim.RUN) == 1  # whoever won it; the rest see it started
        assert per_call.count(Claim.UNKNOWN) == 11


def test_a_claim_waiting_on_a_row_lock_lets_other_tasks_run(postgres_dsn: str) -> None:
    """The lock is released by *another task*: were the loop blocked by the wait, that
    task could never run, and the claim would fail on its lock_timeout instead."""

    async def scenario() -> tuple[Claim, int, int]:
        async with AsyncPostgresStore(with_lock_timeout(postgres_dsn), timeout=10) as store:
            blocker = await hold_row(postgres_dsn, KEY)
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            async def release_soon() -> None:
                await asyncio.sleep(0.3)
                await blocker.rollback()
                await blocker.close()

            ticking = asyncio.create_task(ticker())
            releaser = asyncio.create_task(release_soon())
            result = await store.claim(KEY, tool="lookup")
            ticked_while_waiting = ticks
            await releaser
            ticking.cancel()
            again = await store.claim(KEY, tool="lookup")
            return result.claim, ticked_while_waiting, again.claim

    claim, ticks, again = asyncio.run(scenario())
    assert claim is Claim.RUN  # the blocker rolled back: our intent is the one recorded
    assert again is Claim.UNKNOWN
    assert ticks >= 10  # ~30 ticks of 10 ms in the 0.3 s the claim waited


def test_a_cancelled_claim_returns_its_connection_and_writes_nothing(postgres_dsn: str) -> None:
    async def scenario() -> None:
        # one connection in the pool: had the cancelled claim kept it, nothing else could run
        async with AsyncPostgresStore(postgres_dsn, max_size=1, timeout=3) as store:
            blocker = await hold_row(postgres_dsn, KEY)
            task = asyncio.create_task(store.claim(KEY, tool="lookup"))
            admin, _pid = await waiting_claim(postgres_dsn)
            await admin.close()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # the pool's one connection is back and usable; the cancelled insert is not there
            assert await store.lookup(THREAD, "c1") is None
            await blocker.rollback()
            await blocker.close()
            assert await store.lookup(THREAD, "c1") is None  # nothing half-written
            assert (await store.claim(KEY, tool="lookup")).claim is Claim.RUN
            assert (await store.claim(KEY, tool="lookup")).claim is Claim.UNKNOWN

    asyncio.run(scenario())


def test_a_connection_killed_mid_claim_is_a_clear_error_and_the_call_runs_once(
    postgres_dsn: str,
) -> None:
    async def scenario() -> None:
        async with AsyncPostgresStore(postgres_dsn, max_size=2, timeout=10) as store:
            blocker = await hold_row(postgres_dsn, KEY)
            task = asyncio.create_task(store.claim(KEY, tool="lookup"))
            admin, pid = await waiting_claim(postgres_dsn)
            try:
                await admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                with pytest.raises(StoreError) as info:
                    await task
            finally:
                await blocker.rollback()
                await blocker.close()
                await admin.close()
            text = str(info.value)
            assert "record the intent to execute call 'c1'" in text
            assert "connection to the server was lost" in text and "never run twice" in text
            # recovered: a fresh connection; the claim that did not commit left nothing,
            # so the call runs now — once
            ran = await store.claim(KEY, tool="lookup")
            assert ran.claim is Claim.RUN
            await store.finish(KEY, ANSWER)
            again = await store.claim(KEY, tool="lookup")
            assert again.claim is Claim.ANSWERED and again.answer == ANSWER
            assert await store.answer_for(THREAD, "c1") == ANSWER

    asyncio.run(scenario())


def test_a_server_restart_costs_the_calls_in_flight_not_the_pool(
    postgres_dsn: str, postgres_server: PostgresServer
) -> None:
    second = JournalKey(THREAD, "c2", "fp")

    async def scenario() -> None:
        # two idle connections, both killed by the restart: each must be checked and
        # replaced before it is handed out again, not handed out dead
        async with AsyncPostgresStore(postgres_dsn, min_size=2, max_size=2, timeout=2) as store:
            assert (await store.claim(KEY, tool="t")).claim is Claim.RUN
            await asyncio.to_thread(postgres_server.stop)
            try:
                with pytest.raises(StoreError) as info:
                    await store.claim(second, tool="t")
                text = str(info.value)
                assert "could not record the intent to execute call 'c2'" in text
                assert "no connection could be had" in text and "is the server up?" in text
                assert "lost" not in text  # nothing was sent: no connection was had
            finally:
                await asyncio.to_thread(postgres_server.start)
            # back up: the same pool hands out working connections, the record survived
            assert (await store.claim(second, tool="t")).claim is Claim.RUN
            assert (await store.claim(KEY, tool="t")).claim is Claim.UNKNOWN  # never twice

    asyncio.run(scenario())


def test_a_store_not_opened_says_how_to_open_it(postgres_dsn: str) -> None:
    async def scenario() -> None:
        store = AsyncPostgresStore(postgres_dsn)
        with pytest.raises(UsageError, match=r"not open yet.*await store\.open\(\)") as info:
            await store.claim(KEY, tool="t")
        assert "async with AsyncPostgresStore" in str(info.value)
        await store.open()
        assert (await store.claim(KEY, tool="t")).claim is Claim.RUN
        await store.aclose()
        with pytest.raises(UsageError, match="is closed"):
            await store.lookup(THREAD, "c1")

    asyncio.run(scenario())


def test_an_unreachable_server_is_named_without_its_password() -> None:
    async def scenario() -> None:
        store = AsyncPostgresStore(
            "host=127.0.0.1 port=1 user=app password=s3cret dbname=x", timeout=1
        )
        with pytest.raises(StoreError) as info:
            await store.open()
        text = str(info.value)
        assert "127.0.0.1:1/x" in text and "s3cret" not in text and "is the server running?" in text
        assert "Connection refused" in text  # the reason, not the pool's timeout
        with pytest.raises(UsageError, match="not open"):  # and nothing half-open is left
            await store.claim(KEY, tool="t")

    asyncio.run(scenario())


def test_opening_migrates_once_and_refuses_a_newer_schema(postgres_dsn: str) -> None:
    import psycopg

    async def open_many() -> None:
        stores = [AsyncPostgresStore(postgres_dsn, max_size=1) for _ in range(4)]
        await asyncio.gather(*(s.open() for s in stores))
        for s in stores:
            await s.aclose()

    asyncio.run(open_many())
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM agui_schema").fetchall() == [(len(MIGRATIONS),)]
        conn.execute("UPDATE agui_schema SET version = %s", (len(MIGRATIONS) + 1,))

    async def refused() -> None:
        with pytest.raises(StoreError, match="newer than this agui-tools knows"):
            await AsyncPostgresStore(postgres_dsn).open()

    asyncio.run(refused())
