"""What the commands share beyond HTTP: the interrupt exit, ``--journal``, user-code errors.

Ctrl-C ends any command with one line on stderr and exit code 130 (128 +
SIGINT, the shell's convention) — never a traceback; what was recorded before
it (``--journal``, ``--save``) stays recorded.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING, Final

from .._text import cut, one_line, shown  # the CLI's spelling of them: defined with the other text

if TYPE_CHECKING:
    from ..app._journal import Journal

__all__ = [
    "EXIT_INTERRUPTED",
    "add_journal_option",
    "cut",
    "describe_exception",
    "interrupted",
    "open_journal",
    "shown",
]

EXIT_INTERRUPTED: Final = 130


class WriteFailed(Exception):
    """A file the command writes (``--save``) could not be written: said in one line
    by :func:`agui_tools.cli.main`, exit 1 — what was written before is kept."""


def interrupted(command: str, *, journal: str | None = None, stop: str = "") -> int:
    """Say, in one line, that Ctrl-C ended ``command``; the exit code to return.
    ``stop``: what became of the stop request a resumable run was sent (RESUME-6)."""
    kept = f"; what was decided and run is in {journal}" if journal else ""
    stopped = f"; {one_line(stop)}" if stop else ""
    # on a terminal, over the "^C" it echoed: the line reads whole
    start = "\r" if sys.stderr.isatty() else ""
    print(f"{start}agui-tools {command}: interrupted{stopped}{kept}", file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED


def add_journal_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--journal",
        metavar="FILE",
        type=sqlite_file,
        help="record consent decisions, tool intents and answers in this SQLite file "
        "(default: in memory) — a call it records as executed is never run again",
    )


def open_journal(args: argparse.Namespace, command: str) -> tuple[bool, Journal | None]:
    """``(ok, journal)``: the ``--journal`` file opened, or ``ok`` false after saying why."""
    if not args.journal:
        return True, None
    from .._errors import JournalError
    from ..app._journal import SQLiteJournal

    try:
        return True, SQLiteJournal(args.journal)
    except (JournalError, OSError) as exc:
        print(f"agui-tools {command}: cannot open --journal {args.journal}: {exc}", file=sys.stderr)
        return False, None


def describe_exception(exc: BaseException) -> str:
    """One line for an exception raised while importing user code (no traceback): its
    words first, the exception's class after them (a line starts with what happened,
    not with a Python class name).

    A syntax error names its file and line, which is what the user must fix.
    """
    if isinstance(exc, SyntaxError):
        where = f" in {exc.filename}, line {exc.lineno}" if exc.filename else ""
        return f"{exc.msg} (SyntaxError{where})"
    # a driver's message may hold a hint on lines of its own; any other control is escaped
    text = one_line(" ".join(str(exc).split()))
    return f"{text} ({type(exc).__name__})" if text else type(exc).__name__


_UNITS: Final = {"": 1, "B": 1, "KIB": 1024, "MIB": 1024**2, "GIB": 1024**3}


def positive_bytes(text: str) -> int:
    """A byte-count flag: a whole number, optionally in KiB, MiB or GiB (``8MiB``)."""
    number = text.strip().rstrip("bBiIkKmMgG ")
    unit = text.strip()[len(number) :].strip().upper()
    if not number.isdigit() or unit not in _UNITS:
        raise argparse.ArgumentTypeError(
            f"{shown(text)} is not a number of bytes (a whole number, or with KiB, MiB, GiB)"
        )
    value = int(number) * _UNITS[unit]
    if value <= 0:
        raise argparse.ArgumentTypeError(f"a byte count must be positive, not {shown(text)}")
    return value


_CONNINFO: Final = re.compile(r"\s*(?:\w+\s*=\s*(?:'(?:[^'\\]|\\.)*'|[^\s']+)\s*)+")
"""libpq's keyword/value form: ``host=db dbname=app options='-c x=y'``."""
_LIBPQ_FIRST: Final = re.compile(
    r"\s*(?:host|hostaddr|port|dbname|user|password|passfile|service|options|sslmode"
    r"|connect_timeout|application_name)\s*="
)
"""A keyword libpq knows, first: ``a=b.db`` is a file's name, not a connection string."""


def is_postgres(text: str) -> bool:
    """Whether a store or run-log argument is a PostgreSQL connection string (a URI, or
    libpq's keyword/value form) rather than a SQLite file's path."""
    if text.startswith(("postgres://", "postgresql://")):
        return True
    return bool(_LIBPQ_FIRST.match(text) and _CONNINFO.fullmatch(text))


def sqlite_file(text: str) -> str:
    """A ``--store``/``--journal`` path: a SQLite file. A PostgreSQL connection string is
    refused by name, never repeated (it may hold a password) nor read as a folder."""
    if is_postgres(text):
        raise argparse.ArgumentTypeError(
            "that is a PostgreSQL connection string; this flag takes a SQLite file "
            "(a PostgreSQL store is an application's: docs/deployment.md)"
        )
    return text
