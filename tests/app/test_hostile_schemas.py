"""Item 13 (issue 11): a ``$ref`` cycle in an advertised tool schema is refused at
registration. Before, ``{"$ref": "#"}`` compiled and then passed any arguments."""

from __future__ import annotations

from typing import Any

import pytest

from agui_tools.app import Conversation, ToolSpec
from agui_tools.app._validation import ArgumentValidator, InvalidToolSchema


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"$ref": "#"}, ""),
        (
            {
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
                "$ref": "#/$defs/a",
            },
            "/$defs/b/allOf/0",
        ),
        (
            {"type": "object", "anyOf": [{"required": ["x"]}, {"not": {"$ref": "#"}}]},
            "/anyOf/1/not",
        ),
    ],
)
def test_a_ref_cycle_is_refused_at_registration(schema: dict[str, Any], where: str) -> None:
    with pytest.raises(InvalidToolSchema, match=r"\$ref cycle") as caught:
        Conversation(tools=[ToolSpec("t", "a tool", parameters=schema)])
    assert caught.value.schema_path == where


def test_recursion_through_the_instance_is_a_schema_like_any_other() -> None:
    """A tree: each $ref applies to a smaller value, so validation ends."""
    tree = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#"}},
        },
        "required": ["name"],
    }
    validator = ArgumentValidator(tree)
    assert validator.validate({"name": "a", "children": [{"name": "b", "children": []}]}) == []
    [error] = validator.validate({"name": "a", "children": [{"children": []}]})
    assert error.keyword == "required" and error.path == "/children/0"
