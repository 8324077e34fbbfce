"""Every command against the edges a new user's shell produces (issue 26): stdin
closed or at its end, stdout's reader gone, an option the command does not know,
a file argument that is empty, binary or a directory.

Whatever the case, what docs/cli.md promises holds: no traceback, an exit code
the page lists, and an error said in one line (after the command's usage, for an
argument the parser refuses).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.terminal import AGUI, ENV, ROOT, served

DOC = (ROOT / "docs" / "cli.md").read_text()
LISTED = {int(code) for code in re.findall(r"\*\*(\d+)\*\*", DOC.split("## Getting")[0])}
TOOLS = ["--tools", "tests.helpers.cli_agents"]


def test_the_page_lists_the_exit_codes_this_matrix_allows() -> None:
    assert {0, 1, 2, 130, 141} == LISTED


@dataclass(frozen=True)
class Case:
    """One command line; ``serving`` ones run until stopped (serve, inspect)."""

    argv: tuple[str, ...]
    serving: bool = False


# the ordinary invocation of each command: what a user would type first
COMMANDS: dict[str, Case] = {
    "demo": Case(("demo", "--fast")),
    "serve": Case(("serve", "--port", "0"), serving=True),
    "run": Case(("run", "{url}", 'call act {{"what": "x"}}', *TOOLS)),
    "chat": Case(("chat", "{url}", *TOOLS)),
    "inspect": Case(("inspect", "{url}", "--no-browser"), serving=True),
    "verify": Case(("verify", "-")),
    "conformance": Case(("conformance", "tests/conformance/streams")),
    "check": Case(("check", "{url}", "--case", "input.malformed-json")),
}

# a file argument per command, in the place a user gives one
FILE_ARGS: dict[str, list[tuple[str, ...]]] = {
    "demo": [("demo", "--fast", "--script", "{f}"), ("demo", "--fast", "--yes", "--journal",
             "{f}"), ("demo", "--fast", "--yes", "--store", "{f}")],
    "run": [("run", "{url}", "hi", "--script", "{f}"), ("run", "{url}", "hi", "--journal", "{f}"),
            ("run", "{url}", "hi", "--save", "{f}")],
    "chat": [("chat", "{url}", "--script", "{f}"), ("chat", "{url}", "--store", "{f}"),
             ("chat", "{url}", "--save", "{f}")],
    "verify": [("verify", "{f}"), ("verify", "{f}", "--input", "{f}")],
    "conformance": [("conformance", "{f}")],
    "check": [("check", "{url}", "--tools", "{f}"),
              ("check", "{url}", "--case", "input.malformed-json", "--junit", "{f}")],
    "inspect": [("inspect", "{url}", "--tools", "{f}")],
    "serve": [("serve", "{f}")],
}  # fmt: skip


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with served() as found:
        yield found


@dataclass
class Outcome:
    code: int
    stderr: str


def _launch(
    argv: list[str], *, stdin: str, stdout: str, serving: bool, cwd: Path = ROOT
) -> Outcome:
    """Run ``argv``: stdin ``closed`` / ``null``; stdout ``pipe`` / ``gone`` (reader left)."""
    read_end, write_end = os.pipe()
    if stdout == "gone":
        os.close(read_end)
        out_target: int = write_end
    else:
        os.close(read_end)
        os.close(write_end)
        out_target = subprocess.PIPE  # type: ignore[assignment]
    preexec = (lambda: os.close(0)) if stdin == "closed" else None
    proc = subprocess.Popen(
        [*AGUI, *argv],
        stdin=None if stdin == "closed" else subprocess.DEVNULL,
        stdout=out_target,
        stderr=subprocess.PIPE,
        preexec_fn=preexec,
        env=ENV,
        cwd=cwd,
    )
    if stdout == "gone":
        os.close(write_end)
    try:
        if serving:
            # a server runs until stopped: time to start (or to refuse), then Ctrl-C
            deadline = time.monotonic() + 3
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(
            f"{argv} still running:\n{err.decode(errors='replace')[-2000:]}"
        ) from None
    return Outcome(proc.returncode, err.decode(errors="replace"))


def _holds_the_promises(argv: list[str], outcome: Outcome) -> None:
    err = outcome.stderr
    assert "Traceback" not in err and "Error:" not in err.split(":", 1)[0], (argv, err[-3000:])
    assert outcome.code in LISTED, (argv, outcome.code, err[-3000:])
    if outcome.code == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        if lines and lines[0].startswith("usage: "):  # the parser: usage, then one error line
            lines = [line for line in lines if not line.startswith((" ", "usage: "))]
        assert len(lines) == 1 and lines[0].startswith("agui-tools"), (argv, err[-3000:])


def _argv(template: tuple[str, ...], url: str, f: str = "") -> list[str]:
    return [a.replace("{url}", url).replace("{f}", f).replace("{{", "{").replace("}}", "}")
            for a in template]  # fmt: skip


STREAMS = [("closed", "pipe"), ("null", "pipe"), ("null", "gone"), ("closed", "gone")]


@pytest.mark.parametrize(("stdin", "stdout"), STREAMS, ids=lambda v: v)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_standard_streams(url: str, command: str, stdin: str, stdout: str) -> None:
    case = COMMANDS[command]
    argv = _argv(case.argv, url)
    outcome = _launch(argv, stdin=stdin, stdout=stdout, serving=case.serving)
    _holds_the_promises(argv, outcome)
    if stdout == "gone" and not case.serving and outcome.code != 2:  # 2: said on stderr only
        assert outcome.code == 141, (argv, outcome.code, outcome.stderr[-2000:])


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_unknown_option(url: str, command: str) -> None:
    argv = [*_argv(COMMANDS[command].argv, url), "--no-such-option"]
    outcome = _launch(argv, stdin="null", stdout="pipe", serving=False)
    _holds_the_promises(argv, outcome)
    assert outcome.code == 2
    assert outcome.stderr.startswith(f"usage: agui-tools {command} "), outcome.stderr


def _file(tmp_path: Path, kind: str) -> Path:
    if kind == "directory":
        path = tmp_path / "a-directory"
        path.mkdir()
        return path
    path = tmp_path / f"{kind}.file"
    path.write_bytes(b"" if kind == "empty" else bytes(range(256)) * 4)
    return path


@pytest.mark.parametrize("kind", ["empty", "binary", "directory"])
@pytest.mark.parametrize(
    "template",
    [t for ts in FILE_ARGS.values() for t in ts],
    ids=lambda t: "-".join(a for a in t if a not in ("{url}", "{f}", "--fast", "hi")),
)
def test_a_file_argument(url: str, tmp_path: Path, template: tuple[str, ...], kind: str) -> None:
    argv = _argv(template, url, str(_file(tmp_path, kind)))
    serving = template[0] in ("serve", "inspect")
    outcome = _launch(argv, stdin="null", stdout="pipe", serving=serving, cwd=tmp_path)
    _holds_the_promises(argv, outcome)
