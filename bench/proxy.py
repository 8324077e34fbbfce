"""What ``agui-tools proxy`` costs: the same agent, the same stream, direct and through it.

    python -m bench.proxy              # ~5 minutes on 2 cores, prints markdown
    python -m bench.proxy --against DIR   # and DIR's proxy (another checkout) beside it

* **added latency per event** — the agent (``bench/servers.py``, ``paced`` mode)
  sends deltas one per chunk, each carrying the ``CLOCK_MONOTONIC`` time it was
  sent at; the client notes when each arrives. The added latency is the proxied
  percentile minus the direct one (p50, p99);
* **throughput** — events/s one client receives of a 50,000-event burst (25,000
  text deltas then 25,000 argument deltas), direct and proxied, the paths
  interleaved, :data:`ROUNDS` × :data:`BURSTS` runs each; *judged*: the same rate
  counted until the thread's next input has its first byte (the proxy judges it
  against the burst's verdict: the burst is judged, not only forwarded, by then);
  and the proxy's CPU per event over the bursts (``/proc/PID/stat``): on shared
  cores the rates move with the load, the CPU a proxy spends much less;
* **memory per open stream** — the proxy's resident set growth with idle streams;
* **the judge's cost per event** — the proxy's judge (``StreamWatch``: bytes in,
  findings out) beside the official TypeScript client's stages and
  ``ag-ui-validate`` on the shared corpus (``bench/pipeline.py``'s peers);
* **a 400 MB conforming run** through the proxy while two CPU-bound loops keep
  the cores busy: forwarded whole, judged, the exit code, the proxy's peak RSS.

The proxy runs as the user runs it (``python -m agui_tools proxy``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson

from agui_tools.testing import free_port
from agui_tools.wire._framing import SSEReader, sse_frame

from .transport import (
    ROOT,
    Child,
    Server,
    _body,
    _consume,
    rss_kib,
    rss_with_idle_streams,
    spawn,
)

PACED_EVENTS = 2_000
BURST_EVENTS = 25_000  # text deltas, then as many argument deltas: 50,000 events
IDLE_STREAMS = 200
ROUNDS = 5
BURSTS = 3  # a round: ROUNDS × BURSTS = 15 bursts a path
BIG_MB = 400


class Proxy(Child):
    """``agui-tools proxy UPSTREAM`` as its own process."""

    def __init__(
        self, upstream: str, *extra: str, stderr: Any = subprocess.DEVNULL, root: Path = ROOT
    ) -> None:
        port = free_port()
        self.proc = spawn(
            ["-m", "agui_tools", "proxy", upstream, "--port", str(port), *extra],
            root,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("Proxying"):
            raise RuntimeError(f"the proxy did not start: {line!r}")
        self.url = f"http://127.0.0.1:{port}/"


async def _latencies(url: str, n: int) -> list[float]:
    """Microseconds from the agent's send to the client's receipt, per delta."""
    out: list[float] = []
    reader = SSEReader()
    async with (
        httpx.AsyncClient(timeout=120) as client,
        client.stream(
            "POST",
            url,
            content=_body("paced", {"mode": "paced", "n": n, "interval": 0.001}),
            headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
        ) as r,
    ):
        async for chunk in r.aiter_raw():
            now = time.monotonic_ns()
            for frame in reader.feed(chunk):
                event = orjson.loads(frame)
                if event["type"] == "TEXT_MESSAGE_CONTENT":
                    out.append((now - int(event["delta"])) / 1000)
    return out


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


async def _bursts(url: str, n: int, repeats: int) -> tuple[list[float], list[float]]:
    """The rate of each burst (events/s, to the last byte), and the same counted until
    the thread's next input had its first byte (the burst judged)."""
    async with httpx.AsyncClient(timeout=300) as client:
        await _consume(client, url, 500, "warmup")
        rates, judged = [], []
        for i in range(repeats):
            t0 = time.perf_counter()
            frames = await _consume(client, url, n, f"r{i}")
            seconds = time.perf_counter() - t0
            async with client.stream(
                "POST",
                url,
                content=_body(f"next{i}", {"mode": "burst", "n": 1}),
                headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
            ) as r:
                async for _ in r.aiter_raw():
                    break
            rates.append(frames / seconds)
            judged.append(frames / (time.perf_counter() - t0))
    return rates, judged


async def _idle(proxy: Proxy, url: str, streams: int) -> float:
    """KiB of proxy RSS per open idle stream."""
    limits = httpx.Limits(max_connections=streams + 10, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        await _consume(client, url, 100, "warm")
        before = proxy.rss_kib()
        after = await rss_with_idle_streams(client, url, streams, proxy.rss_kib)
    return (after - before) / streams


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def results(against: Path | None = None) -> dict[str, dict[str, float]]:
    """Each path measured once a round, the paths interleaved (the order turned round by
    round): a path measured only after another would be measured under another load.
    ``against``: another checkout, whose proxy and ``--strict`` are measured too."""
    server = Server("ours")
    proxies: dict[str, Proxy] = {}
    out: dict[str, dict[str, float]] = {}
    try:
        proxies = {
            "proxy": Proxy(server.url),
            "proxy --strict": Proxy(server.url, "--strict"),
            "proxy --inspect": Proxy(server.url, "--inspect"),  # no page open
        }
        if against is not None:
            proxies["proxy (against)"] = Proxy(server.url, root=against)
            proxies["proxy --strict (against)"] = Proxy(server.url, "--strict", root=against)
        urls = {"direct": server.url, **{name: p.url for name, p in proxies.items()}}
        p50s: dict[str, list[float]] = {name: [] for name in urls}
        p99s: dict[str, list[float]] = {name: [] for name in urls}
        rates: dict[str, list[float]] = {name: [] for name in urls}
        judged: dict[str, list[float]] = {name: [] for name in urls}
        cpu: dict[str, list[float]] = {name: [] for name in proxies}
        names = list(urls)
        for round_ in range(ROUNDS):
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                lat = asyncio.run(_latencies(urls[name], PACED_EVENTS))
                p50s[name].append(_pct(lat, 50))
                p99s[name].append(_pct(lat, 99))
                pid = proxies[name].proc.pid if name in proxies else None
                before = _cpu_seconds(pid) if pid else 0.0
                burst, seen = asyncio.run(_bursts(urls[name], BURST_EVENTS, BURSTS))
                if pid:  # the warm-up, then each burst and its next input (2 n + 7 events each)
                    events = 2 * 500 + 7 + BURSTS * (2 * BURST_EVENTS + 7 + 2 + 7)
                    cpu[name].append(1e6 * (_cpu_seconds(pid) - before) / events)
                rates[name] += burst
                judged[name] += seen
        for name in urls:
            out[name] = {
                "p50": statistics.median(p50s[name]),
                "p99": statistics.median(p99s[name]),
                "rate": statistics.median(rates[name]),
                "judged": statistics.median(judged[name]),
                "runs": len(rates[name]),
            }
            if cpu.get(name):
                out[name]["cpu_us"] = statistics.median(cpu[name])
        for name, proxy in proxies.items():
            out[name]["kib_per_stream"] = asyncio.run(_idle(proxy, proxy.url, IDLE_STREAMS))
    finally:
        for proxy in proxies.values():
            proxy.stop()
        server.stop()
    return out


# -- the judge's cost per event, beside the peers ---------------------------------------------


def judge_costs() -> dict[str, float]:
    """µs per event: the proxy's judge on the burst's SSE bytes and on the corpus (NDJSON,
    64 KiB chunks), the official client's stages and ag-ui-validate on the same corpus."""
    from agui_tools.app._watch import StreamWatch

    from . import corpus, peers

    events = corpus.standard()
    costs: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="agui-bench-") as tmp:
        path = corpus.write_ndjson(events, Path(tmp) / "corpus.ndjson")
        data = path.read_bytes()
        chunks = [data[i : i + 65536] for i in range(0, len(data), 65536)]

        def watch() -> None:
            judge = StreamWatch("ndjson", keep=False)
            for chunk in chunks:
                judge.feed(chunk)
            judge.close()

        costs["proxy judge (StreamWatch), corpus NDJSON"] = _best_us(watch, len(events))
        try:
            ts = peers.run_node("pipeline.mjs", path, "--bench", "5", "--warmup", "1")
            costs["official @ag-ui/client stages (Node), corpus"] = (
                1e6 * ts["bestSeconds"] / len(events)
            )
        except peers.PeerUnavailable as exc:
            print(f"(the official client is not measured: {exc})", file=sys.stderr)
        costs["ag-ui-validate, validate_body on the corpus file"] = _best_us(
            lambda: peers.validate_file(path), len(events), repeats=3
        )
    burst = _burst_bytes(BURST_EVENTS)
    n = 2 * BURST_EVENTS + 6

    def watch_burst() -> None:
        judge = StreamWatch("sse", keep=False)
        for chunk in burst:
            judge.feed(chunk)
        judge.close()

    costs["proxy judge (StreamWatch), the 50,000-event burst (SSE)"] = _best_us(watch_burst, n)
    return costs


def _best_us(fn: Any, events: int, repeats: int = 5) -> float:
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return 1e6 * best / events


def _burst_bytes(n: int) -> list[bytes]:
    """The burst's shape as bytes, 100 events a chunk."""
    events: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        *[{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "token "}] * n,
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "search"},
        *[{"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": " "}] * n,
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    frames = [sse_frame(orjson.dumps(e)) for e in events]
    return [b"".join(frames[i : i + 100]) for i in range(0, len(frames), 100)]


# -- a 400 MB conforming run on busy cores ------------------------------------------------------


def _big_agent(port: int) -> None:
    """``python -m bench.proxy big-agent PORT``: POST /agent streams ``forwardedProps.mb``
    MB of a conforming run (400 KB messages, pre-encoded frames, as fast as it can)."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    async def agent(request: Request) -> Response:
        body = orjson.loads(await request.body())
        tid, rid = body["threadId"], body["runId"]
        messages = int((body.get("forwardedProps") or {}).get("mb", BIG_MB)) * 1_000_000 // 408_000

        async def stream() -> AsyncIterator[bytes]:
            yield sse_frame(orjson.dumps({"type": "RUN_STARTED", "threadId": tid, "runId": rid}))
            for i in range(messages):
                mid = f"m{i:06d}"
                start = {"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"}
                delta = {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": "y" * 4000}
                yield sse_frame(orjson.dumps(start)) + sse_frame(orjson.dumps(delta)) * 100
                yield sse_frame(orjson.dumps({"type": "TEXT_MESSAGE_END", "messageId": mid}))
            yield sse_frame(orjson.dumps({"type": "RUN_FINISHED", "threadId": tid, "runId": rid}))

        return StreamingResponse(stream(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/agent", agent, methods=["GET", "POST"])])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def big_run(mb: int = BIG_MB) -> dict[str, Any]:
    """A ``mb`` MB conforming run through the proxy with two busy loops on the cores."""
    server = Server("big-agent", module="bench.proxy")
    proxy = Proxy(server.url, stderr=subprocess.PIPE)
    hogs = [spawn(["-c", "while True: pass"]) for _ in range(2)]
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_kib(proxy.proc.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    try:
        sampler.start()
        t0 = time.perf_counter()
        size = 0
        with httpx.stream(
            "POST",
            proxy.url,
            content=_body("big", {"mb": mb}),
            headers={"Content-Type": "application/json"},
            timeout=600,
        ) as r:
            for piece in r.iter_raw():
                size += len(piece)
        seconds = time.perf_counter() - t0
    finally:
        done.set()
        sampler.join()
        for hog in hogs:
            hog.kill()
            hog.wait()
        proxy.proc.send_signal(signal.SIGINT)
        _, err = proxy.proc.communicate(timeout=120)
        server.stop()
    return {
        "mb": size / 1e6,
        "seconds": seconds,
        "exit": proxy.proc.returncode,
        "clean": "no rule broken by either side" in err,
        "peak_rss_mib": peak / 1024,
    }


def report(rows: dict[str, dict[str, float]] | None = None, against: Path | None = None) -> str:
    load_before = os.getloadavg()[0]
    rows = rows or results(against)
    costs = judge_costs()
    big = big_run()
    load_after = os.getloadavg()[0]
    direct = rows["direct"]
    lines = [
        "### Proxy overhead: the same agent and stream, direct and through `agui-tools proxy`",
        "",
        "| path | latency p50 (µs) | p99 (µs) | added p50 | added p99 | events/s (median) "
        "| vs direct | judged, vs direct | proxy CPU µs/event | KiB per idle stream |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        added = name != "direct"
        lines.append(
            f"| {name} | {r['p50']:,.0f} | {r['p99']:,.0f} | "
            + (
                f"{r['p50'] - direct['p50']:+,.0f} | {r['p99'] - direct['p99']:+,.0f} | "
                if added
                else "— | — | "
            )
            + f"{r['rate']:,.0f} | {r['rate'] / direct['rate']:.0%} | "
            + f"{r['judged'] / direct['judged']:.0%} | "
            + (f"{r['cpu_us']:.2f} | {r['kib_per_stream']:,.1f} |" if added else "— | — |")
        )
    lines += ["", "| judge | µs per event |", "|---|---:|"]
    lines += [f"| {name} | {us:.2f} |" for name, us in costs.items()]
    lines += [
        "",
        f"* medians of {int(direct['runs'])} bursts a path ({ROUNDS} rounds × {BURSTS}), the "
        "paths interleaved and their order turned each round; latency: "
        f"{PACED_EVENTS:,} deltas 1 ms apart, the median over the rounds of each percentile;",
        "* *judged*: the rate counted until the same thread's next input had its first byte;",
        "* proxy CPU: the proxy process's user + system time over a round's bursts, per event, "
        "median of the rounds"
        + (f"; *(against)*: the proxy of {against}, measured the same way" if against else "")
        + ";",
        f"* memory: the proxy's RSS growth with {IDLE_STREAMS} idle streams open, per stream;",
        f"* a {big['mb']:,.0f} MB conforming run with two CPU-bound loops on the cores: "
        f"{big['seconds']:.1f} s, proxy exit {big['exit']}"
        f"{' (no rule broken)' if big['clean'] else ' (FINDINGS)'}, "
        f"peak proxy RSS {big['peak_rss_mib']:.0f} MiB;",
        f"* machine load (1-minute average) {load_before:.1f} before, {load_after:.1f} after, "
        f"on {os.cpu_count()} cores shared by the agent, the proxy and the client.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":  # python -m bench.proxy
    if sys.argv[1:2] == ["big-agent"]:
        _big_agent(int(sys.argv[2]))
    elif sys.argv[1:2] == ["--against"]:
        print(report(against=Path(sys.argv[2]).resolve()))
    else:
        print(report())
