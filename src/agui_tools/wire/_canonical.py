"""RFC 8785 JSON canonicalisation (JCS): one byte string per JSON value.

Hashes and signatures over arguments must not depend on who serialised them:
a browser, our agent and an auditor's script must all reach the same bytes.
JCS fixes the three freedoms JSON leaves open — member order (sorted by UTF-16
code units), whitespace (none) and number spelling (ECMAScript's shortest
round-trip form) — and string escaping (only what JSON requires).
"""

from __future__ import annotations

import hashlib
import math
import re
from decimal import Decimal
from typing import Any

__all__ = ["CanonicalError", "canonical_hash", "canonical_json"]


class CanonicalError(ValueError):
    """A value JCS cannot represent: NaN, an infinity, a non-string key, a foreign type."""


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


_PLAIN = re.compile(r'[^\x00-\x1f"\\]*')
"""A string with nothing to escape: written as it is (most ids, hashes and words)."""


def _string(text: str) -> str:
    if _PLAIN.fullmatch(text):
        return f'"{text}"'
    out = ['"']
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char < " ":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _number(value: float) -> str:
    """ECMAScript's Number.prototype.toString for a finite double (RFC 8785 §3.2.2.3)."""
    if not math.isfinite(value):
        raise CanonicalError(f"JSON has no spelling for {value!r} (RFC 8785 §3.2.2.3)")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr gives the shortest round-trip digits; re-lay them out the ECMAScript way.
    parts = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, parts.digits))
    exponent = len(digits) + int(parts.exponent)  # ECMA-262's n: value = 0.d1d2… × 10^n
    k = len(digits)
    if k <= exponent <= 21:
        return sign + digits + "0" * (exponent - k)
    if 0 < exponent <= 21:
        return sign + digits[:exponent] + "." + digits[exponent:]
    if -6 < exponent <= 0:
        return sign + "0." + "0" * (-exponent) + digits
    e = exponent - 1
    e_text = f"e+{e}" if e >= 0 else f"e-{-e}"
    if k == 1:
        return sign + digits + e_text
    return sign + digits[0] + "." + digits[1:] + e_text


def _utf16_key(key: str) -> list[int]:
    data = key.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def _integer(value: int) -> str:
    """An integer as the double it is (RFC 8785), or — where no double is exactly it —
    its own digits: JCS has no spelling for it, and two different integers must never
    share a hash (a receipt for 2^53 must not cover 2^53 + 1)."""
    if abs(value) <= 2**53:
        return str(value)
    try:
        double = float(value)
    except OverflowError:  # beyond the largest double
        return str(value)
    return _number(double) if int(double) == value else str(value)


class _Close(str):
    """A closing bracket or brace queued behind a container's members."""


def _write(value: Any, out: list[str]) -> None:
    # A work list, not recursion: nesting as deep as memory allows is written, never a
    # RecursionError (a hash is taken of whatever arguments a caller hands over).
    todo: list[Any] = [value]
    pop, push, write = todo.pop, todo.append, out.append
    while todo:
        value = pop()
        kind = type(value)
        if kind is _Close:
            write(value)
        elif kind is str:
            write(_string(value))
        elif value is None:
            write("null")
        elif value is True:
            write("true")
        elif value is False:
            write("false")
        elif isinstance(value, str):
            write(_string(value))
        elif isinstance(value, int):
            write(_integer(value))
        elif isinstance(value, float):
            write(_number(value))
        elif isinstance(value, (list, tuple)):
            write("[")
            push(_CLOSE_ARRAY)
            for index in range(len(value) - 1, -1, -1):
                push(value[index])
                if index:
                    push(_COMMA)
        elif isinstance(value, dict):
            for key in value:
                if not isinstance(key, str):
                    raise CanonicalError(f"object key {key!r} is not a string (RFC 8785 §3.2.3)")
            write("{")
            push(_CLOSE_OBJECT)
            # ASCII keys sort the same by code point as by UTF-16 code unit: no key function
            ascii_keys = all(key.isascii() for key in value)
            keys = sorted(value) if ascii_keys else sorted(value, key=_utf16_key)
            for index in range(len(keys) - 1, -1, -1):
                key = keys[index]
                push(value[key])
                push(_Close(("," if index else "") + _string(key) + ":"))
        else:
            raise CanonicalError(f"{type(value).__name__} is not a JSON value")


_COMMA = _Close(",")
_CLOSE_ARRAY = _Close("]")
_CLOSE_OBJECT = _Close("}")


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 bytes of a JSON value (dict, list, str, number, bool, None)."""
    out: list[str] = []
    _write(value, out)
    return "".join(out).encode("utf-8", "surrogatepass")


def canonical_hash(value: Any) -> str:
    """``sha256:<hex>`` of :func:`canonical_json` — the hash a ledger entry or receipt names."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()
