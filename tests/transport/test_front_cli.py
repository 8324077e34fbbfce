"""The front's limits as the commands take them: ``proxy`` and ``mock`` are given
``--body-timeout`` as ``serve`` is, and every serving command's shutdown answers the
requests still sending their bodies (the in-process faces: ``test_front_matrix.py``)."""

from __future__ import annotations

import json
import signal
import socket
import time
from pathlib import Path

import pytest

from tests.helpers.proxy import ctrl_c, mock_cmd, proxy_cmd, serve_cmd


def _half_body(url: str) -> socket.socket:
    """A connection that sent a head declaring 200 bytes, then 10 of them, then nothing."""
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    sock.sendall(
        b"POST /agent HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"content-length: 200\r\n\r\n" + b" " * 10
    )
    return sock


def _answer(sock: socket.socket) -> bytes:
    """What the server answers, read until it closes."""
    with sock:
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


def _capture(folder: Path) -> str:
    capture = folder / "run.sse"
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    capture.write_text("".join(f"data: {json.dumps(e)}\n\n" for e in events))
    return str(capture)


@pytest.mark.parametrize("command", ["proxy", "mock"])
def test_body_timeout_bounds_a_half_body_in_the_command(command: str, tmp_path: Path) -> None:
    if command == "proxy":
        proc, url = proxy_cmd("http://127.0.0.1:9/agent", "--body-timeout", "0.5")
    else:
        proc, url = mock_cmd(_capture(tmp_path), "--body-timeout", "0.5")
    try:
        answer = _answer(_half_body(url))
    finally:
        code, _, err = ctrl_c(proc)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert b"within 0.5 s (body_timeout)" in answer
    assert code == 0, err


@pytest.mark.parametrize("command", ["serve", "proxy", "mock"])
def test_stopping_answers_the_requests_still_sending_their_bodies_503(
    command: str, tmp_path: Path
) -> None:
    """SIGTERM used to leave them to uvicorn's graceful timeout, which cancelled them
    with no answer and an ERROR line each ("returned without starting response")."""
    if command == "serve":
        proc, url = serve_cmd()
    elif command == "proxy":
        proc, url = proxy_cmd("http://127.0.0.1:9/agent")
    else:
        proc, url = mock_cmd(_capture(tmp_path))
    try:
        held = [_half_body(url) for _ in range(3)]
        time.sleep(0.5)  # (their heads are in: each is reading its body)
    finally:
        proc.send_signal(signal.SIGTERM)
    answers = [_answer(sock) for sock in held]
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 503 "), answer[:200]
        assert b"shutting down" in answer
    assert "ERROR" not in err and "Traceback" not in err, err
