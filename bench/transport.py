"""Transport benchmark: one server process, one client, side by side with the
official quickstart's FastAPI endpoint.

* throughput — events/s one client receives from one server process streaming a
  long run (text deltas, then tool-call argument deltas), counted by the same
  client (httpx + our SSE reader) for every server;
* memory — the server process's resident set growth with 1,000 concurrent
  idle streams (each run has started and is waiting), per stream.

Each server runs as its own process (``bench/servers.py``), started fresh.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

from agui_tools.testing import free_port
from agui_tools.wire._framing import SSEReader

from .harness import Result

ROOT = Path(__file__).resolve().parents[1]
SERVERS = {
    "agui-tools agent_app + Run API (verification on, the default)": "ours",
    "agui-tools agent_app + Run API (verification off)": "ours-noverify",
    "official quickstart: FastAPI + EventEncoder in a StreamingResponse": "official",
}
BASELINE = "official quickstart: FastAPI + EventEncoder in a StreamingResponse"


def rss_kib(pid: int) -> int:
    """The resident set of process ``pid``, in KiB (``VmRSS``; 0 when not said)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def spawn(args: list[str], root: Path = ROOT, **popen: Any) -> subprocess.Popen[Any]:
    """``python ARGS`` in the checkout ``root`` (its ``src`` and ``bench`` importable;
    another checkout's code measured beside this one's)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    return subprocess.Popen([sys.executable, *args], cwd=root, env=env, **popen)


class Child:
    """A process a benchmark started (``proc``): its resident set, and its stop."""

    proc: subprocess.Popen[Any]

    def rss_kib(self) -> int:
        return rss_kib(self.proc.pid)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Server(Child):
    """``python -m MODULE KIND PORT`` (``bench.servers`` by default), waited for until it
    answers on loopback; ``cpus``: the cores it may run on (default: any); ``stack``: the
    HTTP stack, one of ``bench.servers.STACKS``."""

    def __init__(
        self,
        kind: str,
        module: str = "bench.servers",
        cpus: set[int] | None = None,
        stack: str = "auto",
    ) -> None:
        self.port = free_port()
        self.proc = spawn(
            ["-m", module, kind, str(self.port), stack],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            # pinned before it starts, so every thread it ever has inherits the set
            preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus),
        )
        self.url = f"http://127.0.0.1:{self.port}/agent"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(self.url, timeout=1)
                return
            except httpx.TransportError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(
                        f"server {kind} did not start: {self.proc.stderr.read() if self.proc.stderr else ''}"
                    ) from None
                time.sleep(0.05)


def _body(run: str, props: dict[str, Any]) -> bytes:
    return orjson.dumps(
        {
            "threadId": "bench",
            "runId": run,
            "messages": [],
            "forwardedProps": props,
            "protocolVersion": "1.1",
        }
    )


async def _consume(client: httpx.AsyncClient, url: str, n: int, run: str) -> int:
    reader = SSEReader()
    frames = 0
    async with client.stream(
        "POST",
        url,
        content=_body(run, {"mode": "burst", "n": n}),
        headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
    ) as r:
        r.raise_for_status()
        async for chunk in r.aiter_raw():
            frames += len(reader.feed(chunk))
    return frames


async def rss_with_idle_streams(
    client: httpx.AsyncClient, url: str, streams: int, rss: Callable[[], int]
) -> int:
    """``rss()`` (KiB) while ``streams`` idle runs of ``url`` are open at once — each
    has sent its first bytes; read half a second after the last one did — then every
    stream released and closed. The one client loop of the idle-memory figures
    (this module's and ``bench/proxy.py``'s)."""
    opened = asyncio.Event()
    release = asyncio.Event()
    ready = 0

    async def one(i: int) -> None:
        nonlocal ready
        async with client.stream(
            "POST",
            url,
            content=_body(f"idle{i}", {"mode": "idle"}),
            headers={"Content-Type": "application/json"},
        ) as r:
            async for _ in r.aiter_raw():
                ready += 1
                if ready == streams:
                    opened.set()
                await release.wait()
                return

    tasks = [asyncio.create_task(one(i)) for i in range(streams)]
    await asyncio.wait_for(opened.wait(), 120)
    await asyncio.sleep(0.5)
    after = rss()
    release.set()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return after


def throughput(n: int = 25_000, repeats: int = 3) -> list[Result]:
    results = []
    for name, kind in SERVERS.items():
        server = Server(kind)
        try:

            async def run_all(server: Server = server) -> tuple[int, float]:
                async with httpx.AsyncClient(timeout=120) as client:
                    await _consume(client, server.url, 500, "warmup")
                    best, frames = float("inf"), 0
                    for i in range(repeats):
                        t0 = time.perf_counter()
                        frames = await _consume(client, server.url, n, f"r{i}")
                        best = min(best, time.perf_counter() - t0)
                    return frames, best

            frames, seconds = asyncio.run(run_all())
            results.append(Result(name, frames, seconds))
        finally:
            server.stop()
    return results


def idle_memory(streams: int = 1_000) -> list[tuple[str, float, float]]:
    """(name, MiB growth, KiB per stream) for ``streams`` concurrent idle runs."""
    out = []
    for name, kind in SERVERS.items():
        if kind == "ours-noverify":
            continue
        server = Server(kind)
        try:

            async def hold(server: Server = server) -> int:
                limits = httpx.Limits(max_connections=streams + 10, max_keepalive_connections=0)
                async with httpx.AsyncClient(timeout=120, limits=limits) as client:
                    before = server.rss_kib()
                    after = await rss_with_idle_streams(client, server.url, streams, server.rss_kib)
                    return after - before

            grown = asyncio.run(hold())
            out.append((name, grown / 1024, grown / streams))
        finally:
            server.stop()
    return out


def report() -> str:
    rows = throughput()
    base = next(r for r in rows if r.name == BASELINE).rate
    lines = [
        "### Transport: one server process → one client (events/s received)",
        "",
        "| server | events/s | vs official quickstart |",
        "|---|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r.name} | {r.rate:,.0f} | {r.rate / base:.2f}× |")
    lines += [
        "",
        f"* one run of {rows[0].events:,} events (text deltas, then tool-call argument deltas), best of 3, "
        "after a warm-up run; the same client (httpx + agui-tools SSEReader, counting frames) reads every server.",
        "",
    ]
    mem = idle_memory()
    lines += [
        "### Transport: memory with 1,000 concurrent idle streams (server RSS growth)",
        "",
        "| server | MiB | KiB per stream |",
        "|---|---:|---:|",
    ]
    for name, mib, per in mem:
        lines.append(f"| {name} | {mib:.1f} | {per:.1f} |")
    lines += [
        "",
        "* each stream's run has started and waits; RSS read from /proc before and after all 1,000 are open.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
