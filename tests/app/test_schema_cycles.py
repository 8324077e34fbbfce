"""Issue 28, item 9: ``$ref`` cycles the first check (issue 11, item 13) missed.

Each compiled before — jsonschema-rs then passed any arguments, or refused every
one — because the check only walked in-place applicators from the root, and
resolved only plain ``#/pointer`` references: a cycle under ``properties`` or
``additionalProperties``, one through an ``$anchor``, an absolute or nested
``$id``, a percent-encoded pointer, ``$dynamicRef`` or ``$recursiveRef`` were
not seen.
"""

from __future__ import annotations

from typing import Any

import pytest

from agui_tools.app import Conversation, ToolSpec
from agui_tools.app._validation import ArgumentValidator, InvalidToolSchema

D2019 = "https://json-schema.org/draft/2019-09/schema"
D7 = "http://json-schema.org/draft-07/schema#"

CYCLES: dict[str, tuple[dict[str, Any], str]] = {
    "under-properties": (
        {"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}},
        "/properties/a",
    ),
    "under-additionalProperties": (
        {"additionalProperties": {"anyOf": [{"$ref": "#/additionalProperties"}]}},
        "/additionalProperties/anyOf/0",
    ),
    "anchor": (
        {
            "$defs": {"a": {"$anchor": "loop", "allOf": [{"$ref": "#loop"}]}},
            "properties": {"p": {"$ref": "#/$defs/a"}},
        },
        "/$defs/a/allOf/0",
    ),
    "absolute-id": (
        {
            "$id": "https://example.test/tool.json",
            "not": {"$ref": "https://example.test/tool.json"},
        },
        "/not",
    ),
    "relative-to-a-nested-id": (
        {
            "$id": "https://example.test/tool.json",
            "$defs": {"x": {"$id": "x.json", "allOf": [{"$ref": "x.json#"}]}},
            "properties": {"p": {"$ref": "x.json"}},
        },
        "/$defs/x/allOf/0",
    ),
    "percent-encoded-pointer": (
        {
            "$defs": {"a b": {"$ref": "#/%24defs/a%20b"}},
            "properties": {"p": {"$ref": "#/$defs/a%20b"}},
        },
        "/$defs/a b",
    ),
    "dynamicRef": (
        {"$dynamicAnchor": "meta", "allOf": [{"$dynamicRef": "#meta"}]},
        "/allOf/0",
    ),
    "recursiveRef": (
        {"$schema": D2019, "$recursiveAnchor": True, "anyOf": [{"$recursiveRef": "#"}]},
        "/anyOf/0",
    ),
    "draft-07-id-anchor": (
        {"$schema": D7, "definitions": {"a": {"$id": "#foo", "allOf": [{"$ref": "#foo"}]}}},
        "/definitions/a/allOf/0",
    ),
}


@pytest.mark.parametrize(("schema", "where"), CYCLES.values(), ids=CYCLES.keys())
def test_a_ref_cycle_anywhere_is_refused_naming_where(schema: dict[str, Any], where: str) -> None:
    with pytest.raises(InvalidToolSchema, match=r"\$ref cycle") as caught:
        Conversation(tools=[ToolSpec("t", "a tool", parameters=schema)])
    assert caught.value.schema_path == where


TREES: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    # each recursion consumes a level of the instance: a schema like any other
    "anchor-through-items": (
        {
            "$anchor": "node",
            "type": "object",
            "properties": {"kids": {"type": "array", "items": {"$ref": "#node"}}},
            "required": ["n"],
        },
        {"n": 1, "kids": [{"n": 2}]},
        {"n": 1, "kids": [{}]},
    ),
    "dynamicRef-through-properties": (
        {
            "$dynamicAnchor": "node",
            "type": "object",
            "properties": {"next": {"$dynamicRef": "#node"}, "n": {"type": "integer"}},
        },
        {"n": 1, "next": {"n": 2}},
        {"n": 1, "next": {"n": "x"}},
    ),
    "percent-encoded-and-nested-id": (
        {
            "$id": "https://example.test/tool.json",
            "$defs": {
                "a b": {"type": "integer"},
                "x": {"$id": "x.json", "type": "object", "properties": {"me": {"$ref": "x.json"}}},
            },
            "properties": {"p": {"$ref": "#/$defs/a%20b"}, "q": {"$ref": "x.json"}},
        },
        {"p": 1, "q": {"me": {}}},
        {"p": "x"},
    ),
    "a ref-shaped value is data, not a schema": (
        {
            "properties": {
                "p": {"const": {"$ref": "#"}},
                "q": {"enum": [{"$ref": "#/properties/q"}]},
            }
        },
        {"p": {"$ref": "#"}},
        {"p": 1},
    ),
}


@pytest.mark.parametrize(("schema", "good", "bad"), TREES.values(), ids=TREES.keys())
def test_recursion_that_consumes_the_instance_still_validates(
    schema: dict[str, Any], good: dict[str, Any], bad: dict[str, Any]
) -> None:
    validator = ArgumentValidator(schema)
    assert validator.validate(good) == []
    assert validator.validate(bad) != []
