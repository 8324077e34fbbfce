"""Content codings (issue 11, item 9): a stream compressed on the way is decoded.

The client used to send ``Accept-Encoding: gzip, deflate`` (httpx's default) and
then read the raw bytes: a gzip-encoded stream ended "truncated" with no rule
named. Here a real loopback server sits in front of an agent like a compressing
proxy: it forwards to ``agent_app`` in-process and compresses the response body
as it streams, with the coding the client asked for.
"""

from __future__ import annotations

import asyncio
import zlib
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from agui_tools._errors import LimitExceeded, TransportError
from agui_tools.agent import Run
from agui_tools.app import Conversation
from agui_tools.transport import SyncAgentClient
from agui_tools.transport._client import AgentClient
from agui_tools.transport._server import agent_app
from tests.helpers.scripted_server import serve


async def agent(run: Run) -> None:
    async with run.message() as m:
        for i in range(50):
            await m.delta(f"part {i}; ")


def compressing(app: Any, coding: str, *, level: int = 6) -> Any:
    """ASGI middleware that compresses every response body as a proxy would."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        wbits = {"gzip": 31, "deflate": 15}.get(coding, 31)
        compressor = zlib.compressobj(level, zlib.DEFLATED, wbits)

        async def send_compressed(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message["headers"] if k.lower() != b"content-length"]
                headers.append((b"content-encoding", coding.encode()))
                await send({**message, "headers": headers})
                return
            body = compressor.compress(message.get("body", b""))
            if message.get("more_body", False):
                body += compressor.flush(zlib.Z_SYNC_FLUSH)
            else:
                body += compressor.flush()
            await send({**message, "body": body})

        await app(scope, receive, send_compressed)

    return wrapped


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_compressed_stream_is_decoded_sync_and_async(coding: str) -> None:
    with serve(compressing(agent_app(agent), coding)) as base:
        url = f"{base}/"
        conv = Conversation(thread_id="t")
        conv.next_input(user="hi")
        with SyncAgentClient(url) as client:
            result = client.run(conv)
        assert result.status == "success", result.violation
        assert conv.messages[-1]["content"] == "".join(f"part {i}; " for i in range(50))

        async def main() -> str:
            conv = Conversation(thread_id="t2")
            conv.next_input(user="hi")
            async with AgentClient(url) as client:
                return (await client.run(conv)).status

        assert asyncio.run(main()) == "success"


def test_a_coding_the_client_did_not_ask_for_is_a_clean_transport_error() -> None:
    with serve(compressing(agent_app(agent), "br")) as base:
        conv = Conversation(thread_id="t")
        conv.next_input(user="hi")
        with (
            SyncAgentClient(f"{base}/") as client,
            pytest.raises(TransportError, match="Content-Encoding 'br'"),
        ):
            client.run(conv)


async def bomb_agent(run: Run) -> None:
    async with run.message() as m:
        await m.delta("start")
    for _ in range(200):  # 200 x 1 MiB of keep-alive comments compresses ~1000:1
        await run.custom("pad", "x" * (1024 * 1024))


def test_a_stream_that_inflates_past_the_bound_is_rejected_by_name() -> None:
    with serve(compressing(agent_app(bomb_agent), "gzip", level=9)) as base:
        conv = Conversation(thread_id="t")
        conv.next_input(user="hi")
        with (
            SyncAgentClient(f"{base}/") as client,
            pytest.raises(LimitExceeded, match="past 200 to one"),
        ):
            client.run(conv)
    [run] = conv.runs
    assert run.status == "rejected" and run.violation is not None
    assert conv.messages[-1]["content"] == "start", "what arrived before stays"
