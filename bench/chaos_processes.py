"""``make chaos``: the exactly-once promise under a multi-process chaos run (issue #21).

Six worker processes on one PostgreSQL store — half ``Session`` +
``AsyncPostgresStore``, half ``SyncSession`` + ``PostgresStore`` — carry a shared
set of threads with a real agent server; a seeded schedule SIGKILLs workers
(≥ 100), terminates the store's backends (hundreds) and restarts the server once
with ``pg_ctl stop -m immediate``; every documented retry recipe is followed.
Then a fault-free pass ends every thread and the run is judged against a
side-effect table the store never touches (tests/helpers/chaos.py says how).

usage: python -m bench.chaos_processes [--seed N] [--workers 6] [--seconds 300] …
Exit status 1 when anything was violated or found; the summary says what.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers.chaos import ChaosConfig, details, run, summary


def main(argv: list[str] | None = None) -> int:
    defaults = ChaosConfig()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, value in asdict(defaults).items():
        if name == "workdir":
            p.add_argument("--workdir", default=None, help="keep the logs here")
            continue
        if isinstance(value, bool):
            p.add_argument(f"--{name.replace('_', '-')}", action="store_true")
            continue
        p.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    p.add_argument("--json", default=None, help="write the counts and violations to this file")
    ns = vars(p.parse_args(argv))
    out = ns.pop("json")
    cfg = ChaosConfig(**ns)
    print(
        f"chaos: {cfg.workers} workers, {cfg.threads} threads, {cfg.kills} SIGKILLs, "
        f"{cfg.terminations} backend terminations, {cfg.restarts} immediate restart(s) "
        f"over {cfg.seconds:g}s, seed {cfg.seed}",
        flush=True,
    )
    result = run(cfg, say=lambda s: print(s, flush=True))
    print(summary(result))
    if not result.ok:
        print("\nfirst violations / findings in full:\n" + details(result))
    if out:
        Path(out).write_text(
            json.dumps(
                {
                    "counts": result.counts,
                    "violations": result.violations,
                    "findings": result.findings,
                    "seconds": result.seconds,
                },
                indent=1,
                default=str,
            )
        )
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
