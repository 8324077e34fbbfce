"""The resumable binding's event ids, judged as events arrive (docs/resumable.md).

An opted-in stream numbers its events ``id: <runId>:<seq>``, seq 1, 2, 3 … per
run with no gap (RESUME-2); a client that rejoins drops what it already
delivered (RESUME-5). :class:`EventSeq` is that judgement, once, for everyone who
reads ids: the resumable client (one run, every event numbered) and ``verify``
(a capture of any runs, standard ones without ids beside them). An event already
seen is dropped and counted; a gap, or an id that is not the binding's, is a
:class:`~agui_tools.wire._framing.BrokenFrame` in the event's place — the run
ends rejected there, never silently repaired.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from .._errors import ProtocolViolation
from ._framing import BrokenFrame

__all__ = ["RESUMABLE_HEADER", "RULE_IDS", "EventSeq", "parse_event_id", "parse_seq"]

RESUMABLE_HEADER: Final = "Agui-Resumable"
"""The opt-in (RESUME-1): asked for on the run request, confirmed on its answer (``1``)."""
RULE_IDS: Final = "RESUME-2"
_WHERE: Final = "resumable stream"


_MAX_SEQ_DIGITS: Final = 18
"""A seq fits a signed 64-bit integer (the SQL logs keep it as ``BIGINT``)."""


def parse_seq(text: str) -> int | None:
    """A seq as the binding writes it — ASCII digits, no sign, no leading zero, so one
    number has one spelling (``0`` itself: the position before a run's first event,
    where a rejoin may start) — else ``None``."""
    if not text.isascii() or not text.isdecimal() or len(text) > _MAX_SEQ_DIGITS:
        return None
    if text.startswith("0") and text != "0":
        return None
    return int(text)


def parse_event_id(event_id: str) -> tuple[str, int] | None:
    """``<runId>:<seq>`` → ``(runId, seq)`` (split on the last ``:``: a run id may hold
    colons); ``None`` when it is not one (no colon, seq not a :func:`parse_seq` above 0)."""
    run_id, sep, text = event_id.rpartition(":")
    seq = parse_seq(text) if sep else None
    return (run_id, seq) if seq else None


def _shown(text: str) -> str:
    return repr(text[:80])


class EventSeq:
    """The seqs delivered so far, per run.

    ``run_id``: the one run a stream is for (the client) — then every event must
    carry its id; ``None``: any runs (a capture), and only an id naming the run in
    progress (its ``RUN_STARTED``'s ``runId``) is judged — an event without one, or
    with an id of a standard stream's own making, passes unjudged. ``last`` maps each run to its last
    delivered seq; ``replayed`` lists ``(runId, seq)`` of each event dropped as
    already delivered; ``broken`` is set once a violation took an event's place
    (nothing after it is handed on).
    """

    def __init__(self, run_id: str | None = None) -> None:
        self.run_id = run_id
        self.last: dict[str, int] = {}
        self.replayed: list[tuple[str, int]] = []
        self.broken = False
        self._current: str | None = None  # a capture: the run in progress

    def admit(self, frames: list[Any], ids: list[str | None]) -> list[Any]:
        """The frames to hand the pipeline, out of ``frames`` whose ``ids`` (each data
        frame's ``id`` field, in order; a trailing BrokenFrame has none) are given."""
        out: list[Any] = []
        for index, frame in enumerate(frames):
            if self.broken:
                break
            if isinstance(frame, BrokenFrame) or index >= len(ids):
                out.append(frame)
                continue
            if self.run_id is None and "RUN_STARTED" in frame:
                self._current = _started(frame, self._current)
            verdict = self._judge(ids[index])
            if verdict is True:
                out.append(frame)
            elif isinstance(verdict, BrokenFrame):
                self.broken = True
                out.append(verdict)
        return out

    def _judge(self, event_id: str | None) -> bool | BrokenFrame:
        """True: deliver; False: already delivered, drop; a BrokenFrame: refuse."""
        parsed = parse_event_id(event_id) if event_id is not None else None
        if self.run_id is None and (parsed is None or parsed[0] != self._current):
            return True  # not the binding's id: a capture's standard stream
        if parsed is None:
            shown = "no id" if event_id is None else f"id {_shown(event_id)}"
            return _broken(
                f"an event came with {shown}; every event of a resumable stream carries "
                "id: <runId>:<seq>"
            )
        run_id, seq = parsed
        if self.run_id is not None and run_id != self.run_id:
            return _broken(
                f"event id {_shown(str(event_id))} names run {_shown(run_id)}, not the run "
                f"{_shown(self.run_id)} this stream is for"
            )
        last = self.last.get(run_id, 0)
        if seq <= last:
            self.replayed.append((run_id, seq))
            return False
        if seq > last + 1:
            return _broken(
                f"the events jumped from seq {last} to seq {seq} in run {_shown(run_id)}: "
                f"{seq - last - 1} event(s) were lost"
            )
        self.last[run_id] = seq
        return True

    def report(self) -> dict[str, Any] | None:
        """What ``verify`` says of the ids: the runs numbered (their last seq) and the
        replayed events dropped; ``None`` when the stream carried no binding ids."""
        if not self.last and not self.replayed:
            return None
        return {
            "runs": dict(self.last),
            "replayed": [{"runId": run, "seq": seq} for run, seq in self.replayed],
        }


def _started(frame: Any, current: str | None) -> str | None:
    """The ``runId`` a ``RUN_STARTED`` frame opens (``current`` when it is none)."""
    try:
        event = orjson.loads(frame)
    except orjson.JSONDecodeError:
        return current
    if isinstance(event, dict) and event.get("type") == "RUN_STARTED":
        run_id = event.get("runId")
        return run_id if isinstance(run_id, str) else current
    return current


def _broken(what: str) -> BrokenFrame:
    return BrokenFrame(ProtocolViolation(RULE_IDS, what + ".", where=_WHERE))
