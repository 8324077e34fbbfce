"""docs/cli.md and every command's ``--help`` agree: the same options, the same exit
codes, and an example for each option (issue 13)."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agui_tools.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "cli.md").read_text()


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


COMMANDS = sorted(_subparsers())


def _section(command: str) -> str:
    match = re.search(rf"^## `agui-tools {command}\b.*?$(.*?)(?=^## |\Z)", DOC, re.M | re.S)
    assert match, f"docs/cli.md has no section '## `agui-tools {command} …`'"
    return match.group(1)


def _rows(section: str) -> list[tuple[set[str], str]]:
    """Option rows of the section's table: (option strings, example cell)."""
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`-"):
            names = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", cells[0]))
            rows.append((names, cells[2]))
    return rows


def _exit_codes(text: str) -> set[str]:
    match = re.search(r"Exit codes:(.*?)(?:\n\s*\n|\Z)", text, re.S)
    assert match, "no 'Exit codes:' paragraph"
    return set(re.findall(r"\b(\d+)\b", match.group(1)))


@pytest.mark.parametrize("command", COMMANDS)
def test_each_option_of_help_is_documented_with_an_example(command: str) -> None:
    parser = _subparsers()[command]
    options = {s for a in parser._actions for s in a.option_strings if s not in ("-h", "--help")}
    rows = _rows(_section(command))
    documented = set().union(*(names for names, _ in rows)) if rows else set()
    assert documented == options, f"--help has {sorted(options)}, docs {sorted(documented)}"
    for names, example in rows:
        assert f"agui-tools {command}" in example, (command, names, example)
        assert any(re.search(rf"{re.escape(n)}\b", example) for n in names), (names, example)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_and_docs_give_the_same_exit_codes(command: str) -> None:
    help_text = subprocess.run(
        [sys.executable, "-m", "agui_tools", command, "--help"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert _exit_codes(help_text) == _exit_codes(_section(command))


def test_the_docs_say_where_the_command_is_and_it_is_there() -> None:
    """`make` installs into .venv/, not on the PATH: the docs say how to run it."""
    assert ".venv/bin/agui-tools" in DOC and "source .venv/bin/activate" in DOC
    installed = Path(sys.prefix) / "bin" / "agui-tools"
    assert installed.exists(), installed
    version = subprocess.run([str(installed), "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("agui-tools ")
