"""The direct writer (transport/_direct.py) attacked the way a stranger would.

Real uvicorn on loopback, raw sockets: an ASGI middleware wrapped around the app
the plain way (``GZipMiddleware(agent_app(...))``, whose ``send`` is a bound
method of its own responder), a client that half-closes after its request,
pipelined requests on one connection. Each judges what the client gets (and what
the server logs) against the ASGI path's.
"""

from __future__ import annotations

import gzip
import logging
import socket
from typing import Any

import orjson
import pytest
from starlette.middleware.gzip import GZipMiddleware

from agui_tools.agent import Run
from agui_tools.transport._server import agent_app
from tests.helpers import direct
from tests.helpers.direct import spy_direct_bodies
from tests.helpers.scripted_server import address, serve

STACKS = {**direct.STACKS, "uvloop + httptools": {"loop": "uvloop", "http": "httptools"}}


@pytest.fixture
def writers(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    return spy_direct_bodies(monkeypatch)


async def story(run: Run) -> None:
    """``n`` numbered deltas, then the end."""
    async with run.message(message_id="m1") as m:
        for i in range(int((run.forwarded_props or {})["n"])):
            await m.delta(f"{i:08d}")


def _input(run: str, n: int) -> bytes:
    return orjson.dumps(
        {"threadId": "t1", "runId": run, "messages": [], "forwardedProps": {"n": n}}
    )


def _deltas(body: bytes) -> list[str]:
    events = [orjson.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: ")]
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    return [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]


PLAIN_STACKS = {name: STACKS[name] for name in ("h11", "httptools")}
"""The stacks on asyncio's own transports (uvloop's drops writes to a closing one quietly)."""


def _post(body: bytes, *, close: bool, extra: str = "") -> bytes:
    connection = "connection: close\r\n" if close else ""
    return (
        f"POST /agent HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n"
        f"{connection}{extra}content-length: {len(body)}\r\n\r\n"
    ).encode() + body


def _responses(raw: bytes) -> list[tuple[bytes, bytes]]:
    """Every chunked response on one connection, in order: (head, body), each
    frame checked strictly — bytes of two responses interleaved fail here."""
    out = []
    while raw:
        head, sep, rest = raw.partition(b"\r\n\r\n")
        assert sep, raw[:200]
        assert b"transfer-encoding: chunked" in head.lower(), head
        body = bytearray()
        while True:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line, 16)
            if size == 0:
                assert rest[:2] == b"\r\n", rest[:80]
                raw = rest[2:]
                break
            body += rest[:size]
            assert rest[size : size + 2] == b"\r\n", rest[size : size + 80]
            rest = rest[size + 2 :]
        out.append((head, bytes(body)))
    return out


@pytest.mark.parametrize("stack", list(STACKS))
def test_a_middleware_wrapped_around_the_app_gets_every_event(
    stack: str, writers: list[Any]
) -> None:
    """``GZipMiddleware(agent_app(...))``: the ``send`` reaching the app is a bound
    method of Starlette's responder, not uvicorn's cycle. The server must keep the
    ASGI path for it (the middleware compresses what it is given) — not fail on
    the responder's missing attributes after the head went out, cutting every run."""
    app = GZipMiddleware(agent_app(story, path="/agent"), minimum_size=10)
    with serve(app, **STACKS[stack]) as url:
        raw = _exchange_with(
            url, _post(_input("r1", n=5), close=True, extra="accept-encoding: gzip\r\n")
        )
        plain = _exchange_with(url, _post(_input("r1", n=5), close=True))
    assert writers == [None, None], "the ASGI path: the middleware sees every body"
    head, body = _responses(raw)[0]
    if b"content-encoding: gzip" in head.lower():  # Starlette's own choice for a stream
        body = gzip.decompress(body)
    assert _deltas(body) == [f"{i:08d}" for i in range(5)]
    assert _deltas(_responses(plain)[0][1]) == [f"{i:08d}" for i in range(5)]


@pytest.mark.parametrize("stack", list(PLAIN_STACKS))
def test_a_client_that_half_closes_leaves_no_socket_warnings(
    stack: str, writers: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    """A client that sends its request and shuts its side (``SHUT_WR``): uvicorn
    closes the transport at the EOF, and ``connection_lost`` comes a loop turn
    later. Events written into that gap are dropped — by asyncio, which warns
    ``socket.send() raised exception.`` from the fifth on. The writer must take a
    closing transport as a client gone, as the ASGI path's one batched write does
    not reach the warning either."""
    caplog.set_level(logging.WARNING)
    with serve(agent_app(story, path="/agent"), **PLAIN_STACKS[stack]) as url:
        with socket.create_connection(address(url), timeout=30) as sock:
            sock.sendall(_post(_input("r1", n=50), close=True))
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(1 << 16):
                pass
        after = _exchange_with(url, _post(_input("r2", n=3), close=True))
    assert writers[0] is not None, "the half-closed exchange went through the direct writer"
    assert "socket.send() raised exception" not in caplog.text, caplog.text
    assert _deltas(_responses(after)[0][1]) == [f"{i:08d}" for i in range(3)]


@pytest.mark.parametrize("stack", list(STACKS))
def test_pipelined_requests_are_answered_whole_and_in_order(stack: str, writers: list[Any]) -> None:
    """Two requests sent at once on one connection (the second before the first
    stream starts), then a third on the same connection after both: three whole
    responses, in order, no byte of one inside another."""
    with serve(agent_app(story, path="/agent"), **STACKS[stack]) as url:
        with socket.create_connection(address(url), timeout=30) as sock:
            sock.sendall(
                _post(_input("r1", n=40), close=False) + _post(_input("r2", n=7), close=False)
            )
            raw = b""
            while raw.count(b"\r\n0\r\n\r\n") < 2:
                raw += sock.recv(1 << 16)
            sock.sendall(_post(_input("r3", n=3), close=True))
            while data := sock.recv(1 << 16):
                raw += data
    answers = _responses(raw)
    assert [len(_deltas(body)) for _, body in answers] == [40, 7, 3]
    assert [b'"runId":"r%d"' % n in body for n, (_, body) in enumerate(answers, 1)] == [True] * 3
    assert len(writers) == 3 and None not in writers, writers


def _exchange_with(url: str, request: bytes) -> bytes:
    with socket.create_connection(address(url), timeout=30) as sock:
        sock.sendall(request)
        chunks = []
        while data := sock.recv(1 << 16):
            chunks.append(data)
    return b"".join(chunks)
