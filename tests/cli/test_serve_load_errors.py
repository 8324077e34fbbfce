"""``serve AGENT`` that names no agent says why in words (issue 36, "smaller"): the
line says what happened first; an exception raised while importing the user's
module is still named, after its words."""

from __future__ import annotations

import subprocess

import pytest

from tests.helpers.terminal import AGUI, ENV, ROOT


@pytest.mark.parametrize(
    ("agent", "said"),
    [
        ("nocolon", "expected \"module:function\", got 'nocolon'"),
        ("json:nothing", "'json' has no callable 'nothing'"),
        ("json:dumps", "json:dumps is not an async function: an agent is"),
    ],
)
def test_a_wrong_agent_is_said_in_words(agent: str, said: str) -> None:
    proc = subprocess.run(
        [*AGUI, "serve", agent, "--port", "0"],
        capture_output=True, text=True, timeout=120, env=ENV, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"agui-tools serve: cannot load the agent: {said}"), line
    assert "Error:" not in line, line


def test_the_modules_own_exception_is_named() -> None:
    proc = subprocess.run(
        [*AGUI, "serve", "no_such_module_here:agent", "--port", "0"],
        capture_output=True, text=True, timeout=120, env=ENV, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert line.startswith(
        "agui-tools serve: cannot load the agent: No module named 'no_such_module_here' "
        "(ModuleNotFoundError)"
    ), line
