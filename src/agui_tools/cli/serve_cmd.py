"""``agui-tools serve`` — serve an agent function (or the demo agent) over HTTP + SSE."""

from __future__ import annotations

import argparse
import gc
import importlib
import inspect
import logging
import math
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from ._common import is_postgres, positive_bytes

HELP = """\
Serve an agent over AG-UI's HTTP + SSE binding. AGENT is "module:function" — an
async function taking a Run (see docs/agent.md), importable from the current
directory — or omitted for the scripted demo agent.

The port is bound first; then it prints one line on stdout, "Serving AG-UI
agent at URL", so scripts can find the endpoint — and connect at once (with
--port 0 a free port is chosen and printed). Logs go to stderr: --log-level
sets how much (warnings by default), --access-log adds one line per request.

AGENT is the agent function, not an application: an ASGI app (FastAPI,
Starlette, what agent_app() returns) is refused — pass the function it serves.

Exit codes: 0 stopped cleanly (Ctrl-C), 2 bad usage (the agent cannot be
imported, is not an async function or is an ASGI application, the path does
not start with "/", the port is taken).
"""

LOG_LEVELS: Final = ("critical", "error", "warning", "info", "debug")
LOOPS: Final = ("asyncio", "uvloop", "auto")
"""The event loops ``serve`` may run on. ``asyncio`` is the default: under a descriptor
flood uvloop closes connections the front answers 408 on asyncio, so the hardened
front's promises hold on asyncio only. ``uvloop`` (a dependency, except on Windows)
writes each event for less CPU; ``auto`` is uvloop where installed."""


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
    add_listen_options(p, port=8000)
    p.add_argument(
        "--path", type=_path, default="/agent", help="the POST endpoint's path (default /agent)"
    )
    p.add_argument("--no-verify", action="store_true", help="do not verify emitted events (faster)")
    p.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="warning",
        help="how much the server logs on stderr (default warning; info adds disconnects and "
        "stripped input members)",
    )
    p.add_argument("--access-log", action="store_true", help="log one line per request on stderr")
    p.add_argument(
        "--loop",
        choices=LOOPS,
        default="asyncio",
        help="the event loop (default asyncio); uvloop costs less CPU per event but does not "
        "keep the front's descriptor-flood answers (docs/performance.md)",
    )
    p.add_argument(
        "--shutdown-grace",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="on SIGTERM/SIGINT: stop accepting, let runs in flight finish this long, then end "
        "them with RUN_ERROR (default 30)",
    )
    p.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed to start runs (and answered CORS), besides the "
        "server's own; repeatable; '*' allows any",
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a name (Host) clients reach the server by, besides localhost and IP addresses "
        "(and --host); '.example.com' allows every name under it, '*' any; repeatable. "
        "Other names are refused: a DNS-rebinding page sends its own",
    )
    add_resumable_options(p)
    p.set_defaults(func=run)


def add_resumable_options(p: argparse.ArgumentParser) -> None:
    """--resumable and its run log, retention, lease and cap (docs/resumable.md)."""
    p.add_argument(
        "--resumable",
        action="store_true",
        help="serve the resumable binding to clients that opt in (Agui-Resumable: 1): "
        "runs survive their connection, are rejoined and stopped (docs/resumable.md)",
    )
    p.add_argument(
        "--retention",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="with --resumable: how long a finished run's log is kept (default 300)",
    )
    p.add_argument(
        "--run-log",
        default=None,
        metavar="WHERE",
        help="with --resumable: where runs' events are kept: a SQLite file's path, or a "
        "PostgreSQL connection string shared by replicas (default: this process's memory)",
    )
    p.add_argument(
        "--lease",
        type=_lease,
        default=None,
        metavar="SECONDS",
        help="with --resumable: a run whose worker is silent this long is closed "
        "WORKER_DIED by any replica (default 10, at least 0.1)",
    )
    p.add_argument(
        "--max-run-bytes",
        type=positive_bytes,
        default=None,
        metavar="BYTES",
        help="with --resumable: the most one run may log (its events' JSON; e.g. 256MiB); "
        "a run reaching it is stopped and ends RUN_ERROR RUN_LOG_LIMIT (default 64MiB)",
    )


def resumable_option(args: argparse.Namespace, command: str) -> Any:
    """The :class:`~agui_tools.transport.Resumable` the flags ask for, ``None`` without
    --resumable, or ``False`` once an error line was printed."""
    from .._text import shown as shown_text
    from ..app._run_log import MemoryRunLog, RunLog
    from ..app._run_log_sql import PostgresRunLog, SQLiteRunLog
    from ..transport._resumable import Resumable
    from ._common import describe_exception

    given = [
        f
        for f in ("retention", "run_log", "lease", "max_run_bytes")
        if getattr(args, f) is not None
    ]
    if not args.resumable:
        if given:
            flag = "--" + given[0].replace("_", "-")
            print(f"agui-tools {command}: {flag} needs --resumable", file=sys.stderr)
            return False
        return None
    where = args.run_log
    postgres = where is not None and is_postgres(where)
    log: RunLog
    try:
        if where is None:
            log = MemoryRunLog()
        elif postgres:
            log = PostgresRunLog(where)
        else:
            log = SQLiteRunLog(where)
    except Exception as exc:
        # a connection string may hold a password: only a file's path is repeated
        named = "in PostgreSQL" if postgres else shown_text(where or "")
        reason = describe_exception(exc)
        print(f"agui-tools {command}: cannot open the run log {named}: {reason}", file=sys.stderr)
        return False
    options: dict[str, Any] = {}
    if args.retention is not None:
        options["retention"] = args.retention
    if args.lease is not None:
        options["lease"] = args.lease
    if args.max_run_bytes is not None:
        options["max_run_bytes"] = args.max_run_bytes
    return Resumable(log=log, **options)


def add_listen_options(p: argparse.ArgumentParser, *, port: int) -> None:
    """--host and --port (bound by :func:`listening`), and the limits of the HTTP front
    (:mod:`agui_tools.transport._front`), as every command that serves has them."""
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    p.add_argument(
        "--port", type=_port, default=port, help=f"port (default {port}; 0 picks a free one)"
    )
    p.add_argument(
        "--limit-concurrency",
        type=_at_least_one,
        default=1000,
        metavar="N",
        help="connections and requests served at once; more get 503 (default 1000, under the "
        "usual 1024 open files)",
    )
    p.add_argument(
        "--body-timeout",
        type=_seconds,
        default=30.0,
        metavar="SECONDS",
        help="time a client has to send its whole request body; then 408 (default 30)",
    )
    p.add_argument(
        "--header-timeout",
        type=_seconds,
        default=10.0,
        metavar="SECONDS",
        help="time a connection has to send a complete request head; then 408 and closed "
        "(default 10)",
    )
    p.add_argument(
        "--send-timeout",
        type=_seconds,
        default=30.0,
        metavar="SECONDS",
        help="time a client may read nothing while the response waits; then the connection is "
        "aborted (default 30)",
    )


def _path(text: str) -> str:
    """The endpoint path: judged while parsing, before anything is bound or printed."""
    if not text.startswith("/"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a path: it must start with '/'")
    if any(c.isspace() or c in "?#" for c in text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a path: no spaces, '?' or '#' (it is matched literally)"
        )
    return text


def _at_least_one(text: str) -> int:
    """A count of at least 1 (a cap of 0 would refuse everyone): judged while parsing."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"{count} is not a limit: use 1 or more")
    return count


def _seconds(text: str) -> float:
    """A time limit in seconds, finite and above 0: judged while parsing."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(seconds) and seconds > 0):
        raise argparse.ArgumentTypeError(f"{text} is not a time limit: use seconds above 0")
    return seconds


def _lease(text: str) -> float:
    """--lease: seconds, no shorter than the binding's minimum (a tiny lease spins the
    keeper that renews it)."""
    from ..transport._resumable import MIN_LEASE

    seconds = _seconds(text)
    if seconds < MIN_LEASE:
        raise argparse.ArgumentTypeError(
            f"{text} is shorter than the shortest lease, {MIN_LEASE:g} seconds"
        )
    return seconds


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
    if _is_asgi(agent):
        raise ValueError(
            f"{spec} is an ASGI application (it takes scope, receive, send), not an agent "
            f"function: pass the agent it serves — `async def agent(run): …`, the function "
            f"given to agent_app() (see docs/agent.md) — or serve the application itself "
            f"with uvicorn {spec}"
        )
    if inspect.isasyncgenfunction(inspect.unwrap(agent)):
        raise ValueError(
            f"{spec} is an async generator function (it yields), which an agent is not: an "
            f"agent is `async def {attr}(run): …` that emits with run's methods and returns "
            "(see docs/agent.md)"
        )
    if not _is_async(agent):
        raise ValueError(
            f"{spec} is not an async function: an agent is `async def {attr}(run): …` "
            "(see docs/agent.md)"
        )
    return agent


def _is_asgi(agent: Any) -> bool:
    """An ASGI application (``app(scope, receive, send)``: FastAPI, Starlette, what
    ``agent_app()`` returns), which the runner would call with a Run — and fail every
    request with a ``TypeError``. An agent takes exactly one argument, the run."""
    target = inspect.unwrap(agent)
    call = target if inspect.isroutine(target) else getattr(target, "__call__", None)  # noqa: B004
    try:
        params = list(inspect.signature(call).parameters.values()) if call is not None else []
    except (TypeError, ValueError):  # a builtin without a signature: not ASGI as far as we know
        return False
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    names = [p.name for p in positional]
    return len(positional) == 3 or names[:1] == ["scope"]


def _module_hint(spec: str) -> str:
    """What to type instead when AGENT names a file (``x.py:agent``) — a module name belongs."""
    module_name, sep, attr = spec.partition(":")
    path = Path(module_name)
    if not (module_name.endswith(".py") or "/" in module_name):
        return ""
    stem = path.stem if path.suffix == ".py" else path.name
    where = "" if path.parent == Path() else f" from {path.parent} (or add it to PYTHONPATH)"
    return (
        f" — AGENT is module:function, with a module name, not a file: try {stem}{sep}{attr}{where}"
    )


def _is_async(agent: Any) -> bool:
    """An agent the runner can await: an async function, or an object with an async
    ``__call__`` (a plain ``def`` would fail every request with a TypeError)."""
    target = inspect.unwrap(agent)
    return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
        getattr(target, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    )


def _graceful_server_class() -> Any:
    import uvicorn

    class GracefulServer(uvicorn.Server):
        """uvicorn, with the endpoint's own shutdown first: on SIGTERM/SIGINT it stops
        accepting, lets runs in flight finish for ``grace`` seconds and ends the rest
        with ``RUN_ERROR`` (uvicorn alone would wait for them forever, or with
        ``timeout_graceful_shutdown`` cut them with no terminal event)."""

        def __init__(self, config: Any, endpoint: Any, grace: float, on_ended: Any = None) -> None:
            super().__init__(config)
            self.endpoint = endpoint
            self.grace = grace
            self.on_ended = on_ended

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            for server in self.servers:
                server.close()  # stop accepting now, not after the grace period
            for sock in sockets or []:
                sock.close()
            ended = await self.endpoint.shutdown(self.grace)
            # the agent endpoint already logged the runs it ended: no second line here
            if self.on_ended is not None:
                self.on_ended(ended)  # the command says it, in its own stop line
            await super().shutdown(sockets)

    return GracefulServer


def _graceful_server(config: Any, endpoint: Any, grace: float, on_ended: Any = None) -> Any:
    return _graceful_server_class()(config, endpoint, grace, on_ended)


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before "Serving …" is printed: a taken port is
    reported alone, and the printed URL answers as soon as it is read."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except BaseException:
        sock.close()
        raise
    return sock


def listening(command: str, host: str, port: int) -> socket.socket | None:
    """:func:`_bind`'s socket, or None once ``agui-tools COMMAND: cannot serve on …`` is on
    stderr (the command then exits 2): the one way serve, proxy and mock say a taken port."""
    try:
        return _bind(host, port)
    except OSError as exc:
        print(
            f"agui-tools {command}: cannot serve on {host}:{port}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return None


def _log_config(level: str, access: bool) -> dict[str, Any]:
    """uvicorn's and our loggers, all on stderr: stdout carries the one "Serving" line."""
    handler = {"class": "logging.StreamHandler", "formatter": "plain", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        },
        "handlers": {"stderr": handler},
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
            "uvicorn.access": {
                "handlers": ["stderr"],
                "level": "INFO" if access else "CRITICAL",
                "propagate": False,
            },
            "agui_tools": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
        },
    }


def run(args: argparse.Namespace) -> int:
    from ..demo.agent import demo_agent
    from ..transport._server import agent_app
    from ._common import describe_exception

    try:
        agent = load_agent(args.agent) if args.agent else demo_agent()
    except Exception as exc:  # the module's own code runs here: any failure is bad usage
        hint = _module_hint(args.agent) if args.agent and not isinstance(exc, ValueError) else ""
        print(
            # a ValueError is ours (what AGENT should be); the module's own is named
            f"agui-tools serve: cannot load the agent: "
            f"{exc if isinstance(exc, ValueError) else describe_exception(exc)}{hint}",
            file=sys.stderr,
        )
        return 2
    resumable = resumable_option(args, "serve")
    if resumable is False:
        return 2
    sock = listening("serve", args.host, args.port)
    if sock is None:
        return 2
    app = agent_app(
        agent,
        path=args.path,
        verify=not args.no_verify,
        allowed_origins=args.allow_origin,
        allowed_hosts=[args.host, *args.allow_host],
        body_timeout=args.body_timeout,
        max_concurrency=args.limit_concurrency,
        resumable=resumable,
    )
    serve_on(
        app,
        sock,
        what="AG-UI agent",
        path=args.path,
        log_level=args.log_level,
        access_log=args.access_log,
        limit_concurrency=args.limit_concurrency,
        header_timeout=args.header_timeout,
        send_timeout=args.send_timeout,
        shutdown_grace=args.shutdown_grace,
        loop=args.loop,
    )
    return 0


def freeze_start_up() -> None:
    """Move what start-up left alive — the imports, the agent, the app — out of the
    collector's generations (``gc.freeze``), after collecting start-up's garbage so none
    of it is kept: a full collection then walks the runs' own objects only, and its
    pause — which every stream in flight waits out — stays short."""
    gc.collect()
    gc.freeze()


def serve_on(
    app: Any,
    sock: socket.socket,
    *,
    what: str,
    path: str,
    log_level: str,
    access_log: bool = False,
    limit_concurrency: int | None = None,
    header_timeout: float | None = 10.0,
    send_timeout: float | None = 30.0,
    shutdown_grace: float = 30.0,
    on_ended: Callable[[int], None] | None = None,
    loop: str = "asyncio",
) -> None:
    """Print "Serving WHAT at URL" on stdout, then serve ``app`` on the bound ``sock``
    until Ctrl-C or SIGTERM (which stop it cleanly: an AG-UI endpoint's runs in flight
    get ``shutdown_grace`` seconds, then a ``RUN_ERROR``); the socket is closed on the
    way out. ``on_ended(n)``: told how many runs the shutdown ended, for a command
    that says so in its own stop line (an agent endpoint logs it itself). ``loop``: one
    of :data:`LOOPS`."""
    import uvicorn

    from .._text import guarded_logger
    from ..transport._deadlines import deadline_protocol

    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_config=_log_config(log_level, access_log),
        log_level=log_level,
        access_log=access_log,
        limit_concurrency=limit_concurrency,
        loop=loop,
        http=deadline_protocol(header_timeout=header_timeout, send_timeout=send_timeout),
        # a backstop: the endpoint ends its runs at the grace period; uvicorn cancels
        # whatever is left (a response not ours) a little after
        timeout_graceful_shutdown=math.ceil(shutdown_grace) + 5,
    )
    if access_log:  # uvicorn sets its access logger to log_level: the flag says INFO
        logging.getLogger("uvicorn.access").setLevel(logging.INFO)
    # uvicorn's and asyncio's own lines are budgeted too: out of descriptors, a
    # server once wrote 66,842 "Too many open files" lines in a minute
    for name in ("uvicorn.error", "asyncio"):
        guarded_logger(name)
    print(f"Serving {what} at http://{shown}:{port}{path}", flush=True)
    # uvicorn re-raises the signal that stopped it once it has shut down; SIGTERM's
    # default action would then kill the process after a clean shutdown (status -15):
    # a handler that does nothing makes a graceful SIGTERM exit 0, as Ctrl-C does
    signal.signal(signal.SIGTERM, lambda *_: None)
    endpoint = getattr(getattr(app, "state", None), "agui_endpoint", None)
    server = (
        _graceful_server(config, endpoint, shutdown_grace, on_ended)
        if callable(getattr(endpoint, "shutdown", None))
        else uvicorn.Server(config)
    )
    freeze_start_up()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # Ctrl-C is how a server is stopped: cleanly
        pass
    finally:
        sock.close()
