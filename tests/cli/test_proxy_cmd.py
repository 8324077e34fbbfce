"""``agui-tools proxy``: bad usage before anything is bound, the printed URL answers at once,
findings as JSON lines, Ctrl-C ends with the summary and one line — never a traceback."""

from __future__ import annotations

import json
import re
import socket
import socketserver
import subprocess
import threading
from pathlib import Path

import httpx
import orjson
import pytest

from agui_tools.wire._framing import SSEReader, sse_frame
from tests.helpers.proxy import ctrl_c, post, proxy_cmd, stream_post
from tests.helpers.scripted_server import Script, app_for, serve
from tests.helpers.terminal import AGUI, ENV, ROOT

INPUT = {"threadId": "t1", "runId": "r1", "messages": []}
BROKEN = [
    {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "search"},
    {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"},
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
]


@pytest.mark.parametrize(
    ("upstream", "says"),
    [
        ("localhost:8000/agent", "is not an http:// or https:// URL"),
        ("ftp://example.test/agent", "is not an http:// or https:// URL"),
        ("http:///agent", "it names no host"),
        ("http://127.0.0.1:99999/agent", "has port 99999: out of range"),
    ],
    ids=["no-scheme", "ftp", "no-host", "port-out-of-range"],
)
def test_a_bad_upstream_url_is_one_line_exit_2(upstream: str, says: str) -> None:
    proc = subprocess.run(
        [*AGUI, "proxy", upstream, "--port", "0"],
        capture_output=True, text=True, timeout=60, env=ENV, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    # the check every command makes of an agent URL (_url.py url_problem)
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"agui-tools proxy: UPSTREAM {upstream!r} ") and says in line, line


def test_a_port_in_use_is_said_without_claiming_to_proxy() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [*AGUI, "proxy", "http://127.0.0.1:9/agent", "--port", str(port)],
            capture_output=True, text=True, timeout=60, env=ENV, cwd=ROOT,
        )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == (
        f"agui-tools proxy: cannot serve on 127.0.0.1:{port}: Address already in use"
    )


def test_findings_as_json_lines_and_ctrl_c_prints_the_summary(tmp_path: Path) -> None:
    log = tmp_path / "findings.jsonl"
    script = Script(chunks=[sse_frame(orjson.dumps(e)) for e in BROKEN])
    with serve(app_for(script)) as base:
        proc, url = proxy_cmd(f"{base}/agent", "--log", str(log), "--record", str(tmp_path / "rec"))
        try:
            answer = post(url, INPUT)  # no retry: bound before printed
            assert answer.status_code == 200
        finally:
            code, out, err = ctrl_c(proc)
    assert code == 1  # errors were found
    assert out == ""  # stdout holds the one line, read above
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert lines[0].startswith(
        "agui-tools proxy: error [TOOL-20] agent thread 't1' run 'r1' event #3"
    )
    assert lines[-3:] == [
        "agui-tools proxy: 1 run request(s), 1 error(s), 0 warning(s)",
        "  agent    error   TOOL-20    x1  first: thread 't1' run 'r1' event #3",
        "agui-tools proxy: stopped — errors were found (exit 1)",
    ]
    (entry,) = [json.loads(x) for x in log.read_text().splitlines()]
    assert entry["rule"] == "TOOL-20" and entry["side"] == "agent" and entry["index"] == 3
    assert entry["toolCallIds"] == ["c1"] and entry["severity"] == "error"
    assert (tmp_path / "rec" / "0001.sse").exists()


def test_ctrl_c_with_nothing_found_exits_0_and_log_dash_is_stdout() -> None:
    script = Script(chunks=[sse_frame(orjson.dumps(e)) for e in (BROKEN[0], BROKEN[-1])])
    with serve(app_for(script)) as base:
        proc, url = proxy_cmd(f"{base}/agent", "--log", "-")
        try:
            post(url, INPUT)
        finally:
            code, out, err = ctrl_c(proc)
    assert code == 0 and out == "" and "Traceback" not in err
    assert err.strip().splitlines() == [
        "agui-tools proxy: 1 run request(s), 0 error(s), 0 warning(s)",
        "  no rule broken by either side",
        "agui-tools proxy: stopped",
    ]


def test_ctrl_c_during_a_stream_is_still_one_summary() -> None:
    script = Script(chunks=[sse_frame(orjson.dumps(BROKEN[0]))], hang_after=True)
    with serve(app_for(script)) as base:
        proc, url = proxy_cmd(f"{base}/agent")
        with stream_post(url, INPUT) as answer:
            next(answer.iter_raw())  # the stream is open, the upstream will not end it
            code, _, err = ctrl_c(proc)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert lines[-1].startswith("agui-tools proxy: stopped")
    assert lines[-3] == (
        "agui-tools proxy: 1 run request(s), 0 error(s), 0 warning(s), 1 stream(s) cut short "
        "(the frontend left, or the proxy stopped)"
    )  # not a truncation the agent is accused of (TRANS-2)
    assert code == 0


def test_an_unreachable_upstream_is_named_in_the_log(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as spare:
        dead = f"http://127.0.0.1:{spare.getsockname()[1]}/agent"
    log = tmp_path / "log.jsonl"
    proc, url = proxy_cmd(dead, "--log", str(log))
    try:
        answer = post(url, INPUT)
    finally:
        code, _, err = ctrl_c(proc)
    assert answer.status_code == 502 and dead in answer.json()["error"]["message"]
    (entry,) = [json.loads(x) for x in log.read_text().splitlines()]
    assert entry["event"] == "upstream-error" and entry["url"] == dead
    assert "1 upstream failure(s)" in err and code == 0


ACTIONS = [
    ("prompt", {"text": "hi"}),
    ("consent", {"callId": "c1", "decision": "approve"}),
    ("answer", {"callId": "c1", "value": 1}),
    ("stop", {}),
    ("new-thread", {}),
]


def test_inspect_shows_the_live_traffic_read_only() -> None:
    script = Script(chunks=[sse_frame(orjson.dumps(e)) for e in BROKEN])
    with serve(app_for(script)) as base:
        proc, url = proxy_cmd(f"{base}/agent", "--inspect")
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            page_url = re.match(r"AG-UI inspector \(read-only\): (\S+)", line)
            assert page_url is not None, line
            page = page_url.group(1)
            html = httpx.get(page, timeout=10)
            assert html.status_code == 200 and "Content-Security-Policy" in html.headers
            token = re.search(r"&quot;token&quot;:&quot;([^&]+)&quot;", html.text)
            assert token is not None, html.text[:500]
            # the inspector's own checks: no token, a foreign Host — refused
            assert httpx.get(f"{page}api/events", timeout=10).status_code == 403
            assert (
                httpx.get(
                    f"{page}api/events?token={token.group(1)}",
                    headers={"host": "evil.test"},
                    timeout=10,
                ).status_code
                == 403
            )
            post(url, INPUT)
            seen: list[dict[str, object]] = []
            with httpx.stream(
                "GET", f"{page}api/events?token={token.group(1)}", timeout=10
            ) as events:
                reader = SSEReader()
                for chunk in events.iter_raw():
                    for message in (json.loads(d) for d in reader.feed(chunk)):
                        # what piled up comes as one "batch" message holding the others
                        batch = message.get("messages") if message["kind"] == "batch" else None
                        seen += batch if isinstance(batch, list) else [message]
                    if any(m["kind"] == "run-end" for m in seen):
                        break
            kinds = [m["kind"] for m in seen]
            seen = seen[kinds.index("run-start") :]  # after what the page is shown first
            kinds = [m["kind"] for m in seen]
            assert kinds[0] == "run-start" and kinds[-1] == "run-end"
            assert [m["type"] for m in seen if m["kind"] == "event"] == [e["type"] for e in BROKEN]
            (violation,) = [m for m in seen if m["kind"] == "violation"]
            assert violation["rule"] == "TOOL-20" and violation["index"] == 3
            # read-only: the page cannot drive the thread
            origin = page.rstrip("/")
            for action, body in ACTIONS:
                refused = httpx.post(
                    f"{page}api/{action}",
                    content=orjson.dumps(body),
                    headers={
                        "content-type": "application/json",
                        "origin": origin,
                        "x-inspector-token": token.group(1),
                    },
                    timeout=10,
                )
                assert refused.status_code == 403 and "read-only" in refused.text, action
        finally:
            code, _, err = ctrl_c(proc)
    assert "Traceback" not in err and code == 1
    assert err.strip().splitlines()[-1] == "agui-tools proxy: stopped — errors were found (exit 1)"


def test_an_upstream_cut_is_said_once_by_the_proxy_not_by_uvicorn() -> None:
    """The proxy cuts the frontend's answer on purpose when the agent cut its own (no
    end of body is sent): uvicorn's "returned without completing response" ERROR is
    not a second, misleading line about it."""
    first = sse_frame(orjson.dumps(BROKEN[0]))

    class Cutting(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            sock: socket.socket = self.request
            data = b""
            while b"\r\n\r\n" not in data or not data.endswith(orjson.dumps(INPUT)):
                piece = sock.recv(65536)
                if not piece:
                    return
                data += piece
            sock.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(first), first)
            )  # no 0-chunk: the body is cut
            sock.shutdown(socket.SHUT_RDWR)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Cutting)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        proc, url = proxy_cmd(f"http://127.0.0.1:{server.server_address[1]}/agent")
        try:
            with pytest.raises(httpx.RemoteProtocolError):  # the frontend sees the cut
                post(url, INPUT)
        finally:
            code, _, err = ctrl_c(proc)
    finally:
        server.shutdown()
        server.server_close()
    assert "Traceback" not in err and "ASGI callable" not in err, err
    assert "cut the body" in err and "[TRANS-2]" in err, err
    assert code == 1  # a truncated run is an error of the agent's
