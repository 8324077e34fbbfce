"""``agui-tools verify SOURCE`` — judge a captured stream as a conforming consumer would."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from .._errors import AguiError, ProtocolViolation
from .._text import one_line, terminal_json

if TYPE_CHECKING:
    from ..app._capture import CaptureVerdict

HELP = """\
Judge a captured AG-UI stream as a conforming consumer would: compatibility
boundary, enforcement, chunk expansion, verification and the thread reducer.

SOURCE is a file holding a JSON array of events, NDJSON (one event per line),
a captured SSE body or a captured binary-binding body (length-prefixed
protobuf frames, application/vnd.ag-ui.event+proto) — the format is detected
from the first bytes — or "-" to read standard input.

Human output: one line per violation or warning with its rule ID and event
index, then a summary per run. --json prints one object:
  {"outcome": "completed"|"failed"|"truncated", "error": {rule, index, message} | null,
   "warnings": [...], "events": [delivered events, wire JSON, in order],
   "runs": [{"threadId", "runId", "status", "pending": [toolCallIds]}],
   "messages": [final thread messages], "state": <final state>,
   "truncated": {rule, runId, index, offset, unfinishedAt, message} | null}
"outcome" follows the official fixture convention: "failed" means the stream
was rejected; a producer's RUN_ERROR is delivered, not a rejection, and shows
as a run with status "error"; "truncated" means the capture was cut (TRANS-2).

--limit NAME=N raises (or lowers) one of the consumer's resource limits, for
a stream refused with rule LIMIT that you know to be legitimate; NAME is one
of: {limits}.

A capture that ends mid-run (a run started and never ended) — or inside an
event, even one no run holds yet (the first, or the next run's first) — is a
truncated run — it has no outcome and is not a success (TRANS-2): it is said with
where the capture stops (the last event read, the byte offset, where an
unfinished event begins), "truncated" in --json says the same, and the exit
code is 1.

Exit codes: 0 completed, 1 failed (rejected) or truncated, 2 bad usage or
unreadable input.
"""


LIMIT_NAMES = (
    "max_event_bytes",
    "max_argument_bytes",
    "max_message_bytes",
    "max_state_bytes",
    "max_open_items",
    "max_lanes",
    "max_tracked_ids",
    "max_depth",
)
"""The fields of :class:`~agui_tools.wire.Limits`, written out so ``--help`` does not
import the consumer core (tests/cli/test_cli_docs.py holds the two equal)."""


def _limit(text: str) -> tuple[str, int]:
    """``NAME=N``: one field of :class:`~agui_tools.wire.Limits`, a positive integer."""
    name, sep, value = text.partition("=")
    names = LIMIT_NAMES
    if not sep or name not in names:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME=N with NAME one of {', '.join(names)}"
        )
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{name} must be a positive integer, not {value!r}")
    if name == "max_depth":  # the ceiling this library carries (MAX_DEPTH_CEILING), said here
        from .._errors import UsageError
        from ..wire._enforce import checked_max_depth

        try:
            checked_max_depth(number)
        except UsageError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return name, number


def register(sub: Any) -> None:
    p = sub.add_parser(
        "verify",
        help="judge a captured stream (JSON array, NDJSON or SSE) and report violations",
        description=HELP.replace("{limits}", ", ".join(LIMIT_NAMES)),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("source", metavar="SOURCE", help='a capture file, or "-" for stdin')
    p.add_argument("--input", metavar="RUN_INPUT.json", help="the RunAgentInput the stream answers")
    p.add_argument(
        "--strict", action="store_true", help="make the beyond-the-official-client checks fatal"
    )
    p.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    p.add_argument(
        "--limit",
        metavar="NAME=N",
        type=_limit,
        action="append",
        default=[],
        help="set a consumer limit (repeatable), e.g. --limit max_depth=200",
    )
    p.set_defaults(func=run)


def _read(source: str) -> bytes:
    if source == "-":
        return sys.stdin.buffer.read()
    return Path(source).read_bytes()


def _read_input(path: str) -> dict[str, Any] | None:
    """The ``--input`` RunAgentInput, judged as a producer would judge it (``None``: said why).

    The stream is verified against what the input *means* — its thread id, its
    advertised tools, its history — so a malformed input is bad usage (exit 2)
    naming the field, never a "stream rejected" for the wrong reason.
    """
    try:
        data = Path(path).read_bytes()
        obj = orjson.loads(data)
    except (OSError, orjson.JSONDecodeError) as exc:
        print(one_line(f"agui-tools verify: cannot read --input {path}: {exc}"), file=sys.stderr)
        return None
    if not isinstance(obj, dict):
        print(
            "agui-tools verify: --input must hold a JSON object (a RunAgentInput)", file=sys.stderr
        )
        return None
    from ..wire._codec import check_exact_json, decode_run_input

    try:
        check_exact_json(data, obj)
        decoded = decode_run_input(obj)
    except ProtocolViolation as exc:
        print(
            one_line(f"agui-tools verify: --input {path} is not a valid RunAgentInput: {exc}"),
            file=sys.stderr,
        )
        return None
    for warning in decoded.warnings:
        print(one_line(f"agui-tools verify: --input {path}: warning {warning}"), file=sys.stderr)
    return decoded.wire


def run(args: argparse.Namespace) -> int:
    from ..app._capture import read_frames, replay, truncation
    from ..wire._verify import Limits

    limits = Limits(**dict(args.limit))

    try:
        data = _read(args.source)
    except OSError as exc:
        print(
            f"agui-tools verify: cannot read {args.source}: {exc.strerror or exc}", file=sys.stderr
        )
        return 2
    run_input = None
    if args.input:
        run_input = _read_input(args.input)
        if run_input is None:
            return 2
    try:
        frames = read_frames(data, limits=limits)
    except ProtocolViolation as exc:
        name = "standard input" if args.source == "-" else args.source
        print(
            one_line(f"agui-tools verify: {name} is not a readable capture: {exc}"),
            file=sys.stderr,
        )
        if exc.rule == "LIMIT":
            print("agui-tools verify: --limit NAME=N sets a limit (see --help)", file=sys.stderr)
        return 2
    try:
        outcome = replay(frames, run_input=run_input, strict=args.strict, limits=limits)
    except AguiError as exc:  # pragma: no cover - replay reports stream problems itself
        print(one_line(f"agui-tools verify: {exc}"), file=sys.stderr)
        return 2
    cut = outcome.truncated = truncation(outcome, data)
    if args.json:
        document = orjson.dumps(outcome.to_json(), option=orjson.OPT_INDENT_2)
        sys.stdout.buffer.write(terminal_json(document) + b"\n")
    else:
        _print_human(outcome)
    return 0 if outcome.result.completed and cut is None else 1


def _print_human(outcome: CaptureVerdict) -> None:
    # the lines are the verdict's own (the inspector's import shows the same ones)
    for line in outcome.lines():
        if line.startswith("  (a limit:"):
            line = f"  (a limit: --limit NAME=N sets it; NAME one of {', '.join(LIMIT_NAMES)})"
        print(one_line(line))  # ids, pending calls, RUN_ERROR.message: the agent's text
