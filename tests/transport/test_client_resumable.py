"""The resumable client (docs/resumable.md) against the reference server of the
binding, on real loopback HTTP, with a proxy cutting the connection: opt-in,
rejoin with Last-Event-ID, each event once (PROC-7), the refusals, stop, and the
standard client's behaviour when the agent does not confirm."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import pytest

from agui_tools._errors import ProtocolViolation
from agui_tools.agent import Run
from agui_tools.app._conversation import Conversation
from agui_tools.transport import RejoinPolicy  # public: docs/transport.md names it
from agui_tools.transport._client import AgentClient, SyncAgentClient, TransportError
from agui_tools.transport._resumable import Resumable
from agui_tools.transport._server import agent_app
from tests.helpers.cutting_proxy import Cutter, cutting_proxy
from tests.helpers.resumable_server import ReferenceServer, slow_agent, two_tool_agent
from tests.helpers.scripted_server import Script, app_for, serve

FAST = RejoinPolicy(first_delay=0.01, max_delay=0.05, attempts=4, deadline=10)


@contextmanager
def reference(
    server: ReferenceServer, cutter: Cutter | None = None
) -> Iterator[tuple[ReferenceServer, str]]:
    with serve(server.app()) as base:
        if cutter is None:
            yield server, f"{base}/agent"
            return
        with cutting_proxy(int(base.rsplit(":", 1)[1]), cutter) as proxied:
            yield server, f"{proxied}/agent"


def run_input(thread: str = "t1", run: str = "r:1") -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": run,
        "state": {},
        "messages": [{"id": "u1", "role": "user", "content": "hi"}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


def read_all(url: str, inp: dict[str, Any], **options: Any) -> list[dict[str, Any]]:
    async def main() -> list[dict[str, Any]]:
        async with AgentClient(url, resumable=True, rejoin=FAST, **options) as client:
            return [orjson.loads(f) async for frames in client.frames(inp) for f in frames]

    return asyncio.run(main())


def uncut_events() -> list[dict[str, Any]]:
    with reference(ReferenceServer(two_tool_agent({}))) as (_, url):
        return read_all(url, run_input())


def test_an_uncut_run_opts_in_and_reads_every_event_once() -> None:
    executions: dict[str, int] = {}
    with reference(ReferenceServer(two_tool_agent(executions))) as (server, url):
        events = read_all(url, run_input())
    assert events[0]["type"] == "RUN_STARTED"
    assert events[-1]["type"] == "RUN_FINISHED"
    [(method, _, headers)] = server.requests
    assert method == "POST" and headers["agui-resumable"] == "1"
    assert executions == {"t1": 1}


@pytest.mark.parametrize("cut_at", [1, 5, 9, 13])
def test_a_cut_rejoins_with_the_last_seq_and_delivers_each_event_once(cut_at: int) -> None:
    expected = uncut_events()
    executions: dict[str, int] = {}
    cutter = Cutter(cut_at=cut_at)
    with reference(ReferenceServer(two_tool_agent(executions)), cutter) as (server, url):
        events = read_all(url, run_input())
    assert cutter.cuts == 1
    assert events == expected  # nothing lost, nothing twice, in order
    rejoin = [h for m, _, h in server.requests if m == "GET"]
    assert rejoin and rejoin[0]["last-event-id"] == f"r:1:{cut_at}"  # runId holds a ':'
    assert executions == {"t1": 1}  # the detached run went on; it never ran again


def test_a_silent_connection_is_rejoined_at_the_idle_deadline() -> None:
    expected = uncut_events()
    cutter = Cutter(cut_at=4, stall=True)  # the connection stays open, and says nothing
    with reference(ReferenceServer(two_tool_agent({})), cutter) as (server, url):
        events = read_all(url, run_input(), idle_timeout=0.5)
    assert events == expected
    assert [h["last-event-id"] for m, _, h in server.requests if m == "GET"] == ["r:1:4"]


def test_a_flaky_link_cut_on_every_connection_still_reads_one_stream() -> None:
    expected = uncut_events()
    cutter = Cutter(every=2)  # each connection dies after two events
    with reference(ReferenceServer(two_tool_agent({})), cutter) as (server, url):
        events = read_all(url, run_input())
    assert events == expected
    assert cutter.cuts >= len(expected) // 2 - 1
    assert len([r for r in server.requests if r[0] == "GET"]) == cutter.connections - 1


def test_a_run_through_a_conversation_is_judged_as_one_stream() -> None:
    conv = Conversation(thread_id="t2")
    conv.next_input(user="hi")
    with reference(ReferenceServer(two_tool_agent({})), Cutter(cut_at=6)) as (_, url):
        with SyncAgentClient(url, resumable=True, rejoin=FAST) as client:
            result = client.run(conv)
    assert result.status == "success" and result.violation is None
    assert [c.name for c in result.pending] == ["confirm"]
    roles = [m["role"] for m in conv.messages]
    assert roles[:4] == ["user", "assistant", "tool", "assistant"]  # each message once


@pytest.mark.parametrize(
    ("faulty", "said"),
    [("gap", "jumped from seq 2 to seq 4"), ("other-run", "names run 'another'")],
)
def test_ids_that_break_the_binding_end_the_run_rejected(faulty: str, said: str) -> None:
    conv = Conversation(thread_id="t3")
    conv.next_input(user="hi")
    with reference(ReferenceServer(two_tool_agent({}), faulty=faulty)) as (_, url):
        with SyncAgentClient(url, resumable=True, rejoin=FAST) as client:
            with pytest.raises(ProtocolViolation) as caught:
                client.run(conv)
    assert caught.value.rule == "RESUME-2" and said in str(caught.value)
    assert conv.runs[-1].status == "rejected"
    assert [m["role"] for m in conv.messages] == ["user", "assistant"]  # what came before stays


def test_an_expired_log_ends_the_run_truncated_with_the_servers_410() -> None:
    conv = Conversation(thread_id="t4")
    conv.next_input(user="hi")
    late = RejoinPolicy(first_delay=0.5, attempts=2)  # the run is over when it rejoins
    with reference(ReferenceServer(two_tool_agent({}), retention=0.0), Cutter(cut_at=3)) as (
        server,
        url,
    ):
        with SyncAgentClient(url, resumable=True, rejoin=late) as client:
            with pytest.raises(TransportError) as caught:
                client.run(conv)
    assert caught.value.status == 410 and caught.value.truncated
    assert "RESUME-8" in caught.value.body and "could not be rejoined" in str(caught.value)
    assert conv.runs[-1].status == "truncated"
    assert len([r for r in server.requests if r[0] == "GET"]) == 1  # a 4xx is not retried


def test_a_rejoin_answered_404_is_not_retried() -> None:
    conv = Conversation(thread_id="t5")
    conv.next_input(user="hi")
    server = ReferenceServer(two_tool_agent({}), forget=True)  # as another server would
    with reference(server, Cutter(cut_at=3)) as (_, url):
        with SyncAgentClient(url, resumable=True, rejoin=FAST) as client:
            with pytest.raises(TransportError) as caught:
                client.run(conv)
    assert caught.value.status == 404 and caught.value.truncated
    assert "RESUME-7" in caught.value.body
    assert len([r for r in server.requests if r[0] == "GET"]) == 1


def test_a_server_gone_for_good_is_given_up_on_after_the_attempts() -> None:
    conv = Conversation(thread_id="t6")
    conv.next_input(user="hi")
    policy = RejoinPolicy(first_delay=0.01, max_delay=0.02, attempts=3, deadline=10)
    cutter = Cutter(cut_at=3, refuse_after_cut=True)
    with reference(ReferenceServer(slow_agent(ticks=50, every=0.01)), cutter) as (_, url):
        with SyncAgentClient(url, resumable=True, rejoin=policy) as client:
            with pytest.raises(TransportError) as caught:
                client.run(conv)
    assert "could not be rejoined" in str(caught.value) and "after 3 attempt(s)" in str(
        caught.value
    )
    assert caught.value.truncated and conv.runs[-1].status == "truncated"


def test_an_agent_that_does_not_confirm_gets_the_standard_client() -> None:
    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")
    inp = conv.pending_input
    ids = {"threadId": inp["threadId"], "runId": inp["runId"]}
    events = [
        {"type": "RUN_STARTED", **ids},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hi"},
    ]
    # ids on the events, but no Agui-Resumable answer: read as the standard binding
    chunks = [
        f"id: x:{n}\n".encode() + b"data: " + orjson.dumps(e) + b"\n\n"
        for n, e in enumerate(events, 1)
    ]
    script = Script(chunks=chunks)
    with serve(app_for(script)) as base:
        with SyncAgentClient(f"{base}/agent", resumable=True, rejoin=FAST) as client:
            result = client.run(conv)
    assert result.status == "truncated"  # cut short, and never rejoined
    [request] = script.requests
    assert request["headers"]["agui-resumable"] == "1"


def test_stop_ends_the_run_cancelled_and_a_finished_run_answers_finished() -> None:
    conv = Conversation(thread_id="t7")
    conv.next_input(user="hi")

    async def main() -> tuple[Any, str | None, str | None]:
        async with AgentClient(url, resumable=True, rejoin=FAST) as client:
            asked: list[asyncio.Task[str | None]] = []

            def on_update(_: Any) -> None:
                if not asked:  # the first event: the run is in flight
                    asked.append(asyncio.get_running_loop().create_task(client.stop()))

            result = await client.run(conv, on_update=on_update)
            return result, await asked[0], await client.stop()

    with reference(ReferenceServer(slow_agent())) as (server, url):
        result, answer, after = asyncio.run(main())
    assert answer == "stopping" and server.stops == 1
    assert result.status == "cancelled" and result.outcome == {"type": "cancelled"}
    assert after is None  # the run is over: nothing in flight, nothing sent


def test_stop_without_a_resumable_run_sends_nothing() -> None:
    with SyncAgentClient("http://127.0.0.1:9/agent", resumable=True) as client:
        assert client.stop() is None


async def counting(run: Run) -> None:
    async with run.message(message_id="m1") as m:
        for word in ("one", "two", "three", "four"):
            await m.delta(word)


@pytest.mark.parametrize("run_id", ["ünïcode-run", " \tleading-space", "日本"])
def test_a_run_id_beyond_ascii_or_starting_with_spaces_rejoins(run_id: str) -> None:
    """``Last-Event-ID`` goes as UTF-8 bytes without the leading spaces HTTP would strip
    (httpx refuses a non-ASCII str header; h11 a value starting with a space): cut
    once, such a run rejoins the agui-tools server and reads each event once."""
    app = agent_app(counting, path="/agent", resumable=Resumable())
    cutter = Cutter(cut_at=3)
    with serve(app) as base, cutting_proxy(int(base.rsplit(":", 1)[1]), cutter) as proxied:
        events = read_all(f"{proxied}/agent", run_input(run=run_id))
    assert cutter.cuts == 1 and cutter.connections == 2, "one cut, one rejoin"
    assert [e["type"] for e in events] == [
        "RUN_STARTED", "TEXT_MESSAGE_START", *["TEXT_MESSAGE_CONTENT"] * 4,
        "TEXT_MESSAGE_END", "RUN_FINISHED",
    ]  # fmt: skip
    assert [e["delta"] for e in events if "delta" in e] == ["one", "two", "three", "four"]
    assert events[0]["runId"] == run_id
