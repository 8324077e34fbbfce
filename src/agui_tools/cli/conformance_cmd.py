"""``agui-tools conformance DIR`` — run fixtures in the official conformance format."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

HELP = """\
Run AG-UI conformance fixtures (the official format: one JSON file per stream
with "stream" and "expect") through this library's consumer, and report
pass/fail per fixture with the first expectation that does not hold.

The official clients' own wording (errorContains, warnings) is judged by our
equivalent — the violation's rule ID, path and identifiers; the warning's path,
event type and message — see docs/conformance.md. Fixtures pinning an official
client's admitted gap report "deviation" with the rule we follow instead.

Exit codes: 0 every fixture passed (deviations allowed), 1 a fixture failed,
2 bad usage or unreadable directory.
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "conformance",
        help="run conformance fixtures (official AG-UI format) and report per fixture",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("directory", metavar="DIR", help="a directory of fixture files (or one file)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..app._conformance import FixtureNotJSON, run_directory

    path = Path(args.directory)
    if not path.exists():
        print(f"agui-tools conformance: no such file or directory: {path}", file=sys.stderr)
        return 2
    try:
        results = run_directory(path)
    except OSError as exc:
        print(
            f"agui-tools conformance: cannot read fixtures in {path}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    except FixtureNotJSON as exc:  # a fixture is one JSON document
        print(f"agui-tools conformance: cannot read fixtures in {path}: {exc}", file=sys.stderr)
        return 2
    if not results:
        # zero fixtures is not "every fixture passed": most likely the wrong directory
        print(f"agui-tools conformance: no fixtures found in {path}", file=sys.stderr)
        return 2
    counts = {
        s: sum(r.status == s for r in results) for s in ("pass", "deviation", "fail", "error")
    }
    if args.json:
        doc = {"summary": counts, "fixtures": [r.to_json() for r in results]}
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        for r in results:
            line = f"{r.status.upper():9} {r.name}"
            if r.mismatch:
                line += f"\n          {r.mismatch}"
            for note in r.notes:
                line += f"\n          note: {note}"
            print(line)
        print(
            f"{counts['pass']} passed, {counts['deviation']} deviation(s), "
            f"{counts['fail']} failed, {counts['error']} error(s) — {len(results)} fixture(s)"
        )
    return 1 if counts["fail"] or counts["error"] else 0
