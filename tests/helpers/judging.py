"""Judging what our producer emitted: the strict consumer, and no ``RUN_ERROR`` by accident.

Every stream a producer-side test makes is fed to the strict consumer pipeline:
an emitter whose output a conforming consumer would reject or warn about is
broken no matter what else the test checks. ``RUN_ERROR`` is a valid ending
(RUN-10), so "the pipeline completed" alone also passes a run whose agent body
raised — the shape that let assertions inside agent bodies go unchecked. Here a
run ending in error fails the judgement unless the test asks for it with
``run_error=True``; the agent's own exception is re-raised by the plugin of
:mod:`tests.helpers.run_errors`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import orjson

from agui_tools.agent import Agent, collect
from agui_tools.wire._framing import SSEReader
from agui_tools.wire._pipeline import ConsumerPipeline, StreamResult

__all__ = ["judge", "judge_sse", "run_agent"]

Event = dict[str, Any]


def judge(
    events: list[Event], run_input: Mapping[str, Any], *, run_error: bool = False
) -> StreamResult:
    """Feed ``events`` to the strict consumer pipeline: it must complete without warnings,
    and its last run must end in error exactly when ``run_error`` says so."""
    pipe = ConsumerPipeline(run_input=run_input, strict=True)
    for ev in events:
        pipe.feed(ev)
    result = pipe.close()
    assert result.completed, result.error
    assert result.warnings == [], [str(w) for w in result.warnings]
    assert result.runs, "no run in the stream"
    ending = result.runs[-1].status
    if run_error:
        assert ending == "error", f"the run was meant to end with RUN_ERROR, it ended {ending}"
    else:
        errors = [e for e in events if e.get("type") == "RUN_ERROR"]
        assert ending != "error", (
            f"the run ended with RUN_ERROR the test did not ask for: {errors[-1:]}"
        )
    return result


def judge_sse(
    raw: bytes, run_input: Mapping[str, Any], *, run_error: bool = False
) -> tuple[StreamResult, list[Event]]:
    """:func:`judge` for raw SSE bytes as a server sent them; also returns the events."""
    reader = SSEReader()
    frames = reader.feed(raw)
    assert not reader.has_partial_event, "the stream ended mid-event"
    events = [orjson.loads(f) for f in frames]
    return judge(events, run_input, run_error=run_error), events


def run_agent(agent: Agent, run_input: Mapping[str, Any], **kw: Any) -> list[Event]:
    """Run ``agent`` with no transport (:func:`agui_tools.agent.collect`); its events."""
    return asyncio.run(collect(agent, run_input, **kw))
