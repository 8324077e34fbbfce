"""Property tests of the consumer pipeline over generated whole streams.

The streams come from :func:`tests.helpers.gen_streams.streams`: a simulated
conforming producer, rendered twice — every item as an explicit triad, and the
chunk-form items as ``*_CHUNK`` events (see that module for the lane model).

a. Every generated stream is accepted, in both renderings: outcome
   ``completed``, no warning, every run's status and pending calls as the
   producer meant them.
b. Expansion is unique: the chunked rendering delivers exactly the explicit
   rendering (CHUNK-1, CHUNK-11), and feeding a stream twice — or as JSON text
   instead of objects — delivers the same events and the same verdict.
c. A single mutation of a valid stream is rejected with the rule it breaks.
   Each operator (:mod:`tests.helpers.mutations`) computes, from the generator's
   notes and the specification, the rule ID and the event index a conforming
   consumer must name.

Rule IDs follow ``spec/RULES.md``. For the streamed families the
implementation names the general streaming rule for text messages
(STREAM-2/3/4) and the family rule for tool calls (TOOL-20) and reasoning
(REAS-4); the tables below say so explicitly.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, event, given, note, settings
from hypothesis import strategies as st

from agui_tools._errors import ProtocolViolation
from agui_tools.wire._pipeline import ConsumerPipeline, StreamResult
from tests.helpers.gen_streams import (
    KIND_OF_CHUNK,
    Counts,
    GeneratedStream,
    active_positions,
    streams,
)
from tests.helpers.mutations import OPERATORS

Event = dict[str, Any]
Draw = Callable[[st.SearchStrategy[Any]], Any]

# A passing run takes seconds; a failing one shrinks whole streams, which can take
# minutes — more than the suite's default timeout, which would hide the minimal example.
pytestmark = pytest.mark.timeout(900)

_HEALTH = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]
VALID = settings(max_examples=100, deadline=None, suppress_health_check=_HEALTH)
MUTATION = settings(max_examples=25, deadline=None, suppress_health_check=_HEALTH)


# -- running the pipeline ------------------------------------------------------------------------


def consume(events: list[Any], **kwargs: Any) -> tuple[list[Event], StreamResult]:
    pipe = ConsumerPipeline(**kwargs)
    delivered: list[Event] = []
    for ev in events:
        delivered += pipe.feed(ev)
    return delivered, pipe.close()


def rejection(events: list[Event]) -> ProtocolViolation:
    pipe = ConsumerPipeline()
    with pytest.raises(ProtocolViolation) as info:
        for ev in events:
            pipe.feed(ev)
    result = pipe.close()
    assert result.outcome == "failed" and result.error is info.value
    return info.value


def canonical(events: list[Event]) -> list[Event]:
    """Sort each block of consecutive ``*_END`` events by identifier.

    Several lanes closing at one event (a run-level event closes them all)
    synthesize their ENDs back to back; the specification leaves their order
    open and no item depends on it.
    """
    out: list[Event] = []
    block: list[Event] = []
    for ev in [*events, {"type": ""}]:
        if ev["type"].endswith("_END") and ev["type"] != "REASONING_END":
            block.append(ev)
            continue
        out += sorted(block, key=lambda e: (e["type"], e.get("messageId", e.get("toolCallId"))))
        block = []
        out.append(ev)
    return out[:-1]


# -- a. valid streams are accepted -----------------------------------------------------------------


@VALID
@given(streams())
def test_generated_streams_are_accepted_quietly(gs: GeneratedStream) -> None:
    for feature in Counts.of(gs).values:
        event(feature)  # --hypothesis-show-statistics reports what the streams exercised
    for rendering in (gs.explicit, gs.chunked):
        _, result = consume(rendering)
        assert result.outcome == "completed", result.error
        assert result.warnings == []
        assert [(r.run_id, r.status) for r in result.runs] == [
            (r.run_id, r.status) for r in gs.runs
        ]
        assert [r.pending for r in result.runs] == [r.pending for r in gs.runs]


# -- b. expansion is unique, feeding is deterministic ------------------------------------------------


@VALID
@given(streams())
def test_expansion_is_unique_and_feeding_deterministic(gs: GeneratedStream) -> None:
    snapshot = copy.deepcopy(gs.chunked)
    explicit, _ = consume(gs.explicit)
    assert explicit == gs.explicit, "explicit events must pass through unchanged"
    chunked, result = consume(gs.chunked)
    assert not any(ev["type"] in KIND_OF_CHUNK for ev in chunked), "chunks must not survive"
    assert canonical(chunked) == canonical(gs.explicit)
    # the same stream again, and as JSON text: the same events, the same verdict
    again, result2 = consume(gs.chunked)
    as_text, result3 = consume([orjson.dumps(ev) for ev in gs.chunked])
    assert chunked == again == as_text
    for other in (result2, result3):
        assert other.outcome == result.outcome and other.warnings == result.warnings
        assert [r.to_json() for r in other.runs] == [r.to_json() for r in result.runs]
    assert gs.chunked == snapshot, "the pipeline must not mutate what it is fed"


@VALID
@given(streams(), st.data())
def test_stand_aside_events_close_nothing(gs: GeneratedStream, data: st.DataObject) -> None:
    """RAW and ACTIVITY_SNAPSHOT may appear anywhere in a run and end no chunk stream (CHUNK-11)."""
    positions = active_positions(gs.chunked)
    picks = data.draw(st.lists(st.sampled_from(positions), max_size=4))
    events = list(gs.chunked)
    inserted = []
    for n, p in enumerate(sorted(picks, reverse=True)):
        owner = data.draw(st.sampled_from([None, "sub-x"]))
        ev: Event = (
            {"type": "RAW", "event": {"n": n}}
            if data.draw(st.booleans())
            else {
                "type": "ACTIVITY_SNAPSHOT",
                "messageId": f"standaside-{n}",
                "activityType": "progress",
                "content": {},
            }
        )
        if owner is not None:
            ev["subagentRunId"] = owner
        events.insert(p, ev)
        inserted.append(ev)
    delivered, result = consume(events)
    assert result.outcome == "completed" and result.warnings == []
    without = [ev for ev in delivered if not any(ev is i for i in inserted)]
    assert canonical(without) == canonical(gs.explicit)


# -- c. single mutations ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(OPERATORS))
@MUTATION
@given(gs=streams(max_runs=2), data=st.data())
def test_a_single_mutation_is_rejected_with_its_rule(
    name: str, gs: GeneratedStream, data: st.DataObject
) -> None:
    mutation = OPERATORS[name](gs, data.draw)
    assume(mutation is not None)
    assert mutation is not None
    note(f"mutation: {mutation.what}; expecting {mutation.rule} at {mutation.at}")
    event(mutation.rule)
    exc = rejection(mutation.events)
    assert (exc.rule, exc.index) == (
        mutation.rule,
        exc.index if mutation.at is None else mutation.at,
    ), str(exc)


# -- divergences these properties found, fixed, and pinned ----------------------------------------
#
# Each is a minimal stream the generator deliberately does not produce (see the
# gen_streams docstring): an untagged continuation continues its opener's lane
# (SUB-10), span and message ids are separate namespaces (reasoning.mdx), and an
# activity delta must agree with the snapshot that opened it (SUB-11).

RS: Event = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
RF: Event = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def _sub(kind: str, sub: str, **extra: Any) -> Event:
    return {"type": kind, "subagentRunId": sub, **extra}


def test_untagged_continuation_of_a_subagent_call_leaves_the_parents_lane_alone() -> None:
    events = [
        RS,
        _sub("SUBAGENT_STARTED", "s1", name="researcher"),
        _sub("TOOL_CALL_START", "s1", toolCallId="c1", toolCallName="search"),
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "Half "},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"},  # s1's, untagged
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "and half."},  # continues the parent's m1
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        _sub("SUBAGENT_FINISHED", "s1"),
        RF,
    ]
    delivered, result = consume(events)
    assert result.outcome == "completed"
    assert [e["delta"] for e in delivered if e["type"] == "TEXT_MESSAGE_CONTENT"] == [
        "Half ",
        "and half.",
    ]


def test_a_span_event_does_not_end_a_reasoning_message_stream_of_the_same_id() -> None:
    events = [
        RS,
        _sub("SUBAGENT_STARTED", "s1", name="researcher"),
        _sub("REASONING_START", "s1", messageId="x1"),
        {"type": "REASONING_MESSAGE_CHUNK", "messageId": "x1", "delta": "think "},
        _sub("REASONING_END", "s1", messageId="x1"),  # s1's span: not the parent's lane
        {"type": "REASONING_MESSAGE_CHUNK", "delta": "more"},
        _sub("SUBAGENT_FINISHED", "s1"),
        RF,
    ]
    _, result = consume(events)
    assert result.outcome == "completed"


def test_an_activity_delta_retagged_away_from_its_snapshot_is_rejected() -> None:
    events = [
        RS,
        _sub("SUBAGENT_STARTED", "s1", name="a"),
        _sub("SUBAGENT_STARTED", "s2", name="b"),
        _sub("ACTIVITY_SNAPSHOT", "s1", messageId="a1", activityType="progress", content={}),
        _sub("ACTIVITY_DELTA", "s2", messageId="a1", activityType="progress", patch=[]),
        _sub("SUBAGENT_FINISHED", "s1"),
        _sub("SUBAGENT_FINISHED", "s2"),
        RF,
    ]
    exc = rejection(events)
    assert (exc.rule, exc.index) == ("SUB-11", 4)
