"""``--write-baseline FILE`` / ``--baseline FILE``: an agent's known faults recorded once,
so a CI run fails on a new fault only — and says when a known one is fixed."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agui_tools import UsageError
from agui_tools.check import Baseline
from agui_tools.testing import serving

from .agents import check_app, raw_agent

ROOT = Path(__file__).resolve().parents[2]
AGUI = [sys.executable, "-m", "agui_tools"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "160"}
CASES = ["frontend.*"]


def _cli(app: Any, *args: str) -> subprocess.CompletedProcess[str]:
    async def main() -> subprocess.CompletedProcess[str]:
        async with serving(app) as base:
            return await asyncio.to_thread(
                subprocess.run,
                [*AGUI, "check", base + "/", "--case", "frontend.*", *args],
                capture_output=True,
                text=True,
                timeout=120,
                env=ENV,
            )

    return asyncio.run(main())


def test_write_then_rerun_is_green_and_says_what_it_knows(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    wrote = _cli(raw_agent("self-answer"), "--write-baseline", str(path))
    assert wrote.returncode == 0, wrote.stdout + wrote.stderr
    recorded = json.loads(path.read_text())
    assert [(k["case"], k["rule"], k["verdict"]) for k in recorded["known"]] == [
        ("frontend.no-self-answer", "FE-2", "fail")
    ]
    assert "1 known failure(s)" in wrote.stdout

    again = _cli(raw_agent("self-answer"), "--baseline", str(path))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "baseline.json: 1 known, 0 new, 0 fixed — OK" in again.stdout, again.stdout

    plain = _cli(raw_agent("self-answer"))  # without the baseline the fault still fails
    assert plain.returncode == 1


def test_a_new_fault_turns_it_red_and_a_fixed_one_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    Baseline.of(check_app(raw_agent("self-answer"), cases=CASES)).write(path)
    baseline = Baseline.load(path)

    other = baseline.compare(check_app(raw_agent("wrong-pending"), cases=CASES))
    assert not other.ok
    assert [(k.case, k.rule) for k in other.new] == [("frontend.pending-ids", "FE-5")]
    assert [(k.case, k.rule) for k in other.fixed] == [("frontend.no-self-answer", "FE-2")]

    fixed = baseline.compare(check_app(raw_agent(), cases=CASES))
    assert fixed.ok and not fixed.new and not fixed.known
    assert [(k.case, k.rule) for k in fixed.fixed] == [("frontend.no-self-answer", "FE-2")]

    red = _cli(raw_agent("wrong-pending"), "--baseline", str(path))
    assert red.returncode == 1, red.stdout
    assert "new: frontend.pending-ids [FE-5]" in red.stdout, red.stdout
    assert "fixed: frontend.no-self-answer [FE-2]" in red.stdout, red.stdout


def test_a_baseline_that_is_not_one_is_bad_usage(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"known": [{"case": 1}]}')
    with pytest.raises(UsageError, match="not a baseline"):
        Baseline.load(bad)
    with pytest.raises(UsageError, match="cannot read the baseline"):
        Baseline.load(tmp_path / "missing.json")
    proc = subprocess.run(
        [*AGUI, "check", "http://127.0.0.1:1/", "--baseline", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
    )
    assert proc.returncode == 2 and "not a baseline" in proc.stderr, proc.stderr
