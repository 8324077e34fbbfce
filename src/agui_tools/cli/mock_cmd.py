"""``agui-tools mock CAPTURE…`` — serve recorded runs as an agent, with faults on purpose."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .serve_cmd import LOG_LEVELS, _path, add_listen_options, listening, serve_on

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
  cut:N            cut the connection after event N (event N is sent)
  stall:N:S        S seconds of silence before event N (no keep-alive)
  malformed:N      event N's frame does not decode
  status:CODE[:BODY]  answer HTTP CODE (400-599) with BODY instead of a stream
  drip:S           S seconds before every event
  duplicate:N      send event N twice

At start each recorded run is judged as `verify` judges a capture (one line
per run on stderr, and a note for what is not replayed: the unfinished event of a
capture cut inside one); a broken run is served as recorded. It prints one line on
stdout, "Serving mock AG-UI agent at URL", then one line per request on stderr.

--timing recorded waits the gaps between the events' timestamps (ms), each at
most --max-gap seconds (default 5; a capture mixing units or jumping is warned
of at start); a timestamp earlier than the one before waits nothing. A run the
binary binding cannot carry (a timestamp that is no 64-bit integer) is said at
start and served over SSE only: a protobuf request for it gets 406 (TRANS-7).

Ctrl-C stops the mock: a stream still being sent is given 2 seconds, then
ended with RUN_ERROR (ServerShuttingDown), as `serve` ends its runs.

Exit codes: 0 stopped (Ctrl-C, said in one line), 2 bad usage (a capture that
cannot be read, holds no event or an event nested deeper than an SSE stream
is written, a bad --fault, --timing or --max-gap, the port taken).
"""


SHUTDOWN_GRACE = 2.0
"""Seconds a stream still being sent gets once Ctrl-C stops the mock."""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "mock",
        help="serve recorded runs (captures, proxy recordings) as an agent, with injected faults",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("captures", nargs="+", metavar="CAPTURE", help="capture files or directories")
    add_listen_options(p, port=8000)
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
        "--max-gap",
        default="5",
        metavar="SECONDS",
        help="the longest wait before an event, whatever the timestamps say (a capture mixing "
        "units or jumping would hang its client); timestamps going backwards wait nothing "
        "(default 5)",
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


def _judged(endpoint: Any) -> list[str]:
    """One line per recorded run: what `verify` says of it; then what the timing caps
    and whether the binary binding can carry it."""
    from ..app._capture import replay
    from ..transport._mock import timing_notes

    lines = []
    # the runs one capture file split into are one thread, as verify judges the file: a
    # run resumed after an interrupt answers a call of the run before it
    thread_of: tuple[str, list[Any]] | None = None
    for n, recorded in enumerate(endpoint.matcher.runs, 1):
        if recorded.as_recorded:
            kind = recorded.content_type or "no Content-Type"
            moved = f", Location {recorded.location}" if recorded.location is not None else ""
            lines.append(
                f"  run {n} ({recorded.source}): a recorded HTTP {recorded.status}, replayed "
                f"as recorded ({kind}, {len(recorded.body)} bytes{moved})"
            )
            lines.extend(f"    note: {note}" for note in recorded.notes)
            continue
        capture = recorded.capture
        before = None
        if capture is not None and thread_of is not None and thread_of[0] == capture:
            before = thread_of[1]
        run_input = recorded.input if before is None else {"messages": before}
        verdict = replay(recorded.events, run_input=run_input)
        thread_of = (capture, verdict.thread.messages) if capture is not None else None
        error = verdict.result.error
        statuses = ", ".join(r.status for r in verdict.result.runs) or "no run"
        said = f"rejected: {_ruled(error)}" if error is not None else statuses
        warned = f", {len(verdict.warnings)} warning(s)" if verdict.warnings else ""
        lines.append(
            f"  run {n} ({recorded.source}): {len(recorded.events)} events, {said}{warned}"
        )
        for note in timing_notes(recorded, endpoint.factor, endpoint.max_gap):
            lines.append(f"    warning: {note}")
        why = endpoint.sse_only.get(id(recorded))
        if why is not None:
            lines.append(f"    served over SSE only (a protobuf request gets 406): {why}")
        lines.extend(f"    note: {note}" for note in recorded.notes)
    lines.extend(f"  skipped: {line}" for line in endpoint.skipped)
    return lines


def _ruled(error: Any) -> str:
    """``[RULE] message`` — once: the error's text may carry its rule already."""
    text = str(error)
    rule = getattr(error, "rule", None)
    return text if not rule or text.startswith(f"[{rule}]") else f"[{rule}] {text}"


def run(args: argparse.Namespace) -> int:
    from .._errors import UsageError
    from .._text import one_line
    from ..transport._mock import mock_app

    def said(number: int, status: int, text: str) -> None:
        print(one_line(f"request {number}: {status} {text}"), file=sys.stderr, flush=True)

    try:
        app = mock_app(
            args.captures,
            path=args.path,
            match=args.match,
            timing=args.timing,
            max_gap=args.max_gap,
            faults=args.fault,
            allowed_origins=args.allow_origin,
            allowed_hosts=[args.host],
            body_timeout=args.body_timeout,
            max_concurrency=args.limit_concurrency,
            on_request=said,
        )
    except UsageError as exc:
        print(one_line(f"agui-tools mock: {exc}"), file=sys.stderr)
        return 2
    endpoint = app.state.mock
    sock = listening("mock", args.host, args.port)
    if sock is None:
        return 2
    runs = endpoint.matcher.runs
    print(
        f"{len(runs)} recorded run(s), match {args.match}, timing {args.timing}, "
        f"max gap {endpoint.max_gap:g} s"
        + (f", faults {', '.join(str(f) for f in endpoint.faults)}" if endpoint.faults else ""),
        file=sys.stderr,
    )
    for line in _judged(endpoint):
        print(one_line(line), file=sys.stderr)
    ended: list[int] = []
    serve_on(
        app,
        sock,
        what="mock AG-UI agent",
        path=args.path,
        log_level=args.log_level,
        limit_concurrency=args.limit_concurrency,
        header_timeout=args.header_timeout,
        send_timeout=args.send_timeout,
        shutdown_grace=SHUTDOWN_GRACE,
        on_ended=ended.append,
    )
    left = endpoint.matcher.unused
    cut = (
        f"; {ended[0]} stream(s) still being sent ended with RUN_ERROR after {SHUTDOWN_GRACE:g} s"
        if ended and ended[0]
        else ""
    )
    start = "\r" if sys.stderr.isatty() else ""
    print(
        f"{start}agui-tools mock: stopped after {endpoint.requests} request(s); "
        f"{left} recorded run(s) never served{cut}",
        file=sys.stderr,
        flush=True,
    )
    return 0
