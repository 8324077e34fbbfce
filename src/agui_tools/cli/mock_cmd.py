"""``agui-tools mock CAPTURE…`` — serve recorded runs as an agent, with faults on purpose."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .serve_cmd import LOG_LEVELS, _bind, _path, _port, serve_on

HELP = """\
Serve recorded runs as an AG-UI agent, so a frontend can be tested without a
model. CAPTURE is a `proxy --record` directory (NNNN.input.json + NNNN.sse or
.pb + NNNN.meta.json), a stream file (`run --save`, an SSE, protobuf, NDJSON
or JSON-array capture — split into its runs; with X.input.json beside X.sse,
that input is the run's), the inspector's run-N.sse (+ run-N.input.json) or
its thread.json (streams rebuilt from the thread's messages). Several
CAPTUREs are served one after the other.

Each request is judged as `agui-tools serve` judges it (413, 400, 415, 422; a
history leaving a call unanswered is 409, FE-8), then answered by a recorded
run, with the request's threadId and runId put in its events, as SSE or in the
binary binding, by the request's Accept. --match order (default): the n-th
request gets the n-th recorded run; once all were served, 404.
--match last-user-message: the recorded run whose input ends with the same
user message (and as many messages after it: a tool result's continuation is
its own run); none: 404; a request without a user message: 422.

Faults (--fault, repeatable; event numbers count from 0; @R: only request R):
  cut:N            cut the connection after event N
  stall:N:S        S seconds of silence before event N (no keep-alive)
  malformed:N      event N's frame does not decode
  status:CODE[:BODY]  answer HTTP CODE (400-599) with BODY instead of a stream
  drip:S           S seconds before every event
  duplicate:N      send event N twice

At start each recorded run is judged as `verify` judges a capture (one line
per run on stderr, and a note for what is not replayed: the unfinished event of a
capture cut inside one); a broken run is served as recorded. It prints one line on
stdout, "Serving mock AG-UI agent at URL", then one line per request on stderr.

Exit codes: 0 stopped (Ctrl-C, said in one line), 2 bad usage (a capture that
cannot be read or holds no event, a bad --fault or --timing, the port taken).
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "mock",
        help="serve recorded runs (captures, proxy recordings) as an agent, with injected faults",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("captures", nargs="+", metavar="CAPTURE", help="capture files or directories")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    p.add_argument(
        "--port", type=_port, default=8000, help="port (default 8000; 0 picks a free one)"
    )
    p.add_argument(
        "--path", type=_path, default="/agent", help="the POST endpoint's path (default /agent)"
    )
    p.add_argument(
        "--timing",
        default="recorded",
        metavar="recorded|fast|xN",
        help="recorded: the gaps between the events' timestamps (none recorded: no waits); "
        "fast: no waits; xN: N times the recorded speed (x2, x0.5) (default recorded)",
    )
    p.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="SPEC",
        help="inject a fault: cut:N, stall:N:S, malformed:N, status:CODE[:BODY], drip:S, "
        "duplicate:N, each with an optional @R (only request R); repeatable",
    )
    p.add_argument(
        "--match",
        choices=("order", "last-user-message"),
        default="order",
        help="which recorded run answers a request (default order)",
    )
    p.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin (your frontend's dev server) allowed to start runs, answered "
        "CORS; repeatable; '*' allows any",
    )
    p.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="warning",
        help="how much the server logs on stderr (default warning)",
    )
    p.set_defaults(func=run)


def _judged(runs: Any) -> list[str]:
    """One line per recorded run: what `verify` says of it."""
    from ..app._capture import replay

    lines = []
    for n, recorded in enumerate(runs, 1):
        if recorded.status != 200:
            lines.append(f"  run {n} ({recorded.source}): a recorded HTTP {recorded.status}")
            continue
        verdict = replay(recorded.events, run_input=recorded.input)
        error = verdict.result.error
        statuses = ", ".join(r.status for r in verdict.result.runs) or "no run"
        said = f"rejected: [{error.rule}] {error}" if error is not None else statuses
        warned = f", {len(verdict.warnings)} warning(s)" if verdict.warnings else ""
        lines.append(
            f"  run {n} ({recorded.source}): {len(recorded.events)} events, {said}{warned}"
        )
        lines.extend(f"    note: {note}" for note in recorded.notes)
    return lines


def run(args: argparse.Namespace) -> int:
    from .._errors import UsageError
    from .._text import terminal_text
    from ..transport._mock import mock_app

    def said(number: int, status: int, text: str) -> None:
        print(f"request {number}: {status} {terminal_text(text)}", file=sys.stderr, flush=True)

    try:
        app = mock_app(
            args.captures,
            path=args.path,
            match=args.match,
            timing=args.timing,
            faults=args.fault,
            allowed_origins=args.allow_origin,
            allowed_hosts=[args.host],
            on_request=said,
        )
    except UsageError as exc:
        print(f"agui-tools mock: {terminal_text(str(exc))}", file=sys.stderr)
        return 2
    endpoint = app.state.mock
    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        print(
            f"agui-tools mock: cannot serve on {args.host}:{args.port}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    runs = endpoint.matcher.runs
    print(
        f"{len(runs)} recorded run(s), match {args.match}, timing {args.timing}"
        + (f", faults {', '.join(str(f) for f in endpoint.faults)}" if endpoint.faults else ""),
        file=sys.stderr,
    )
    for line in _judged(runs):
        print(terminal_text(line), file=sys.stderr)
    serve_on(app, sock, what="mock AG-UI agent", path=args.path, log_level=args.log_level)
    left = endpoint.matcher.unused
    start = "\r" if sys.stderr.isatty() else ""
    print(
        f"{start}agui-tools mock: stopped after {endpoint.requests} request(s); "
        f"{left} recorded run(s) never served",
        file=sys.stderr,
        flush=True,
    )
    return 0
