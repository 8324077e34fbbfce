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

import orjson
import pytest
from starlette.types import Message, Receive, Scope, Send

from agui_tools._errors import LimitExceeded, ProtocolViolation, TransportError
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


def gzipping_each_message(app: Any, coding: str = "gzip") -> Any:
    """ASGI middleware that gzips every body message as a member of its own: RFC 1952's
    "series of members" (an agent compressing each flush apart, a CDN concatenating)."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        async def send_members(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message["headers"] if k.lower() != b"content-length"]
                await send(
                    {**message, "headers": [*headers, (b"content-encoding", coding.encode())]}
                )
                return
            body = message.get("body", b"")
            member = zlib.compressobj(wbits=31)
            await send({**message, "body": member.compress(body) + member.flush() if body else b""})

        await app(scope, receive, send_members)

    return wrapped


@pytest.mark.parametrize("coding", ["gzip", "x-gzip"])
def test_a_gzip_stream_of_many_members_is_decoded_whole(coding: str) -> None:
    """Every member is decoded, not the first one only (which ended the run truncated,
    TRANS-2, after its first event); x-gzip is gzip (RFC 9110 §8.4.1.3)."""
    with serve(gzipping_each_message(agent_app(agent), coding)) as base:
        conv = Conversation(thread_id="t")
        conv.next_input(user="hi")
        with SyncAgentClient(f"{base}/") as client:
            result = client.run(conv)
    assert result.status == "success", result.violation
    assert conv.messages[-1]["content"] == "".join(f"part {i}; " for i in range(50))


def _body_agent(body: bytes, coding: str) -> Any:
    from starlette.responses import Response

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        while (await receive()).get("more_body", False):
            pass
        headers = {"content-encoding": coding}
        await Response(body, media_type="text/event-stream", headers=headers)(scope, receive, send)

    return app


def _events(*deltas: str) -> bytes:
    frames = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    frames.append({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"})
    frames += [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": d} for d in deltas]
    return b"".join(b"data: " + orjson.dumps(f) + b"\n\n" for f in frames)


def test_a_stream_that_stops_decoding_mid_chunk_delivers_what_decoded_first() -> None:
    """One chunk holding decodable events and then bytes no inflater reads: the events
    arrive (zlib gives nothing of a failing call: they used to be lost), then the run
    is rejected TRANS-4 naming the byte of the body where decoding stopped."""
    packer = zlib.compressobj(wbits=31)
    good = packer.compress(_events("a", "b")) + packer.flush(zlib.Z_SYNC_FLUSH)
    with serve(_body_agent(good + b"\xff" * 16, "gzip")) as base:
        conv = Conversation(thread_id="t")
        conv.next_input(user="hi")
        with (
            SyncAgentClient(f"{base}/") as client,
            pytest.raises(ProtocolViolation, match=f"does not decode at byte {len(good)} of"),
        ):
            client.run(conv)
    assert conv.runs[0].violation is not None and conv.runs[0].violation.rule == "TRANS-4"
    assert conv.messages[-1]["content"] == "ab", "what decoded before the error is delivered"


@pytest.mark.parametrize(("coding", "tail"), [("deflate", b"trailing"), ("gzip", b"not a member")])
def test_bytes_after_the_compressed_stream_are_a_violation_not_dropped(
    coding: str, tail: bytes
) -> None:
    """After a deflate stream's end nothing may follow; after a gzip member, only
    another member: the rest is a TRANS-4 violation, never silently ignored."""
    packer = zlib.compressobj(wbits=31 if coding == "gzip" else 15)
    whole = packer.compress(_events("a")) + packer.flush()
    with serve(_body_agent(whole + tail, coding)) as base:
        conv = Conversation(thread_id="t")
        conv.next_input(user="hi")
        with SyncAgentClient(f"{base}/") as client, pytest.raises(ProtocolViolation) as caught:
            client.run(conv)
    assert caught.value.rule == "TRANS-4", caught.value
    named = (
        f"at byte {len(whole)} of" if coding == "deflate" else f"member 2 (from byte {len(whole)})"
    )
    assert named in str(caught.value), caught.value
    assert conv.messages[-1]["content"] == "a"


def test_zero_padding_after_the_last_gzip_member_is_skipped_as_gzip_skips_it() -> None:
    """A tape-era habit gzip(1) and Python's gzip module accept: NUL bytes after the last
    member are padding, not a broken stream (a TRANS-4 there would be a false verdict)."""
    packer = zlib.compressobj(wbits=31)
    whole = packer.compress(_events("a", "b")) + packer.flush()
    with serve(_body_agent(whole + b"\x00" * 64, "gzip")) as base:
        conv = Conversation(thread_id="t")
        conv.next_input(user="hi")
        with SyncAgentClient(f"{base}/") as client:
            result = client.run(conv)
    # the run has no end (the body holds none): truncated, not a decoding failure
    assert result.violation is None or result.violation.rule != "TRANS-4", result.violation
    assert conv.messages[-1]["content"] == "ab"
