"""Timing helpers: best of several repeats, after a warm-up, in one process."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass

REPEATS = 5


@dataclass
class Result:
    name: str
    events: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.events / self.seconds


def measure(name: str, events: int, fn: Callable[[], object], repeats: int = REPEATS) -> Result:
    fn()  # warm-up: caches, compiled checks, imports
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return Result(name, events, best)


def table(title: str, results: list[Result], baseline: int = 0) -> str:
    base = results[baseline].rate
    rows = [f"### {title}", "", "| implementation | events/s | vs baseline |", "|---|---:|---:|"]
    for r in results:
        rows.append(f"| {r.name} | {r.rate:,.0f} | {r.rate / base:.2f}× |")
    return "\n".join(rows) + "\n"
