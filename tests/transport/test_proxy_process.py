"""``agui-tools proxy`` as a process: what issue #35 measured on the command itself.

A conforming agent's 40 MB run on cores kept busy was said ``PROXY-JUDGE`` (not judged,
exit 1) five times in five; SIGTERM with frontends mid-body printed uvicorn's noise;
``--inspect`` showed the upstream's userinfo and query secret on the page.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import httpx
import orjson

from agui_tools.wire._framing import sse_frame
from tests.helpers.proxy import ctrl_c, proxy_cmd
from tests.helpers.scripted_server import Script, app_for, serve

INPUT = {"threadId": "t1", "runId": "r1", "messages": []}
RS = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
RF = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}


@contextmanager
def _busy_cores(count: int = 2) -> Iterator[None]:
    """``count`` CPU-bound loops (a CI runner's other jobs), ended by their pid."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait(timeout=10)


def test_a_conforming_40_mb_run_on_busy_cores_is_judged_and_exit_0() -> None:
    chunks = [sse_frame(orjson.dumps(RS))]
    for m in range(100):  # 100 messages of 400 KB: ~40 MB, each message under its limit
        mid = f"m{m}"
        delta = {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": "y" * 4000}
        chunks.append(
            sse_frame(
                orjson.dumps({"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"})
            )
            + sse_frame(orjson.dumps(delta)) * 100
            + sse_frame(orjson.dumps({"type": "TEXT_MESSAGE_END", "messageId": mid}))
        )
    chunks.append(sse_frame(orjson.dumps(RF)))
    script = Script(chunks=chunks)
    with serve(app_for(script)) as base, _busy_cores():
        proc, url = proxy_cmd(f"{base}/agent")
        try:
            size = 0
            with httpx.stream(
                "POST", url, content=orjson.dumps(INPUT), timeout=httpx.Timeout(300)
            ) as answer:
                for piece in answer.iter_raw():
                    size += len(piece)
        finally:
            code, _, err = ctrl_c(proc)
    assert size == sum(map(len, chunks)) > 40_000_000  # forwarded whole
    assert "PROXY-JUDGE" not in err and "no rule broken by either side" in err, err
    assert code == 0, err


def test_sigterm_with_frontends_mid_body_prints_only_the_summary() -> None:
    script = Script(chunks=[sse_frame(orjson.dumps(e)) for e in (RS, RF)])
    with serve(app_for(script)) as base:
        proc, url = proxy_cmd(f"{base}/agent")
        port = int(url.rsplit(":", 1)[1].strip("/"))
        with ExitStack() as stack:
            for _ in range(5):  # a head, half its body, then nothing
                sock = stack.enter_context(socket.create_connection(("127.0.0.1", port)))
                sock.sendall(
                    b"POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                    b"content-length: 1000\r\n\r\n" + b"{" * 500
                )
            time.sleep(0.5)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
    assert err.strip().splitlines() == [
        "agui-tools proxy: 0 run request(s), 0 error(s), 0 warning(s)",
        "  no rule broken by either side",
        "agui-tools proxy: stopped",
    ], err
    assert proc.returncode == 0


def test_inspect_shows_no_secret_of_the_upstream_url() -> None:
    script = Script(chunks=[sse_frame(orjson.dumps(e)) for e in (RS, RF)])
    with serve(app_for(script)) as base:
        upstream = base.replace("http://", "http://user:hunter2@") + "/agent?code=SECRET1"
        proc, url = proxy_cmd(upstream, "--inspect")
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            page = re.match(r"AG-UI inspector \(read-only\): (\S+)", line)
            assert page is not None, line
            httpx.post(url, content=orjson.dumps(INPUT), timeout=30)
            html = httpx.get(page.group(1), timeout=10).text
        finally:
            code, out, err = ctrl_c(proc)
    assert "/agent?code=***" in html  # the upstream is named, its secrets are not
    for text in (html, line, out, err):
        assert "hunter2" not in text and "SECRET1" not in text, text
    assert code == 0, err
