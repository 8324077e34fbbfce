"""``agui-tools serve``: bad usage found before anything is bound or printed, the
port bound before "Serving …" is printed, logs on stderr (issue 13)."""

from __future__ import annotations

import re
import socket
import subprocess
import time

import httpx
import pytest

from tests.helpers.terminal import AGUI, ENV, ROOT

AGENT = "tests.helpers.cli_agents:scripted"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--path", "noslash"], "argument --path: 'noslash' is not a path: it must start with '/'"),
        (["--path", "/a b"], "is not a path: no spaces"),
        (["tests.helpers.cli_agents:act"], "is not an async function: an agent is `async def act"),
    ],
    ids=["path-no-slash", "path-space", "sync-agent"],
)
def test_bad_usage_is_one_line_exit_2_and_nothing_on_stdout(args: list[str], says: str) -> None:
    proc = subprocess.run(
        [*AGUI, "serve", "--port", "0", *args],
        capture_output=True, text=True, timeout=60, env=ENV, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr and "Traceback" not in proc.stderr and proc.stdout == ""


def test_a_port_in_use_is_said_without_first_claiming_to_serve() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [*AGUI, "serve", AGENT, "--port", str(port)],
            capture_output=True, text=True, timeout=60, env=ENV, cwd=ROOT,
        )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stdout == ""  # the line scripts read is not printed for a server that is not
    assert proc.stderr.strip() == (
        f"agui-tools serve: cannot serve on 127.0.0.1:{port}: Address already in use"
    )


def test_the_printed_url_answers_at_once_and_the_access_log_goes_to_stderr() -> None:
    server = subprocess.Popen(
        [*AGUI, "serve", AGENT, "--port", "0", "--access-log", "--log-level", "info"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    try:
        assert server.stdout is not None and server.stderr is not None
        line = server.stdout.readline()
        url = re.match(r"Serving AG-UI agent at (\S+)", line).group(1)  # type: ignore[union-attr]
        answer = httpx.post(  # a JSON body the agent refuses: 422, logged
            url, content=b"[]", headers={"Content-Type": "application/json"}, timeout=10
        )  # no retry: bound before printed
        assert answer.status_code == 422
        deadline = time.monotonic() + 30
        seen = ""
        while '"POST /agent HTTP/1.1" 422' not in seen:
            assert time.monotonic() < deadline, seen
            seen += server.stderr.readline()
        assert "uvicorn.access" in seen
    finally:
        server.terminate()
        server.wait(timeout=20)
    assert server.stdout.read() == ""  # stdout holds the one line, nothing else


@pytest.mark.parametrize(
    ("loop", "runs_on"), [("asyncio", "asyncio"), ("uvloop", "uvloop"), (None, "asyncio")]
)
def test_serve_runs_on_the_event_loop_chosen_asyncio_by_default(
    loop: str | None, runs_on: str
) -> None:
    from tests.helpers.terminal import served

    extra = [] if loop is None else ["--loop", loop]
    with served("tests.helpers.cli_agents:which_loop", *extra) as url:
        body = {"threadId": "t", "runId": "r", "messages": [], "protocolVersion": "1.1"}
        answer = httpx.post(url, json=body, headers={"Accept": "text/event-stream"}, timeout=30)
    deltas = re.findall(r'"delta":"([^"]*)"', answer.text)
    assert "".join(deltas) == runs_on, answer.text
