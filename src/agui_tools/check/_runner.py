"""Running the catalogue against one endpoint: selection, time bounds, the report."""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import httpx

from .._errors import TransportError, UsageError
from .._text import escape_controls
from .._version import __version__
from ._cases import CASES, SECTIONS, Case, basic_run
from ._context import DEFAULT_TOOLS, Context, Settings
from ._probe import STREAM_CAP, Probe
from ._report import LEVELS, CaseResult, CheckReport, Finding, Verdict, worst
from ._tiers import exercised, gate

__all__ = ["acheck_agent", "check_agent", "select_cases"]


def select_cases(
    cases: Iterable[str] | None = None, sections: Iterable[str] | None = None
) -> list[Case]:
    """The catalogue's cases matching ``cases`` (ids or globs) and ``sections``.

    Raises :class:`UsageError` naming a pattern or section that matches nothing.
    """
    chosen = list(CASES)
    if sections:
        wanted = list(sections)
        unknown = [s for s in wanted if s not in SECTIONS]
        if unknown:
            raise UsageError(
                f"unknown section(s) {', '.join(unknown)}; the sections are {', '.join(SECTIONS)}"
            )
        chosen = [c for c in chosen if c.section in wanted]
    if cases:
        patterns = list(cases)
        for pattern in patterns:
            if not any(fnmatch.fnmatchcase(c.id, pattern) for c in CASES):
                raise UsageError(
                    f"no case matches {pattern!r}; `agui-tools check --list` shows them all"
                )
        chosen = [c for c in chosen if any(fnmatch.fnmatchcase(c.id, p) for p in patterns)]
    return chosen


async def acheck_agent(
    url: str,
    *,
    cases: Iterable[str] | None = None,
    sections: Iterable[str] | None = None,
    timeout: float = 10.0,
    strict: bool = False,
    headers: Mapping[str, str] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    prompt: str | None = None,
    oversize_bytes: int = 16 * 1024 * 1024,
    level: str | None = None,
    interrupt_prompt: str | None = None,
    max_stream_bytes: int = STREAM_CAP,
) -> CheckReport:
    """Run the conformance cases against the agent at ``url``; see :func:`check_agent`."""
    if timeout <= 0:
        raise UsageError(f"timeout must be a positive number of seconds, not {timeout}")
    if level is not None and level not in LEVELS:
        raise UsageError(f"unknown level {level!r}; the levels are {', '.join(LEVELS)}")
    if strict and level not in (None, "may"):
        raise UsageError(
            f"strict means level 'may' (every warning fails); give one of them, not strict "
            f"with level {level!r}"
        )
    chosen = select_cases(cases, sections)
    settings = Settings(
        url=url,
        headers=dict(headers or {}),
        timeout=timeout,
        strict=strict,
        tools=[dict(t) for t in tools] if tools is not None else DEFAULT_TOOLS,
        prompt=prompt,
        oversize_bytes=oversize_bytes,
        interrupt_prompt=interrupt_prompt,
        max_stream_bytes=max_stream_bytes,
    )
    started = datetime.now(UTC)
    start = time.perf_counter()
    if max_stream_bytes <= 0:
        raise UsageError(f"max_stream_bytes must be a positive number, not {max_stream_bytes}")
    probe = Probe(url, headers=settings.headers, timeout=timeout, max_stream_bytes=max_stream_bytes)
    with _agent_log() as log:
        try:
            await _reachable(probe)
            ctx = Context(settings, probe)
            await _an_agui_endpoint(ctx)
            results: dict[str, CaseResult] = {}
            for case in [c for c in chosen if not c.late] + [c for c in chosen if c.late]:
                results[case.id] = await _run_case(ctx, case)
            # a case needing a capability the agent never showed is not exercised, never failed
            shown = exercised(ctx.streams)
            for case in chosen:
                gate(results[case.id], case.capability, shown)
        finally:
            await probe.aclose()
    return CheckReport(
        url=url,
        cases=[results[c.id] for c in chosen],
        strict=strict,
        level=level or ("may" if strict else "must"),
        capabilities=shown,
        seconds=time.perf_counter() - start,
        started=started.isoformat(timespec="seconds"),
        version=__version__,
        agent_log=log.lines,
    )


class _AgentLog(logging.Handler):
    """While a check runs: what ``agui_tools`` loggers say below ERROR is kept, not shown.

    An agent served in this process (``serving``, the pytest fixture) warns about
    every odd input the checker sends on purpose — unknown members stripped
    (PROC-3), a newer version served (VER-5) — and with no logging configured
    those warnings reached the user's stderr by logging's last resort. They are
    the agent doing what the cases ask of it: kept on the report
    (:attr:`CheckReport.agent_log`). An ERROR — an agent body raising, a bug —
    goes on to the root logger's handlers as before.
    """

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR:
            logging.getLogger().handle(record)
        elif len(self.lines) < _AGENT_LOG_CAP:
            self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")


_AGENT_LOG_CAP = 1000
_LOGGER = logging.getLogger("agui_tools")
_log_lock = threading.Lock()
_log_depth = 0
_log_propagate = True


@contextmanager
def _agent_log() -> Iterator[_AgentLog]:
    """Route the ``agui_tools`` records through an :class:`_AgentLog` for the check."""
    global _log_depth, _log_propagate
    handler = _AgentLog()
    with _log_lock:
        if _log_depth == 0:
            _log_propagate, _LOGGER.propagate = _LOGGER.propagate, False
        _log_depth += 1
        _LOGGER.addHandler(handler)
    try:
        yield handler
    finally:
        with _log_lock:
            _LOGGER.removeHandler(handler)
            _log_depth -= 1
            if _log_depth == 0:
                _LOGGER.propagate = _log_propagate


def check_agent(url: str, **options: Any) -> CheckReport:
    """Check the AG-UI agent at ``url`` and return the :class:`CheckReport`.

    Options: ``cases`` (ids or globs), ``sections``, ``timeout`` (seconds per
    case), ``level`` (``"must"``, the default: only a ``fail`` fails the
    check; ``"should"``: also a ``warn`` of a MUST or SHOULD case; ``"may"``:
    every ``warn``), ``strict`` (the same as ``level="may"``), ``headers``,
    ``tools`` (the frontend tools to advertise, wire ``Tool`` dicts), ``prompt``
    (the message inviting a call), ``interrupt_prompt`` (the message inviting an
    interrupt, sent when no other run interrupted), ``max_stream_bytes`` (what is
    read of one answer before the checker stops: a ``LIMIT`` warning; 2 MiB).
    Blocking; inside a running event loop use :func:`acheck_agent`.

    Raises :class:`~agui_tools.TransportError` when the agent cannot be reached
    at all and :class:`~agui_tools.UsageError` for bad options; everything the
    agent does wrong is in the report, never an exception.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(acheck_agent(url, **options))
    raise UsageError(
        "check_agent() blocks and cannot run inside an event loop; use `await acheck_agent(...)`"
    )


async def _reachable(probe: Probe) -> None:
    """One GET, so an unreachable URL is one clear error, not thirty failed cases."""
    try:
        await probe.get()
    except (httpx.ReadTimeout, httpx.RemoteProtocolError):
        return  # connected: what it does with a GET is not the check's business
    except httpx.HTTPError as exc:
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise TransportError(
            f"cannot reach the agent at {probe.url} ({detail})", url=probe.url
        ) from None


_NO_ROUTE = frozenset({404, 405, 501})
"""Statuses saying nothing serves a POST here (not found, no POST, not implemented)."""

_AUTH = frozenset({401, 403})
"""Statuses saying the request lacks credentials (or they are refused)."""


async def _an_agui_endpoint(ctx: Context) -> None:
    """One plain, well-formed run input first: a URL that answers it with a web page (or
    with no POST route at all) is not an agent, and that is one error — not every case
    failing on the same page. (The run is the one ``lifecycle.stream`` judges.)"""
    try:
        stream = await asyncio.wait_for(basic_run(ctx), ctx.settings.timeout)
    except TimeoutError:
        # slow, or hanging: lifecycle.stream judges that; a case that times out too is
        # not blamed under its own rule for the same cause (see _run_case)
        ctx.plain_stalled = True
        return
    ex = stream.exchange
    if stream.judged is not None or ex.status is None:
        return
    if ex.status in _AUTH and stream.judged is None:
        # every case's input is refused alike, for a reason no input rule concerns: one
        # finding (exit 2), not INPUT-16/INPUT-11/VER-5 fails for a missing credential
        given = "the headers given were refused" if ctx.settings.headers else "no headers given"
        raise TransportError(
            f"the agent refused a plain, well-formed run input with HTTP {ex.status} "
            f"({'unauthorized' if ex.status == 401 else 'forbidden'}; {given}): nothing can "
            "be checked; pass its credentials with -H 'Authorization: …' (headers= in "
            "check_agent)",
            status=ex.status,
            body=ex.body[:200],
            url=ctx.settings.url,
        )
    if not (200 <= ex.status < 300 or ex.status in _NO_ROUTE):
        return  # an error status of an agent (422, 500): the cases say what it means
    kind = ex.content_type.split(";")[0].strip() or "no content type"
    body = escape_controls(" ".join(ex.body.split()), one_line=True)
    shown = f" ({body[:80]!r}{'…' if len(body) > 80 else ''})" if body else ""
    raise TransportError(
        f"this is not an AG-UI endpoint: it answered HTTP {ex.status} {kind}{shown} to a "
        "well-formed RunAgentInput POST, where an agent answers 200 text/event-stream; "
        "give the URL of the agent's POST endpoint",
        status=ex.status,
        body=ex.body[:200],
        url=ctx.settings.url,
    )


async def _run_case(ctx: Context, case: Case) -> CaseResult:
    res = case.result()
    start = time.perf_counter()
    try:
        await asyncio.wait_for(case.run(ctx, res), ctx.settings.timeout)
    except TimeoutError:
        last = res.exchanges[-1] if res.exchanges else None
        doing = f" (waiting on {last.label!r}, {len(last.frames)} event(s) so far)" if last else ""
        if ctx.plain_stalled and case.id != "lifecycle.stream":
            # one cause, one finding: the plain run stalled too, and lifecycle.stream fails
            # for it; this case's own rule learned nothing
            verdict = Verdict.NOT_EXERCISED
            message = (
                f"the case did not finish within {ctx.settings.timeout:g} s{doing} — nor did "
                "the plain, well-formed run (lifecycle.stream judges that): nothing here is "
                "specific to this case; give a slow agent more time (--timeout)."
            )
        else:
            verdict = Verdict.FAIL
            message = (
                f"the case did not finish within {ctx.settings.timeout:g} s{doing}; the agent "
                "must answer — a refusal, a stream, a terminal event — not hang."
            )
        res.findings.append(
            Finding(
                verdict,
                case.rules[0],
                message,
                len(res.exchanges) - 1 if last else None,
                len(last.frames) - 1 if last and last.frames else None,
            )
        )
    except Exception as exc:  # a checker bug must show, not hide behind a verdict
        res.findings.append(
            Finding(
                Verdict.FAIL,
                "CHECKER",
                f"internal error in the checker ({type(exc).__name__}: {exc}); please report it.",
            )
        )
    res.seconds = time.perf_counter() - start
    res.verdict = worst(f.verdict for f in res.findings)
    if not res.observed:
        shown = [f for f in res.findings if f.verdict is res.verdict]
        res.observed = shown[0].message if shown else "as expected"
    return res
