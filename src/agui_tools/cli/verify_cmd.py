"""``agui-tools verify SOURCE`` — judge a captured stream as a conforming consumer would."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

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
from the first bytes — or "-" to read standard input. SOURCE may be a
`proxy --record` folder: each recorded event stream (NNNN.sse, .pb, .ndjson)
is judged in turn with its NNNN.input.json, under a "== FILE" line (--json:
{"exchanges": [{"file", ...verdict}]}); the exit code is the worst of them.

Human output: one line per violation or warning with its rule ID and event
index, then a summary per run. --json prints one object:
  {"outcome": "completed"|"failed"|"truncated"|"empty",
   "error": {rule, index, message} | null,
   "warnings": [...], "events": [delivered events, wire JSON, in order],
   "runs": [{"threadId", "runId", "status", "pending": [toolCallIds]}],
   "messages": [final thread messages], "state": <final state>,
   "truncated": {rule, runId, index, offset, unfinishedAt, message} | null}
"outcome" follows the official fixture convention: "failed" means the stream
was rejected; a producer's RUN_ERROR is delivered, not a rejection, and shows
as a run with status "error"; "truncated" means the capture was cut (TRANS-2);
"empty" means the capture holds no run (keep-alives only): not a success.
An empty file or an empty JSON array holds no capture at all (exit 2).

An SSE capture of the resumable extension (docs/resumable.md; `run --resumable
--save`) carries "id: <runId>:<seq>" lines: they are judged as a resumable
client judges them — an event replayed by a rejoin is dropped and said, a gap
in a run's seqs rejects it there (RESUME-2) — on an "event ids" line (--json:
"ids": {"runs": {runId: last seq}, "replayed": [{runId, seq}]}, present only
then). Ids of a standard stream's own making are not judged.

--limit NAME=N raises (or lowers) one of the consumer's resource limits, for
a stream refused with rule LIMIT that you know to be legitimate; NAME is one
of: {limits}.

A capture that ends mid-run (a run started and never ended) — or inside an
event, even one no run holds yet (the first, or the next run's first) — is a
truncated run — it has no outcome and is not a success (TRANS-2): it is said with
where the capture stops (the last event read, the byte offset, where an
unfinished event begins), "truncated" in --json says the same, and the exit
code is 1.

Exit codes: 0 completed, 1 failed (rejected), truncated or empty, 2 bad usage
or unreadable input.
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
    from ..wire._verify import Limits

    limits = Limits(**dict(args.limit))
    if args.source != "-" and Path(args.source).is_dir():
        if args.input:
            print(
                "agui-tools verify: --input is for one capture; a recording folder's "
                "exchanges are judged each with its own NNNN.input.json",
                file=sys.stderr,
            )
            return 2
        return _verify_folder(Path(args.source), args, limits)
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
    name = "standard input" if args.source == "-" else args.source
    verdict = _judge(data, name, run_input, args, limits)
    if verdict is None:
        return 2
    if args.json:
        document = orjson.dumps(verdict.to_json(), option=orjson.OPT_INDENT_2)
        sys.stdout.buffer.write(terminal_json(document) + b"\n")
    else:
        _print_human(verdict)
    return 0 if verdict.outcome == "completed" else 1


def _judge(
    data: bytes, name: str, run_input: dict[str, Any] | None, args: Any, limits: Any
) -> CaptureVerdict | None:
    """The verdict on one capture (``None``: it is no readable capture, said why)."""
    from ..app._capture import read_frames_and_ids, replay, truncation

    try:
        frames, ids = read_frames_and_ids(data, limits=limits)
    except ProtocolViolation as exc:
        print(
            one_line(f"agui-tools verify: {name} is not a readable capture: {exc}"),
            file=sys.stderr,
        )
        if exc.rule == "LIMIT":
            print("agui-tools verify: --limit NAME=N sets a limit (see --help)", file=sys.stderr)
        return None
    try:
        verdict = replay(frames, run_input=run_input, strict=args.strict, limits=limits)
    except AguiError as exc:  # pragma: no cover - replay reports stream problems itself
        print(one_line(f"agui-tools verify: {exc}"), file=sys.stderr)
        return None
    verdict.truncated = truncation(verdict, data)
    verdict.ids = ids
    return verdict


_STREAM_BODY: Final = re.compile(r"^(?P<stem>(?:run-)?(?P<number>[0-9]+))\.(?:sse|pb|ndjson)$")
"""A recorded exchange whose answer is an event stream (``proxy --record DIR``'s
``NNNN.sse``/``.pb``/``.ndjson``, the inspector's ``run-N.sse``)."""
_OTHER_BODY: Final = re.compile(r"^(?:run-)?[0-9]+\.(?:json|body)$")


def _verify_folder(folder: Path, args: argparse.Namespace, limits: Any) -> int:
    """Each recorded exchange of a ``proxy --record`` folder judged as ``verify
    NNNN.sse --input NNNN.input.json`` judges it, in order; the exit code is the
    worst of theirs. An answer that is no event stream (a refusal) is said, not judged."""
    try:
        names = sorted(p.name for p in folder.iterdir())
    except OSError as exc:
        print(f"agui-tools verify: cannot read {folder}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    streams = sorted(
        (m for n in names if (m := _STREAM_BODY.match(n)) is not None),
        key=lambda m: (m.group("stem").startswith("run-"), int(m.group("number"))),
    )
    others = [n for n in names if _OTHER_BODY.match(n)]
    if not streams:
        print(
            one_line(
                f"agui-tools verify: {folder} holds no recorded event stream (NNNN.sse, .pb "
                f"or .ndjson{f'; {len(others)} answer(s) that are no stream' if others else ''})"
            ),
            file=sys.stderr,
        )
        return 2
    worst, documents = 0, []
    for found in streams:
        body = folder / found.group(0)
        beside = folder / f"{found.group('stem')}.input.json"
        run_input = _read_input(str(beside)) if beside.exists() else None
        if beside.exists() and run_input is None:
            worst = 2
            continue
        if not args.json:
            print(one_line(f"== {body}" + (f" (input {beside.name})" if run_input else "")))
        try:
            data = body.read_bytes()
        except OSError as exc:
            print(f"agui-tools verify: cannot read {body}: {exc.strerror or exc}", file=sys.stderr)
            worst = 2
            continue
        verdict = _judge(data, str(body), run_input, args, limits)
        if verdict is None:
            worst = 2
            continue
        worst = max(worst, 0 if verdict.outcome == "completed" else 1)
        if args.json:
            documents.append({"file": str(body), **verdict.to_json()})
        else:
            _print_human(verdict)
    if others and not args.json:
        print(f"{len(others)} recorded answer(s) that are no event stream, not judged")
    if args.json:
        document = orjson.dumps({"exchanges": documents}, option=orjson.OPT_INDENT_2)
        sys.stdout.buffer.write(terminal_json(document) + b"\n")
    return worst


def _print_human(outcome: CaptureVerdict) -> None:
    # the lines are the verdict's own (the inspector's import shows the same ones)
    for line in outcome.lines():
        if line.startswith("  (a limit:"):
            line = f"  (a limit: --limit NAME=N sets it; NAME one of {', '.join(LIMIT_NAMES)})"
        print(one_line(line))  # ids, pending calls, RUN_ERROR.message: the agent's text
