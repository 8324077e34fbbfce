"""Application processes on one store, for the race and crash tests.

Each worker plays a replica: for every thread it is given, it restores the
thread from the store (``Conversation(store=…, thread_id=…)``) and executes
every approved call still pending. The handler's side effect is a row in an
``effects`` table — in the PostgreSQL database itself, or in a second SQLite
file — so the test counts what really happened, not what the store says.

Workers run in forked processes (``multiprocessing`` "fork"): real processes
with their own connections, without the cost of importing everything again
for each of the hundred crash trials.
"""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from agui_tools.app import AsyncDriver, Driver
from agui_tools.app._calls import Answer, CallStatus, PendingCall
from agui_tools.app._consent import ConsentPolicy
from agui_tools.app._conversation import Conversation
from agui_tools.app._store import AsyncStore, Store

from .journal_worker import CHARGE, stream

CALLS = (("c1", 500), ("c2", 700))  # what journal_worker.stream's run calls


def open_store(backend: str, target: str) -> Store:
    """The sync store on ``target`` ("postgres-async" workers share PostgresStore's tables)."""
    if backend == "sqlite":
        from agui_tools.app._store_sqlite import SQLiteStore

        return SQLiteStore(target, timeout=60)
    from agui_tools.app._store_postgres import PostgresStore

    return PostgresStore(target, min_size=1, max_size=2, timeout=60)


class Effects:
    """The table the handlers write: one row per side effect that happened."""

    def __init__(self, backend: str, target: str) -> None:
        self.backend = backend
        if backend == "sqlite":
            self._db: Any = sqlite3.connect(target, isolation_level=None, timeout=60)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS effects (thread_id TEXT, call_id TEXT, pid INTEGER)"
            )
        else:
            import psycopg

            self._db = psycopg.connect(target, autocommit=True)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS effects (thread_id TEXT, call_id TEXT, pid INTEGER)"
            )
        self._mark = "?" if backend == "sqlite" else "%s"

    def record(self, thread_id: str, call_id: str) -> None:
        m = self._mark
        self._db.execute(
            f"INSERT INTO effects (thread_id, call_id, pid) VALUES ({m}, {m}, {m})",
            (thread_id, call_id, os.getpid()),
        )

    def happened(self, thread_id: str, call_id: str) -> bool:
        m = self._mark
        row = self._db.execute(
            f"SELECT count(*) FROM effects WHERE thread_id = {m} AND call_id = {m}",
            (thread_id, call_id),
        ).fetchone()
        return bool(row[0])

    def counts(self) -> dict[tuple[str, str], int]:
        rows = self._db.execute(
            "SELECT thread_id, call_id, count(*) FROM effects GROUP BY thread_id, call_id"
        ).fetchall()
        return {(t, c): n for t, c, n in rows}

    def close(self) -> None:
        self._db.close()


def seed(store: Store, threads: Iterable[str]) -> None:
    """Each thread: one run folded and saved, two calls approved by policy, pending."""
    for thread in threads:
        conv = Conversation(
            thread_id=thread, tools=[CHARGE], store=store, consent=ConsentPolicy.auto_approve()
        )
        conv.next_input(user="pay", run_id=f"{thread}-r1")
        conv.receive_many(stream(thread, f"{thread}-r1"))
        Driver(conv).end_run()


def charged(cents: object) -> str:
    return f"charged {cents} cents"


def dispose_all(
    store: Store,
    effects: Effects,
    threads: Iterable[str],
    *,
    pause: Callable[[], None] = lambda: None,
    outcome_unknown: Callable[[PendingCall, datetime], Answer | None] | None = None,
) -> int:
    """Restore each thread and execute what is pending; return how many handlers ran."""
    ran = 0
    for thread in threads:
        conv = Conversation(
            thread_id=thread,
            tools=[CHARGE],
            store=store,
            consent=ConsentPolicy.auto_approve(),
            outcome_unknown=outcome_unknown,
        )
        for call in list(conv.pending):
            if call.status is not CallStatus.APPROVED:
                continue

            def handler(args: dict[str, Any], thread: str = thread, cid: str = call.call_id) -> str:
                nonlocal ran
                ran += 1
                effects.record(thread, cid)
                pause()  # a crash here leaves the effect done and the answer unrecorded
                return charged(args["cents"])

            Driver(conv).execute(call.call_id, handler)
    return ran


async def dispose_all_async(
    store: AsyncStore,
    effects: Effects,
    threads: Iterable[str],
    *,
    lanes: int = 4,
    pause: Callable[[], None] = lambda: None,
) -> int:
    """:func:`dispose_all` for an async application: ``lanes`` tasks of one event loop
    share the work (and race each other as well as the other processes)."""
    todo = list(threads)
    ran = 0

    async def one(thread: str) -> None:
        nonlocal ran
        conv = Conversation(
            thread_id=thread, tools=[CHARGE], store=store, consent=ConsentPolicy.auto_approve()
        )
        await AsyncDriver(conv).restore()
        for call in list(conv.pending):
            if call.status is not CallStatus.APPROVED:
                continue

            def handler(args: dict[str, Any], thread: str = thread, cid: str = call.call_id) -> str:
                nonlocal ran
                ran += 1
                effects.record(thread, cid)
                pause()  # a crash here leaves the effect done and the answer unrecorded
                return charged(args["cents"])

            await AsyncDriver(conv).execute(call.call_id, handler)

    async def lane() -> None:
        while todo:
            await one(todo.pop())

    await asyncio.gather(*(lane() for _ in range(lanes)))
    return ran


def worker(
    backend: str, target: str, effects_target: str, threads: list[str], seed_: int, ready: Any
) -> None:
    """A replica: every thread, in an order of its own; killed at any point by the crash test."""
    rng = random.Random(seed_)
    if backend == "postgres-async":
        _async_worker(target, effects_target, threads, rng, ready)
        return
    store = open_store(backend, target)
    effects = Effects(backend, effects_target)
    order = threads[:]
    rng.shuffle(order)
    if ready is not None:
        ready.set()
    dispose_all(store, effects, order, pause=lambda: time.sleep(rng.random() * 0.004))
    effects.close()
    store.close()


def _async_worker(
    target: str, effects_target: str, threads: list[str], rng: random.Random, ready: Any
) -> None:
    from agui_tools.app._store_postgres import AsyncPostgresStore

    order = threads[:]
    rng.shuffle(order)

    async def main() -> None:
        effects = Effects("postgres", effects_target)
        async with AsyncPostgresStore(target, min_size=1, max_size=4, timeout=60) as store:
            if ready is not None:
                ready.set()
            await dispose_all_async(
                store, effects, order, pause=lambda: time.sleep(rng.random() * 0.004)
            )
        effects.close()

    asyncio.run(main())


def reconcile_with(effects: Effects) -> Callable[[PendingCall, datetime], Answer | None]:
    """The documented rule for an unknown outcome: ask the system the handler acts on."""

    def decide(call: PendingCall, _started: datetime) -> Answer:
        cents = (call.effective_arguments or {}).get("cents")
        if effects.happened(call.thread_id, call.call_id):
            return Answer.executed(call.call_id, charged(cents))
        return Answer.failed(call.call_id, "not charged: the payment system has no record of it")

    return decide


def thread_ids(n: int) -> list[str]:
    return [f"thread-{i:04d}" for i in range(n)]


def effects_path(tmp: Path) -> str:
    return str(tmp / "effects.sqlite")
