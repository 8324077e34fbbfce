"""Correct agents get no failure: ours (``agui-tools serve``, the demo agent) and one built
only with the official ``ag-ui-protocol`` package.

The acceptance test of issue 14 runs the real command line against the real
``agui-tools serve`` process: every case passes or is honestly "not exercised",
exit code 0, with the JSON, JUnit and HTML reports written. The elapsed time of
the whole default run is printed (``pytest -s`` shows it), never asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agui_tools.check import Verdict

from .agents import agui_tools_serve, check_app, official_agent

ROOT = Path(__file__).resolve().parents[2]
AGUI = [sys.executable, "-m", "agui_tools"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "120"}
ALLOWED = {Verdict.PASS, Verdict.INFO, Verdict.NOT_EXERCISED}


@pytest.mark.slow
def test_agui_tools_check_against_agui_tools_serve(tmp_path: Path) -> None:
    junit, page = tmp_path / "check.xml", tmp_path / "check.html"
    with agui_tools_serve() as url:
        start = time.perf_counter()
        proc = subprocess.run(
            [*AGUI, "check", url, "--json", "--junit", str(junit), "--html", str(page)],
            capture_output=True,
            text=True,
            timeout=120,
            env=ENV,
        )
        elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    document = json.loads(proc.stdout)
    print(f"\nagui-tools check against agui-tools serve: {elapsed:.1f} s, {document['counts']}")
    assert document["ok"] is True
    verdicts = {c["id"]: c["verdict"] for c in document["cases"]}
    assert set(verdicts.values()) <= {"pass", "info", "not exercised"}, verdicts
    # the demo agent exercises the whole round trip and its refund's interrupt; only errored
    # runs it never makes, and serve offers resumable runs only with --resumable
    assert {k for k, v in verdicts.items() if v == "not exercised"} == {
        "lifecycle.errored-runs",
        "transport.resumable",
    }
    assert set(document["capabilities"]) == {
        "frontend-tools",
        "agent-tools",
        "interrupts",
        "binary",
    }
    cases = {c["id"]: c for c in document["cases"]}
    for case_id in (
        "interrupts.ids",
        "interrupts.uncovered-resume",
        "interrupts.resume",
        "interrupts.resolved",
        "interrupts.unknown-entry",
    ):
        assert verdicts[case_id] == "pass", cases[case_id]["findings"]
    # resolved: the refund issued; cancelled: not — each on its own interrupted thread
    assert "refunded 4.50 EUR" in cases["interrupts.resolved"]["observed"]
    assert "the refund was cancelled" in cases["interrupts.resume"]["observed"]
    resolving = cases["interrupts.resolved"]["exchanges"][-1]["request"]
    assert resolving["resume"][0]["status"] == "resolved"
    assert resolving["resume"][0]["payload"] == {"approved": True}
    # the refund call the interrupt names is covered by the entry, never by a tool message
    assert not [m for m in resolving["messages"] if m["role"] == "tool"]
    assert verdicts["frontend.continuation"] == "pass" and verdicts["frontend.decline"] == "pass"
    # serve offers the binary binding: judged, frames and events, against its SSE twins
    protobuf = next(c for c in document["cases"] if c["id"] == "transport.protobuf")
    assert protobuf["verdict"] == "pass", protobuf["findings"]
    assert protobuf["observed"].count("well-formed frame(s), the same") == 2, protobuf["observed"]
    assert "<testsuites" in junit.read_text() and "<!DOCTYPE html>" in page.read_text()


def test_an_agent_built_only_with_the_official_package_gets_no_failure() -> None:
    report = check_app(official_agent())
    assert report.exit_code == 0
    assert {c.verdict for c in report.cases} <= ALLOWED, [
        (c.id, c.findings) for c in report.cases if c.verdict not in ALLOWED
    ]
    assert report.case("frontend.continuation").verdict is Verdict.PASS
    assert report.case("input.wrong-type").observed.startswith("HTTP 422")
