"""Hypothesis strategies generated from the compiled schema.

``wire_value(node)`` draws a *valid* JSON value for any schema position, so
property tests can state facts about every event type without a hand-written
generator per type. ``closed_object_paths`` and ``corruptible_paths`` find the
positions a mutation can target.
"""

from __future__ import annotations

import string
from typing import Any

from hypothesis import strategies as st

from agui_tools.wire._schema import (
    AnyNode,
    ArrayNode,
    BoolNode,
    ConstNode,
    EnumNode,
    IntNode,
    Node,
    ObjectNode,
    StringNode,
    TypeSwitchNode,
    UnionNode,
    compiled,
)

SCHEMA = compiled()

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=8),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
ids = st.text(alphabet=string.ascii_letters + string.digits + "-_:", min_size=1, max_size=8)
pointers = st.lists(
    st.text(alphabet=string.ascii_letters + "~/", max_size=4).map(
        lambda t: t.replace("~", "~0").replace("/", "~1")
    ),
    max_size=3,
).map(lambda toks: "".join("/" + t for t in toks))


def wire_value(node: Node, depth: int = 0) -> st.SearchStrategy[Any]:
    if isinstance(node, StringNode):
        return pointers if node.pattern is not None else ids
    if isinstance(node, IntNode):
        lo = node.minimum if node.minimum is not None else -(2**53) + 1
        hi = node.maximum if node.maximum is not None else 2**53 - 1
        return st.integers(min_value=lo, max_value=hi)
    if isinstance(node, BoolNode):
        return st.booleans()
    if isinstance(node, ConstNode):
        return st.just(node.value)
    if isinstance(node, EnumNode):
        return st.sampled_from(sorted(node.values))
    if isinstance(node, AnyNode):
        return json_values if node.nullable else json_values.filter(lambda v: v is not None)
    if isinstance(node, ArrayNode):
        return st.lists(
            wire_value(node.items, depth + 1),
            min_size=node.min_items,
            max_size=2 if depth < 3 else node.min_items,
        )
    if isinstance(node, TypeSwitchNode):
        return st.one_of(*(wire_value(n, depth) for n in node.by_type.values()))
    if isinstance(node, UnionNode):
        return st.one_of(*(wire_value(v, depth) for v in node.variants.values()))
    if isinstance(node, ObjectNode):
        if not node.props:
            return st.dictionaries(st.text(max_size=6), json_values, max_size=3)
        required = {
            k: wire_value(n, depth + 1) for k, n in node.props.items() if k in node.required
        }
        optional = {
            k: wire_value(n, depth + 1) for k, n in node.props.items() if k not in node.required
        }
        return st.fixed_dictionaries(required, optional=optional)
    raise AssertionError(node)


def event(tag: str | None = None) -> st.SearchStrategy[dict[str, Any]]:
    if tag is not None:
        return wire_value(SCHEMA.event.variants[tag])  # type: ignore[return-value]
    return wire_value(SCHEMA.event)  # type: ignore[return-value]


def _child(node: Node, value: Any) -> Node | None:
    if isinstance(node, UnionNode) and isinstance(value, dict):
        return node.variants.get(value.get(node.discriminator))
    if isinstance(node, TypeSwitchNode):
        return node.by_type.get(type(value))
    return node


def positions(
    node: Node, value: Any, path: tuple[Any, ...] = ()
) -> list[tuple[tuple[Any, ...], Node, Node, Any]]:
    """Every (path, declared node, resolved node, value) the schema describes inside ``value``.

    The declared node is the schema position (a union, a string-or-parts
    switch); the resolved one is the member the value actually is.
    """
    declared = node
    node = _child(node, value) or node
    out = [(path, declared, node, value)]
    if isinstance(node, ObjectNode) and node.props and isinstance(value, dict):
        for k, v in value.items():
            if k in node.props:
                out += positions(node.props[k], v, (*path, k))
    elif isinstance(node, ArrayNode) and isinstance(value, list):
        for i, v in enumerate(value):
            out += positions(node.items, v, (*path, i))
    return out


def pointer(path: tuple[Any, ...]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def set_at(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """Return a deep-enough copy of ``value`` with ``path`` set to ``new``."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy: Any = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = set_at(value[head], rest, new) if rest else new
    return copy


def wrong_values(node: Node) -> list[Any]:
    """JSON values of a type the position never accepts."""
    if isinstance(node, StringNode | EnumNode):
        return [42, None, ["x"], {"x": 1}, True]
    if isinstance(node, IntNode):
        return ["42", None, 1.5, True, [1]]
    if isinstance(node, BoolNode):
        return ["true", 1, None, []]
    if isinstance(node, ConstNode):
        return [None, 7, [node.value]]
    if isinstance(node, ArrayNode):
        return [{"x": 1}, "x", None, 3]
    if isinstance(node, ObjectNode | UnionNode):
        return [["x"], "x", None, 3, False]
    if isinstance(node, TypeSwitchNode):
        return [{"x": 1}, None, 3]
    if isinstance(node, AnyNode):
        return [] if node.nullable else [None]
    return []
