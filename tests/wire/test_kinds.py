"""The item-kinds table and the handler naming (wire/_kinds.py).

The table is read by the emitter, chunk expansion and the verifier, so a wrong
row would be wrong on both sides of the wire at once — and their tests would
agree with each other. These tests hold the rows against the sources the
table must not contradict: the bundled schema and spec/RULES.md.
"""

from __future__ import annotations

import pytest

from agui_tools.app._reducer import ThreadState
from agui_tools.wire._kinds import (
    CHUNK_TYPES,
    FAMILY,
    KINDS,
    SCOPES,
    STREAMED,
    event_types,
    handler_name,
    handlers,
)
from agui_tools.wire._schema import ObjectNode, compiled
from agui_tools.wire._verify import Verifier
from tests.helpers.dsl import RULE_IDS


def variant(event_type: str) -> ObjectNode:
    return compiled().event.variants[event_type]


@pytest.mark.parametrize("kind", KINDS.values(), ids=lambda k: k.name)
def test_every_event_of_a_kind_is_the_schemas_and_carries_its_id(kind: object) -> None:
    for event_type in kind.events:  # type: ignore[attr-defined]
        assert event_type in event_types()
        node = variant(event_type)
        assert kind.id_field in node.props, (event_type, kind.id_field)  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", STREAMED.values(), ids=lambda k: k.name)
def test_a_streamed_kinds_triad_and_chunk_agree_with_the_schema(kind: object) -> None:
    k = STREAMED[kind.name]  # type: ignore[attr-defined]
    assert (k.start, k.content, k.end) == k.events[:3]
    for event_type in (k.start, k.content, k.end):
        assert k.id_field in variant(event_type).required
    chunk = variant(k.chunk)
    assert k.id_field in chunk.props and k.id_field not in chunk.required  # continuations omit it
    for field in (*k.opener_fields, *k.first_chunk_fields):
        assert field in chunk.props, (k.chunk, field)
    start = variant(k.start)
    for field in k.opener_fields:
        assert field in start.props, (k.start, field)
    for field, value in k.start_fields.items():
        assert field in start.required and start.props[field].value == value  # type: ignore[attr-defined]


def test_rule_ids_in_the_table_are_the_specs() -> None:
    for k in STREAMED.values():
        for rule in (k.opened_twice, k.not_open, k.left_open, k.first_chunk_rule):
            assert rule in RULE_IDS, (k.name, rule)


@pytest.mark.parametrize("scope", SCOPES.values(), ids=lambda s: s.name)
def test_a_scopes_events_are_the_schemas_and_its_rules_the_specs(scope: object) -> None:
    s = SCOPES[scope.name]  # type: ignore[attr-defined]
    for event_type in (s.start, s.end):
        assert s.id_field in variant(event_type).required, (event_type, s.id_field)
    for rule in (s.opened_twice, s.not_open, s.left_open):
        assert rule in RULE_IDS, (s.name, rule)


def test_chunk_types_and_families_are_derived_from_the_rows() -> None:
    assert {t for t in event_types() if t.endswith("_CHUNK")} == CHUNK_TYPES
    assert FAMILY["TOOL_CALL_RESULT"] == "tool" and "ACTIVITY_DELTA" not in FAMILY
    assert "REASONING_START" not in FAMILY  # a span's id is another namespace


def test_one_handler_name_per_event_type_across_verifier_and_reducer() -> None:
    assert handler_name("TOOL_CALL_ARGS") == "_on_tool_call_args"
    verifier, reducer = Verifier(), ThreadState()
    for obj in (verifier, reducer):
        for event_type, bound in handlers(obj).items():
            assert bound == getattr(obj, handler_name(event_type))
    both = handlers(verifier).keys() & handlers(reducer).keys()
    assert {"TEXT_MESSAGE_START", "TOOL_CALL_ARGS", "TOOL_CALL_RESULT", "RUN_STARTED"} <= both
    assert handlers(reducer).keys() <= event_types() - CHUNK_TYPES  # never sees a chunk
    # the verifier judges every expanded type (the standalone ones by one shared handler)
    assert verifier.dispatch.keys() == event_types() - CHUNK_TYPES


def test_a_misspelt_handler_is_refused_at_construction() -> None:
    class Folder:
        def _on_tool_call_arg(self, ev: object, index: int | None) -> None: ...

    with pytest.raises(TypeError, match="_on_tool_call_arg"):
        handlers(Folder())
