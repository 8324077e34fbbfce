"""What tracing costs (issue #27): one Session round trip, three ways, side by side.

The round trip: a prompt, a run that asks for a frontend tool call, the consent
callback approving it, the handler executing, the continuation run — the agent
served in-process (``agent_app`` over ``httpx.ASGITransport``: no sockets, so the
library's own work is what is timed, not the loopback's), on a memory store.

* tracing off — as if the ``otel`` extra were not installed (every helper a no-op);
* the API, no SDK — ``opentelemetry-api`` present, no provider configured (the
  API's non-recording spans; attributes are never computed);
* the SDK, a no-op exporter — every span recorded and handed, synchronously
  (``SimpleSpanProcessor``), to an exporter that drops it: the cost of the spans
  themselves, with no export I/O;
* the SDK's metrics alone — a ``MeterProvider`` whose reader is never collected
  (every counter and histogram recorded, nothing exported), tracing off: what the
  metrics cost;
* both — spans (no-op exporter) and metrics.

And "before": the same round trips on the sources of the commit before tracing
existed (``BEFORE``, checked out with ``git archive`` into a temporary directory
and run in a subprocess) — today's cost without any of this; skipped, saying so,
where git or that commit is not at hand. Each mode runs in a fresh interpreter
(no process carries another mode's state), the modes alternated for ``rounds``
rounds; the figure is the best CPU time (``time.process_time``: all of the
process's threads, and little of the machine's other load) of ``REPEATS``.
"""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

from agui_tools.agent import Run
from agui_tools.app._store import MemoryStore
from agui_tools.transport._client import AgentClient
from agui_tools.transport._server import agent_app
from agui_tools.transport._session import Session

from .harness import Result, table

SENDS = 100
REPEATS = 7
BEFORE = "b5594a2"  # the last commit without agui_tools._telemetry
ROOT = Path(__file__).resolve().parents[1]


async def _agent(run: Run) -> None:
    if run.messages[-1]["role"] == "tool":
        await run.text("Done.")
        return
    async with run.message() as m:
        await m.delta("Placing it.")
    async with run.tool_call("place_order", parent_message_id=m.id) as c:
        await c.args('{"sku": "W-1", ')
        await c.args('"qty": 2}')


APP = agent_app(_agent, path="/agent")


async def _round_trips(sends: int) -> None:
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=APP))
    async with http:
        for _ in range(sends):
            session = Session(
                AgentClient("http://127.0.0.1/agent", http=http),
                ask=lambda call: True,
                store=MemoryStore(),
            )

            @session.tool(side_effects=True)
            def place_order(sku: str, qty: int) -> str:
                """Place an order."""
                return f"ordered {qty} x {sku}"

            result = await session.send("order two")
            assert result.status == "success", result.status


class _NoOpExporter:
    """A SpanExporter that drops every span (the SDK's own work, no export I/O)."""

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def _best(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        t0 = time.process_time()  # CPU time: the shared machine's other load counts less
        fn()
        best = min(best, time.process_time() - t0)
    return best


def _measure_here(mode: str, sends: int, repeats: int) -> float:
    """Best seconds for ``sends`` round trips in this process, tracing as ``mode`` says
    (``before``: the sources on the path have no telemetry at all)."""
    provider = None
    meters = None
    if mode != "before":
        from agui_tools import _telemetry

        if mode in ("sdk", "sdk+metrics"):
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor

            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(_NoOpExporter()))  # type: ignore[arg-type]
        if mode in ("metrics", "sdk+metrics"):
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import InMemoryMetricReader

            meters = MeterProvider(metric_readers=[InMemoryMetricReader()])
        if mode == "metrics":
            # metrics only: no tracer provider of ours, and the global one is the API's
            # proxy — so no span records; the meters do
            _telemetry.use(None, meter_provider=meters)
        else:
            _telemetry.use(provider, meter_provider=meters, enabled=mode != "off")
    return _best(lambda: asyncio.run(_round_trips(sends)), repeats)


def _measure(mode: str, src: Path, sends: int, repeats: int) -> float | None:
    """``_measure_here`` in a fresh interpreter on the sources in ``src`` (each mode
    alike: no process carries another mode's state)."""
    code = f"from bench import telemetry as t; print(t._measure_here({mode!r}, {sends}, {repeats}))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={"PYTHONPATH": f"{src}:{ROOT}", "PATH": "/usr/bin:/bin"},
    )
    if out.returncode != 0:
        print(out.stderr[-2000:], file=sys.stderr)
        return None
    return float(out.stdout.strip().splitlines()[-1])


MODES = {
    "off": "tracing off (no otel extra)",
    "api": "opentelemetry-api, no SDK configured",
    "sdk": "SDK + a no-op exporter (every span recorded)",
    "metrics": "SDK metrics only (every instrument recorded)",
    "sdk+metrics": "SDK spans (no-op exporter) + metrics",
}


def results(sends: int = SENDS, repeats: int = REPEATS, rounds: int = 3) -> list[Result]:
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", BEFORE, "src"], capture_output=True, check=False
        )
        sources = {mode: ROOT / "src" for mode in MODES}
        if archive.returncode == 0:
            subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
            sources = {"before": Path(tmp) / "src", **sources}
        else:
            print(f"(the before-tracing row is skipped: git archive {BEFORE} is not at hand)")
        for _ in range(rounds):  # alternated, best of all: a drift hits every mode alike
            for mode, src in sources.items():
                seconds = _measure(mode, src, sends, repeats)
                if seconds is not None:
                    best[mode] = min(best.get(mode, float("inf")), seconds)
    names = {"before": f"before tracing ({BEFORE})", **MODES}
    return [Result(names[mode], sends, seconds) for mode, seconds in best.items()]


def report(rs: list[Result] | None = None) -> str:
    rs = rs if rs is not None else results()
    return table(
        "Tracing cost: Session round trips (2 runs, 1 consented frontend call, in-process "
        "ASGI; CPU time), baseline: the first row — the events/s column is round trips/s",
        rs,
    )


if __name__ == "__main__":
    print(report())
