"""Single mutations of a valid generated stream, each breaking one rule.

Each operator takes a :class:`~tests.helpers.gen_streams.GeneratedStream` and a
hypothesis ``draw`` and returns a :class:`Mutation`: the mutated events, the rule
a conforming consumer must name and the index of the event it must name — computed
from the generator's notes and the specification (``spec/RULES.md``), not from what
the implementation says. Shared by the property tests of the pipeline and the
differential test against the official client, so both judge the same mutations.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, NamedTuple

from hypothesis import strategies as st

from tests.helpers.gen_streams import (
    CHUNK,
    CONTENT,
    END,
    ID,
    KINDS,
    START,
    THREAD_ID,
    GeneratedStream,
    Note,
    active_positions,
)

Event = dict[str, Any]
Draw = Callable[[st.SearchStrategy[Any]], Any]

# the rule each streamed family's discipline is judged under (RULES.md §2, §5, §15)
START_WHILE_OPEN = {"text": "STREAM-2", "tool": "TOOL-20", "reasoning": "REAS-4"}
NOT_OPEN = {"text": "STREAM-3", "tool": "TOOL-20", "reasoning": "REAS-4"}
OPEN_AT_FINISH = {"text": "STREAM-4", "tool": "TOOL-20", "reasoning": "REAS-4"}
FIRST_CHUNK = {"text": "CHUNK-4", "reasoning": "CHUNK-5", "tool": "CHUNK-6"}


class Mutation(NamedTuple):
    events: list[Event]
    rule: str
    at: int | None  # the index of the event the violation must name
    what: str


Operator = Callable[[GeneratedStream, Draw], "Mutation | None"]
OPERATORS: dict[str, Operator] = {}


def operator(description: str) -> Callable[[Operator], Operator]:
    def register(fn: Operator) -> Operator:
        fn.__doc__ = description
        OPERATORS[fn.__name__] = fn
        return fn

    return register


def _choose(draw: Draw, candidates: list[Mutation]) -> Mutation | None:
    if not candidates:
        return None
    return candidates[draw(st.integers(0, len(candidates) - 1))]


def _rendering(gs: GeneratedStream, draw: Draw) -> tuple[list[Event], list[Note]]:
    if draw(st.booleans()):
        return gs.explicit, gs.explicit_notes
    return gs.chunked, gs.chunked_notes


def _insert(events: list[Event], p: int, *new: Event) -> list[Event]:
    return [*events[:p], *new, *events[p:]]


def _drop(events: list[Event], i: int) -> list[Event]:
    return events[:i] + events[i + 1 :]


def _replace(events: list[Event], i: int, ev: Event) -> list[Event]:
    return [*events[:i], ev, *events[i + 1 :]]


def _terminal(notes: list[Note], i: int) -> int:
    """Index of the event ending the run that event ``i`` belongs to."""
    run = notes[i].run
    for j in range(i + 1, len(notes)):
        if notes[j].run == run and notes[j].what in ("run_finished", "run_error"):
            return j
    raise AssertionError("every generated run ends")


def _built(
    gs: GeneratedStream, draw: Draw, built: list[Event], rule: str, at: int, what: str
) -> Mutation:
    """Fallback when the drawn stream offers no target: splice a minimal case in.

    ``built`` goes right after a ``RUN_STARTED``, where no chunk lane is open, and
    its event ``at`` (0-based within ``built``) must be rejected with ``rule``.
    """
    events, notes = _rendering(gs, draw)
    starts = [p for p, n in enumerate(notes) if n.what == "run_started"]
    p = starts[draw(st.integers(0, len(starts) - 1))] + 1
    return Mutation(_insert(events, p, *built), rule, p + at, f"built: {what}")


def _opener(kind: str, ident: str) -> Event:
    spec = KINDS[kind]
    ev: Event = {"type": spec[START], spec[ID]: ident}
    if kind == "tool":
        ev["toolCallName"] = "search"
    if kind == "reasoning":
        ev["role"] = "reasoning"
    return ev


@operator("drop a closer (item END, REASONING_END, STEP_FINISHED, SUBAGENT_FINISHED/ERROR)")
def drop_closer(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, notes = gs.explicit, gs.explicit_notes
    candidates = []
    for i, n in enumerate(notes):
        if n.what == "item" and n.part == "end":
            key = ("item", n.kind, n.ident)
        elif n.what in ("span_end", "step_end", "sub_end"):
            key = (n.what, n.ident, n.owner)
        else:
            continue
        end = _terminal(notes, i)
        if notes[end].what != "run_finished":
            continue  # RUN_ERROR abandons whatever is open: nothing to reject
        rule, at = None, end
        if n.what == "item":
            rule = OPEN_AT_FINISH[n.kind or ""]
            for j in range(i + 1, end):
                m = notes[j]
                if m.what == "item" and m.part == "start" and (m.kind, m.ident) == key[1:]:
                    rule, at = START_WHILE_OPEN[n.kind or ""], j  # a reopen while still open
                    break
        elif n.what == "span_end":
            rule = "REAS-4"
        elif n.what == "step_end":
            rule = "STEP-2"
            for j in range(i + 1, end):
                m = notes[j]
                if m.what == "step_start" and (m.ident, m.owner) == (n.ident, n.owner):
                    rule, at = "STEP-1", j
                    break
        else:
            rule = "SUB-6"
        candidates.append(
            Mutation(_drop(events, i), rule, at - 1, f"drop #{i} {events[i]['type']}")
        )
    return _choose(draw, candidates)


@operator("drop an opener (item START, REASONING_START, STEP_STARTED, SUBAGENT_STARTED)")
def drop_opener(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, notes = gs.explicit, gs.explicit_notes
    candidates = []
    for i, n in enumerate(notes):
        # the rule, and the note of the event that then names something never opened
        same: tuple[str, ...]
        if n.what == "item" and n.part == "start":
            rule, closer, same = NOT_OPEN[n.kind or ""], "item", ("kind", "ident")
        elif n.what == "span_start":
            rule, closer, same = "REAS-4", "span_end", ("ident",)
        elif n.what == "step_start":
            rule, closer, same = "STEP-1", "step_end", ("ident", "owner")
        elif n.what == "sub_start":
            rule, closer, same = "SUB-6", "sub_end", ("ident",)
        else:
            continue
        for j in range(i + 1, _terminal(notes, i)):
            m = notes[j]
            if m.what == closer and all(getattr(m, a) == getattr(n, a) for a in same):
                candidates.append(
                    Mutation(_drop(events, i), rule, j - 1, f"drop #{i} {events[i]['type']}")
                )
                break
    return _choose(draw, candidates)


@operator("duplicate an opener while it is open")
def duplicate_opener(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, notes = gs.explicit, gs.explicit_notes
    rules = {"span_start": "REAS-4", "step_start": "STEP-1", "sub_start": "SUB-5"}
    candidates = []
    for i, n in enumerate(notes):
        if n.what == "item" and n.part == "start":
            rule = START_WHILE_OPEN[n.kind or ""]
        elif n.what in rules:
            rule = rules[n.what]
        else:
            continue
        candidates.append(
            Mutation(_insert(events, i + 1, copy.deepcopy(events[i])), rule, i + 1, f"repeat #{i}")
        )
    return _choose(draw, candidates)


@operator("continue or close something never opened")
def orphan_continuation(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, _ = _rendering(gs, draw)
    positions = active_positions(events)
    p = positions[draw(st.integers(0, len(positions) - 1))]
    which = draw(st.sampled_from(["content", "end", "span", "step"]))
    kind = draw(st.sampled_from(sorted(KINDS)))
    spec = KINDS[kind]
    if which == "content":
        ev: Event = {"type": spec[CONTENT], spec[ID]: "ghost", "delta": "x"}
        rule = NOT_OPEN[kind]
    elif which == "end":
        ev, rule = {"type": spec[END], spec[ID]: "ghost"}, NOT_OPEN[kind]
    elif which == "span":
        ev, rule = {"type": "REASONING_END", "messageId": "ghost"}, "REAS-4"
    else:
        ev, rule = {"type": "STEP_FINISHED", "stepName": "ghost"}, "STEP-1"
    return Mutation(_insert(events, p, ev), rule, p, f"insert {ev} at {p}")


@operator("drop a RUN_STARTED")
def drop_run_started(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, _ = _rendering(gs, draw)
    candidates = []
    for i, ev in enumerate(events):
        if ev["type"] != "RUN_STARTED":
            continue
        after = events[i + 1]["type"]
        if i == 0:
            if after in ("RUN_ERROR", "RUN_STARTED"):
                continue  # a stream may open with RUN_ERROR
            rule = "RUN-1"
        else:
            closed_by = events[i - 1]["type"]
            if after == "RUN_ERROR" and closed_by == "RUN_FINISHED":
                continue  # a late RUN_ERROR is admitted after RUN_FINISHED
            rule = "RUN-12"
        candidates.append(Mutation(_drop(events, i), rule, i, f"drop #{i}"))
    return _choose(draw, candidates)


@operator("an event after the run closed")
def event_after_close(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, _ = _rendering(gs, draw)
    ends = [i for i, ev in enumerate(events) if ev["type"] in ("RUN_FINISHED", "RUN_ERROR")]
    i = ends[draw(st.integers(0, len(ends) - 1))]
    intruder = draw(
        st.sampled_from(
            [
                {"type": "CUSTOM", "name": "late", "value": 1},
                {"type": "TEXT_MESSAGE_START", "messageId": "late"},
                {"type": "TOOL_CALL_CHUNK", "toolCallId": "late", "toolCallName": "f"},
                {"type": "STATE_SNAPSHOT", "snapshot": {}},
                {"type": "STEP_STARTED", "stepName": "late"},
                {"type": "SUBAGENT_STARTED", "subagentRunId": "late", "name": "x"},
                {"type": "REASONING_START", "messageId": "late"},
                {"type": "MESSAGES_SNAPSHOT", "messages": []},
                {"type": "RAW", "event": {}},
            ]
        )
    )
    return Mutation(_insert(events, i + 1, intruder), "RUN-12", i + 1, f"{intruder} after #{i}")


@operator("boundary events disagree about the run")
def wrong_run_identity(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, _ = _rendering(gs, draw)
    candidates = []
    first_start = next(i for i, ev in enumerate(events) if ev["type"] == "RUN_STARTED")
    for i, ev in enumerate(events):
        if ev["type"] == "RUN_FINISHED":
            for key in ("runId", "threadId"):
                candidates.append(
                    Mutation(_replace(events, i, {**events[i], key: "other"}), "INPUT-3", i, key)
                )
        elif ev["type"] == "RUN_STARTED" and i != first_start:
            candidates.append(
                Mutation(
                    _replace(events, i, {**events[i], "threadId": "other"}), "INPUT-3", i, "thread"
                )
            )
    return _choose(draw, candidates)


@operator("RUN_STARTED inside an active run")
def nested_run_started(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, _ = _rendering(gs, draw)
    positions = active_positions(events)
    p = positions[draw(st.integers(0, len(positions) - 1))]
    ev = {"type": "RUN_STARTED", "threadId": THREAD_ID, "runId": "nested"}
    return Mutation(_insert(events, p, ev), "RUN-13", p, f"nested at {p}")


@operator("retag a continuation with another owner")
def retag_continuation(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, notes = _rendering(gs, draw)
    candidates = []
    for i, n in enumerate(notes):
        ev = events[i]
        if n.what == "item" and n.part in ("content", "end"):
            owner = n.owner
        elif n.what == "chunk" and n.part == "cont" and KINDS[n.kind or ""][ID] in ev:
            owner = n.owner  # an id-bearing continuation chunk: its lane is its item's
        else:
            continue
        other = draw(st.sampled_from([o for o in ("intruder", "sub1", "sub2") if o != owner]))
        candidates.append(
            Mutation(
                _replace(events, i, {**events[i], "subagentRunId": other}),
                "SUB-11",
                i,
                f"retag #{i} as {other}",
            )
        )
    return _choose(draw, candidates)


@operator("terminate a subagent that is not active")
def unknown_subagent_terminal(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, notes = _rendering(gs, draw)
    repeats = [i for i, n in enumerate(notes) if n.what == "sub_end"]
    if repeats and draw(st.booleans()):
        i = repeats[draw(st.integers(0, len(repeats) - 1))]
        return Mutation(_insert(events, i + 1, dict(events[i])), "SUB-6", i + 1, f"repeat #{i}")
    positions = active_positions(events)
    p = positions[draw(st.integers(0, len(positions) - 1))]
    ev: Event = draw(
        st.sampled_from(
            [
                {"type": "SUBAGENT_FINISHED", "subagentRunId": "never"},
                {"type": "SUBAGENT_ERROR", "subagentRunId": "never", "message": "x"},
            ]
        )
    )
    return Mutation(_insert(events, p, ev), "SUB-6", p, f"{ev['type']} at {p}")


@operator("leave something open at RUN_FINISHED")
def open_at_finish(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, _ = _rendering(gs, draw)
    finishes = [i for i, ev in enumerate(events) if ev["type"] == "RUN_FINISHED"]
    if not finishes:
        return None
    f = finishes[draw(st.integers(0, len(finishes) - 1))]
    ev, rule = draw(
        st.sampled_from(
            [
                ({"type": "REASONING_START", "messageId": "late"}, "REAS-4"),
                (_opener("reasoning", "late"), "REAS-4"),
                (_opener("text", "late"), "STREAM-4"),
                (_opener("tool", "late"), "TOOL-20"),
                ({"type": "STEP_STARTED", "stepName": "late"}, "STEP-2"),
                ({"type": "SUBAGENT_STARTED", "subagentRunId": "late", "name": "x"}, "SUB-6"),
            ]
        )
    )
    return Mutation(_insert(events, f, ev), rule, f + 1, f"{ev['type']} before #{f}")


@operator("a continuation chunk repeats an opener field with another value")
def conflicting_repeat(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, notes = gs.chunked, gs.chunked_notes
    candidates = []
    for i, n in enumerate(notes):
        if n.what != "chunk" or n.part != "cont" or n.kind == "reasoning":
            continue
        fields = dict(n.fields)
        if n.kind == "tool":
            conflicts = [("toolCallName", fields["toolCallName"] + "_other")]
            if "parentMessageId" in fields:
                conflicts.append(("parentMessageId", fields["parentMessageId"] + "_other"))
        else:
            role = fields.get("role", "assistant")  # established by omission (CHUNK-10)
            conflicts = [("role", "user" if role != "user" else "system")]
            if "name" in fields:
                conflicts.append(("name", fields["name"] + "_other"))
        for key, value in conflicts:
            candidates.append(
                Mutation(
                    _replace(events, i, {**events[i], key: value}),
                    "CHUNK-10",
                    i,
                    f"#{i} {key}={value}",
                )
            )
    if candidates:
        return _choose(draw, candidates)
    built = [
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "cx", "toolCallName": "search", "delta": "{"},
        {"type": "TOOL_CALL_CHUNK", "toolCallName": "delete", "delta": "}"},
    ]
    return _built(gs, draw, built, "CHUNK-10", 1, "conflicting toolCallName")


def _resolve(
    lanes: tuple[tuple[str | None, str, str], ...], kind: str, tag: str | None
) -> str | None:
    """The verdict on an id-less chunk of ``kind`` given the open lanes (spec resolution).

    Returns ``None`` when it continues some stream, else the rule it breaks.
    """
    by_owner = {o: k for o, k, _ in lanes}
    if tag is not None:
        return None if by_owner.get(tag) == kind else FIRST_CHUNK[kind]
    if by_owner.get(None) == kind:
        return None
    candidates = [o for o, k in by_owner.items() if k == kind]
    if not candidates:
        return FIRST_CHUNK[kind]
    return "CHUNK-12" if len(candidates) > 1 else None


@operator("strip a required field from a first chunk")
def first_chunk_missing_field(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, notes = gs.chunked, gs.chunked_notes
    candidates = []
    for i, n in enumerate(notes):
        if n.what != "chunk" or n.part != "first":
            continue
        kind = n.kind or ""
        id_field = KINDS[kind][ID]
        if kind == "tool":
            stripped = {k: v for k, v in events[i].items() if k != "toolCallName"}
            candidates.append(
                Mutation(_replace(events, i, stripped), "CHUNK-6", i, f"#{i} without toolCallName")
            )
        stripped = {k: v for k, v in events[i].items() if k != id_field}
        rule = _resolve(n.lanes, kind, stripped.get("subagentRunId"))
        if rule is not None:
            candidates.append(
                Mutation(_replace(events, i, stripped), rule, i, f"#{i} without {id_field}")
            )
    return _choose(draw, candidates)


@operator("strip a continuation chunk's id and tag where several lanes could take it")
def ambiguous_continuation(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, notes = gs.chunked, gs.chunked_notes
    candidates = []
    for i, n in enumerate(notes):
        if n.what != "chunk" or n.part != "cont":
            continue
        kind = n.kind or ""
        if _resolve(n.lanes, kind, None) != "CHUNK-12":
            continue
        bare = {k: v for k, v in events[i].items() if k not in (KINDS[kind][ID], "subagentRunId")}
        candidates.append(Mutation(_replace(events, i, bare), "CHUNK-12", i, f"#{i} bare"))
    if candidates:
        return _choose(draw, candidates)
    # no stream of this draw has two subagent lanes open at once: build the situation
    kind = draw(st.sampled_from(sorted(KINDS)))
    spec = KINDS[kind]
    built: list[Event] = [
        {"type": "SUBAGENT_STARTED", "subagentRunId": "amb-a", "name": "a"},
        {"type": "SUBAGENT_STARTED", "subagentRunId": "amb-b", "name": "b"},
    ]
    for sub in ("amb-a", "amb-b"):
        first: Event = {"type": spec[CHUNK], spec[ID]: f"{sub}-item", "subagentRunId": sub}
        if kind == "tool":
            first["toolCallName"] = "f"
        built.append(first)
    built.append({"type": spec[CHUNK], "delta": "whose?"})
    return _built(gs, draw, built, "CHUNK-12", 4, "two subagent lanes")


@operator("mix the spellings: an explicit continuation of a chunk-opened item")
def mix_forms(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, notes = gs.chunked, gs.chunked_notes
    candidates = []
    for i, n in enumerate(notes):
        if n.what != "chunk":
            continue
        spec = KINDS[n.kind or ""]
        for ev in (
            {"type": spec[CONTENT], spec[ID]: n.ident, "delta": "}"},
            {"type": spec[END], spec[ID]: n.ident},
        ):
            if n.owner is not None:
                ev["subagentRunId"] = n.owner
            candidates.append(
                Mutation(
                    _insert(events, i + 1, ev), NOT_OPEN[n.kind or ""], i + 1, f"{ev} after #{i}"
                )
            )
    return _choose(draw, candidates)


@operator("close a chunk lane, then continue it without an id")
def close_lane_then_continue(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, notes = gs.chunked, gs.chunked_notes
    candidates = []
    for j, n in enumerate(notes):
        kind = n.kind or ""
        if n.what != "chunk" or n.part != "cont" or KINDS[kind][ID] in events[j]:
            continue
        lanes = tuple(lane for lane in n.lanes if lane[0] != n.owner)
        rule = _resolve(lanes, kind, events[j].get("subagentRunId"))
        if rule is None:
            continue
        closer = draw(
            st.sampled_from(
                [
                    {"type": "CUSTOM", "name": "tick", "value": None},
                    {"type": "STATE_DELTA", "delta": []},
                    {"type": "STATE_SNAPSHOT", "snapshot": {"k": 1}},
                ]
            )
        )
        if n.owner is not None:
            closer = {**closer, "subagentRunId": n.owner}
        candidates.append(
            Mutation(_insert(events, j, closer), rule, j + 1, f"{closer['type']} before #{j}")
        )
    if candidates:
        return _choose(draw, candidates)
    built: list[Event] = [
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "mx", "delta": "Half "},
        {"type": "CUSTOM", "name": "tick", "value": None},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "and half."},
    ]
    return _built(gs, draw, built, "CHUNK-4", 2, "CUSTOM closes the parent's lane")


@operator("reopen a message under another owner within its run")
def reopen_under_other_owner(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, notes = gs.explicit, gs.explicit_notes
    candidates = []
    for i, n in enumerate(notes):
        if not (n.what == "item" and n.part == "start" and n.reopen and n.kind == "text"):
            continue
        previous = max(
            j
            for j in range(i)
            if notes[j].what == "item"
            and notes[j].part == "start"
            and (notes[j].kind, notes[j].ident) == (n.kind, n.ident)
        )
        if notes[previous].run != n.run:
            continue  # across runs a consumer need not detect it (TEXT-4)
        other = "intruder" if n.owner != "intruder" else "sub-z"
        candidates.append(
            Mutation(
                _replace(events, i, {**events[i], "subagentRunId": other}), "TEXT-4", i, f"#{i}"
            )
        )
    if candidates:
        return _choose(draw, candidates)
    built = [
        {"type": "TEXT_MESSAGE_START", "messageId": "mx"},
        {"type": "TEXT_MESSAGE_END", "messageId": "mx"},
        {"type": "TEXT_MESSAGE_START", "messageId": "mx", "subagentRunId": "intruder"},
    ]
    return _built(gs, draw, built, "TEXT-4", 2, "reopen under intruder")


@operator("attribute a tool call away from its parent message")
def tool_call_against_its_message(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, notes = gs.explicit, gs.explicit_notes
    candidates = []
    for i, n in enumerate(notes):
        ev = events[i]
        if n.what == "item" and n.part == "start" and "parentMessageId" in ev:
            other = "intruder" if n.owner != "intruder" else "sub-z"
            candidates.append(
                Mutation(
                    _replace(events, i, {**events[i], "subagentRunId": other}),
                    "SUB-12",
                    i,
                    f"#{i} tagged {other}",
                )
            )
    if candidates:
        return _choose(draw, candidates)
    built = [
        {"type": "TEXT_MESSAGE_START", "messageId": "mx"},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "cx",
            "toolCallName": "search",
            "parentMessageId": "mx",
            "subagentRunId": "intruder",
        },
    ]
    return _built(gs, draw, built, "SUB-12", 1, "call tagged away from its message")


# (event type, field) → (a wrong value, the rule). Generic malformed values are PROC-2;
# RULES.md names a more specific rule for some positions.
CORRUPTIONS: dict[tuple[str, str], tuple[Any, str]] = {
    ("TEXT_MESSAGE_START", "messageId"): (7, "PROC-2"),
    ("TEXT_MESSAGE_START", "role"): (7, "PROC-2"),
    ("TEXT_MESSAGE_START", "name"): (["x"], "PROC-2"),
    ("TEXT_MESSAGE_CONTENT", "delta"): (7, "PROC-2"),
    ("TEXT_MESSAGE_END", "messageId"): (False, "PROC-2"),
    ("TEXT_MESSAGE_CHUNK", "delta"): ({"d": 1}, "PROC-2"),
    ("TEXT_MESSAGE_CHUNK", "messageId"): (7, "PROC-2"),
    ("TOOL_CALL_ARGS", "delta"): ({"q": 1}, "PROC-2"),
    ("TOOL_CALL_END", "toolCallId"): (7, "PROC-2"),
    ("TOOL_CALL_CHUNK", "delta"): (7, "PROC-2"),
    ("TOOL_CALL_CHUNK", "toolCallName"): (7, "PROC-2"),
    ("REASONING_MESSAGE_CONTENT", "delta"): (7, "PROC-2"),
    ("REASONING_MESSAGE_CHUNK", "delta"): (7, "PROC-2"),
    ("REASONING_START", "messageId"): (7, "PROC-2"),
    ("STEP_STARTED", "stepName"): (7, "PROC-2"),
    ("STEP_FINISHED", "stepName"): (7, "PROC-2"),
    ("CUSTOM", "name"): (7, "PROC-2"),
    ("STATE_DELTA", "delta"): ("x", "PROC-2"),
    ("ACTIVITY_SNAPSHOT", "content"): ("x", "PROC-2"),
    ("RUN_STARTED", "runId"): (7, "PROC-2"),
    ("RUN_ERROR", "message"): (7, "PROC-2"),
    ("TOOL_CALL_START", "toolCallName"): (7, "TOOL-2"),
    ("TOOL_CALL_START", "toolCallId"): (7, "TOOL-2"),
    ("TOOL_CALL_RESULT", "content"): ({"a": 1}, "TOOL-12"),
    ("RUN_FINISHED", "outcome"): (["success"], "RUN-4"),
    ("REASONING_MESSAGE_START", "role"): ("assistant", "REAS-4"),
    ("SUBAGENT_STARTED", "name"): (7, "SUB-3"),
}
# required fields whose absence RULES.md gives a rule to
REMOVALS: dict[tuple[str, str], str] = {
    ("TOOL_CALL_START", "toolCallName"): "TOOL-2",
    ("SUBAGENT_STARTED", "name"): "SUB-3",
    ("TEXT_MESSAGE_CONTENT", "delta"): "PROC-2",
    ("TOOL_CALL_ARGS", "delta"): "PROC-2",
    ("RUN_ERROR", "message"): "PROC-2",
    ("STEP_STARTED", "stepName"): "PROC-2",
}
# optional fields a producer must omit rather than spell null (EVT-5), minus those the
# compatibility boundary translates (spec/DEPRECATIONS.md) and those with their own rule
NULLABLE_OPTIONALS = {
    "TEXT_MESSAGE_START": ("role", "name"),
    "TEXT_MESSAGE_CHUNK": ("delta", "role"),
    "TOOL_CALL_CHUNK": ("delta",),
    "SUBAGENT_STARTED": ("description", "parentSubagentRunId"),
    "RUN_STARTED": ("protocolVersion",),
    "RAW": ("source",),
    "TOOL_CALL_RESULT": ("role",),
    "RUN_ERROR": ("code",),
    "ACTIVITY_SNAPSHOT": ("replace",),
}


@operator("corrupt one field of one event")
def corrupt_field(gs: GeneratedStream, draw: Draw) -> Mutation | None:
    events, _ = _rendering(gs, draw)
    by_category: dict[str, list[Mutation]] = {}

    def add(category: str, i: int, ev: Event, rule: str, what: str) -> None:
        by_category.setdefault(category, []).append(
            Mutation(_replace(events, i, ev), rule, i, what)
        )

    for i, ev in enumerate(events):
        kind = ev["type"]
        for key in ev:
            if (kind, key) in CORRUPTIONS:
                value, rule = CORRUPTIONS[(kind, key)]
                add(rule, i, {**ev, key: value}, rule, f"#{i} {key}={value!r}")
            if (kind, key) in REMOVALS:
                stripped = {k: v for k, v in ev.items() if k != key}
                add("removal", i, stripped, REMOVALS[(kind, key)], f"#{i} without {key}")
            if key in NULLABLE_OPTIONALS.get(kind, ()):
                add("EVT-5", i, {**ev, key: None}, "EVT-5", f"#{i} {key}=null")
            if key == "metadata":
                add("META-1", i, {**ev, "metadata": ["k"]}, "META-1", f"#{i} metadata")
            if key == "subagentRunId" and not kind.startswith("SUBAGENT_"):
                # absent means the parent agent, and MUST NOT be spelled null (SUB-1)
                add("SUB-1", i, {**ev, key: None}, "SUB-1", f"#{i} subagentRunId=null")
        add("type", i, {**ev, "type": 7}, "PROC-2", f"#{i} type=7")
    category = draw(st.sampled_from(sorted(by_category)))
    return _choose(draw, by_category[category])
