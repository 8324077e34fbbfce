"""The ``agui-tools`` command line: one entry point, a subcommand per job."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..version import PROTOCOL_VERSION, __version__

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    print(
        "agui-tools demo (placeholder until the demo lands):\n"
        "  it will start a scripted demo agent on a free loopback port and a terminal\n"
        "  application against it, and walk the whole tool-call loop: text streaming,\n"
        "  an agent-side tool, a frontend tool whose arguments fill in on a card,\n"
        "  consent for a side-effectful tool, parallel calls, an unadvertised tool and\n"
        "  arguments that fail schema validation."
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agui-tools",
        description="AG-UI tool-call machinery: verify streams, serve agents, drive them.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"agui-tools {__version__} (AG-UI {PROTOCOL_VERSION})",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="run the end-to-end demo in this terminal")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return 2
    result: int = args.func(args)
    return result


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
