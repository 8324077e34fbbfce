"""Attacks on the ``agui-tools proxy`` command from its docs alone (docs/proxy.md, docs/cli.md).

Each was ``xfail(strict=True)`` until fixed and now guards its fix: it asserts what the
docs promise.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
from pathlib import Path

import httpx
import orjson
import pytest

from agui_tools.wire._framing import sse_frame
from tests.helpers.proxy import ctrl_c, post, proxy_cmd, raw_post, stream_post
from tests.helpers.proxy_cmd_run import INPUT, ONE_CUT_SHORT, RS
from tests.helpers.scripted_server import Script, app_for, free_port, serve


def test_ctrl_c_with_a_raw_socket_stream_open_is_counted_as_cut_short() -> None:
    script = Script(chunks=[sse_frame(orjson.dumps(RS))], hang_after=True)
    with serve(app_for(script)) as base:
        proc, url = proxy_cmd(f"{base}/agent")
        with raw_post(url, orjson.dumps(INPUT)) as sock:
            seen = b""
            while b"RUN_STARTED" not in seen:  # the stream is open: its first event came
                seen += sock.recv(65536)
            code, _, err = ctrl_c(proc)  # the frontend still holds its end, as curl does
            while piece := sock.recv(65536):  # the rest of the answer, to the connection's end
                seen += piece
    # the stream was ended cleanly: the chunked body's last chunk, then the connection closed
    assert seen.endswith(b"\r\n0\r\n\r\n"), seen
    lines = err.strip().splitlines()
    # docs/proxy.md: "a stream ... that is still open when the proxy stops is counted in
    # the summary as cut short"; the summary and one last line, nothing else
    assert lines == ONE_CUT_SHORT, err
    assert code == 0


def test_a_proxy_pointed_at_itself_answers_once_naming_the_loop() -> None:
    port = free_port()
    proc, url = proxy_cmd(f"http://127.0.0.1:{port}/", "--port", str(port))
    try:
        answer = post(url, INPUT, timeout=120)
    finally:
        code, _, err = ctrl_c(proc)
    assert answer.status_code == 508  # refused: Loop Detected
    assert "leads back to the proxy itself" in answer.json()["error"]["message"], answer.text
    # the loop is said once, on stderr, and counted as an upstream failure
    said = [line for line in err.splitlines() if "leads back to the proxy itself" in line]
    assert len(said) == 1 and said[0].startswith("agui-tools proxy: a request came back"), err
    # the summary counts every exchange: the frontend made one
    summary = [line for line in err.splitlines() if "run request(s)" in line]
    assert summary == [
        "agui-tools proxy: 1 run request(s), 0 error(s), 0 warning(s), 1 upstream failure(s)"
    ], err
    assert "Traceback" not in err and code in (0, 1)


DANGLING = {
    "threadId": "t1",
    "runId": "r1",
    "messages": [
        {
            "id": "a1",
            "role": "assistant",
            "toolCalls": [
                {"id": "c7", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        }
    ],
}  # FE-8: a frontend finding, logged as it happens


TOOL_20 = [
    RS,
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "search"},
    {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"},
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
]  # TOOL-20 at event #3: an agent finding, told by the judging process


@pytest.mark.parametrize(
    ("body", "events"),
    [(DANGLING, [RS, {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}]), (INPUT, TOOL_20)],
    ids=["frontend-finding", "agent-finding"],
)
def test_a_log_file_that_cannot_be_written_is_no_500_no_hang(
    body: dict[str, object], events: list[dict[str, object]]
) -> None:
    script = Script(chunks=[sse_frame(orjson.dumps(e)) for e in events])
    with serve(app_for(script)) as base:
        proc, url = proxy_cmd(f"{base}/agent", "--log", "/dev/full")
        try:
            statuses: list[int | None] = []
            for _ in range(2):
                try:
                    statuses.append(
                        post(url, body, timeout=15).status_code
                    )  # fmt: skip
                except httpx.TimeoutException:
                    statuses.append(None)  # no answer in 15 s: a hang
            proc.send_signal(signal.SIGINT)
            try:
                _, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                err = None  # Ctrl-C did not stop it
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=30)
    # not strict: the input is forwarded, and the agent's answer is the frontend's
    assert statuses == [200, 200]
    assert err is not None, "the proxy did not stop on Ctrl-C"
    assert "Traceback" not in err, err
    # said once, the first time the log failed; the findings are still in the summary
    said = [line for line in err.splitlines() if "cannot write the log" in line]
    assert said == [
        "agui-tools proxy: cannot write the log /dev/full: No space left on device; "
        "findings still go to the summary"
    ], err
    rule = "FE-8" if body is DANGLING else "TOOL-20"
    assert re.search(rf"^  \w+ +error +{rule} +x2 ", err, re.MULTILINE), err


def test_a_record_folder_that_cannot_be_written_stops_the_recording_in_one_line(
    tmp_path: Path,
) -> None:
    rec = tmp_path / "rec"
    script = Script(chunks=[sse_frame(orjson.dumps(e)) for e in [RS, TOOL_20[-1]]])
    with serve(app_for(script)) as base:
        proc, url = proxy_cmd(f"{base}/agent", "--record", str(rec))
        try:
            rec.rmdir()
            rec.write_text("")  # the folder is gone: a full disk, a read-only mount alike
            statuses = [
                post(url, {**INPUT, "runId": run}, timeout=15).status_code
                for run in ("r1", "r2")
            ]  # fmt: skip
        finally:
            code, _, err = ctrl_c(proc)
    assert statuses == [200, 200]  # forwarding goes on
    said = [line for line in err.splitlines() if "cannot record in" in line]
    assert said == [
        f"agui-tools proxy: cannot record in {rec}: Not a directory ({rec}/0001.input.json); "
        "recording stopped, forwarding goes on"
    ], err
    assert err.splitlines()[-3].startswith(
        "agui-tools proxy: 2 run request(s), 0 error(s), 0 warning(s), "
        "2 exchange(s) not recorded (the --record folder cannot be written)"
    ), err
    assert "Traceback" not in err and code == 0, err


def test_sigterm_stops_the_proxy_as_ctrl_c_does() -> None:
    # a CI job stops its services with SIGTERM: the same summary, the same exit code
    # (1: an error was found), an open stream counted as cut short
    script = Script(chunks=[sse_frame(orjson.dumps(e)) for e in TOOL_20[:4]], hang_after=True)
    with serve(app_for(script)) as base:
        proc, url = proxy_cmd(f"{base}/agent")
        with stream_post(url, INPUT) as answer:
            seen = b""
            for chunk in answer.iter_raw():
                seen += chunk
                if b"TOOL_CALL_ARGS" in seen:
                    break
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
    lines = err.strip().splitlines()
    assert lines[-3:] == [
        "agui-tools proxy: 1 run request(s), 1 error(s), 0 warning(s), 1 stream(s) cut short "
        "(the frontend left, or the proxy stopped)",
        "  agent    error   TOOL-20    x1  first: thread 't1' run 'r1' event #3",
        "agui-tools proxy: stopped — errors were found (exit 1)",
    ], err
    assert "Traceback" not in err and "ERROR" not in err, err
    assert proc.returncode == 1, (proc.returncode, err)


def test_ctrl_c_before_the_upstream_answers_is_a_503_not_an_error_line() -> None:
    # an agent still thinking (no answer's head yet) when the proxy stops: the frontend
    # is answered 503 naming it, the exchange counted as cut short, uvicorn says nothing
    import threading

    asked = threading.Event()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        upstream = f"http://127.0.0.1:{listener.getsockname()[1]}/agent"

        def hold() -> None:
            conn, _ = listener.accept()
            with conn:
                seen = b""
                while not seen.endswith(b"]}"):  # the whole request: its body's end
                    piece = conn.recv(65536)
                    if not piece:
                        return
                    seen += piece
                asked.set()
                while conn.recv(65536):  # never answers: until the proxy lets go
                    pass

        holder = threading.Thread(target=hold, daemon=True)
        holder.start()
        proc, url = proxy_cmd(upstream)
        with raw_post(url, orjson.dumps(INPUT)) as sock:
            assert asked.wait(30)  # the request is upstream, its answer still to come
            code, _, err = ctrl_c(proc)
            seen = b""
            while piece := sock.recv(65536):
                seen += piece
        holder.join(timeout=30)
    assert seen.startswith(b"HTTP/1.1 503 "), seen
    problem = orjson.loads(seen.partition(b"\r\n\r\n")[2])
    assert problem["error"]["message"] == (
        f"agui-tools proxy: stopped before the upstream {upstream} answered"
    ), problem
    assert err.strip().splitlines() == ONE_CUT_SHORT, err
    assert code == 0
