"""``agui-tools mock DIR`` says at start-up each recorded answer it replays as recorded
and each exchange it leaves out, naming the file and why (#25)."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx

from tests.helpers.proxy import mock_cmd
from tests.helpers.recorded_folder import INPUT, SSE, write_exchange


def test_the_cli_says_recorded_answers_and_skipped_exchanges_at_start(tmp_path: Path) -> None:
    write_exchange(tmp_path, "0001", ("body", b"unauthorized"), {"status": 401, "contentType": "text/plain"})  # fmt: skip
    write_exchange(tmp_path, "0002", ("body", b"no meta"), None)
    write_exchange(
        tmp_path, "0003", ("sse", SSE), {"status": 200, "contentType": "text/event-stream"}
    )
    server, url = mock_cmd(str(tmp_path))
    try:
        refused = httpx.post(url, json=INPUT)
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=60)
    assert (refused.status_code, refused.text) == (401, "unauthorized")
    lines = err.strip().splitlines()
    assert lines[1] == (
        f"  run 1 ({tmp_path / '0001.body'}): a recorded HTTP 401, replayed as recorded "
        "(text/plain, 12 bytes)"
    )
    assert lines[2].startswith(f"  run 2 ({tmp_path / '0003.sse'}): 2 events")
    assert lines[3].startswith(f"  skipped: {tmp_path / '0002.body'}: not replayed: no 0002.meta")
    assert lines[4] == f"request 1: 401 the recorded answer of {tmp_path / '0001.body'}"
    assert "Traceback" not in err
