"""``agui-tools proxy UPSTREAM`` — a verifying proxy between any frontend and any agent."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import threading
from typing import IO, TYPE_CHECKING, Any

import orjson

from .._output import QueuedFile
from .._text import one_line
from ._common import cut

if TYPE_CHECKING:
    from ..app._watch import WatchFinding
    from ..transport._proxy_verdicts import Tally

HELP = """\
Stand between a frontend and an agent and judge both: point the frontend (a
CopilotKit runtime, the official HttpAgent, your own client) at the printed URL
instead of the agent's. Every request is forwarded to UPSTREAM and its answer
streamed back byte for byte, each chunk as it arrives; on the way, the agent's
stream is judged as a producer (every stream rule, rule IDs, event indexes —
what `agui-tools verify` says of it) and each run input the frontend sends is
judged as an application (what our server refuses with 409/422: a call left
unanswered, FE-8; and, against the thread's previous run as the proxy saw it,
its pending calls answered, its interrupts covered by the resume list,
INT-6/7/8).

A path after the proxy's root is appended to UPSTREAM's path (/ is UPSTREAM
itself), and a query to UPSTREAM's own (?code=KEY then &x=1).
Accept is forwarded untouched: both bindings (SSE, protobuf) pass.

Findings: one line each on stderr, and with --log one JSON object per line
({"rule", "severity", "side": "agent"|"frontend"|"proxy", "threadId", "runId",
"toolCallIds", "index", "message"}) to FILE or, with "-", stdout. Ctrl-C (or
SIGTERM) stops the proxy and prints a summary; a stream still open is ended and
counted as cut short.

--strict: the first event that breaks a producer rule is replaced by a
RUN_ERROR naming the rule (in the stream's binding) and the stream ends; an
input our server would refuse is answered as it answers (409/422 JSON) and
never forwarded.

--record DIR: every POST exchange saved as DIR/NNNN.input.json (the body as the
frontend sent it), DIR/NNNN.sse, .pb, .ndjson or .json (the answer's body as
the agent sent it) and DIR/NNNN.meta.json; `agui-tools verify DIR/0001.sse
--input DIR/0001.input.json` judges a recording as the proxy did.

--inspect: also serve the inspector's page showing the traffic as it flows
(its URL on a second stdout line): each exchange as its run — the input as the
frontend sent it, every event as the agent sent it, tool-call cards building
up, each finding with its rule and its side — for every thread the frontend
uses. Read-only: nothing on the page drives the thread (every action is
refused, 403); it keeps the recent traffic (32 MiB of messages).

Exit codes: 0 stopped (Ctrl-C or SIGTERM) with no error found, 1 stopped after
errors were found (the summary lists them), 2 bad usage (UPSTREAM is not an
http(s) URL, the port is taken, DIR cannot be created).
"""


def register(sub: Any) -> None:
    from .serve_cmd import _at_least_one, add_listen_options, add_resumable_options

    p = sub.add_parser(
        "proxy",
        help="forward a frontend's requests to an agent, judging both sides on the way",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("upstream", metavar="UPSTREAM", help="the agent's URL, e.g. http://host/agent")
    add_listen_options(p, port=8001)
    p.add_argument("--record", metavar="DIR", help="record every exchange in DIR (docs/proxy.md)")
    p.add_argument(
        "--strict",
        action="store_true",
        help="end a stream that breaks a rule with RUN_ERROR; refuse an input our server refuses",
    )
    p.add_argument(
        "--log",
        metavar="FILE",
        help='write each finding as one JSON line to FILE ("-": stdout), appended',
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a name (Host) clients reach the proxy by, besides localhost and IP addresses; "
        "repeatable; '*' any",
    )
    p.add_argument(
        "--connect-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="time to connect to UPSTREAM before answering 502 (default 10)",
    )
    p.add_argument(
        "--upstream-connections",
        type=_at_least_one,
        default=None,
        metavar="N",
        help="connections to UPSTREAM at once (default: as many as --limit-concurrency); a "
        "request finding all in use for 1 s is answered 503, side proxy",
    )
    p.add_argument(
        "--inspect",
        action="store_true",
        help="also serve the inspector's page showing the live traffic, read-only (its URL is "
        "printed on a second stdout line)",
    )
    add_resumable_options(p)
    p.set_defaults(func=run)


def _upstream(text: str) -> str | None:
    """Why ``text`` is not an agent URL (``None``: it is one) — the check every command
    makes of an agent URL (:func:`~agui_tools._url.url_problem`)."""
    from .._url import url_problem

    return url_problem(text)


class _Log:
    """Where findings go: one human line on stderr, one JSON line to ``--log``."""

    def __init__(self, sink: IO[bytes] | QueuedFile | None, name: str = "") -> None:
        self.sink = sink
        self.name = name
        self.upstream_errors = 0

    def finding(self, finding: WatchFinding) -> None:
        print(one_line(f"agui-tools proxy: {finding.line()}"), file=sys.stderr, flush=True)
        self._write(finding.to_json())

    def upstream_error(self, url: str, message: str) -> None:
        self.upstream_errors += 1
        print(one_line(f"agui-tools proxy: {message}"), file=sys.stderr, flush=True)
        self._write({"event": "upstream-error", "url": url, "message": message})

    def notice(self, message: str) -> None:
        """A line the proxy says of itself: the recording stopped, findings counted."""
        print(one_line(f"agui-tools proxy: {message}"), file=sys.stderr, flush=True)

    def _write(self, document: dict[str, Any]) -> None:
        if self.sink is None:
            return
        try:
            self.sink.write(orjson.dumps(document) + b"\n")
            self.sink.flush()
        except (OSError, ValueError) as exc:  # a full disk, a closed pipe: never the traffic's
            self.sink = None  # said once; the log is given up, the summary still counts
            self.failed(exc)

    def failed(self, exc: OSError | ValueError) -> None:
        """The log cannot be written any more: said once (a queued log's writer thread
        calls this the first time its write fails)."""
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(
            one_line(
                f"agui-tools proxy: cannot write the log {self.name}: {why}; "
                "findings still go to the summary"
            ),
            file=sys.stderr,
            flush=True,
        )


def summary(
    exchanges: int,
    tally: Tally,
    upstream_errors: int,
    abandoned: int = 0,
    not_recorded: int = 0,
) -> list[str]:
    """The lines printed when the proxy stops."""
    errors = tally.errors
    lines = [
        f"agui-tools proxy: {exchanges} run request(s), {errors} error(s), "
        f"{tally.total - errors} warning(s)"
        + (f", {upstream_errors} upstream failure(s)" if upstream_errors else "")
        + (
            f", {abandoned} stream(s) cut short (the frontend left, or the proxy stopped)"
            if abandoned
            else ""
        )
        + (
            f", {not_recorded} exchange(s) not recorded (the --record folder cannot be written)"
            if not_recorded
            else ""
        )
    ]
    for (side, severity, rule), n in sorted(tally.counts.items()):
        first = tally.first[(side, severity, rule)]
        where = f"thread {first.thread_id!r} run {first.run_id!r}"
        if first.index is not None:
            where += f" event #{first.index}"
        lines.append(f"  {side:<8} {severity:<7} {rule:<10} x{n}  first: {where}")
    if not tally.counts:
        lines.append("  no rule broken by either side")
    return [one_line(line) for line in lines]


_OWN_CUT = "ASGI callable returned without completing response."


def _not_our_cut(record: logging.LogRecord) -> bool:
    """uvicorn's ERROR when an ASGI app ends an answer without its end — what the proxy
    does on purpose when the upstream cut its body (the frontend's answer is cut the
    same way): the proxy has said it (an upstream-error line, TRANS-2), so uvicorn's
    line, which blames the proxy, is not printed."""
    return record.getMessage() != _OWN_CUT


def _draining_server(config: Any, app: Any) -> Any:
    """uvicorn, which on the way out first ends the streams still open."""
    import uvicorn

    class DrainingServer(uvicorn.Server):
        async def shutdown(self, sockets: Any = None) -> None:
            # the streams still open end first (counted as cut short, each frontend
            # given the body's end): nothing is left to the graceful timeout
            await app.stop_streams()
            await _abort_unread(self.server_state.connections)
            await super().shutdown(sockets)

    return DrainingServer(config)


async def _abort_unread(connections: Any, grace: float = 0.5) -> None:
    """A frontend holding a stopped stream without reading it (a busy tab, a paused
    debugger) never lets its connection close — the bytes it has not read wait in the
    proxy's buffer, and a close waits for them — so uvicorn would wait out its graceful
    timeout and print an ERROR. Given ``grace`` seconds to read them, such a
    connection is then aborted (what the frontend sees: its answer cut)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace

    def unread() -> list[Any]:
        return [
            c.transport
            for c in list(connections)
            # (closing or not: a close waits for the buffer to drain)
            if getattr(c, "transport", None) is not None and c.transport.get_write_buffer_size() > 0
        ]

    while unread() and loop.time() < deadline:
        await asyncio.sleep(0.05)
    for transport in unread():
        transport.abort()


async def _with_inspector(server: Any, sock: Any, inspector: Any, args: Any) -> None:
    """The proxy and its read-only inspector, in one event loop: the inspector's
    timeline is filled by the proxy's own traffic."""
    from ..ui.inspector import serve_inspector

    def ready(url: str) -> None:
        print(f"AG-UI inspector (read-only): {url}", flush=True)

    page = asyncio.create_task(
        serve_inspector(
            inspector, host=args.host, port=0, ready=ready, allowed_hosts=args.allow_host
        )
    )
    try:
        await server.serve(sockets=[sock])
    finally:
        page.cancel()
        await asyncio.gather(page, return_exceptions=True)


def _terminated(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM ends the proxy as Ctrl-C does: the summary follows


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from .._text import guarded_logger
    from ..transport._deadlines import deadline_protocol
    from ..transport._proxy import SERVER_OPTIONS, ProxyApp
    from .serve_cmd import _log_config, listening, resumable_option

    problem = _upstream(args.upstream)
    if problem is not None:
        print(
            one_line(f"agui-tools proxy: UPSTREAM {cut(args.upstream)!r} {problem}"),
            file=sys.stderr,
        )
        return 2
    resumable = resumable_option(args, "proxy")
    if resumable is False:
        return 2
    sink: IO[bytes] | QueuedFile | None = None
    if args.log == "-":
        sink = sys.stdout.buffer  # stdout: the command's channel already
    elif args.log:
        try:
            # through a writer thread of its own: a reader that stops reading (a FIFO)
            # never stops the proxy
            opened = open(args.log, "ab")  # noqa: SIM115 - open for the server's lifetime
            sink = QueuedFile(opened, on_error=lambda exc: log.failed(exc))
        except OSError as exc:
            print(
                f"agui-tools proxy: cannot open --log {args.log}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return 2
    log = _Log(sink, "stdout (--log -)" if args.log == "-" else args.log or "")
    inspector = None
    if args.inspect:
        from ..transport._proxy_requests import redacted_url
        from ..ui.inspector._live import LiveInspector

        inspector = LiveInspector(redacted_url(args.upstream))  # no secret on the page
    try:
        app = ProxyApp(
            args.upstream,
            strict=args.strict,
            record=args.record,
            on_finding=log.finding,
            on_upstream_error=log.upstream_error,
            allowed_hosts=[args.host, *args.allow_host],
            connect_timeout=args.connect_timeout,
            body_timeout=args.body_timeout,
            max_concurrency=args.limit_concurrency,
            upstream_connections=args.upstream_connections,
            observer=inspector,
            on_notice=log.notice,
            resumable=resumable,
        )
    except OSError as exc:
        print(
            f"agui-tools proxy: cannot record in {args.record}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    sock = listening("proxy", args.host, args.port)
    if sock is None:
        return 2
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_config=_log_config("warning", False),
        log_level="warning",
        access_log=False,
        limit_concurrency=app.max_concurrency,  # (fitted under the descriptor limit)
        loop="asyncio",  # uvloop does not keep the front's descriptor-flood answers
        http=deadline_protocol(header_timeout=args.header_timeout, send_timeout=args.send_timeout),
        timeout_graceful_shutdown=1,
        **SERVER_OPTIONS,  # the agent's Date and Server, once (the proxy adds a missing Date)
    )
    for name in ("uvicorn.error", "asyncio"):
        guarded_logger(name)
    logging.getLogger("uvicorn.error").addFilter(_not_our_cut)
    print(
        one_line(
            f"Proxying AG-UI at http://{shown}:{port}/ to {cut(app.shown_upstream)}"
            + (" (strict)" if args.strict else "")
            + (" (resumable)" if resumable else "")
            + (f", recording in {args.record}" if args.record else "")
        ),
        flush=True,
    )
    # SIGTERM (how a CI job stops its services) stops the proxy as Ctrl-C does: uvicorn
    # shuts down on either, then raises the signal again under the handler it found —
    # this one, so the summary follows instead of the process dying without it
    main = threading.current_thread() is threading.main_thread()  # (signals: main only)
    previous = signal.signal(signal.SIGTERM, _terminated) if main else None
    try:
        server = _draining_server(config, app)
        if inspector is None:
            server.run(sockets=[sock])
        else:
            asyncio.run(_with_inspector(server, sock, inspector, args))
    except KeyboardInterrupt:  # Ctrl-C (or SIGTERM) stops the proxy: the summary follows
        pass
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
        sock.close()
    missed = app.recording.missed if app.recording is not None else 0
    for line in summary(app.exchanges, app.tally, log.upstream_errors, app.abandoned, missed):
        print(line, file=sys.stderr)
    errors = app.tally.errors > 0
    print(
        "agui-tools proxy: stopped" + (" — errors were found (exit 1)" if errors else ""),
        file=sys.stderr,
        flush=True,
    )
    if isinstance(sink, QueuedFile):
        lost = sink.close()
        if lost:
            print(
                one_line(f"agui-tools proxy: {lost} line(s) could not be written to {args.log}"),
                file=sys.stderr,
                flush=True,
            )
    return 1 if errors else 0
