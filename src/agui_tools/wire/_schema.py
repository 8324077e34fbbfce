"""The protocol's JSON Schema, compiled into a small tree the enforcer walks.

Why compile rather than hand-write: the schema (``_data/schema.json``, a copy
of the specification's ``schema.json``) is the source of truth for structure,
and the enforcer must agree with it field by field. A compiler that refuses
keywords it does not understand turns a schema change into an import error
instead of a silent gap.

The tree distinguishes exactly what the processing model needs:

* closed objects (``unevaluatedProperties: false``) whose unknown members are
  stripped, and open ones (metadata, JSON Patch operations, ``responseSchema``)
  whose members are data;
* discriminated unions whose unknown *tag* is an unrecognised member (stripped
  per position), as opposed to a malformed value (fatal);
* closed string sets (``enum``), where an unknown string is likewise
  unrecognised, and ``const``, where a different value is malformed.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Any

import orjson

__all__ = [
    "AnyNode",
    "ArrayNode",
    "BoolNode",
    "ConstNode",
    "EnumNode",
    "IntNode",
    "Node",
    "ObjectNode",
    "StringNode",
    "TypeSwitchNode",
    "UnionNode",
    "compiled",
]


class Node:
    """A compiled schema position. ``name`` is the ``$defs`` name when it has one."""

    __slots__ = ("name",)

    def __init__(self) -> None:
        self.name: str | None = None

    def expected(self) -> str:
        """A short phrase naming what this position accepts, for error messages."""
        raise NotImplementedError


class AnyNode(Node):
    """Any JSON value; ``nullable`` False for ``{"not": {"type": "null"}}``."""

    __slots__ = ("nullable",)

    def __init__(self, nullable: bool) -> None:
        super().__init__()
        self.nullable = nullable

    def expected(self) -> str:
        return "any JSON value" if self.nullable else "any JSON value except null"


class StringNode(Node):
    __slots__ = ("pattern",)

    def __init__(self, pattern: str | None = None) -> None:
        super().__init__()
        self.pattern = re.compile(pattern) if pattern else None

    def expected(self) -> str:
        return "a JSON Pointer string" if self.pattern else "a string"


class IntNode(Node):
    __slots__ = ("maximum", "minimum")

    def __init__(self, minimum: int | None, maximum: int | None) -> None:
        super().__init__()
        self.minimum = minimum
        self.maximum = maximum

    def expected(self) -> str:
        if self.minimum is not None and self.minimum >= 0:
            return "a non-negative integer"
        return "an integer"


class BoolNode(Node):
    __slots__ = ()

    def expected(self) -> str:
        return "a boolean"


class ConstNode(Node):
    """A fixed value. A different value is malformed, not a new member."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value

    def expected(self) -> str:
        return f"exactly {orjson.dumps(self.value).decode()}"


class EnumNode(Node):
    """A closed set of strings; an unknown *string* is an unrecognised member."""

    __slots__ = ("values",)

    def __init__(self, values: frozenset[str]) -> None:
        super().__init__()
        self.values = values

    def expected(self) -> str:
        return "one of " + ", ".join(sorted(self.values))


class ArrayNode(Node):
    __slots__ = ("items", "min_items")

    def __init__(self, items: Node, min_items: int) -> None:
        super().__init__()
        self.items = items
        self.min_items = min_items

    def expected(self) -> str:
        return "an array" if not self.min_items else f"an array of at least {self.min_items}"


class ObjectNode(Node):
    """An object. ``closed`` objects strip unknown members; open ones keep them."""

    __slots__ = ("closed", "known", "props", "required")

    def __init__(self, props: dict[str, Node], required: frozenset[str], closed: bool) -> None:
        super().__init__()
        self.props = props
        self.required = required
        self.closed = closed
        self.known = frozenset(props)

    def expected(self) -> str:
        return "an object"


class UnionNode(Node):
    """A ``oneOf`` of objects told apart by a ``const`` discriminator property."""

    __slots__ = ("discriminator", "variants")

    def __init__(self, discriminator: str, variants: dict[str, ObjectNode]) -> None:
        super().__init__()
        self.discriminator = discriminator
        self.variants = variants

    def expected(self) -> str:
        return f"an object with a string {self.discriminator!r}"


class TypeSwitchNode(Node):
    """A ``oneOf`` of differently-typed alternatives (``content``: string or parts)."""

    __slots__ = ("by_type",)

    def __init__(self, by_type: dict[type, Node]) -> None:
        super().__init__()
        self.by_type = by_type

    def expected(self) -> str:
        names: dict[type, str] = {str: "a string", list: "an array", dict: "an object"}
        return " or ".join(names.get(t, t.__name__) for t in self.by_type)


_IGNORED = frozenset({"description", "title", "$anchor", "default", "examples", "contentEncoding"})


class _Compiler:
    def __init__(self, schema: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = schema["$defs"]
        self.cache: dict[str, Node] = {}

    def ref(self, ref: str) -> Node:
        name = ref.removeprefix("#/$defs/")
        if name not in self.cache:
            node = self.compile(self.defs[name])
            node.name = name
            self.cache[name] = node
        return self.cache[name]

    def _flatten(self, s: dict[str, Any]) -> tuple[dict[str, Any], list[str], bool]:
        """Merge ``allOf`` parts into one property table (most specific wins)."""
        props: dict[str, Any] = {}
        required: list[str] = []
        for part in s.get("allOf", []):
            base = self.defs[part["$ref"].removeprefix("#/$defs/")]
            p, r, _ = self._flatten(base)
            props.update(p)
            required += r
        props.update(s.get("properties", {}))
        required += s.get("required", [])
        closed = s.get("unevaluatedProperties") is False
        return props, required, closed

    def compile(self, s: dict[str, Any]) -> Node:
        unknown = (
            set(s)
            - _IGNORED
            - {
                "$ref",
                "type",
                "properties",
                "required",
                "allOf",
                "unevaluatedProperties",
                "additionalProperties",
                "oneOf",
                "items",
                "const",
                "enum",
                "not",
                "minimum",
                "maximum",
                "minItems",
                "pattern",
            }
        )
        if unknown:
            raise ValueError(f"schema keyword(s) the enforcer does not understand: {unknown}")
        if "not" in s:
            if s["not"] != {"type": "null"}:
                raise ValueError(f"unsupported 'not': {s['not']}")
            rest = {k: v for k, v in s.items() if k != "not" and k not in _IGNORED}
            if rest.get("$ref") == "#/$defs/State" or not rest:
                return AnyNode(nullable=False)
            raise ValueError(f"unsupported 'not' combination: {rest}")
        if "$ref" in s:
            return self.ref(s["$ref"])
        if "const" in s:
            return ConstNode(s["const"])
        if "enum" in s:
            return EnumNode(frozenset(s["enum"]))
        if "oneOf" in s:
            return self._one_of(s["oneOf"])
        kind = s.get("type")
        if kind is None:
            if set(s) - _IGNORED:
                raise ValueError(f"untyped schema with constraints: {s}")
            return AnyNode(nullable=True)
        if kind == "string":
            return StringNode(s.get("pattern"))
        if kind == "integer":
            return IntNode(s.get("minimum"), s.get("maximum"))
        if kind == "boolean":
            return BoolNode()
        if kind == "array":
            return ArrayNode(self.compile(s["items"]), s.get("minItems", 0))
        if kind == "object":
            props, required, closed = self._flatten(s)
            compiled_props = {k: self.compile(v) for k, v in props.items()}
            return ObjectNode(compiled_props, frozenset(required), closed)
        raise ValueError(f"unsupported type {kind!r}")

    def _one_of(self, options: list[dict[str, Any]]) -> Node:
        nodes = [self.compile(o) for o in options]
        if all(isinstance(n, ObjectNode) for n in nodes):
            objects = [n for n in nodes if isinstance(n, ObjectNode)]
            for key in objects[0].props:
                if all(
                    isinstance(o.props.get(key), ConstNode) and key in o.required for o in objects
                ):
                    variants = {}
                    for o in objects:
                        tag = o.props[key]
                        assert isinstance(tag, ConstNode)
                        variants[str(tag.value)] = o
                    return UnionNode(key, variants)
            raise ValueError("oneOf of objects without a const discriminator")
        by_type: dict[type, Node] = {}
        for n in nodes:
            if isinstance(n, StringNode):
                by_type[str] = n
            elif isinstance(n, ArrayNode):
                by_type[list] = n
            else:
                raise ValueError(f"unsupported oneOf member {type(n).__name__}")
        return TypeSwitchNode(by_type)


class CompiledSchema:
    """The compiled definitions the enforcer needs, by ``$defs`` name."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.id: str = raw.get("$id", "")
        compiler = _Compiler(raw)
        self._compiler = compiler
        event = compiler.ref("#/$defs/Event")
        assert isinstance(event, UnionNode)
        self.event: UnionNode = event
        run_input = compiler.ref("#/$defs/RunAgentInput")
        assert isinstance(run_input, ObjectNode)
        self.run_input: ObjectNode = run_input
        message = compiler.ref("#/$defs/Message")
        assert isinstance(message, UnionNode)
        self.message: UnionNode = message

    def definition(self, name: str) -> Node:
        return self._compiler.ref(f"#/$defs/{name}")

    @property
    def event_types(self) -> frozenset[str]:
        return frozenset(self.event.variants)


@cache
def compiled() -> CompiledSchema:
    """The bundled schema, compiled once per process."""
    data = resources.files("agui_tools").joinpath("_data/schema.json").read_bytes()
    return CompiledSchema(orjson.loads(data))
