"""The shared HTTP front attacked by someone who did not write it.

Each face runs as the real command (``serve``, ``proxy``, ``mock``) on loopback and
is attacked over a raw socket; each test names what it found and what it measured.
The per-phase matrix of the front itself is ``test_front_matrix.py``.
"""

from __future__ import annotations

import asyncio
import re
import resource
import signal
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson
import pytest

from agui_tools.agent import Run
from tests.helpers.proxy import ctrl_c, mock_cmd, proxy_cmd, serve_cmd
from tests.helpers.terminal import AGUI, ENV, ROOT

BOUND = 30.0
"""Seconds any wait here may take: a hang bound, never a measure."""
INPUT = {
    "threadId": "t",
    "runId": "r",
    "state": {},
    "messages": [{"id": "u1", "role": "user", "content": "hi"}],
    "tools": [],
    "context": [],
    "forwardedProps": {},
}


async def flood(run: Run) -> None:
    """An agent that writes 64 KB deltas until its client leaves."""
    async with run.message() as m:
        while True:
            await m.delta("x" * 65536)


@contextmanager
def served(*args: str) -> Iterator[tuple[str, int]]:
    """``agui-tools serve ARGS`` as a process: its URL and port, stopped with Ctrl-C."""
    proc, url = serve_cmd(*args)
    try:
        yield url, int(url.rsplit(":", 1)[1].split("/")[0])
    finally:
        ctrl_c(proc)


def _post(port: int, path: str = "/agent", *, rcvbuf: int | None = None) -> socket.socket:
    """A socket that has sent one run request and read nothing."""
    sock = socket.socket()
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(BOUND)
    sock.connect(("127.0.0.1", port))
    body = orjson.dumps(INPUT)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return sock


def test_a_client_that_never_reads_is_reset_at_send_timeout_not_left_to_the_kernel() -> None:
    """Found: "aborted" at send_timeout was a plain close() to the kernel: the socket
    sat in FIN-WAIT-1 with 3.8 MB still queued for the peer that reads nothing, and
    the peer was told nothing — it saw a live connection trickling the queue (a
    reader resuming after the abort got bytes for over 100 s). Each such client cost
    the machine its whole send buffer long after the server let go. Now the abort is
    a reset (SO_LINGER 0): the queue is dropped and the peer learns at once."""
    send_timeout = 1.0
    with served("tests.transport.test_front_attack:flood", "--send-timeout", "1") as (_, port):
        with _post(port, rcvbuf=4096) as sock:
            time.sleep(send_timeout + 4)  # the deadline, a wide margin for the watchdog
            sock.settimeout(2)
            read, ended = 0, ""
            started = time.monotonic()
            while time.monotonic() - started < 10 and not ended:
                try:
                    data = sock.recv(1 << 20)
                except ConnectionResetError:
                    ended = "reset"
                except TimeoutError:
                    continue  # still open, still trickling: what was found
                else:
                    read += len(data)
                    ended = "" if data else "closed"
    assert ended == "reset", f"not reset: {read} bytes still came in 10 s after the abort"
    assert read < 1024 * 1024, f"{read} bytes reached a client after its connection was aborted"


async def quiet(run: Run) -> None:
    """An agent that starts a message and then thinks for a minute."""
    async with run.message() as m:
        await m.delta("thinking")
        await asyncio.sleep(60)


@contextmanager
def limited(command: str, *args: str, files: int) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """``agui-tools COMMAND ARGS`` with at most ``files`` open descriptors (``ulimit
    -n``): the process and its port. Stopped with Ctrl-C by the caller."""

    def lowered() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    proc = subprocess.Popen(
        [*AGUI, command, "--port", "0", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT,
        preexec_fn=lowered,
    )  # fmt: skip
    assert proc.stdout is not None
    found = re.search(r"http://127\.0\.0\.1:(\d+)", proc.stdout.readline())
    if found is None:
        proc.kill()
        raise AssertionError(proc.communicate(timeout=60))
    try:
        yield proc, int(found.group(1))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)


def _statuses(socks: list[socket.socket]) -> Counter[str]:
    """The status line each socket got (or how it ended), counted."""
    seen: Counter[str] = Counter()
    for sock in socks:
        try:
            seen[sock.recv(12).decode(errors="replace") or "closed"] += 1
        except OSError as exc:
            seen[type(exc).__name__] += 1
    return seen


def test_the_proxy_under_its_descriptor_limit_answers_503_past_what_it_can_hold() -> None:
    """Found: the cap is documented as set under the descriptor limit (1,000 under
    1,024) so that requests past it get the front's 503. But each proxied request
    holds two sockets — the frontend's and the agent's. Scaled down (``ulimit -n
    128``, ``--limit-concurrency 100``), 80 streams at once: 33 served, 39 got 502
    "the upstream cannot be reached" (the agent blamed for the proxy's own limit)
    and 8 got 500 with a traceback each on stderr. (At 256 / 240 with 200 streams: 20 served, 151 × 502, 29 × 500,
    41 KB of stderr.) Every request must get a stream or the front's 503: the proxy's
    cap is fitted under the descriptor limit, two a request (``descriptor_cap``)."""
    with served("tests.transport.test_front_attack:quiet") as (agent, _):
        with limited("proxy", agent, "--limit-concurrency", "100", files=128) as (proc, port):
            socks = [_post(port, "/") for _ in range(80)]
            time.sleep(2)
            try:
                seen = _statuses(socks)
            finally:
                for sock in socks:
                    sock.close()
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
    assert set(seen) <= {"HTTP/1.1 200", "HTTP/1.1 503"}, seen
    assert "Traceback" not in err and "cannot be reached" not in err, err[-2000:]


def _face_args(command: str, folder: Path) -> list[str]:
    """What ``command`` needs to start: an upstream for the proxy, a capture for mock."""
    if command == "proxy":
        return ["http://127.0.0.1:9/agent"]
    if command == "mock":
        events = [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
            {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
        ]
        capture = folder / "run.sse"
        capture.write_bytes(b"".join(b"data: %s\n\n" % orjson.dumps(e) for e in events))
        return [str(capture)]
    return []


@pytest.mark.parametrize("command", ["serve", "proxy", "mock"])
def test_a_connection_flood_past_the_descriptor_limit_writes_no_traceback(
    command: str, tmp_path: Path
) -> None:
    """Held: past the descriptor limit (``ulimit -n 128``, 150 silent connections)
    accept() fails until header_timeout cuts the silent ones; a request made then
    is served 2 s later, and every silent connection got its 408. Found: meanwhile
    stderr gets asyncio's "socket.accept() out of system resource" with a
    five-line traceback for each retry (8 KB in 3 s on each face; the guard's
    budget caps it at 20 a template per 10 s), where the log is promised one line
    per event and no traceback for bad input."""
    args = [*_face_args(command, tmp_path), "--limit-concurrency", "100", "--header-timeout", "2"]
    with limited(command, *args, files=128) as (proc, port):
        silent = []
        for _ in range(150):
            sock = socket.create_connection(("127.0.0.1", port), timeout=BOUND)
            silent.append(sock)
        time.sleep(3)  # header_timeout, then accept() retries: the lines are written
        try:
            seen = _statuses(silent)
        finally:
            for sock in silent:
                sock.close()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert seen == Counter({"HTTP/1.1 408": 150}), seen
    assert "Traceback" not in err, err[:2000]


def _long_capture(folder: Path) -> str:
    """A recorded run of 6 MB: more than the socket buffers hold."""
    delta = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x" * 200}
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        *[delta] * 30_000,
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    capture = folder / "long.sse"
    capture.write_bytes(b"".join(b"data: %s\n\n" % orjson.dumps(e) for e in events))
    return str(capture)


@pytest.mark.parametrize("command", ["serve", "mock"])
def test_sigterm_with_a_client_that_never_reads_stops_within_the_grace(
    command: str, tmp_path: Path
) -> None:
    """Found: SIGTERM while one client reads nothing of its stream. The runs were
    ended with RUN_ERROR after the grace (1 s for serve, 2 s for mock), but the
    non-reader's connection stayed, its task blocked on a full buffer, until
    uvicorn's own graceful timeout cancelled it: the process exited 13 s (serve)
    and 15 s (mock) after SIGTERM, logging "Exception in ASGI application" with a
    traceback. Now a connection whose output is still stalled when uvicorn shuts
    its connections down (after the grace and the 5 s the runs get to write their
    end) is reset within a second: 8.1-8.7 s, nothing logged; a client that reads
    still gets its stream's end."""
    if command == "serve":
        proc, url = serve_cmd("tests.transport.test_front_attack:flood", "--shutdown-grace", "1")
    else:
        proc, url = mock_cmd(*[_long_capture(tmp_path)] * 2, "--timing", "fast")
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with _post(port, rcvbuf=4096), _post(port) as reader:
        time.sleep(2)  # both streams are flowing; one client's buffers are full
        stopping = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        tail = b""
        while data := reader.recv(1 << 20):
            tail = (tail + data)[-4096:]
        _, err = proc.communicate(timeout=60)
        stopped = time.monotonic() - stopping
    assert re.search(rb'"type":"RUN_(ERROR|FINISHED)"[^\n]*\n\n\r\n0\r\n\r\n$', tail), tail[-300:]
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "ERROR" not in err.replace("RUN_ERROR", ""), err[-2000:]
    assert stopped < 12, f"stopped {stopped:.1f} s after SIGTERM (grace 1-2 s, 5 s to end)"


@pytest.mark.parametrize("command", ["serve", "proxy", "mock"])
def test_idle_connections_at_the_cap_get_the_fronts_503(command: str, tmp_path: Path) -> None:
    """Found: with ``--limit-concurrency 3``, three connections that send nothing
    (or three kept alive after an answer) are enough: the next request gets
    uvicorn's ``503 Service Unavailable`` in plain text, no ``Retry-After``, naming
    no limit, and a "Exceeded concurrency limit." warning per request — not the
    front's documented 503 (``Retry-After: 1``, a JSON body naming
    ``max_concurrency``). Silent connections cost nothing and are renewed every
    header_timeout. Now the connection cap is kept but answered as the front
    answers (the deadline protocol judges it)."""
    start = {"serve": serve_cmd, "proxy": proxy_cmd, "mock": mock_cmd}[command]
    proc, url = start(*_face_args(command, tmp_path), "--limit-concurrency", "3")
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    try:
        silent = [socket.create_connection(("127.0.0.1", port), timeout=BOUND) for _ in range(3)]
        time.sleep(0.5)  # accepted: each counts as a connection
        with _post(port, "/agent" if command != "proxy" else "/") as sock:
            answer = b""
            while data := sock.recv(65536):
                answer += data
                if b"\r\n\r\n" in answer:
                    break
        for sock in silent:
            sock.close()
    finally:
        ctrl_c(proc)
    head = answer.split(b"\r\n\r\n", 1)[0].lower()
    assert head.startswith(b"http/1.1 503 "), answer[:300]
    assert b"retry-after: 1" in head and b"application/json" in head, answer[:300]


def test_a_client_reading_steadily_is_not_cut_at_send_timeout() -> None:
    """Found: ``send_timeout`` is documented as time *without progress* ("a client
    that reads, however slowly, resets it"). With ``--send-timeout 2``, a client
    reading 1 KiB every 50 ms (20 KB/s, a 4 KiB receive buffer) was reset 2.6 s
    into its stream, three times of three — while one reading a byte a second was
    still connected after 15 s. The kernel's send buffer (megabytes on loopback)
    drains at the reader's pace; our buffer does not move until it becomes
    writable, so the watchdog saw no progress from a reader making it. Now the
    bytes the kernel still holds for the peer count too (``SIOCOUTQ``)."""
    with served("tests.transport.test_front_attack:flood", "--send-timeout", "2") as (_, port):
        with _post(port, rcvbuf=4096) as sock:
            read, started = 0, time.monotonic()
            while time.monotonic() - started < 8:  # four send_timeouts of steady reading
                try:
                    data = sock.recv(1024)
                except ConnectionResetError:
                    break
                assert data, "closed"
                read += len(data)
                time.sleep(0.05)
            reading = time.monotonic() - started
    assert reading >= 8, f"reset after {reading:.1f} s of steady reading ({read} bytes read)"
