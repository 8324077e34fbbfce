"""``agui-tools inspect URL`` — a web page that drives any AG-UI agent, in your browser."""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import threading
import webbrowser
from collections.abc import Callable
from typing import Any

HELP = """\
Start a local web inspector for the AG-UI agent at URL and open it in the
browser: chat with the agent and watch its text stream in; see every tool call
as a card whose arguments fill in as they stream, are validated against the
tool's schema (errors at their JSON path), and ask for your consent (approve,
decline with a reason, or edit the arguments) when the tool has side effects;
follow every event of every run in a timeline, judged as it arrives — a
warning or a violation names its rule ID, linked to the rule's text; view the
thread's state and the exact next RunAgentInput; export each run's stream as
received (for `agui-tools verify`) and the thread as JSON.

--tools MODULE offers the frontend tools a Python module defines (as for
`agui-tools run`); without it, define mock tools in the page from a JSON
Schema and answer their calls yourself with a generated form.

The inspector listens on 127.0.0.1 only and refuses requests from any other
origin (Host and Origin checks and a per-session token).

Exit codes: 0 stopped (Ctrl-C), 2 bad usage (a bad URL, header, tools module,
or a port in use).
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "inspect",
        help="open a web inspector that drives the AG-UI agent at URL",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("url", metavar="URL")
    p.add_argument("--tools", metavar="MODULE", help="offer the frontend tools this module defines")
    add_web_flags(p)
    p.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an extra request header for the agent (repeatable)",
    )
    p.add_argument("--timeout", type=float, default=60.0, help="handler timeout in seconds")
    p.set_defaults(func=run)


def add_web_flags(p: argparse.ArgumentParser) -> None:
    """``--port``, ``--host``, ``--no-browser``: shared with ``demo --web``."""
    p.add_argument(
        "--port", type=int, default=0, help="the port to listen on (default: a free one)"
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1; anything else exposes the inspector)",
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a name the page may be reached by, besides localhost, IP addresses and --host "
        "('.example.com': every name under it); repeatable. Other names are refused: a "
        "DNS-rebinding page sends its own",
    )
    p.add_argument("--no-browser", action="store_true", help="print the URL, do not open it")


def parse_headers(raw: list[str]) -> dict[str, str] | str:
    """``-H 'Name: value'`` flags as a dict, or why one is not a header."""
    out: dict[str, str] = {}
    for item in raw:
        name, sep, value = item.partition(":")
        if not sep or not name.strip() or any(c in name for c in " \t\r\n"):
            return f"-H {item!r} is not a header: write it as 'Name: value'"
        if any(c in value for c in "\r\n"):
            return f"-H {item!r}: a header value cannot contain a line break"
        out[name.strip()] = value.strip()
    return out


def port_problem(host: str, port: int) -> str | None:
    if not port:
        return None
    if not 0 < port < 65536:
        return f"--port {port} is not a TCP port"
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family) as s:
            s.bind((host, port))
    except OSError as exc:
        return f"cannot listen on {host}:{port} ({exc.strerror or exc})"
    return None


def serve(
    make: Callable[[], Any],
    args: argparse.Namespace,
    command: str,
    agent: Callable[[], Any] | None = None,
) -> int:
    """Run an inspector built by ``make()`` until Ctrl-C (``agent()``: a context serving the agent)."""
    from ..ui.inspector import LOOPBACK, serve_inspector

    problem = port_problem(args.host, args.port)
    if problem is not None:
        print(f"agui-tools {command}: {problem}", file=sys.stderr)
        return 2
    if args.host not in LOOPBACK:
        print(
            f"agui-tools {command}: warning: listening on {args.host}, not loopback — anyone who "
            "can reach it and load the page can drive the agent",
            file=sys.stderr,
        )

    def ready(url: str) -> None:
        print(f"AG-UI inspector: {url}  (Ctrl-C stops it)", flush=True)
        if not args.no_browser:
            threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()

    async def main() -> None:
        if agent is None:
            await serve_inspector(
                make(), host=args.host, port=args.port, ready=ready, allowed_hosts=args.allow_host
            )
            return
        async with agent():
            await serve_inspector(
                make(), host=args.host, port=args.port, ready=ready, allowed_hosts=args.allow_host
            )

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        print(f"agui-tools {command}: stopped", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    from ..ui.inspector import Inspector
    from ._common import describe_exception
    from ._drive import check_url, load_tools

    problem = check_url(args.url)
    if problem is not None:
        print(f"agui-tools inspect: {problem}", file=sys.stderr)
        return 2
    headers = parse_headers(args.header)
    if isinstance(headers, str):
        print(f"agui-tools inspect: {headers}", file=sys.stderr)
        return 2
    failure: list[str] = []

    def register(session: Any) -> None:
        if args.tools:
            try:
                load_tools(session, args.tools)
            except Exception as exc:  # the module's own code runs here: any failure is bad usage
                failure.append(f"cannot load --tools {args.tools}: {describe_exception(exc)}")

    # built before anything listens, so a broken tools module is reported up front
    inspector = Inspector(args.url, headers=headers, register=register, timeout=args.timeout)
    if failure:
        print(f"agui-tools inspect: {failure[0]}", file=sys.stderr)
        return 2
    return serve(lambda: inspector, args, "inspect")
