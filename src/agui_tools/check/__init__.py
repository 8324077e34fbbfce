"""``agui-tools check``: a conformance tester you point at a live AG-UI agent.

What Autobahn|Testsuite is to WebSocket: a catalogue of cases (:data:`CASES`) sending real
requests and judging the producer through the full consumer pipeline, each verdict tied to
its ``spec/RULES.md`` IDs::

    from agui_tools.check import check_agent

    report = check_agent("http://127.0.0.1:8000/agent")
    assert report.ok, report.failed()

Verdicts (:class:`Verdict`): ``pass``, ``fail`` (a MUST broken), ``warn`` (a SHOULD, or the
model's fault), ``info``, ``not exercised`` (the agent never did what the case needs).
Reports: :mod:`~agui_tools.check.reports`.
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
