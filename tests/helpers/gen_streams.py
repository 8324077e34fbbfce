"""Hypothesis strategies for whole, valid AG-UI streams, in two spellings.

``streams()`` simulates a conforming producer and draws one *logical* stream:
one or more runs on one thread, each an interleaving of text messages, tool
calls and their results, reasoning spans and reasoning messages, steps per
owner, subagent invocations with attributed work, reopens of closed items, and
standalone events. Every streamed item is drawn with a *form*:

* ``explicit`` — ``*_START`` / ``*_CONTENT`` / ``*_END``, the END placed
  wherever the producer chooses;
* ``chunk`` — the item is spelled as ``*_CHUNK`` events in the chunked
  rendering, and its END is *not the producer's to place*: the generator keeps
  a model of the consumer's chunk lanes, written from the specification
  (``basic/patterns/streaming`` "Closing a chunk stream", CHUNK-11), and puts
  the END in the explicit rendering exactly where the lane closes.

The result carries both renderings of the same stream:

* ``explicit`` — every item as a triad (what a consumer must deliver);
* ``chunked`` — chunk-form items as chunks, everything else identical.

So the chunked rendering must expand to exactly the explicit one (CHUNK-1).

Lane model (the generator's own, from the spec — not read from ``expand.py``):

* a lane is an owner (``None`` for the parent agent, else a ``subagentRunId``)
  and holds at most one open chunk stream;
* a first chunk opens its item in the lane of its tag, closing what the lane
  held; an item-opening event always carries its owner's tag here, so an
  item's lane is its owner;
* ``RAW``, ``ACTIVITY_SNAPSHOT``, ``ACTIVITY_DELTA``,
  ``REASONING_ENCRYPTED_VALUE`` and ``SUBAGENT_STARTED`` close nothing;
* ``RUN_STARTED``, ``RUN_FINISHED``, ``RUN_ERROR`` and ``MESSAGES_SNAPSHOT``
  close every lane, in the order the lanes were opened;
* ``SUBAGENT_FINISHED`` / ``SUBAGENT_ERROR`` close that subagent's lane;
* any other event closes the lane of its tag (the parent's when untagged) and
  any stream whose identifier it carries.

Id-less continuation chunks are drawn only when their referent is unique:
tagged, continuing the stream of the tag's lane; untagged, continuing the
parent's stream of its kind, or the sole open stream of its kind when the
parent has none (CHUNK-12). An untagged *explicit* continuation of a
subagent's item is drawn only when neither the parent's lane nor the owner's
lane holds a chunk stream, so which of the two lanes it "arrives in" — a point
the specification leaves to the attribution rules — cannot matter.

Every rendered event has a :class:`Note` saying what it is, so mutation
operators can find their targets and compute the verdict a conforming
consumer must reach.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from hypothesis import strategies as st

Event = dict[str, Any]
Draw = Callable[[st.SearchStrategy[Any]], Any]

THREAD_ID = "thread-1"

# kind → (START, CONTENT, END, CHUNK, id field)
KINDS: dict[str, tuple[str, str, str, str, str]] = {
    "text": (
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TEXT_MESSAGE_CHUNK",
        "messageId",
    ),
    "tool": ("TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_CHUNK", "toolCallId"),
    "reasoning": (
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_MESSAGE_CHUNK",
        "messageId",
    ),
}
START, CONTENT, END, CHUNK, ID = range(5)
KIND_OF_CHUNK = {spec[CHUNK]: kind for kind, spec in KINDS.items()}
# opener fields a continuation chunk may repeat (CHUNK-10)
REPEATABLE = {
    "text": ("role", "name"),
    "tool": ("toolCallName", "parentMessageId"),
    "reasoning": (),
}

# the spec's lane-closing classes (basic/patterns/streaming, CHUNK-11)
STAND_ASIDE = frozenset(
    {"RAW", "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "REASONING_ENCRYPTED_VALUE", "SUBAGENT_STARTED"}
)
RUN_LEVEL = frozenset({"RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "MESSAGES_SNAPSHOT"})
SUBAGENT_TERMINAL = frozenset({"SUBAGENT_FINISHED", "SUBAGENT_ERROR"})

ROLES = ("assistant", "user", "system", "developer")
TOOL_NAMES = ("search", "lookup", "write_file", "confirm")
STEP_NAMES = ("plan", "search", "write")
SUBAGENT_NAMES = ("researcher", "writer", "critic")

text_deltas = st.text(st.characters(codec="utf-8"), max_size=6)
arg_deltas = st.one_of(
    st.sampled_from(['{"q":', ' "x"', "}", "", "[1,", "2]", "{not json"]),
    text_deltas,
)
small_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=3)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=3,
)
metadata = st.none() | st.builds(lambda n: {"vendor.k": n}, st.integers(0, 3))
maybe_text = st.none() | text_deltas
maybe_args = st.none() | arg_deltas

# strategies are built once: validating a fresh one on every draw dominated generation time
_FLAGS: dict[tuple[int, int], st.SearchStrategy[bool]] = {}
_INDEXES: dict[int, st.SearchStrategy[int]] = {}


def _flag(p_true: int, p_false: int) -> st.SearchStrategy[bool]:
    key = (p_true, p_false)
    if key not in _FLAGS:
        _FLAGS[key] = st.sampled_from([True] * p_true + [False] * p_false)
    return _FLAGS[key]


def _index(n: int) -> st.SearchStrategy[int]:
    if n not in _INDEXES:
        _INDEXES[n] = st.integers(0, n - 1)
    return _INDEXES[n]


@dataclass(frozen=True)
class Note:
    """What one rendered event is, for mutation operators.

    ``what`` is one of ``run_started``, ``run_finished``, ``run_error``,
    ``late_run_error``, ``item`` (an explicit start/content/end), ``chunk``,
    ``result``, ``span_start``, ``span_end``, ``step_start``, ``step_end``,
    ``sub_start``, ``sub_end``, ``standalone``, ``snapshot``.
    """

    what: str
    run: int
    kind: str | None = None
    ident: str | None = None
    part: str | None = None  # start / content / end; first / cont for chunks
    owner: str | None = None  # the item's owner, or the event's tag for spans/steps
    synthesized: bool = False  # an END standing where a chunk lane closed
    reopen: bool = False
    lanes: tuple[tuple[str | None, str, str], ...] = ()  # chunks: (owner, kind, id) before it
    fields: tuple[tuple[str, Any], ...] = ()  # chunks: the item's opener fields


@dataclass
class ExpectedRun:
    run_id: str | None
    status: str
    pending: list[str]
    ended_by: str  # "finished" or "error"


@dataclass
class GeneratedStream:
    explicit: list[Event]
    chunked: list[Event]
    explicit_notes: list[Note]
    chunked_notes: list[Note]
    runs: list[ExpectedRun]

    def __repr__(self) -> str:  # readable falsifying examples
        lines = ["GeneratedStream(explicit=["]
        lines += [f"    {ev!r}," for ev in self.explicit]
        lines.append("], chunked=[")
        lines += [f"    {ev!r}," for ev in self.chunked]
        lines.append("])")
        return "\n".join(lines)


@dataclass
class _Item:
    kind: str
    ident: str
    owner: str | None
    fields: dict[str, Any]
    run: int
    open: bool = False
    form: str = "explicit"
    answered: bool = False


@dataclass
class _Span:
    ident: str
    owner: str | None


class _Builder:
    """A conforming producer plus the consumer's lane model, drawn step by step."""

    def __init__(self, draw: Draw, *, max_actions: int, subagents: bool) -> None:
        self.draw = draw
        self.max_actions = max_actions
        self.allow_subagents = subagents
        self.explicit: list[Event] = []
        self.chunked: list[Event] = []
        self.xnotes: list[Note] = []
        self.cnotes: list[Note] = []
        self.runs: list[ExpectedRun] = []
        self.counter = 0
        self.items: dict[tuple[str, str], _Item] = {}
        self.lanes: dict[str | None, _Item] = {}
        self.activities: list[tuple[str, str | None]] = []
        self.run = -1
        self._reset_run()

    def _reset_run(self) -> None:
        self.spans: dict[str, _Span] = {}
        # a dict, not a set: iteration order must not depend on hash seeds (reproducible draws)
        self.steps: dict[tuple[str | None, str], None] = {}
        self.subs: list[str] = []
        self.unannounced: str | None = None
        self.started: list[str] = []

    # -- drawing helpers ---------------------------------------------------------

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def flag(self, p_true: int = 1, p_false: int = 1) -> bool:
        return bool(self.draw(_flag(p_true, p_false)))

    def pick(self, options: list[Any]) -> Any:
        return options[self.draw(_index(len(options)))]

    def owners(self) -> list[str | None]:
        out: list[str | None] = [None, *self.subs]
        if self.unannounced is not None:
            out.append(self.unannounced)
        return out

    def tagged(self, ev: Event, owner: str | None) -> Event:
        if owner is not None:
            ev["subagentRunId"] = owner
        return ev

    def continuation_tag(self, owner: str | None) -> str | None:
        """The tag an explicit continuation of ``owner``'s item carries (maybe none)."""
        if owner is None:
            return None
        if None in self.lanes or owner in self.lanes:
            return owner  # see the module docstring: keep lane choice unambiguous
        return owner if self.flag(2, 1) else None

    # -- emission ------------------------------------------------------------------

    def lane_snapshot(self) -> tuple[tuple[str | None, str, str], ...]:
        return tuple((o, it.kind, it.ident) for o, it in self.lanes.items())

    def synth_end(self, owner: str | None) -> None:
        item = self.lanes.pop(owner, None)
        if item is None:
            return
        spec = KINDS[item.kind]
        end: Event = self.tagged({"type": spec[END], spec[ID]: item.ident}, owner)
        self.explicit.append(end)
        self.xnotes.append(
            Note("item", self.run, item.kind, item.ident, "end", item.owner, synthesized=True)
        )
        item.open = False

    def close_for(self, ev: Event) -> None:
        """Close the chunk lanes ``ev`` closes, per the spec's list."""
        kind = ev["type"]
        if kind in STAND_ASIDE:
            return
        if kind in RUN_LEVEL:
            for owner in list(self.lanes):
                self.synth_end(owner)
            return
        if kind in SUBAGENT_TERMINAL:
            self.synth_end(ev["subagentRunId"])
            return
        for owner, item in list(self.lanes.items()):
            if ev.get(KINDS[item.kind][ID]) == item.ident:
                self.synth_end(owner)
        self.synth_end(ev.get("subagentRunId"))

    def both(self, ev: Event, note: Note) -> None:
        self.close_for(ev)
        self.explicit.append(ev)
        self.xnotes.append(note)
        self.chunked.append(ev)
        self.cnotes.append(note)

    # -- streamed items ---------------------------------------------------------------

    def open_item(self, kind: str, reopen: _Item | None = None) -> None:
        spec = KINDS[kind]
        if reopen is not None:
            item = reopen
        else:
            owner = self.pick(self.owners())
            fields: dict[str, Any] = {}
            ident = ""
            if kind == "text":
                if self.flag(1, 2):
                    fields["role"] = self.pick(list(ROLES))
                if self.flag(1, 4):
                    fields["name"] = self.pick(["ann", "bob"])
                ident = self.fresh("m")
            elif kind == "tool":
                fields["toolCallName"] = self.pick(list(TOOL_NAMES))
                parents = [
                    i.ident for (k, _), i in self.items.items() if k == "text" and i.owner == owner
                ]
                if parents and self.flag(2, 1):
                    fields["parentMessageId"] = self.pick(parents)
                ident = self.fresh("c")
            else:
                # a span and the reasoning message inside it MAY share an identifier
                shareable = [
                    s.ident
                    for s in self.spans.values()
                    if s.owner == owner and ("reasoning", s.ident) not in self.items
                ]
                share = bool(shareable) and self.flag(1, 2)
                ident = self.pick(shareable) if share else self.fresh("r")
            item = _Item(kind, ident, owner, fields, self.run)
            self.items[(kind, ident)] = item
        if kind == "tool" and item.ident not in self.started:
            self.started.append(item.ident)
        item.run = self.run
        form = "chunk" if self.flag() else "explicit"
        meta = self.draw(metadata)
        delta = self.draw(maybe_args if kind == "tool" else maybe_text)
        carried: dict[str, Any] = {}
        if meta is not None:
            carried["metadata"] = meta
        if item.owner is not None:
            carried["subagentRunId"] = item.owner
        start: Event = {"type": spec[START], spec[ID]: item.ident}
        if kind == "reasoning":
            start["role"] = "reasoning"
        start.update(item.fields)
        start.update(carried)
        note = Note(
            "item", self.run, kind, item.ident, "start", item.owner, reopen=reopen is not None
        )
        if form == "explicit":
            self.both(start, note)
            item.open, item.form = True, "explicit"
            if delta is not None:
                self.emit_content(item, delta)
            return
        chunk: Event = {"type": spec[CHUNK], spec[ID]: item.ident, **item.fields, **carried}
        if delta is not None:
            chunk["delta"] = delta
        lanes_before = self.lane_snapshot()
        self.synth_end(item.owner)  # a first chunk closes what its lane held
        self.chunked.append(chunk)
        self.cnotes.append(
            Note(
                "chunk",
                self.run,
                kind,
                item.ident,
                "first",
                item.owner,
                reopen=reopen is not None,
                lanes=lanes_before,
                fields=tuple(item.fields.items()),
            )
        )
        self.explicit.append(start)
        self.xnotes.append(note)
        if delta is not None:
            content: Event = {"type": spec[CONTENT], spec[ID]: item.ident, "delta": delta}
            content.update(carried)
            self.explicit.append(content)
            self.xnotes.append(Note("item", self.run, kind, item.ident, "content", item.owner))
        item.open, item.form = True, "chunk"
        self.lanes[item.owner] = item

    def emit_content(self, item: _Item, delta: str | None = None) -> None:
        spec = KINDS[item.kind]
        if delta is None:
            delta = self.draw(arg_deltas if item.kind == "tool" else text_deltas)
        ev: Event = {"type": spec[CONTENT], spec[ID]: item.ident, "delta": delta}
        meta = self.draw(metadata)
        if meta is not None:
            ev["metadata"] = meta
        self.tagged(ev, self.continuation_tag(item.owner))
        self.both(ev, Note("item", self.run, item.kind, item.ident, "content", item.owner))

    def continue_chunk(self, item: _Item) -> None:
        spec = KINDS[item.kind]
        lane = item.owner
        assert self.lanes.get(lane) is item
        others = [it for o, it in self.lanes.items() if it.kind == item.kind and it is not item]
        parent = self.lanes.get(None)
        untagged_ok = lane is None or ((parent is None or parent.kind != item.kind) and not others)
        variants = ["id", "id-untagged"] if lane is not None else ["id"]
        if lane is not None:
            variants.append("tag")
        if untagged_ok:
            variants.append("bare")
        how = self.pick(variants)
        chunk: Event = {"type": spec[CHUNK]}
        if how in ("id", "id-untagged"):
            chunk[spec[ID]] = item.ident
        if how in ("id", "tag") and lane is not None:
            chunk["subagentRunId"] = lane
        for name in REPEATABLE[item.kind]:
            if self.flag(1, 4):
                if name in item.fields:
                    chunk[name] = item.fields[name]
                elif name == "role":
                    chunk[name] = "assistant"  # established by omission (CHUNK-10)
        delta = self.draw(maybe_args if item.kind == "tool" else maybe_text)
        meta = self.draw(metadata)
        if delta is not None:
            chunk["delta"] = delta
        if meta is not None:
            chunk["metadata"] = meta
        self.chunked.append(chunk)
        self.cnotes.append(
            Note(
                "chunk",
                self.run,
                item.kind,
                item.ident,
                "cont",
                item.owner,
                lanes=self.lane_snapshot(),
                fields=tuple(item.fields.items()),
            )
        )
        if delta is None and meta is None:
            return  # a bare continuation adds nothing
        content: Event = {"type": spec[CONTENT], spec[ID]: item.ident, "delta": delta or ""}
        if meta is not None:
            content["metadata"] = meta
        if "subagentRunId" in chunk:
            content["subagentRunId"] = chunk["subagentRunId"]
        self.explicit.append(content)
        self.xnotes.append(Note("item", self.run, item.kind, item.ident, "content", item.owner))

    def end_item(self, item: _Item) -> None:
        spec = KINDS[item.kind]
        ev = self.tagged(
            {"type": spec[END], spec[ID]: item.ident}, self.continuation_tag(item.owner)
        )
        meta = self.draw(metadata)
        if meta is not None:
            ev["metadata"] = meta
        self.both(ev, Note("item", self.run, item.kind, item.ident, "end", item.owner))
        item.open = False

    def result(self, call: _Item) -> None:
        content: Any = self.pick(["ok", "", [{"type": "text", "text": "3 hits"}]])
        ev: Event = {
            "type": "TOOL_CALL_RESULT",
            "messageId": self.fresh("tm"),
            "toolCallId": call.ident,
            "content": content,
        }
        if self.flag(1, 2):
            ev["role"] = "tool"
        if call.owner in self.owners():
            self.tagged(ev, call.owner)
        self.both(ev, Note("result", self.run, "tool", call.ident, owner=ev.get("subagentRunId")))
        call.answered = True

    # -- spans, steps, subagents ---------------------------------------------------------

    def span_start(self) -> None:
        owner = self.pick(self.owners())
        span = _Span(self.fresh("sp"), owner)
        self.spans[span.ident] = span
        ev = self.tagged({"type": "REASONING_START", "messageId": span.ident}, owner)
        self.both(ev, Note("span_start", self.run, ident=span.ident, owner=owner))

    def span_end(self, span: _Span) -> None:
        del self.spans[span.ident]
        ev = self.tagged({"type": "REASONING_END", "messageId": span.ident}, span.owner)
        self.both(ev, Note("span_end", self.run, ident=span.ident, owner=span.owner))

    def step_start(self) -> bool:
        options = [(o, n) for o in self.owners() for n in STEP_NAMES if (o, n) not in self.steps]
        if not options:
            return False
        owner, name = self.pick(options)
        self.steps[(owner, name)] = None
        ev = self.tagged({"type": "STEP_STARTED", "stepName": name}, owner)
        self.both(ev, Note("step_start", self.run, ident=name, owner=owner))
        return True

    def step_end(self, key: tuple[str | None, str]) -> None:
        self.steps.pop(key, None)
        ev = self.tagged({"type": "STEP_FINISHED", "stepName": key[1]}, key[0])
        self.both(ev, Note("step_end", self.run, ident=key[1], owner=key[0]))

    def sub_start(self) -> None:
        sub = self.fresh("sub")
        ev: Event = {
            "type": "SUBAGENT_STARTED",
            "subagentRunId": sub,
            "name": self.pick(list(SUBAGENT_NAMES)),
        }
        if self.subs and self.flag(1, 2):
            ev["parentSubagentRunId"] = self.pick(self.subs)
        if self.flag(1, 3):
            ev["description"] = "delegated"
        self.both(ev, Note("sub_start", self.run, ident=sub, owner=sub))
        self.subs.append(sub)

    def busy(self, owner: str | None) -> bool:
        """Does ``owner`` still hold something only it may close (explicit items, spans, steps)?"""
        return (
            any(i.open and i.form == "explicit" and i.owner == owner for i in self.items.values())
            or any(s.owner == owner for s in self.spans.values())
            or any(o == owner for o, _ in self.steps)
        )

    def sub_end(self, sub: str) -> None:
        ev: Event
        if self.flag(3, 1):
            ev = {"type": "SUBAGENT_FINISHED", "subagentRunId": sub}
            if self.flag(1, 2):
                ev["outcome"] = {"type": "success"}
            if self.flag(1, 3):
                ev["result"] = {"summary": "done"}
        else:
            ev = {"type": "SUBAGENT_ERROR", "subagentRunId": sub, "message": "boom"}
            if self.flag(1, 2):
                ev["code"] = "E_SUB"
        self.both(ev, Note("sub_end", self.run, ident=sub, owner=sub))
        self.subs.remove(sub)

    # -- standalone events -------------------------------------------------------------------

    def standalone(self) -> None:
        owner = self.pick(self.owners())
        known_messages = [i.ident for (k, _), i in self.items.items() if k != "tool"]
        known_calls = [i.ident for (k, _), i in self.items.items() if k == "tool"]
        choices = ["state", "delta", "custom", "raw", "activity", "snapshot"]
        if self.activities:
            choices.append("activity_delta")
        if known_messages or known_calls:
            choices.append("encrypted")
        which = self.pick(choices)
        ev: Event
        if which == "state":
            ev = {"type": "STATE_SNAPSHOT", "snapshot": self.draw(small_json)}
        elif which == "delta":
            ev = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/k", "value": 1}]}
        elif which == "custom":
            ev = {"type": "CUSTOM", "name": "vendor.ping", "value": self.draw(small_json)}
        elif which == "raw":
            ev = {"type": "RAW", "event": {"kind": "provider"}}
            if self.flag():
                ev["source"] = "openai"
        elif which == "activity":
            ident = self.fresh("act")
            self.activities.append((ident, owner))
            ev = {
                "type": "ACTIVITY_SNAPSHOT",
                "messageId": ident,
                "activityType": "progress",
                "content": {"pct": 0},
            }
            if self.flag(1, 2):
                ev["replace"] = self.flag()
        elif which == "activity_delta":
            ident, owner = self.pick(self.activities)
            if owner not in self.owners():
                owner = None
            ev = {
                "type": "ACTIVITY_DELTA",
                "messageId": ident,
                "activityType": "progress",
                "patch": [{"op": "replace", "path": "/pct", "value": 50}],
            }
        elif which == "encrypted":
            subtype = "message" if known_messages and (not known_calls or self.flag()) else None
            ev = {
                "type": "REASONING_ENCRYPTED_VALUE",
                "subtype": "message" if subtype else "tool-call",
                "entityId": self.pick(known_messages if subtype else known_calls),
                "encryptedValue": "opaque==",
            }
        else:
            messages = (
                [] if self.flag() else [{"id": self.fresh("u"), "role": "user", "content": "hi"}]
            )
            self.both(
                {"type": "MESSAGES_SNAPSHOT", "messages": messages}, Note("snapshot", self.run)
            )
            return
        self.both(self.tagged(ev, owner), Note("standalone", self.run, owner=owner))

    # -- runs ------------------------------------------------------------------------------------

    def open_items(self) -> list[_Item]:
        return [i for i in self.items.values() if i.open]

    def actions(self) -> list[Callable[[], Any]]:
        acts: list[Callable[[], Any]] = []
        for kind in ("text", "text", "tool", "tool", "reasoning"):
            acts.append(partial(self.open_item, kind))
        owners = self.owners()
        for item in self.open_items():
            if item.form == "chunk":
                acts += [partial(self.continue_chunk, item)] * 4
            else:
                acts += [partial(self.emit_content, item)] * 2
                acts.append(partial(self.end_item, item))
        for item in self.items.values():
            if not item.open and item.owner in owners and not item.answered:
                acts.append(partial(self.open_item, item.kind, reopen=item))
            if item.kind == "tool" and not item.open and not item.answered:
                acts.append(partial(self.result, item))
        acts.append(self.span_start)
        for span in list(self.spans.values()):
            acts.append(partial(self.span_end, span))
        acts.append(self.step_start)
        for key in list(self.steps):
            acts.append(partial(self.step_end, key))
        if self.allow_subagents and len(self.subs) < 3:
            acts += [self.sub_start] * 2
        for sub in self.subs:
            if not self.busy(sub):
                acts.append(partial(self.sub_end, sub))
        acts += [self.standalone] * 2
        return acts

    def closing_actions(self) -> list[Callable[[], Any]]:
        acts: list[Callable[[], Any]] = []
        for item in self.open_items():
            if item.form == "explicit":
                acts.append(partial(self.end_item, item))
        for span in list(self.spans.values()):
            acts.append(partial(self.span_end, span))
        for key in list(self.steps):
            acts.append(partial(self.step_end, key))
        for sub in self.subs:
            if not self.busy(sub):
                acts.append(partial(self.sub_end, sub))
        return acts

    def run_once(self, *, may_error: bool) -> None:
        self.run += 1
        self._reset_run()
        run_id = self.fresh("run")
        start: Event = {"type": "RUN_STARTED", "threadId": THREAD_ID, "runId": run_id}
        if self.flag(1, 3):
            start["protocolVersion"] = "1.0"
        self.both(start, Note("run_started", self.run))
        if self.allow_subagents and self.flag(1, 4):
            self.unannounced = self.fresh("u-sub")  # attribution without lifecycle (SUB-7)
        for _ in range(self.draw(st.integers(0, self.max_actions))):
            self.pick(self.actions())()
        if may_error and self.flag(1, 4):
            ev: Event = {"type": "RUN_ERROR", "message": "the model went away"}
            if self.flag():
                ev["code"] = "E_UPSTREAM"
            self.both(ev, Note("run_error", self.run))
            pending = [c for c in self.started if not self.items[("tool", c)].answered]
            self.runs.append(ExpectedRun(run_id, "error", pending, "error"))
            for item in self.open_items():
                item.open = False  # abandoned with the run (RUN-15)
            return
        while acts := self.closing_actions():
            self.pick(acts)()
        pending = [c for c in self.started if not self.items[("tool", c)].answered]
        finish: Event = {"type": "RUN_FINISHED", "threadId": THREAD_ID, "runId": run_id}
        outcome = self.pick(["absent", "success", "pending", "cancelled", "interrupt"])
        status = "success"
        if outcome == "success" or (outcome == "pending" and not pending):
            finish["outcome"] = {"type": "success"}
        elif outcome == "pending":
            finish["outcome"] = {"type": "success", "pendingToolCallIds": list(pending)}
        elif outcome == "cancelled":
            finish["outcome"] = {"type": "cancelled"}
            status = "cancelled"
        elif outcome == "interrupt":
            interrupt: Event = {"id": self.fresh("int"), "reason": "approval"}
            if pending:
                interrupt["toolCallId"] = pending[0]
            finish["outcome"] = {"type": "interrupt", "interrupts": [interrupt]}
            status = "interrupt"
        if status == "success" and self.flag(1, 3):
            finish["result"] = {"answer": 42}
        self.both(finish, Note("run_finished", self.run))
        for item in self.open_items():
            item.open = False  # chunk items closed by RUN_FINISHED itself
        expected = ExpectedRun(run_id, status, pending, "finished")
        self.runs.append(expected)
        if may_error and self.flag(1, 8):
            # a failure that surfaced after the run reported success (RUN-12)
            self.both(
                {"type": "RUN_ERROR", "message": "flush failed"}, Note("late_run_error", self.run)
            )
            expected.status = "error"


@st.composite
def streams(
    draw: Draw,
    *,
    max_runs: int = 3,
    max_actions: int = 30,
    subagents: bool = True,
    errors: bool = True,
) -> GeneratedStream:
    """A valid stream, drawn as a conforming producer would emit it, in both renderings."""
    b = _Builder(draw, max_actions=max_actions, subagents=subagents)
    if errors and b.flag(1, 12):
        # a run can fail before it begins (RUN-1 admits RUN_ERROR first)
        b.both({"type": "RUN_ERROR", "message": "unreachable"}, Note("run_error", -1))
        b.runs.append(ExpectedRun(None, "error", [], "error"))
    for _ in range(draw(st.integers(1, max_runs))):
        b.run_once(may_error=errors)
    return GeneratedStream(b.explicit, b.chunked, b.xnotes, b.cnotes, b.runs)


# -- helpers shared with the tests ---------------------------------------------------------------


def active_positions(events: list[Event]) -> list[int]:
    """Insertion points ``p`` (insert before ``events[p]``) at which a run is active."""
    out = []
    active = False
    for p, ev in enumerate(events):
        if active and ev["type"] != "RUN_STARTED":
            out.append(p)
        kind = ev["type"]
        if kind == "RUN_STARTED":
            active = True
        elif kind in ("RUN_FINISHED", "RUN_ERROR"):
            if active:
                out.append(p)  # just before the terminal event
            active = False
    return sorted(set(out))


@dataclass
class Counts:
    """How much of each feature a stream exercises (for coverage statistics)."""

    values: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, gs: GeneratedStream) -> Counts:
        c: dict[str, int] = {}

        def bump(key: str) -> None:
            c[key] = c.get(key, 0) + 1

        for note in gs.chunked_notes:
            if note.what == "chunk":
                bump(f"chunk:{note.kind}:{note.part}")
                if note.owner is not None:
                    bump("chunk:subagent-lane")
            elif note.what == "item" and note.reopen:
                bump("reopen")
            else:
                bump(note.what)
        for note in gs.explicit_notes:
            if note.synthesized:
                bump("synthesized-end")
        return cls(c)
