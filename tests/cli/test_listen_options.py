"""The HTTP front's limits on the command line (serve, proxy, mock share them): a value
that is no limit is refused while parsing, in one usage line; the defaults are the
library's own."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agui_tools.cli import build_parser
from agui_tools.transport._deadlines import DEFAULT_HEADER_TIMEOUT, DEFAULT_SEND_TIMEOUT
from agui_tools.transport._front import DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_CONCURRENCY
from tests.helpers.terminal import AGUI, ENV, ROOT

CAPTURE = b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'


def _command(name: str, tmp_path: Path) -> list[str]:
    if name == "serve":
        return ["serve"]
    if name == "proxy":
        return ["proxy", "http://127.0.0.1:9/agent"]
    capture = tmp_path / "run.sse"
    capture.write_bytes(CAPTURE)
    return ["mock", str(capture)]


@pytest.mark.parametrize("command", ["serve", "proxy", "mock"])
@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--limit-concurrency", "0"),
        ("--limit-concurrency", "-3"),
        ("--body-timeout", "0"),
        ("--header-timeout", "nan"),
        ("--send-timeout", "-1"),
        ("--body-timeout", "inf"),
    ],
)
def test_a_value_that_is_no_limit_is_one_usage_line(
    command: str, option: str, value: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [*AGUI, *_command(command, tmp_path), "--port", "0", option, value],
        capture_output=True, text=True, timeout=60, env=ENV, cwd=ROOT, input="",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and not done.stdout, done.stderr
    said = done.stderr.strip().splitlines()[-1]
    assert option in said and value in said, done.stderr


@pytest.mark.parametrize("command", ["serve", "proxy", "mock"])
def test_the_defaults_are_the_front_s_own(command: str, tmp_path: Path) -> None:
    args = build_parser().parse_args(_command(command, tmp_path))
    assert args.limit_concurrency == DEFAULT_MAX_CONCURRENCY
    assert args.body_timeout == DEFAULT_BODY_TIMEOUT
    assert args.header_timeout == DEFAULT_HEADER_TIMEOUT
    assert args.send_timeout == DEFAULT_SEND_TIMEOUT
