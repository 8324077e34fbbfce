"""The resumable binding's client half, sans-I/O: what a cut run rejoins with.

The opt-in extension (docs/resumable.md) numbers a run's SSE events
``id: <runId>:<seq>`` and lets a client that lost the connection read the run
again from ``GET <path>/threads/<threadId>/runs/<runId>/events`` with
``Last-Event-ID``. :class:`RejoinState` is the one place that decides, for the
client's two faces (async and sync), what a received event is — the next one,
one already delivered (dropped: the verifier and the reducer never see an event
twice, PROC-7), or a broken promise (a gap, an id naming another run: the run
ends rejected, never silently repaired) — where to rejoin, with which header,
and how long to wait before the next attempt.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

import orjson

from .._errors import ProtocolViolation
from ..wire._framing import BrokenFrame

__all__ = [
    "RESUMABLE_HEADER",
    "RejoinPolicy",
    "RejoinState",
    "parse_event_id",
    "run_url",
]

RESUMABLE_HEADER: Final = "Agui-Resumable"
"""The opt-in, asked for on the run request and confirmed on its answer (value ``1``)."""
_TERMINAL: Final = frozenset({"RUN_FINISHED", "RUN_ERROR"})
_WHERE: Final = "resumable stream"
# the binding page's rule IDs (docs/resumable.md)
RULE_IDS: Final = "RESUME-2"
"""Every event of an opted-in stream carries ``id: <runId>:<seq>``, seq 1, 2, 3 … with no gap."""
RULE_RECONNECT: Final = "RESUME-11"
"""A cut is rejoined with backoff, within bounds; past them the run is truncated."""


@dataclass(frozen=True)
class RejoinPolicy:
    """How a resumable client retries a cut run: the wait starts at ``first_delay``
    seconds and doubles up to ``max_delay``; it gives up after ``attempts``
    consecutive failed rejoins or ``deadline`` seconds since the cut, whichever
    comes first (a rejoin that delivers an event starts the count again)."""

    first_delay: float = 0.1
    max_delay: float = 5.0
    attempts: int = 8
    deadline: float = 60.0


def parse_event_id(event_id: str) -> tuple[str, int] | None:
    """``<runId>:<seq>`` → ``(runId, seq)`` (split on the last ``:``: a run id may hold
    colons); ``None`` when it is not one (no colon, seq not a positive decimal)."""
    run_id, sep, seq = event_id.rpartition(":")
    if not sep or not seq.isascii() or not seq.isdecimal() or seq.startswith("0"):
        return None
    return run_id, int(seq)


def run_url(url: str, thread_id: str, run_id: str, tail: str) -> str:
    """``<path>/threads/<threadId>/runs/<runId>/<tail>`` beside a run endpoint ``url``."""
    base = url.split("?", 1)[0].rstrip("/")
    return f"{base}/threads/{quote(thread_id, safe='')}/runs/{quote(run_id, safe='')}/{tail}"


def _terminal(frame: str) -> bool:
    if "RUN_FINISHED" not in frame and "RUN_ERROR" not in frame:
        return False
    try:
        event = orjson.loads(frame)
    except orjson.JSONDecodeError:
        return False
    return isinstance(event, dict) and event.get("type") in _TERMINAL


class RejoinState:
    """One opted-in run as the client has delivered it so far.

    ``confirmed`` once the server answered ``Agui-Resumable: 1``; ``last`` the seq
    of the last event handed to the pipeline; ``ended`` once that was the run's
    terminal event (then a cut is no cut: the body may simply end). ``dropped``
    counts replayed events not delivered again; ``rejoins`` the rejoin requests
    answered with a stream.
    """

    def __init__(
        self, url: str, run_input: Mapping[str, Any], policy: RejoinPolicy | None = None
    ) -> None:
        self.url = url
        self.thread_id = str(run_input.get("threadId", ""))
        self.run_id = str(run_input.get("runId", ""))
        self.policy = policy or RejoinPolicy()
        self.confirmed = False
        self.last = 0
        self.ended = False
        self.broken = False
        self.dropped = 0
        self.rejoins = 0
        self._failures = 0
        self._cut_at: float | None = None

    @staticmethod
    def confirms(headers: Mapping[str, str]) -> bool:
        return str(headers.get(RESUMABLE_HEADER.lower(), "")).strip() == "1"

    # -- the events ---------------------------------------------------------
    def admit(self, frames: list[Any], ids: list[str | None]) -> list[Any]:
        """The frames to hand the pipeline, out of what one chunk completed.

        ``ids`` holds each data frame's ``id`` field, in order (a trailing
        :class:`BrokenFrame` has none). An event already delivered is dropped; an
        event past the next seq, without an id, or naming another run is a
        broken promise: a :class:`BrokenFrame` in its place, and nothing after it.
        """
        out: list[Any] = []
        for index, frame in enumerate(frames):
            if isinstance(frame, BrokenFrame) or index >= len(ids):
                out.append(frame)
                continue
            seq = self._seq(ids[index])
            if isinstance(seq, BrokenFrame):
                out.append(seq)
                self.broken = True
                return out
            if seq <= self.last:
                self.dropped += 1
                continue
            self.last = seq
            self._failures = 0
            self._cut_at = None
            if _terminal(frame):
                self.ended = True
            out.append(frame)
        return out

    def _seq(self, event_id: str | None) -> int | BrokenFrame:
        parsed = parse_event_id(event_id) if event_id is not None else None
        if parsed is None:
            shown = "no id" if event_id is None else f"id {event_id[:80]!r}"
            return self._broken(
                f"after seq {self.last} an event came with {shown}; every event of a "
                "resumable stream carries id: <runId>:<seq>"
            )
        run_id, seq = parsed
        if run_id != self.run_id:
            return self._broken(
                f"event id {str(event_id)[:80]!r} names run {run_id[:80]!r}, not the run "
                f"{self.run_id[:80]!r} this stream is for"
            )
        if seq > self.last + 1:
            return self._broken(
                f"the events jumped from seq {self.last} to seq {seq} in run "
                f"{self.run_id[:80]!r}: {seq - self.last - 1} event(s) were lost"
            )
        return seq

    @staticmethod
    def _broken(what: str) -> BrokenFrame:
        return BrokenFrame(ProtocolViolation(RULE_IDS, what + ".", where=_WHERE))

    # -- the rejoin ---------------------------------------------------------
    @property
    def events_url(self) -> str:
        return run_url(self.url, self.thread_id, self.run_id, "events")

    @property
    def stop_url(self) -> str:
        return run_url(self.url, self.thread_id, self.run_id, "stop")

    def rejoin_headers(self) -> dict[str, str]:
        """What a rejoin request adds: the opt-in, and where it left off."""
        headers = {RESUMABLE_HEADER: "1"}
        if self.last:
            headers["Last-Event-ID"] = f"{self.run_id}:{self.last}"
        return headers

    def next_delay(self) -> float | None:
        """Seconds to wait before the next rejoin, or ``None``: give up (the
        attempts or the deadline are spent). Counts the attempt."""
        now = time.monotonic()
        if self._cut_at is None:
            self._cut_at = now
        policy = self.policy
        if self._failures >= policy.attempts:
            return None
        delay = min(policy.max_delay, policy.first_delay * (1 << self._failures))
        if now + delay - self._cut_at > policy.deadline:
            return None
        self._failures += 1
        return delay

    def gave_up(self, why: str) -> str:
        return (
            f"the run {self.run_id[:80]!r} at {self.url} was cut after seq {self.last} and "
            f"could not be rejoined ({why}, after {self._failures} attempt(s)); the run ends "
            f"truncated ({RULE_RECONNECT})"
        )
