"""Property tests for enforcement over schema-generated events.

* Random extra properties anywhere in a closed object are stripped, each with a
  warning naming its JSON path, and no known value changes.
* Random type corruption of any known field is always fatal, naming that
  field's JSON path.
* Generated valid events pass untouched and quietly, and the fast path agrees
  with the reference walker.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agui_tools import ProtocolViolation
from agui_tools.wire import Enforcer
from agui_tools.wire._schema import AnyNode, ObjectNode
from tests.helpers.strategies import (
    SCHEMA,
    event,
    json_values,
    pointer,
    positions,
    set_at,
    wrong_values,
)

ENF = Enforcer()
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(event())
def test_valid_events_pass_untouched_and_quiet(ev: dict[str, Any]) -> None:
    original = copy.deepcopy(ev)
    clean, warnings = ENF.event(ev, 0)
    assert warnings == []
    assert clean == original
    # the reference walker agrees with whatever path the fast check took
    slow, slow_warnings = ENF._slow_event(ev, 0)
    assert slow == original and slow_warnings == []


@SETTINGS
@given(event(), st.data())
def test_extra_properties_anywhere_are_stripped_with_their_path(
    ev: dict[str, Any], data: st.DataObject
) -> None:
    closed = [
        (path, node, value)
        for path, _, node, value in positions(SCHEMA.event, ev)
        if isinstance(node, ObjectNode) and node.closed and isinstance(value, dict)
    ]
    chosen = data.draw(
        st.lists(st.sampled_from(closed), min_size=1, max_size=3, unique_by=lambda c: c[0])
    )
    mutated = ev
    expected_paths = []
    for path, node, _ in chosen:
        known = node.props
        key = data.draw(
            st.text(min_size=1, max_size=6).filter(lambda k, known=known: k not in known)
        )
        mutated = set_at(mutated, (*path, key), data.draw(json_values))
        expected_paths.append(pointer((*path, key)))
    before = copy.deepcopy(mutated)
    clean, warnings = ENF.event(mutated, 5)
    assert clean == ev, "stripping must leave every known value as it was"
    assert sorted(w.path for w in warnings) == sorted(expected_paths)
    assert all(w.rule == "PROC-3" and w.index == 5 for w in warnings)
    assert mutated == before


@SETTINGS
@given(event(), st.data())
def test_type_corruption_of_a_known_field_is_fatal_at_its_path(
    ev: dict[str, Any], data: st.DataObject
) -> None:
    targets = [
        (path, node)
        for path, node, _, _ in positions(SCHEMA.event, ev)
        if path and wrong_values(node) and not (isinstance(node, AnyNode) and node.nullable)
    ]
    assume(targets)
    path, node = data.draw(st.sampled_from(targets))
    bad = data.draw(st.sampled_from(wrong_values(node)))
    mutated = set_at(ev, path, bad)
    try:
        ENF.event(mutated, 9)
    except ProtocolViolation as exc:
        assert exc.index == 9
        # the violation names the corrupted position (or, for a union member
        # whose discriminator was corrupted, the discriminator inside it)
        assert exc.path == pointer(path) or exc.path.startswith(pointer(path) + "/"), (
            exc.path,
            path,
        )
        assert exc.rule
    else:
        raise AssertionError(f"corrupting {pointer(path)} with {bad!r} was accepted")
