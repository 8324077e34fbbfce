"""Exactly once when the store fails: the regressions of issue #21, findings 1, 2 and 4.

Each test is the scenario that broke, driven as a user drives it (real sessions,
a real agent server on loopback, real SQLite files), recovered exactly as
docs/deployment.md ("When the store fails") says: send again, with the same
``message_id``, on the same session (it reloads itself) or on a new one.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import agui_tools
import agui_tools.app
from agui_tools import AgentClient, Run, Session, agent_app
from agui_tools._errors import (
    JournalError,
    ReloadRequired,
    StoreError,
    StoreOutcomeUnknown,
    StoreReadFailed,
    StoreWriteFailed,
)
from agui_tools.app import AsyncDriver, Driver
from agui_tools.app._calls import Answer
from agui_tools.app._consent import ConsentPolicy
from agui_tools.app._conversation import Conversation
from agui_tools.app._store import MemoryStore
from agui_tools.app._store_sqlite import SQLiteStore
from agui_tools.testing import serving
from agui_tools.transport._session import tool_spec_from_function
from tests.helpers.conversation import call, run

from ..helpers.async_store import AsyncMemoryStore


async def orders_agent(r: Run) -> None:
    """Places an order for every user message; thanks for every tool answer."""
    last = r.messages[-1]
    if last["role"] == "tool":
        await r.text(f"Thanks: {last['content']}.")
        return
    async with r.message() as m:
        await m.delta("Placing the order.")
    async with r.tool_call("place_order", parent_message_id=m.id) as c:
        await c.args('{"qty": 2}')


def _session(url: str, store: Any, orders: list[str], who: str) -> Session:
    session = Session(AgentClient(url), store=store, thread_id="t-fail", ask=lambda _c: True)

    @session.tool(side_effects=True)
    def place_order(qty: int) -> str:
        """Place an order."""
        orders.append(who)
        return f"ordered {qty} by {who}"

    return session


def _stored(store: Any) -> list[dict[str, Any]]:
    return Conversation(thread_id="t-fail", store=store).messages


# -- finding 1: a run whose save failed is never disposed of --------------------------------


@pytest.mark.parametrize("habit", ["same session", "new session"])
def test_a_run_whose_save_failed_is_not_charged_and_the_retry_charges_once(
    tmp_path: Path, habit: str
) -> None:
    """Replica A's save fails on a held write lock; replica B saves a run of the same
    thread; A's user retries the same send (same message_id). One order per user
    message — before the fix A's unsaved run was disposed of (an order in no saved
    history) and the retry ordered again."""
    path = tmp_path / "app.sqlite"
    SQLiteStore(path).close()
    orders: list[str] = []

    async def scenario() -> list[dict[str, Any]]:
        store_a = SQLiteStore(path, timeout=0.05)  # A gives up on a held lock at once
        store_b = SQLiteStore(path)
        async with serving(agent_app(orders_agent, path="/agent")) as base:
            url = f"{base}/agent"
            a = _session(url, store_a, orders, "A")
            blocker = sqlite3.connect(path, isolation_level=None)
            blocker.execute("BEGIN IMMEDIATE")  # another connection holds the write lock
            with pytest.raises(StoreWriteFailed) as failed:
                await a.send("Order two", message_id="msg-a")
            blocker.execute("ROLLBACK")
            blocker.close()
            assert failed.value.written == "no" and "save a run" in str(failed.value)
            assert orders == []  # nothing of the unsaved run ran
            await _session(url, store_b, orders, "B").send("And one more", message_id="msg-b")
            retry = a if habit == "same session" else _session(url, store_a, orders, "A")
            await retry.send("Order two", message_id="msg-a")
            messages = _stored(store_b)
        store_a.close()
        store_b.close()
        return messages

    messages = asyncio.run(scenario())
    users = [m["id"] for m in messages if m["role"] == "user"]
    assert users == ["msg-b", "msg-a"]  # each user message once, in the order saved
    assert sorted(orders) == ["A", "B"]  # one order per message, never a second for A
    answers = [m["content"] for m in messages if m["role"] == "tool"]
    assert answers == ["ordered 2 by B", "ordered 2 by A"]  # every order is in the thread
    assert messages[-1]["role"] == "assistant"


def test_a_conversation_whose_save_failed_refuses_to_go_on_until_reloaded(
    tmp_path: Path,
) -> None:
    """The sans-I/O core: the save fails, nothing is disposed, every further operation
    says reload, and a reloaded conversation starts from what the store holds."""
    path = tmp_path / "app.sqlite"
    store = SQLiteStore(path, timeout=0.05)
    policy = ConsentPolicy.auto_approve()
    spec, _handler = tool_spec_from_function(_place, name="place", side_effects=True)
    conv = Conversation(thread_id="t-core", tools=[spec], store=store, consent=policy)
    conv.next_input(user="order", run_id="r1")
    run(conv, *call("c1", "place", '{"qty": 2}', parent="m1"))
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    with pytest.raises(StoreWriteFailed):
        Driver(conv).end_run()
    blocker.execute("ROLLBACK")
    blocker.close()
    assert conv.pending == [] and not conv.in_step  # nothing disposed of
    for attempt in (
        lambda: conv.next_input(user="again"),
        lambda: Driver(conv).execute("c1", lambda _a: pytest.fail("ran a call of an unsaved run")),
        lambda: Driver(conv).restore(),
    ):
        with pytest.raises(ReloadRequired, match="reload the thread") as refused:
            attempt()
        assert isinstance(refused.value.cause, StoreWriteFailed)
        assert refused.value.written == "no"
    assert store.load("t-core") is None and store.lookup("t-core", "c1") is None
    reloaded = Conversation(thread_id="t-core", tools=[spec], store=store, consent=policy)
    assert reloaded.in_step and reloaded.messages == []  # the store's truth: nothing saved
    store.close()


def _place(qty: int) -> str:
    """Place an order."""
    return f"placed {qty}"


# -- finding 2: a restore whose journal read failed never answers from a guess --------------


@pytest.mark.parametrize("habit", ["same session", "new session"])
def test_a_restore_whose_read_failed_never_saves_not_executed_for_a_call_that_ran(
    habit: str,
) -> None:
    """The thread was saved with c1 pending; c1 was executed (the journal says so) and
    the process died before the next save. A new replica's restore has its journal
    read cut; retried, the thread must say what the journal says — before the fix the
    same session saved "not executed" for a call whose side effect happened."""
    inner = MemoryStore()
    orders: list[str] = []
    spec, _h = tool_spec_from_function(_place_order, name="place_order", side_effects=True)
    first = Conversation(
        thread_id="t-fail", tools=[spec], store=inner, consent=ConsentPolicy.auto_approve()
    )
    first.next_input(user="order", run_id="r1")
    run(first, *call("c1", "place_order", '{"qty": 2}', parent="m1"))
    Driver(first).end_run()  # saved: c1 pending
    Driver(first).execute("c1", lambda args: orders.append("first") or f"ordered {args['qty']}")
    del first  # … and the process died before its next save

    async def scenario() -> list[dict[str, Any]]:
        store = AsyncMemoryStore(inner)
        store.fail["lookup"] = StoreReadFailed("the connection was lost during this read")
        async with serving(agent_app(orders_agent, path="/agent")) as base:
            url = f"{base}/agent"
            session = _session(url, store, orders, "second")
            with pytest.raises(StoreReadFailed):
                await session.send()
            del store.fail["lookup"]  # the pool has a fresh connection
            retry = session if habit == "same session" else _session(url, store, orders, "2b")
            await retry.send()
            return Conversation(thread_id="t-fail", store=inner).messages

    messages = asyncio.run(scenario())
    assert orders == ["first"]  # executed once, never again
    tool = [m for m in messages if m["role"] == "tool"]
    assert [m["content"] for m in tool] == ["ordered 2"]  # what the journal holds
    assert inner.answer_for("t-fail", "c1") == Answer.executed("c1", "ordered 2").to_json()
    assert messages[-1]["content"] == "Thanks: ordered 2."


def _place_order(qty: int) -> str:
    """Place an order."""
    return f"ordered {qty}"


# -- finding 4: one error tree ----------------------------------------------------------------


def test_every_storage_failure_is_a_store_error_on_the_app_surface() -> None:
    """``StoreError`` is caught from the top; its kinds are ``agui_tools.app``'s."""
    assert agui_tools.StoreError is StoreError
    for name in (
        "StoreReadFailed",
        "StoreWriteFailed",
        "StoreOutcomeUnknown",
        "StaleThread",
        "ReloadRequired",
    ):
        kind = getattr(agui_tools.app, name)
        assert issubclass(kind, StoreError), name
    assert JournalError is StoreError  # the old name catches the same tree
    assert StoreReadFailed("x").written == "no" and StoreWriteFailed("x").written == "no"
    assert StoreOutcomeUnknown("x").written == "unknown"


def test_an_answer_that_could_not_be_recorded_is_a_store_error_saying_the_outcome(
    tmp_path: Path,
) -> None:
    """Before the fix a plain JournalError, which ``except StoreError`` missed."""
    store = AsyncMemoryStore()
    store.fail["finish"] = StoreWriteFailed("the disk is full")
    spec, _h = tool_spec_from_function(_place, name="place", side_effects=True)
    ran: list[int] = []

    async def scenario() -> Conversation:
        conv = Conversation(
            thread_id="t4", tools=[spec], store=store, consent=ConsentPolicy.auto_approve()
        )
        await AsyncDriver(conv).restore()
        conv.next_input(user="order", run_id="r1")
        run(conv, *call("c1", "place", '{"qty": 2}', parent="m1"))
        await AsyncDriver(conv).end_run()
        try:
            await AsyncDriver(conv).execute("c1", lambda args: ran.append(args["qty"]) or "placed")
        except StoreError as exc:  # the documented catch catches it
            assert isinstance(exc, StoreOutcomeUnknown) and exc.written == "unknown"
            assert "was executed and is answered" in str(exc)
        else:
            pytest.fail("the lost answer was not reported")
        return conv

    conv = asyncio.run(scenario())
    assert ran == [2]
    with pytest.raises(ReloadRequired):
        conv.next_input()
    # reloaded: the intent without an answer reads "outcome unknown", never "not run"
    reloaded = Conversation(thread_id="t4", tools=[spec], store=store.inner)
    answer = reloaded.call("c1").answer
    assert answer is not None and answer.outcome == "failed"
    assert (answer.error or "").startswith("outcome unknown")
