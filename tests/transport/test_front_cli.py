"""The front's limits as the commands take them: ``proxy`` and ``mock`` are given
``--body-timeout`` as ``serve`` is (the in-process faces: ``test_front_matrix.py``)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.helpers.proxy import ctrl_c, mock_cmd, proxy_cmd


def _half_body_answer(url: str) -> bytes:
    """A head declaring 200 bytes, 10 sent, then nothing: what the server answers."""
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(
            b"POST /agent HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            b"content-length: 200\r\n\r\n" + b" " * 10
        )
        data = b""
        while chunk := sock.recv(65536):  # the server closes once it has answered
            data += chunk
    return data


@pytest.mark.parametrize("command", ["proxy", "mock"])
def test_body_timeout_bounds_a_half_body_in_the_command(command: str, tmp_path: Path) -> None:
    if command == "proxy":
        proc, url = proxy_cmd("http://127.0.0.1:9/agent", "--body-timeout", "0.5")
    else:
        capture = tmp_path / "run.sse"
        events = [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
            {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
        ]
        capture.write_text("".join(f"data: {json.dumps(e)}\n\n" for e in events))
        proc, url = mock_cmd(str(capture), "--body-timeout", "0.5")
    try:
        answer = _half_body_answer(url)
    finally:
        code, _, err = ctrl_c(proc)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert b"within 0.5 s (body_timeout)" in answer
    assert code == 0, err
