"""Issue 23 item 2: every case states its tier (from its rules' keywords in spec/RULES.md)
and the capability it needs; a capability the agent never declared or exercised leaves its
cases ``not exercised``, never ``fail``; ``--level must|should|may`` chooses which tiers'
warnings fail the exit code — in the report, every report format, the baseline file and
the command line."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from agui_tools import UsageError
from agui_tools.check import CASES, Baseline, CaseResult, Finding, Verdict
from agui_tools.check._report import Tier, counts_at
from agui_tools.check._tiers import CAPABILITIES, TIER_OVERRIDES, gate, rule_tier
from agui_tools.check.reports import html_report, junit_xml, print_report
from agui_tools.testing import serving

from .agents import binary_agent, check_app, raw_agent

ROOT = Path(__file__).resolve().parents[2]
AGUI = [sys.executable, "-m", "agui_tools"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200"}


# -- tiers: derived from the rules -------------------------------------------------------


def test_a_rule_s_tier_is_its_strongest_keyword() -> None:
    assert rule_tier("FE-2") is Tier.MUST  # "MUST NOT answer it"
    assert rule_tier("FE-11") is Tier.SHOULD  # "SHOULD call frontend tools only from …"
    assert rule_tier("INPUT-15") is Tier.MUST  # "is rejected before RUN_STARTED" counts as one
    assert rule_tier("FE-15") is Tier.MAY  # "OPTIONAL. The application's own tools"
    assert rule_tier("INT-1") is Tier.INFORMATIONAL  # "at least one": no keyword
    assert rule_tier("NO-SUCH-RULE") is Tier.INFORMATIONAL


def test_every_case_s_tier_is_derived_from_its_rules_unless_it_says_why_not() -> None:
    ids = {c.id for c in CASES}
    assert set(TIER_OVERRIDES) <= ids
    for case in CASES:
        derived = max((rule_tier(r) for r in case.rules), key=lambda t: t.strength)
        if case.id in TIER_OVERRIDES:
            tier, why = TIER_OVERRIDES[case.id]
            assert case.tier is tier and tier is not derived and len(why) > 40, case.id
        else:
            assert case.tier is derived, (case.id, case.tier, derived)
    tiers = {c.id: c.tier for c in CASES}
    assert tiers["frontend.invite"] is Tier.SHOULD
    assert tiers["frontend.no-self-answer"] is Tier.MUST
    assert tiers["transport.keep-alive"] is Tier.INFORMATIONAL
    assert tiers["transport.protobuf"] is Tier.MAY
    assert tiers["interrupts.unknown-entry"] is Tier.SHOULD  # INT-9: "SHOULD proceed"


def test_every_capability_a_case_needs_is_defined() -> None:
    needed = {c.capability for c in CASES if c.capability is not None}
    assert needed <= set(CAPABILITIES)
    assert {c.id for c in CASES if c.capability == "interrupts"} == {
        "interrupts.ids",
        "interrupts.uncovered-resume",
        "interrupts.resume",
        "interrupts.resolved",
        "interrupts.unknown-entry",
    }
    assert next(c for c in CASES if c.id == "frontend.invite").capability is None  # the probe


# -- levels ------------------------------------------------------------------------------


def test_what_fails_at_each_level() -> None:
    for level in ("must", "should", "may"):
        for tier in Tier:  # a fail is a MUST broken: it fails at every level, in every case
            assert counts_at(level, Verdict.FAIL, tier)
            for verdict in (Verdict.PASS, Verdict.INFO, Verdict.NOT_EXERCISED):
                assert not counts_at(level, verdict, tier)
        assert not counts_at(level, Verdict.WARN, Tier.INFORMATIONAL)
    assert [counts_at("must", Verdict.WARN, t) for t in (Tier.MUST, Tier.SHOULD, Tier.MAY)] == [
        False,
        False,
        False,
    ]
    assert [counts_at("should", Verdict.WARN, t) for t in (Tier.MUST, Tier.SHOULD, Tier.MAY)] == [
        True,
        True,
        False,
    ]
    assert [counts_at("may", Verdict.WARN, t) for t in (Tier.MUST, Tier.SHOULD, Tier.MAY)] == [
        True,
        True,
        True,
    ]


def test_level_chooses_which_warnings_fail_the_check() -> None:
    # a warn in a MUST case (FE-5: pendingToolCallIds SHOULD be sent) and in a SHOULD case
    # (arguments that do not fit the schema: the model's fault)
    report = check_app(
        raw_agent(pending_ids=False, arguments={"city": 5}),
        cases=["frontend.pending-ids", "frontend.arguments"],
    )
    assert report.case("frontend.pending-ids").verdict is Verdict.WARN
    assert report.case("frontend.arguments").verdict is Verdict.WARN
    assert report.level == "must" and report.exit_code == 0  # the default: only a fail fails
    report.level = "should"
    assert {c.id for c in report.failed()} == {"frontend.pending-ids", "frontend.arguments"}
    assert report.exit_code == 1 and report.to_json()["level"] == "should"


def test_a_may_case_s_warning_fails_only_at_level_may_and_strict_is_may() -> None:
    def flaky() -> Any:  # protobuf once, then SSE: a SHOULD of a MAY case (a fresh agent)
        return binary_agent("flaky-binding")

    report = check_app(flaky(), cases=["transport.protobuf"], level="should")
    assert report.case("transport.protobuf").verdict is Verdict.WARN
    assert report.capabilities.keys() == {"binary"}
    assert report.exit_code == 0
    assert check_app(flaky(), cases=["transport.protobuf"], level="may").exit_code == 1
    strict = check_app(flaky(), cases=["transport.protobuf"], strict=True)
    assert strict.effective_level == "may" and strict.exit_code == 1


def test_bad_levels_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="unknown level 'all'"):
        check_app(raw_agent(), cases=["lifecycle.stream"], level="all")
    with pytest.raises(UsageError, match="strict means level 'may'"):
        check_app(raw_agent(), cases=["lifecycle.stream"], level="must", strict=True)


# -- capabilities: declared or exercised ---------------------------------------------------


def _result(capability: str, *findings: Finding) -> CaseResult:
    res = CaseResult("x.case", "x", "a case", ("INT-10",), "p", "e", capability=capability)
    res.findings = list(findings)
    res.verdict = Verdict.FAIL
    return res


def test_a_case_whose_capability_was_never_shown_is_not_exercised_never_failed() -> None:
    res = _result("interrupts", Finding(Verdict.FAIL, "INT-10", "ended as success", 0, 3))
    gate(res, "interrupts", {"frontend-tools": "called get_weather"})
    assert res.verdict is Verdict.NOT_EXERCISED
    assert res.findings[0].rule == "CAP-1" and "'interrupts'" in res.findings[0].message
    assert [(f.verdict, f.message) for f in res.findings[1:]] == [
        (Verdict.INFO, "ended as success")  # kept, not judged
    ]
    shown = _result("interrupts", Finding(Verdict.FAIL, "INT-10", "ended as success"))
    gate(shown, "interrupts", {"interrupts": "ended a run with 1 interrupt(s)"})
    assert shown.verdict is Verdict.FAIL  # shown: judged as found


def test_capabilities_are_what_the_agent_showed_on_the_wire() -> None:
    report = check_app(raw_agent(), sections=["frontend", "interrupts", "transport"])
    assert set(report.capabilities) == {"frontend-tools"}
    assert "get_weather" in report.capabilities["frontend-tools"]
    for case in report.cases:  # it never interrupted: every interrupt case not exercised
        if case.capability == "interrupts":
            assert case.verdict is Verdict.NOT_EXERCISED, (case.id, case.findings)
    interrupting = check_app(raw_agent("interrupt-outcome"), sections=["frontend", "interrupts"])
    assert {"frontend-tools", "interrupts"} <= set(interrupting.capabilities)
    binary = check_app(binary_agent(), cases=["transport.protobuf"])
    assert "binary" in binary.capabilities


def test_a_result_for_an_advertised_call_is_not_an_agent_side_tool() -> None:
    """FE-2's fault (the agent answering the application's call) shows frontend tools, not
    tools of its own; a result for its own call does (the demo agent's check_inventory)."""
    report = check_app(raw_agent("self-answer"), cases=["frontend.invite"])
    assert set(report.capabilities) == {"frontend-tools"}


# -- reports show tier, capability and not exercised ---------------------------------------


@pytest.fixture(scope="module")
def mixed() -> Any:
    return check_app(raw_agent(pending_ids=False), sections=["frontend", "interrupts"])


def test_terminal_report_shows_tiers_capabilities_and_the_level(mixed: Any) -> None:
    out = io.StringIO()
    print_report(mixed, Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "tier" in text and "SHOULD" in text and "MUST" in text
    assert "capabilities exercised: frontend-tools" in text
    assert "never shown (their cases are not exercised): interrupts" in text
    assert "level must: only a fail fails the check" in text


def test_json_html_and_junit_show_tier_and_capability(mixed: Any) -> None:
    doc = mixed.to_json()
    case = next(c for c in doc["cases"] if c["id"] == "interrupts.resolved")
    assert case["tier"] == "MUST" and case["capability"] == "interrupts"
    assert case["verdict"] == "not exercised"
    assert doc["level"] == "must" and set(doc["capabilities"]) == {"frontend-tools"}
    page = html_report(mixed)
    assert "<th>tier</th>" in page and "<dt>capability</dt><dd>interrupts</dd>" in page
    assert "capabilities exercised: frontend-tools" in page
    xml = junit_xml(mixed)
    assert "tier: MUST" in xml and "capability: interrupts" in xml
    assert '<property name="level" value="must" />' in xml


def test_the_baseline_file_records_tier_capability_and_what_was_not_exercised(
    tmp_path: Path,
) -> None:
    report = check_app(
        raw_agent("500-on-malformed", pending_ids=False),
        cases=["input.malformed-json", "frontend.pending-ids", "interrupts.ids"],
    )
    report.level = "should"  # the FE-5 warning of a MUST case is a known failure too
    path = tmp_path / "known.json"
    Baseline.of(report).write(path)
    data = json.loads(path.read_text())
    assert data["level"] == "should"
    known = {(k["case"], k["rule"], k["verdict"]): k for k in data["known"]}
    assert set(known) == {
        ("input.malformed-json", "INPUT-15", "fail"),
        ("frontend.pending-ids", "FE-5", "warn"),
    }
    assert known[("input.malformed-json", "INPUT-15", "fail")]["capability"] is None
    fe5 = known[("frontend.pending-ids", "FE-5", "warn")]
    assert fe5["tier"] == "MUST" and fe5["capability"] == "frontend-tools"
    assert data["notExercised"] == ["interrupts.ids"]
    loaded = Baseline.load(path)
    assert loaded.level == "should" and loaded.compare(report).ok
    assert loaded.not_exercised == ["interrupts.ids"]
    report.level = "must"  # judged at must, the warning is not a failure: no longer found
    assert [(k.case, k.verdict) for k in loaded.compare(report).fixed] == [
        ("frontend.pending-ids", "warn")
    ]


def test_the_command_line_takes_level(tmp_path: Path) -> None:
    async def main() -> list[subprocess.CompletedProcess[str]]:
        async with serving(raw_agent(pending_ids=False)) as base:
            runs = []
            for extra in (
                [],
                ["--level", "should"],
                ["--level", "bogus"],
                ["--strict", "--level", "must"],
            ):
                runs.append(
                    await asyncio.to_thread(
                        subprocess.run,
                        [
                            *AGUI,
                            "check",
                            base + "/",
                            "--case",
                            "frontend.pending-ids",
                            "--json",
                            *extra,
                        ],
                        capture_output=True,
                        text=True,
                        timeout=120,
                        env=ENV,
                    )
                )
            return runs

    default, should, bogus, both = asyncio.run(main())
    assert default.returncode == 0 and json.loads(default.stdout)["level"] == "must"
    assert should.returncode == 1 and json.loads(should.stdout)["ok"] is False
    assert bogus.returncode == 2 and "invalid choice: 'bogus'" in bogus.stderr
    assert both.returncode == 2 and "strict means level 'may'" in both.stderr
    assert "Traceback" not in both.stderr


def test_an_agent_that_declares_no_protocol_version_is_warned_not_failed() -> None:
    """versioning.mdx: absence identifies a peer from before the field, so RUN-2's
    absence is a warning (failing at ``--level should``), never a fail — the framework
    adapters on a 1.0 SDK (LangGraph, Microsoft Agent Framework) are such peers."""
    report = check_app(raw_agent(declares_version=False), cases=["lifecycle.protocol-version"])
    (case,) = report.cases
    assert case.verdict is Verdict.WARN, case
    assert [f.rule for f in case.findings] == ["RUN-2"]
    assert "peer from before the field" in case.findings[0].message
    assert report.ok
    report.level = "should"
    assert not report.ok
    declared = check_app(raw_agent(), cases=["lifecycle.protocol-version"])
    assert declared.cases[0].verdict is Verdict.PASS
