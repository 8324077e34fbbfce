"""``agui-tools run URL PROMPT`` — drive any AG-UI agent from this terminal."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from .._text import one_line, terminal_json
from ._common import interrupted
from ._drive import Driver, add_drive_options, prepare

if TYPE_CHECKING:
    from ..app._conversation import RunResult
    from ..transport._session import Interrupt, Resolution

HELP = """\
Send PROMPT to the AG-UI agent at URL and carry the conversation until the
agent leaves nothing pending, with the same terminal UI as the demo: streamed
text, tool-call cards with argument previews, consent prompts for
side-effectful calls ("→ approved / declined" after each), a spinner with the
elapsed time while a tool runs, a summary of the thread.

--tools MODULE loads the frontend tools you offer the agent from a Python
module importable from the current directory: either a function
register(session) that registers them (session.tool(...) — see
docs/transport.md), or a list TOOLS of typed, documented functions (read-only)
— a (function, {"side_effects": True}) pair marks one as side-effectful.

Consent is asked on the terminal; --yes, --decline or --script FILE answer it
non-interactively (see `agui-tools demo --help` for the script format). At the
end of input (Ctrl-D, stdin at end of file) a pending call is declined, and
the answer says nobody decided.

--resumable opts in to resumable runs (docs/resumable.md): when the agent
confirms, a dropped connection is rejoined where it left off (each event
shown once), and Ctrl-C asks the agent to stop the run — it ends cancelled —
instead of only hanging up.

--save FILE writes the raw event streams as they arrive, one run after
another (SSE, or the binary frames with --proto): `agui-tools verify FILE`
judges them. --json prints the outcome as
one JSON document on stdout (the terminal UI then goes to stderr).

An AG-UI interrupt (the run stops to ask) shows as a card — reason, message,
the call it names with its arguments, the answer's schema — and is answered:
[a]pprove, [r]esolve with a JSON payload (validated against the schema), or
[c]ancel with a reason; --yes approves, --decline cancels, a --script line
answers (edit {json} gives the payload). At the end of input it is cancelled.

Exit codes: 0 the agent finished with nothing pending, 1 the run ended in an
error, was cancelled, truncated or rejected, 2 bad usage or an unreachable
agent, 130 interrupted (Ctrl-C).
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="drive an AG-UI agent at URL with PROMPT, with local frontend tools",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("url", metavar="URL")
    p.add_argument("prompt", metavar="PROMPT")
    add_drive_options(p, save_help="write the raw event streams to FILE as they arrive")
    p.add_argument(
        "--json",
        action="store_true",
        help="print the outcome as one JSON document on stdout (the UI goes to stderr)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    if not args.prompt.strip():
        print(
            "agui-tools run: PROMPT is empty; say what the agent should do (an empty message "
            "is not sent)",
            file=sys.stderr,
        )
        return 2
    try:
        args.prompt.encode("utf-8")
    except UnicodeEncodeError:  # argv bytes that are not UTF-8 (surrogate-escaped by Python)
        print(
            "agui-tools run: PROMPT is not UTF-8 text (the terminal or the script passed "
            "other bytes); a message is JSON text [TRANS-4]: nothing was sent",
            file=sys.stderr,
        )
        return 2
    # with --json, stdout carries the document alone
    try:
        driver = prepare(args, "run", Console(highlight=False, stderr=args.json))
    except KeyboardInterrupt:  # Ctrl-C before anything was sent: still one document
        if args.json:
            _print_json(None, INTERRUPTED, status="interrupted")
        return interrupted("run", journal=args.journal)
    if isinstance(driver, int):
        return driver
    try:
        return _run(driver)
    except KeyboardInterrupt:  # between the steps _run answers itself (closing, printing)
        if args.json:
            _print_json(driver, INTERRUPTED, status="interrupted")
        return interrupted("run", journal=args.journal, stop=driver.stop_said)
    finally:
        driver.close()


def _run(driver: Driver) -> int:
    import asyncio

    from .._errors import ProtocolViolation, UsageError
    from ..app._runs import describe_run
    from ..demo.app import ScriptError
    from ..transport._client import TransportError
    from ..transport._session import Resolution
    from ._http import describe_transport_error

    args, ui, session = driver.args, driver.ui, driver.session
    driver.resumed = _recording(driver, Resolution)

    async def main() -> RunResult:
        try:
            return await driver.stopping_on_cancel(
                session.send(args.prompt, on_update=ui.on_update)
            )
        finally:
            await driver.aclose()

    problem: str | None = None
    try:
        result: RunResult | None = asyncio.run(main())
    except KeyboardInterrupt:
        ui.finish_run()
        if args.json:  # what was received, and that it was cut short: still one document
            _print_json(driver, INTERRUPTED, status="interrupted")
        return interrupted("run", journal=args.journal, stop=driver.stop_said)
    except ScriptError as exc:
        print(one_line(f"agui-tools run: --script {args.script}, {exc}"), file=sys.stderr)
        return 2
    except UsageError as exc:  # an answer refused before it was sent (an interrupt expired)
        ui.finish_run()
        print(one_line(f"agui-tools run: nothing was sent: {exc}"), file=sys.stderr)
        if args.json:
            _print_json(driver, f"nothing was sent: {exc}")
        return 1
    except TransportError as exc:
        ui.finish_run()
        print(
            one_line(f"agui-tools run: {describe_transport_error(exc, args.url)}"),
            file=sys.stderr,
        )
        if not exc.truncated:  # never reached, or refused before any stream: exit 2
            return 2
        result, problem = None, str(exc)
    except ProtocolViolation as exc:
        ui.finish_run()
        print(
            one_line(f"agui-tools run: the agent's stream was rejected: {exc}"),
            file=sys.stderr,
        )
        result, problem = None, f"the agent's stream was rejected: {exc}"
    ui.finish_run()
    conversation = session.conversation
    if conversation is not None and result is not None:
        ui.summary(conversation.messages)
    if result is not None and result.status != "success":
        problem = describe_run(result)
        print(one_line(f"agui-tools run: {problem}"), file=sys.stderr)
    if args.json:
        _print_json(driver, problem)
    return 0 if problem is None else 1


INTERRUPTED = "interrupted (Ctrl-C) before the agent finished"


def _recording(driver: Driver, resolution: type[Resolution]) -> list[dict[str, Any]]:
    """Every resume entry the interrupt handler answers with, in order (for ``--json``)."""
    entries: list[dict[str, Any]] = []
    handler = driver.session.on_interrupt
    assert handler is not None

    def record(interrupt: Interrupt) -> Any:
        answer = handler(interrupt)
        assert isinstance(answer, resolution)  # the terminal's handler answers directly
        entries.append(answer.entry(interrupt.id))
        return answer

    driver.session.on_interrupt = record
    return entries


def _print_json(driver: Driver | None, problem: str | None, *, status: str | None = None) -> None:
    """The outcome for a script: the runs, the thread, the state, what went wrong
    (``driver`` ``None``: interrupted before the session existed — nothing was sent)."""
    import orjson

    conversation = driver.session.conversation if driver is not None else None
    runs = conversation.runs if conversation is not None else []
    document = {
        "status": status or (runs[-1].status if runs else "truncated"),
        "threadId": conversation.thread_id if conversation is not None else None,
        "runs": [
            {
                "runId": r.run_id,
                "status": r.status,
                "pending": [c.call_id for c in r.pending],
                "interrupts": r.interrupts,
                "error": r.error,
            }
            for r in runs
        ],
        "messages": conversation.messages if conversation is not None else [],
        "resumed": driver.resumed if driver is not None else [],
        "state": conversation.state if conversation is not None else None,
        "error": problem,
    }
    sys.stdout.buffer.write(
        terminal_json(orjson.dumps(document, option=orjson.OPT_INDENT_2)) + b"\n"
    )
    sys.stdout.flush()
