"""The OpenAI Chat Completions adapter, over recorded chunk sequences (no network):
every stream it emits passes our strict consumer, and the application's
history holds what the model said and called."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agui_tools.agent import Run, collect
from agui_tools.app._reducer import ThreadState
from agui_tools.integrations.openai import (
    CompletionResult,
    stream_completion,
    usage_entry,
)
from agui_tools.wire._pipeline import ConsumerPipeline

DATA = Path(__file__).resolve().parents[1] / "data" / "openai"
INPUT = {
    "threadId": "t",
    "runId": "r",
    "messages": [{"id": "u", "role": "user", "content": "go"}],
    "tools": [
        {"name": "confirm_order", "description": "confirm"},
        {"name": "show_chart", "description": "chart"},
    ],
}


def recorded(name: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((DATA / f"{name}.json").read_text())
    return data


def drive(
    chunks: Any, answer_agent_side: bool = True
) -> tuple[list[dict[str, Any]], CompletionResult, ThreadState]:
    said: list[CompletionResult] = []

    async def agent(run: Run) -> None:
        result = await stream_completion(run, chunks, message_id="msg-1")
        said.append(result)
        if answer_agent_side:
            for call in result.tool_calls:
                if call.name not in run.frontend_tools:
                    await run.result(call.id, f"ran {call.name}")

    events = asyncio.run(collect(agent, INPUT))
    pipe = ConsumerPipeline(run_input=INPUT, strict=True)
    thread = ThreadState(INPUT["messages"])
    for ev in pipe.feed_many(events):
        thread.apply(ev)
    result = pipe.close()
    assert result.outcome == "completed" and result.warnings == [], (result.error, result.warnings)
    return events, said[0], thread


def test_text_only() -> None:
    events, said, thread = drive(recorded("text_only"))
    assert (
        said.content == "Hello, world." and said.finish_reason == "stop" and said.tool_calls == []
    )
    assert thread.messages[-1] == {"id": "msg-1", "role": "assistant", "content": "Hello, world."}
    assert events[-1] == {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def test_one_tool_call_with_fragmented_arguments_and_usage() -> None:
    events, said, thread = drive(recorded("one_tool_call"))
    [call] = said.tool_calls
    assert (call.id, call.name, call.arguments) == (
        "call_abc",
        "get_weather",
        '{"city": "Paris", "unit": "celsius"}',
    )
    args = [e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS"]
    assert len(args) > 3 and "".join(args) == call.arguments  # streamed as fragments, not buffered
    assert thread.tool_call("call_abc")["function"]["arguments"] == call.arguments  # type: ignore[index]
    finish = events[-1]
    assert finish["usage"] == [
        {
            "provider": "openai",
            "model": "gpt-4o-2024-08-06",
            "inputTokens": 82,
            "outputTokens": 18,
            "totalTokens": 100,
            "cachedInputTokens": 64,
            "reasoningTokens": 0,
        }
    ]


def test_parallel_frontend_calls_stay_pending_in_one_assistant_message() -> None:
    events, said, thread = drive(recorded("parallel_tool_calls"))
    assert [(c.id, c.name) for c in said.tool_calls] == [
        ("call_1", "confirm_order"),
        ("call_2", "show_chart"),
    ]
    finish = events[-1]
    assert finish["outcome"] == {"type": "success", "pendingToolCallIds": ["call_1", "call_2"]}
    holders = [m for m in thread.messages if m.get("toolCalls")]
    assert len(holders) == 1 and [c["id"] for c in holders[0]["toolCalls"]] == ["call_1", "call_2"]


def test_interleaved_fragments_and_text_before_calls() -> None:
    events, said, thread = drive(recorded("interleaved_with_text"))
    assert said.content == "Let me do both."
    assert {c.id: c.arguments for c in said.tool_calls} == {
        "call_a": '{"q":"x"}',
        "call_b": '{"series":[1]}',
    }
    msg = thread.message("msg-1")
    assert msg is not None and msg["content"] == "Let me do both." and len(msg["toolCalls"]) == 2
    # lookup is agent-side and got a result; show_chart is the application's to answer
    assert events[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ["call_b"]}


def test_async_iterables_work_too() -> None:
    async def gen() -> Any:
        for c in recorded("text_only"):
            await asyncio.sleep(0)
            yield c

    _, said, _ = drive(gen())
    assert said.content == "Hello, world."


@pytest.mark.parametrize(
    "bad",
    [
        [{"choices": [{"index": 0, "delta": {"tool_calls": [{"function": {"arguments": "{}"}}]}}]}],
        [
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]},
                    }
                ]
            }
        ],
        [{"choices": [{"index": 1, "delta": {"content": "second choice"}}]}],
        ["not a chunk"],
    ],
)
@pytest.mark.run_error("ProviderStreamError")
def test_a_malformed_provider_stream_ends_the_run_with_run_error(bad: list[Any]) -> None:
    async def agent(run: Run) -> None:
        await stream_completion(run, bad)

    events = asyncio.run(collect(agent, INPUT))
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "ProviderStreamError"
    pipe = ConsumerPipeline(run_input=INPUT, strict=True)
    pipe.feed_many(events)
    assert pipe.close().outcome == "completed"


def test_usage_never_reports_absent_counts_as_zero() -> None:
    assert usage_entry({"prompt_tokens": 5}, model=None) == {"provider": "openai", "inputTokens": 5}
    # no total without both counts, and details the provider left out stay absent (RUN-11)
    assert usage_entry(
        {"completion_tokens": 3, "prompt_tokens_details": {}, "completion_tokens_details": None},
        model="gpt-x",
    ) == {"provider": "openai", "model": "gpt-x", "outputTokens": 3}
