"""``agui-tools run URL PROMPT`` — drive any AG-UI agent from this terminal."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from ._answers import add_answer_flags

HELP = """\
Send PROMPT to the AG-UI agent at URL and carry the conversation until the
agent leaves nothing pending, with the same terminal UI as the demo: streamed
text, tool-call cards with argument previews, consent prompts for
side-effectful calls, a summary of the thread.

--tools MODULE loads the frontend tools you offer the agent from a Python
module importable from the current directory: either a function
register(session) that registers them (session.tool(...) — see
docs/transport.md), or a list TOOLS of typed, documented functions (read-only)
— a (function, {"side_effects": True}) pair marks one as side-effectful.

Consent is asked on the terminal; --yes, --decline or --script FILE answer it
non-interactively (see `agui-tools demo --help` for the script format).

Exit codes: 0 the agent finished with nothing pending, 1 the run ended in an
error, was cancelled, truncated or rejected, 2 bad usage or an unreachable
agent.
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
    p.add_argument("--tools", metavar="MODULE", help="offer the frontend tools this module defines")
    add_answer_flags(p)
    p.add_argument("--timeout", type=float, default=60.0, help="handler timeout in seconds")
    p.add_argument(
        "--proto",
        action="store_true",
        help="ask for the binary binding (HTTP + protobuf); SSE is still read if the agent "
        "answers with it",
    )
    p.set_defaults(func=run)


def describe_exception(exc: BaseException) -> str:
    """One line for an exception raised while importing user code (no traceback).

    A syntax error names its file and line, which is what the user must fix.
    """
    if isinstance(exc, SyntaxError):
        where = f" ({exc.filename}, line {exc.lineno})" if exc.filename else ""
        return f"SyntaxError: {exc.msg}{where}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def load_tools(session: Any, module_name: str) -> None:
    from ..transport._session import tool_spec_from_function

    if "" not in sys.path:
        sys.path.insert(0, "")
    module = importlib.import_module(module_name)
    if callable(getattr(module, "register", None)):
        module.register(session)
        return
    tools = getattr(module, "TOOLS", None)
    if not isinstance(tools, (list, tuple)):
        raise ValueError(f"{module_name!r} defines neither register(session) nor a TOOLS list")
    for entry in tools:
        fn, options = entry if isinstance(entry, tuple) else (entry, {})
        spec, handler = tool_spec_from_function(fn, **options)
        session.add_tool(spec, handler)


def check_url(url: str) -> str | None:
    """Why ``url`` cannot be an agent endpoint (``None`` when it can).

    Checked before anything starts: httpx only parses the URL when the request
    is sent, and its ``InvalidURL`` is not a transport error.
    """
    import httpx

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        return f"{url!r} is not a valid URL ({exc})"
    if parsed.scheme not in ("http", "https") or not parsed.host:
        return f"{url!r} is not an http:// or https:// URL with a host"
    return None


def run(args: argparse.Namespace) -> int:
    import asyncio

    from rich.console import Console

    from .._errors import ProtocolViolation
    from ..app._calls import PendingCall
    from ..demo.app import ScriptError
    from ..transport._client import AgentClient, TransportError
    from ..transport._session import Approval, Session
    from ..ui.terminal import TerminalUI
    from ._answers import flag_answers

    problem = check_url(args.url)
    if problem is not None:
        print(f"agui-tools run: {problem}", file=sys.stderr)
        return 2
    console = Console(highlight=False)
    ui = TerminalUI(console)
    ok, decide = flag_answers(args, "run")
    if not ok:
        return 2

    def ask(call: PendingCall) -> Approval:
        if decide is None:
            return ui.ask(call)
        ui.show_consent(call)
        answer: Approval = decide(call)
        return answer

    client = AgentClient(args.url, transport="proto" if args.proto else "sse")
    session = Session(client, ask=ask, timeout=args.timeout)
    if args.tools:
        try:
            load_tools(session, args.tools)
        except Exception as exc:  # the module's own code runs here: any failure is bad usage
            print(
                f"agui-tools run: cannot load --tools {args.tools}: {describe_exception(exc)}",
                file=sys.stderr,
            )
            return 2

    async def main() -> Any:
        try:
            return await session.send(args.prompt, on_update=ui.on_update)
        finally:
            await session.client.aclose()

    try:
        result = asyncio.run(main())
    except ScriptError as exc:
        print(f"agui-tools run: --script {args.script}, {exc}", file=sys.stderr)
        return 2
    except TransportError as exc:
        if exc.truncated:  # the run started and broke off: it did not end in success
            ui.finish_run()
            print(f"agui-tools run: {exc}", file=sys.stderr)
            return 1
        print(f"agui-tools run: {exc}", file=sys.stderr)
        return 2
    except ProtocolViolation as exc:
        ui.finish_run()
        print(f"agui-tools run: the agent's stream was rejected: {exc}", file=sys.stderr)
        return 1
    ui.finish_run()
    if session.conversation is not None:
        ui.summary(session.conversation.messages)
    if result.status != "success":
        print(f"agui-tools run: the run ended {result.status}", file=sys.stderr)
        return 1
    return 0
