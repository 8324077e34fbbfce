"""Decisions as a store records them, for the ledger's tests and its benchmark."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agui_tools.app._consent import ConsentDecision, Principal, fingerprint
from agui_tools.app._store import MemoryStore
from agui_tools.app._store_sqlite import SQLiteStore
from agui_tools.wire._canonical import canonical_hash

if TYPE_CHECKING:
    import pytest

ALICE = Principal("alice@example.com", "Alice", authenticated_by="oidc")


def decision(thread: str, call: str, *, approved: bool = True, n: int = 0) -> dict[str, Any]:
    """One approval (or decline) of ``call`` in ``thread``, by Alice, of ``{"n": n}``."""
    arguments = {"n": n}
    return ConsentDecision(
        thread_id=thread,
        call_id=call,
        tool="transfer",
        fingerprint=fingerprint(arguments),
        approved=approved,
        decided_by="user",
        decided_at=ConsentDecision.now(),
        principal=ALICE,
        run_id=f"run-{thread}",
        arguments_shown=canonical_hash(arguments),
        arguments_approved=canonical_hash(arguments) if approved else None,
        rule="quorum 1",
    ).to_json()


def fill(store: Any, count: int) -> None:
    """``count`` decisions recorded in ``store``, each with its ledger entry."""
    for index in range(count):
        store.record_decision(decision(f"t{index}", "c1", n=index))


@contextmanager
def opened_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """The thread store ``request.param`` names (memory, sqlite, postgres), closed after."""
    if request.param == "memory":
        yield MemoryStore()
        return
    if request.param == "postgres":
        from agui_tools.app._store_postgres import PostgresStore

        opened: Any = PostgresStore(request.getfixturevalue("postgres_dsn"), max_size=2)
    else:
        opened = SQLiteStore(tmp_path / "app.sqlite")
    try:
        yield opened
    finally:
        opened.close()
