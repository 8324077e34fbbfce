"""The edges a new user hits (issue 26), each through the real command — in a
terminal (a pty) where the user's path is a terminal, a subprocess with a pipe
or a closed descriptor where it is one."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.terminal import AGUI, ENV, ROOT, served, terminal

TOOLS = ["--tools", "tests.helpers.cli_agents"]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with served() as found:
        yield found


def agui(
    *args: str, stdin: str | None = "", cwd: Path = ROOT, **kwargs: object
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [*AGUI, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        cwd=cwd,
        **kwargs,
    )


def no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]


# -- 1. an edit the tool's schema refuses ---------------------------------------------------


def test_a_scripted_edit_the_schema_refuses_is_said_and_the_next_line_answers(
    tmp_path: Path,
) -> None:
    script = tmp_path / "a.txt"
    script.write_text('edit {"sku":"widget","qty":"three"}\n')
    proc = agui("demo", "--fast", "--script", str(script))
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "edit refused [TOOL-21]" in out and '/qty: "three" is not of type "integer"' in out
    assert "approved (edited arguments)" not in out  # never "approved" for a refused edit
    # the script had no next line: declined as nobody's decision
    after = out.split("edit refused", 1)[1]
    assert "→ declined — nobody answered (the script had no answer" in after


def test_a_scripted_edit_refused_then_a_valid_one_is_approved(url: str, tmp_path: Path) -> None:
    script = tmp_path / "a.txt"
    script.write_text('edit {"what": 3}\nedit {"what": "fixed"}\n')
    proc = agui("run", url, 'call act {"what": "a"}', *TOOLS, "--script", str(script), "--json")
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert "edit refused [TOOL-21]" in proc.stderr and "/what: 3 is not of type" in proc.stderr
    assert proc.stderr.count("→ approved (edited arguments)") == 1
    (tool,) = [m for m in json.loads(proc.stdout)["messages"] if m["role"] == "tool"]
    assert tool["content"] == "did fixed"


@pytest.mark.parametrize("command", ["run", "chat"])
def test_an_edit_typed_at_the_terminal_the_schema_refuses_is_asked_again(
    url: str, command: str
) -> None:
    prompt = 'call act {"what": "a"}'
    args = ["run", url, prompt, *TOOLS] if command == "run" else ["chat", url, *TOOLS]
    with terminal(args) as term:
        if command == "chat":
            term.expect(r"you> ")
            term.type(prompt + "\r")
        term.expect(r"\[a\]pprove / \[d\]ecline / \[e\]dit")
        term.type("e\r")
        term.expect(r"new arguments \(JSON object\): ")
        term.type('{"what": 3}\r')
        term.expect(r"edit refused \[TOOL-21\].*/what: 3 is not of type")
        term.expect(r"\[a\]pprove / \[d\]ecline / \[e\]dit")  # asked again
        term.type("e\r")
        term.expect(r"new arguments \(JSON object\): ")
        term.type('{"what": "b"}\r')
        term.expect(r"→ approved \(edited arguments\)")
        term.expect(r"did b")
        if command == "chat":
            term.expect(r"you> ")
            term.type("/quit\r")
        assert term.wait() == 0, term.text[-3000:]
        assert "Traceback" not in term.text and "UsageError" not in term.text
        assert term.text.count("→ approved") == 1
