"""The checker catches each fault class of issue 14, with the right rule and verdict.

One deliberately broken agent per fault (``tests/check/agents.py``: raw SSE,
not our emitter, so it can break anything), run through the whole default
catalogue: the expected case fails naming the expected rule, the report exits
1, the HTML report highlights the offending event — and the cases the fault
does not touch are not failed (the checker is precise, not merely loud).
"""

from __future__ import annotations

import html

import pytest

from agui_tools.check import Verdict
from agui_tools.check.reports import html_report

from .agents import FAULTS, check_app, raw_agent

# fault → (the case that must fail, the rule it must name, every case allowed to fail)
EXPECTED: dict[str, tuple[str, str, set[str]]] = {
    "self-answer": ("frontend.no-self-answer", "FE-2", {"frontend.no-self-answer"}),
    "interrupt-outcome": ("frontend.success-outcome", "FE-3", {"frontend.success-outcome"}),
    "wrong-pending": ("frontend.pending-ids", "FE-5", {"frontend.pending-ids"}),
    # the stray result is in every stream that invites a call: both cases that make one say so
    "result-unknown-call": ("frontend.invite", "TOOL-10", {"frontend.invite", "frontend.decline"}),
    "resend-on-resume": (
        "frontend.continuation",
        "RUN-14",
        {"frontend.continuation", "frontend.decline"},
    ),
    # every plain run breaks it, so every case that makes one fails
    "finished-after-error": (
        "lifecycle.errored-runs",
        "RUN-12",
        {
            "input.unknown-members",
            "input.tools-absent",
            "input.newer-version",
            "lifecycle.stream",
            "lifecycle.errored-runs",
            "transport.disconnect",
            "transport.protobuf",
        },
    ),
    "missing-thread-id": (
        "lifecycle.stream",
        "PROC-2",
        {
            "input.unknown-members",
            "input.tools-absent",
            "input.newer-version",
            "lifecycle.stream",
            "lifecycle.ids-echoed",
            "frontend.invite",
            "transport.disconnect",
            "transport.protobuf",
        },
    ),
    "500-on-malformed": ("input.malformed-json", "INPUT-15", {"input.malformed-json"}),
    # running on the dangling history is allowed (FE-8 binds the application); answering it is not
    "dangling-answered": ("history.dangling", "FE-2", {"history.dangling"}),
    "refuses-newer-minor": ("input.newer-version", "VER-5", {"input.newer-version"}),
    "refuses-unknown-members": ("input.unknown-members", "INPUT-16", {"input.unknown-members"}),
}
# the status of a fault answered without a stream, which the HTML report shows
REFUSED_WITH = {"500-on-malformed": 500, "refuses-newer-minor": 400, "refuses-unknown-members": 422}


def test_every_fault_class_has_a_broken_agent() -> None:
    assert set(EXPECTED) == set(FAULTS)


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_fails_its_case_with_its_rule(fault: str) -> None:
    case_id, rule, allowed = EXPECTED[fault]
    report = check_app(raw_agent(fault))
    case = report.case(case_id)
    assert case.verdict is Verdict.FAIL, (case.verdict, case.findings)
    failing = [f for f in case.findings if f.verdict is Verdict.FAIL]
    assert rule in {f.rule for f in failing}, failing
    assert report.exit_code == 1 and not report.ok
    failed = {c.id for c in report.cases if c.verdict is Verdict.FAIL}
    assert failed <= allowed, failed - allowed
    # the HTML report highlights the offending event (or shows the offending status)
    page = html_report(report)
    finding = next(f for f in failing if f.rule == rule)
    if finding.event is not None:
        assert finding.exchange is not None
        frame = case.exchanges[finding.exchange].frames[finding.event]
        assert f'class="offending">{html.escape(frame)}</li>' in page
    else:
        status = REFUSED_WITH[fault]
        assert case.exchanges[finding.exchange or 0].status == status
        assert f"HTTP {status}" in page


def test_the_conforming_raw_agent_gets_no_failure_and_no_warning() -> None:
    report = check_app(raw_agent())
    assert report.exit_code == 0
    bad = [(c.id, c.findings) for c in report.cases if c.verdict in (Verdict.FAIL, Verdict.WARN)]
    assert bad == []
    # everything the agent does is exercised; only what it never does is not
    not_exercised = {c.id for c in report.cases if c.verdict is Verdict.NOT_EXERCISED}
    assert not_exercised == {
        "lifecycle.errored-runs",
        "interrupts.ids",
        "interrupts.uncovered-resume",
        "interrupts.resume",
        "interrupts.resolved",
        "interrupts.unknown-entry",
        "transport.protobuf",  # it answers SSE only: the binary binding is OPTIONAL
        "transport.resumable",  # nor does it offer the resumable extension (an opt-in)
    }


def test_interrupting_agent_exercises_the_interrupt_cases() -> None:
    """The FE-3 agent interrupts: the interrupt cases judge it (409 for an uncovered resume)."""
    report = check_app(raw_agent("interrupt-outcome"), sections=["frontend", "interrupts"])
    verdicts = {c.id: c.verdict for c in report.cases if c.section == "interrupts"}
    assert verdicts == {
        "interrupts.ids": Verdict.PASS,
        "interrupts.uncovered-resume": Verdict.PASS,
        "interrupts.resume": Verdict.PASS,
        "interrupts.resolved": Verdict.PASS,
        "interrupts.unknown-entry": Verdict.PASS,
    }
    assert "409" in report.case("interrupts.uncovered-resume").observed


@pytest.mark.parametrize(
    ("slip", "rule"), [("dropped-first-chunk", "AGT-ARGS-1"), ("args-rewritten", "AGT-SNAP-1")]
)
def test_producer_slips_a_snapshot_reveals_are_warnings_by_rule(slip: str, rule: str) -> None:
    """Issue 17's producer checks (docs/conformance.md, our AGT-* namespace) reach the
    checker as warnings with their own rule IDs — failures under strict."""
    agent = raw_agent(slip=slip)
    report = check_app(agent, cases=["frontend.invite"])
    case = report.case("frontend.invite")
    assert case.verdict is Verdict.WARN, case.findings
    assert rule in {f.rule for f in case.findings if f.verdict is Verdict.WARN}
    assert report.exit_code == 0
    strict = check_app(agent, cases=["frontend.invite"], strict=True)
    assert strict.exit_code == 1


@pytest.mark.run_error("RuntimeError")  # the agent's failures are the point
def test_an_agent_whose_runs_fail_says_so_without_failing_the_check() -> None:
    """RUN_ERROR is well-formed: not a failure — but reported, never a silent pass."""
    from agui_tools.transport import agent_app

    async def failing(run: object) -> None:
        raise RuntimeError("the model is down")

    report = check_app(agent_app(failing), cases=["lifecycle.stream", "input.tools-absent"])
    for case in report.cases:
        assert case.verdict is Verdict.INFO, case.findings
        assert "RUN_ERROR" in case.findings[-1].message
    assert report.exit_code == 0


def test_arguments_that_miss_the_schema_are_the_models_fault_a_warning() -> None:
    report = check_app(raw_agent(arguments={"city": 42}), cases=["frontend.arguments"])
    case = report.case("frontend.arguments")
    assert case.verdict is Verdict.WARN and case.findings[0].rule == "TOOL-21"
    assert "42" in case.findings[0].message and "get_weather" in case.findings[0].message
    assert report.exit_code == 0


def test_an_agent_that_never_calls_a_tool_is_not_exercised_and_says_what_it_did() -> None:
    report = check_app(
        raw_agent(calls_tools=False, text="I never use tools."), sections=["frontend"]
    )
    for case in report.cases:
        assert case.verdict is Verdict.NOT_EXERCISED, (case.id, case.findings)
        assert "called none of the advertised tools" in case.findings[-1].message
        assert "I never use tools." in case.findings[-1].message
    assert report.exit_code == 0
