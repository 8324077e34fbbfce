"""What a new user reads when the PostgreSQL stores are misconfigured or misused.

Both stores share one error mapping (``_store_postgres_connect._failed`` and friends), so
each case runs on :class:`PostgresStore` and on :class:`AsyncPostgresStore`:

* a connection string that cannot work (unparsable, no such database or role)
  fails at once with libpq's own reason — not after the pool timeout with a
  ``PoolTimeout`` that hides it; a refused or missing server names its reason;
  no message ever shows the password;
* a pool with no free connection says so, not "the connection was lost"; only
  a write whose connection was lost hears that its outcome is unknown;
* a database without the schema (``migrate=False``) says to migrate;
* the async store used with a sync ``with``, or from an event loop other than
  the one it opened in, is a ``UsageError`` saying what to do.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agui_tools._errors import StoreError, UsageError
from agui_tools.app._journal import JournalKey
from agui_tools.app._store_postgres import AsyncPostgresStore, PostgresStore
from agui_tools.app._store_postgres_plans import MIGRATIONS

from ..helpers.postgres import PostgresServer, ServerMissing

KEY = JournalKey("t-err", "c1", "fp")
STORES = ["sync", "async"]


def open_store(kind: str, conninfo: str, **options: Any) -> Any:
    """Open either store; for the async one, on a loop of its own (opened and closed)."""
    if kind == "sync":
        return PostgresStore(conninfo, **options)

    async def opened() -> None:
        store = await AsyncPostgresStore(conninfo, **options).open()
        await store.aclose()

    asyncio.run(opened())
    return None


def opening_error(kind: str, conninfo: str, timeout: float) -> tuple[str, float]:
    """The StoreError opening ``conninfo`` raises, and how long it took to come."""
    started = time.monotonic()
    with pytest.raises(StoreError) as info:
        open_store(kind, conninfo, timeout=timeout)
    return str(info.value), time.monotonic() - started


# -- 1. a wrong connection string: the real reason, at once ----------------------------------


@pytest.mark.parametrize("kind", STORES)
@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (("dbname=postgres", "dbname=nope"), 'database "nope" does not exist'),
        (("user=agui", "user=bob"), 'role "bob" does not exist'),
    ],
    ids=["database", "role"],
)
def test_a_database_or_role_that_does_not_exist_fails_at_once_with_its_reason(
    postgres_server: PostgresServer, kind: str, change: tuple[str, str], reason: str
) -> None:
    conninfo = postgres_server.conninfo.replace(*change) + " password=s3cret"
    # a pool timeout far longer than the test lets it wait: retrying cannot fix this
    text, took = opening_error(kind, conninfo, timeout=60)
    assert reason in text and "PoolTimeout" not in text
    assert "s3cret" not in text
    assert took < 30, f"waited {took:.1f} s for an error no retry can fix"


@pytest.fixture(scope="module")
def password_server() -> Iterator[PostgresServer]:
    """A server of its own that asks for a password (the session's trusts everyone)."""
    import psycopg

    try:
        server = PostgresServer()
    except ServerMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and PostgreSQL is missing: {exc}")
        pytest.skip(str(exc))
    try:
        server.start()
        with psycopg.connect(server.conninfo, autocommit=True) as conn:
            conn.execute("ALTER ROLE agui PASSWORD 'right-pw'")
        (server.data / "pg_hba.conf").write_text("local all all scram-sha-256\n")
        server._run("pg_ctl", "-D", str(server.data), "reload")
        yield server
    finally:
        server.destroy()


@pytest.mark.parametrize("kind", STORES)
@pytest.mark.parametrize(
    ("password", "reason"),
    [
        (" password=wrong-s3cret", 'password authentication failed for user "agui"'),
        ("", "no password supplied"),
    ],
    ids=["wrong", "none"],
)
def test_a_refused_password_fails_at_once_and_is_not_shown(
    password_server: PostgresServer, kind: str, password: str, reason: str
) -> None:
    text, took = opening_error(kind, password_server.conninfo + password, timeout=60)
    assert reason in text and "retrying cannot fix this" in text
    assert "s3cret" not in text and "PoolTimeout" not in text
    assert took < 30  # half the pool timeout: "at once", not "after the timeout"
    store = open_store(kind, password_server.conninfo + " password=right-pw", timeout=60)
    if store is not None:  # the right password opens (raising otherwise)
        store.close()


@pytest.mark.parametrize("kind", STORES)
@pytest.mark.parametrize(
    ("conninfo", "reason"),
    [
        ("not a dsn", 'missing "=" after "not"'),
        ("host=db password=s3cret dbname", 'missing "=" after "dbname"'),
        ("password s3cret host=db", 'missing "=" after'),
        ("postgresql://app:s3cret@db:notaport/app", "notaport"),
        # libpq quotes the faulty token — here the password itself: it must not be shown
        ("postgresql://app:s3cret%zz@db/app", "invalid percent-encoded token"),
    ],
    ids=["words", "key-without-value", "password-without-equals", "url-bad-port", "url-bad-pw"],
)
def test_a_connection_string_that_does_not_parse_fails_at_once_naming_the_fault(
    kind: str, conninfo: str, reason: str
) -> None:
    text, took = opening_error(kind, conninfo, timeout=60)
    assert reason in text and "connection string" in text
    assert "s3cret" not in text and "PoolTimeout" not in text
    assert took < 30  # half the pool timeout: "at once", not "after the timeout"


@pytest.mark.parametrize("kind", STORES)
@pytest.mark.parametrize(
    ("conninfo", "reason"),
    [
        ("host=127.0.0.1 port=1 user=app password=s3cret dbname=x", "Connection refused"),
        ("postgresql://app:s3cret@127.0.0.1:1/x", "Connection refused"),
        ("host=/nonexistent/agui-sock user=app password=s3cret dbname=x", "No such file"),
    ],
    ids=["refused", "refused-url", "no-socket"],
)
def test_a_server_not_running_is_named_with_its_reason_and_without_the_password(
    kind: str, conninfo: str, reason: str
) -> None:
    text, _took = opening_error(kind, conninfo, timeout=1)
    assert reason in text and "is the server running?" in text
    assert "PoolTimeout" not in text and "s3cret" not in text


# -- 2. no free connection is not a lost one; "unknown outcome" only for writes -------------


def test_a_pool_with_no_free_connection_says_so_for_a_read_and_a_write(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn, max_size=1, timeout=1)
    try:
        with store._pool.connection():  # the pool's one connection, busy elsewhere
            for operation in (lambda: store.load("t"), lambda: store.claim(KEY, tool="t")):
                with pytest.raises(StoreError) as info:
                    operation()
                text = str(info.value)
                assert "no connection could be had" in text and "max_size" in text
                assert "lost" not in text and "committed is unknown" not in text
    finally:
        store.close()


def test_an_async_pool_with_no_free_connection_says_so(postgres_dsn: str) -> None:
    async def scenario() -> list[str]:
        texts = []
        async with AsyncPostgresStore(postgres_dsn, max_size=1, timeout=1) as store:
            assert store._pool is not None
            async with store._pool.connection():
                for operation in (store.load("t"), store.claim(KEY, tool="t")):
                    with pytest.raises(StoreError) as info:
                        await operation
                    texts.append(str(info.value))
        return texts

    for text in asyncio.run(scenario()):
        assert "no connection could be had" in text and "max_size" in text
        assert "lost" not in text and "committed is unknown" not in text


def killed_while_waiting(dsn: str, operation: Callable[[], Any]) -> str:
    """Run ``operation`` (a store read) while another session locks ``agui_calls``
    exclusively, kill the operation's backend as it waits; return the StoreError."""
    import threading

    import psycopg

    blocker = psycopg.connect(dsn)
    blocker.execute("LOCK TABLE agui_calls IN ACCESS EXCLUSIVE MODE")
    outcome: dict[str, BaseException] = {}

    def run() -> None:
        try:
            operation()
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    try:
        with psycopg.connect(dsn, autocommit=True) as admin:
            for _ in range(500):
                row = admin.execute(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND query LIKE 'SELECT fingerprint%%'"
                ).fetchone()
                if row is not None:
                    admin.execute("SELECT pg_terminate_backend(%s)", (row[0],))
                    break
                time.sleep(0.01)
            else:
                raise AssertionError("the read never waited on the lock")
        worker.join(30)
    finally:
        blocker.rollback()
        blocker.close()
    error = outcome.get("error")
    assert isinstance(error, StoreError), outcome
    return str(error)


@pytest.mark.parametrize("kind", STORES)
def test_a_read_whose_connection_is_lost_is_not_told_a_write_may_have_committed(
    postgres_dsn: str, kind: str
) -> None:
    from ..helpers.async_view import AsyncView

    store: Any = (
        PostgresStore(postgres_dsn, max_size=2, timeout=10)
        if kind == "sync"
        else AsyncView(AsyncPostgresStore(postgres_dsn, max_size=2, timeout=10))
    )
    try:
        text = killed_while_waiting(postgres_dsn, lambda: store.lookup("t", "c1"))
        assert "could not read the record of call 'c1'" in text
        assert "connection to the server was lost" in text and "nothing was written" in text
        assert "committed is unknown" not in text and "never run twice" not in text
        assert store.lookup("t", "c1") is None  # the pool recovered
    finally:
        store.close()


# -- 3. migrate=False on a database without the schema ----------------------------------------


def test_a_missing_schema_says_to_migrate(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn, migrate=False, timeout=5)
    try:
        with pytest.raises(StoreError) as info:
            store.load("x")
        text = str(info.value)
        assert 'relation "agui_threads" does not exist' in text
        assert "store.migrate()" in text and "migrate=True" in text
        assert store.migrate() == len(MIGRATIONS) and store.load("x") is None  # the advice works
    finally:
        store.close()


def test_a_missing_schema_says_to_migrate_on_the_async_store(postgres_dsn: str) -> None:
    async def scenario() -> str:
        async with AsyncPostgresStore(postgres_dsn, migrate=False, timeout=5) as store:
            with pytest.raises(StoreError) as info:
                await store.claim(KEY, tool="t")
            return str(info.value)

    text = asyncio.run(scenario())
    assert 'relation "agui_calls" does not exist' in text and "store.migrate()" in text


# -- 4. and 5. the async store outside its event loop ------------------------------------------


def test_the_async_store_in_a_sync_with_says_to_use_async_with(postgres_dsn: str) -> None:
    with pytest.raises(
        UsageError, match=r"async with AsyncPostgresStore\(\.\.\.\) as store"
    ) as info:
        with AsyncPostgresStore(postgres_dsn):
            pytest.fail("entered")
    assert "PostgresStore in synchronous code" in str(info.value)


def test_the_async_store_used_from_another_event_loop_says_so(postgres_dsn: str) -> None:
    store = AsyncPostgresStore(postgres_dsn, timeout=5)
    asyncio.run(store.open())  # the loop the pool belongs to ends here
    with pytest.raises(UsageError, match="opened in another event loop") as info:
        asyncio.run(store.claim(KEY, tool="t"))
    assert "lifespan" in str(info.value)
    asyncio.run(store.aclose())  # no "Event loop is closed": the pool is let go
    with pytest.raises(UsageError, match="is closed"):
        asyncio.run(store.lookup("t", "c1"))
    # nothing was claimed by the refused call
    assert asyncio.run(_lookup_fresh(postgres_dsn)) is None


async def _lookup_fresh(dsn: str) -> Any:
    async with AsyncPostgresStore(dsn, timeout=5) as store:
        return await store.lookup(KEY.thread_id, KEY.call_id)


def test_an_async_store_whose_loop_runs_in_another_thread_is_closed_there(
    postgres_dsn: str,
) -> None:
    """Opened on a loop that still runs (a background thread's): using it from another
    loop is refused, and ``aclose()`` from that other loop closes the pool on its own."""
    import threading

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        store = AsyncPostgresStore(postgres_dsn, timeout=5)
        asyncio.run_coroutine_threadsafe(store.open(), loop).result(30)
        pool = store._pool
        assert pool is not None
        idle = list(pool._pool)  # the pool's idle connections
        assert idle and not any(conn.closed for conn in idle)
        with pytest.raises(UsageError, match="opened in another event loop"):
            asyncio.run(store.lookup("t", "c1"))
        asyncio.run(store.aclose())
        assert pool.closed and all(conn.closed for conn in idle)  # closed, not dropped
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@pytest.mark.parametrize("store", ["PostgresStore", "AsyncPostgresStore"])
@pytest.mark.parametrize("missing", ["psycopg", "psycopg_pool"])
def test_without_the_postgres_extra_the_error_says_how_to_install_it(
    store: str, missing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from agui_tools.app import _store_postgres

    monkeypatch.setitem(sys.modules, missing, None)  # as if it were not installed
    with pytest.raises(UsageError, match=r"pip install 'agui-tools\[postgres\]'"):
        getattr(_store_postgres, store)("host=/nowhere dbname=x")
