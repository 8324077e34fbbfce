"""Recorded runs: what a mock agent replays, and which one answers a request.

Sans-I/O (files are read by :mod:`agui_tools.transport._captures`): a captured body, sniffed
and fed in chunks to :class:`RecordedEvents`, becomes :class:`RecordedRun` values — one per
response, or, with no input (``run --save``), one per top-level ``RUN_STARTED``;
:func:`runs_from_thread_export` rebuilds runs from an inspector ``thread.json``.
:class:`Matcher` picks the run answering a request and :func:`retarget` puts the request's
ids into it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Final, Literal, overload

import orjson

from .._errors import ProtocolViolation, UsageError
from ..wire._codec import parse_json
from ..wire._framing import BrokenFrame, FrameNote
from ..wire._lifecycle import RUN_ENDS
from ._capture import FrameStream

__all__ = [
    "MATCH_MODES",
    "EncodedEvents",
    "Matcher",
    "Miss",
    "RecordedEvents",
    "RecordedRun",
    "last_user_turn",
    "recorded_runs",
    "retarget",
    "runs_from_thread_export",
]

MatchMode = Literal["order", "last-user-message"]
MATCH_MODES: Final = ("order", "last-user-message")
_REPEATED: Final = ("type", "messageId", "toolCallId", "threadId", "runId", "role")
"""Fields whose values repeat across a run's events: kept once each (``sys.intern``)."""
_INTERNED_CHARS: Final = 128


@dataclass
class RecordedRun:
    """One recorded response: its events, and the input that asked for them.

    A ``status`` other than 200, or ``verbatim``, is replayed as recorded (status,
    ``content_type``, ``body``; a proxy recording's 409, 204 or redirect), with no events.
    """

    source: str
    events: Sequence[dict[str, Any]]
    """In order; a list, or as a capture keeps them (:class:`EncodedEvents`)."""
    input: dict[str, Any] | None = None
    status: int = 200
    body: bytes = b""
    content_type: str | None = "application/json"
    notes: list[str] = field(default_factory=list)
    """What was rebuilt rather than recorded (a thread export keeps no events)."""
    verbatim: bool = False
    location: str | None = None
    """A recorded redirect's ``Location`` header (proxy recordings keep it in meta.json)."""
    capture: str | None = None
    """The capture a run split out of one (``run --save``, a stream with no input) came
    from: its runs are one thread (``None``: a run on its own)."""

    @property
    def as_recorded(self) -> bool:
        """Replayed as the recorded HTTP answer (status, content type, body), not as events."""
        return self.verbatim or self.status != 200

    @property
    def thread_id(self) -> str | None:
        return _first_id(self.events, "threadId")

    @property
    def run_id(self) -> str | None:
        return _first_id(self.events, "runId")

    def gaps(self) -> list[float | None]:
        """The recorded gap before each event in seconds, from the events' ``timestamp``
        (ms), as recorded: negative when stamped earlier than the event before, ``None``
        for the first stamped event and for one without a timestamp (0 is a timestamp)."""
        out: list[float | None] = []
        previous: float | None = None
        for event in self.events:
            stamp = event.get("timestamp")
            now = stamp if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) else None
            gap = (now - previous) / 1000 if now is not None and previous is not None else None
            out.append(gap if gap is None or gap == gap else None)  # NaN: no gap
            if now is not None:
                previous = now
        return out

    def delays(self, max_gap: float | None = None) -> list[float]:
        """Seconds to wait before each event, from :meth:`gaps`.

        An event without a timestamp, the first, or one stamped earlier than the
        event before it waits nothing: timing is only what was recorded. No wait
        is longer than ``max_gap`` (``None``: uncapped).
        """
        out = []
        for gap in self.gaps():
            wait = max(gap, 0.0) if gap is not None else 0.0
            out.append(min(wait, max_gap) if max_gap is not None else wait)
        return out


def _first_id(events: Sequence[Mapping[str, Any]], key: str) -> str | None:
    for event in events:
        if event.get("type") == "RUN_STARTED":
            value = event.get(key)
            return value if isinstance(value, str) else None
    return None


class EncodedEvents(Sequence[dict[str, Any]]):
    """A run's recorded events, each kept as the JSON text it was read from and parsed
    again when read: a third of the memory the parsed objects take, and a mock reads a
    run's events only to serve it. An event that came parsed (a binary frame, an element
    of a JSON array) is kept as it came."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[str | bytes | dict[str, Any]] = ()) -> None:
        self._items = list(items)

    def append(self, event: dict[str, Any], text: str | bytes | None = None) -> None:
        """Keep ``event``: as ``text``, the JSON text it was read from, when there is one."""
        if text is not None:
            self._items.append(text)
            return
        for key in _REPEATED:  # one string for a value every event of a run repeats
            value = event.get(key)
            if isinstance(value, str) and len(value) <= _INTERNED_CHARS:
                event[key] = sys.intern(value)
        self._items.append(event)

    def part(self, start: int, stop: int) -> EncodedEvents:
        """The events ``start:stop``, as kept (nothing parsed)."""
        return EncodedEvents(self._items[start:stop])

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [_parsed(item) for item in self._items[index]]
        return _parsed(self._items[index])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return map(_parsed, self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"EncodedEvents({len(self._items)} events)"


def _parsed(item: str | bytes | dict[str, Any]) -> dict[str, Any]:
    if isinstance(item, (str, bytes)):
        event: dict[str, Any] = orjson.loads(item)
        return event
    return item


class RecordedEvents:
    """Sans-I/O: the events of one captured body, kept as its chunks are read (never its text).
    The first unreadable event ends the keeping; :meth:`close` raises it, after the UTF-8 check.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.events = EncodedEvents()
        self.starts: list[int] = []
        """Where each run begins: a capture with no input is split at its top-level
        ``RUN_STARTED`` events (``run --save`` joins every run of a command)."""
        self.frames = FrameStream()
        self._open_runs: list[Any] = []
        self._failure: UsageError | None = None

    def feed(self, chunk: bytes) -> None:
        try:
            frames = self.frames.feed(chunk)
        except ProtocolViolation as exc:
            raise UsageError(f"{self.source}: {exc.explanation}", rule=exc.rule) from None
        self._take(frames)

    def close(self) -> EncodedEvents:
        """Every event of the body; :class:`UsageError` naming the source when it is no
        stream, or an event cannot be read."""
        try:
            frames = self.frames.close()
        except ProtocolViolation as exc:
            raise UsageError(f"{self.source}: {exc.explanation}", rule=exc.rule) from None
        self._take(frames)
        if self._failure is not None:
            raise self._failure
        return self.events

    def _take(self, frames: list[Any]) -> None:
        if self._failure is not None:
            return
        try:
            for frame in frames:
                self._event(frame)
        except UsageError as exc:
            self._failure = exc
            self.events, self.starts = EncodedEvents(), []  # nothing of it is replayed

    def _event(self, frame: Any) -> None:
        source, events = self.source, self.events
        if isinstance(frame, FrameNote):
            return  # a dropped frame (an unknown binary arm): nothing to replay
        if isinstance(frame, BrokenFrame):
            raise UsageError(
                f"{source}: event {len(events)} cannot be read ({frame.violation.explanation}); "
                "a mock replays events, and this capture breaks off there",
                rule=frame.violation.rule,
            )
        text = frame if isinstance(frame, (str, bytes)) else None
        if text is not None:
            try:
                frame = parse_json(frame, len(events))
            except ProtocolViolation as exc:
                raise UsageError(
                    f"{source}: event {len(events)}: {exc.explanation}", rule=exc.rule
                ) from None
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            raise UsageError(
                f"{source}: event {len(events)} is not an event object with a type "
                f"(a JSON {type(frame).__name__})",
                rule="PROC-2",
            )
        self._split_at(frame["type"], frame.get("runId"), len(events))
        events.append(frame, text)

    def _split_at(self, kind: str, run_id: Any, index: int) -> None:
        open_runs = self._open_runs
        if (kind == "RUN_STARTED" and not open_runs) or not self.starts:
            self.starts.append(index)
        if kind == "RUN_STARTED":
            open_runs.append(run_id)
        elif kind in RUN_ENDS and open_runs:
            if kind == "RUN_ERROR":
                open_runs.clear()  # RUN_ERROR ends the stream's run, nested ones with it
            elif run_id in open_runs:
                del open_runs[open_runs.index(run_id) :]
            else:
                open_runs.pop()


def recorded_runs(
    data: bytes | RecordedEvents,
    *,
    source: str,
    run_input: Mapping[str, Any] | None = None,
    split: bool | None = None,
) -> list[RecordedRun]:
    """The recorded runs of one captured body (``data``, or a :class:`RecordedEvents` fed).

    With ``run_input`` it is one response; without, it is split at top-level ``RUN_STARTED``
    (``split`` overrides). :class:`~agui_tools.UsageError` naming ``source`` when no stream or no event.
    """
    if isinstance(data, bytes):
        reader = RecordedEvents(source)
        reader.feed(data)
    else:
        reader = data
    events = reader.close()
    cut = reader.frames.unfinished_at, reader.frames.size
    if not events:
        raise UsageError(f"{source}: the capture holds no event: nothing to replay")
    if split is None:
        split = run_input is None
    if not split:
        one = RecordedRun(source, events, dict(run_input) if run_input is not None else None)
        _note_cut(one, *cut)
        return [one]
    bounds = [*reader.starts, len(events)]
    runs = [events.part(start, stop) for start, stop in pairwise(bounds)]
    many = len(runs) > 1
    recorded = [
        RecordedRun(f"{source} run {n}" if many else source, part, capture=source)
        for n, part in enumerate(runs, 1)
    ]
    _note_cut(recorded[-1], *cut)
    return recorded


def _note_cut(run: RecordedRun, start: int | None, size: int) -> None:
    """A capture that stops inside an event: that unfinished event is not replayed — said
    in ``notes`` (the mock prints them at start-up), never dropped in silence (TRANS-2)."""
    if start is not None:
        run.notes.append(
            f"the capture stops inside an event at byte {start} of {size} (TRANS-2): "
            "that unfinished event is not replayed"
        )


def retarget(
    events: Iterable[Mapping[str, Any]],
    run_input: Mapping[str, Any],
    *,
    thread_id: str | None,
    run_id: str | None,
) -> list[dict[str, Any]]:
    """The recorded events with the request's ``threadId``, ``runId`` and
    ``RUN_STARTED.input`` in place of the recorded ones (a subagent's run id stays its own);
    message and call ids stay as recorded.
    """
    new_thread, new_run = run_input.get("threadId"), run_input.get("runId")
    out = []
    for event in events:
        copy = dict(event)
        if thread_id is not None and copy.get("threadId") == thread_id:
            copy["threadId"] = new_thread
        for key in ("runId", "parentRunId"):
            if run_id is not None and copy.get(key) == run_id:
                copy[key] = new_run
        if copy.get("type") == "RUN_STARTED" and "input" in copy:
            copy["input"] = dict(run_input)
        out.append(copy)
    return out


def last_user_turn(messages: Sequence[Any]) -> tuple[bytes, int] | None:
    """The last user message's content (canonical JSON) and how many messages follow it.

    ``None`` when the history has no user message. The count tells a turn's
    first run from its continuation after a tool result: both end with the same
    user message, the continuation with the call and its answer after it.
    """
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if isinstance(message, Mapping) and message.get("role") == "user":
            content = orjson.dumps(message.get("content"), option=orjson.OPT_SORT_KEYS)
            return content, len(messages) - 1 - position
    return None


@dataclass
class Miss:
    """No recorded run answers the request: the status and the problem to say."""

    status: int
    message: str


class Matcher:
    """Which recorded run answers the next request.

    ``order``: in turn, then :class:`Miss` (404). ``last-user-message``: the run whose input's
    last user message (and what follows it) is the same; several in turn. No user message is a
    422 miss, no match a 404.
    """

    def __init__(self, runs: Sequence[RecordedRun], mode: MatchMode = "order") -> None:
        if mode not in MATCH_MODES:
            raise UsageError(f"match mode {mode!r}: use one of {', '.join(MATCH_MODES)}")
        if not runs:
            raise UsageError("a mock needs at least one recorded run")
        self.runs = list(runs)
        self.mode = mode
        self.served = 0
        self._next = 0
        self._keys: dict[tuple[bytes, int], list[int]] = {}
        self._turns: dict[tuple[bytes, int], int] = {}
        if mode == "last-user-message":
            missing = [r.source for r in runs if r.input is None]
            if missing:
                raise UsageError(
                    f"--match last-user-message needs each run's input, and "
                    f"{_listed(missing)} kept none (a plain stream file): record with "
                    "`agui-tools proxy --record DIR`, export the inspector's run-N.input.json "
                    "beside run-N.sse, or match in order"
                )
            for n, run in enumerate(runs):
                assert run.input is not None
                key = last_user_turn(run.input.get("messages") or [])
                if key is None:
                    raise UsageError(
                        f"{run.source}: its input has no user message: --match "
                        "last-user-message cannot tell when to serve it"
                    )
                self._keys.setdefault(key, []).append(n)

    def choose(self, run_input: Mapping[str, Any], *, take: bool = True) -> RecordedRun | Miss:
        """The run that answers ``run_input``; ``take=False``: only which, none counted served."""
        if self.mode == "order":
            if self._next >= len(self.runs):
                return Miss(
                    404,
                    f"no recorded run left: the mock replays {len(self.runs)} run(s) in order "
                    "and has served them all; restart it, or match by --match last-user-message",
                )
            run = self.runs[self._next]
            if take:
                self._next += 1
                self.served += 1
            return run
        key = last_user_turn(run_input.get("messages") or [])
        if key is None:
            return Miss(
                422,
                "the request's messages hold no user message: with --match last-user-message "
                "a recorded run is chosen by the last user message",
            )
        candidates = self._keys.get(key)
        if not candidates:
            text = key[0].decode()
            known = sorted({k[0].decode() for k in self._keys})
            return Miss(
                404,
                f"no recorded run's input ends with the user message {_short(text)} followed "
                f"by {key[1]} message(s); the recorded last user messages: "
                f"{', '.join(_short(k) for k in known[:5])}{' …' if len(known) > 5 else ''}",
            )
        turn = self._turns.get(key, 0)
        if take:
            self._turns[key] = turn + 1
            self.served += 1
        return self.runs[candidates[min(turn, len(candidates) - 1)]]

    @property
    def unused(self) -> int:
        """Recorded runs no request has been given (in order: those after the last served)."""
        if self.mode == "order":
            return len(self.runs) - self._next
        return sum(max(len(c) - self._turns.get(k, 0), 0) for k, c in self._keys.items())


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def _listed(names: Sequence[str]) -> str:
    shown = ", ".join(names[:3])
    return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")


# -- the inspector's thread export -----------------------------------------------------------


def runs_from_thread_export(document: Mapping[str, Any], *, source: str) -> list[RecordedRun]:
    """The runs of an inspector ``thread.json``, their streams rebuilt from the thread.

    Run *k* added what the next input (or the final messages) holds beyond its own input, less
    the frontend's user messages and answers; those are emitted whole, ending as the run ended.
    A tool message after the run's last assistant message is taken for the frontend's (export
    ``run-N.sse`` for the exact stream). Refused runs are left out.
    """
    runs = document.get("runs")
    if not isinstance(runs, list):
        raise UsageError(f"{source}: not an inspector thread export (no runs array)")
    kept = [
        r
        for r in runs
        if isinstance(r, Mapping)
        and isinstance(r.get("input"), Mapping)
        and r.get("httpStatus") in (None, 200)
    ]
    if not kept:
        raise UsageError(f"{source}: the thread export holds no run that was served")
    final = document.get("messages")
    out = []
    for n, run in enumerate(kept):
        run_input = run["input"]
        after = kept[n + 1]["input"].get("messages") if n + 1 < len(kept) else final
        events, notes = _rebuilt(run, run_input, after if isinstance(after, list) else [])
        label = f"{source} run {run.get('run', n + 1)}"
        out.append(RecordedRun(label, events, dict(run_input), notes=notes))
    return out


def _rebuilt(
    run: Mapping[str, Any], run_input: Mapping[str, Any], after: Sequence[Any]
) -> tuple[list[dict[str, Any]], list[str]]:
    thread_id, run_id = run_input.get("threadId"), run.get("runId") or run_input.get("runId")
    before = {m.get("id") for m in run_input.get("messages") or () if isinstance(m, Mapping)}
    frontend = {t.get("name") for t in run_input.get("tools") or () if isinstance(t, Mapping)}
    calls: dict[Any, Any] = {}
    added = [m for m in after if isinstance(m, Mapping) and m.get("id") not in before]
    # the frontend answers once the stream ended: after the run's last assistant message
    last_said = max((i for i, m in enumerate(added) if m.get("role") == "assistant"), default=-1)
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id}]
    notes: list[str] = ["rebuilt from the thread export: one delta per message, no timestamps"]
    for position, message in enumerate(added):
        role, ident = message.get("role"), message.get("id")
        if role == "assistant":
            content = message.get("content")
            if isinstance(content, str) and content:
                events += [
                    {"type": "TEXT_MESSAGE_START", "messageId": ident, "role": "assistant"},
                    {"type": "TEXT_MESSAGE_CONTENT", "messageId": ident, "delta": content},
                    {"type": "TEXT_MESSAGE_END", "messageId": ident},
                ]
            for call in message.get("toolCalls") or ():
                function = call.get("function") or {}
                calls[call.get("id")] = function.get("name")
                events.append(
                    {
                        "type": "TOOL_CALL_START",
                        "toolCallId": call.get("id"),
                        "toolCallName": function.get("name"),
                        "parentMessageId": ident,
                    }
                )
                if function.get("arguments"):
                    events.append(
                        {
                            "type": "TOOL_CALL_ARGS",
                            "toolCallId": call.get("id"),
                            "delta": function["arguments"],
                        }
                    )
                events.append({"type": "TOOL_CALL_END", "toolCallId": call.get("id")})
        elif role == "tool":
            call_id = message.get("toolCallId")
            if call_id not in calls:
                continue  # the frontend's answer to an earlier run's call
            if calls[call_id] in frontend or position > last_said:
                continue  # the frontend's answer to a call this run left it
            events.append(
                {
                    "type": "TOOL_CALL_RESULT",
                    "messageId": ident,
                    "toolCallId": message.get("toolCallId"),
                    "content": message.get("content"),
                    "role": "tool",
                }
            )
        elif role != "user":
            notes.append(f"a {role} message ({ident}) is not rebuilt")
    error = run.get("error")
    if run.get("status") == "error" or isinstance(error, Mapping):
        failure = error if isinstance(error, Mapping) else {}
        events.append(
            {"type": "RUN_ERROR", "message": str(failure.get("message") or "the run failed")}
            | ({"code": failure["code"]} if isinstance(failure.get("code"), str) else {})
        )
    else:
        finished: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id}
        if isinstance(run.get("outcome"), Mapping):
            finished["outcome"] = dict(run["outcome"])
        events.append(finished)
    return events, notes
