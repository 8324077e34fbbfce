"""A handler that knows its call (issue 26, item 9): a parameter annotated
``ToolContext`` is given the call's thread id, run id, call id, tool spec and
idempotency key — the key stable across retries and replicas, so the
``outcome_unknown=`` reconciliation of docs/deployment.md can look the side
effect up by the key the handler gave the payment API.

Real sessions, a real agent server on loopback, real SQLite files."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import pytest

from agui_tools import AgentClient, Run, SyncAgentClient, agent_app
from agui_tools._errors import StoreOutcomeUnknown, UsageError
from agui_tools.app import Answer, SQLiteStore, idempotency_key
from agui_tools.app._journal import JournalKey
from agui_tools.testing import serving
from agui_tools.transport import Session, SyncSession, ToolContext, tool_spec_from_function
from agui_tools.transport._tool_functions import wants_context


async def charging_agent(r: Run) -> None:
    if r.messages[-1]["role"] == "tool":
        await r.text(f"Done: {r.messages[-1]['content']}")
        return
    async with r.tool_call("charge", parent_message_id="m1") as c:
        await c.args('{"cents": 500}')


def _register(session: Session | SyncSession, seen: list[ToolContext], flavour: str) -> None:
    if flavour == "sync":

        @session.tool(side_effects=True)
        def charge(cents: int, ctx: ToolContext) -> str:
            """Charge the card."""
            seen.append(ctx)
            return f"charged {cents} under {ctx.idempotency_key}"

    else:

        @session.tool(side_effects=True)
        async def charge(cents: int, ctx: ToolContext) -> str:
            """Charge the card."""
            await asyncio.sleep(0)
            seen.append(ctx)
            return f"charged {cents} under {ctx.idempotency_key}"


def _check(ctx: ToolContext, session: Session | SyncSession) -> None:
    conv = session.conversation
    assert conv is not None
    [answered] = [m for m in conv.messages if m["role"] == "tool"]
    assert ctx.thread_id == conv.thread_id
    assert ctx.run_id == conv.runs[0].run_id and ctx.run_id is not None
    assert ctx.call_id == answered["toolCallId"]
    assert ctx.tool_name == "charge" and ctx.tool.side_effects
    assert ctx.tool.parameters is not None
    assert set(ctx.tool.parameters["properties"]) == {"cents"}  # the context is no argument
    assert ctx.idempotency_key == idempotency_key(conv.thread_id, ctx.call_id)
    assert answered["content"] == f"charged 500 under {ctx.idempotency_key}"


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_the_async_session_gives_a_handler_its_call(flavour: str) -> None:
    seen: list[ToolContext] = []

    async def main() -> None:
        async with serving(agent_app(charging_agent, path="/agent")) as base:
            async with AgentClient(f"{base}/agent") as client:
                session = Session(client, ask=lambda _c: True)
                _register(session, seen, flavour)
                result = await session.send("charge me")
                assert result.status == "success"
                [ctx] = seen
                _check(ctx, session)

    asyncio.run(main())


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("timeout", [None, 30.0], ids=["no-timeout", "timeout"])
def test_the_blocking_session_gives_a_handler_its_call(flavour: str, timeout: float | None) -> None:
    seen: list[ToolContext] = []

    async def main() -> None:
        async with serving(agent_app(charging_agent, path="/agent")) as base:

            def blocking() -> None:
                with SyncAgentClient(f"{base}/agent") as client:
                    session = SyncSession(client, ask=lambda _c: True, timeout=timeout)
                    _register(session, seen, flavour)
                    assert session.send("charge me").status == "success"
                    [ctx] = seen
                    _check(ctx, session)

            await asyncio.to_thread(blocking)

    asyncio.run(main())


def test_plain_handlers_and_the_schema_are_as_before() -> None:
    def charge(cents: int, ctx: ToolContext) -> str:
        """Charge the card."""
        return f"{cents}:{ctx.call_id}"

    spec, handler = tool_spec_from_function(charge)
    assert spec.parameters is not None and list(spec.parameters["properties"]) == ["cents"]
    ctx = ToolContext("t", "r", "c", spec, idempotency_key("t", "c"))
    assert handler({"cents": 1}, context=ctx) == "1:c"
    with pytest.raises(UsageError, match="ToolContext"):
        handler({"cents": 1})  # no context to give: said, not a TypeError
    with pytest.raises(ValueError, match="ctx"):
        handler({"cents": 1, "ctx": "smuggled"})  # not an argument the model may send

    def annotated(cents: int, ctx: Annotated[ToolContext, "the call"]) -> str:
        """Annotated, the same."""
        return ctx.call_id

    spec, handler = tool_spec_from_function(annotated)
    assert spec.parameters is not None and list(spec.parameters["properties"]) == ["cents"]
    assert wants_context(annotated) and not wants_context(lambda cents: cents)
    assert handler({"cents": 1}, context=ctx) == "c"

    def two(a: ToolContext, b: ToolContext) -> str:
        """Two contexts."""
        return ""

    with pytest.raises(UsageError, match="2 ToolContext parameters"):
        tool_spec_from_function(two)


def test_the_key_is_a_pure_function_of_thread_and_call() -> None:
    key = idempotency_key("thread-1", "call-1")
    assert key == idempotency_key("thread-1", "call-1")
    assert key.startswith("agui-") and len(key) == 37 and key.isascii()
    # no concatenation collisions: ("a/b", "c") and ("a", "b/c") are other calls
    assert idempotency_key("a/b", "c") != idempotency_key("a", "b/c")
    assert idempotency_key("ab", "c") != idempotency_key("a", "bc")
    assert key != idempotency_key("thread-2", "call-1") != idempotency_key("thread-1", "call-2")


class _LosesFinish(SQLiteStore):
    """A store whose first ``finish`` commits, then the caller is told the connection
    died (``StoreOutcomeUnknown``): the handler ran, its answer may not be recorded."""

    lost = False

    def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> None:
        super().finish(key, answer)
        if not _LosesFinish.lost:
            _LosesFinish.lost = True
            raise StoreOutcomeUnknown("injected: the answer was sent, the reply lost")


class _NeverFinishes(SQLiteStore):
    """A store on which an execution's answer never lands (the process died after
    the handler acted): the claim is recorded, ``finish`` fails before writing."""

    def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> None:
        raise StoreOutcomeUnknown("injected: the process died before the answer was written")


@pytest.mark.parametrize("retry_on", ["same session", "another session"])
def test_the_key_is_the_same_for_the_reconciliation_after_a_store_fault(
    tmp_path: Path, retry_on: str
) -> None:
    """The handler charges under its key; the answer is never recorded (the store
    fails at ``finish``). The retry — on the same session, or on another session on
    the same store (another replica) — does not run the call again: it asks
    ``outcome_unknown``, whose call carries the same key, so the payment system can
    be asked by it what became of the charge."""
    path = tmp_path / "app.sqlite"
    keys: list[str] = []
    reconciled: list[str] = []
    charged: dict[str, int] = {}  # the payment API: one charge per idempotency key

    def reconcile(call: Any, started: Any) -> Answer | None:
        reconciled.append(call.idempotency_key)
        if call.idempotency_key in charged:
            return Answer.executed(call.call_id, f"charged {charged[call.idempotency_key]}")
        return None

    def make(store: SQLiteStore, client: AgentClient) -> Session:
        session = Session(
            client,
            store=store,
            thread_id="t-ctx",
            ask=lambda _c: True,
            outcome_unknown=reconcile,
            in_flight_wait=0,
        )

        @session.tool(side_effects=True)
        def charge(cents: int, ctx: ToolContext) -> str:
            """Charge the card."""
            keys.append(ctx.idempotency_key)
            charged.setdefault(ctx.idempotency_key, cents)
            return f"charged {cents}"

        return session

    async def main() -> None:
        async with serving(agent_app(charging_agent, path="/agent")) as base:
            async with AgentClient(f"{base}/agent") as client:
                first_store = _NeverFinishes(path)
                first = make(first_store, client)
                with pytest.raises(StoreOutcomeUnknown):
                    await first.send("charge me", message_id="msg-1")
                if retry_on == "same session":
                    first_store.__class__ = SQLiteStore  # the store is well again
                    retrying, store = first, first_store
                else:
                    first_store.close()
                    store = SQLiteStore(path)
                    retrying = make(store, client)
                result = await retrying.send("charge me", message_id="msg-1")
                assert result.status == "success"
                conv = retrying.conversation
                assert conv is not None
                [tool_message] = [m for m in conv.messages if m["role"] == "tool"]
                store.close()
        assert len(keys) == 1, "the call ran once"
        assert reconciled == keys, "the reconciliation saw the handler's key"
        assert tool_message["content"] == "charged 500"

    asyncio.run(main())


def test_the_key_survives_an_answer_lost_on_the_way_back(tmp_path: Path) -> None:
    """The answer committed and the reply was lost: the retry reuses the answer, and
    the key the handler had equals the one the stored call reports."""
    path = tmp_path / "app.sqlite"
    keys: list[str] = []
    _LosesFinish.lost = False

    async def main() -> None:
        async with serving(agent_app(charging_agent, path="/agent")) as base:
            async with AgentClient(f"{base}/agent") as client:
                store = _LosesFinish(path)
                session = Session(client, store=store, thread_id="t-lost", ask=lambda _c: True)

                @session.tool(side_effects=True)
                def charge(cents: int, ctx: ToolContext) -> str:
                    """Charge the card."""
                    keys.append(ctx.idempotency_key)
                    return "ok"

                with pytest.raises(StoreOutcomeUnknown):
                    await session.send("charge me", message_id="msg-1")
                assert (await session.send("charge me", message_id="msg-1")).status == "success"
                conv = session.conversation
                assert conv is not None
                [call_id] = [m["toolCallId"] for m in conv.messages if m["role"] == "tool"]
                store.close()
        assert keys == [idempotency_key("t-lost", call_id)]

    asyncio.run(main())
