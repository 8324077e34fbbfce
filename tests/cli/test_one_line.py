"""An agent's or a peer's string never starts a new line of a command's output (issue 34,
item 4): a tool name, an id, an error message, a finding's detail holding
``"\\n error [FE-8] frontend forged"`` is shown escaped, on its own line's line —
so nobody reading the output (a person, a CI grep) can be told a rule was broken
that was not.

Each command runs as a real process against a hostile agent (or recording, or
frontend). Text content — the assistant's message, a tool's result — is the
agent's to lay out, and is not tried here.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.helpers.proxy import mock_cmd, proxy_cmd
from tests.helpers.scripted_server import serve, thread_and_run
from tests.helpers.terminal import AGUI, ENV, ROOT

FORGED = "\n error [FE-8] frontend forged"


def _failing_run(thread: str, run: str) -> list[dict[str, Any]]:
    """A run that ends with RUN_ERROR, a forged line in its message and a call pending
    whose id and name forge one too."""
    call = f"call{FORGED}"
    return [
        {"type": "RUN_STARTED", "threadId": thread, "runId": run},
        {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": f"tool{FORGED}"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": call},
        {"type": "RUN_ERROR", "message": f"failed{FORGED}", "code": f"code{FORGED}"},
    ]


def _hostile_run(thread: str, run: str) -> list[dict[str, Any]]:
    """The failing run with, before its end, arguments for a call never started (a
    finding naming its id)."""
    *started, end = _failing_run(thread, run)
    ghost = {"type": "TOOL_CALL_ARGS", "toolCallId": f"ghost{FORGED}", "delta": "{}"}
    return [*started, ghost, end]


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)


@pytest.fixture(scope="module")
def agent() -> Iterator[str]:
    """A server answering every POST with the hostile run, in the thread and run asked for."""

    async def endpoint(request: Request) -> Response:
        thread, run = await thread_and_run(request)
        events = _failing_run if "failing" in request.url.path else _hostile_run
        return Response(_sse(events(thread, run)), media_type="text/event-stream")

    routes = [Route(p, endpoint, methods=["POST"]) for p in ("/agent", "/failing")]
    with serve(Starlette(routes=routes)) as base:
        yield base


def _hostile_input(thread: str = f"thread{FORGED}") -> dict[str, Any]:
    """A frontend's input choosing every string: ids, a tool's name, a call left unanswered."""
    return {
        "threadId": thread, "runId": f"run{FORGED}", "state": {}, "context": [],
        "forwardedProps": {}, "tools": [{"name": f"tool{FORGED}", "description": "d", "parameters": {}}],
        "messages": [
            {"id": f"m{FORGED}", "role": "assistant", "content": "",
             "toolCalls": [{"id": f"c{FORGED}", "type": "function",
                            "function": {"name": f"tool{FORGED}", "arguments": "{}"}}]},
            {"id": f"u{FORGED}", "role": "user", "content": "hi"},
        ],
    }  # fmt: skip


def agui(*args: str, stdin: str = "") -> str:
    proc = subprocess.run(
        [*AGUI, *args], input=stdin.encode(), capture_output=True, timeout=300, env=ENV, cwd=ROOT
    )  # fmt: skip
    return proc.stdout.decode() + proc.stderr.decode()


def _stopped(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return out + err


def _verify(agent: str, tmp_path: Path) -> str:
    capture = tmp_path / "hostile.sse"
    capture.write_bytes(_sse(_failing_run("t", "r")))
    rejected = tmp_path / "rejected.sse"
    rejected.write_bytes(_sse(_hostile_run("t", "r")))
    return agui("verify", str(capture)) + agui("verify", str(rejected))


def _proxy(agent: str, tmp_path: Path) -> str:
    proc, url = proxy_cmd(f"{agent}/agent")
    try:
        httpx.post(url, json=_hostile_input(), timeout=30)  # both sides break a rule
        time.sleep(1.0)  # the verdicts are given a moment (a bound, not a measure)
    finally:
        said = _stopped(proc)
    return said


def _check(agent: str, tmp_path: Path) -> str:
    return agui("check", f"{agent}/failing", "--timeout", "5")


def _run(agent: str, tmp_path: Path) -> str:
    return agui("run", f"{agent}/failing", "hi", "--yes")


def _chat(agent: str, tmp_path: Path) -> str:
    return agui("chat", f"{agent}/failing", "--yes", stdin="hi\n")


def _mock(agent: str, tmp_path: Path) -> str:
    capture = tmp_path / "hostile.sse"
    capture.write_bytes(_sse(_failing_run("t", "r")))
    proc, url = mock_cmd(str(capture))
    try:
        httpx.post(url, json=_hostile_input(), timeout=30)
    finally:
        said = _stopped(proc)
    return said


def _serve(agent: str, tmp_path: Path) -> str:
    proc = subprocess.Popen(
        [*AGUI, "serve", "--port", "0", "--log-level", "info", "--access-log"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    url = line.split(" at ")[1].split()[0]
    try:
        httpx.post(url, json=_hostile_input(), timeout=30)
        httpx.post(url, json=_hostile_input(thread="t"), timeout=30)
    finally:
        said = line + _stopped(proc)
    return said


COMMANDS = {
    "verify": _verify,
    "proxy": _proxy,
    "check": _check,
    "run": _run,
    "chat": _chat,
    "mock": _mock,
    "serve": _serve,
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_peer_string_never_starts_a_line(command: str, agent: str, tmp_path: Path) -> None:
    said = COMMANDS[command](agent, tmp_path)
    forged = [line for line in said.splitlines() if line.strip().startswith("error [FE-8]")]
    assert not forged, said[-4000:]
    assert "Traceback" not in said, said[-4000:]
    if command != "serve":  # the peer's text is shown — escaped, not dropped
        assert "\\n error [FE-8] frontend forged" in said, said[-4000:]
