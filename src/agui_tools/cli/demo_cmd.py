"""``agui-tools demo`` — the whole tool-call loop, offline, in this terminal."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..demo.app import Decider

HELP = """\
Start the scripted demo agent on a free loopback port and a terminal
application against it, and walk the whole loop of the protocol's Tool Calls
page: text streaming; an agent-side tool answered in-stream; parallel frontend
calls answered together; a card whose arguments fill in; a call whose
arguments fail the tool's schema (answered with an error the agent reacts to);
a side-effectful call that asks for your consent (approve / decline / edit);
and a tool the application never advertised (refused, and explained).

Consent: asked on the terminal by default. --yes approves everything,
--decline declines everything, --script FILE answers from a file, one line per
prompt: "approve", "decline [reason]" or "edit {json}". With no flag and no
terminal on stdin, answers are read from stdin the same way.

Exit codes: 0 the demo ran to the end, 1 it stopped early, 2 bad usage.
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help="run the end-to-end demo: an agent proposes, this terminal disposes",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_answer_flags(p)
    p.add_argument("--fast", action="store_true", help="stream without the human-pace pauses")
    p.set_defaults(func=run)


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
    from ..session import Approval

    if args.yes:
        return True, lambda call: Approval.approve()
    if args.decline:
        return True, lambda call: Approval.decline("declined with --decline")
    if args.script:
        lines = read_script(args.script, command)
        return (False, None) if lines is None else (True, scripted(iter(lines)))
    return True, None


def _lines(source: Any) -> Iterator[str]:
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


def run(args: argparse.Namespace) -> int:
    from ..demo.app import ScriptError, run_demo, scripted

    ok, decide = flag_answers(args, "demo")
    if not ok:
        return 2
    if decide is None and not sys.stdin.isatty():
        decide = scripted(_lines(sys.stdin))
    try:
        _, result = asyncio.run(run_demo(decide=decide, fast=args.fast))
    except KeyboardInterrupt:
        print("\ndemo interrupted", file=sys.stderr)
        return 1
    except ScriptError as exc:  # an answer read from stdin as its prompt came
        print(f"agui-tools demo: the consent answers on stdin, {exc}", file=sys.stderr)
        return 2
    except UnicodeDecodeError as exc:
        print(
            f"agui-tools demo: the consent answers on stdin are not UTF-8 text (byte {exc.start})",
            file=sys.stderr,
        )
        return 2
    return 0 if result.status == "success" else 1
