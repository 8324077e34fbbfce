"""Adversarial findings against ``agui-tools mock`` / ``mock_app`` (attack-mock).

Each test states what the user docs (docs/proxy.md "Test my frontend without a
model", docs/cli.md ``mock``, docs/api.md ``mock_app``) promise and fails while
the mock does otherwise.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from agui_tools.testing import serving
from agui_tools.transport import mock_app

SRC = Path(__file__).resolve().parents[2] / "src"

INPUT = {
    "threadId": "T1",
    "runId": "R1",
    "messages": [{"id": "u1", "role": "user", "content": "hi"}],
    "tools": [],
    "context": [],
    "state": {},
    "forwardedProps": {},
}


def _sse(events: list[dict]) -> str:
    return "".join("data: " + json.dumps(e) + "\n\n" for e in events)


def _text_run(extra: list[dict] | None = None) -> list[dict]:
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        *(extra or []),
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "hi"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]


async def _post(url: str, accept: str = "text/event-stream") -> tuple[int, bytes, float]:
    started = time.monotonic()
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(
            url, json=INPUT, headers={"accept": accept, "content-type": "application/json"}
        )
    return response.status_code, response.content, time.monotonic() - started


def test_a_recorded_timestamp_of_zero_is_a_timestamp(tmp_path: Path) -> None:
    """``--timing recorded`` waits what the ``timestamp`` fields say; 0 is a valid
    timestamp (an integer), so 0 → 1000 is a one-second gap. The mock treats 0 as
    "no timestamp" and sends at once (1733000000000 → 1733000001000 is waited)."""
    events = _text_run()
    events[0]["timestamp"] = 0
    events[1]["timestamp"] = 1000
    capture = tmp_path / "zero.sse"
    capture.write_text(_sse(events))

    async def main() -> float:
        async with serving(mock_app(capture, path="/agent", timing="recorded")) as base:
            status, _, elapsed = await _post(f"{base}/agent")
            assert status == 200
            return elapsed

    assert asyncio.run(main()) >= 0.9


def test_a_state_snapshot_nested_300_deep_is_replayed_over_sse(tmp_path: Path) -> None:
    """A capture the mock accepts at start (nesting under the 1024 the library
    reads) is "served as recorded". Over SSE a STATE_SNAPSHOT nested 300 deep is
    replaced by a RUN_ERROR (``TypeError: Recursion limit reached`` in the log),
    while the binary binding serves it."""
    deep = json.loads("[" * 300 + "]" * 300)
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "STATE_SNAPSHOT", "snapshot": deep},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    capture = tmp_path / "deep.json"
    capture.write_text(json.dumps(events))

    async def main() -> bytes:
        async with serving(mock_app(capture, path="/agent", timing="fast")) as base:
            status, body, _ = await _post(f"{base}/agent")
            assert status == 200
            return body

    body = asyncio.run(main()).decode()
    assert "RUN_ERROR" not in body
    assert "STATE_SNAPSHOT" in body
    assert "RUN_FINISHED" in body


def _start_mock(args: list[str]) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agui_tools", "mock", *args, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    line = proc.stdout.readline()
    assert line.startswith("Serving mock AG-UI agent at "), line
    return proc, line.split()[-1]


def test_ctrl_c_stops_the_mock_while_a_stream_is_in_flight(tmp_path: Path) -> None:
    """"Ctrl-C stops it in one line (exit 0)". With a client reading a stalled
    stream (``stall:1:30``) one Ctrl-C does not stop the mock: it waits for the
    stream to end (any long recorded gap or stall), and a second Ctrl-C prints a
    uvicorn traceback ("Exception in ASGI application") before the line."""
    capture = tmp_path / "run.sse"
    capture.write_text(_sse(_text_run()))
    proc, url = _start_mock([str(capture), "--fault", "stall:1:30"])

    def read() -> None:
        try:
            with httpx.stream(
                "POST", url, json=INPUT, headers={"accept": "text/event-stream"}, timeout=40
            ) as response:
                for _ in response.iter_raw():
                    pass
        except httpx.HTTPError:
            pass

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=8)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        raise AssertionError(f"one Ctrl-C did not stop the mock within 8 s; then: {err[-600:]}")
    assert proc.returncode == 0
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("agui-tools mock: stopped after 1 request(s)")


def test_the_proxy_command_the_docs_and_errors_name_exists() -> None:
    """docs/proxy.md (title "`proxy` and `mock`", "a `proxy --record DIR`
    directory") and the mock's own refusal of ``--match last-user-message``
    ("record with `agui-tools proxy --record DIR`") name a ``proxy`` command;
    ``agui-tools proxy`` is "invalid choice"."""
    env = dict(os.environ, PYTHONPATH=str(SRC))
    done = subprocess.run(
        [sys.executable, "-m", "agui_tools", "proxy", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
