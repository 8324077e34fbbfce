"""The shared HTTP front (``transport/_front.py``): every face × every phase attack.

Each face — ``serve`` (``agent_app``), ``proxy`` (``ProxyApp``), ``mock``
(``mock_app``) and ``inspect`` (``inspector_app``) — is served for real by uvicorn on
loopback, with the connection deadlines every command uses, and attacked over a
raw socket the way a hostile or broken client would: a body that stops half-way, one
request past the concurrency cap, a body and a head over their limits, a ``Host``
the face is not reached by, a ``HEAD``. Before the front, the proxy read bodies
itself with no deadline: a client that stopped half-way held its connection for ever.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from agui_tools.app._recorded import RecordedRun
from agui_tools.demo.agent import demo_agent
from agui_tools.testing import serving
from agui_tools.transport import agent_app
from agui_tools.transport._mock import mock_app
from agui_tools.transport._proxy import ProxyApp
from agui_tools.ui.inspector import Inspector, host_policy, inspector_app
from tests.helpers.dsl import run_input

FACES = ("serve", "proxy", "mock", "inspect")
BOUND = 20.0
"""Seconds any answer may take here: a hang bound, never a measure."""
RUN_INPUT = run_input(messages=[{"id": "u1", "role": "user", "content": "hi"}])


@dataclass
class Face:
    """One face served on loopback: where to POST, with which headers and body."""

    name: str
    port: int
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def head(self, length: int, *, host: str | None = None, extra: str = "") -> bytes:
        """A POST head declaring ``length`` body bytes (the face's own headers)."""
        lines = [f"POST {self.path} HTTP/1.1", f"host: {host or f'127.0.0.1:{self.port}'}"]
        lines += [f"{k}: {v}" for k, v in self.headers.items()]
        return ("\r\n".join(lines) + f"\r\n{extra}content-length: {length}\r\n\r\n").encode()


RECORDED = RecordedRun(
    "inline",
    [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ],
)


@asynccontextmanager
async def served(name: str, **limits: Any) -> AsyncIterator[Face]:
    """The face ``name`` on loopback with these front limits (``body_timeout``,
    ``max_concurrency``)."""
    async with AsyncExitStack() as stack:
        agent = await stack.enter_async_context(serving(agent_app(demo_agent(delay=0))))
        headers = {"content-type": "application/json"}
        body = json.dumps(RUN_INPUT).encode()
        path = "/"
        if name == "serve":
            app: Any = agent_app(demo_agent(delay=0), **limits)
        elif name == "proxy":
            app = ProxyApp(f"{agent}/", **limits)
            stack.push_async_callback(app.aclose)
        elif name == "mock":
            app = mock_app(RECORDED, timing="fast", **limits)
        else:
            inspector = Inspector(f"{agent}/")
            stack.push_async_callback(inspector.aclose)
            app = inspector_app(inspector, hosts=host_policy("127.0.0.1"), **limits)
            path = "/api/next-input"  # answered with JSON; nothing is run
            body = json.dumps({"prompt": "hi"}).encode()
        base = await stack.enter_async_context(serving(app))
        port = int(base.rsplit(":", 1)[1])
        if name == "inspect":
            headers |= {"origin": f"http://127.0.0.1:{port}", "x-inspector-token": inspector.token}
        yield Face(name, port, path, headers, body)


async def _open(face: Face, data: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", face.port)
    writer.write(data)
    await writer.drain()
    return reader, writer


async def _answer(face: Face, data: bytes) -> bytes:
    """Send ``data`` and read until the server closes (every refusal here closes)."""
    reader, writer = await _open(face, data)
    try:
        async with asyncio.timeout(BOUND):
            return await reader.read(-1)
    finally:
        writer.close()


def _status(answer: bytes) -> int:
    found = re.match(rb"HTTP/1\.1 (\d{3}) ", answer)
    assert found is not None, answer[:200]
    return int(found.group(1))


def _run(test: Any) -> None:
    asyncio.run(test())


@pytest.mark.parametrize("name", FACES)
def test_a_body_that_stops_half_way_gets_408_at_the_body_deadline(name: str) -> None:
    async def go() -> None:
        async with served(name, body_timeout=0.5) as face:
            half = face.body[: len(face.body) // 2]
            answer = await _answer(face, face.head(len(face.body)) + half)
        assert _status(answer) == 408, answer
        assert b"body_timeout" in answer and b"connection: close" in answer.lower()

    _run(go)


@pytest.mark.parametrize("name", FACES)
def test_past_the_concurrency_cap_a_request_gets_503_then_is_served(name: str) -> None:
    async def go() -> None:
        async with served(name, max_concurrency=2, body_timeout=30) as face:
            held = [await _open(face, face.head(len(face.body))) for _ in range(2)]
            try:
                async with httpx.AsyncClient(timeout=BOUND) as client:
                    for _ in range(100):  # the held two are inside the front once one is refused
                        refused = await client.post(
                            face.url, content=face.body, headers=face.headers
                        )
                        if refused.status_code == 503:
                            break
                        await asyncio.sleep(0.02)
                    assert refused.status_code == 503, refused.text
                    assert refused.headers["retry-after"] == "1"
                    assert "max_concurrency=2" in refused.text
            finally:
                for _, writer in held:
                    writer.close()
            async with httpx.AsyncClient(timeout=BOUND) as client:
                for _ in range(100):  # the slots are given back as the held requests end
                    served_now = await client.post(
                        face.url, content=face.body, headers=face.headers
                    )
                    if served_now.status_code != 503:
                        break
                    await asyncio.sleep(0.02)
            assert served_now.status_code == 200, served_now.text

    _run(go)


@pytest.mark.parametrize("name", FACES)
def test_a_body_declared_over_the_limit_is_413_before_it_is_sent(name: str) -> None:
    async def go() -> None:
        async with served(name) as face:
            answer = await _answer(face, face.head(10**9))
        assert _status(answer) == 413, answer
        assert b"max_body_bytes" in answer

    _run(go)


@pytest.mark.parametrize("name", FACES)
def test_a_body_longer_than_the_limit_is_413_as_it_arrives(name: str) -> None:
    """No Content-Length to trust: chunked, counted while reading."""

    async def go() -> None:
        async with served(name) as face:
            head = face.head(0).replace(b"content-length: 0", b"transfer-encoding: chunked")
            chunk = b"%x\r\n%s\r\n" % (1024 * 1024, b" " * 1024 * 1024)
            reader, writer = await _open(face, head)
            try:
                async with asyncio.timeout(BOUND):
                    answer = b""
                    while not answer:  # until the front stops reading and answers
                        writer.write(chunk)
                        await writer.drain()
                        answer = await _read_some(reader)
            except (ConnectionError, OSError):
                answer = await reader.read(-1)
            finally:
                writer.close()
        assert _status(answer) == 413, answer[:200]

    _run(go)


async def _read_some(reader: asyncio.StreamReader) -> bytes:
    try:
        return await asyncio.wait_for(reader.read(65536), 0.05)
    except TimeoutError:
        return b""


@pytest.mark.parametrize("name", FACES)
def test_a_head_over_the_limit_is_431_and_closed(name: str) -> None:
    """A head still incomplete past h11's 16 KiB (a head that arrives whole in one read
    of the socket is parsed whole: what is bounded is what is held waiting)."""

    async def go() -> None:
        async with served(name) as face:
            big = f"x-padding: {'a' * 100_000}\r\n"
            answer = await _answer(face, face.head(len(face.body), extra=big)[:-4])
        assert _status(answer) == 431, answer
        assert b"request head exceeds 16384 bytes" in answer

    _run(go)


@pytest.mark.parametrize("name", FACES)
def test_a_host_the_face_is_not_reached_by_is_403(name: str) -> None:
    async def go() -> None:
        async with served(name) as face:
            answer = await _answer(face, face.head(len(face.body), host="evil.test") + face.body)
        assert _status(answer) == 403, answer
        assert b"evil.test" in answer and b"DNS-rebinding" in answer

    _run(go)


@pytest.mark.parametrize("name", FACES)
def test_head_is_answered_without_a_body(name: str) -> None:
    async def go() -> None:
        async with served(name) as face:
            path = "/" if name == "inspect" else face.path  # the inspector's page
            request = (
                f"HEAD {path} HTTP/1.1\r\nhost: 127.0.0.1:{face.port}\r\nconnection: close\r\n\r\n"
            )
            answer = await _answer(face, request.encode())
        head, _, rest = answer.partition(b"\r\n\r\n")
        assert _status(head) < 500, head
        assert rest == b"", rest[:200]

    _run(go)
