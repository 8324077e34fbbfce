"""The agent server's events written below ASGI (transport/_direct.py), on real uvicorn.

Each test serves the same agent on loopback and reads the raw HTTP response from a
socket, so what is judged is the bytes a client gets: identical to the ASGI path's on
every stack, every byte in order for a reader that lags, a client that reads nothing
cut at the send deadline, a client that leaves ending its run cleanly. A spy on the
server's ``direct_body`` proves each test went through the direct writer.
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import subprocess
import sys
import time
from typing import Any

import orjson
import pytest

from agui_tools.agent import Run
from agui_tools.transport import _direct, _server
from agui_tools.transport._deadlines import deadline_protocol
from agui_tools.transport._server import agent_app
from tests.helpers.direct import STACKS, spy_direct_bodies
from tests.helpers.scripted_server import address, serve


@pytest.fixture
def writers(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    return spy_direct_bodies(monkeypatch)


def _input(run: str = "r1", **props: Any) -> bytes:
    return orjson.dumps({"threadId": "t1", "runId": run, "messages": [], "forwardedProps": props})


async def story(run: Run) -> None:
    """Deterministic: fixed ids, numbered deltas (``n`` of ``size`` bytes), a call."""
    props = run.forwarded_props or {}
    n, size = int(props.get("n", 20)), int(props.get("size", 8))
    async with run.message(message_id="m1") as m:
        for i in range(n):
            await m.delta(f"{i:08d}".ljust(size, "."))
            if props.get("pace"):
                await asyncio.sleep(float(props["pace"]))
    async with run.tool_call("search", call_id="c1", parent_message_id="m1") as call:
        await call.args('{"q": "x"}')
    await run.result("c1", "done", message_id="r1")


def _request(body: bytes, version: str = "1.1") -> bytes:
    return (
        f"POST /agent HTTP/{version}\r\nHost: localhost\r\ncontent-type: application/json\r\n"
        f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode() + body


def _exchange(url: str, body: bytes, version: str = "1.1") -> bytes:
    """The whole raw response to one request (the server closes after it)."""
    with socket.create_connection(address(url), timeout=30) as sock:
        sock.sendall(_request(body, version))
        chunks = []
        while data := sock.recv(1 << 16):
            chunks.append(data)
    return b"".join(chunks)


def _parts(raw: bytes) -> tuple[bytes, bytes]:
    """A response's head, and its body — undone, if it is chunked."""
    head, _, body = raw.partition(b"\r\n\r\n")
    return head, _dechunk(raw) if b"transfer-encoding: chunked" in head.lower() else body


def _dechunk(raw: bytes) -> bytes:
    """A chunked body, undone strictly: a broken frame fails the test."""
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower(), head
    body = bytearray()
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            assert rest == b"\r\n", rest[:80]
            return bytes(body)
        body += rest[:size]
        assert rest[size : size + 2] == b"\r\n"
        rest = rest[size + 2 :]


def _deltas(body: bytes) -> list[str]:
    events = [orjson.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: ")]
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    return [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]


@pytest.mark.parametrize("stack", list(STACKS))
@pytest.mark.parametrize("version", ["1.1", "1.0"])
def test_the_bytes_are_those_of_the_asgi_path(
    stack: str, version: str, writers: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same run, raw, with the writer and without it: byte for byte, head and
    chunk framing included (an HTTP/1.0 client gets a close-delimited body on h11)."""
    app = agent_app(story, path="/agent")
    body = _input(n=30, pace=0.001)
    with serve(app, date_header=False, **STACKS[stack]) as url:
        direct = _exchange(url, body, version)
        used = [w for w in writers if w is not None]
        monkeypatch.setattr(_server, "direct_body", lambda scope: None)
        plain = _exchange(url, body, version)
    assert len(used) == 1, "the first exchange went through the direct writer"
    head, events = _parts(direct)
    assert head.startswith(b"HTTP/1.1 200")
    # the chunks' boundaries are the batching's (timing), not the stream's: compared
    # undone, each chunk's framing checked strictly by _parts
    assert (head, events) == _parts(plain)
    chunked = b"transfer-encoding: chunked" in head.lower()
    assert chunked or (version == "1.0" and stack != "httptools"), head
    assert _deltas(events) == [f"{i:08d}" for i in range(30)]


def test_a_reader_that_lags_gets_every_byte_in_order(writers: list[Any]) -> None:
    """Backpressure: 4 MB of deltas to a client with a small window that reads late.
    The transport pauses writing; the writer waits for it (``drain``) instead of
    buffering without bound or dropping, and every delta arrives, in order."""
    drained: list[int] = []
    real_drain = _direct.DirectBody.drain

    async def counted(self: _direct.DirectBody) -> None:
        drained.append(1)
        await real_drain(self)

    n, size = 512, 8192
    with (
        pytest.MonkeyPatch.context() as patch,
        serve(agent_app(story, path="/agent"), http=deadline_protocol()) as url,
    ):
        patch.setattr(_direct.DirectBody, "drain", counted)
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(30)
            sock.connect(address(url))
            sock.sendall(_request(_input(n=n, size=size)))
            time.sleep(1.0)  # the server fills every buffer and must wait
            chunks = []
            while data := sock.recv(4096):
                chunks.append(data)
    assert writers and writers[0] is not None
    assert drained, "the transport never paused: the test did not exercise backpressure"
    deltas = _deltas(_dechunk(b"".join(chunks)))
    assert deltas == [f"{i:08d}".ljust(size, ".") for i in range(n)]


ENDED: list[str] = []


async def endless(run: Run) -> None:
    """Writes 64 KB deltas until its client leaves; says how it ended. Given ``n``, it
    tells :func:`story` instead."""
    if "n" in (run.forwarded_props or {}):
        await story(run)
        return
    try:
        async with run.message() as m:
            while True:
                await m.delta("x" * 65536)
                await asyncio.sleep(0)
    except asyncio.CancelledError:
        ENDED.append("cancelled")
        raise


async def _wait_for(condition: Any, seconds: float) -> None:
    deadline = time.monotonic() + seconds  # a hang bound, not a measurement
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


def test_a_client_that_reads_nothing_is_cut_at_the_send_deadline(writers: list[Any]) -> None:
    """The direct writer fills the transport's buffer like uvicorn's send would; the
    deadline protocol's watchdog sees it stand still and resets the connection: the
    run is cancelled, and the client gets a reset, not an endless stream."""
    ENDED.clear()
    with serve(agent_app(endless, path="/agent"), http=deadline_protocol(send_timeout=1.0)) as url:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(address(url))
            sock.sendall(_request(_input()))
            asyncio.run(_wait_for(lambda: ENDED, 20))
            sock.settimeout(10)
            read = 0
            try:
                while data := sock.recv(1 << 20):
                    read += len(data)
            except ConnectionResetError:
                pass
        assert read < 64 * 1024 * 1024
    assert writers and writers[0] is not None
    assert ENDED == ["cancelled"]


@pytest.mark.parametrize("stack", ["h11", "httptools"])
def test_a_client_that_leaves_mid_stream_ends_its_run_cleanly(
    stack: str, writers: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    """A client reads the first events and closes: the run is cancelled, nothing
    is logged as failed, and the server serves the next run whole."""
    ENDED.clear()
    caplog.set_level(logging.INFO, logger="agui_tools")
    with serve(agent_app(endless, path="/agent"), **STACKS[stack]) as url:
        with socket.create_connection(address(url), timeout=30) as sock:
            sock.sendall(_request(_input()))
            got = b""
            while got.count(b"TEXT_MESSAGE_CONTENT") < 3:
                got += sock.recv(1 << 16)
        asyncio.run(_wait_for(lambda: ENDED, 20))
        after = _exchange(url, _input("r2", n=3))
    assert writers[0] is not None
    assert ENDED == ["cancelled"]
    assert _deltas(_dechunk(after)) == [f"{i:08d}" for i in range(3)]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    assert re.search(r"client disconnected; cancelling run", caplog.text)


class Marking:
    """Middleware that rewrites bodies: every delta gains a leading ``~``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def marked(message: Any) -> None:
            if message["type"] == "http.response.body":
                body = message.get("body", b"").replace(b'"delta":"', b'"delta":"~')
                message = {**message, "body": body}
            await send(message)

        await self.app(scope, receive, marked)


def test_middleware_that_may_rewrite_bodies_turns_it_off(writers: list[Any]) -> None:
    """Middleware added to the app afterwards sees every body: the server keeps the
    ASGI path for it, and every event the client gets went through it."""
    app = agent_app(story, path="/agent")
    app.add_middleware(Marking)
    with serve(app, http="h11") as url:
        raw = _exchange(url, _input(n=5))
    assert writers == [None]
    assert _deltas(_parts(raw)[1]) == [f"~{i:08d}" for i in range(5)]


def test_the_base_install_imports_it_without_httptools() -> None:
    """httptools is uvicorn's optional parser: the wheel's base install has none, and the
    agent server (which stands on the direct writer) must still import and serve on h11."""
    code = (
        "import sys; sys.modules['httptools'] = None\n"
        "from agui_tools import agent_app\n"
        "from agui_tools.transport._direct import _CYCLES\n"
        "print(len(_CYCLES))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"  # h11's cycle only
