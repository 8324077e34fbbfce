"""The ``agui-tools`` command line: one entry point, a subcommand per job.

Exit codes: ``0`` success; ``1`` a stream rejected or a fixture failed; ``2`` bad usage or
unreadable input; ``130`` Ctrl-C (one line, no traceback); ``141`` stdout's reader left
(SIGPIPE). A closed standard stream is the null device: stdin at its end, writes swallowed.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Sequence
from typing import Final

from .._output import channel
from .._version import PROTOCOL_VERSION, __version__
from . import (
    chat_cmd,
    check_cmd,
    conformance_cmd,
    demo_cmd,
    inspect_cmd,
    ledger_cmd,
    mock_cmd,
    proxy_cmd,
    run_cmd,
    serve_cmd,
    verify_cmd,
)

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_BROKEN_PIPE = 141


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
    proxy_cmd.register(sub)
    run_cmd.register(sub)
    chat_cmd.register(sub)
    inspect_cmd.register(sub)
    verify_cmd.register(sub)
    conformance_cmd.register(sub)
    check_cmd.register(sub)
    mock_cmd.register(sub)
    ledger_cmd.register(sub)
    from ._otel import OTEL_COMMANDS, add_otel

    for name in OTEL_COMMANDS:
        add_otel(sub.choices[name])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from rich.console import Console

    _reopen_closed_streams()
    rich_handling = Console.on_broken_pipe
    Console.on_broken_pipe = _broken_pipe_raises  # type: ignore[method-assign, assignment]
    try:
        with channel(_command_named(argv)):
            return _main(argv)
    except BrokenPipeError:
        return _reader_gone()
    finally:  # main() called in a process that goes on (a test): rich as it was
        Console.on_broken_pipe = rich_handling  # type: ignore[method-assign]


def _command_named(argv: Sequence[str] | None) -> str:
    """The subcommand ``argv`` names (its first word that is not an option), for the
    channel's last line."""
    words = sys.argv[1:] if argv is None else argv
    return next((w for w in words if not w.startswith("-")), "")


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said with the usage of the command it was given to, not the top level's
        command = _subparser(parser, getattr(args, "command", None))
        command.error(f"unrecognized arguments: {' '.join(unknown)}")
    if not hasattr(args, "func"):
        parser.print_help()
        return EXIT_USAGE
    from ._common import WriteFailed
    from ._otel import OTEL_COMMANDS, OtelUnavailable, configure

    try:
        from .._sigint import release

        release()  # a Ctrl-C held while the CLI was imported: answered here, in one line
        if args.command in OTEL_COMMANDS:
            try:
                configure(args.command, args.otel)
            except OtelUnavailable as exc:
                print(f"agui-tools {args.command}: --otel: {exc}", file=sys.stderr)
                return EXIT_USAGE
        result: int = args.func(args)
        if sys.stdout is not None:
            sys.stdout.flush()  # a write that fails fails here, not at exit with a traceback
    except KeyboardInterrupt:  # past the command's own handling (its last words): still one line
        from ._common import interrupted

        if args.command == "run" and args.json:  # still one document on stdout
            from .run_cmd import INTERRUPTED, _print_json

            _print_json(None, INTERRUPTED, status="interrupted")
        return interrupted(args.command)
    except WriteFailed as exc:
        print(f"agui-tools {args.command}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:
        if exc.errno not in _WRITE_ERRNOS:
            raise
        # stdout on a full disk (`> /dev/full`): one line, not a traceback — and what is
        # still buffered for stdout must not fail again when Python flushes it at exit
        _stdout_to_null()
        where = f" {exc.filename}" if exc.filename else " standard output"
        print(
            f"agui-tools {args.command}: cannot write{where}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return result


_WRITE_ERRNOS: Final = frozenset(
    getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG", "EIO") if hasattr(errno, name)
)
"""The errors of a write that cannot be made (a full disk, a quota, a failing device)."""


def _subparser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    """The parser of ``command`` (the top-level one when there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            found: argparse.ArgumentParser = action.choices[command]
            return found
    return parser


def _reopen_closed_streams() -> None:
    """A standard stream the shell closed (``<&-``) becomes the null device, on its own fd:
    Python leaves ``sys.stdin`` ``None``, and a child process inherits a valid stream too.
    """
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        if getattr(sys, name) is not None:
            continue
        null = os.open(os.devnull, os.O_RDONLY if mode == "r" else os.O_WRONLY)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        setattr(sys, name, open(fd, mode, encoding="utf-8", closefd=False))  # noqa: SIM115


def _broken_pipe_raises(console: object) -> None:
    """rich answers a broken pipe itself — ``SystemExit(1)``, "a case failed" to a
    script — from wherever it printed: while a command runs it is a
    ``BrokenPipeError`` like any other write's, ended once, in :func:`main`."""
    raise BrokenPipeError


def _reader_gone() -> int:
    """stdout's reader went away (``| head -1``): stop quietly, exit 141 (128 + SIGPIPE).

    What is still buffered for stdout would fail again when Python flushes it
    at exit, with a second traceback: stdout is pointed at the null device first.
    """
    _stdout_to_null()
    return EXIT_BROKEN_PIPE


def _stdout_to_null() -> None:
    """stdout pointed at the null device: what is still buffered for it is dropped."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
