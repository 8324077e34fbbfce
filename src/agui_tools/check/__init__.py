"""``agui-tools check``: a conformance tester you point at a live AG-UI agent.

What Autobahn|Testsuite is to WebSocket and h2spec to HTTP/2: a catalogue of
cases (:data:`CASES`), each sending the agent real requests over HTTP + SSE and
judging the producer — every stream through the full consumer pipeline, every
verdict tied to the rules it checks (``spec/RULES.md`` IDs) and their spec page::

    from agui_tools.check import check_agent

    report = check_agent("http://127.0.0.1:8000/agent")
    assert report.ok, report.failed()

Verdicts (:class:`Verdict`): ``pass``; ``fail`` — a MUST broken; ``warn`` — a
SHOULD, or the model's fault rather than the protocol's; ``info``; and ``not
exercised`` — the agent never did what the case needs, and the observation says
what it did instead. Reports: :mod:`~agui_tools.check.reports` (terminal, JSON,
JUnit XML, a self-contained HTML page).
"""

from __future__ import annotations

from ._baseline import Baseline, BaselineDiff, Known
from ._cases import CASES, SECTIONS, Case
from ._context import DEFAULT_PROMPTS, DEFAULT_TOOLS
from ._report import CaseResult, CheckReport, Exchange, Finding, Verdict
from ._runner import CheckRun, acheck_agent, check_agent, select_cases

__all__ = [
    "CASES",
    "DEFAULT_PROMPTS",
    "DEFAULT_TOOLS",
    "SECTIONS",
    "Baseline",
    "BaselineDiff",
    "Case",
    "CaseResult",
    "CheckReport",
    "CheckRun",
    "Exchange",
    "Finding",
    "Known",
    "Verdict",
    "acheck_agent",
    "check_agent",
    "select_cases",
]
