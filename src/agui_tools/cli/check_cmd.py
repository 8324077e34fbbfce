"""``agui-tools check URL`` — a conformance tester you point at a live agent."""

from __future__ import annotations

import argparse
import importlib
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import orjson

from .._text import one_line, terminal_json
from ._common import positive_bytes

HELP = """\
Run the conformance cases against the AG-UI agent at URL (its POST endpoint)
and judge the producer: how it meets good, malformed and unusual input, the
shape of its runs (every stream through the full consumer pipeline), the
frontend-tool round trip (advertise, invite a call, answer it, decline one), a
history with an unanswered call, interrupts when it interrupts, and the HTTP +
SSE binding. Each case cites the rules it checks (spec/RULES.md IDs) and ends
pass, fail (a MUST broken), warn (a SHOULD, or the model's fault), info, or
not exercised (the agent never did what the case needs; the report says what
it did instead).

Tiers: each case states its tier (MUST, SHOULD, MAY or informational, from
its rules' keywords) and the capability it needs (frontend-tools, interrupts,
binary, ...); a capability the agent never declared or exercised during the
check leaves its cases not exercised, never failed. --level must (default)
fails the check on a fail only; --level should also on a warn of a MUST or
SHOULD case; --level may (what --strict means) on every warn.

Reports: a table per section on the terminal; --json prints one JSON document
instead (docs/cli.md describes it); --junit FILE writes JUnit XML for CI;
--html FILE a self-contained page with every wire transcript.

Baseline: --write-baseline FILE records today's failing findings (case, rule,
verdict) and exits 0; --baseline FILE then fails only on findings it does not
hold, and lists the ones it holds that are fixed.

Progress: one line per case on stderr as it finishes (a live bar in a
terminal; -q for none). Time: each request is bounded by --timeout, the whole
check by --deadline; Ctrl-C prints "interrupted", then the report of what
finished.

Exit codes: 0 no case failed at the level (with --strict: none warned
either; with --baseline: no new failure), 1 a case failed or the deadline
stopped the check, 2 bad usage, the agent cannot be reached at all, or the URL
is not an AG-UI endpoint, 130 interrupted (Ctrl-C; the partial report printed).
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="run the conformance cases against a live agent endpoint and judge it",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("url", metavar="URL", nargs="?", help="the agent's POST endpoint")
    p.add_argument(
        "--case",
        action="append",
        metavar="ID",
        help="run only this case (an id or a glob like 'frontend.*'; repeatable)",
    )
    p.add_argument(
        "--section", action="append", metavar="NAME", help="run only this section (repeatable)"
    )
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=10.0,
        metavar="SECONDS",
        help="time bound of each request, from connecting to its last byte (default 10); "
        "a stream still streaming then is judged on what arrived — give a slow agent more",
    )
    p.add_argument(
        "--deadline",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="time bound of the whole check (default 60 x --timeout); the cases left then "
        "are reported not run",
    )
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress lines on stderr (one per case as it finishes)",
    )
    p.add_argument(
        "--level",
        choices=("must", "should", "may"),
        default=None,
        help="which tiers' warnings fail the check: must (default; only a fail does), "
        "should (also a warn of a MUST or SHOULD case), may (every warn)",
    )
    p.add_argument(
        "--strict", action="store_true", help="every warning fails the check (= --level may)"
    )
    p.add_argument(
        "--max-stream-bytes",
        type=positive_bytes,
        default=2 * 1024 * 1024,
        metavar="BYTES",
        help="read at most this much of one answer, then stop (a LIMIT warning; default 2 MiB)",
    )
    p.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an extra request header, e.g. -H 'Authorization: Bearer …' (repeatable)",
    )
    p.add_argument("--prompt", help="the user message that invites a frontend tool call")
    p.add_argument(
        "--interrupt-prompt",
        metavar="PROMPT",
        help="the user message that invites an interrupt (an approval of the agent's own "
        "tool), sent when no other run of the check interrupted",
    )
    p.add_argument(
        "--tools",
        metavar="FILE|MODULE:ATTR",
        help="the frontend tools to advertise: a JSON file (a list of Tool objects, or "
        '{"tools": [...], "prompt": "..."}) or a Python module attribute holding the list',
    )
    p.add_argument(
        "--write-baseline",
        metavar="FILE",
        help="record the failing findings as the agent's known faults in FILE (exit 0)",
    )
    p.add_argument(
        "--baseline",
        metavar="FILE",
        help="fail only on findings FILE (from --write-baseline) does not hold; "
        "report the ones it holds that are fixed",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document instead")
    p.add_argument("--junit", metavar="FILE", help="write a JUnit XML report to FILE")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report to FILE")
    p.set_defaults(func=run)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"the timeout must be positive, not {text}")
    return value


def _headers(items: list[str]) -> dict[str, str]:
    """The ``-H`` flags, judged as ``run`` judges them (:func:`~agui_tools.cli._http.header`):
    a value a header cannot carry (a line break, a letter like é) is bad usage, not a
    traceback from the HTTP client."""
    from ._http import header_items

    return header_items(items)


def load_tools(spec: str) -> tuple[list[dict[str, Any]], str | None]:
    """``--tools``: the Tool list (and an optional prompt) from a JSON file or a module."""
    path = Path(spec)
    if path.suffix == ".json" or path.exists():
        data: Any = orjson.loads(path.read_bytes())
    else:
        module_name, sep, attr = spec.partition(":")
        if "" not in sys.path:
            sys.path.insert(0, "")
        data = getattr(importlib.import_module(module_name), attr if sep else "TOOLS")
    prompt = None
    if isinstance(data, dict):
        prompt = data.get("prompt")
        data = data.get("tools")
    if not isinstance(data, list) or not all(
        isinstance(t, dict) and isinstance(t.get("name"), str) and t["name"] for t in data
    ):
        raise ValueError("expected a list of Tool objects, each with a non-empty name")
    tools = [{"description": "", **t} for t in data]
    if prompt is not None and not isinstance(prompt, str):
        raise ValueError("prompt must be a string")
    return tools, prompt


def run(args: argparse.Namespace) -> int:
    from .._errors import TransportError, UsageError
    from ..check import CASES, Baseline, CheckRun
    from ..check.reports import CaseProgress, html_report, junit_xml, print_report

    if args.list:
        for case in CASES:
            print(
                f"{case.id:30} {case.tier.value:13} {case.capability or '-':15} "
                f"{', '.join(case.rules):28} {case.title}"
            )
        return 0
    if not args.url:
        print("agui-tools check: give the agent's URL (or --list)", file=sys.stderr)
        return 2
    from .._url import check_url

    problem = check_url(args.url)
    if problem is not None:  # judged before any case runs: one line, exit 2
        print(f"agui-tools check: {problem}", file=sys.stderr)
        return 2
    try:
        headers = _headers(args.header)
    except ValueError as exc:
        print(f"agui-tools check: {exc}", file=sys.stderr)
        return 2
    try:
        tools, prompt = load_tools(args.tools) if args.tools else (None, None)
    except Exception as exc:  # the user's file or module: any failure is bad usage
        from ._common import describe_exception

        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else None
        if isinstance(exc, orjson.JSONDecodeError):
            why = f"not JSON ({exc})"
        print(
            one_line(
                f"agui-tools check: cannot read --tools {args.tools}: "
                f"{why or describe_exception(exc)}"
            ),
            file=sys.stderr,
        )
        return 2
    for target in (args.junit, args.html, args.write_baseline):
        problem = _unwritable(target) if target else None
        if problem is not None:  # said before the check runs, not after minutes of it
            print(one_line(f"agui-tools check: cannot write {problem}"), file=sys.stderr)
            return 2
    baseline = None
    try:
        if args.baseline and args.write_baseline:
            raise UsageError("give --baseline FILE or --write-baseline FILE, not both")
        if args.baseline:
            baseline = Baseline.load(args.baseline)
    except UsageError as exc:
        print(one_line(f"agui-tools check: {exc}"), file=sys.stderr)
        return 2
    interrupted = False
    try:
        check = CheckRun(
            args.url,
            cases=args.case,
            sections=args.section,
            timeout=args.timeout,
            strict=args.strict,
            level=args.level,
            headers=headers,
            tools=tools,
            prompt=args.prompt or prompt,
            interrupt_prompt=args.interrupt_prompt,
            max_stream_bytes=args.max_stream_bytes,
            deadline=args.deadline,
        )
        progress = None if args.quiet else CaseProgress(len(check.chosen), args.url)
        check.on_case = progress
        try:
            with progress or nullcontext():
                report = check.run()
        except KeyboardInterrupt:  # what finished is still a report: partial, exit 130
            print("agui-tools check: interrupted", file=sys.stderr)
            report = check.report("interrupted (Ctrl-C)")
            interrupted = True
    except (UsageError, TransportError) as exc:
        from ._common import cut

        text = str(exc).replace(args.url, cut(args.url))
        print(one_line(f"agui-tools check: {text}"), file=sys.stderr)
        return 2
    try:
        if args.junit:
            Path(args.junit).write_text(junit_xml(report), encoding="utf-8")
        if args.html:
            Path(args.html).write_text(html_report(report), encoding="utf-8")
    except OSError as exc:
        print(one_line(f"agui-tools check: cannot write the report: {exc}"), file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.buffer.write(terminal_json(report.dumps()) + b"\n")
    else:
        print_report(report)
    if interrupted:
        return 130
    said = sys.stderr if args.json else sys.stdout  # --json: stdout is the document alone
    if args.write_baseline:
        written = Baseline.of(report)
        try:
            written.write(args.write_baseline)
        except OSError as exc:
            print(f"agui-tools check: cannot write the baseline: {exc}", file=sys.stderr)
            return 2
        print(f"wrote {args.write_baseline}: {len(written.known)} known failure(s)", file=said)
        return 0
    if baseline is not None:
        diff = baseline.compare(report)
        print("\n".join(diff.lines(f"baseline {args.baseline}")), file=said)
        return diff.exit_code
    return report.exit_code


def _unwritable(target: str) -> str | None:
    """Why a report file cannot be written there, when that shows before the check runs."""
    path = Path(target)
    if path.is_dir():
        return f"{target}: it is a directory"
    if not path.parent.is_dir():
        return f"{target}: {path.parent} is not a directory"
    return None
