"""Hostile peers, round 2 (issue 28), against real servers on loopback.

Each test failed on the code before it: refused bodies were kept alive in a
reference cycle (``serve`` grew 46 MB per refused 7.3 MB body, and never gave it
back); a DNS-rebinding page — ``Host`` = ``Origin`` = ``evil.test:PORT`` — was
answered 200 and read the stream; connections that sent nothing, half a request
head, or never read their response were held forever.
"""

from __future__ import annotations

import re
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import orjson
import pytest

from agui_tools.agent import Run
from agui_tools.transport._server import agent_app
from tests.helpers.scripted_server import address, serve
from tests.helpers.terminal import AGUI, ENV, ROOT

RSS_BUDGET_MB = 100
"""The issue's acceptance: within 100 MB of the baseline after 64 refused 7.4 MB bodies.
Fixed, the server levels off 20-25 MB above it (what the allocator keeps of one
body's parse); before, each 7.3 MB body refused 413 kept 46 MB, each 3.5 MB one
refused 422 kept 23 MB."""


def _rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"VmRSS:\s+(\d+) kB", status)
    assert match, status
    return int(match.group(1)) / 1024


@contextmanager
def serve_process(*extra: str) -> Iterator[tuple[str, int]]:
    """``agui-tools serve`` (the demo agent) in a subprocess: its URL and pid."""
    server = subprocess.Popen(
        [*AGUI, "serve", "--port", "0", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        match = re.match(r"Serving AG-UI agent at (\S+)", line)
        assert match, line
        yield match.group(1), server.pid
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:  # uvicorn's graceful shutdown waits for every
            server.kill()  # connection: a held one held it forever (before item 2)
            server.wait(timeout=10)


def _too_many_messages() -> bytes:
    """7.3 MB: 100,000 messages, over the default max_messages=10,000 (413)."""
    messages = [{"id": f"m{i}", "role": "user", "content": "x" * 30} for i in range(100_000)]
    return orjson.dumps({"threadId": "t", "runId": "r", "messages": messages})


def _too_many_unknown() -> bytes:
    """3.5 MB: 300,000 unrecognised members, over the default max_unknown=1,000 (422)."""
    body: dict[str, object] = {"threadId": "t", "runId": "r", "messages": []}
    for i in range(300_000):
        body[f"u{i}"] = 1
    return orjson.dumps(body)


@pytest.mark.parametrize(
    ("make_body", "status"),
    [(_too_many_messages, 413), (_too_many_unknown, 422)],
    ids=["413-max-messages", "422-max-unknown"],
)
def test_refused_large_bodies_are_freed(make_body: object, status: int) -> None:
    """Item 1: a refusal raised in the judging thread held, through anyio's future,
    the frame that parsed the body. 24 refusals in a row; the server must stay
    within RSS_BUDGET_MB of its baseline after each (checked after each, so the
    test stops — and the server's memory with it — at the first one over)."""
    assert callable(make_body)
    body = make_body()
    headers = {"content-type": "application/json"}
    with serve_process() as (url, pid), httpx.Client(timeout=120) as client:
        ok = client.post(url, json={"threadId": "t", "runId": "r0", "messages": []})
        assert ok.status_code == 200  # everything a request loads is loaded
        baseline = _rss_mb(pid)
        grown = []
        for _ in range(24):
            answer = client.post(url, content=body, headers=headers)
            assert answer.status_code == status, answer.text[:500]
            grown.append(round(_rss_mb(pid) - baseline))
            assert grown[-1] < RSS_BUDGET_MB, f"MB over the baseline after each refusal: {grown}"
        # and the server still answers
        assert client.post(url, json={"threadId": "t", "runId": "r1", "messages": []}).is_success


# -- item 5: DNS rebinding ---------------------------------------------------------------------

INPUT = {"threadId": "t", "runId": "r", "messages": []}
JSON = {"content-type": "application/json", "accept": "text/event-stream"}


async def _agent(run: Run) -> None:
    async with run.message() as m:
        await m.delta("the stream a rebinding page must not read")


def _post(url: str, **headers: str) -> httpx.Response:
    with httpx.Client(timeout=10) as client:
        return client.post(url, content=orjson.dumps(INPUT), headers={**JSON, **headers})


def test_a_dns_rebinding_page_is_refused() -> None:
    """Item 5: the page at http://evil.test:PORT, its name rebound to 127.0.0.1, sends
    Host = Origin = evil.test:PORT. Compared with itself, that Origin was "the server's
    own": 200, and the page read the stream."""
    with serve(agent_app(_agent)) as base:
        port = base.rsplit(":", 1)[1]
        url = f"{base}/"
        evil = f"evil.test:{port}"
        for headers in ({"host": evil, "origin": f"http://{evil}"}, {"host": evil}):
            refused = _post(url, **headers)
            assert refused.status_code == 403, (headers, refused.text)
            assert "the stream" not in refused.text
            error = refused.json()["error"]["message"]
            assert "'evil.test:" in error and "allowed_hosts" in error
        # the names a page on this machine uses, and any address (no name, nothing to rebind)
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "app.localhost"):
            answer = _post(url, host=host, origin=f"http://{host}")
            assert answer.status_code == 200 and "the stream" in answer.text, host
        assert _post(url, host=f"192.0.2.7:{port}").status_code == 200
        assert _post(url).status_code == 200  # no Origin: not a browser


def test_allowed_hosts_lists_the_names_a_server_is_reached_by() -> None:
    app = agent_app(_agent, allowed_hosts=["agent.example", ".corp.example"])
    with serve(app) as base:
        url = f"{base}/"
        for host in ("agent.example", "AGENT.example.:8080", "corp.example", "a.b.corp.example"):
            assert _post(url, host=host, origin=f"http://{host}").status_code == 200, host
        for host in ("evil.test", "agent.example.evil.test", "xcorp.example", "[::1", "a:b:c"):
            assert _post(url, host=host).status_code == 403, host
    with serve(agent_app(_agent, allowed_hosts=["*"])) as base:
        assert _post(f"{base}/", host="anything.test").status_code == 200


def test_serve_allow_host_flag() -> None:
    with serve_process("--allow-host", "agent.example") as (url, _):
        evil = _post(url, host="evil.test", origin="http://evil.test")
        assert evil.status_code == 403 and "--allow-host" in evil.json()["error"]["message"]
        assert _post(url, host="agent.example", origin="http://agent.example").status_code == 200


# -- item 2: every phase of a connection has a deadline ----------------------------------------


def _cut(sock: socket.socket) -> bool:
    """Whether the server has closed ``sock`` (what it sent first is read and dropped)."""
    try:
        sock.setblocking(False)
        while data := sock.recv(65536):
            assert data.startswith(b"HTTP/1.1 408") or b"header_timeout" in data, data[:200]
        return True  # EOF
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def test_connections_that_send_nothing_or_half_a_head_are_cut_at_header_timeout() -> None:
    """Item 2: 100 connections that send nothing and 100 that send half a request head,
    against a server answering 150 at once. Before, all 200 were still open after 20 s,
    and every new request was answered 503 ("Exceeded concurrency limit") meanwhile."""
    header_timeout = 2.0
    with serve_process("--limit-concurrency", "150", "--header-timeout", str(header_timeout)) as (
        url,
        _,
    ):
        host, port = address(url)
        silent = [socket.create_connection((host, port), timeout=10) for _ in range(200)]
        try:
            for sock in silent[100:]:
                sock.sendall(b"POST /agent HTTP/1.1\r\nHost: localhost\r\ncontent-")
            opened = time.monotonic()
            deadline = opened + header_timeout + 15  # the documented deadline, a wide margin
            held = list(silent)
            while held and time.monotonic() < deadline:
                held = [sock for sock in held if not _cut(sock)]
                time.sleep(0.2)
            assert not held, f"{len(held)} of 200 still open {time.monotonic() - opened:.1f} s on"
            fresh = _post(url)
            assert fresh.status_code == 200 and "RUN_FINISHED" in fresh.text
        finally:
            for sock in silent:
                sock.close()


async def flood(run: Run) -> None:
    """An agent that writes 64 KB deltas until its client leaves."""
    async with run.message() as m:
        while True:
            await m.delta("x" * 65536)


def test_a_client_that_never_reads_is_aborted_at_send_timeout() -> None:
    """Item 2: a client asks for a stream and reads nothing. Before, the server held
    it — and the run — forever: read after 8 s, the stream was still flowing (200 MB
    and counting). Now the connection is aborted send_timeout after output stopped
    moving, and what the kernel had buffered is all that is left to read."""
    send_timeout = 2.0
    agent = "tests.transport.test_hostile_peers:flood"
    with serve_process(agent, "--send-timeout", str(send_timeout)) as (url, _):
        host, port = address(url)
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect((host, port))
            body = orjson.dumps(INPUT)
            sock.sendall(
                b"POST /agent HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n"
                + b"content-length: %d\r\n\r\n" % len(body)
                + body
            )
            time.sleep(send_timeout + 10)  # the documented deadline, a wide margin
            sock.settimeout(30)  # a guard against hanging, not a measurement
            read = 0
            try:
                while read < 64 * 1024 * 1024 and (data := sock.recv(1 << 20)):
                    read += len(data)
            except ConnectionResetError:
                pass
            assert read < 64 * 1024 * 1024, "still streaming to a client that read nothing"
        # and it answers others (a refusal: every run of this agent is endless)
        assert _post(url, **{"content-type": "text/plain"}).status_code == 415
