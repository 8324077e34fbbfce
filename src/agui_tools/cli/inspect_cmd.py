"""``agui-tools inspect URL`` — a web page that drives any AG-UI agent, in your browser."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import tomllib
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._common import sqlite_file

if TYPE_CHECKING:
    from ..app._consent import Principal

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

Several agents: --agent NAME=URL (repeatable), or --agents FILE, a TOML or
JSON file of agents by name, each with a url and optional headers:

    [agents.local]
    url = "http://127.0.0.1:8000/agent"
    [agents.staging]
    url = "https://staging.example/agent"
    headers = { Authorization = "Bearer ..." }

The page switches between them, edits the URL and the headers (a bearer-token
field; header values are never shown, logged or put in a URL), stops a run,
starts a new thread, answers an agent's interrupts, imports a capture (judged
as `agui-tools verify` judges it) and re-sends an edited RunAgentInput.

--store FILE keeps each thread in a SQLite thread store (and the list of the
inspector's threads in FILE.inspector.json): `inspect` started again on the
same store resumes the thread it had open — its history shown, its pending
calls and open interrupts asked about again.

--resumable opts every run in to resumable runs (docs/resumable.md): a cut
connection is rejoined where it left off (each event shown once), and Stop asks
the agent to stop the run, which ends cancelled (shown as stopped); an agent
without the extension is read as usual.

The inspector listens on 127.0.0.1 only and refuses requests from any other
origin (Host and Origin checks and a per-session token).

Exit codes: 0 stopped (Ctrl-C), 2 bad usage (a bad URL, header, agents file,
store, tools module, or a port in use).
"""


def register(sub: Any) -> None:
    from ._drive import add_signing_option

    p = sub.add_parser(
        "inspect",
        help="open a web inspector that drives the AG-UI agent at URL",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("url", metavar="URL", nargs="?", help="the agent (or give --agent/--agents)")
    p.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="NAME=URL",
        help="a named agent the page can switch to (repeatable)",
    )
    p.add_argument(
        "--agents",
        metavar="FILE",
        help="a TOML or JSON file of agents: {agents: {NAME: {url, headers}}}",
    )
    p.add_argument(
        "--store",
        metavar="FILE",
        type=sqlite_file,
        help="keep each thread in this SQLite store; started again on it, inspect resumes",
    )
    p.add_argument("--tools", metavar="MODULE", help="offer the frontend tools this module defines")
    p.add_argument(
        "--principal",
        metavar="ID",
        help="record the page's decisions as ID's in the approval ledger (authenticated by "
        "the inspector's token)",
    )
    add_signing_option(p)
    p.add_argument(
        "--resumable",
        action="store_true",
        help="opt in to resumable runs (docs/resumable.md): a cut connection is rejoined, "
        "Stop asks the agent to stop the run",
    )
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
    """``-H 'Name: value'`` flags as a dict, or why one is not a header (judged as
    ``run`` judges them: :func:`~agui_tools.cli._http.header`)."""
    from ._http import header_items

    try:
        return header_items(raw)
    except ValueError as exc:
        return str(exc)


def port_problem(host: str, port: int) -> str | None:
    if not port:
        return None
    if not 0 < port < 65536:
        return f"--port {port} is not a TCP port"
    from .serve_cmd import _bind

    try:
        # bound as the server will bind it (SO_REUSEADDR): a port a stopped inspector left
        # in TIME_WAIT is free to listen on, and the probe must say so
        _bind(host, port).close()
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


def read_agents(args: argparse.Namespace, headers: dict[str, str]) -> dict[str, Any] | str:
    """The agents ``--agent`` and ``--agents`` name (name → :class:`Agent`), or why not."""
    from .._url import check_url
    from ..ui.inspector import Agent

    agents: dict[str, Any] = {}
    if args.agents:
        path = Path(args.agents)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            return f"cannot read --agents {args.agents}: {exc.strerror or exc}"
        try:
            data: Any = (
                json.loads(raw) if path.suffix.lower() == ".json" else tomllib.loads(raw.decode())
            )
        except (ValueError, UnicodeDecodeError) as exc:
            return f"--agents {args.agents} is not {'JSON' if path.suffix == '.json' else 'TOML'}: {exc}"
        table = data.get("agents") if isinstance(data, dict) else None
        if not isinstance(table, dict) or not table:
            return f"--agents {args.agents} names no agents (an 'agents' table of NAME = {{url = ...}})"
        for name, entry in table.items():
            url = entry.get("url") if isinstance(entry, dict) else entry
            extra = entry.get("headers", {}) if isinstance(entry, dict) else {}
            if not isinstance(url, str) or not isinstance(extra, dict):
                return (
                    f"--agents {args.agents}: agent {name!r} needs a url (and headers as a table)"
                )
            if any(not isinstance(v, str) or "\n" in v or "\r" in v for v in extra.values()):
                return f"--agents {args.agents}: the headers of {name!r} must be one-line text"
            agents[name] = Agent(name, url, {**headers, **{str(k): v for k, v in extra.items()}})
    for item in args.agent:
        name, sep, url = item.partition("=")
        if not sep or not name.strip() or not url.strip():
            return f"--agent {item!r} is not NAME=URL"
        agents[name.strip()] = Agent(name.strip(), url.strip(), dict(headers))
    for agent in agents.values():
        problem = check_url(agent.url)
        if problem is not None:
            return f"agent {agent.name!r}: {problem}"
    return agents


def run(args: argparse.Namespace) -> int:
    from .._url import check_url
    from ..ui.inspector import Inspector
    from ._common import describe_exception
    from ._drive import load_tools, signer_from

    if args.url is None and not args.agent and not args.agents:
        print(
            "agui-tools inspect: give the agent's URL (or --agent NAME=URL, --agents FILE)",
            file=sys.stderr,
        )
        return 2
    if args.url is not None:
        problem = check_url(args.url)
        if problem is not None:
            print(f"agui-tools inspect: {problem}", file=sys.stderr)
            return 2
    headers = parse_headers(args.header)
    if isinstance(headers, str):
        print(f"agui-tools inspect: {headers}", file=sys.stderr)
        return 2
    agents = read_agents(args, headers)
    if isinstance(agents, str):
        print(f"agui-tools inspect: {agents}", file=sys.stderr)
        return 2
    store = None
    if args.store is not None:
        from .._errors import JournalError
        from ..app._store_sqlite import SQLiteStore

        try:
            store = SQLiteStore(args.store)
        except JournalError as exc:
            print(f"agui-tools inspect: cannot open --store {args.store}: {exc}", file=sys.stderr)
            return 2
    failure: list[str] = []

    def register(session: Any) -> None:
        if args.tools:
            try:
                load_tools(session, args.tools)
            except Exception as exc:  # the module's own code runs here: any failure is bad usage
                failure.append(f"cannot load --tools {args.tools}: {describe_exception(exc)}")

    # built before anything listens, so a broken tools module is reported up front
    from .._errors import UsageError

    try:
        signer = signer_from(args.signing_key)
        inspector = Inspector(
            args.url,
            headers=headers,
            agents=agents,
            register=register,
            timeout=args.timeout,
            store=store,
            index=Path(f"{args.store}.inspector.json") if args.store is not None else None,
            principal=_principal(args.principal),
            signer=signer,
            resumable=args.resumable,
        )
    except UsageError as exc:
        print(f"agui-tools inspect: {exc}", file=sys.stderr)
        return 2
    if failure:
        print(f"agui-tools inspect: {failure[0]}", file=sys.stderr)
        return 2
    return serve(lambda: inspector, args, "inspect")


def _principal(principal_id: str | None) -> Principal | None:
    """``--principal``: the page's decisions are ID's, known by the request's token (only
    whoever holds the inspector's token can decide on its page)."""
    from ..app._consent import Principal

    return (
        None
        if principal_id is None
        else Principal(principal_id, authenticated_by="inspector-token")
    )
