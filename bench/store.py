"""The thread store side by side: memory, SQLite, PostgreSQL and PostgreSQL (async).

* **claims/s** — ``claim`` + ``finish`` of distinct calls (one execution's
  store work), by 1, 4 and 16 concurrent workers (threads of one process
  sharing one store object, as an async application's worker threads do);
* **round trips/s** — one whole agent round trip of one thread without the
  network: open the thread (restore), send, fold the run's stream, save it as
  it ends, dispose of its call (decision, claim, answer), by 1, 4 and 16
  concurrent workers, each on threads of its own. The memory row is the cost
  of the application core alone;
* **restore** — the time to pick up a thread of 10, 100 and 1,000 runs
  (``Conversation(store=…, thread_id=…)``), and per run.

The async row is :class:`~agui_tools.app._store_postgres.AsyncPostgresStore` on
the same server: claims and round trips by 1, 4 and 16 concurrent asyncio tasks
of one event loop sharing one store (pool ``max_size=16``; round trips through
an :class:`~agui_tools.app._driver.AsyncDriver`), and restore as the whole
``await AsyncDriver(conv).restore()`` and as ``await store.load`` alone — beside
the sync store's ``store.load`` timed the same way, for the async ÷ sync ratio.

SQLite commits with ``synchronous=FULL``; the PostgreSQL server (a throw-away
one, tests/helpers/postgres.py) runs with ``fsync`` on, so both pay for
durability. Nothing is asserted: the numbers are reported, with ratios.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import orjson

from agui_tools.app import AsyncDriver, Driver
from agui_tools.app._consent import ConsentPolicy
from agui_tools.app._conversation import Conversation
from agui_tools.app._journal import JournalKey
from agui_tools.app._store import MemoryStore, Snapshot, Store, encode_snapshot
from agui_tools.app._tools import ToolSpec

WORKERS = (1, 4, 16)
CLAIMS = 480
ROUND_TRIPS = 96
RUNS = (10, 100, 1000)

LOOKUP = ToolSpec(
    "lookup", "Look up.", parameters={"type": "object", "properties": {"q": {"type": "string"}}}
)


def _events(thread: str, run: str, call: str) -> list[dict[str, Any]]:
    return [
        {"type": "RUN_STARTED", "threadId": thread, "runId": run},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": f"m-{run}", "delta": "Looking it up."},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": call,
            "toolCallName": "lookup",
            "parentMessageId": f"m-{run}",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": '{"q": "widget"}'},
        {"type": "TOOL_CALL_END", "toolCallId": call},
        {"type": "RUN_FINISHED", "threadId": thread, "runId": run},
    ]


def _parallel(workers: int, total: int, job: Callable[[int, int], None]) -> float:
    """Run ``job(worker, i)`` for ``total`` items split over ``workers`` threads; seconds."""
    per = total // workers
    barrier = threading.Barrier(workers + 1)
    errors: list[BaseException] = []

    def run(w: int) -> None:
        barrier.wait()
        try:
            for i in range(per):
                job(w, i)
        except BaseException as exc:  # reported, not swallowed
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return elapsed


def claims_per_second(store: Store, workers: int) -> float:
    tag = uuid.uuid4().hex[:8]
    answer = {"callId": "c", "outcome": "executed", "content": "ok"}

    def job(w: int, i: int) -> None:
        key = JournalKey(f"bench-{tag}-{w}", f"c{i}", "fp")
        store.claim(key, tool="lookup")
        store.finish(key, answer)

    per = CLAIMS // workers
    return per * workers / _parallel(workers, CLAIMS, job)


ASYNC = "PostgreSQL 15 (async: AsyncPostgresStore, tasks)"


async def async_claims_per_second(store: Any, tasks: int) -> float:
    """``claim`` + ``finish`` of distinct calls by ``tasks`` concurrent asyncio tasks."""
    tag = uuid.uuid4().hex[:8]
    answer = {"callId": "c", "outcome": "executed", "content": "ok"}
    per = CLAIMS // tasks

    async def task(w: int) -> None:
        for i in range(per):
            key = JournalKey(f"abench-{tag}-{w}", f"c{i}", "fp")
            await store.claim(key, tool="lookup")
            await store.finish(key, answer)

    t0 = time.perf_counter()
    await asyncio.gather(*(task(w) for w in range(tasks)))
    return per * tasks / (time.perf_counter() - t0)


async def async_round_trips_per_second(store: Any, tasks: int) -> float:
    """:func:`round_trips_per_second` by ``tasks`` concurrent asyncio tasks, every
    store call awaited (the conversation's ``*_async`` methods)."""
    tag = uuid.uuid4().hex[:8]
    policy = ConsentPolicy.auto_approve()
    per = ROUND_TRIPS // tasks

    async def task(w: int) -> None:
        for i in range(per):
            thread = f"art-{tag}-{w}-{i}"
            conv = Conversation(thread_id=thread, tools=[LOOKUP], store=store, consent=policy)
            await AsyncDriver(conv).restore()
            conv.next_input(user="price?", run_id=f"{thread}-r1")
            conv.receive_many(_events(thread, f"{thread}-r1", "c1"))
            await AsyncDriver(conv).end_run()
            await AsyncDriver(conv).execute("c1", lambda _a: "4.50")

    t0 = time.perf_counter()
    await asyncio.gather(*(task(w) for w in range(tasks)))
    return per * tasks / (time.perf_counter() - t0)


async def _async_build_thread(store: Any, conv: Conversation) -> str:
    """:func:`build_thread`, awaited."""
    thread, saves = _saves(conv)
    for save in saves:
        await store.save_run(thread, *_snapshot(save))
    return thread


def _best_of_5(load: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        record = load()
        best = min(best, time.perf_counter() - t0)
        assert record is not None
    return best


async def async_figures(
    conninfo: str, threads: list[Conversation]
) -> tuple[list[float], list[float], list[tuple[str, float]], list[float]]:
    """Claims/s and round trips/s by tasks; each thread's ``await store.load`` time
    (with its id) and its whole restore (``await AsyncDriver(conv).restore()``)."""
    from agui_tools.app._store_postgres import AsyncPostgresStore

    async with AsyncPostgresStore(conninfo, min_size=4, max_size=16) as store:
        rates = [await async_claims_per_second(store, w) for w in WORKERS]
        trips = [await async_round_trips_per_second(store, w) for w in WORKERS]
        loads: list[tuple[str, float]] = []
        restores: list[float] = []
        for conv in threads:
            thread = await _async_build_thread(store, conv)
            best = float("inf")
            for _ in range(5):
                t0 = time.perf_counter()
                record = await store.load(thread)
                best = min(best, time.perf_counter() - t0)
                assert record is not None and record.version == len(conv.runs)
            loads.append((thread, best))
            best = float("inf")
            for _ in range(5):
                t0 = time.perf_counter()
                again = Conversation(
                    thread_id=thread,
                    tools=[LOOKUP],
                    store=store,
                    consent=ConsentPolicy.auto_approve(),
                )
                await AsyncDriver(again).restore()
                best = min(best, time.perf_counter() - t0)
                assert len(again.pending) == 1
            restores.append(best)
    return rates, trips, loads, restores


def round_trips_per_second(store: Store, workers: int) -> float:
    tag = uuid.uuid4().hex[:8]
    policy = ConsentPolicy.auto_approve()

    def job(w: int, i: int) -> None:
        thread = f"rt-{tag}-{w}-{i}"
        conv = Conversation(thread_id=thread, tools=[LOOKUP], store=store, consent=policy)
        conv.next_input(user="price?", run_id=f"{thread}-r1")
        conv.receive_many(_events(thread, f"{thread}-r1", "c1"))
        Driver(conv).end_run()
        Driver(conv).execute("c1", lambda _a: "4.50")

    per = ROUND_TRIPS // workers
    return per * workers / _parallel(workers, ROUND_TRIPS, job)


def folded_thread(runs: int) -> Conversation:
    """A thread of ``runs`` runs, each a user message, a tool call and its answer; the
    last call left pending — folded once in memory, then saved into each store."""
    thread = f"restore-{runs}"
    conv = Conversation(thread_id=thread, tools=[LOOKUP], consent=ConsentPolicy.auto_approve())
    for n in range(runs):
        conv.next_input(user=f"question {n}", run_id=f"r{n}")
        conv.receive_many(_events(thread, f"r{n}", f"c{n}"))
        Driver(conv).end_run()
        if n < runs - 1:
            Driver(conv).execute(f"c{n}", lambda _a: "4.50")
    return conv


def message_bytes_written(runs: int) -> tuple[int, int]:
    """Bytes of messages a thread of ``runs`` runs writes over its life: as saved
    (what each run changed) and as a whole-history save per run would write."""
    written = whole = 0

    class Counting(MemoryStore):
        def save_run(self, thread_id: str, expected_version: int, snapshot: Snapshot) -> int:
            nonlocal written
            written += len(snapshot.messages)
            return super().save_run(thread_id, expected_version, snapshot)

    thread = f"bytes-{runs}"
    conv = Conversation(
        thread_id=thread, tools=[LOOKUP], store=Counting(), consent=ConsentPolicy.auto_approve()
    )
    for n in range(runs):
        conv.next_input(user=f"question {n}", run_id=f"r{n}")
        conv.receive_many(_events(thread, f"r{n}", f"c{n}"))
        Driver(conv).end_run()
        whole += len(orjson.dumps(conv.messages))
        Driver(conv).execute(f"c{n}", lambda _a: "4.50")
    return written, whole


SAVE_RUNS = (100, 1000, 4000)


def save_cpu(runs: int) -> tuple[float, float]:
    """CPU seconds of one save's message encoding on a thread of ``runs`` runs, one
    run after the last save: what the conversation does now (``ThreadState.encoded``:
    the messages the run touched) and what it did before (every message rebuilt,
    encoded and compared) — best of 5, on the same thread."""
    thread = f"save-{runs}"
    conv = Conversation(
        thread_id=thread, tools=[LOOKUP], store=MemoryStore(), consent=ConsentPolicy.auto_approve()
    )
    for n in range(runs):
        conv.next_input(user=f"question {n}", run_id=f"r{n}")
        conv.receive_many(_events(thread, f"r{n}", f"c{n}"))
        Driver(conv).end_run()
        Driver(conv).execute(f"c{n}", lambda _a: "4.50")
    saved = conv._saved
    now = before = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        conv.thread.encoded(saved)
        now = min(now, time.perf_counter() - t0)
        old = saved.blobs
        t0 = time.perf_counter()
        fresh = [orjson.dumps(m) for m in conv.thread.messages]
        _keep = next(
            (i for i, (a, b_) in enumerate(zip(old, fresh, strict=False)) if a != b_), len(old)
        )
        before = min(before, time.perf_counter() - t0)
    return now, before


def build_thread(store: Store, conv: Conversation) -> str:
    """Save a folded thread through the store's own API: a restore reads the last
    snapshot and every run row, whatever wrote them."""
    thread, saves = _saves(conv)
    for save in saves:
        store.save_run(thread, *_snapshot(save))
    return thread


def _saves(conv: Conversation) -> tuple[str, list[dict[str, Any]]]:
    """A fresh thread id for a folded thread, and the ``save_run`` arguments of each run."""
    last = len(conv.runs) - 1
    return f"{conv.thread_id}-{uuid.uuid4().hex[:8]}", [
        {
            "expected_version": n,
            "messages": conv.messages if n == last else [],
            "state": conv.state,
            "resumed": [],
            "run": {"runId": run.run_id, "status": run.status, "calls": [{"id": f"c{n}"}]},
        }
        for n, run in enumerate(conv.runs)
    ]


def _snapshot(save: dict[str, Any]) -> tuple[int, Snapshot]:
    """One of :func:`_saves`'s entries as ``save_run``'s last two arguments."""
    rest = {k: v for k, v in save.items() if k != "expected_version"}
    return save["expected_version"], encode_snapshot(**rest)


def restore_seconds(store: Store, thread: str) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        conv = Conversation(
            thread_id=thread, tools=[LOOKUP], store=store, consent=ConsentPolicy.auto_approve()
        )
        best = min(best, time.perf_counter() - t0)
        assert len(conv.pending) == 1
    return best


def _stores(stack: ExitStack) -> tuple[list[tuple[str, Store]], str | None]:
    """The stores side by side, and the PostgreSQL server's conninfo (``None``: none)."""
    stores: list[tuple[str, Store]] = [("memory", MemoryStore())]
    from agui_tools.app._store_sqlite import SQLiteStore

    folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
    sqlite = SQLiteStore(folder / "bench.sqlite")
    stack.callback(sqlite.close)
    stores.append(("SQLite (WAL, synchronous=FULL)", sqlite))
    try:
        from tests.helpers.postgres import PostgresServer

        from agui_tools.app._store_postgres import PostgresStore

        server = PostgresServer(durable=True).start()
        stack.callback(server.destroy)
        pg = PostgresStore(server.conninfo, min_size=4, max_size=16)
        stack.callback(pg.close)
        stores.append(("PostgreSQL 15 (Unix socket, fsync on)", pg))
    except Exception as exc:  # reported in the table, not hidden
        print(f"_PostgreSQL skipped: {exc}_\n")
        return stores, None
    return stores, server.conninfo


def _restore_row(name: str, times: list[float]) -> str:
    return (
        f"| {name} | "
        + " | ".join(f"{t * 1000:.1f} ms" for t in times)
        + f" | {times[-1] / RUNS[-1] * 1e6:.0f} µs |"
    )


def report() -> str:
    lines: list[str] = []
    with ExitStack() as stack:
        stores, conninfo = _stores(stack)
        threads = [folded_thread(n) for n in RUNS]
        async_rates: list[float] = []
        async_trips: list[float] = []
        async_loads: list[tuple[str, float]] = []
        async_restores: list[float] = []
        if conninfo is not None:
            async_rates, async_trips, async_loads, async_restores = asyncio.run(
                async_figures(conninfo, threads)
            )
        header = "| store | " + " | ".join(f"{w} worker{'s' if w > 1 else ''}" for w in WORKERS)
        sep = "|---|" + "---:|" * len(WORKERS)
        claim_rates: dict[str, list[float]] = {}
        trip_rates: dict[str, list[float]] = {}
        for name, store in stores:
            claim_rates[name] = [claims_per_second(store, w) for w in WORKERS]
            trip_rates[name] = [round_trips_per_second(store, w) for w in WORKERS]
        for title, rates, unit in (
            ("Store claims (claim + finish of one call) per second", claim_rates, "claims/s"),
            ("Store round trips (restore, save the run, dispose of its call) per second",
             trip_rates, "round trips/s"),
        ):  # fmt: skip
            lines += [f"### {title}", "", f"{header} |", f"{sep}"]
            for name, values in rates.items():
                lines.append(f"| {name} | " + " | ".join(f"{v:,.0f} {unit}" for v in values) + " |")
            if conninfo is not None:
                values = async_rates if rates is claim_rates else async_trips
                lines.append(
                    f"| {ASYNC} | " + " | ".join(f"{v:,.0f} {unit}" for v in values) + " |"
                )
            lines.append("")
        names = list(claim_rates)
        if len(names) == 3:
            sqlite, pg = names[1], names[2]
            ratios = [
                f"{w}: claims {claim_rates[sqlite][i] / claim_rates[pg][i]:.2f}×, round trips "
                f"{trip_rates[sqlite][i] / trip_rates[pg][i]:.2f}×"
                for i, w in enumerate(WORKERS)
            ]
            lines += [
                "Per-call cost of PostgreSQL relative to SQLite (SQLite's rate ÷ PostgreSQL's, "
                "by workers): " + "; ".join(ratios) + ".",
                "",
            ]
        if conninfo is not None:
            pg = names[-1]
            lines += [
                "AsyncPostgresStore relative to PostgresStore (async rate ÷ sync rate, tasks vs "
                "threads): "
                + "; ".join(
                    f"{w}: claims {async_rates[i] / claim_rates[pg][i]:.2f}×, round trips "
                    f"{async_trips[i] / trip_rates[pg][i]:.2f}×"
                    for i, w in enumerate(WORKERS)
                )
                + ".",
                "",
            ]
        lines += [
            "### Restoring a thread (Conversation(store=…, thread_id=…))",
            "",
            "| store | " + " | ".join(f"{n:,} runs" for n in RUNS) + " | per run at 1,000 |",
            "|---|" + "---:|" * (len(RUNS) + 1),
        ]
        for name, store in stores:
            times = [restore_seconds(store, build_thread(store, conv)) for conv in threads]
            lines.append(_restore_row(name, times))
        if conninfo is not None:
            sync_pg = stores[-1][1]
            sync_loads = [_best_of_5(lambda t=t: sync_pg.load(t)) for t, _ in async_loads]
            lines += [
                _restore_row(f"{ASYNC}: `await AsyncDriver(conv).restore()`", async_restores),
                _restore_row(f"{ASYNC}: `await store.load` only", [t for _, t in async_loads]),
                _restore_row("PostgreSQL 15 (sync): `store.load` only, for the ratio", sync_loads),
                "",
                "Loading a thread, async ÷ sync time: "
                + "; ".join(
                    f"{n:,} runs {a / s:.2f}×"
                    for n, (_, a), s in zip(RUNS, async_loads, sync_loads, strict=True)
                )
                + ".",
            ]
        lines.append("")
        lines += [
            "### Messages written over a thread's life",
            "",
            "| runs | written (what each run changed) | a whole-history save per run | ratio |",
            "|---:|---:|---:|---:|",
        ]
        for n in RUNS:
            written, whole = message_bytes_written(n)
            lines.append(f"| {n:,} | {written:,} B | {whole:,} B | {whole / written:,.1f}× |")
        lines.append("")
        lines += [
            "### A save's CPU: encoding the messages (one run after the last save)",
            "",
            "| runs in the thread | now (what the run touched) | before (the whole thread) | ratio |",
            "|---:|---:|---:|---:|",
        ]
        for n in SAVE_RUNS:
            now, before = save_cpu(n)
            lines.append(
                f"| {n:,} | {now * 1000:.2f} ms | {before * 1000:.2f} ms | {before / now:,.0f}× |"
            )
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
