"""``make bench``: every benchmark side by side with its peers, in one run.

Prints Markdown tables (paste-able into docs/performance.md). Timings are the
best of several repeats after a warm-up, on the one shared corpus from
``bench/corpus.py``. Nothing here is asserted: performance is reported, not
tested.

Groups (``--only`` runs one):

* ``codec`` — decode and encode vs the official Python package;
* ``pipeline`` — the consumer pipeline vs the official TypeScript client (in
  Node, ``interop/``) and ``ag-ui-validate``, plus a profile of our bytes path;
* ``reducer`` — the ``ThreadState`` reducer vs the official ``defaultApplyEvents``
  on threads of 10, 100 and 1,000 runs;
* ``arguments`` — argument previews stay linear (1 MB in 10-byte deltas,
  previewed after every delta) vs naive re-parsing, and schema validation with
  jsonschema-rs vs jsonschema;
* ``transport`` — one server process to one client vs the official
  quickstart's FastAPI endpoint, and memory with 1,000 idle streams;
* ``binding`` — the binary binding (HTTP + protobuf) beside SSE: codec vs the
  official ``@ag-ui/proto`` in Node, decode + pipeline, one server → one client,
  and the codec choice (upb vs hand-written).
* ``store`` — the thread store: claims/s and round trips/s for memory, SQLite
  and PostgreSQL (a throw-away server) at 1, 4 and 16 workers — and the async
  PostgreSQL store's claims/s at 1, 4 and 16 tasks — and the time to restore
  threads of 10, 100 and 1,000 runs.
* ``hostile`` — what small hostile streams cost (bench/hostile.py), before
  (recorded) and now; ``--write-docs`` writes the table in docs/security.md;
* ``load`` — 100 / 500 / 1,000 concurrent runs, a storm of 500 disconnects,
  and a small run's first byte while big bodies are judged (bench/load.py);
  ``--write-docs`` writes them into docs/security.md too.
* ``inspector`` — the inspector page in headless Chromium streaming 1,000 / 5,000
  text deltas beside ``agui-inspector`` 0.2.0 (installed on demand into
  ``.venv-agui-inspector``), and 100,000 for ours: settle time, longest long task,
  memory, a filter change (bench/inspector.py; docs/inspector.md).
* ``telemetry`` — what OpenTelemetry tracing costs a Session round trip: before
  tracing existed, tracing off, the API with no SDK, the SDK with a no-op
  exporter (bench/telemetry.py; docs/observability.md).
* ``run_log`` — the resumable binding's run log: cost per event on memory, SQLite
  and PostgreSQL beside no log, rejoin latency, polling vs LISTEN/NOTIFY
  (bench/run_log.py; docs/resumable.md).
* ``capacity`` — concurrent runs streaming at a model's pace that one server core
  serves within first-event p99 < 100 ms and gap p99 < 50 ms: ours (verification
  on and off) beside the quickstart and a bare ASGI floor, each on uvicorn's
  asyncio + h11 stack and on uvloop + httptools (bench/capacity.py;
  docs/performance.md).
* ``proxy`` — ``agui-tools proxy``'s overhead: the same agent and stream direct and
  through it — added latency per event (p50/p99), throughput, memory per proxied
  stream (bench/proxy.py; docs/proxy.md).
* ``ledger`` — the approval ledger's cost per decision beside no ledger, on
  memory, SQLite and PostgreSQL, and ``verify_ledger`` per entry (bench/ledger.py;
  docs/approvals.md).
* ``receipts`` — signing and verifying a receipt, and a decision with and without
  a signer (bench/receipts.py; docs/receipts.md).

The TypeScript peers need Node and ``npm ci --prefix interop`` (``make bench``
does both); without them their rows say "peer skipped" and the rest runs.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

from . import arguments as arguments_bench
from . import capacity as capacity_bench
from . import codec, corpus, hostile, load, peers
from . import inspector as inspector_bench
from . import ledger as ledger_bench
from . import pipeline as pipeline_bench
from . import proto as proto_bench
from . import proxy as proxy_bench
from . import receipts as receipts_bench
from . import reducer as reducer_bench
from . import run_log as run_log_bench
from . import store as store_bench
from . import telemetry as telemetry_bench
from . import transport as transport_bench
from .harness import table

GROUPS = (
    "codec",
    "pipeline",
    "reducer",
    "arguments",
    "transport",
    "binding",
    "store",
    "hostile",
    "load",
    "capacity",
    "telemetry",
    "proxy",
    "run_log",
    "ledger",
    "receipts",
    "inspector",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--events", type=int, default=100_000, help="minimum corpus size")
    parser.add_argument("--only", choices=GROUPS, help="run one group only")
    parser.add_argument(
        "--write-docs", action="store_true", help="write the hostile table into docs/security.md"
    )
    parser.add_argument(
        "--peer-budget",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="longest single official-reducer fold to attempt (reducer group; default 15)",
    )
    args = parser.parse_args(argv)
    groups = [args.only] if args.only else list(GROUPS)

    started = time.perf_counter()
    events = corpus.standard(args.events)
    node = peers.node_version() or "not found"
    print(
        f"# agui-tools benchmarks — {len(events):,} events, Python {platform.python_version()}, "
        f"Node {node}, {platform.machine()}\n"
    )
    if "codec" in groups:
        lines = corpus.lines(events)
        print(
            table(
                "Decode (bytes → event), baseline: official decode without enforcement",
                codec.decode_results(lines),
            )
        )
        print(
            table(
                "Encode (typed event → SSE frame), baseline: official EventEncoder",
                codec.encode_results(events),
            )
        )
        for chunk in (16384, 1024):
            print(
                table(
                    f"gzip'd SSE decoded, {chunk} B received at a time, baseline: bare zlib",
                    codec.gzip_results(lines, chunk),
                )
            )
    if "pipeline" in groups:
        print(pipeline_bench.report(pipeline_bench.results(events)))
        print(pipeline_bench.profile_summary(events))
    if "reducer" in groups:
        print(reducer_bench.report(reducer_bench.results(args.peer_budget)))
    if "arguments" in groups:
        print(
            table(
                "Argument previews, baseline: our throttled preview",
                arguments_bench.preview_results(),
            )
        )
        print(
            table(
                "Argument validation, baseline: jsonschema-rs", arguments_bench.validation_results()
            )
        )
    if "transport" in groups:
        print(transport_bench.report())
    if "binding" in groups:
        print(proto_bench.report(events))
    if "store" in groups:
        print(store_bench.report())
    if "hostile" in groups:
        hostile_table = hostile.report(hostile.results())
        print("## Hostile streams (docs/security.md)\n\n" + hostile_table)
        if args.write_docs:
            hostile.write_docs(hostile_table)
    if "load" in groups:
        load_text = load.report(*load.results())
        print("## Load and disconnect storm (docs/security.md)\n\n" + load_text)
        if args.write_docs:
            hostile.write_docs(load_text, marker="load")
    if "capacity" in groups:
        shape = capacity_bench.Shape()
        print(capacity_bench.report(capacity_bench.results(shape), shape))
    if "telemetry" in groups:
        print(telemetry_bench.report())
    if "proxy" in groups:
        print(proxy_bench.report())
    if "run_log" in groups:
        print(run_log_bench.report())
    if "ledger" in groups:
        print("\n## The approval ledger: cost per decision (bench/ledger.py)\n")
        print(ledger_bench.report())
    if "receipts" in groups:
        print("\n## Signed receipts: cost per decision (bench/receipts.py)\n")
        print(receipts_bench.report(receipts_bench.results()))
    if "inspector" in groups:
        print(inspector_bench.report())
    print(f"_Total time: {time.perf_counter() - started:.0f} s._")
    return 0


if __name__ == "__main__":
    sys.exit(main())
