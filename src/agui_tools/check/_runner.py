"""Running the catalogue against one endpoint: selection, time bounds, the report."""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import httpx

from .._errors import TransportError, UsageError
from .._text import escape_controls
from .._version import __version__
from ._cases import CASES, SECTIONS, Case, basic_run
from ._context import DEFAULT_TOOLS, Context, Settings, Stream
from ._judge import slow_advice
from ._probe import STREAM_CAP, Probe, Stalled
from ._report import LEVELS, CaseResult, CheckReport, Finding, Verdict, worst
from ._tiers import exercised, gate

__all__ = ["CheckRun", "OnCase", "acheck_agent", "check_agent", "select_cases"]


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


DEADLINE_PER_TIMEOUT = 60
"""A check's overall deadline, when none is given, is this many ``--timeout``s (10
minutes at the default): the whole catalogue against an agent that stalls every request
takes about 35 of them."""

OnCase = Callable[[CaseResult, Verdict, int, int], None]
"""Told of each case as it finishes: the result, its verdict as far as the check knows
yet (a capability a later case shows may still change it), how many cases finished, of
how many."""


class CheckRun:
    """One check of one agent: what finished is its report at any moment.

    :func:`acheck_agent` and :func:`check_agent` run one to the end. The command line
    keeps hold of it, so a Ctrl-C still reports what finished (:meth:`report` with
    ``stopped``); the run's own deadline does the same from inside.
    """

    def __init__(
        self,
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
        deadline: float | None = None,
        on_case: OnCase | None = None,
    ) -> None:
        if timeout <= 0:
            raise UsageError(f"timeout must be a positive number of seconds, not {timeout}")
        if deadline is not None and deadline <= 0:
            raise UsageError(f"deadline must be a positive number of seconds, not {deadline}")
        if level is not None and level not in LEVELS:
            raise UsageError(f"unknown level {level!r}; the levels are {', '.join(LEVELS)}")
        if strict and level not in (None, "may"):
            raise UsageError(
                f"strict means level 'may' (every warning fails); give one of them, not strict "
                f"with level {level!r}"
            )
        if max_stream_bytes <= 0:
            raise UsageError(f"max_stream_bytes must be a positive number, not {max_stream_bytes}")
        self.url = url
        self.chosen = select_cases(cases, sections)
        self.settings = Settings(
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
        self.strict = strict
        self.level = level
        self.deadline = deadline if deadline is not None else DEADLINE_PER_TIMEOUT * timeout
        self.on_case = on_case
        self.results: dict[str, CaseResult] = {}
        self.current: CaseResult | None = None
        """The case running now (its exchanges so far are kept if the check stops)."""
        self.streams: list[Stream] = []
        self.log_lines: list[str] = []
        self.started = datetime.now(UTC)
        self._start = time.perf_counter()

    def run(self) -> CheckReport:
        """Run the check to its end, blocking (a Ctrl-C raises ``KeyboardInterrupt``;
        :meth:`report` then has what finished)."""
        return asyncio.run(self.arun())

    async def arun(self) -> CheckReport:
        """Run the check to its end, or to its deadline (then the rest is not run)."""
        self.started = datetime.now(UTC)
        self._start = time.perf_counter()
        probe = Probe(
            self.url,
            headers=self.settings.headers,
            timeout=self.settings.timeout,
            max_stream_bytes=self.settings.max_stream_bytes,
        )
        stopped = ""
        with _agent_log() as log:
            self.log_lines = log.lines
            bound = asyncio.timeout(self.deadline)
            try:
                async with bound:
                    await _reachable(probe)
                    ctx = Context(self.settings, probe)
                    self.streams = ctx.streams
                    await _an_agui_endpoint(ctx)
                    order = [c for c in self.chosen if not c.late]
                    order += [c for c in self.chosen if c.late]
                    for case in order:
                        self.current = case.result()
                        result = await _run_case(ctx, case, self.current)
                        self.results[case.id], self.current = result, None
                        if self.on_case is not None:
                            self.on_case(
                                result, self._preview(result, case), len(self.results), len(order)
                            )
            except TimeoutError:
                if not bound.expired():
                    raise
                stopped = f"the check's deadline of {self.deadline:g} s passed (--deadline)"
            finally:
                await probe.aclose()
        return self.report(stopped)

    def _preview(self, result: CaseResult, case: Case) -> Verdict:
        if case.capability is None or case.capability in exercised(self.streams):
            return result.verdict
        if result.verdict in (Verdict.FAIL, Verdict.WARN):
            return Verdict.NOT_EXERCISED
        return result.verdict

    def report(self, stopped: str = "") -> CheckReport:
        """The report of what finished; ``stopped`` says why the rest did not run (the
        case running then keeps its exchanges, and every case left is ``not exercised``)."""
        shown = exercised(self.streams)
        cases = []
        for case in self.chosen:
            res = self.results.get(case.id)
            if res is None:
                res = _not_run(case, self.current, stopped or "the check stopped")
            else:
                gate(res, case.capability, shown)
            cases.append(res)
        return CheckReport(
            url=self.url,
            cases=cases,
            strict=self.strict,
            level=self.level or ("may" if self.strict else "must"),
            capabilities=shown,
            seconds=time.perf_counter() - self._start,
            started=self.started.isoformat(timespec="seconds"),
            version=__version__,
            agent_log=self.log_lines,
            stopped=stopped,
        )


def _not_run(case: Case, current: CaseResult | None, why: str) -> CaseResult:
    running = current is not None and current.id == case.id
    res = current if current is not None and running else case.result()
    what = "not finished" if running else "not run"
    res.findings.append(Finding(Verdict.NOT_EXERCISED, "NOT-RUN", f"{what}: {why}."))
    res.verdict = Verdict.NOT_EXERCISED
    res.observed = f"{what}: {why}"
    return res


async def acheck_agent(url: str, **options: Any) -> CheckReport:
    """Run the conformance cases against the agent at ``url``; see :func:`check_agent`."""
    return await CheckRun(url, **options).arun()


class _AgentLog(logging.Handler):
    """While a check runs, ``agui_tools`` log records below ERROR are kept on the report
    (:attr:`CheckReport.agent_log`), not shown: an in-process agent warns about every odd
    input the checker sends on purpose. ERROR goes on to the root handlers.
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
    """Check the AG-UI agent at ``url`` and return the :class:`CheckReport` (blocking; in an
    event loop use :func:`acheck_agent`).

    Options: ``cases`` (ids or globs), ``sections``, ``timeout`` (seconds per request; a stream
    still going is judged on what arrived), ``level`` (``"must"``, ``"should"``, ``"may"``; see
    ``counts_at``), ``strict`` (``level="may"``), ``headers``, ``tools`` (wire ``Tool`` dicts),
    ``prompt``, ``interrupt_prompt``, ``max_stream_bytes`` (2 MiB), ``deadline`` (the whole
    check, default sixty times ``timeout``; cases left are ``not exercised``), ``on_case``
    (:data:`OnCase`).

    Raises :class:`~agui_tools.TransportError` when the agent cannot be reached and
    :class:`~agui_tools.UsageError` for bad options; the agent's faults are in the report.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return CheckRun(url, **options).run()
    raise UsageError(
        "check_agent() blocks and cannot run inside an event loop; use `await acheck_agent(...)`"
    )


async def _reachable(probe: Probe) -> None:
    """One GET, so an unreachable URL is one clear error, not thirty failed cases."""
    try:
        await probe.get()
    except (httpx.ReadTimeout, httpx.RemoteProtocolError, TimeoutError):
        # connected, or too slow to tell within --timeout: what it does with a GET is not
        # the check's business (the plain run says whether anything answers)
        return
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
        stream = await basic_run(ctx)
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


async def _run_case(ctx: Context, case: Case, res: CaseResult) -> CaseResult:
    start = time.perf_counter()
    try:
        await case.run(ctx, res)
    except TimeoutError as exc:
        if isinstance(exc, Stalled) and exc.exchange not in res.exchanges:
            res.exchanges.append(exc.exchange)  # a shared request's: the evidence stays here
        last = res.exchanges[-1] if res.exchanges else None
        bound = ctx.settings.timeout
        if isinstance(exc, Stalled):
            what = f"the request {exc.exchange.label!r} {exc.exchange.error}"
        else:
            doing = (
                f" (waiting on {last.label!r}, {len(last.frames)} event(s) so far)" if last else ""
            )
            what = f"the case did not finish within {bound:g} s{doing}"
        if ctx.plain_stalled and case.id != "lifecycle.stream":
            # one cause, one finding: the plain run stalled too, and lifecycle.stream fails
            # for it; this case's own rule learned nothing
            verdict = Verdict.NOT_EXERCISED
            message = (
                f"{what} — nor did the plain, well-formed run (lifecycle.stream judges "
                "that): nothing here is specific to this case; give a slow agent more time "
                "(--timeout)."
            )
        else:
            verdict = Verdict.FAIL
            message = (
                f"{what}; the agent must answer — a refusal, a stream, a terminal event — not "
                "hang. (A stream still streaming at the bound is judged on what arrived; an "
                f"agent this slow to start needs more time: --timeout {slow_advice(bound)}.)"
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
    slow = next((f for f in res.findings if f.rule == "TIMEOUT"), None)
    if slow is not None and slow.message not in res.observed:
        # what was observed is only the part that arrived: the headline says so, and what to do
        res.observed += (
            f" — cut at the {ctx.settings.timeout:g} s bound while still streaming, judged on "
            f"what arrived; give a slow agent more time: --timeout {slow_advice(ctx.settings.timeout)}"
        )
    return res
