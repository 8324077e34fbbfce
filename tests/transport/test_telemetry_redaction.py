"""Spans carry no user or agent content by default (issue #37): every error path of a
send — an interrupt answer refused by its schema's ``pattern``, an agent 4xx/5xx that
echoes the request, invalid tool arguments, a store failure — is exported by the SDK
and searched, every field of every span (status descriptions and events included),
for the strings planted in the user's and the agent's data."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agui_tools._errors import StoreOutcomeUnknown, StoreWriteFailed
from agui_tools.agent import Run
from agui_tools.testing import serving
from agui_tools.transport import (
    AgentClient,
    Interrupt,
    InvalidPayload,
    Resolution,
    Session,
    SyncAgentClient,
    SyncSession,
    agent_app,
)
from tests.helpers.async_store import AsyncMemoryStore
from tests.helpers.otel import exported_spans
from tests.helpers.scripted_server import Script, app_for, serve

PLANTED = "PLANTED-7d1f"
"""In every user answer, prompt, argument and agent body below: never in a span."""


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    with exported_spans() as exporter:
        yield exporter


def exported(exporter: InMemorySpanExporter) -> str:
    """Every span as the SDK exports it: names, attributes, events, status."""
    return "\n".join(s.to_json() for s in exporter.get_finished_spans())


def assert_clean(exporter: InMemorySpanExporter, *error_types: str) -> None:
    text = exported(exporter)
    assert exporter.get_finished_spans(), "nothing was exported"
    assert PLANTED not in text, text
    failed = [s for s in exporter.get_finished_spans() if s.status.status_code.name == "ERROR"]
    assert failed, "no span says the send failed"
    for s in failed:
        assert not s.status.description or PLANTED not in s.status.description
    events = [e for s in exporter.get_finished_spans() for e in s.events if e.name == "exception"]
    assert events, "the exception is not recorded at all"
    assert {(e.attributes or {}).get("exception.type") for e in events} == set(error_types)
    for e in events:
        assert set(e.attributes or {}) <= {"exception.type", "agui.rule"}, e.attributes


async def interrupting_agent(r: Run) -> None:
    r.interrupt(
        {
            "id": "ask-id",
            "reason": "input",
            "message": "Your identity number?",
            "responseSchema": {
                "type": "object",
                "properties": {"number": {"type": "string", "pattern": "^[0-9]{6}$"}},
                "required": ["number"],
            },
        }
    )


@pytest.mark.parametrize("face", ["async", "sync"])
def test_an_interrupt_answer_refused_by_its_pattern_is_not_in_any_span(
    spans: InMemorySpanExporter, face: str
) -> None:
    def on_interrupt(interrupt: Interrupt) -> Resolution:
        return Resolution.resolve({"number": PLANTED})

    async def scenario() -> None:
        async with serving(agent_app(interrupting_agent, path="/agent")) as base:
            if face == "async":
                session = Session(AgentClient(f"{base}/agent"), on_interrupt=on_interrupt)
                with pytest.raises(InvalidPayload) as info:
                    await session.send("hello")
                await session.client.aclose()
            else:
                client = SyncAgentClient(f"{base}/agent")
                sync = SyncSession(client, on_interrupt=on_interrupt)
                with pytest.raises(InvalidPayload) as info:
                    await asyncio.to_thread(sync.send, "hello")
                client.close()
            assert PLANTED in str(info.value)  # the caller is told; the trace is not

    asyncio.run(scenario())
    assert_clean(spans, "InvalidPayload")


@pytest.mark.parametrize("status", [422, 500])
def test_an_agent_error_body_echoing_the_prompt_is_not_in_any_span(
    spans: InMemorySpanExporter, status: int
) -> None:
    echo = json.dumps({"detail": [{"input": {"messages": [{"content": PLANTED}]}}]})
    script = Script(chunks=[echo.encode()], status=status, content_type="application/json")
    with serve(app_for(script)) as base:
        client = SyncAgentClient(f"{base}/agent")
        with client, pytest.raises(Exception) as info:
            SyncSession(client).send(f"my prompt {PLANTED}")
    assert PLANTED in str(info.value)  # the caller is told; the trace is not
    assert_clean(spans, type(info.value).__qualname__)


async def invalid_arguments_agent(r: Run) -> None:
    if r.messages[-1]["role"] == "tool":
        await r.text("ok")
        return
    async with r.tool_call("confirm_order", call_id="c1") as c:
        await c.args(json.dumps({"sku": PLANTED, "qty": f"two {PLANTED}"}))


def test_invalid_arguments_are_not_in_any_span(spans: InMemorySpanExporter) -> None:
    async def scenario() -> None:
        async with serving(agent_app(invalid_arguments_agent, path="/agent")) as base:
            session = Session(AgentClient(f"{base}/agent"), ask=lambda call: True)

            @session.tool(side_effects=True)
            def confirm_order(sku: str, qty: int) -> str:
                """Place an order."""
                return "ordered"

            await session.send("order")
            await session.client.aclose()
            conv = session.conversation
            assert conv is not None and PLANTED in conv.call("c1").text

    asyncio.run(scenario())
    text = exported(spans)
    names = [s.name for s in spans.get_finished_spans()]
    assert "agui.store settle" in names and names.count("agui.run") == 2, names  # answered
    assert PLANTED not in text, text


async def ordering_agent(r: Run) -> None:
    if r.messages[-1]["role"] == "tool":
        await r.text("ok")
        return
    async with r.tool_call("confirm_order", call_id="c1") as c:
        await c.args('{"sku": "W-1", "qty": 2}')


def test_a_store_failure_naming_user_data_is_not_in_any_span(
    spans: InMemorySpanExporter,
) -> None:
    store = AsyncMemoryStore()
    store.fail["finish"] = StoreWriteFailed(f"cannot write the answer {PLANTED!r}")

    async def scenario() -> None:
        async with serving(agent_app(ordering_agent, path="/agent")) as base:
            session = Session(AgentClient(f"{base}/agent"), ask=lambda call: True, store=store)

            @session.tool(side_effects=True)
            def confirm_order(sku: str, qty: int) -> str:
                """Place an order."""
                return f"ordered for {PLANTED}"

            with pytest.raises(StoreOutcomeUnknown):
                await session.send(f"order {PLANTED}")
            await session.client.aclose()

    asyncio.run(scenario())
    assert_clean(spans, "StoreOutcomeUnknown", "StoreWriteFailed")


def test_the_payload_opt_in_is_still_the_way_in(spans: InMemorySpanExporter) -> None:
    """The redaction is of errors: a tool that opts in still has its payloads traced."""

    async def scenario() -> None:
        async with serving(agent_app(ordering_agent, path="/agent")) as base:
            session = Session(AgentClient(f"{base}/agent"), ask=lambda call: True)

            @session.tool(side_effects=True, trace_payloads=True)
            def confirm_order(sku: str, qty: int) -> str:
                """Place an order."""
                return f"ordered for {PLANTED}"

            await session.send("order")
            await session.client.aclose()

    asyncio.run(scenario())
    assert PLANTED in exported(spans)
