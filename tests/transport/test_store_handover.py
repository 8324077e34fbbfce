"""Replica hand-over over HTTP: replica A dies, replica B carries the thread on.

A real agent server on loopback (its own process), two application replicas
(their own processes) sharing one PostgreSQL store — through the sync
``PostgresStore`` or psycopg's async API (``AsyncPostgresStore``). A sends a run, receives a
pending frontend call and is SIGKILLed — while asking the user, or in the middle
of the handler. B, knowing only the thread id, resumes the thread: it executes
the call once (or, when A's execution started, reports its outcome unknown and
never runs it again) and continues the thread to the agent's final answer.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agui_tools import AgentClient, Run, Session, SyncAgentClient, SyncSession, agent_app
from agui_tools._errors import StaleThread, UsageError
from agui_tools.app import AsyncDriver
from agui_tools.app._calls import Answer
from agui_tools.app._conversation import Conversation
from agui_tools.app._journal import JournalKey
from agui_tools.app._store_postgres import AsyncPostgresStore, PostgresStore
from agui_tools.app._store_sqlite import SQLiteStore
from agui_tools.testing import free_port, serving
from agui_tools.transport._session import tool_spec_from_function

from ..conftest import StoreFactory
from ..helpers.async_store import AsyncMemoryStore
from ..helpers.store_worker import Effects

FORK = multiprocessing.get_context("fork")


async def pays(r: Run) -> None:
    """Asks the application to charge the card, then reports what the tool said."""
    last = r.messages[-1]
    if last["role"] == "tool":
        await r.text(f"Done: {last['content']}")
        return
    async with r.tool_call("charge_card", parent_message_id="m1") as call:
        await call.args('{"cents": 500}')


async def dies_while_asking(make: Callable[[Any], Session], text: str) -> Session:
    """A replica sends ``text`` and is gone (its task cancelled) while its user is being
    asked about the call the run left: the thread is saved with that call pending."""
    asking = asyncio.Event()

    async def never(_call: Any) -> bool:
        asking.set()
        await asyncio.sleep(3600)
        return False

    session = make(never)
    first = asyncio.create_task(session.send(text))
    await asking.wait()
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    return session


def serve_agent(port: int) -> None:
    import uvicorn

    uvicorn.run(agent_app(pays, path="/agent"), host="127.0.0.1", port=port, log_level="warning")


def replica(
    url: str, dsn: str, thread_id: str, role: str, signal_: Any, out: Any, kind: str = "sync"
) -> None:
    """One application process. ``role``: ``dies-asking``, ``dies-in-handler`` or ``resumes``;
    ``kind``: its store is ``PostgresStore`` (``sync``) or ``AsyncPostgresStore`` (``async``)."""

    async def main() -> None:
        store: Any = (
            PostgresStore(dsn, max_size=2)
            if kind == "sync"
            else await AsyncPostgresStore(dsn, max_size=2).open()
        )
        effects = Effects("postgres", dsn)

        async def ask(_call: Any) -> bool:
            if role == "dies-asking":
                signal_.set()  # the user is being asked … and the replica dies
                await asyncio.sleep(3600)
            return True

        session = Session(AgentClient(url), store=store, thread_id=thread_id, ask=ask)

        @session.tool(side_effects=True)
        def charge_card(cents: int) -> str:
            """Charge the user's card."""
            effects.record(thread_id, "charge")
            if role == "dies-in-handler":
                signal_.set()
                time.sleep(3600)
            return f"charged {cents} cents"

        result = await (session.send("pay five dollars") if role != "resumes" else session.send())
        conv = session.conversation
        assert conv is not None
        out.put(
            {
                "status": result.status,
                "final": conv.messages[-1]["content"],
                "version": conv.version,
                "tools": [m["content"] for m in conv.messages if m["role"] == "tool"],
            }
        )
        effects.close()
        await store.aclose() if kind == "async" else store.close()

    asyncio.run(main())


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError("the agent server did not start")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("dies", ["dies-asking", "dies-in-handler"])
def test_replica_b_resumes_the_thread_replica_a_left_and_finishes_it(
    dies: str, kind: str, postgres_dsn: str
) -> None:
    port = free_port()
    server = FORK.Process(target=serve_agent, args=(port,))
    server.start()
    try:
        _wait_listening(port)
        url = f"http://127.0.0.1:{port}/agent"
        thread_id = f"handover-{uuid.uuid4().hex[:8]}"
        Effects("postgres", postgres_dsn).close()

        reached, out = FORK.Event(), FORK.Queue()
        a = FORK.Process(
            target=replica, args=(url, postgres_dsn, thread_id, dies, reached, out, kind)
        )
        a.start()
        assert reached.wait(60), "replica A never got the pending call"
        os.kill(a.pid, signal.SIGKILL)  # type: ignore[arg-type]
        a.join(10)

        b = FORK.Process(
            target=replica,
            args=(url, postgres_dsn, thread_id, "resumes", FORK.Event(), out, kind),
        )
        b.start()
        b.join(60)
        assert b.exitcode == 0
        result = out.get(timeout=5)
    finally:
        os.kill(server.pid, signal.SIGTERM)  # type: ignore[arg-type]
        server.join(10)

    effects = Effects("postgres", postgres_dsn)
    counts = effects.counts()
    effects.close()
    assert counts == {(thread_id, "charge"): 1}  # the card was charged once, whoever did it
    assert result["status"] == "success" and result["version"] == 2
    [tool_answer] = result["tools"]
    if dies == "dies-asking":
        assert tool_answer == "charged 500 cents"  # B asked, executed, answered
    else:  # A's execution started: B never runs it again, and says so
        assert "outcome unknown" in tool_answer
    assert result["final"] == f"Done: {tool_answer}"  # the agent finished the thread


# -- the same hand-over in one process, on every backend; and a locked store --------------


def test_a_session_resumes_a_thread_on_every_backend(open_store: StoreFactory) -> None:
    charges: list[int] = []

    def session(url: str, ask: Any) -> Session:
        s = Session(AgentClient(url), store=open_store(), thread_id="resume-me", ask=ask)

        @s.tool(side_effects=True)
        def charge_card(cents: int) -> str:
            """Charge the user's card."""
            charges.append(cents)
            return f"charged {cents} cents"

        return s

    async def scenario() -> tuple[str, Any]:
        async with serving(agent_app(pays, path="/agent")) as base:
            url = f"{base}/agent"
            await dies_while_asking(lambda ask: session(url, ask), "pay five dollars")
            second = session(url, lambda _call: True)
            result = await second.send()
            assert second.conversation is not None
            return result.status, second.conversation.messages[-1]["content"]

    status, final = asyncio.run(scenario())
    assert (status, final) == ("success", "Done: charged 500 cents")
    assert charges == [500]


def test_a_locked_store_does_not_stall_the_event_loop(tmp_path: Path) -> None:
    """The agent server runs in the same event loop as the session, and the only one
    who can release the store's lock is another task of that loop: a session that
    blocked the loop while waiting for the store would time out instead."""
    path = tmp_path / "app.sqlite"
    store = SQLiteStore(path, timeout=5)
    blocker = sqlite3.connect(path, isolation_level=None)

    async def scenario() -> str:
        served = asyncio.Event()

        async def agent(r: Run) -> None:
            await pays(r)
            served.set()  # the run's stream ends now: the session saves it next

        async with serving(agent_app(agent, path="/agent")) as base:
            session = Session(
                AgentClient(f"{base}/agent"), store=store, thread_id="t", ask=lambda _c: True
            )

            @session.tool(side_effects=True)
            def charge_card(cents: int) -> str:
                """Charge the user's card."""
                return f"charged {cents} cents"

            ticks = 0

            async def other_work() -> None:
                nonlocal ticks
                blocker.execute("BEGIN IMMEDIATE")  # another process writes, for a while
                await served.wait()
                for _ in range(30):
                    await asyncio.sleep(0.01)
                    ticks += 1
                blocker.execute("ROLLBACK")

            work = asyncio.create_task(other_work())
            await asyncio.sleep(0)
            result = await session.send("pay five dollars")
            await work
            assert ticks == 30
            assert session.conversation is not None
            return f"{result.status}: {session.conversation.messages[-1]['content']}"

    assert asyncio.run(scenario()) == "success: Done: charged 500 cents"
    blocker.close()
    store.close()


def test_a_sync_session_resumes_a_thread_too(tmp_path: Path) -> None:
    port = free_port()
    server = FORK.Process(target=serve_agent, args=(port,))
    server.start()
    charges: list[int] = []

    def session(client: SyncAgentClient, ask: Any) -> SyncSession:
        s = SyncSession(client, store=SQLiteStore(tmp_path / "t.db"), thread_id="sync", ask=ask)

        @s.tool(side_effects=True)
        def charge_card(cents: int) -> str:
            """Charge the user's card."""
            charges.append(cents)
            return f"charged {cents} cents"

        return s

    def dies(_call: Any) -> bool:
        raise RuntimeError("this replica stops while the user is being asked")

    try:
        _wait_listening(port)
        with SyncAgentClient(f"http://127.0.0.1:{port}/agent") as client:
            with pytest.raises(RuntimeError, match="replica stops"):
                session(client, dies).send("pay five dollars")
            second = session(client, lambda _call: True)
            result = second.send()
    finally:
        os.kill(server.pid, signal.SIGTERM)  # type: ignore[arg-type]
        server.join(10)
    assert second.conversation is not None
    assert (result.status, second.conversation.messages[-1]["content"]) == (
        "success",
        "Done: charged 500 cents",
    )
    assert charges == [500]


# -- an async store: the session awaits it, on the loop -----------------------------------


@pytest.mark.parametrize("kind", ["memory-async", "postgres-async"])
def test_a_session_resumes_a_thread_on_an_async_store(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """The hand-over above with an async store: the replica cancelled while asking,
    the next session restores the thread through ``AsyncDriver.restore()`` and
    finishes it — on ``AsyncPostgresStore`` through psycopg's async API."""
    charges: list[int] = []
    dsn = request.getfixturevalue("postgres_dsn") if kind == "postgres-async" else None
    memory = AsyncMemoryStore()

    async def opened() -> Any:
        if dsn is None:
            return memory
        return await AsyncPostgresStore(dsn, max_size=4, timeout=10).open()

    def session(url: str, store: Any, ask: Any) -> Session:
        s = Session(AgentClient(url), store=store, thread_id="resume-async", ask=ask)

        @s.tool(side_effects=True)
        def charge_card(cents: int) -> str:
            """Charge the user's card."""
            charges.append(cents)
            return f"charged {cents} cents"

        return s

    async def scenario() -> tuple[str, Any, int]:
        async with serving(agent_app(pays, path="/agent")) as base:
            url = f"{base}/agent"
            store_a, store_b = await opened(), await opened()  # two replicas' stores
            await dies_while_asking(lambda ask: session(url, store_a, ask), "pay five dollars")
            second = session(url, store_b, lambda _call: True)
            result = await second.send()
            assert second.conversation is not None
            final = second.conversation.messages[-1]["content"]
            for store in {id(store_a): store_a, id(store_b): store_b}.values():
                await store.aclose()
            return result.status, final, threading.get_ident()

    status, final, loop_thread = asyncio.run(scenario())
    assert (status, final) == ("success", "Done: charged 500 cents")
    assert charges == [500]
    if dsn is None:
        assert memory.threads == {loop_thread}  # every store call awaited on the loop
        assert memory.methods.count("load") == 2 and memory.methods.count("claim") == 1
        record = memory.inner.load("resume-async")
    else:
        with PostgresStore(dsn) as check:
            record = check.load("resume-async")
    assert record is not None and record.version == 2


def test_a_locked_postgres_store_does_not_stall_an_async_session(postgres_dsn: str) -> None:
    """As the SQLite test above, on ``AsyncPostgresStore``: another connection holds
    the thread's row while the run ends, and only another task of the same loop
    releases it — a session that blocked the loop waiting would never see it go."""

    async def scenario() -> str:
        import psycopg

        served = asyncio.Event()

        async def agent(r: Run) -> None:
            await pays(r)
            served.set()

        async with (
            serving(agent_app(agent, path="/agent")) as base,
            # a loop blocked while waiting fails in 5 s (lock_timeout) instead of hanging
            AsyncPostgresStore(
                postgres_dsn.replace("options='", "options='-c lock_timeout=5000 "),
                max_size=4,
                timeout=10,
            ) as store,
        ):
            session = Session(
                AgentClient(f"{base}/agent"), store=store, thread_id="t", ask=lambda _c: True
            )

            @session.tool(side_effects=True)
            def charge_card(cents: int) -> str:
                """Charge the user's card."""
                return f"charged {cents} cents"

            blocker = await psycopg.AsyncConnection.connect(postgres_dsn)
            await blocker.execute("LOCK TABLE agui_threads IN EXCLUSIVE MODE")  # a writer, a while
            ticks = 0

            async def other_work() -> None:
                nonlocal ticks
                await served.wait()
                for _ in range(30):
                    await asyncio.sleep(0.01)
                    ticks += 1
                await blocker.rollback()

            work = asyncio.create_task(other_work())
            result = await session.send("pay five dollars")
            await work
            await blocker.close()
            assert ticks == 30
            assert session.conversation is not None
            return f"{result.status}: {session.conversation.messages[-1]['content']}"

    assert asyncio.run(scenario()) == "success: Done: charged 500 cents"


def test_a_sync_session_refuses_an_async_store_with_a_clear_error() -> None:
    store = AsyncMemoryStore()
    with SyncAgentClient("http://127.0.0.1:9/agent") as client:
        session = SyncSession(client, store=store, thread_id="t", ask=lambda _c: True)
        with pytest.raises(UsageError, match=r"async store .*Session"):
            session.send("hi")
    assert store.calls == []


def test_a_run_cancelled_mid_stream_is_saved_truncated_in_an_async_store() -> None:
    store = AsyncMemoryStore()

    async def scenario() -> None:
        streaming = asyncio.Event()

        async def slow(r: Run) -> None:
            await r.text("Working on it")
            streaming.set()
            await asyncio.sleep(3600)

        async with serving(agent_app(slow, path="/agent")) as base:
            conv = Conversation(thread_id="cut", store=store)
            await AsyncDriver(conv).restore()
            conv.next_input(user="go")
            task = asyncio.create_task(AgentClient(f"{base}/agent").run(conv))
            await streaming.wait()
            await asyncio.sleep(0.2)  # the text reached the client
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert not conv.run_in_progress

    asyncio.run(scenario())
    record = store.inner.load("cut")
    assert record is not None and [r["status"] for r in record.runs] == ["truncated"]
    assert record.messages[-1]["content"] == "Working on it"


# -- StaleThread: the documented retry adds nothing twice ----------------------------------


async def _orders_agent(r: Run) -> None:
    """Places an order for every user message; thanks for every tool answer."""
    last = r.messages[-1]
    if last["role"] == "tool":
        await r.text(f"Thanks: {last['content']}.")
        return
    async with r.message() as m:
        await m.delta("Placing the order.")
    async with r.tool_call("place_order", parent_message_id=m.id) as call:
        await call.args('{"qty": 2}')


@pytest.mark.parametrize("kind", ["sqlite", "postgres-async"])
def test_a_send_retried_after_stale_thread_with_its_message_id_adds_nothing_twice(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Replica A's user approves slowly; meanwhile replica B carries the same thread
    on (and executes A's pending order). A's next save is stale; A retries as
    docs/deployment.md says — a new session, the same ``message_id`` — and the
    thread ends with each user message once and one order per message."""
    orders: list[str] = []
    dsn = request.getfixturevalue("postgres_dsn") if kind == "postgres-async" else None

    async def scenario() -> list[dict[str, Any]]:
        store: Any = (
            SQLiteStore(tmp_path / "t.db")
            if dsn is None
            else await AsyncPostgresStore(dsn, max_size=4).open()
        )

        def session(url: str, who: str, ask: Any) -> Session:
            s = Session(AgentClient(url), store=store, thread_id="stale", ask=ask)

            @s.tool(side_effects=True)
            def place_order(qty: int) -> str:
                """Place an order."""
                orders.append(who)
                return f"ordered {qty} by {who}"

            return s

        async with serving(agent_app(_orders_agent, path="/agent")) as base:
            url = f"{base}/agent"
            asked, release = asyncio.Event(), asyncio.Event()

            async def slow(_call: Any) -> bool:
                asked.set()
                await release.wait()
                return True

            mid = "msg-order-two"
            a = asyncio.create_task(session(url, "A", slow).send("Order two", message_id=mid))
            await asked.wait()  # A's first run is saved; A's user is thinking
            await session(url, "B", lambda _c: True).send("And one more")
            release.set()
            with pytest.raises(StaleThread, match="same message_id"):
                await a
            # the documented retry: reload (a new session), the same message id
            await session(url, "A-retry", lambda _c: True).send("Order two", message_id=mid)
            check = Conversation(thread_id="stale", store=store)
            await AsyncDriver(check).restore()
            messages = check.messages
        await store.aclose() if dsn is not None else store.close()
        return messages

    messages = asyncio.run(scenario())
    users = [m["content"] for m in messages if m["role"] == "user"]
    assert users == ["Order two", "And one more"]  # each user message once
    assert len(orders) == 2  # one order per user message, never a third
    assert messages[-1]["role"] == "assistant"


def test_open_shows_a_stored_thread_without_sending_anything(tmp_path: Path) -> None:
    runs: list[str] = []

    async def counted(r: Run) -> None:
        runs.append(r.run_id)
        await _orders_agent(r)

    async def scenario() -> None:
        async with serving(agent_app(counted, path="/agent")) as base:
            for store in (AsyncMemoryStore(), SQLiteStore(tmp_path / "open.db")):
                first = Session(AgentClient(f"{base}/agent"), store=store, thread_id="o")
                first.add_tool(
                    *tool_spec_from_function(
                        lambda qty: "ok", name="place_order", description="Place an order."
                    )
                )
                await first.send("Order two")
                assert first.conversation is not None
                sent = len(runs)
                page_load = Session(AgentClient(f"{base}/agent"), store=store, thread_id="o")
                conv = await page_load.open()
                assert conv is page_load.conversation
                assert conv.messages == first.conversation.messages and conv.version == 2
                assert len(runs) == sent  # nothing was sent to the agent

    asyncio.run(scenario())


@pytest.mark.run_error("the model is overloaded")
def test_a_message_whose_run_failed_is_retried_with_its_message_id_not_added_twice(
    tmp_path: Path,
) -> None:
    attempts: list[int] = []

    async def flaky(r: Run) -> None:
        attempts.append(len(r.messages))
        if len(attempts) == 1:
            await r.text("Let me")
            raise RuntimeError("the model is overloaded")  # RUN_ERROR, after partial text
        await r.text("Here you are.")

    async def scenario() -> tuple[str, str, list[dict[str, Any]]]:
        store = SQLiteStore(tmp_path / "retry.db")
        async with serving(agent_app(flaky, path="/agent")) as base:

            def session() -> Session:
                return Session(AgentClient(f"{base}/agent"), store=store, thread_id="r")

            first = await session().send("hello", message_id="m-hello")
            again = await session().send("hello", message_id="m-hello")
            check = await session().open()
        store.close()
        return first.status, again.status, check.messages

    first, again, messages = asyncio.run(scenario())
    assert (first, again) == ("error", "success")
    assert [m["content"] for m in messages if m["role"] == "user"] == ["hello"]
    assert messages[-1]["content"] == "Here you are."
    assert len(attempts) == 2


@pytest.mark.parametrize("kind", ["memory-async", "postgres-async"])
def test_two_replicas_resuming_one_call_at_once_agree_on_its_answer(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """Both replicas pick up the same pending call at the same moment. One executes
    it; the other, with ``in_flight_wait``, waits for that answer instead of
    telling the agent "outcome unknown" — so whichever saves, the thread says what
    the journal says, and the card was charged once."""
    charges: list[str] = []
    dsn = request.getfixturevalue("postgres_dsn") if kind == "postgres-async" else None

    async def scenario() -> tuple[list[Any], list[dict[str, Any]], Any]:
        store: Any = AsyncMemoryStore() if dsn is None else await AsyncPostgresStore(dsn).open()

        def replica(url: str, who: str, ask: Any) -> Session:
            s = Session(AgentClient(url), store=store, thread_id="both", ask=ask, in_flight_wait=10)

            @s.tool(side_effects=True)
            async def charge_card(cents: int) -> str:
                """Charge the user's card."""
                charges.append(who)
                await asyncio.sleep(0.3)
                return f"charged {cents} cents by {who}"

            return s

        async with serving(agent_app(pays, path="/agent")) as base:
            url = f"{base}/agent"
            await dies_while_asking(lambda ask: replica(url, "R0", ask), "pay five dollars")
            outcomes = await asyncio.gather(
                replica(url, "R1", lambda _c: True).send(),
                replica(url, "R2", lambda _c: True).send(),
                return_exceptions=True,
            )
            check = await replica(url, "check", lambda _c: True).open()
            journal = await store.answer_for("both", check.messages[1]["toolCalls"][0]["id"])
        await store.aclose()
        return outcomes, check.messages, journal

    outcomes, messages, journal = asyncio.run(scenario())
    assert len(charges) == 1  # charged once
    assert any(getattr(o, "status", None) == "success" for o in outcomes), outcomes
    assert all(not isinstance(o, Exception) or isinstance(o, StaleThread) for o in outcomes)
    [tool] = [m for m in messages if m["role"] == "tool"]
    assert "outcome unknown" not in tool["content"]
    assert tool["content"] == journal["content"] == f"charged 500 cents by {charges[0]}"


def test_a_session_reconciles_an_unknown_outcome_with_its_hook() -> None:
    """The deployment.md recipe: ``Session(..., outcome_unknown=reconcile)``."""
    store = AsyncMemoryStore()
    seen: list[str] = []

    def reconcile(call: Any, started_at: Any) -> Answer:
        seen.append(call.call_id)
        return Answer.executed(call.call_id, "charged 500 cents (found in the ledger)")

    async def scenario() -> list[dict[str, Any]]:
        async with serving(agent_app(pays, path="/agent")) as base:

            def dying(ask: Any) -> Session:
                s = Session(AgentClient(f"{base}/agent"), store=store, thread_id="u", ask=ask)
                s.add_tool(*_charge_tool())
                return s

            dead = await dies_while_asking(dying, "pay five dollars")
            assert dead.conversation is not None
            [call] = dead.conversation.pending
            # the replica had started executing it when it died: an intent, no answer
            store.inner.claim(JournalKey("u", call.call_id, call.fingerprint), tool=call.name)
            again = Session(
                AgentClient(f"{base}/agent"),
                store=store,
                thread_id="u",
                ask=lambda _c: True,
                outcome_unknown=reconcile,
            )
            again.add_tool(*_charge_tool())
            await again.send()
            assert again.conversation is not None
            return again.conversation.messages

    messages = asyncio.run(scenario())
    assert len(seen) == 1
    assert [m["content"] for m in messages if m["role"] == "tool"] == [
        "charged 500 cents (found in the ledger)"
    ]
    assert messages[-1]["content"] == "Done: charged 500 cents (found in the ledger)"


def _charge_tool() -> tuple[Any, Any]:
    def charge_card(cents: int) -> str:
        """Charge the user's card."""
        raise AssertionError("a call whose execution started is never run again")

    return tool_spec_from_function(charge_card, side_effects=True)
