"""Capacity at a model's pace (issue 41): concurrent streaming runs one core serves.

Runs arrive at a steady rate and each streams like a model — one delta every
``1 / tps`` seconds: ``tokens`` text deltas, then ``calls`` tool calls of ``args``
argument deltas each, every call answered (``mode: "model"`` in
``bench/servers.py``). A step holds ``C`` runs in flight (arrivals every ``D / C``
seconds, ``D`` one run's length) for a warm-up of ``D`` and a measured window of
``D``; the runs that *arrive* in the window are the ones measured:

* first event — request sent → the whole ``RUN_STARTED`` frame received (later than
  the first byte: the headers go first), p50 / p99;
* gap — time between consecutive events of one run as the client sees them, p99
  (the pace itself is ``1 / tps``);
* server CPU per event — the server process's user + system time over the step
  (``/proc/PID/stat``) ÷ the events it sent; its share of its core over the window;
* RSS per run — the server's peak resident set during the step, above its resident
  set after a warm-up run, ÷ ``C``;
* full collections — the garbage collector's generation-2 passes in the server over
  the step and the longest one's pause (ours' servers count them, ``GET /gc``).

The server is pinned to one core and this generator to another (when there are
two), and the generator reports its own CPU share over the window and how late it
started runs behind their schedule (p99): a
step whose generator was saturated is marked so and is not read as the server's
limit. The generator is a bare asyncio protocol (one connection per run, HTTP/1.1,
no parsing beyond counting frames) so that it costs a few µs per event.

Steps go up until one breaks the bounds — first event p99 < 100 ms, gap p99 <
50 ms, every run complete — and the figure is the largest step within them, per
server: ours with verification on and off, the quickstart (FastAPI +
``EventEncoder``), and the floor — a bare ASGI app on the same uvicorn writing
frames made once at start-up, what any app on this server costs per event — in
one run, on each of uvicorn's HTTP stacks (:data:`STACKS`). A step that breaks the bounds while the machine's other work held the
server's or the generator's core (``/proc/PID/schedstat``) for more than 5 % of
the window is run again, up to twice. ::

    python -m bench.capacity [--tps 40] [--tokens 120] [--calls 1] [--args 40]
        [--stacks h11 uvloop] [--servers ours ours-noverify official floor]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from .load import _pct
from .transport import Server, _body

SERVERS = {
    "agui-tools agent_app (verification on, the default)": "ours",
    "agui-tools agent_app (verification off)": "ours-noverify",
    "agui-tools agent_app, events through ASGI (the direct writer off)": "ours-asgi",
    "agui-tools agent_app, start-up's objects frozen (gc.freeze)": "ours-frozen",
    "quickstart: FastAPI + official EventEncoder": "official",
    "floor: a bare ASGI app writing ready-made frames": "floor",
}
DEFAULT_SERVERS = ("ours", "ours-noverify", "official", "floor")
"""What ``make bench`` sweeps; ``ours-asgi`` (the direct writer's A/B) when asked."""
QUICKSTART = "quickstart: FastAPI + official EventEncoder"
FLOOR = "floor: a bare ASGI app writing ready-made frames"
STACKS = {
    "h11": "asyncio + h11 (uvicorn's pure-Python stack)",
    "uvloop": "uvloop + httptools (uvicorn[standard], fastapi[standard])",
    "uvloop-h11": "uvloop + h11 (`agui-tools serve`'s h11 protocol, with uvloop installed)",
}
"""The HTTP stacks each server is swept on (``bench.servers.STACKS``): uvicorn's
default without extras, and what ``uvicorn[standard]`` — which FastAPI's docs install
as ``fastapi[standard]`` — gives."""
DEFAULT_STACK = "h11"
SWEPT_STACKS = ("h11", "uvloop")
"""The stacks ``make bench`` sweeps: the default, and what FastAPI's docs deploy."""
STEPS = (50, 100, 150, 200, 300, 400, 500, 600, 800, 1000, 1200, 1500, 2000)
FIRST_BOUND = 0.100
GAP_BOUND = 0.050


def _cores() -> tuple[set[int] | None, set[int] | None]:
    """(the server's core, the generator's): the first two this process may use, or
    ``(None, None)`` — no pinning — when there are fewer."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        return None, None
    return {allowed[0]}, {allowed[1]}


SERVER_CPUS, GENERATOR_CPUS = _cores()
GENERATOR_BUSY = 0.90
"""A generator busier than this share of its core may be what is slow: such a step
is marked and not read as the server's limit."""
CONTENDED = 0.05
RETRIES = 2
TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Shape:
    """How a run streams: deltas a second, text deltas, tool calls, argument deltas each."""

    tps: float = 40.0
    tokens: int = 120
    calls: int = 1
    args: int = 40

    @property
    def seconds(self) -> float:
        """One run's length at the pace, start to finish."""
        return (self.tokens + self.calls * self.args) / self.tps

    @property
    def events(self) -> int:
        """Events in one complete run: run and message start/end, each call's four kinds."""
        return 4 + self.tokens + self.calls * (self.args + 3)

    def props(self) -> dict[str, Any]:
        return {
            "mode": "model",
            "tps": self.tps,
            "tokens": self.tokens,
            "calls": self.calls,
            "args": self.args,
        }


@dataclass
class _Run(asyncio.Protocol):
    """One run over its own connection: the request, then frames counted as they come."""

    request: bytes
    done: asyncio.Future[None]
    sent: float = 0.0
    first: float = float("nan")
    events: int = 0
    finished: bool = False
    gaps: list[float] = field(default_factory=list)
    _head: bytes | None = b""
    _tail: bytes = b""
    _last: float = 0.0
    _transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        if self._head is not None:  # still in the response head
            head = self._head + data
            end = head.find(b"\r\n\r\n")
            if end < 0:
                self._head = head
                return
            self._head = None
            if not head.startswith(b"HTTP/1.1 200"):
                self._end()
                return
            data = head[end + 4 :]
        frames = data.count(b"\n\n")  # a frame is never split across chunks: one send each
        if frames:
            if self.events:
                self.gaps.append(now - self._last)
            else:
                self.first = now - self.sent
            self._last = now
            self.events += frames
        tail = self._tail + data
        if b"RUN_FINISHED" in tail:
            self.finished = True
        if tail.endswith(b"0\r\n\r\n"):  # the last chunk: the body is complete
            self._end()
        self._tail = tail[-16:]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)

    def _end(self) -> None:
        if self._transport is not None:
            self._transport.close()
        if not self.done.done():
            self.done.set_result(None)


def _waited_seconds(pid: int | str) -> float:
    """Seconds process ``pid``'s main thread was ready to run but waited for a core
    (``/proc/PID/schedstat``): the machine's other work, not the process's own."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _request(port: int, i: int, shape: Shape) -> bytes:
    body = _body(f"cap{i}", shape.props())
    return (
        f"POST /agent HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _start(
    loop: asyncio.AbstractEventLoop, port: int, run: _Run, late: list[float], due: float
) -> None:
    run.sent = time.perf_counter()
    late.append(run.sent - due)
    try:
        await loop.create_connection(lambda: run, "127.0.0.1", port)
    except OSError:
        run.done.set_result(None)


def _collections(server: Server) -> dict[str, Any] | None:
    """The server's collector passes so far (``GET /gc``), or None: it does not count them."""
    r = httpx.get(f"http://127.0.0.1:{server.port}/gc", timeout=5)
    return r.json() if r.status_code == 200 else None


async def step(server: Server, concurrency: int, shape: Shape, base_rss: int) -> dict[str, Any]:
    """``concurrency`` runs in flight for a warm-up and a measured window, each ``shape``."""
    gc0 = await asyncio.to_thread(_collections, server)
    loop = asyncio.get_running_loop()
    length = shape.seconds
    every = length / concurrency
    total = 2 * concurrency  # the warm-up's arrivals, then the window's
    runs: list[_Run] = []
    late: list[float] = []
    starts: list[asyncio.Task[None]] = []
    peak = base_rss
    stat = server.proc.pid
    began = time.perf_counter()
    cpu0 = _cpu_seconds(stat)
    window: dict[str, float] = {}
    for i in range(total):
        due = began + i * every
        if i == concurrency:  # the window opens: the warm-up's runs are all in flight
            window.update(
                wall=time.perf_counter(),
                cpu=_cpu_seconds(stat),
                gen=time.process_time(),
                waited=_waited_seconds(stat),
                gen_waited=_waited_seconds("self"),
            )
        while (wait := due - time.perf_counter()) > 0:
            peak = max(peak, server.rss_kib()) if i % 50 == 0 else peak
            await asyncio.sleep(min(wait, 0.05))
        run = _Run(_request(server.port, i, shape), loop.create_future())
        runs.append(run)
        starts.append(asyncio.create_task(_start(loop, server.port, run, late, due)))
    window_wall = time.perf_counter() - window["wall"]
    window_cpu = _cpu_seconds(stat) - window["cpu"]
    window_gen = time.process_time() - window["gen"]
    waited = _waited_seconds(stat) - window["waited"]
    gen_waited = _waited_seconds("self") - window["gen_waited"]
    pending = {r.done for r in runs}
    deadline = time.perf_counter() + 3 * length + 30
    while pending and time.perf_counter() < deadline:
        peak = max(peak, server.rss_kib())
        _, pending = await asyncio.wait(pending, timeout=0.1)
    await asyncio.gather(*starts)
    for r in runs:  # a run still open after the bound counts as failed, and is closed
        if r._transport is not None and not r.done.done():
            r._transport.close()
    cpu = _cpu_seconds(stat) - cpu0
    gc1 = await asyncio.to_thread(_collections, server)
    full = (
        list(zip(gc1["full_ms"], gc1["full_cpu_ms"], strict=True))[len(gc0["full_ms"]) :]
        if gc0 and gc1
        else None
    )
    measured = runs[concurrency:]
    events = sum(r.events for r in runs)
    complete = sum(r.finished and r.events == shape.events for r in measured)
    gaps = [g for r in measured for g in r.gaps]
    return {
        "concurrency": concurrency,
        "runs": len(measured),
        "complete": complete,
        "first_p50": _pct([r.first for r in measured], 0.5),
        "first_p99": _pct([r.first for r in measured], 0.99),
        "gap_p99": _pct(gaps, 0.99),
        "cpu_per_event_us": 1e6 * cpu / events if events else float("nan"),
        "server_busy": window_cpu / window_wall,
        "rss_per_run_kib": max(0, peak - base_rss) / concurrency,
        "generator_busy": window_gen / window_wall,
        "server_waited": waited / window_wall,
        "generator_waited": gen_waited / window_wall,
        "late_p99": _pct(late[concurrency:], 0.99),
        "first_max": max((r.first for r in measured), default=float("nan")),
        "full_gc": full,
    }


def within(row: dict[str, Any]) -> bool:
    """The step meets the bounds: every run complete, first event and gaps prompt."""
    return bool(
        row["complete"] == row["runs"]
        and row["first_p99"] < FIRST_BOUND
        and row["gap_p99"] < GAP_BOUND
    )


def generator_bound(row: dict[str, Any]) -> bool:
    return bool(row["generator_busy"] > GENERATOR_BUSY)


def contended(row: dict[str, Any]) -> bool:
    """The machine's other work held the server's or the generator's core for more than
    :data:`CONTENDED` of the window: a step that broke the bounds so is run again."""
    return bool(max(row["server_waited"], row["generator_waited"]) > CONTENDED)


def sweep(
    kind: str, shape: Shape, steps: Sequence[int] = STEPS, stack: str = DEFAULT_STACK
) -> list[dict[str, Any]]:
    """Steps of ``kind`` on ``stack`` up to the first that breaks the bounds (that one
    included)."""
    server = Server(kind, cpus=SERVER_CPUS, stack=stack)
    try:

        async def main() -> list[dict[str, Any]]:
            warm = Shape(tps=1000.0, tokens=20, calls=1, args=20)
            await step(server, 10, warm, server.rss_kib())
            base = server.rss_kib()
            rows = []
            for n in steps:
                for attempt in range(RETRIES + 1):
                    row = await step(server, n, shape, base)
                    row["attempts"] = attempt + 1
                    if within(row) or not contended(row):
                        break
                    await asyncio.sleep(2.0)
                rows.append(row)
                if not within(row) or generator_bound(row):
                    break
                await asyncio.sleep(1.0)  # the previous step's connections close
            return rows

        return asyncio.run(main())
    finally:
        server.stop()


def per_event(rows: Sequence[dict[str, Any]]) -> float:
    """Median server CPU per event (µs) over a sweep's steps: CPU time is the process's
    own, so it holds however busy the machine was."""
    return statistics.median(r["cpu_per_event_us"] for r in rows) if rows else float("nan")


def capacity(rows: Sequence[dict[str, Any]]) -> int:
    """The largest step within the bounds whose generator was not saturated (0: none)."""
    ok = [r["concurrency"] for r in rows if within(r) and not generator_bound(r)]
    return max(ok, default=0)


Swept = dict[tuple[str, str], list[dict[str, Any]]]
"""Each (server, stack)'s steps."""


def results(
    shape: Shape,
    steps: Sequence[int] = STEPS,
    stacks: Sequence[str] = SWEPT_STACKS,
    servers: dict[str, str] | None = None,
) -> Swept:
    """Every server's sweep on every stack, one after the other, with this process on the
    generator's core (``servers``: name → kind, :data:`DEFAULT_SERVERS` unless told)."""
    if servers is None:
        servers = {name: kind for name, kind in SERVERS.items() if kind in DEFAULT_SERVERS}
    before = os.sched_getaffinity(0)
    if GENERATOR_CPUS is not None:
        os.sched_setaffinity(0, GENERATOR_CPUS)
    try:
        return {
            (name, stack): sweep(kind, shape, steps, stack)
            for stack in stacks
            for name, kind in servers.items()
        }
    finally:
        os.sched_setaffinity(0, before)


def _pinning() -> str:
    if SERVER_CPUS is None or GENERATOR_CPUS is None:
        return "NOT pinned: fewer than two cores available, the generator shares the server's"
    return f"server pinned to core {min(SERVER_CPUS)}, generator to core {min(GENERATOR_CPUS)}"


def _full(pauses: list[tuple[float, float]] | None) -> str:
    """How many full collections, and the longest's pause: wall clock (CPU time)."""
    if pauses is None:
        return "—"
    wall, cpu = max(pauses, default=(0.0, 0.0))
    return f"{len(pauses)} / {wall:.0f} ({cpu:.0f}) ms"


def report(swept: Swept, shape: Shape) -> str:
    load = os.getloadavg()
    lines = [
        "### Capacity at a model's pace: runs in flight on one server core",
        "",
        f"Each run: {shape.tokens} text deltas then {shape.calls} tool call(s) of {shape.args} "
        f"argument deltas, {shape.tps:g} deltas/s ({shape.events} events, {shape.seconds:.1f} s); "
        f"{_pinning()}; load average "
        f"{load[0]:.1f} at the end.",
        "",
        "| server | HTTP stack | runs in flight | complete | first event p50 / p99 / max | gap p99 | server CPU "
        "per event | server core busy / waited | RSS per run | generator busy / waited / "
        "late p99 | full collections / longest (CPU) | "
        "within bounds |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for (name, stack), rows in swept.items():
        for r in rows:
            verdict = "yes" if within(r) else "no"
            if generator_bound(r):
                verdict += " (generator saturated)"
            if r["attempts"] > 1:
                verdict += f" (attempt {r['attempts']}: the core was taken by other work)"
            lines.append(
                f"| {name} | {stack} | {r['concurrency']:,} | {r['complete']}/{r['runs']} | "
                f"{r['first_p50'] * 1e3:.1f} / {r['first_p99'] * 1e3:.1f} / "
                f"{r['first_max'] * 1e3:.1f} ms | "
                f"{r['gap_p99'] * 1e3:.1f} ms | {r['cpu_per_event_us']:.0f} µs | "
                f"{r['server_busy']:.0%} / {r['server_waited']:.0%} | "
                f"{r['rss_per_run_kib']:.0f} KiB | "
                f"{r['generator_busy']:.0%} / {r['generator_waited']:.0%} / "
                f"{r['late_p99'] * 1e3:.1f} ms | {_full(r['full_gc'])} | {verdict} |"
            )
    figures = {key: capacity(rows) for key, rows in swept.items()}
    lines += ["", "Stacks: " + "; ".join(f"`{k}` — {v}" for k, v in STACKS.items()), ""]
    for (name, stack), n in figures.items():
        vs = [
            f"{n / base:.1f}× the quickstart on {other}"
            for other in dict.fromkeys((stack, DEFAULT_STACK))
            if name != QUICKSTART or other != stack
            if (base := figures.get((QUICKSTART, other), 0))
        ]
        lines.append(
            f"* **{name} on {stack}: {n:,} concurrent model-speed runs per core** with first "
            f"event p99 < {FIRST_BOUND * 1e3:.0f} ms and gap p99 < {GAP_BOUND * 1e3:.0f} ms"
            + (f" ({', '.join(vs)})." if vs else ".")
        )
    cost = {key: per_event(rows) for key, rows in swept.items()}
    rate = shape.events / shape.seconds
    for (name, stack), us in cost.items():
        floor = cost.get((FLOOR, stack), float("nan"))
        lines.append(
            f"* {name} on {stack}: {us:.0f} µs of server CPU per event (median over its "
            f"steps) — {us / floor:.2f}× the floor on the same stack; a whole core would "
            f"carry {1e6 / (us * rate):,.0f} such runs at {rate:.1f} events/s each."
        )
    lines += [
        "* Each server's sweep stops at its first step outside the bounds; a step's figures "
        "are those of the runs arriving in its second half (the first half fills the pipe).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.capacity")
    shape = Shape()
    parser.add_argument("--tps", type=float, default=shape.tps, help="deltas a second per run")
    parser.add_argument("--tokens", type=int, default=shape.tokens, help="text deltas per run")
    parser.add_argument("--calls", type=int, default=shape.calls, help="tool calls per run")
    parser.add_argument("--args", type=int, default=shape.args, help="argument deltas per call")
    parser.add_argument("--steps", type=int, nargs="+", default=list(STEPS), metavar="N")
    parser.add_argument(
        "--stacks", nargs="+", choices=list(STACKS), default=list(SWEPT_STACKS), help="HTTP stacks"
    )
    parser.add_argument(
        "--servers", nargs="+", choices=list(SERVERS.values()), default=list(DEFAULT_SERVERS)
    )
    args = parser.parse_args(argv)
    shape = Shape(args.tps, args.tokens, args.calls, args.args)
    chosen = {name: kind for name, kind in SERVERS.items() if kind in args.servers}
    print(report(results(shape, args.steps, args.stacks, chosen), shape))


if __name__ == "__main__":
    main()
