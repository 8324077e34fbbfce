"""Validating closed-call arguments against the tool's ``parameters`` schema (TOOL-21)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

import jsonschema
import pytest

from agui_tools import UsageError
from agui_tools.app._arguments import ArgumentBuffer, ParsedArguments, Preview, parse_arguments
from agui_tools.app._validation import (
    ArgumentError,
    ArgumentValidator,
    Dialect,
    InvalidToolSchema,
)

ORDER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "customer": {"$ref": "#/$defs/customer"},
        "items": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"},
                    "qty": {"type": "integer", "minimum": 1, "maximum": 10},
                },
                "required": ["sku", "qty"],
                "additionalProperties": False,
            },
        },
        "shipping": {"enum": ["standard", "express"]},
        "notes/internal~x": {"type": "string", "maxLength": 5},
    },
    "required": ["customer", "items"],
    "additionalProperties": False,
    "$defs": {
        "customer": {
            "type": "object",
            "properties": {"id": {"type": "integer", "exclusiveMinimum": 0}},
            "required": ["id"],
        }
    },
}

GOOD_ORDER = {
    "customer": {"id": 7},
    "items": [{"sku": "ABC-1", "qty": 2}],
    "shipping": "express",
}


def found(errors: list[ArgumentError]) -> set[tuple[str, str]]:
    return {(e.path, e.keyword) for e in errors}


# -- paths and keywords ------------------------------------------------------------


def test_valid_arguments_have_no_errors() -> None:
    v = ArgumentValidator(ORDER)
    assert v.validate(GOOD_ORDER) == []
    assert v.is_valid(GOOD_ORDER)


def test_nested_failures_name_the_instance_path_and_the_keyword() -> None:
    bad = {
        "customer": {"id": 0},
        "items": [{"sku": "abc", "qty": 11}, {"qty": "two"}],
        "shipping": "drone",
        "notes/internal~x": "far too long",
        "coupon": "X",
    }
    errors = ArgumentValidator(ORDER).validate(bad)
    assert found(errors) == {
        ("/customer/id", "exclusiveMinimum"),  # reached through $ref
        ("/items/0/sku", "pattern"),
        ("/items/0/qty", "maximum"),
        ("/items/1", "required"),  # required lands on the object...
        ("/items/1/qty", "type"),
        ("/shipping", "enum"),
        ("/notes~1internal~0x", "maxLength"),  # RFC 6901 escaping
        ("", "additionalProperties"),
    }
    required = next(e for e in errors if e.keyword == "required")
    assert '"sku"' in required.message  # ...and the message names what is missing
    ref = next(e for e in errors if e.path == "/customer/id")
    assert ref.schema_path == "/$defs/customer/properties/id/exclusiveMinimum"
    assert all(e.message for e in errors)


def test_keyword_is_the_schema_keyword_not_the_error_category() -> None:
    v = ArgumentValidator(
        {
            "properties": {"tags": {"contains": {"const": "x"}, "minContains": 2}},
            "dependentRequired": {"start": ["end"]},
        }
    )
    assert found(v.validate({"tags": ["x"], "start": 1})) == {
        ("/tags", "minContains"),
        ("", "dependentRequired"),
    }


def test_false_subschema() -> None:
    v = ArgumentValidator(
        {"properties": {"type": False, "pair": {"prefixItems": [{}, {}], "items": False}}}
    )
    # a property named like a keyword is not mistaken for one
    assert found(v.validate({"type": 1})) == {("/type", "falseSchema")}
    # a false schema under a keyword is reported as that keyword
    assert found(v.validate({"pair": [1, 2, 3]})) == {("/pair/2", "items")}


def test_errors_agree_with_the_reference_python_implementation() -> None:
    """Differential check against ``jsonschema``: same instance paths, same keywords."""
    instances: list[dict[str, Any]] = [
        GOOD_ORDER,
        {},
        {"customer": {}, "items": []},
        {"customer": {"id": -1}, "items": [{"sku": "ABC-1", "qty": 0, "x": 1}]},
        {"customer": {"id": "7"}, "items": [{"sku": 5, "qty": 1.5}], "shipping": None},
        {"customer": {"id": 1}, "items": "all of them", "notes/internal~x": 3},
    ]
    reference = jsonschema.Draft202012Validator(ORDER)
    ours = ArgumentValidator(ORDER)
    for instance in instances:
        expected = {
            (
                "".join(
                    f"/{str(p).replace('~', '~0').replace('/', '~1')}" for p in e.absolute_path
                ),
                str(e.validator),
            )
            for e in reference.iter_errors(instance)
        }
        assert found(ours.validate(instance)) == expected, instance


def test_long_values_are_elided_from_messages() -> None:
    errors = ArgumentValidator({"properties": {"n": {"type": "integer"}}}).validate(
        {"n": "x" * 1_000_000}
    )
    (error,) = errors
    assert len(error.message) < 300
    assert error.message.endswith('is not of type "integer"')


def test_max_errors_caps_the_list() -> None:
    v = ArgumentValidator({"properties": {"xs": {"items": {"type": "integer"}}}})
    instance = {"xs": ["a"] * 1000}
    assert len(v.validate(instance)) == 1000
    assert len(v.validate(instance, max_errors=3)) == 3


def test_big_integers_are_compared_exactly() -> None:
    v = ArgumentValidator({"properties": {"n": {"type": "integer", "maximum": 10**20}}})
    assert v.validate(parse_arguments('{"n": 100000000000000000000}')) == []  # type: ignore[arg-type]
    assert found(v.validate({"n": 10**20 + 1})) == {("/n", "maximum")}


# -- what may be validated ---------------------------------------------------------


def test_parsed_arguments_from_final_are_accepted() -> None:
    buffer = ArgumentBuffer()
    buffer.append('{"customer": {"id": 7}, "items": [{"sku": "ABC-1", "qty": 20}]}')
    final = buffer.final()
    assert isinstance(final, ParsedArguments)
    assert found(ArgumentValidator(ORDER).validate(final)) == {("/items/0/qty", "maximum")}


def test_a_preview_is_refused() -> None:
    buffer = ArgumentBuffer()
    buffer.append('{"customer": {"id": 7}, "items": []}')
    preview = buffer.preview()
    with pytest.raises(UsageError) as info:
        ArgumentValidator(None).validate(preview)  # type: ignore[arg-type]
    assert info.value.rule == "TOOL-5"
    with pytest.raises(UsageError):
        ArgumentValidator(ORDER).is_valid(Preview({}, 2))  # type: ignore[arg-type]


def test_unparseable_arguments_are_refused() -> None:
    with pytest.raises(UsageError):
        ArgumentValidator(None).validate(parse_arguments("{"))  # type: ignore[arg-type]


# -- absent, empty, trivial schemas ------------------------------------------------


@pytest.mark.parametrize("schema", [None, {}, True])
def test_absent_and_empty_schema_mean_no_constraints_but_an_object(schema: Any) -> None:
    v = ArgumentValidator(schema)
    assert not v.constrained
    assert v.validate({}) == []
    assert v.validate({"anything": [1, {"goes": None}]}) == []
    assert v.is_valid({"a": 1})
    for not_an_object in ([1], "x", 3, None):
        errors = v.validate(not_an_object)  # type: ignore[arg-type]
        assert [(e.path, e.keyword) for e in errors] == [("", "type")]
        assert "JSON object" in errors[0].message
        assert not v.is_valid(not_an_object)  # type: ignore[arg-type]


def test_object_required_even_when_the_schema_does_not_say_so() -> None:
    v = ArgumentValidator({"properties": {"a": {"type": "integer"}}})
    assert found(v.validate([1])) == {("", "type")}  # type: ignore[arg-type]


def test_false_schema_rejects_every_call() -> None:
    v = ArgumentValidator(False)
    assert v.constrained
    assert found(v.validate({})) == {("", "falseSchema")}


# -- dialects ----------------------------------------------------------------------

TUPLE_DRAFT7 = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "properties": {"point": {"items": [{"type": "number"}, {"type": "string"}]}},
}


def test_draft7_items_array_is_tuple_validation() -> None:
    v = ArgumentValidator(TUPLE_DRAFT7)
    assert v.dialect is Dialect.DRAFT_07
    assert found(v.validate({"point": [1, 2]})) == {("/point/1", "type")}
    assert v.validate({"point": [1, "a", None]}) == []  # extra items are not constrained


def test_the_same_schema_without_schema_is_2020_12_where_items_array_is_invalid() -> None:
    schema = {k: v for k, v in TUPLE_DRAFT7.items() if k != "$schema"}
    with pytest.raises(InvalidToolSchema) as info:
        ArgumentValidator(schema)
    assert info.value.schema_path == "/properties/point/items"
    # an explicit dialect overrides the default
    assert ArgumentValidator(schema, dialect="draft-07").validate({"point": [1, 2]}) != []


def test_prefix_items_is_2020_12_only() -> None:
    schema: dict[str, Any] = {
        "properties": {"point": {"prefixItems": [{"type": "number"}, {"type": "string"}]}}
    }
    modern = ArgumentValidator(schema)
    assert modern.dialect is Dialect.DRAFT_2020_12
    assert found(modern.validate({"point": [1, 2]})) == {("/point/1", "type")}
    legacy = ArgumentValidator({"$schema": "http://json-schema.org/draft-07/schema#", **schema})
    assert legacy.validate({"point": [1, 2]}) == []  # an unknown keyword in draft-07


def test_draft4_boolean_exclusive_maximum() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "properties": {"pct": {"maximum": 100, "exclusiveMaximum": True}},
    }
    v = ArgumentValidator(schema)
    assert v.dialect is Dialect.DRAFT_04
    assert v.validate({"pct": 99}) == []
    assert found(v.validate({"pct": 100})) == {("/pct", "exclusiveMaximum")}
    # under 2020-12 a boolean exclusiveMaximum is not a valid schema
    with pytest.raises(InvalidToolSchema):
        ArgumentValidator(schema, dialect=Dialect.DRAFT_2020_12)


def test_draft_2019_09_dependent_required() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2019-09/schema",
        "dependentRequired": {"start": ["end"]},
    }
    v = ArgumentValidator(schema)
    assert v.dialect is Dialect.DRAFT_2019_09
    assert found(v.validate({"start": 1})) == {("", "dependentRequired")}


@pytest.mark.parametrize(
    "uri",
    [
        "http://json-schema.org/draft-07/schema#",
        "http://json-schema.org/draft-07/schema",
        "https://json-schema.org/draft-07/schema#",
    ],
)
def test_schema_uri_spellings(uri: str) -> None:
    assert ArgumentValidator({"$schema": uri, "type": "object"}).dialect is Dialect.DRAFT_07


def test_an_unknown_dialect_is_refused_not_guessed() -> None:
    with pytest.raises(InvalidToolSchema) as info:
        ArgumentValidator({"$schema": "https://example.com/my-meta", "type": "object"})
    assert info.value.schema_path == "/$schema"
    assert "2020-12" in str(info.value)
    with pytest.raises(UsageError):
        ArgumentValidator({}, dialect="draft-99")


def test_format_follows_the_dialect_unless_told() -> None:
    schema: dict[str, Any] = {"properties": {"when": {"format": "date"}}}
    bad = {"when": "next tuesday"}
    assert ArgumentValidator(schema).validate(bad) == []  # 2020-12: an annotation
    assert found(ArgumentValidator(schema, validate_formats=True).validate(bad)) == {
        ("/when", "format")
    }
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", **schema}
    assert found(ArgumentValidator(draft7).validate(bad)) == {("/when", "format")}


# -- invalid schemas: the tool is misconfigured ------------------------------------


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": 5}, "/type"),
        ({"properties": {"a": {"minimum": "one"}}}, "/properties/a/minimum"),
        ({"properties": {"a": {"pattern": "("}}}, "/properties/a/pattern"),
        ({"required": "a"}, "/required"),
        ({"$schema": 7}, "/$schema"),
    ],
)
def test_an_invalid_schema_is_a_clear_error(schema: dict[str, Any], where: str) -> None:
    with pytest.raises(InvalidToolSchema) as info:
        ArgumentValidator(schema)
    assert info.value.schema_path == where
    assert "invalid tool parameters schema" in str(info.value)


def test_an_unresolvable_ref_is_a_clear_error() -> None:
    with pytest.raises(InvalidToolSchema, match="nope"):
        ArgumentValidator({"properties": {"a": {"$ref": "#/$defs/nope"}}})


@pytest.mark.parametrize("schema", [[{"type": "object"}], "object", 3])
def test_a_schema_that_is_not_an_object_is_a_clear_error(schema: Any) -> None:
    with pytest.raises(InvalidToolSchema):
        ArgumentValidator(schema)


def test_a_schema_that_is_not_json_is_a_clear_error() -> None:
    with pytest.raises(InvalidToolSchema):
        ArgumentValidator({"enum": [{1, 2}]})


@pytest.fixture
def schema_server() -> Iterator[tuple[str, list[str]]]:
    requests: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            body = b'{"type": "integer"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/int.json", requests
    finally:
        server.shutdown()
        server.server_close()


def test_remote_refs_are_never_fetched(schema_server: tuple[str, list[str]]) -> None:
    url, requests = schema_server
    with pytest.raises(InvalidToolSchema, match="etriev"):
        ArgumentValidator({"properties": {"n": {"$ref": url}}})
    assert requests == []


# -- compilation is cached ---------------------------------------------------------


def test_equal_schemas_compile_once() -> None:
    schema = {"properties": {"cache_probe": {"type": "integer", "minimum": 12345}}}
    first = ArgumentValidator(schema)
    second = ArgumentValidator(
        {"properties": {"cache_probe": {"type": "integer", "minimum": 12345}}}
    )
    assert first._compiled is second._compiled
    other_dialect = ArgumentValidator(schema, dialect="draft-07")
    assert other_dialect._compiled is not first._compiled


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    current = schema
    for _ in range(depth):
        current["properties"] = {"a": {}}
        current = current["properties"]["a"]
    current["type"] = "integer"
    return schema


def test_deeply_nested_schemas_compile_and_absurd_ones_are_refused_not_crashed() -> None:
    v = ArgumentValidator(nested(80))  # 160 JSON levels: over serde_json's text limit
    instance: Any = "x"
    for _ in range(80):
        instance = {"a": instance}
    assert found(v.validate(instance)) == {("/a" * 80, "type")}
    for depth in (300, 5000):
        with pytest.raises(InvalidToolSchema):
            ArgumentValidator(nested(depth))


def test_any_mapping_is_a_schema() -> None:
    v = ArgumentValidator(MappingProxyType({"required": ["q"]}))
    assert found(v.validate({})) == {("", "required")}
    assert ArgumentValidator(MappingProxyType({})).constrained is False


def test_max_errors_must_be_positive() -> None:
    with pytest.raises(UsageError):
        ArgumentValidator(None).validate({}, max_errors=0)
