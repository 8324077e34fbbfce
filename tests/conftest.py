"""The suite's own pytest hooks and session-wide fixtures (helpers live in tests/helpers/).

Hooks: an agent's failure nobody asked for fails its test (run_errors), and a
skip under CI is an error (no_skips_in_ci). Fixtures: the throw-away PostgreSQL
server, started once per test session on first use (tests that do not use it
never start it) — without its binaries the PostgreSQL tests fail under CI=true
and skip, saying why, elsewhere (scripts/postgres_setup.sh, run by
``make test``, installs them as root) — and "the" store of a test.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agui_tools.app._store import MemoryStore, Store
from tests.helpers.no_skips_in_ci import pytest_runtest_makereport
from tests.helpers.run_errors import (  # the hooks pytest finds here, by name
    pytest_configure,
    pytest_runtest_call,
    pytest_unconfigure,
)

from .helpers.postgres import PostgresServer, ServerMissing

pytest_plugins = ["pytester"]  # tests/test_guards.py runs pytest on test files it writes

__all__ = [
    "pytest_configure",
    "pytest_runtest_call",
    "pytest_runtest_makereport",
    "pytest_unconfigure",
]

BACKENDS = ["memory", "sqlite", "postgres", "postgres-async"]
""""postgres-async": the AsyncPostgresStore, seen through tests/helpers/async_view.py."""


CHAOS_MODULES = re.compile(r"test_\w*(attack|hostile|fuzz|fault_campaign|chaos)\w*\.py")
"""The adversarial tier, by the suite's naming: attacks, hostile peers, fuzzing, fault
campaigns and chaos runs."""


SLOW_MODULES = re.compile(
    r"test_\w*(campaign|processes|matrix|handover|shell_examples|differential|proxy_httpagent)\w*\.py"
)
"""The slow tier, by the suite's naming: whole campaigns, several processes racing, the
face-by-attack and edge matrices, the store hand-over, every shell example of the docs,
the official client against every stream or framework. A single test of another module
that takes more than ~3 s carries ``@pytest.mark.slow`` itself."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tiers by what a test needs, so ``make test-fast`` (``-m "not browser and not
    slow and not chaos"``) can leave them out: a test that drives Chromium (the
    ``browser`` fixture of tests/ui/) is marked ``browser``; a test of the adversarial
    tier (``CHAOS_MODULES``) ``chaos``; one of the slow tier (``SLOW_MODULES``) ``slow``."""
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
        if CHAOS_MODULES.fullmatch(item.path.name):
            item.add_marker(pytest.mark.chaos)
        if SLOW_MODULES.fullmatch(item.path.name):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    try:
        server = PostgresServer()
    except ServerMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and PostgreSQL is missing: {exc}")
        pytest.skip(str(exc))
    try:
        server.start()
        yield server
    finally:
        server.destroy()


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> str:
    """A connection string whose tables live in a schema of this test's own."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres_server.conninfo, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{postgres_server.conninfo} options='-c search_path={schema}'"


class StoreFactory:
    """Opens "the" store again on each call: a new connection to one file or
    database (another process's view), or the same memory."""

    def __init__(self, backend: str, tmp_path: Path, dsn: str | None) -> None:
        self.backend = backend
        self.path = tmp_path / "app.sqlite"
        self.dsn = dsn
        self.memory = MemoryStore()
        self.opened: list[Store] = []

    def __call__(self) -> Store:
        store: Store
        if self.backend == "memory":
            return self.memory
        if self.backend == "sqlite":
            from agui_tools.app._store_sqlite import SQLiteStore

            store = SQLiteStore(self.path, timeout=10)
        elif self.backend == "postgres":
            from agui_tools.app._store_postgres import PostgresStore

            assert self.dsn is not None
            store = PostgresStore(self.dsn, max_size=4, timeout=10)
        else:
            from agui_tools.app._store_postgres import AsyncPostgresStore

            from .helpers.async_view import AsyncView

            assert self.backend == "postgres-async" and self.dsn is not None
            store = AsyncView(AsyncPostgresStore(self.dsn, max_size=4, timeout=10))
        self.opened.append(store)
        return store

    def close(self) -> None:
        for store in self.opened:
            store.close()


@pytest.fixture(params=BACKENDS)
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    dsn = request.getfixturevalue("postgres_dsn") if request.param.startswith("postgres") else None
    factory = StoreFactory(request.param, tmp_path, dsn)
    yield factory
    factory.close()


@pytest.fixture(params=["sqlite", "postgres", "postgres-async"])
def open_durable_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """The same, for the stores that may wait (a file lock, a database)."""
    dsn = request.getfixturevalue("postgres_dsn") if request.param.startswith("postgres") else None
    factory = StoreFactory(request.param, tmp_path, dsn)
    yield factory
    factory.close()


StoreOpener = Callable[[], Store]
