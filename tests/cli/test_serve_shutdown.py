"""`serve` shuts down gracefully on SIGTERM and SIGINT (issue 28): a real process, a real
signal, real streams.

It stops accepting at once, lets a run in flight finish within ``--shutdown-grace``,
ends one still going after it with ``RUN_ERROR`` ``ServerShuttingDown`` (a terminal
event, not a cut stream), and exits 0. Before: uvicorn waited for every stream to end
— a run that never ends held the process forever — and nothing told a client why.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
AGUI = [sys.executable, "-m", "agui_tools"]
GRACE_3S = ("--port", "0", "--shutdown-grace", "3")
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}


def _run_input(n: int, words: int) -> dict[str, Any]:
    return {
        "threadId": f"t{n}",
        "runId": f"r{n}",
        "messages": [{"id": f"m{n}", "role": "user", "content": f"slow {words}"}],
    }


def _stream(url: str, body: dict[str, Any], events: list[dict[str, Any]]) -> None:
    with (
        httpx.Client(timeout=60) as client,
        client.stream("POST", url, json=body, headers={"Accept": "text/event-stream"}) as resp,
    ):
        for line in resp.iter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_lets_short_runs_finish_and_ends_long_ones_with_run_error(
    sig: signal.Signals,
) -> None:
    server = subprocess.Popen(
        [*AGUI, "serve", "tests.helpers.cli_agents:scripted", *GRACE_3S],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=ROOT,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        match = re.match(r"Serving AG-UI agent at (http://127\.0\.0\.1:(\d+)/\S*)", line)
        assert match, (line, server.stderr.read() if server.stderr else "")
        url, port = match.group(1), int(match.group(2))
        short: list[dict[str, Any]] = []
        long: list[dict[str, Any]] = []
        threads = [
            threading.Thread(target=_stream, args=(url, _run_input(1, 20), short)),  # ~1 s
            threading.Thread(target=_stream, args=(url, _run_input(2, 4000), long)),  # ~200 s
        ]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while not (len(short) > 2 and len(long) > 2):  # both are streaming
            assert time.monotonic() < deadline, (short, long)
            time.sleep(0.02)
        server.send_signal(sig)
        time.sleep(0.5)
        with pytest.raises(OSError):  # it no longer accepts
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        for t in threads:
            t.join(30)
        assert server.wait(30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    err = server.stderr.read() if server.stderr else ""
    # the short run finished within the grace period: all of it, as usual
    assert short[-1]["type"] == "RUN_FINISHED", short[-3:]
    assert sum(e["type"] == "TEXT_MESSAGE_CONTENT" for e in short) == 20
    # the long one was ended after it, with a terminal event naming why
    assert long[-1]["type"] == "RUN_ERROR", long[-3:]
    assert long[-1]["code"] == "ServerShuttingDown"
    assert "RUN_FINISHED" not in {e["type"] for e in long}
    # said once, in the server's log (not again in a summary line of the command)
    assert err.count("run(s) still going after") == 1, err[-2000:]
    assert "ending 1 run(s) still going after 3 s with RUN_ERROR" in err, err[-2000:]
    assert "Traceback" not in err, err[-3000:]
