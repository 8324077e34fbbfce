"""What keeping an open stream's bytes costs the proxy (``python -m bench.proxy_kept``).

A stream judged in the judging process keeps its chunks in the proxy until its verdict
is in (``JudgePool.keep``), so that a judging process that dies loses no verdict
(docs/proxy.md, "If the judging process dies"). This measures, in the proxy's own
process, the memory held per stream (tracemalloc: the chunks as they arrive, kept
instead of freed) and the time ``keep`` adds per chunk.
"""

from __future__ import annotations

import asyncio
import time
import tracemalloc

import orjson

from agui_tools.transport._judge_pool import JudgePool, _RemoteWatch
from agui_tools.wire._framing import sse_frame

CHUNKS = 20_000


def _chunks(n: int) -> list[bytes]:
    delta = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "word "}
    return [sse_frame(orjson.dumps({**delta, "i": i})) for i in range(n)]


async def _measure() -> dict[str, float]:
    pool = JudgePool()  # never started: keep() alone is measured
    remote = _RemoteWatch(pool, 1, lambda finding: None)
    chunks = _chunks(CHUNKS)
    size = sum(len(c) for c in chunks)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for chunk in chunks:  # as they arrive: a new object each, kept instead of freed
        pool.keep(remote, bytes(memoryview(chunk)))
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    timed = _RemoteWatch(pool, 2, lambda finding: None)
    pool.kept = 0
    t0 = time.perf_counter()
    for chunk in chunks:
        pool.keep(timed, chunk)
    seconds = time.perf_counter() - t0
    return {
        "stream_bytes": size,
        "held_bytes": held,
        "per_chunk_overhead": (held - size) / CHUNKS,
        "ns_per_chunk": seconds / CHUNKS * 1e9,
    }


def report() -> str:
    r = asyncio.run(_measure())
    return (
        f"kept: a {CHUNKS:,}-chunk stream of {r['stream_bytes'] / 1024:,.0f} KiB holds "
        f"{r['held_bytes'] / 1024:,.0f} KiB in the proxy until its verdict is in "
        f"({r['held_bytes'] / r['stream_bytes']:.2f}x its bytes, "
        f"+{r['per_chunk_overhead']:.0f} B a chunk); keep() {r['ns_per_chunk']:.0f} ns a chunk"
    )


if __name__ == "__main__":
    print(report())
