"""Chunk expansion: the compact ``*_CHUNK`` spelling becomes start/content/end.

A consumer expands chunks before verification and application code (CHUNK-1); this is
the only place chunks exist. Each owner — the parent (``None``) or a subagent invocation —
has one lane holding at most one open chunk stream, closed (its ``*_END`` synthesized) by
the rules of CHUNK-11: a chunk for another item in the lane; a message, tool-call, step,
state, custom or reasoning event in the lane (not ``RAW``, ``ACTIVITY_*``,
``REASONING_ENCRYPTED_VALUE``; ``SUBAGENT_STARTED`` opens a lane); an explicit event naming
the stream's id (CHUNK-3); a run-level event (every lane); its subagent's end (CHUNK-14).

An event's lane is its ``subagentRunId``, else its opener's (SUB-10, SUB-12), else the
parent's; a chunk with neither id nor tag takes the parent's open stream of its kind, else
the sole one — several is fatal (CHUNK-12). Synthesized events carry deltas, opener fields,
``metadata``, ``rawEvent`` and attribution, never the chunk's ``timestamp`` (CHUNK-15,
CHUNK-16). The closing rules are one method, :meth:`Expander.closures`, which the emitter
asks too, so both sides judge lanes alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from .._errors import LimitExceeded, ProtocolViolation, describe_value
from ._kinds import BY_CHUNK, CHUNK_TYPES, FAMILY, StreamedKind, WireEvent

__all__ = ["Expander"]


RUN_LEVEL: Final = frozenset({"RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "MESSAGES_SNAPSHOT"})
STAND_ASIDE: Final = frozenset(
    {"RAW", "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "REASONING_ENCRYPTED_VALUE", "SUBAGENT_STARTED"}
)
SUBAGENT_TERMINAL: Final = frozenset({"SUBAGENT_FINISHED", "SUBAGENT_ERROR"})
_CARRIED: Final = ("metadata", "rawEvent", "subagentRunId")


def _missing_opener(chunk: WireEvent, spec: StreamedKind) -> str | None:
    """What a chunk lacks to open an item (CHUNK-4, CHUNK-5, CHUNK-6), or ``None``."""
    for field in spec.first_chunk_fields:
        if chunk.get(field) is None:
            return field
    return None


class _Stream:
    """One open chunk stream: what its opener established."""

    __slots__ = (
        "chunk_type",
        "content",
        "end",
        "fields",
        "id_field",
        "item_id",
        "kind",
        "lane",
        "spec",
    )

    def __init__(
        self, spec: StreamedKind, item_id: str, lane: str | None, fields: dict[str, Any]
    ) -> None:
        self.spec = spec
        self.kind = spec.name
        self.item_id = item_id
        self.lane = lane
        self.fields = fields
        # the row's members the hot path reads, one attribute lookup away
        self.id_field = spec.id_field
        self.chunk_type = spec.chunk
        self.content = spec.content
        self.end = spec.end


class Expander:
    """Turns a stream of enforced events into one without chunks.

    ``feed(event, index)`` returns synthesized ends first, then the event or its expansion
    (:class:`ProtocolViolation` on a malformed chunk sequence); ``closures(event)`` asks which
    lanes it would close without closing them. ``owner_of(kind, id)`` — the verifier's —
    places untagged continuations in their opener's lane (SUB-10, SUB-12).
    """

    def __init__(
        self,
        *,
        max_lanes: int = 1_000,
        owner_of: Callable[[str, str], tuple[bool, str | None]] | None = None,
    ) -> None:
        self._lanes: dict[str | None, _Stream] = {}
        self._max_lanes = max_lanes
        self._owner_of = owner_of

    @property
    def open_streams(self) -> int:
        return len(self._lanes)

    @property
    def open_lanes(self) -> Mapping[str | None, object]:
        """The live lane table (read-only view for callers' fast paths): empty means
        no chunk stream is open, so a non-chunk event passes through unchanged."""
        return self._lanes

    def stream_in(self, lane: str | None) -> tuple[str, str] | None:
        """The chunk stream ``lane`` holds, as ``(kind, item id)`` — kind ``text``,
        ``tool`` or ``reasoning`` — or ``None`` when the lane holds none."""
        stream = self._lanes.get(lane)
        return None if stream is None else (stream.kind, stream.item_id)

    def closures(self, event: WireEvent) -> list[str | None]:
        """The lanes ``event`` would close, in :meth:`feed`'s order, without closing anything.

        Never raises on a schema-shaped event: a chunk :meth:`feed` would refuse closes nothing.
        """
        if not self._lanes:
            return []
        kind = event["type"]
        if kind in CHUNK_TYPES:
            return self._opening_closes(event)
        return self._closes(event, kind)

    def feed(self, event: WireEvent, index: int | None = None) -> list[WireEvent]:
        kind = event["type"]
        lanes = self._lanes
        if not lanes:
            if kind in CHUNK_TYPES:
                return self._chunk(event, index)
            return [event]
        if kind in CHUNK_TYPES:
            return self._chunk(event, index)
        out: list[WireEvent] = []
        for lane in self._closes(event, kind):  # a loop, not a comprehension: no cells here
            out.append(self._end(lanes.pop(lane)))
        out.append(event)
        return out

    # -- closing -----------------------------------------------------------

    def _closes(self, event: WireEvent, kind: str) -> list[str | None]:
        """The closing rules for an event that is not a chunk (see the module doc)."""
        lanes = self._lanes
        if kind in STAND_ASIDE:
            return []
        if kind in RUN_LEVEL:
            return list(lanes)
        if kind in SUBAGENT_TERMINAL:
            owner = event["subagentRunId"]
            return [owner] if owner in lanes else []
        closed: list[str | None] = []
        # an explicit event of a stream's own family naming the identifier it is
        # assembling ends the shorthand (a reasoning *span* id is another namespace)
        family = FAMILY.get(kind)
        if family is not None:
            for lane, stream in lanes.items():
                if stream.kind == family and event.get(stream.id_field) == stream.item_id:
                    closed.append(lane)
        # and any message/tool/step/state/custom/reasoning event closes its own lane
        own = self._lane_of(event, kind, family)
        if own in lanes and own not in closed:
            closed.append(own)
        return closed

    def _opening_closes(self, chunk: WireEvent) -> list[str | None]:
        """The lane a chunk would close by opening a new item there: its tag's."""
        spec = BY_CHUNK[chunk["type"]]
        kind, id_field = spec.name, spec.id_field
        if _missing_opener(chunk, spec) is not None:
            return []  # a continuation, or a first chunk feed() refuses (CHUNK-4..6)
        if self._assembling(kind, chunk[id_field]) is not None:
            return []  # it continues its item's open stream
        lane = chunk.get("subagentRunId")
        return [lane] if lane in self._lanes else []

    def _lane_of(self, event: WireEvent, kind: str, family: str | None) -> str | None:
        """The owner whose lane an explicit event arrives in: its tag, else (untagged
        continuations, SUB-10; tool-call starts, SUB-12) its opener's per the verifier, else the parent.
        """
        tag = event.get("subagentRunId")
        if tag is not None or family is None or self._owner_of is None:
            return tag
        if kind.endswith("_START"):
            parent = event.get("parentMessageId") if family == "tool" else None
            if parent is None:
                return None
            found, owner = self._owner_of("text", parent)
            return owner if found else None
        ident = event.get("toolCallId" if family == "tool" else "messageId")
        if ident is None or kind == "TOOL_CALL_RESULT":
            return None
        found, owner = self._owner_of(family, ident)
        return owner if found else None

    def _close_lane(self, lane: str | None) -> list[WireEvent]:
        stream = self._lanes.pop(lane, None)
        if stream is None:
            return []
        return [self._end(stream)]

    @staticmethod
    def _end(stream: _Stream) -> WireEvent:
        end: WireEvent = {"type": stream.end, stream.id_field: stream.item_id}
        if stream.lane is not None:
            end["subagentRunId"] = stream.lane
        return end

    # -- chunks --------------------------------------------------------------

    def _chunk(self, chunk: WireEvent, index: int | None) -> list[WireEvent]:
        if len(chunk) == 2:
            # the commonest chunk of all: {"type", "delta"} continuing the parent's
            # open stream of its kind — nothing to resolve, repeat or carry
            parent = self._lanes.get(None)
            delta = chunk.get("delta")
            if parent is not None and delta is not None and parent.chunk_type == chunk["type"]:
                return [{"type": parent.content, parent.id_field: parent.item_id, "delta": delta}]
        spec = BY_CHUNK[chunk["type"]]
        kind, id_field = spec.name, spec.id_field
        item_id = chunk.get(id_field)
        tag = chunk.get("subagentRunId")
        lanes = self._lanes
        stream: _Stream | None
        if item_id is not None:
            stream = self._assembling(kind, item_id)
            if stream is not None and tag is not None and tag != stream.lane:
                raise ProtocolViolation(
                    "SUB-11",
                    f"a continuation chunk is attributed to {tag!r} but the stream it continues "
                    f"was opened by {stream.lane or 'the parent agent'!r}.",
                    index=index,
                    path="/subagentRunId",
                    event_type=chunk["type"],
                    ids={id_field: item_id},
                )
            lane = stream.lane if stream is not None else tag
        elif tag is not None:
            lane = tag
            stream = lanes.get(lane)
            if stream is not None and stream.kind != kind:
                stream = None
        else:
            lane, stream = self._resolve(kind, chunk, index)

        out: list[WireEvent] = []
        if stream is None:
            # a first chunk: it opens an item (after closing whatever its lane held)
            missing = _missing_opener(chunk, spec)
            if missing is not None:
                raise ProtocolViolation(
                    spec.first_chunk_rule,
                    f"the first {chunk['type']} of an item must carry {missing}: no {kind} "
                    "chunk stream is open for it to continue, and a consumer must not invent one "
                    "(CHUNK-7).",
                    index=index,
                    path=f"/{missing}",
                    event_type=chunk["type"],
                )
            assert item_id is not None  # _missing_opener checked it
            out += self._close_lane(lane)
            if lane not in lanes and len(lanes) >= self._max_lanes:
                raise LimitExceeded(
                    "LIMIT",
                    f"more than max_lanes={self._max_lanes} chunk streams open at once.",
                    index=index,
                    event_type=chunk["type"],
                )
            fields = {f: chunk[f] for f in spec.opener_fields if f in chunk}
            stream = _Stream(spec, item_id, lane, fields)
            lanes[lane] = stream
            start: WireEvent = {"type": spec.start, id_field: item_id, **spec.start_fields}
            start.update(fields)
            self._carry(chunk, start)
            out.append(start)
            delta = chunk.get("delta")
            if delta is not None:
                content: WireEvent = {"type": stream.content, id_field: item_id, "delta": delta}
                self._carry(chunk, content)
                out.append(content)
            return out

        self._check_repeats(stream, chunk, index)
        delta = chunk.get("delta")
        if delta is None and "metadata" not in chunk:
            return out  # a bare continuation: nothing to add
        content = {"type": stream.content, id_field: stream.item_id, "delta": delta or ""}
        self._carry(chunk, content)
        out.append(content)
        return out

    def _assembling(self, kind: str, item_id: str) -> _Stream | None:
        """The open stream assembling ``item_id``, in whichever lane it is."""
        for stream in self._lanes.values():
            if stream.item_id == item_id and stream.kind == kind:
                return stream
        return None

    def _resolve(
        self, kind: str, chunk: WireEvent, index: int | None
    ) -> tuple[str | None, _Stream | None]:
        lanes = self._lanes
        parent = lanes.get(None)
        if parent is not None and parent.kind == kind:
            return None, parent
        candidates = [s for s in lanes.values() if s.kind == kind]
        if len(candidates) == 1:
            return candidates[0].lane, candidates[0]
        if len(candidates) > 1:
            raise ProtocolViolation(
                "CHUNK-12",
                f"an untagged {chunk['type']} without an identifier could continue "
                f"{len(candidates)} open streams in different lanes "
                f"({', '.join(repr(s.lane) for s in candidates)}) and none is the parent's; a "
                "producer running parallel subagents must attribute its continuations (CHUNK-13).",
                index=index,
                event_type=chunk["type"],
            )
        return None, None

    def _check_repeats(self, stream: _Stream, chunk: WireEvent, index: int | None) -> None:
        for field in stream.spec.opener_fields:
            if field not in chunk:
                continue
            value = chunk[field]
            established = stream.fields.get(field)
            if established is None and field == "role":
                established = "assistant"  # established by omission (CHUNK-10, TEXT-1)
            if value != established:
                opener = "omitted it" if field not in stream.fields else f"set {established!r}"
                if field == "role" and field not in stream.fields:
                    opener = "omitted it, which means 'assistant'"
                raise ProtocolViolation(
                    "CHUNK-10",
                    f"a continuation chunk repeats {field} with a value that does not match the open "
                    f"stream's {field}: the opener {opener}.",
                    index=index,
                    path=f"/{field}",
                    value=describe_value(value),
                    event_type=chunk["type"],
                    ids={stream.id_field: stream.item_id},
                )

    @staticmethod
    def _carry(chunk: WireEvent, target: WireEvent) -> None:
        for field in _CARRIED:
            if field in chunk:
                target[field] = chunk[field]
