"""Our client against a server built with the official Python package only
(issue: interoperability, direction 2): every scenario consumed, quiet, and the
frontend-tool round trips completed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from agui_tools.app import Driver
from agui_tools.app._calls import CallStatus
from agui_tools.app._consent import ConsentPolicy
from agui_tools.app._conversation import Conversation
from agui_tools.app._tools import ToolSpec
from agui_tools.transport._client import AgentClient
from tests.helpers.scripted_server import serve
from tests.interop.official_server import app
from tests.interop.scenarios import FRONTEND_TOOLS, SCENARIOS

TOOLS = [ToolSpec(t["name"], t["description"], parameters=t["parameters"]) for t in FRONTEND_TOOLS]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve(app) as base:
        yield f"{base}/agent"


def drive(url: str, scenario: str) -> tuple[Conversation, list[Any]]:
    async def main() -> tuple[Conversation, list[Any]]:
        conv = Conversation(
            tools=TOOLS,
            consent=ConsentPolicy.auto_approve(),
            forwarded_props={"scenario": scenario},
        )
        results = []
        conv.next_input(user=f"scenario {scenario}")
        async with AgentClient(url) as client:
            for _ in range(3):
                result = await client.run(conv)
                results.append(result)
                if not conv.pending:
                    break
                for call in conv.pending:
                    assert call.status is CallStatus.APPROVED
                    Driver(conv).execute(
                        call.call_id, lambda args, name=call.name: f"{name} done with {args}"
                    )
                conv.next_input()
        return conv, results

    return asyncio.run(main())


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_scenario(url: str, scenario: str) -> None:
    conv, results = drive(url, scenario)
    assert all(r.status == "success" for r in results), [(r.status, r.violation) for r in results]
    assert conv.warnings == [] and all(r.warnings == [] for r in results)
    assert conv.pending == []
    messages = conv.messages
    if scenario == "frontend_call":
        assert len(results) == 2
        assert messages[-1]["content"].startswith("The user answered: confirm_order done")
    elif scenario == "parallel_calls":
        assert len(results) == 2
        answered = [m["toolCallId"] for m in messages if m["role"] == "tool"]
        assert answered == ["par-c1", "par-c2"]
    elif scenario == "state_deltas":
        assert conv.state == {"items": [{"sku": "W-1"}], "status": "ready"}
    elif scenario == "reopened_call":
        call = next(m for m in messages if m.get("toolCalls"))["toolCalls"][0]
        assert call["function"]["arguments"] == '{"q":"reopened"}'
    elif scenario == "subagents":
        assert {m.get("subagentRunId") for m in messages if m["role"] == "assistant"} >= {None}
        assert any(m.get("subagentRunId") for m in messages)
    elif scenario == "chunked":
        assert any(m.get("content") == "Chunks expand." for m in messages)
    else:
        assert len(results) == 1
