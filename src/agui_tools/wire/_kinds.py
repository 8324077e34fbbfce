"""The wire's vocabulary: what an event is, which types exist, and the item kinds.

What differs between cases is a table read by the code that needs it (h11's habit):

* an event is a plain dict, :data:`WireEvent`; the types are the schema's (:func:`event_types`);
* a handler for ``TOOL_CALL_ARGS`` is named ``_on_tool_call_args``: :func:`handlers` builds
  dispatch tables from those names, so a misspelt one fails at construction;
* text messages, tool calls and reasoning messages share one discipline (STREAM-1..4,
  CHUNK-1), activities a looser one: each kind is a row of :data:`KINDS` (events, id member,
  noun, rules), which the emitter, expansion and verifier read;
* reasoning spans, steps and subagent invocations are rows of :data:`SCOPES`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

__all__ = [
    "ACTIVITY",
    "BY_CHUNK",
    "CHUNK_TYPES",
    "FAMILY",
    "KINDS",
    "REASONING",
    "SCOPES",
    "SPAN",
    "STEP",
    "STREAMED",
    "SUBAGENT",
    "TEXT",
    "TOOL",
    "ItemKind",
    "Scope",
    "StreamedKind",
    "WireEvent",
    "event_types",
    "handler_name",
    "handlers",
    "message_kind",
]

WireEvent = dict[str, Any]
"""One event as the wire carries it, decoded and enforced: a JSON object."""


# -- the item kinds --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ItemKind:
    """An item the protocol sends in pieces that one id member ties together."""

    name: str  # text / tool / reasoning / activity
    id_field: str
    noun: str  # what an error message calls one
    events: tuple[str, ...]  # the explicit events of its family


@dataclass(frozen=True, slots=True)
class StreamedKind(ItemKind):
    """An item streamed as start/content/end, or as chunks (STREAM-1, CHUNK-1)."""

    start: str
    content: str
    end: str
    chunk: str
    start_fields: Mapping[str, str]  # what every START carries (REAS-4: role "reasoning")
    opener_fields: tuple[str, ...]  # a continuation chunk may repeat them (CHUNK-10)
    first_chunk_fields: tuple[str, ...]  # what the first chunk of an item must carry …
    first_chunk_rule: str  # … by this rule (CHUNK-4..6)
    opened_twice: str  # the rule broken by opening an id that is open
    not_open: str  # … by continuing or closing an id that is not open
    left_open: str  # … by finishing the run with the item open


TEXT: Final = StreamedKind(
    "text",
    "messageId",
    "text message",
    ("TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"),
    start="TEXT_MESSAGE_START",
    content="TEXT_MESSAGE_CONTENT",
    end="TEXT_MESSAGE_END",
    chunk="TEXT_MESSAGE_CHUNK",
    start_fields={},
    opener_fields=("role", "name"),
    first_chunk_fields=("messageId",),
    first_chunk_rule="CHUNK-4",
    # the producer's rules, which the consumer's TEXT-8 restates for messages
    opened_twice="STREAM-2",
    not_open="STREAM-3",
    left_open="STREAM-4",
)
TOOL: Final = StreamedKind(
    "tool",
    "toolCallId",
    "tool call",
    # a result names its call too: it is of the family (an explicit event ending a chunk
    # stream by naming its id, CHUNK-3), though it continues nothing
    ("TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"),
    start="TOOL_CALL_START",
    content="TOOL_CALL_ARGS",
    end="TOOL_CALL_END",
    chunk="TOOL_CALL_CHUNK",
    start_fields={},
    opener_fields=("toolCallName", "parentMessageId"),
    first_chunk_fields=("toolCallId", "toolCallName"),
    first_chunk_rule="CHUNK-6",
    opened_twice="TOOL-20",
    not_open="TOOL-20",
    left_open="TOOL-20",
)
REASONING: Final = StreamedKind(
    "reasoning",
    "messageId",
    "reasoning message",
    ("REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END"),
    start="REASONING_MESSAGE_START",
    content="REASONING_MESSAGE_CONTENT",
    end="REASONING_MESSAGE_END",
    chunk="REASONING_MESSAGE_CHUNK",
    start_fields={"role": "reasoning"},
    opener_fields=(),
    first_chunk_fields=("messageId",),
    first_chunk_rule="CHUNK-5",
    opened_twice="REAS-4",
    not_open="REAS-4",
    left_open="REAS-4",
)
ACTIVITY: Final = ItemKind(
    "activity", "messageId", "activity", ("ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA")
)


STREAMED: Final[Mapping[str, StreamedKind]] = {k.name: k for k in (TEXT, TOOL, REASONING)}
KINDS: Final[Mapping[str, ItemKind]] = {**STREAMED, ACTIVITY.name: ACTIVITY}
BY_CHUNK: Final[Mapping[str, StreamedKind]] = {k.chunk: k for k in STREAMED.values()}
CHUNK_TYPES: Final = frozenset(BY_CHUNK)
FAMILY: Final[Mapping[str, str]] = {e: k.name for k in STREAMED.values() for e in k.events}
"""Explicit event type → the streamed kind whose family it belongs to (spans, steps,
state and activities have none)."""

# -- the scopes: what a run opens besides items ----------------------------------------


@dataclass(frozen=True, slots=True)
class Scope:
    """A span, a step or a subagent invocation: opened and closed by a pair of events,
    holding no content of its own, and closed before the run finishes."""

    name: str  # span / step / subagent
    id_field: str
    noun: str
    start: str
    end: str
    opened_twice: str  # the rule broken by opening one that is open
    not_open: str  # … by closing one that is not open
    left_open: str  # … by finishing the run with one open


SPAN: Final = Scope(
    "span", "messageId", "reasoning span", "REASONING_START", "REASONING_END",
    opened_twice="REAS-4", not_open="REAS-4", left_open="REAS-4",
)  # fmt: skip
STEP: Final = Scope(
    "step", "stepName", "step", "STEP_STARTED", "STEP_FINISHED",
    opened_twice="STEP-1", not_open="STEP-1", left_open="STEP-2",
)  # fmt: skip
SUBAGENT: Final = Scope(
    # SUBAGENT_ERROR closes one too
    "subagent", "subagentRunId", "subagent invocation", "SUBAGENT_STARTED", "SUBAGENT_FINISHED",
    opened_twice="SUB-5", not_open="SUB-6", left_open="SUB-6",
)  # fmt: skip
SCOPES: Final[Mapping[str, Scope]] = {s.name: s for s in (SPAN, STEP, SUBAGENT)}


_MINTED_BY_ROLE: Final = dict.fromkeys(("assistant", "user", "system", "developer"), "text")


def message_kind(role: str) -> str:
    """What minted a history message of ``role``: ``text`` for the conversational
    roles, the role itself otherwise (``tool``, ``activity``, ``reasoning``)."""
    return _MINTED_BY_ROLE.get(role, role)


# -- event types and their handlers ----------------------------------------------------


@cache
def event_types() -> frozenset[str]:
    """Every event type the bundled schema defines, chunks included."""
    from ._schema import compiled

    return compiled().event_types


def handler_name(event_type: str) -> str:
    """The one name of the handler for ``event_type``: ``TOOL_CALL_ARGS`` →
    ``_on_tool_call_args``."""
    return "_on_" + event_type.lower()


_HANDLED: dict[type, Mapping[str, str]] = {}


def _handled(cls: type) -> Mapping[str, str]:
    """Event type → handler name, for the handlers ``cls`` defines; a ``_on_*``
    name that is no event type's is refused (a misspelt handler would never run)."""
    found = _HANDLED.get(cls)
    if found is None:
        names = {handler_name(t): t for t in event_types()}
        defined = {n for n in dir(cls) if n.startswith("_on_")}
        stray = sorted(defined - names.keys())
        if stray:
            raise TypeError(f"{cls.__name__} defines {stray}, which handle no event type")
        found = _HANDLED[cls] = {names[n]: n for n in sorted(defined)}
    return found


Handler = Callable[[WireEvent, int | None], None]


def handlers(obj: object) -> dict[str, Handler]:
    """``obj``'s handlers by event type (only the types it handles)."""
    return {t: getattr(obj, n) for t, n in _handled(type(obj)).items()}
