"""The resumable binding's run log (docs/resumable.md, "Measured"), side by side.

* **per event** — one run of ``EVENTS`` text deltas served over loopback HTTP and
  read whole by a client in the same process, with no log (the standard binding),
  and opted in on the memory, SQLite and PostgreSQL logs: microseconds per event
  (server and client together) and the ratio to no log;
* **rejoin** — a finished run of ``EVENTS`` events, rejoined after its middle:
  the time from the request to the first event, and to the whole replay;
* **live, another replica** — a reader on a replica that does not run the agent
  learns of each appended event by polling (``poll`` = 0.05 s) or would by
  ``LISTEN/NOTIFY``: the delay from the writer's commit to the reader's read, and
  what a NOTIFY adds to each append's commit.

Rounds alternate the variants (each round runs every one), and the median of the
rounds is reported. The PostgreSQL server is a throw-away one with ``fsync`` on
(tests/helpers/postgres.py). Nothing is asserted.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from agui_tools.agent import Run
from agui_tools.app._run_log import MemoryRunLog, RunLog
from agui_tools.app._run_log_sql import PostgresRunLog, SQLiteRunLog
from agui_tools.transport._resumable import Resumable
from agui_tools.transport._server import agent_app
from agui_tools.transport._serving import serving

EVENTS = 5_000
ROUNDS = 5
SSE = {"accept": "text/event-stream"}


async def deltas(run: Run) -> None:
    async with run.message() as m:
        for _ in range(EVENTS - 4):  # + RUN_STARTED, START, END, RUN_FINISHED
            await m.delta("x")


def _input() -> dict[str, Any]:
    return {"threadId": "bench", "runId": uuid.uuid4().hex, "messages": []}


async def _one_run(url: str, opt_in: bool) -> tuple[float, dict[str, Any]]:
    headers = {**SSE, "agui-resumable": "1"} if opt_in else SSE
    run_input = _input()
    async with httpx.AsyncClient(timeout=120) as client:
        started = time.perf_counter()
        answer = await client.post(url, json=run_input, headers=headers)
        elapsed = time.perf_counter() - started
    assert answer.status_code == 200 and answer.content.count(b"data:") == EVENTS
    return elapsed, run_input


async def _per_event(logs: dict[str, RunLog | None]) -> dict[str, list[float]]:
    apps = {
        name: agent_app(deltas, resumable=None if log is None else Resumable(log=log))
        for name, log in logs.items()
    }
    times: dict[str, list[float]] = {name: [] for name in apps}
    urls: dict[str, str] = {}
    stack = []
    for name, app in apps.items():
        context = serving(app)
        urls[name] = await context.__aenter__()
        stack.append(context)
    try:
        for name in apps:  # warm-up
            await _one_run(urls[name] + "/", logs[name] is not None)
        for _ in range(ROUNDS):
            for name in apps:
                elapsed, _ = await _one_run(urls[name] + "/", logs[name] is not None)
                times[name].append(elapsed)
    finally:
        for context in reversed(stack):
            await context.__aexit__(None, None, None)
    return times


async def _rejoin(logs: dict[str, RunLog]) -> dict[str, tuple[float, float]]:
    out = {}
    for name, log in logs.items():
        async with serving(agent_app(deltas, resumable=Resumable(log=log))) as url:
            _, run_input = await _one_run(url + "/", True)
            path = f"{url}/threads/bench/runs/{run_input['runId']}/events?after={EVENTS // 2}"
            firsts, wholes = [], []
            async with httpx.AsyncClient(timeout=60) as client:
                for _ in range(ROUNDS * 4):
                    started = time.perf_counter()
                    async with client.stream("GET", path, headers=SSE) as stream:
                        first = None
                        async for _chunk in stream.aiter_raw():
                            if first is None:
                                first = time.perf_counter() - started
                        wholes.append(time.perf_counter() - started)
                    firsts.append(first or 0.0)
        out[name] = (statistics.median(firsts), statistics.median(wholes))
    return out


def _live_delay(conninfo: str, notify: bool, appends: int = 40) -> tuple[float, float]:
    """The commit-to-read delay for a reader on another connection — polling every
    0.05 s, or woken by the log's LISTEN/NOTIFY (:meth:`PostgresRunLog.watch`) — and
    the append's own time (with its NOTIFY when the reader listens): medians, seconds."""
    writer = PostgresRunLog(conninfo)
    reader = PostgresRunLog(conninfo)
    run_id = uuid.uuid4().hex
    writer.begin("live", run_id, "w", time.time() + 600)
    committed: dict[int, float] = {}
    delays: list[float] = []
    append_times: list[float] = []
    woken = threading.Event()
    unwatch = reader.watch(lambda t, r: woken.set()) if notify else None
    if not notify:
        writer.notifies = False  # what the append costs without a NOTIFY
        writer._notify = lambda cur, keys: None  # type: ignore[method-assign]
    done = threading.Event()

    def read() -> None:
        seen = 0
        while seen < appends:
            if notify:
                woken.wait(1.0)
                woken.clear()
            else:
                time.sleep(0.05)
            got = reader.read("live", run_id, seen, 1000)
            now = time.perf_counter()
            for i in range(seen + 1, seen + len(got) + 1):
                delays.append(now - committed[i])
            seen += len(got)
        done.set()

    time.sleep(0.5)  # the listener connects
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    for seq in range(1, appends + 1):
        time.sleep(0.013)  # events apart, as a model streams them
        started = time.perf_counter()
        committed[seq] = started  # a read may land before the append returns
        writer.append("live", run_id, seq, [b'{"n":%d}' % seq])
        append_times.append(time.perf_counter() - started)
    done.wait(30)
    if unwatch is not None:
        unwatch()
    writer.close()
    reader.close()
    return statistics.median(delays), statistics.median(append_times)


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms"


def report() -> str:
    from tests.helpers.postgres import PostgresServer

    server = PostgresServer(durable=True).start()
    folder = Path(tempfile.mkdtemp(prefix="agui-runlog-"))
    try:
        conninfo = server.conninfo
        per_event_logs: dict[str, RunLog | None] = {
            "no log (standard binding)": None,
            "memory": MemoryRunLog(),
            "SQLite": SQLiteRunLog(str(folder / "runs.db")),
            "PostgreSQL": PostgresRunLog(conninfo),
        }
        times = asyncio.run(_per_event(per_event_logs))
        base = statistics.median(times["no log (standard binding)"]) / EVENTS
        lines = [
            f"### Run log cost per event ({EVENTS:,} events per run, median of {ROUNDS} rounds)",
            "",
            "| log | per event | × no log |",
            "|---|---|---|",
        ]
        for name, samples in times.items():
            each = statistics.median(samples) / EVENTS
            lines.append(f"| {name} | {_us(each)} | {each / base:.2f} |")
        rejoin_logs: dict[str, RunLog] = {
            "memory": MemoryRunLog(),
            "SQLite": SQLiteRunLog(str(folder / "rejoin.db")),
            "PostgreSQL": PostgresRunLog(conninfo),
        }
        rejoins = asyncio.run(_rejoin(rejoin_logs))
        lines += [
            "",
            f"### Rejoin of a finished run after seq {EVENTS // 2:,} ({EVENTS // 2:,} events "
            "replayed)",
            "",
            "| log | first event | whole replay |",
            "|---|---|---|",
        ]
        lines += [f"| {n} | {_ms(a)} | {_ms(b)} |" for n, (a, b) in rejoins.items()]
        lines += [
            "",
            "### A reader on another replica (PostgreSQL), 40 events 13 ms apart",
            "",
            "| wakes by | append start → read (median) | append (median) |",
            "|---|---|---|",
        ]
        variants: dict[str, Callable[[], tuple[float, float]]] = {
            "polling every 0.05 s": lambda: _live_delay(conninfo, False),
            "LISTEN/NOTIFY (chosen)": lambda: _live_delay(conninfo, True),
        }
        for name, measure in variants.items():
            delay, append = measure()
            lines.append(f"| {name} | {_ms(delay)} | {_ms(append)} |")
        for log in (*per_event_logs.values(), *rejoin_logs.values()):
            close = getattr(log, "close", None)
            if close is not None:
                close()
        return "\n".join(lines) + "\n"
    finally:
        server.destroy()


if __name__ == "__main__":  # python -m bench.run_log
    print(report())
