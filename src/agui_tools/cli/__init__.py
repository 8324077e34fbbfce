"""The ``agui-tools`` command line: one entry point, a subcommand per job.

Exit codes (every command):

* ``0`` — success: the stream was consumed / every fixture passed;
* ``1`` — the stream was rejected / a fixture failed;
* ``2`` — bad usage or unreadable input (a missing file, invalid JSON input);
* ``130`` — interrupted (Ctrl-C), said in one line, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .._version import PROTOCOL_VERSION, __version__
from . import (
    chat_cmd,
    check_cmd,
    conformance_cmd,
    demo_cmd,
    inspect_cmd,
    run_cmd,
    serve_cmd,
    verify_cmd,
)

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="agui-tools",
        description="AG-UI tool-call machinery: verify streams, run conformance fixtures, "
        "serve agents and drive them.",
        epilog="Exit codes: 0 success, 1 stream rejected / fixture failed / run failed, 2 bad "
        "usage or unreadable input, 130 interrupted (Ctrl-C).",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"agui-tools {__version__} (AG-UI {PROTOCOL_VERSION})",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    demo_cmd.register(sub)
    serve_cmd.register(sub)
    run_cmd.register(sub)
    chat_cmd.register(sub)
    inspect_cmd.register(sub)
    verify_cmd.register(sub)
    conformance_cmd.register(sub)
    check_cmd.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return EXIT_USAGE
    try:
        result: int = args.func(args)
    except KeyboardInterrupt:  # past the command's own handling (its last words): still one line
        from ._common import interrupted

        return interrupted(args.command)
    return result


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
