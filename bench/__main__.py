"""``make bench``: every benchmark side by side with its peers, in one run.

Prints Markdown tables (paste-able into docs/performance.md). Timings are the
best of several repeats after a warm-up, on the one shared corpus from
``bench/corpus.py``. Nothing here is asserted: performance is reported, not
tested.
"""

from __future__ import annotations

import argparse
import platform
import sys

from . import codec, corpus
from .harness import table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--events", type=int, default=100_000, help="minimum corpus size")
    parser.add_argument("--only", choices=["codec"], help="run one group only")
    args = parser.parse_args(argv)

    events = corpus.standard(args.events)
    lines = corpus.lines(events)
    print(
        f"# agui-tools benchmarks — {len(events):,} events, Python {platform.python_version()}, "
        f"{platform.machine()}\n"
    )
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
