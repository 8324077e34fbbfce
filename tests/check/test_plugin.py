"""The pytest fixture, used the way docs/check.md shows: its example file, run by pytest."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}


def _example() -> str:
    text = (ROOT / "docs" / "check.md").read_text()
    for block in re.findall(r"^```python\n(.*?)^```", text, re.S | re.M):
        if block.startswith("# test_my_agent.py"):
            return str(block)
    raise AssertionError("docs/check.md has no '# test_my_agent.py' example")


def _pytest(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_my_agent.py").write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_agent.py"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
        env=ENV,
    )


@pytest.mark.slow
def test_the_documented_example_passes(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, _example())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "1 passed" in proc.stdout


@pytest.mark.slow
def test_a_broken_agent_fails_the_test_naming_case_and_rule(tmp_path: Path) -> None:
    """The same test with a raw-SSE agent that answers its own frontend call (FE-2)."""
    broken = _example().replace(
        "agui_check(agent_app(my_agent))",
        'agui_check(__import__("tests.check.agents").check.agents.raw_agent("self-answer"))',
    )
    assert broken != _example()
    proc = _pytest(tmp_path, broken)
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "frontend.no-self-answer fail [FE-2]" in proc.stdout
    assert "Traceback" not in proc.stdout


@pytest.mark.slow
def test_the_fixture_keeps_the_agents_warnings_off_stderr(tmp_path: Path) -> None:
    """With pytest's log capture off (``-p no:logging``) nothing stands between the
    in-thread agent's warnings and stderr but the checker."""
    (tmp_path / "test_my_agent.py").write_text(_example())
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-p", "no:logging"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
        env=ENV,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "stripped unknown property" not in proc.stdout + proc.stderr, proc.stderr
    assert "VER-5" not in proc.stdout + proc.stderr, proc.stderr
