"""The reports: JUnit XML valid against the schema CI systems read, a self-contained and
escaped HTML page, the JSON document docs/cli.md describes, the terminal tables."""

from __future__ import annotations

import io
import re
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import xmlschema
from rich.console import Console

from agui_tools.check import CheckReport, Verdict
from agui_tools.check.reports import html_report, junit_xml, print_report

from .agents import check_app, raw_agent

XSD = xmlschema.XMLSchema(Path(__file__).parent / "data" / "junit.xsd")
HOSTILE = '</li><script>alert(1)</script><img src=x onerror=alert(2)> & "quotes" \x07'


@pytest.fixture(scope="module")
def failing() -> CheckReport:
    # a MUST broken (a result for a call never started) and a SHOULD skipped (no pendingToolCallIds)
    return check_app(raw_agent("result-unknown-call", pending_ids=False))


@pytest.fixture(scope="module")
def passing() -> CheckReport:
    return check_app(raw_agent(), sections=["input", "lifecycle", "interrupts"])


@pytest.fixture(scope="module")
def hostile() -> CheckReport:
    """An agent whose every word is markup, and a fault so its events are shown highlighted."""
    return check_app(raw_agent("finished-after-error", text=HOSTILE), cases=["lifecycle.*"])


def test_junit_is_valid_against_the_schema(failing: CheckReport, passing: CheckReport) -> None:
    for report in (failing, passing):
        XSD.validate(junit_xml(report))  # raises, naming the element, when invalid


def test_the_schema_rejects_what_ci_systems_would() -> None:
    """The validator can fail: a testcase without a name, a count that is not a number."""
    good = (
        '<testsuites><testsuite name="s" tests="1" failures="0" errors="0" time="0.1" '
        'timestamp="2026-01-01T00:00:00" hostname="h"><testcase name="c" classname="k" '
        'time="0.1"/></testsuite></testsuites>'
    )
    XSD.validate(good)
    for bad in (
        good.replace('name="c" ', ""),
        good.replace('tests="1"', 'tests="one"'),
        good.replace("<testcase", "<system-out/><testcase"),
    ):
        assert not XSD.is_valid(bad), bad


def test_junit_counts_and_outcomes(failing: CheckReport) -> None:
    root = ET.fromstring(junit_xml(failing))
    cases = {tc.get("name", "").split(":")[0]: tc for tc in root.iter("testcase")}
    assert len(cases) == len(failing.cases)
    assert int(root.get("failures", "-1")) == len(failing.failed()) >= 1
    failure = cases["frontend.invite"].find("failure")
    assert failure is not None and failure.get("type") == "TOOL-10"
    assert "[TOOL-10]" in (failure.get("message") or "")
    skipped = [k for k, tc in cases.items() if tc.find("skipped") is not None]
    assert set(skipped) == {c.id for c in failing.cases if c.verdict is Verdict.NOT_EXERCISED}


def test_strict_makes_warnings_junit_failures(failing: CheckReport) -> None:
    warned = [c.id for c in failing.cases if c.verdict is Verdict.WARN]
    assert "frontend.pending-ids" in warned  # pendingToolCallIds left out: a SHOULD
    failing.strict = True
    try:
        root = ET.fromstring(junit_xml(failing))
        failed = {
            tc.get("name", "").split(":")[0]
            for tc in root.iter("testcase")
            if tc.find("failure") is not None
        }
        assert set(warned) <= failed
        assert failing.exit_code == 1
    finally:
        failing.strict = False


def test_html_is_one_self_contained_page(failing: CheckReport) -> None:
    page = html_report(failing)
    assert page.startswith("<!DOCTYPE html>")
    for external in ("<script", "<link", " src=", "@import", "url("):
        assert external not in page, external
    assert not re.search(r'href="(?!#)', page)  # only in-page anchors
    # per case: verdict, rule text, expected, observed, transcript
    assert 'id="case-frontend-invite"' in page
    assert "A producer that calls a frontend tool MUST NOT answer it" in page  # FE-2's text
    assert "is a message in its own right" in page  # TOOL-10's, the failing rule
    assert "<dt>expected</dt>" in page and "<dt>observed</dt>" in page
    assert '<ol class="events" start="0">' in page and 'class="offending"' in page


def test_html_escapes_everything_the_agent_sent(hostile: CheckReport) -> None:
    page = html_report(hostile)
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'class="offending"' in page  # the RUN_FINISHED after RUN_ERROR
    XSD.validate(junit_xml(hostile))  # the control character is not carried into XML


def test_json_document_has_the_documented_shape(failing: CheckReport) -> None:
    doc = failing.to_json()
    assert set(doc) == {
        "url",
        "agui_tools",
        "started",
        "seconds",
        "strict",
        "level",
        "ok",
        "stopped",
        "capabilities",
        "counts",
        "cases",
    }
    assert doc["stopped"] is None  # ran to its end
    assert doc["ok"] is False and doc["counts"]["fail"] >= 1
    case = next(c for c in doc["cases"] if c["id"] == "frontend.invite")
    assert set(case) == {
        "id",
        "section",
        "title",
        "verdict",
        "tier",
        "capability",
        "rules",
        "page",
        "expected",
        "observed",
        "findings",
        "exchanges",
        "seconds",
    }
    finding = next(f for f in case["findings"] if f["verdict"] == "fail")
    assert set(finding) == {"verdict", "rule", "message", "exchange", "event"}
    exchange = case["exchanges"][finding["exchange"]]
    assert {"label", "request", "status", "contentType", "events", "comments", "seconds"} <= set(
        exchange
    )
    assert '"TOOL_CALL_RESULT"' in exchange["events"][finding["event"]]
    # every key the document has is documented in docs/cli.md
    cli_doc = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    for key in [*doc, *case, *finding, *exchange]:
        assert f"`{key}`" in cli_doc, key


def test_terminal_report_groups_by_section(failing: CheckReport) -> None:
    out = io.StringIO()
    print_report(failing, Console(file=out, width=160, color_system=None))
    text = out.getvalue()
    positions = [text.index(f"\n{section}") for section, _ in failing.sections()]
    assert positions == sorted(positions)
    assert "[TOOL-10]" in text and "FAILED" in text


def test_the_terminal_report_reflows_at_80_columns(failing: CheckReport) -> None:
    """#36 item 8: at 80 columns the table squeezed the observation to 2 characters a line,
    cutting words ('RunAgentI…'). Narrow, each case is two lines: id, tier and rules, then
    the observation wrapped at its words; wide (120), the table, its observation column
    wide enough to read."""
    from agui_tools._text import terminal_text
    from agui_tools.check.reports import _headline

    def render(width: int) -> str:
        out = io.StringIO()
        print_report(failing, Console(file=out, width=width, color_system=None))
        return out.getvalue()

    narrow = render(80)
    assert max(len(line) for line in narrow.splitlines()) <= 80
    flat = " ".join(narrow.split())
    for case in failing.cases:
        assert case.id in narrow
        said = terminal_text(_headline(case, 90 if case.verdict is Verdict.PASS else None))
        for word in said.split():  # every word whole: wrapped between words, never cut
            assert len(word) > 60 or word in flat, (case.id, word)
    wide = render(120)
    header = next(line for line in wide.splitlines() if "observed" in line and "case" in line)
    observed = header.split("┃")[-2]
    assert len(observed) >= 30, header  # the observation column is wide enough to read


def test_progress_in_a_terminal_prints_the_lines_above_a_live_bar(failing: CheckReport) -> None:
    """#36 item 7: a live bar in a TTY, the per-case lines printed above it; an agent's
    text on a line is escaped (one line, controls shown), the bar gone at the end."""
    from agui_tools.check.reports import CaseProgress

    out = io.StringIO()
    case = failing.case("frontend.pending-ids")
    case.observed = "line one\nline two \x1b[31mred"
    total = len(failing.cases)
    with CaseProgress(total, "http://x/\x1b[2J", file=out, live=True) as progress:
        progress(failing.cases[0], Verdict.PASS, 1, total)
        progress(case, case.verdict, 2, total)
    text = out.getvalue()
    assert f"[ 1/{total}] pass          input.malformed-json (" in text
    assert "line one\\nline two \\x1b[31mred" in text and "\x1b[31m" not in text
