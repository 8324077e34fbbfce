"""What the approval ledger costs a decision, beside no ledger, on each store.

One decision recorded (``record_decision``: the decision row, and — with the
ledger — the head read under the store's lock, the entry's canonical JSON and
hash, its insert) on memory, SQLite (WAL, ``synchronous=FULL``) and PostgreSQL
(a throw-away server, fsync on). "No ledger" is the same store with the ledger
append switched off in this process only, so the two columns differ by the
ledger alone; the arms alternate in one run, and each figure is the median of
several rounds. Also: ``verify_ledger`` over 10,000 entries (per entry).

``python -m bench.ledger`` prints the Markdown table docs/approvals.md shows.
Nothing is asserted: performance is reported, not tested.
"""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from tests.helpers.ledger import decision

from agui_tools.app import _journal, _store_postgres_plans
from agui_tools.app._ledger import verify_ledger
from agui_tools.app._store import MemoryStore

DECISIONS = {"memory": 2000, "sqlite": 300, "postgres": 300}
ROUNDS = 5


@contextlib.contextmanager
def no_ledger() -> Iterator[None]:
    """Every store records decisions without their ledger entry (this process only)."""
    sqlite_append = _journal.sqlite_append
    head_of, chained = _journal.head_of, _journal.chained
    insert = _store_postgres_plans._insert_decision

    def bare_insert(d: Any) -> Any:
        yield _store_postgres_plans.Query(
            "INSERT INTO agui_decisions (thread_id, call_id, decision) VALUES (%s, %s, %s)",
            _journal.decision_row(d),
        )

    _journal.sqlite_append = lambda db, d: None  # type: ignore[assignment]
    _journal.head_of = lambda last: (1, "")  # type: ignore[assignment]
    _journal.chained = lambda d, seq, prev: (b"", "")  # type: ignore[assignment]
    _store_postgres_plans._insert_decision = bare_insert  # type: ignore[assignment]
    try:
        yield
    finally:
        _journal.sqlite_append = sqlite_append
        _journal.head_of, _journal.chained = head_of, chained
        _store_postgres_plans._insert_decision = insert


def _per_decision(store: Any, count: int, tag: str) -> float:
    batch = [decision(f"{tag}-{n}", "c1", n=n) for n in range(count)]
    t0 = time.perf_counter()
    for d in batch:
        store.record_decision(d)
    return (time.perf_counter() - t0) / count


def _stores(stack: ExitStack) -> list[tuple[str, str, Any]]:
    from agui_tools.app._store_sqlite import SQLiteStore

    folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
    sqlite = SQLiteStore(folder / "bench.sqlite")
    stack.callback(sqlite.close)
    stores: list[tuple[str, str, Any]] = [
        ("memory", "memory", MemoryStore()),
        ("sqlite", "SQLite (WAL, synchronous=FULL)", sqlite),
    ]
    try:
        from tests.helpers.postgres import PostgresServer

        from agui_tools.app._store_postgres import PostgresStore

        server = PostgresServer(durable=True).start()
        stack.callback(server.destroy)
        pg = PostgresStore(server.conninfo, min_size=1, max_size=2)
        stack.callback(pg.close)
        stores.append(("postgres", "PostgreSQL (Unix socket, fsync on)", pg))
    except Exception as exc:  # reported in the table, not hidden
        print(f"_PostgreSQL skipped: {exc}_\n")
    return stores


def report() -> str:
    lines = [
        "| store | a decision, no ledger | with its ledger entry | ratio |",
        "|---|---:|---:|---:|",
    ]
    with ExitStack() as stack:
        for key, name, store in _stores(stack):
            count = DECISIONS[key]
            _per_decision(store, count // 10, "warm")
            bare: list[float] = []
            kept: list[float] = []
            for r in range(ROUNDS):
                with no_ledger():
                    bare.append(_per_decision(store, count, f"bare{r}"))
                kept.append(_per_decision(store, count, f"kept{r}"))
            b, k = statistics.median(bare), statistics.median(kept)
            lines.append(f"| {name} | {b * 1e6:,.0f} µs | {k * 1e6:,.0f} µs | {k / b:.2f}× |")
    memory = MemoryStore()
    for n in range(10_000):
        memory.record_decision(decision(f"v{n}", "c1", n=n))
    rows = memory.ledger()
    times = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        assert verify_ledger(rows).broken is None
        times.append(time.perf_counter() - t0)
    per = statistics.median(times) / len(rows)
    lines += ["", f"`verify_ledger` over {len(rows):,} entries: {per * 1e6:.0f} µs per entry."]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
