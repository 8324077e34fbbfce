"""The consumer pipeline: every stage, in the specification's order.

::

    producer → compatibility boundary → middleware → enforcement
             → chunk expansion → verification → application

(``basic/processing`` "Where middleware sits", PROC-7.) The order is the same on
every path — live SSE, a captured file, a replay — because every path feeds
this one object. Sans-I/O: feed it JSON texts or parsed objects, take verified
events out.

>>> pipe = ConsumerPipeline()
>>> [e["type"] for e in pipe.feed(b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}')]
['RUN_STARTED']
>>> [e["type"] for e in pipe.feed({"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "hi"})]
['TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT']
>>> [e["type"] for e in pipe.feed({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})]
['TEXT_MESSAGE_END', 'RUN_FINISHED']
>>> pipe.close().runs[0].status
'success'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from .._errors import LimitExceeded, ProtocolViolation, ProtocolWarning, UsageError
from ._codec import Decoder, parse_json
from ._enforce import Enforcer
from ._expand import Expander
from ._framing import BrokenFrame, FrameNote
from ._kinds import CHUNK_TYPES, WireEvent
from ._verify import Limits, RunSummary, Verifier

__all__ = ["ConsumerPipeline", "Middleware", "StreamResult"]


class Middleware(Protocol):
    """Anything installed to translate, observe or rewrite the stream (PROC-7).

    Called per raw event after the compatibility boundary and before enforcement; returns the
    events to pass on (none drops, several split) and may include :class:`ProtocolWarning` objects
    (a lossy translation MUST warn, VER-3). It must handle chunks and triads alike.
    """

    def __call__(self, event: WireEvent) -> Iterable[WireEvent | ProtocolWarning]: ...


@dataclass
class StreamResult:
    """The verdict on a whole stream, once it has ended.

    ``outcome`` follows the official fixture convention: ``"failed"`` means
    the consumer rejected the stream (``error`` says why); a producer's
    ``RUN_ERROR`` is delivered, not a rejection, and shows in ``runs``.
    """

    outcome: str
    error: ProtocolViolation | None
    runs: list[RunSummary]
    warnings: list[ProtocolWarning]
    events: int
    delivered: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def completed(self) -> bool:
        return self.outcome == "completed"


class ConsumerPipeline:
    """The conforming consumer's pipeline for one stream.

    Args:
        run_input: the ``RunAgentInput`` (wire dict) the stream answers; gives
            the thread id every run must carry, the advertised frontend tools
            (FE-2/FE-3) and the history results are judged against.
        strict: make the beyond-the-official-client tool-call checks
            violations instead of warnings.
        middleware: callables run after the compatibility boundary and before
            enforcement, in order.
        limits: resource limits (:class:`~agui_tools.wire._verify.Limits`).
        on_warning: called with each warning as it happens.
    """

    def __init__(
        self,
        *,
        run_input: Mapping[str, Any] | None = None,
        strict: bool = False,
        middleware: Sequence[Middleware] = (),
        limits: Limits | None = None,
        on_warning: Callable[[ProtocolWarning], None] | None = None,
        enforcer: Enforcer | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.warnings: list[ProtocolWarning] = []
        self._on_warning = on_warning
        self._decoder = Decoder(enforcer, max_depth=self.limits.max_depth)
        self._enforce = self._decoder.enforcer.event
        self._middleware = tuple(middleware)
        tools = (run_input or {}).get("tools") or ()
        self.verifier = Verifier(
            strict=strict,
            thread_id=(run_input or {}).get("threadId"),
            frontend_tools=[t["name"] for t in tools],
            history=(run_input or {}).get("messages") or (),
            limits=self.limits,
            on_warning=self.record_warning,
        )
        self._expander = Expander(max_lanes=self.limits.max_lanes, owner_of=self.verifier.owner_of)
        self.index = -1
        self.delivered = 0
        self.error: ProtocolViolation | None = None
        self.partial: list[WireEvent] = []
        """Events of the failing frame that were verified before the violation."""
        self._closed = False

    # -- feeding -----------------------------------------------------------------

    def feed(self, frame: bytes | str | Mapping[str, Any]) -> list[WireEvent]:
        """Consume one event (JSON text or parsed object); return what to deliver.

        A :class:`~agui_tools.wire._framing.BrokenFrame` rejects the stream at its position. A
        :class:`ProtocolViolation` fails the pipeline for good; what was delivered stays (RUN-16).
        """
        if self.error is not None:
            raise self.error
        if self._closed:
            raise UsageError("feed() after close(): the stream has ended.")
        if isinstance(frame, FrameNote):
            self._note(frame, self.index + 1)
            return []
        self.index += 1
        index = self.index
        try:
            if isinstance(frame, (bytes, str)):
                if isinstance(frame, BrokenFrame):
                    raise frame.violation  # the framing layer's verdict, at this position
                if len(frame) > self.limits.max_event_bytes:
                    raise LimitExceeded(
                        "LIMIT",
                        f"an event of {len(frame)} bytes exceeds max_event_bytes="
                        f"{self.limits.max_event_bytes}.",
                        index=index,
                    )
                if self._middleware:
                    return self._after_boundary(
                        parse_json(frame, index, enforcer=self._decoder.enforcer), index
                    )
                wire, warnings = self._decoder.decode(frame, index)
            else:
                if self._middleware:
                    return self._after_boundary(frame, index)
                wire, warnings = self._decoder.decode_object(frame, index)
            if warnings:
                self._notes(warnings)
            if wire is None:
                return []
            return self._expand_verify(wire, index)
        except ProtocolViolation as exc:
            self.error = exc if exc.index == index else exc.at(index)
            raise self.error from None

    def feed_many(
        self,
        frames: Iterable[bytes | str | Mapping[str, Any]],
        fold: Callable[[WireEvent, int], None] | None = None,
    ) -> list[WireEvent]:
        """Consume several events; return everything to deliver, in order (as :meth:`feed` each).

        The common case (clean event, no chunk stream) is inlined. On a violation, what this call
        delivered is in :attr:`partial`. ``fold(event, index)`` takes each event before the next is
        read; its :class:`ProtocolViolation` fails the stream *at that event* — folded after the
        batch, a state ``LIMIT`` then ``RUN_FINISHED`` would name the wrong event.
        """
        if self.error is not None:
            raise self.error
        if self._closed:
            raise UsageError("feed_many() after close(): the stream has ended.")
        if self._middleware:
            out: list[WireEvent] = []
            try:
                for frame in frames:
                    delivered = self.feed(frame)
                    if fold is not None:
                        for k, ev in enumerate(delivered):
                            try:
                                fold(ev, self.index)
                            except ProtocolViolation as exc:
                                self.partial = delivered[:k]
                                raise self.reject(exc) from None
                    out += delivered
            except ProtocolViolation:
                self.partial = out + self.partial
                raise
            return out
        out = []
        append = out.append
        loads = orjson.loads
        fast = self._decoder.fast_checks
        decode_object = self._decoder.decode_object
        lanes = self._expander.open_lanes
        expand = self._expander.feed
        verifier = self.verifier
        max_bytes = self.limits.max_event_bytes
        index = self.index
        try:
            for frame in frames:
                index += 1
                cls = frame.__class__
                if cls is dict:
                    obj: Any = frame
                elif cls is bytes or cls is str:
                    if len(frame) > max_bytes:
                        raise LimitExceeded(
                            "LIMIT",
                            f"an event of {len(frame)} bytes exceeds max_event_bytes={max_bytes}.",
                            index=index,
                        )
                    try:
                        obj = loads(frame)  # type: ignore[arg-type]
                    except orjson.JSONDecodeError:
                        obj = parse_json(frame, index, enforcer=self._decoder.enforcer)  # type: ignore[arg-type]  # raises
                elif isinstance(frame, BrokenFrame):
                    raise frame.violation  # the framing layer's verdict, at this position
                elif isinstance(frame, FrameNote):
                    index -= 1  # a note is not a frame of its own …
                    self._note(frame, index + 1)  # … unless it stands for a dropped one
                    index += frame.dropped
                    continue
                elif isinstance(frame, Mapping):
                    obj = dict(frame)
                else:
                    obj = parse_json(frame, index, enforcer=self._decoder.enforcer)
                try:
                    kind = obj["type"]
                    clean = fast[kind](obj)
                except (KeyError, TypeError, IndexError):
                    clean = False  # not an object, no type, an unknown or unhashable type
                if clean:
                    wire = obj
                else:
                    wire, warnings = decode_object(obj, index)
                    if warnings:
                        self._notes(warnings)
                    if wire is None:
                        continue
                    kind = wire["type"]
                if not lanes and kind not in CHUNK_TYPES:
                    verifier.dispatch[kind](wire, index)
                    if fold is not None:
                        fold(wire, index)
                    append(wire)
                    continue
                for ev in expand(wire, index):
                    verifier.dispatch[ev["type"]](ev, index)
                    if fold is not None:
                        fold(ev, index)
                    append(ev)
        except ProtocolViolation as exc:
            self.index = index
            self.delivered += len(out)
            self.partial = out
            self.error = exc if exc.index == index else exc.at(index)
            raise self.error from None
        self.index = index
        self.delivered += len(out)
        return out

    def reject(self, violation: ProtocolViolation) -> ProtocolViolation:
        """A stage after the pipeline (the reducer, keeping the state and message
        size limits) found the stream breaks a rule: the stream fails there, as if
        the pipeline had found it. Returns the violation to raise, at its position.
        """
        if self.error is None:
            self.error = violation if violation.index is not None else violation.at(self.index)
        return self.error

    def close(self) -> StreamResult:
        """The stream ended. A run still active is *truncated*: it gets no
        synthetic ``RUN_FINISHED`` and is never reported as a success (TRANS-2).
        """
        if not self._closed:
            self._closed = True
            if self.error is None:
                self.verifier.end_of_stream()
            else:
                self.verifier.rejected()
        return StreamResult(
            outcome="failed" if self.error is not None else "completed",
            error=self.error,
            runs=list(self.verifier.runs),
            warnings=list(self.warnings),
            events=self.index + 1,
            delivered=self.delivered,
        )

    @property
    def runs(self) -> list[RunSummary]:
        return self.verifier.runs

    # -- stages ------------------------------------------------------------------

    def _after_boundary(self, obj: Any, index: int) -> list[WireEvent]:
        translated, notes = self._decoder.boundary.translate(obj, index)
        if notes:
            self._notes(notes)
        events: list[Any] = [translated]
        for middleware in self._middleware:
            nxt: list[Any] = []
            for ev in events:
                for item in middleware(ev):
                    if isinstance(item, ProtocolWarning):
                        self.record_warning(item.at(index))
                    else:
                        nxt.append(item)
            events = nxt
        out: list[WireEvent] = []
        for ev in events:
            wire, warnings = self._enforce(ev, index)
            if warnings:
                self._notes(warnings)
            if wire is not None:
                out += self._expand_verify(wire, index)
        return out

    def _expand_verify(self, wire: WireEvent, index: int) -> list[WireEvent]:
        expanded = self._expander.feed(wire, index)
        verify = self.verifier.feed
        try:
            for ev in expanded:
                verify(ev, index)
        except ProtocolViolation:
            self.partial = expanded[: expanded.index(ev)]
            self.delivered += len(self.partial)
            raise
        self.delivered += len(expanded)
        return expanded

    def _note(self, note: FrameNote, index: int) -> None:
        """A framing layer's drop: the frame it stood for takes a stream position,
        a note about the next event's part does not."""
        self.record_warning(note.warning.at(index))
        if note.dropped:
            self.index = index

    def _notes(self, warnings: list[ProtocolWarning]) -> None:
        for w in warnings:
            self.record_warning(w)

    def record_warning(self, warning: ProtocolWarning) -> None:
        """Record a warning with the stream's others (stages downstream use this too)."""
        self.warnings.append(warning)
        if self._on_warning is not None:
            self._on_warning(warning)
