"""Argument previews while streaming, and argument validation at TOOL_CALL_END.

* preview: a JSON argument text arrives in 10-byte deltas and the UI asks
  for a preview after every one. Ours is :meth:`ArgumentBuffer.preview`
  (throttled, amortised linear); the naive way re-parses the whole prefix
  with ``pydantic_core.from_json(allow_partial=True)`` each time — quadratic,
  so it is only run on 64 KB and 128 KB, where doubling the size should
  roughly quarter its delta rate while ours stays flat.
* validation: a realistic tool schema (nested line items, ``$ref``, enums,
  patterns, bounds) against arguments of three sizes, ``jsonschema-rs``
  (what :class:`ArgumentValidator` uses) vs the pure-Python ``jsonschema``,
  both compiled once; plus one invalid payload collecting every error.

Rates are deltas/s for previews and validations/s for validation.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import jsonschema
import orjson
from pydantic_core import from_json

from agui_tools.app._arguments import ArgumentBuffer
from agui_tools.app._validation import ArgumentValidator

from .harness import Result, measure, table

DELTA = 10


def argument_text(size: int) -> str:
    """A realistic large argument: an order with many line items, about ``size`` chars."""
    items: list[dict[str, Any]] = []
    text = ""
    while len(text) < size:
        i = len(items)
        items.append(
            {
                "sku": f"SKU-{i:07d}",
                "qty": i % 9 + 1,
                "price": round(3.5 + i % 50, 2),
                "note": "gift wrap, leave at the door",
            }
        )
        if i % 64 == 0:
            text = orjson.dumps(_order(items)).decode()
    return orjson.dumps(_order(items)).decode()[: max(size, 2)]


def _order(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"customer": {"id": 42, "email": "a@example.com"}, "shipping": "express", "items": items}


def _deltas(text: str) -> list[str]:
    return [text[i : i + DELTA] for i in range(0, len(text), DELTA)]


def preview_results(sizes: tuple[int, ...] = (65_536, 131_072, 1_048_576)) -> list[Result]:
    out: list[Result] = []
    for size in sizes:
        deltas = _deltas(argument_text(size))

        def ours(deltas: list[str] = deltas) -> None:
            buffer = ArgumentBuffer()
            for d in deltas:
                buffer.append(d)
                buffer.preview()

        out.append(measure(f"ArgumentBuffer.preview, {_kb(size)}", len(deltas), ours))
    for size in sizes:
        if size > 131_072:
            continue  # quadratic: 1 MB would parse ~50 GB
        deltas = _deltas(argument_text(size))

        def naive(deltas: list[str] = deltas) -> None:
            text = ""
            for d in deltas:
                text += d
                from_json(text, allow_partial="trailing-strings")

        out.append(measure(f"naive from_json(prefix), {_kb(size)}", len(deltas), naive, repeats=1))
    return out


def _parsed_chars(text: str) -> tuple[int, int]:
    """Characters ``ArgumentBuffer.preview`` actually parsed for ``text`` in 10-byte deltas."""
    buffer = ArgumentBuffer()
    parsed, last = 0, None
    for d in _deltas(text):
        buffer.append(d)
        p = buffer.preview()
        if p is not last:
            parsed, last = parsed + p.chars, p
    return len(text), parsed


def _kb(size: int) -> str:
    return f"{size // 1024} KB" if size < 1_048_576 else f"{size // 1_048_576} MB"


TOOL_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "customer": {"$ref": "#/$defs/customer"},
        "shipping": {"enum": ["standard", "express", "pickup"]},
        "items": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "sku": {"type": "string", "pattern": "^SKU-[0-9]{7}$"},
                    "qty": {"type": "integer", "minimum": 1, "maximum": 99},
                    "price": {"type": "number", "exclusiveMinimum": 0},
                    "note": {"type": "string", "maxLength": 200},
                },
                "required": ["sku", "qty", "price"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["customer", "items"],
    "additionalProperties": False,
    "$defs": {
        "customer": {
            "type": "object",
            "properties": {
                "id": {"type": "integer", "minimum": 1},
                "email": {"type": "string", "maxLength": 254},
            },
            "required": ["id"],
        }
    },
}


def validation_results() -> list[Result]:
    ours = ArgumentValidator(TOOL_SCHEMA)
    reference = jsonschema.Draft202012Validator(TOOL_SCHEMA)
    reference.check_schema(TOOL_SCHEMA)
    out: list[Result] = []
    # (items, validations per timing for jsonschema-rs, for jsonschema): ~0.1-0.5 s each
    for n_items, rs_n, py_n in ((2, 20_000, 500), (100, 2_000, 20), (10_000, 20, 1)):
        args = _order(_items(n_items))
        assert ours.validate(args) == [] and not list(reference.iter_errors(args))
        label = f"valid, {n_items} items, {len(orjson.dumps(args)) / 1024:,.1f} KB"
        out.append(
            measure(f"jsonschema-rs (ArgumentValidator), {label}", rs_n, _run(ours, args, rs_n))
        )
        out.append(measure(f"jsonschema (Python), {label}", py_n, _run(reference, args, py_n), 2))
    bad = _order(_items(100))
    for i, item in enumerate(bad["items"]):
        if i % 3 == 0:
            item["qty"] = 0
            item["sku"] = "sku"
    n_errors = len(ours.validate(bad))
    assert n_errors == len(list(reference.iter_errors(bad)))
    label = f"invalid, 100 items, all {n_errors} errors collected"
    out.append(measure(f"jsonschema-rs (ArgumentValidator), {label}", 500, _run(ours, bad, 500)))
    out.append(measure(f"jsonschema (Python), {label}", 40, _run(reference, bad, 40), 2))
    return out


def _run(
    validator: ArgumentValidator | jsonschema.protocols.Validator, args: dict[str, Any], n: int
) -> Callable[[], None]:
    """``n`` validations collecting every error, the way a tool host would."""
    if isinstance(validator, ArgumentValidator):
        validate = validator.validate

        def rs() -> None:
            for _ in range(n):
                validate(args)

        return rs
    iter_errors = validator.iter_errors

    def py() -> None:
        for _ in range(n):
            list(iter_errors(args))

    return py


def _items(n: int) -> list[dict[str, Any]]:
    return [
        {"sku": f"SKU-{i:07d}", "qty": i % 9 + 1, "price": 3.5 + i % 50, "note": "gift wrap"}
        for i in range(n)
    ]


def results() -> list[Result]:
    """Every measurement of this module: previews first, then validation."""
    return preview_results() + validation_results()


def _ratios(results: list[Result]) -> str:
    """jsonschema-rs / jsonschema, pairwise (results alternate rs, py)."""
    rows = ["| case | jsonschema-rs ÷ jsonschema |", "|---|---:|"]
    for rs, py in zip(results[::2], results[1::2], strict=True):
        rows.append(f"| {rs.name.split(', ', 1)[1]} | {rs.rate / py.rate:,.1f}× |")
    return "\n".join(rows) + "\n"


def main() -> int:
    previews = preview_results()
    print(table("Argument preview after every 10-byte delta (deltas/s)", previews))
    ours = [r for r in previews if not r.name.startswith("naive")]
    naive = [r for r in previews if r.name.startswith("naive")]
    print("Total time when the text doubles from 64 KB to 128 KB (2× is linear, 4× quadratic):")
    for group in (ours, naive):
        print(f"- {group[0].name.split(',')[0]}: {group[1].seconds / group[0].seconds:.1f}×")
    print()
    print("Characters parsed in total (the algorithmic cost behind those rates):")
    for size in (65_536, 131_072, 1_048_576):
        n, ours_chars = _parsed_chars(argument_text(size))
        naive_chars = sum(min(i + DELTA, n) for i in range(0, n, DELTA))
        print(f"- {_kb(size)}: ours {ours_chars / n:.1f}× the text, naive {naive_chars / n:,.0f}×")
    print()
    validations = validation_results()
    print(table("Argument validation, compiled once (validations/s)", validations))
    print(_ratios(validations))
    return 0


if __name__ == "__main__":
    sys.exit(main())
