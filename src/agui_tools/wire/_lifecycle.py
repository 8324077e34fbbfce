"""The run lifecycle, one table: which run-level move is legal in which phase.

As h11's ``_state.py``: :data:`RUN_MOVES` gives, for each phase and run-level event, the
next phase or the rule broken (``events/lifecycle``); any other event is :data:`ANY_EVENT`,
legal only in an active run. Consumer-only moves, never illegal: :data:`STREAM_ENDED`
(TRANS-2) and :data:`REJECTED` (RUN-16). The verifier judges by it and the emitter refuses
by it (stricter: it never starts a second run). An outcome is a :class:`RunSummary`, not a phase.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Literal

import orjson

__all__ = [
    "ANY_EVENT",
    "BOUNDARIES",
    "REJECTED",
    "RUN_ENDS",
    "RUN_EVENTS",
    "RUN_MOVES",
    "STREAM_ENDED",
    "Refused",
    "RunEvent",
    "RunPhase",
    "RunStatus",
    "RunSummary",
    "ends_run",
    "move",
    "refusal",
    "run_event",
]


class RunPhase(StrEnum):
    """Where a stream (or an emitter's run) stands."""

    NEW = "new"  # nothing yet
    ACTIVE = "active"  # a run is open
    FINISHED = "finished"  # the last run closed with RUN_FINISHED
    ERRORED = "errored"  # the last run closed with RUN_ERROR


RunEvent = Literal[
    "RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "ANY_EVENT", "STREAM_ENDED", "REJECTED"
]
ANY_EVENT: Final = "ANY_EVENT"
"""Every event type but the three boundaries: an event of the active run."""
STREAM_ENDED: Final = "STREAM_ENDED"
"""The consumer's byte stream ended (an active run is truncated, TRANS-2)."""
REJECTED: Final = "REJECTED"
"""The consumer rejected the stream (the active run ends rejected, RUN-16)."""
BOUNDARIES: Final = frozenset({"RUN_STARTED", "RUN_FINISHED", "RUN_ERROR"})
RUN_ENDS: Final = frozenset({"RUN_FINISHED", "RUN_ERROR"})
"""The terminal events: a run is over after either."""
RUN_EVENTS: Final[tuple[RunEvent, ...]] = (
    "RUN_STARTED",
    "RUN_FINISHED",
    "RUN_ERROR",
    ANY_EVENT,
    STREAM_ENDED,
    REJECTED,
)


@dataclass(frozen=True, slots=True)
class Refused:
    """An illegal move, and the rule it breaks."""

    rule: str


_NEW, _ACTIVE, _FINISHED, _ERRORED = RunPhase
RUN_MOVES: Final[Mapping[tuple[RunPhase, RunEvent], RunPhase | Refused]] = {
    # the first event must be RUN_STARTED, or RUN_ERROR for a run that failed before
    # it began (RUN-1)
    (_NEW, "RUN_STARTED"): _ACTIVE,
    (_NEW, "RUN_FINISHED"): Refused("RUN-1"),
    (_NEW, "RUN_ERROR"): _ERRORED,
    (_NEW, ANY_EVENT): Refused("RUN-1"),
    (_NEW, STREAM_ENDED): _FINISHED,
    (_NEW, REJECTED): _FINISHED,
    # a run is closed before the next opens (RUN-13)
    (_ACTIVE, "RUN_STARTED"): Refused("RUN-13"),
    (_ACTIVE, "RUN_FINISHED"): _FINISHED,
    (_ACTIVE, "RUN_ERROR"): _ERRORED,
    (_ACTIVE, ANY_EVENT): _ACTIVE,
    (_ACTIVE, STREAM_ENDED): _FINISHED,
    (_ACTIVE, REJECTED): _FINISHED,
    # after RUN_FINISHED: a new run, or a late failure of this one (RUN-12)
    (_FINISHED, "RUN_STARTED"): _ACTIVE,
    (_FINISHED, "RUN_FINISHED"): Refused("RUN-12"),
    (_FINISHED, "RUN_ERROR"): _ERRORED,
    (_FINISHED, ANY_EVENT): Refused("RUN-12"),
    (_FINISHED, STREAM_ENDED): _FINISHED,
    (_FINISHED, REJECTED): _FINISHED,
    # after RUN_ERROR: only a new run (RUN-12)
    (_ERRORED, "RUN_STARTED"): _ACTIVE,
    (_ERRORED, "RUN_FINISHED"): Refused("RUN-12"),
    (_ERRORED, "RUN_ERROR"): Refused("RUN-12"),
    (_ERRORED, ANY_EVENT): Refused("RUN-12"),
    (_ERRORED, STREAM_ENDED): _ERRORED,
    (_ERRORED, REJECTED): _FINISHED,
}
"""The run lifecycle: ``(phase, event) → phase``, or the rule the move breaks."""


def run_event(event_type: str) -> RunEvent:
    """The lifecycle column of a wire event type: a boundary, or :data:`ANY_EVENT`."""
    return event_type if event_type in BOUNDARIES else ANY_EVENT  # type: ignore[return-value]


def ends_run(payload: str) -> bool:
    """One SSE event's data is a terminal event (:data:`RUN_ENDS`) — the look a stream
    reader takes without decoding every event: most name neither type."""
    if "RUN_FINISHED" not in payload and "RUN_ERROR" not in payload:
        return False
    try:
        event = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return False
    return isinstance(event, dict) and event.get("type") in RUN_ENDS


def refusal(phase: RunPhase, event: RunEvent) -> str | None:
    """The rule ``event`` breaks in ``phase``, or ``None`` when the move is legal."""
    to = RUN_MOVES[(phase, event)]
    return to.rule if isinstance(to, Refused) else None


def move(phase: RunPhase, event: RunEvent) -> RunPhase:
    """The phase ``event`` leads to from ``phase``; the caller has ruled out a refusal
    (:func:`refusal`), in its own words — so an illegal move here is a bug of ours."""
    to = RUN_MOVES[(phase, event)]
    if isinstance(to, Refused):
        raise AssertionError(f"illegal run move {event} in phase {phase} ({to.rule})")
    return to


# -- what a run amounted to ------------------------------------------------------------

RunStatus = Literal[
    "running", "success", "interrupt", "cancelled", "error", "truncated", "rejected"
]
"""What a run amounted to (:attr:`RunSummary.status`): still running; finished with
success, an interrupt or cancelled; ended by the producer's ``RUN_ERROR``; truncated
(the stream ended before its terminal event, TRANS-2); or rejected by the consumer
for breaking a rule (never shown as ``error``, RUN-16)."""


@dataclass
class RunSummary:
    """What one run on the stream amounted to.

    ``pending`` lists the calls the run left unanswered, in call order — derived from the
    stream, never from an absent ``pendingToolCallIds`` (FE-6, FE-7).
    """

    thread_id: str | None
    run_id: str | None
    status: RunStatus = "running"
    outcome: dict[str, Any] | None = None
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    error: dict[str, Any] | None = None
    protocol_version: str | None = None
    started: list[str] = field(default_factory=list)
    """Tool calls this run started, in order."""
    answered: set[str] = field(default_factory=set)
    """Tool calls this run answered with ``TOOL_CALL_RESULT``."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "threadId": self.thread_id,
            "runId": self.run_id,
            "status": self.status,
            "pending": list(self.pending),
        }
        if self.interrupts:
            out["interrupts"] = self.interrupts
        if self.error is not None:
            out["error"] = self.error
        return out
