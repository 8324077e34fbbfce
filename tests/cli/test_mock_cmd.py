"""``agui-tools mock``: bad captures and fault specs are one line and exit 2, the served
mock says what each request got, a deliberate cut is no server error, Ctrl-C is one line."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.helpers.proxy import mock_cmd
from tests.helpers.terminal import AGUI, ENV, ROOT

EVENTS = [
    {"type": "RUN_STARTED", "threadId": "t0", "runId": "r0"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    {"type": "RUN_FINISHED", "threadId": "t0", "runId": "r0"},
]
INPUT = {"threadId": "t", "runId": "r", "messages": []}


def mock(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGUI, "mock", "--port", "0", *args],
        capture_output=True, text=True, timeout=60, env=ENV, cwd=ROOT, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(EVENTS + EVENTS))  # a `run --save` of two runs
    return path


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"", "no event found"),
        (b"data: {oops\n\n", "event 0"),
        (b"\x00\x00\x00\x09abc", "no complete binary frame"),
        (b'[{"no": "type"}]', "is not an event object with a type"),
    ],
    ids=["empty", "bad-json", "cut-binary", "no-type"],
)
def test_a_capture_that_is_no_stream_is_one_line_exit_2(
    tmp_path: Path, content: bytes, says: str
) -> None:
    bad = tmp_path / "bad.sse"
    bad.write_bytes(content)
    proc = mock(str(bad))
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert says in proc.stderr and str(bad) in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_a_missing_capture_is_one_line_exit_2(tmp_path: Path) -> None:
    proc = mock(str(tmp_path / "absent.sse"))
    assert proc.returncode == 2 and "cannot read capture" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_a_port_in_use_is_said_without_claiming_to_serve(capture: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        proc = mock(str(capture), "--port", str(port))  # the last --port is the one used
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == (  # bound before the recorded runs are listed
        f"agui-tools mock: cannot serve on 127.0.0.1:{port}: Address already in use"
    )


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--fault", "boom:1"], "unknown kind 'boom'"),
        (["--fault", "stall:1"], "stall takes 2 argument(s)"),
        (["--fault", "cut:9"], "event 9 is past every recorded run"),
        (["--timing", "slow"], "timing 'slow': use recorded"),
        (["--match", "last-user-message"], "kept none"),
    ],
    ids=["kind", "arity", "past-the-end", "timing", "match-without-inputs"],
)
def test_a_bad_flag_is_one_line_exit_2(capture: Path, flags: list[str], says: str) -> None:
    proc = mock(str(capture), *flags)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert says in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_the_mock_serves_says_each_request_and_stops_on_ctrl_c_in_one_line(
    capture: Path,
) -> None:
    server, url = mock_cmd(str(capture), "--fault", "cut:2@2")
    try:
        sse = {"accept": "text/event-stream"}
        first = httpx.post(url, json=INPUT, headers=sse)
        with pytest.raises(httpx.RemoteProtocolError):  # cut after event 2: no end of body
            httpx.post(url, json=INPUT | {"runId": "r2"}, headers=sse)
        third = httpx.post(url, json=INPUT, headers=sse)
        dangling = httpx.post(url, json=INPUT | {"messages": [
            {"id": "a", "role": "assistant", "toolCalls": [{"id": "c9", "type": "function",
             "function": {"name": "f", "arguments": "{}"}}]},
            {"id": "u", "role": "user", "content": "next"}]})  # fmt: skip
    finally:
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=60)
    assert first.status_code == 200 and b'"runId":"r"' in first.content
    assert third.status_code == 404 and "has served them all" in third.text
    assert dangling.status_code == 409
    assert server.returncode == 0 and out == ""
    lines = err.strip().splitlines()
    assert lines[:3] == [
        "2 recorded run(s), match order, timing recorded, max gap 5 s, faults cut:2@2",
        f"  run 1 ({capture} run 1): 5 events, success",
        f"  run 2 ({capture} run 2): 5 events, success",
    ]
    assert lines[3] == f"request 1: 200 thread t run r gets {capture} run 1 (5 events, SSE)"
    assert lines[4].endswith("run 2 (5 events, SSE, faults cut:2@2)")
    assert lines[5].startswith("request 3: 404 no recorded run left")
    assert lines[6].startswith("request 4: 409 [FE-8] ") and "c9" in lines[6]
    assert "returned without completing response" not in err  # a deliberate cut is no error
    assert "Traceback" not in err
    assert lines[7:] == [
        "agui-tools mock: stopped after 4 request(s); 0 recorded run(s) never served"
    ]
