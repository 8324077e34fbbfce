"""The consent-answer flags ``demo`` and ``run`` share: ``--yes``, ``--decline``, ``--script FILE``.

Unattended consent, decided before anything starts: a bad ``--script`` is bad
usage (exit 2) reported up front, never a surprise at the first prompt.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..demo.app import Decider

__all__ = ["add_answer_flags", "flag_answers", "read_script", "stdin_lines"]


def add_answer_flags(parser: argparse.ArgumentParser) -> None:
    """``--yes`` / ``--decline`` / ``--script FILE``: consent answered unattended."""
    answers = parser.add_mutually_exclusive_group()
    answers.add_argument("--yes", action="store_true", help="approve every consent prompt")
    answers.add_argument("--decline", action="store_true", help="decline every consent prompt")
    answers.add_argument("--script", metavar="FILE", help="answer consent prompts from FILE")


def flag_answers(args: argparse.Namespace, command: str) -> tuple[bool, Decider | None]:
    """What the answer flags decide: ``(ok, decide)``.

    ``decide`` is ``None`` when no flag was given (the terminal asks); ``ok`` is
    false when ``--script`` is bad usage, already reported (exit 2).
    """
    from ..demo.app import scripted
    from ..transport._session import Approval

    if args.yes:
        return True, lambda call: Approval.approve()
    if args.decline:
        return True, lambda call: Approval.decline("declined with --decline")
    if args.script:
        lines = read_script(args.script, command)
        return (False, None) if lines is None else (True, scripted(iter(lines)))
    return True, None


def stdin_lines(source: Any) -> Iterator[str]:
    for line in source:
        if line.strip() and not line.lstrip().startswith("#"):
            yield line


def read_script(path: str, command: str) -> list[str] | None:
    """The validated answer lines of ``--script`` FILE, or ``None`` after saying why not.

    Shared by ``demo`` and ``run``: an unreadable, non-UTF-8 or malformed script
    is bad usage (exit 2), reported before anything starts.
    """
    from ..demo.app import ScriptError, load_script

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        print(
            f"agui-tools {command}: cannot read --script {path}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return None
    except UnicodeDecodeError as exc:
        print(
            f"agui-tools {command}: --script {path} is not UTF-8 text (byte {exc.start}); it "
            "holds one answer per line: approve, decline [reason] or edit {json}",
            file=sys.stderr,
        )
        return None
    try:
        return load_script(text.splitlines())
    except ScriptError as exc:
        print(f"agui-tools {command}: --script {path}, {exc}", file=sys.stderr)
        return None
