"""``agui-tools serve`` — serve an agent function (or the demo agent) over HTTP + SSE."""

from __future__ import annotations

import argparse
import importlib
import socket
import sys
from typing import Any

HELP = """\
Serve an agent over AG-UI's HTTP + SSE binding. AGENT is "module:function" — an
async function taking a Run (see docs/agent.md), importable from the current
directory — or omitted for the scripted demo agent.

On start it prints one line, "Serving AG-UI agent at URL", so scripts can find
the endpoint (with --port 0 a free port is chosen and printed).

Exit codes: 0 stopped cleanly, 2 bad usage (the agent cannot be imported, the
port is taken).
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="serve an agent function (default: the demo agent) at a POST endpoint",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "agent", nargs="?", metavar="AGENT", help='"module:function" (default: the demo agent)'
    )
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    p.add_argument(
        "--port", type=_port, default=8000, help="port (default 8000; 0 picks a free one)"
    )
    p.add_argument("--path", default="/agent", help="the POST endpoint's path (default /agent)")
    p.add_argument("--no-verify", action="store_true", help="do not verify emitted events (faster)")
    p.add_argument(
        "--limit-concurrency",
        type=int,
        default=1000,
        metavar="N",
        help="connections and requests served at once; more get 503 (default 1000, under the "
        "usual 1024 open files)",
    )
    p.add_argument(
        "--body-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="time a client has to send its whole request body; then 408 (default 30)",
    )
    p.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed to start runs (and answered CORS), besides the "
        "server's own; repeatable; '*' allows any",
    )
    p.set_defaults(func=run)


def _port(text: str) -> int:
    """A TCP port, 0–65535: judged while parsing, before "Serving …" is printed."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: use 0–65535 (0 picks a free one)")
    return port


def load_agent(spec: str) -> Any:
    """``module:function`` → the function; the current directory is importable."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f'expected "module:function", got {spec!r}')
    if "" not in sys.path:
        sys.path.insert(0, "")
    module = importlib.import_module(module_name)
    agent = getattr(module, attr, None)
    if agent is None or not callable(agent):
        raise ValueError(f"{module_name!r} has no callable {attr!r}")
    return agent


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from .._text import guarded_logger
    from ..demo.agent import demo_agent
    from ..transport._server import agent_app
    from .run_cmd import describe_exception

    try:
        agent = load_agent(args.agent) if args.agent else demo_agent()
    except Exception as exc:  # the module's own code runs here: any failure is bad usage
        print(
            f"agui-tools serve: cannot load the agent: {describe_exception(exc)}", file=sys.stderr
        )
        return 2
    port = args.port
    if port == 0:
        try:
            with socket.socket() as s:
                s.bind((args.host, 0))
                port = s.getsockname()[1]
        except OSError as exc:
            print(f"agui-tools serve: cannot bind {args.host}: {exc}", file=sys.stderr)
            return 2
    app = agent_app(
        agent,
        path=args.path,
        verify=not args.no_verify,
        allowed_origins=args.allow_origin,
        body_timeout=args.body_timeout,
        max_concurrency=args.limit_concurrency,
    )
    print(f"Serving AG-UI agent at http://{args.host}:{port}{args.path}", flush=True)
    try:
        config = uvicorn.Config(
            app,
            host=args.host,
            port=port,
            log_level="warning",
            lifespan="off",
            limit_concurrency=args.limit_concurrency,
        )
        # uvicorn's and asyncio's own lines are budgeted too: out of descriptors, a
        # server once wrote 66,842 "Too many open files" lines in a minute
        for name in ("uvicorn.error", "asyncio"):
            guarded_logger(name)
        uvicorn.Server(config).run()
    except (OSError, SystemExit) as exc:
        print(f"agui-tools serve: cannot serve on {args.host}:{port}: {exc}", file=sys.stderr)
        return 2
    return 0
