"""The run log of the resumable binding (docs/resumable.md): a run's events by sequence.

A resumable run's events are appended here before they are sent, so a client
that lost its connection can rejoin from the next one, and another replica can
serve it. What a rejoin or a stop may be answered is judged here too, as data
(:func:`judge_rejoin`, :func:`judge_stop`): the logs only keep rows, the
transport only moves bytes.

Every log is synchronous and each call short; a log that touches a disk or a
network says so (``blocking``) and the server calls it off the event loop.
Times are passed in (``now``, seconds since the epoch) so that one clock — the
caller's — decides leases and retention.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Protocol

from .._text import shown as _shown
from ..wire._enforce import id_problem
from ..wire._event_ids import parse_seq

__all__ = [
    "STOP_OF_ENDED",
    "WORKER_DIED",
    "LogRefusal",
    "MemoryRunLog",
    "RunLog",
    "RunState",
    "judge_ids",
    "judge_rejoin",
    "judge_stop",
    "parse_after",
    "seen_by",
]

WORKER_DIED: Final = b'{"type":"RUN_ERROR","message":"the run\'s worker died","code":"WORKER_DIED"}'
"""The terminal event a run whose lease lapsed is closed with (RESUME-10)."""


@dataclass(frozen=True, slots=True)
class RunState:
    """One logged run, as a reader or a stop sees it."""

    owner: str
    """The worker (a process) running it: its lease is renewed by that worker only."""
    last_seq: int
    """The seq of the last event logged (0: none yet)."""
    lease_until: float
    """Past this time with no terminal event, the run's worker is presumed dead."""
    finished_at: float | None = None
    """When its terminal event was logged (``None``: still running)."""
    stop_requested: bool = False
    expired: bool = False
    """Its events were dropped after the retention (RESUME-8): a tombstone for 410."""
    started_by: str | None = None
    """The id of the principal that started it (``None``: the server's authorization
    named no one, and every caller it admits may rejoin and stop the run)."""

    @property
    def finished(self) -> bool:
        return self.finished_at is not None


class RunLog(Protocol):
    """What the resumable server needs of a run log. Ids are ``(threadId, runId)``."""

    blocking: bool
    """Calls touch a disk or a network: the server makes them off its event loop."""
    shared: bool
    """Other processes write it too: a reader looks for what they append."""
    notifies: bool
    """It tells :meth:`watch`'s callbacks of every append, other processes' too: a
    reader waits for the call rather than polling."""

    def watch(self, appended: Callable[[str, str], None]) -> Callable[[], None]:
        """Call ``appended(threadId, runId)`` — from a thread of the log's own — after
        any process commits events of that run; returns what stops the calls."""
        ...

    def begin(
        self,
        thread_id: str,
        run_id: str,
        owner: str,
        lease_until: float,
        started_by: str | None = None,
    ) -> bool:
        """Log a new run, started by the principal ``started_by``; ``False`` when the log
        already holds one by these ids."""
        ...

    def append(
        self,
        thread_id: str,
        run_id: str,
        first_seq: int,
        payloads: Sequence[bytes],
        *,
        finished_at: float | None = None,
    ) -> bool:
        """Append events numbered from ``first_seq``; ``finished_at`` when the last is
        terminal. ``False`` (nothing written) when the run was already closed — by a
        replica that found its lease lapsed: its worker must stop."""
        ...

    def state(self, thread_id: str, run_id: str) -> RunState | None: ...

    def read(self, thread_id: str, run_id: str, after: int, limit: int) -> list[bytes]:
        """Up to ``limit`` events with a seq greater than ``after``, in order."""
        ...

    def request_stop(self, thread_id: str, run_id: str) -> bool:
        """Record a stop for a running run (the running worker observes it); ``False``
        (nothing recorded) when the run is unknown or has ended."""
        ...

    def renew(
        self, owner: str, runs: Sequence[tuple[str, str]], lease_until: float
    ) -> list[tuple[str, str]]:
        """Extend the lease of ``runs`` — those ``owner`` is still writing (a run whose
        writer failed is left to lapse) — and say which of them a stop was asked of."""
        ...

    def reap(self, now: float) -> list[tuple[str, str]]:
        """Close every running run whose lease lapsed before ``now`` with
        :data:`WORKER_DIED`, once; the runs closed."""
        ...

    def expire(self, finished_before: float, forget_before: float) -> int:
        """Drop the events of runs finished before ``finished_before``, keeping a
        tombstone (a rejoin is 410, not 404) until ``forget_before``; how many runs
        expired now."""
        ...


# -- the judgements (sans-I/O) ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LogRefusal:
    """A rejoin or stop answered with an error (RESUME-7): status, rule, one line."""

    status: int
    rule: str
    message: str
    extra: dict[str, str] = field(default_factory=dict)

    def body(self, thread_id: str, run_id: str) -> dict[str, str]:
        return {
            "error": self.message,
            "rule": self.rule,
            "threadId": thread_id,
            "runId": run_id,
            **self.extra,
        }


_OWS: Final = " \t"
"""HTTP's optional whitespace, which a header's value loses at both ends."""


def parse_after(run_id: str, last_event_id: str | None, after: str | None) -> int | LogRefusal:
    """The seq a rejoin replays after: ``Last-Event-ID`` (``<runId>:<seq>``, split on
    the last ``:``) decides over ``?after=``; neither is 0 (from the first event).

    HTTP strips the spaces and tabs around a header's value (RFC 9110 §5.5), so a
    ``runId`` that starts with some is matched without them."""
    if last_event_id is not None:
        named, colon, text = last_event_id.strip(_OWS).rpartition(":")
        seq = parse_seq(text) if colon else None
        if seq is None:
            return LogRefusal(
                400,
                "RESUME-7",
                f"Last-Event-ID {_shown(last_event_id)}: expected '<runId>:<seq>' with seq "
                "a decimal integer without leading zeros",
            )
        if named != run_id.lstrip(_OWS):
            return LogRefusal(
                400,
                "RESUME-7",
                f"Last-Event-ID {_shown(last_event_id)} names run {_shown(named)}, "
                f"not run {_shown(run_id)}",
            )
        return seq
    if after is not None:
        position = parse_seq(after)
        if position is None:
            return LogRefusal(
                400,
                "RESUME-7",
                f"after={_shown(after)}: expected a decimal integer without leading zeros, "
                "the last seq received",
            )
        return position
    return 0


def judge_ids(thread_id: str, run_id: str) -> LogRefusal | None:
    """``404`` for ids no run can have — refused where run inputs enter (NUL, over
    :data:`~agui_tools.wire._enforce.MAX_ID_BYTES`) — answered without asking the log,
    which may not even hold them (PostgreSQL's ``text`` has no NUL)."""
    for name, value in (("threadId", thread_id), ("runId", run_id)):
        problem = id_problem(value)
        if problem is not None:
            return LogRefusal(404, "RESUME-7", f"no such run: the {name} {problem}")
    return None


def seen_by(state: RunState | None, caller: str | None) -> RunState | None:
    """``state`` as the principal ``caller`` may see it: a run another identity started
    is, to it, no run at all (404, never 403: its existence is not told, RESUME-5)."""
    if state is None or state.started_by is None or state.started_by == caller:
        return state
    return None


def judge_rejoin(
    state: RunState | None, after: int, now: float, retention: float
) -> LogRefusal | None:
    """Whether a rejoin after ``after`` can be served (``None``) or its refusal."""
    if state is None:
        return LogRefusal(
            404, "RESUME-7", "no such run in the log: never run here, or run without the opt-in"
        )
    if _expired(state, now, retention):
        return LogRefusal(
            410, "RESUME-8", f"the run's log has expired (kept {retention:g} s after its end)"
        )
    if after > state.last_seq:  # events are logged before they are sent: never seen
        return LogRefusal(
            400,
            "RESUME-7",
            f"seq {after} is beyond the log's last event, seq {state.last_seq}",
        )
    return None


STOP_OF_ENDED: Final = LogRefusal(
    409, "RESUME-6", "the run has already ended", extra={"status": "finished"}
)
"""A stop of a run that ended (RESUME-6)."""


def judge_stop(state: RunState | None, now: float, retention: float) -> LogRefusal | None:
    """Whether a stop is accepted (``None``: 202) or its refusal (RESUME-6)."""
    if state is None:
        return LogRefusal(404, "RESUME-6", "no such run in the log")
    if _expired(state, now, retention):
        return LogRefusal(410, "RESUME-8", "the run's log has expired; it ended long ago")
    if state.finished:
        return STOP_OF_ENDED
    return None


def _expired(state: RunState, now: float, retention: float) -> bool:
    return state.expired or (state.finished_at is not None and now - state.finished_at > retention)


# -- memory: the default ------------------------------------------------------------------


def _nothing() -> None:
    pass


@dataclass(slots=True)
class _Logged:
    state: RunState
    events: list[bytes] = field(default_factory=list)


class MemoryRunLog:
    """One process's run log: lost with the process (a rejoin after a restart is 404)."""

    blocking = False
    shared = False
    notifies = False

    def __init__(self) -> None:
        self._runs: dict[tuple[str, str], _Logged] = {}
        self._lock = threading.Lock()  # a log may be shared by servers in several threads
        # the keeper's rounds touch only what is due, never every run kept (a day of
        # tombstones): the runs still going, and the ended ones by when they ended
        self._running: set[tuple[str, str]] = set()
        self._ended: list[tuple[float, tuple[str, str]]] = []  # a heap, not yet expired
        self._expired: list[tuple[float, tuple[str, str]]] = []  # a heap of tombstones

    def _end(self, key: tuple[str, str], at: float) -> None:
        self._running.discard(key)
        heapq.heappush(self._ended, (at, key))

    def watch(self, appended: Callable[[str, str], None]) -> Callable[[], None]:
        return _nothing  # one process: its server wakes its own readers

    def begin(
        self,
        thread_id: str,
        run_id: str,
        owner: str,
        lease_until: float,
        started_by: str | None = None,
    ) -> bool:
        with self._lock:
            if (thread_id, run_id) in self._runs:
                return False
            state = RunState(owner, 0, lease_until, started_by=started_by)
            self._runs[thread_id, run_id] = _Logged(state)
            self._running.add((thread_id, run_id))
            return True

    def append(
        self,
        thread_id: str,
        run_id: str,
        first_seq: int,
        payloads: Sequence[bytes],
        *,
        finished_at: float | None = None,
    ) -> bool:
        with self._lock:
            logged = self._runs[thread_id, run_id]
            if logged.state.finished:
                return False
            if first_seq != logged.state.last_seq + 1:
                raise ValueError(f"seq {first_seq} does not follow {logged.state.last_seq}")
            logged.events.extend(payloads)
            logged.state = replace(
                logged.state, last_seq=len(logged.events), finished_at=finished_at
            )
            if finished_at is not None:
                self._end((thread_id, run_id), finished_at)
            return True

    def state(self, thread_id: str, run_id: str) -> RunState | None:
        logged = self._runs.get((thread_id, run_id))
        return None if logged is None else logged.state

    def read(self, thread_id: str, run_id: str, after: int, limit: int) -> list[bytes]:
        logged = self._runs.get((thread_id, run_id))
        return [] if logged is None else logged.events[after : after + limit]

    def request_stop(self, thread_id: str, run_id: str) -> bool:
        with self._lock:
            logged = self._runs.get((thread_id, run_id))
            if logged is None or logged.state.finished:
                return False
            logged.state = replace(logged.state, stop_requested=True)
            return True

    def renew(
        self, owner: str, runs: Sequence[tuple[str, str]], lease_until: float
    ) -> list[tuple[str, str]]:
        stops = []
        with self._lock:
            for key in runs:
                logged = self._runs.get(key)
                if logged is not None and logged.state.owner == owner and not logged.state.finished:
                    logged.state = replace(logged.state, lease_until=lease_until)
                    if logged.state.stop_requested:
                        stops.append(key)
        return stops

    def reap(self, now: float) -> list[tuple[str, str]]:
        closed = []
        with self._lock:
            for key in list(self._running):
                logged = self._runs[key]
                if logged.state.lease_until < now:
                    logged.events.append(WORKER_DIED)
                    logged.state = replace(
                        logged.state, last_seq=len(logged.events), finished_at=now
                    )
                    self._end(key, now)
                    closed.append(key)
        return closed

    def expire(self, finished_before: float, forget_before: float) -> int:
        count = 0
        with self._lock:
            while self._ended and self._ended[0][0] < finished_before:
                at, key = heapq.heappop(self._ended)
                logged = self._runs[key]
                if at < forget_before:
                    del self._runs[key]
                    continue
                logged.events = []
                logged.state = replace(logged.state, expired=True)
                heapq.heappush(self._expired, (at, key))
                count += 1
            while self._expired and self._expired[0][0] < forget_before:
                del self._runs[heapq.heappop(self._expired)[1]]
        return count
