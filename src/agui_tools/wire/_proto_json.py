"""Open JSON values as the binary binding's ``JsonValue`` / ``JsonObject`` messages.

Written in JavaScript property order (the official encoder's, visible in the
bytes: :func:`js_key_order`); read back as the official decoder reads them —
an integral double is the integer it spells, a value message with no kind set
is absent (:data:`NO_VALUE`).
"""

from __future__ import annotations

from collections.abc import Mapping
from math import copysign
from typing import Any, Final

__all__ = [
    "NO_VALUE",
    "SAFE_INTEGER",
    "fill_object",
    "fill_value",
    "js_key_order",
    "object_or_none",
    "read_object",
    "read_value",
]

SAFE_INTEGER: Final = 9007199254740991  # 2^53 - 1: JSON numbers round-trip up to here


def _is_array_index(key: str) -> bool:
    """A key JavaScript orders before all others: a canonical integer below 2^32 - 1."""
    return (
        key.isdigit() and key.isascii() and (key == "0" or key[0] != "0") and int(key) < 4294967295
    )


def js_key_order(obj: Mapping[str, Any]) -> list[str]:
    """``obj``'s keys in the order ``Object.keys`` would give them.

    The official encoder writes an open object's entries in that order, and a
    map's entry order is visible in the bytes; a ``dict`` keeps insertion order,
    which equals it unless a key is an array index.
    """
    keys = list(obj)
    if not any(k[:1].isdigit() for k in keys):
        return keys
    index = sorted((k for k in keys if _is_array_index(k)), key=int)
    if not index:
        return keys
    return index + [k for k in keys if not _is_array_index(k)]


def fill_value(m: Any, v: Any) -> None:
    cls = v.__class__
    if cls is str:
        m.string_value = v
    elif cls is bool:
        m.bool_value = v
    elif cls is int or cls is float:
        m.number_value = v
    elif v is None:
        m.null_value = 0
    elif cls is dict or isinstance(v, Mapping):
        o = m.struct_value
        o.SetInParent()
        fill_object(o, v)
    elif cls is list or cls is tuple:
        lv = m.list_value
        lv.SetInParent()
        add = lv.values.add
        for x in v:
            fill_value(add(), x)
    else:
        raise TypeError(f"not a JSON value: {type(v).__name__}")


def fill_object(m: Any, obj: Mapping[str, Any]) -> None:
    add = m.fields.add
    for k in js_key_order(obj):
        e = add()
        e.key = k
        fill_value(e.value, obj[k])


NO_VALUE: Final = object()
"""A JSON value message with no kind set: the official decoder reads it as
``undefined`` — the member is absent."""


def read_value(m: Any) -> Any:
    kind = m.WhichOneof("kind")
    if kind == "string_value":
        return m.string_value
    if kind == "number_value":
        n = m.number_value
        # JSON has one number type; an integral double is the integer it spells
        # (but -0.0 stays itself: JavaScript keeps the sign, and so must a re-encode)
        if n.is_integer() and -SAFE_INTEGER <= n <= SAFE_INTEGER and (n or copysign(1.0, n) > 0):
            return int(n)
        return n
    if kind == "bool_value":
        return m.bool_value
    if kind == "struct_value":
        return read_object(m.struct_value)
    if kind == "list_value":
        return [None if (x := read_value(v)) is NO_VALUE else x for v in m.list_value.values]
    if kind == "null_value":
        return None
    return NO_VALUE


def read_object(m: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for e in m.fields:
        v = read_value(e.value) if e.HasField("value") else NO_VALUE
        if v is not NO_VALUE:
            out[e.key] = v
    return out


def object_or_none(value: Any) -> Mapping[str, Any] | None:
    """Metadata as the wire declares it (an object) or nothing: a non-object
    is dropped, as the official encoder's ``normalizeMetadata`` does."""
    return value if isinstance(value, Mapping) else None
