"""The resumable binding's client half, sans-I/O: what a cut run rejoins with.

The opt-in extension (docs/resumable.md) numbers a run's SSE events
``id: <runId>:<seq>`` and lets a client that lost the connection read the run
again from ``GET <path>/threads/<threadId>/runs/<runId>/events`` with
``Last-Event-ID``. :class:`RejoinState` decides, for the client's two faces
(async and sync), where to rejoin, with which header, how long to wait before
the next attempt, and when the run is whole; what a received event is — the
next one, one already delivered (dropped: the verifier and the reducer never see
an event twice, PROC-7), or a broken promise — is ``wire/_event_ids.py``'s, the
judgement ``verify`` makes of a capture too.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

from ..wire._event_ids import RESUMABLE_HEADER, EventSeq, parse_event_id
from ..wire._framing import BrokenFrame
from ..wire._lifecycle import ends_run

__all__ = [
    "RESUMABLE_HEADER",
    "RejoinPolicy",
    "RejoinState",
    "parse_event_id",
    "run_url",
]

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


def run_url(url: str, thread_id: str, run_id: str, tail: str) -> str:
    """``<path>/threads/<threadId>/runs/<runId>/<tail>`` beside a run endpoint ``url``."""
    base = url.split("?", 1)[0].rstrip("/")
    return f"{base}/threads/{quote(thread_id, safe='')}/runs/{quote(run_id, safe='')}/{tail}"


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
        self.ended = False
        self.rejoins = 0
        self._seq = EventSeq(self.run_id)
        self._failures = 0
        self._cut_at: float | None = None

    @property
    def last(self) -> int:
        return self._seq.last.get(self.run_id, 0)

    @property
    def dropped(self) -> int:
        return len(self._seq.replayed)

    @property
    def broken(self) -> bool:
        return self._seq.broken

    @staticmethod
    def confirms(headers: Mapping[str, str]) -> bool:
        return str(headers.get(RESUMABLE_HEADER.lower(), "")).strip() == "1"

    def admit(self, frames: list[Any], ids: list[str | None]) -> list[Any]:
        """The frames to hand the pipeline, out of what one chunk completed
        (:meth:`EventSeq.admit`); an event delivered restarts the rejoin count."""
        before = self.last
        out = self._seq.admit(frames, ids)
        if self.last != before:
            self._failures = 0
            self._cut_at = None
            self.ended = self.ended or any(
                ends_run(f) for f in out if not isinstance(f, BrokenFrame)
            )
        return out

    # -- the rejoin ---------------------------------------------------------
    @property
    def events_url(self) -> str:
        return run_url(self.url, self.thread_id, self.run_id, "events")

    @property
    def stop_url(self) -> str:
        return run_url(self.url, self.thread_id, self.run_id, "stop")

    def rejoin_headers(self) -> dict[str, str | bytes]:
        """What a rejoin request adds: the opt-in, and where it left off.

        ``Last-Event-ID`` goes as UTF-8 bytes, as the stream gave the id (a str
        header must be ASCII), without the spaces and tabs a ``runId`` may start
        with: HTTP strips them from a header's value, and the server matches the
        id without them (RESUME-5)."""
        headers: dict[str, str | bytes] = {RESUMABLE_HEADER: "1"}
        if self.last:
            run_id = self.run_id.lstrip(" \t")
            headers["Last-Event-ID"] = f"{run_id}:{self.last}".encode()
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
