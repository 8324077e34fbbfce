"""The run lifecycle table (wire/_lifecycle.py), and the two sides that move by it.

The verifier judges a stream by :data:`RUN_MOVES` and the emitter refuses by it;
these tests hold the table complete, hold each side to it move by move, and
hold the two sides to each other: from every phase, every run-level move the
emitter makes is one the verifier accepts, landing both in the same phase.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agui_tools._errors import ProtocolViolation, UsageError
from agui_tools.agent import Emitter
from agui_tools.wire._lifecycle import (
    ANY_EVENT,
    REJECTED,
    RUN_EVENTS,
    RUN_MOVES,
    STREAM_ENDED,
    Refused,
    RunEvent,
    RunPhase,
    ends_run,
    move,
    refusal,
    run_event,
)
from agui_tools.wire._verify import Verifier
from tests.helpers.dsl import RULE_IDS

Event = dict[str, Any]
INPUT: Event = {"threadId": "t1", "runId": "r1", "messages": []}
WIRE_EVENTS: tuple[RunEvent, ...] = ("RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", ANY_EVENT)

# how each side reaches each phase: the emitter's calls, and the events they send
REACH: dict[RunPhase, Callable[[Emitter], list[Event]]] = {
    RunPhase.NEW: lambda e: [],
    RunPhase.ACTIVE: lambda e: e.start(),
    RunPhase.FINISHED: lambda e: e.start() + e.finish(),
    RunPhase.ERRORED: lambda e: e.start() + e.error("boom"),
}
# one emitter call per wire column (ANY_EVENT: a CUSTOM, which every phase judges alike)
EMIT: dict[RunEvent, Callable[[Emitter], list[Event]]] = {
    "RUN_STARTED": lambda e: e.start(),
    "RUN_FINISHED": lambda e: e.finish(),
    "RUN_ERROR": lambda e: e.error("late"),
    ANY_EVENT: lambda e: e.custom("note", 1),
}
# the same moves as wire events, for the verifier (a new run gets its own runId)
WIRE: dict[RunEvent, Event] = {
    "RUN_STARTED": {"type": "RUN_STARTED", "threadId": "t1", "runId": "r2"},
    "RUN_FINISHED": {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
    "RUN_ERROR": {"type": "RUN_ERROR", "message": "late"},
    ANY_EVENT: {"type": "CUSTOM", "name": "note", "value": 1},
}


def verifier_in(phase: RunPhase) -> Verifier:
    verifier = Verifier(strict=True, thread_id="t1")
    for ev in REACH[phase](Emitter(INPUT)):
        verifier.feed(ev)
    assert verifier.phase is phase
    return verifier


def test_every_phase_and_move_has_one_defined_outcome() -> None:
    cells = {(phase, event) for phase in RunPhase for event in RUN_EVENTS}
    assert set(RUN_MOVES) == cells
    for (phase, event), to in RUN_MOVES.items():
        assert isinstance(to, RunPhase | Refused), (phase, event, to)
        if isinstance(to, Refused):
            assert to.rule in RULE_IDS, (phase, event, to.rule)
            assert event not in (STREAM_ENDED, REJECTED), "the consumer's own moves never fail"


def test_every_phase_is_reachable_and_left_by_a_new_run() -> None:
    reached = {to for to in RUN_MOVES.values() if isinstance(to, RunPhase)}
    assert reached == set(RunPhase) - {RunPhase.NEW}
    for phase in set(RunPhase) - {RunPhase.ACTIVE}:
        assert move(phase, "RUN_STARTED") is RunPhase.ACTIVE


def test_an_illegal_move_is_never_taken() -> None:
    with pytest.raises(AssertionError, match="RUN-13"):
        move(RunPhase.ACTIVE, "RUN_STARTED")


def test_only_the_boundaries_have_their_own_column() -> None:
    assert run_event("RUN_ERROR") == "RUN_ERROR"
    assert run_event("TOOL_CALL_START") == ANY_EVENT
    assert run_event("RAW") == ANY_EVENT


@pytest.mark.parametrize("event", WIRE_EVENTS)
@pytest.mark.parametrize("phase", list(RunPhase))
def test_the_verifier_moves_by_the_table(phase: RunPhase, event: RunEvent) -> None:
    verifier = verifier_in(phase)
    rule = refusal(phase, event)
    if rule is None:
        verifier.feed(dict(WIRE[event]))
        assert verifier.phase is move(phase, event)
    else:
        with pytest.raises(ProtocolViolation) as caught:
            verifier.feed(dict(WIRE[event]), 7)
        assert caught.value.rule == rule
        assert caught.value.index == 7
        assert verifier.phase is phase


@pytest.mark.parametrize("phase", list(RunPhase))
def test_the_consumers_own_moves_follow_the_table(phase: RunPhase) -> None:
    ended, rejected = verifier_in(phase), verifier_in(phase)
    ended.end_of_stream()
    rejected.rejected()
    assert ended.phase is move(phase, STREAM_ENDED)
    assert rejected.phase is move(phase, REJECTED)


@pytest.mark.parametrize("event", WIRE_EVENTS)
@pytest.mark.parametrize("phase", list(RunPhase))
@pytest.mark.parametrize("verify", [False, True], ids=["own-books", "verified"])
def test_the_emitter_and_the_verifier_agree_on_every_move(
    phase: RunPhase, event: RunEvent, verify: bool
) -> None:
    """``own-books``: the emitter's own refusals, without its verifier as a backstop."""
    emitter = Emitter(INPUT, verify=verify)
    verifier = Verifier(strict=True, thread_id="t1")
    for ev in REACH[phase](emitter):
        verifier.feed(ev)
    assert emitter.phase is verifier.phase is phase
    rule = refusal(phase, event)
    try:
        sent = EMIT[event](emitter)
    except UsageError as exc:
        if rule is None:
            # legal on a stream, but an emitter serves one run: never a second start
            assert (event, exc.rule) == ("RUN_STARTED", "RUN-13"), exc
            assert phase in (RunPhase.FINISHED, RunPhase.ERRORED)
        else:
            assert exc.rule == rule, exc
        assert emitter.phase is phase
        return
    assert rule is None, f"the emitter made a move the table refuses ({rule})"
    for ev in sent:
        verifier.feed(ev)  # the consumer accepts every event of the move …
    assert emitter.phase is verifier.phase is move(phase, event)  # … and lands alike


@pytest.mark.parametrize(
    ("payload", "ends"),
    [
        ('{"type":"RUN_FINISHED","threadId":"t","runId":"r"}', True),
        ('{"type":"RUN_ERROR","message":"m"}', True),
        ('{"type":"RUN_FINISHED",\n"threadId":"t","runId":"r"}', True),  # data lines joined
        ('{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"RUN_FINISHED"}', False),
        ('{"type":"RUN_STARTED","threadId":"t","runId":"RUN_ERROR"}', False),
        ('{"type":"RUN_FINISHED"', False),  # not JSON: not an event at all
        ('["RUN_FINISHED"]', False),
    ],
)
def test_a_payload_ends_a_run_only_when_its_type_is_terminal(payload: str, ends: bool) -> None:
    assert ends_run(payload) is ends
