"""Load and disconnect storm against one ``agent_app`` server process (issue 11).

* load — 100 / 500 / 1,000 concurrent runs of 50 text deltas each, from one
  client process (httpx, our SSE reader): successes (a complete run ending in
  ``RUN_FINISHED``), events/s over the wall time, p50/p99 time to first byte and
  to the end, and the server's peak RSS (sampled every 50 ms);
* disconnect storm — 500 clients open runs that stay idle, then all are cut at
  once: how many agent tasks are left (polled until none, up to 30 s), RSS before
  and after, and whether the next request is served.

Loopback only, bounded: every run is 50 events, every wait has a timeout.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import orjson

from agui_tools.wire._framing import SSEReader

from .transport import Server, _body

LEVELS = (100, 500, 1000)
STORM = 500


async def _one_run(client: httpx.AsyncClient, url: str, i: int) -> tuple[bool, float, float, int]:
    started = time.perf_counter()
    first = end = float("nan")
    reader = SSEReader()
    events = 0
    ok = False
    try:
        async with client.stream(
            "POST",
            url,
            content=_body(f"load{i}", {"mode": "burst", "n": 50}),
            headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
        ) as r:
            async for chunk in r.aiter_raw():
                if first != first:  # nan: the first byte
                    first = time.perf_counter() - started
                for frame in reader.feed(chunk):
                    events += 1
                    ok = '"RUN_FINISHED"' in frame
            end = time.perf_counter() - started
    except httpx.HTTPError:
        ok = False
    return ok, first, end, events


def _pct(values: list[float], q: float) -> float:
    values = sorted(v for v in values if v == v)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))]


async def _sample_rss(server: Server, stop: asyncio.Event, peak: list[int]) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], server.rss_kib())
        await asyncio.sleep(0.05)


def load_level(server: Server, n: int) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=120, limits=limits) as client:
            stop, peak = asyncio.Event(), [server.rss_kib()]
            sampler = asyncio.create_task(_sample_rss(server, stop, peak))
            started = time.perf_counter()
            results = await asyncio.gather(*(_one_run(client, server.url, i) for i in range(n)))
            wall = time.perf_counter() - started
            stop.set()
            await sampler
        firsts = [r[1] for r in results]
        ends = [r[2] for r in results]
        return {
            "runs": n,
            "ok": sum(r[0] for r in results),
            "events_per_s": sum(r[3] for r in results) / wall,
            "first_p50": _pct(firsts, 0.5),
            "first_p99": _pct(firsts, 0.99),
            "end_p50": _pct(ends, 0.5),
            "end_p99": _pct(ends, 0.99),
            "rss_mib": peak[0] / 1024,
        }

    return asyncio.run(main())


def storm(server: Server, n: int = STORM) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        base = server.url.rsplit("/", 1)[0]
        before = server.rss_kib()
        limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=0)
        client = httpx.AsyncClient(timeout=60, limits=limits)
        opened = 0
        all_open = asyncio.Event()

        async def hold(i: int) -> None:
            nonlocal opened
            async with client.stream(
                "POST",
                server.url,
                content=_body(f"storm{i}", {"mode": "idle"}),
                headers={"Content-Type": "application/json"},
            ) as r:
                async for _ in r.aiter_raw():
                    opened += 1
                    if opened == n:
                        all_open.set()
                    await asyncio.sleep(3600)

        tasks = [asyncio.create_task(hold(i)) for i in range(n)]
        await asyncio.wait_for(all_open.wait(), 120)
        async with httpx.AsyncClient(timeout=10) as probe:
            during = (await probe.get(f"{base}/runs")).json()["runs"]
            loaded = server.rss_kib()
            for t in tasks:  # every client cut mid-stream at once
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await client.aclose()
            deadline = time.monotonic() + 30
            left = during
            while time.monotonic() < deadline:
                left = (await probe.get(f"{base}/runs")).json()["runs"]
                if left == 0:
                    break
                await asyncio.sleep(0.1)
            settled = time.monotonic() - (deadline - 30)
        after = server.rss_kib()
        async with httpx.AsyncClient(timeout=30) as client2:
            ok, *_ = await _one_run(client2, server.url, 0)
        return {
            "clients": n,
            "runs_during": during,
            "runs_left": left,
            "settled_s": settled,
            "rss_before": before / 1024,
            "rss_loaded": loaded / 1024,
            "rss_after": after / 1024,
            "next_ok": ok,
        }

    return asyncio.run(main())


BIG_BODIES = 14


def judging(server: Server, big: int = BIG_BODIES, probes: int = 40) -> dict[str, Any]:
    """p50/p99 first byte of a small run while ``big`` 7.4 MB histories are judged."""
    history = [{"id": f"m{i}", "role": "user", "content": "x" * 1000} for i in range(7_200)]
    body = orjson.dumps(
        {
            "threadId": "bench",
            "runId": "big",
            "messages": history,
            "forwardedProps": {"mode": "burst", "n": 1},
        }
    )

    async def main() -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=300) as client:
            quiet = [(await _one_run(client, server.url, i))[1] for i in range(probes)]
            stop, peak = asyncio.Event(), [server.rss_kib()]
            sampler = asyncio.create_task(_sample_rss(server, stop, peak))

            async def post_big() -> int:
                r = await client.post(
                    server.url, content=body, headers={"Content-Type": "application/json"}
                )
                return r.status_code

            bigs = [asyncio.create_task(post_big()) for _ in range(big)]
            await asyncio.sleep(0.2)
            loaded = []
            for i in range(probes):
                if all(t.done() for t in bigs):
                    break
                loaded.append((await _one_run(client, server.url, 1000 + i))[1])
            statuses = await asyncio.gather(*bigs)
            stop.set()
            await sampler
        return {
            "body_mb": len(body) / 1e6,
            "big": big,
            "statuses": sorted(set(statuses)),
            "quiet_p50": _pct(quiet, 0.5),
            "quiet_p99": _pct(quiet, 0.99),
            "loaded_n": len(loaded),
            "loaded_p50": _pct(loaded, 0.5),
            "loaded_p99": _pct(loaded, 0.99),
            "rss_mib": peak[0] / 1024,
        }

    return asyncio.run(main())


def results() -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    server = Server("ours")
    try:
        rows = [load_level(server, n) for n in LEVELS]
        cut = storm(server)
        judged = judging(server)
    finally:
        server.stop()
    return rows, cut, judged


def report(rows: list[dict[str, Any]], cut: dict[str, Any], judged: dict[str, Any]) -> str:
    lines = [
        "| concurrent runs | complete | events/s | first byte p50 / p99 | end p50 / p99 | server peak RSS |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['runs']:,} | {r['ok']:,} | {r['events_per_s']:,.0f} | "
            f"{r['first_p50'] * 1e3:.0f} / {r['first_p99'] * 1e3:.0f} ms | "
            f"{r['end_p50'] * 1e3:.0f} / {r['end_p99'] * 1e3:.0f} ms | {r['rss_mib']:.0f} MiB |"
        )
    lines += [
        "",
        f"Disconnect storm: {cut['clients']} clients cut mid-stream at once — "
        f"{cut['runs_during']} agent runs alive before, {cut['runs_left']} left after "
        f"{cut['settled_s']:.1f} s; server RSS {cut['rss_before']:.0f} MiB before, "
        f"{cut['rss_loaded']:.0f} MiB loaded, {cut['rss_after']:.0f} MiB after; next request "
        f"{'served' if cut['next_ok'] else 'NOT served'}.",
        "",
        f"Judging: {judged['big']} concurrent {judged['body_mb']:.1f} MB histories (answered "
        f"{judged['statuses']}) — a small run's first byte p50/p99 "
        f"{judged['quiet_p50'] * 1e3:.0f} / {judged['quiet_p99'] * 1e3:.0f} ms when quiet, "
        f"{judged['loaded_p50'] * 1e3:.0f} / {judged['loaded_p99'] * 1e3:.0f} ms while they are "
        f"judged ({judged['loaded_n']} probes); server peak RSS {judged['rss_mib']:.0f} MiB.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(*results()))
