"""``agui-tools demo`` — the whole tool-call loop, offline, in this terminal."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ._answers import add_answer_flags, flag_answers, stdin_lines
from ._common import add_journal_option, interrupted, open_journal
from .inspect_cmd import add_web_flags

HELP = """\
Start the scripted demo agent on a free loopback port and a terminal
application against it, and walk the whole loop of the protocol's Tool Calls
page: text streaming; an agent-side tool answered in-stream; parallel frontend
calls answered together; a card whose arguments fill in; a call whose
arguments fail the tool's schema (answered with an error the agent reacts to);
a side-effectful call that asks for your consent (approve / decline / edit);
a tool the application never advertised (refused, and explained); and a
refund of the agent's own that waits on your approval through an interrupt
(resolved: issued; cancelled: not) — its card answered like any prompt.

Consent: asked on the terminal by default. --yes approves everything,
--decline declines everything, --script FILE answers from a file, one line per
prompt: "approve", "decline [reason]" or "edit {json}". With no flag and no
terminal on stdin, answers are read from stdin the same way; when they run
out, the remaining calls are declined, and the answers say nobody decided.

--web runs the same demo in a browser page instead (the `agui-tools inspect`
page, with the demo's tools): it prints the page's URL and opens it unless
--no-browser; consent is then given in the page.

Exit codes: 0 the demo ran to the end (or --web was stopped with Ctrl-C),
1 it stopped early, 2 bad usage, 130 interrupted (Ctrl-C).
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
    add_journal_option(p)
    p.add_argument("--web", action="store_true", help="run the demo in a browser page")
    add_web_flags(p)
    p.add_argument(
        "--proto",
        action="store_true",
        help="run over the binary binding (HTTP + protobuf) instead of SSE",
    )
    p.add_argument(
        "--store",
        metavar="FILE",
        type=Path,
        help="keep the demo's thread in this SQLite file (default: a temporary one)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from .._errors import StoreError
    from ..demo.app import ScriptError, run_demo, scripted

    if args.web:
        return run_web(args)
    web_only = [
        flag
        for flag, given in (
            (f"--port {args.port}", args.port != 0),
            (f"--host {args.host}", args.host != "127.0.0.1"),
            ("--no-browser", args.no_browser),
        )
        if given
    ]
    if web_only:  # silently ignored, they would leave the user waiting for a page
        print(
            f"agui-tools demo: {', '.join(web_only)} is for the browser page: add --web "
            f"(agui-tools demo --web {' '.join(web_only)})",
            file=sys.stderr,
        )
        return 2
    ok, decide = flag_answers(args, "demo")
    if not ok:
        return 2
    if decide is None and not sys.stdin.isatty():
        decide = scripted(stdin_lines(sys.stdin), exhausted="standard input ended")
    if args.journal and args.store:
        print(
            "agui-tools demo: give --store FILE (the whole thread) or --journal FILE "
            "(decisions and answers only), not both",
            file=sys.stderr,
        )
        return 2
    ok, journal = open_journal(args, "demo")
    if not ok:
        return 2
    try:
        conversation, result = asyncio.run(
            run_demo(
                decide=decide,
                fast=args.fast,
                journal=journal,
                transport="proto" if args.proto else "sse",
                store=args.store,
            )
        )
    except KeyboardInterrupt:
        return interrupted("demo", journal=args.journal)
    except ScriptError as exc:  # an answer read from stdin as its prompt came
        print(f"agui-tools demo: the consent answers on stdin, {exc}", file=sys.stderr)
        return 2
    except UnicodeDecodeError as exc:
        print(
            f"agui-tools demo: the consent answers on stdin are not UTF-8 text (byte {exc.start})",
            file=sys.stderr,
        )
        return 2
    except StoreError as exc:  # --store names a file that cannot hold the thread
        print(f"agui-tools demo: {exc}", file=sys.stderr)
        return 1
    if args.store is not None:
        print(f"the thread is kept in {args.store} as {conversation.thread_id!r}")
    return 0 if result.status == "success" else 1


def run_web(args: argparse.Namespace) -> int:
    """``demo --web``: the demo agent on loopback, and the inspector page in front of it."""
    from ..demo.app import web_demo
    from .inspect_cmd import serve

    if args.yes or args.decline or args.script:
        print("agui-tools demo: --web asks for consent in the page", file=sys.stderr)
        return 2
    agent, make = web_demo(fast=args.fast)
    return serve(make, args, "demo", agent=agent)
