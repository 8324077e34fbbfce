"""RFC 8785 canonical JSON: the bytes a ledger hash or receipt signature covers."""

from __future__ import annotations

import json
import random
import shutil
import struct
import subprocess

import pytest

from agui_tools.wire._canonical import CanonicalError, canonical_hash, canonical_json


def test_members_sort_by_utf16_code_units_not_code_points() -> None:
    # U+1F600 is the surrogate pair D83D DE00, which sorts before U+FB33 in UTF-16.
    value = {"\ufb33": 2, "\U0001f600": 1, "é": True, "b": [1, 2.5], "a": None}
    assert canonical_json(value) == (
        '{"a":null,"b":[1,2.5],"é":true,"\U0001f600":1,"\ufb33":2}'.encode()
    )


def test_rfc8785_appendix_b_numbers() -> None:
    assert canonical_json(-0.0) == b"0"
    cases = {
        0.0: "0",
        5e-324: "5e-324",
        1.7976931348623157e308: "1.7976931348623157e+308",
        9007199254740992.0: "9007199254740992",
        295147905179352830000.0: "295147905179352830000",
        1e21: "1e+21",
        1e-7: "1e-7",
        0.000001: "0.000001",
        333333333.3333333: "333333333.3333333",
        1e23: "1e+23",
        -1.5e-10: "-1.5e-10",
    }
    for number, spelling in cases.items():
        assert canonical_json(number).decode() == spelling, number


def test_strings_escape_only_what_json_requires() -> None:
    assert (
        canonical_json('a"\\\b\f\n\r\t\x01\x7f/€')
        == b'"a\\"\\\\\\b\\f\\n\\r\\t\\u0001\x7f/\xe2\x82\xac"'
    )


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {1: "x"}, {"a": object()}])
def test_unrepresentable_values_are_refused_by_name(bad: object) -> None:
    with pytest.raises(CanonicalError):
        canonical_json(bad)


def test_hash_is_independent_of_member_order_and_spelling() -> None:
    assert canonical_hash(json.loads('{"b": 1.0, "a": [1e2]}')) == canonical_hash(
        {"a": [100], "b": 1}
    )
    assert canonical_hash({"a": 1}) != canonical_hash({"a": 2})


def test_numbers_match_ecmascript_in_node() -> None:
    """Random doubles spelled as JavaScript spells them (the peer that must agree)."""
    node = shutil.which("node")
    assert node, "node is part of the toolchain (make test installs it)"
    rng = random.Random(8785)
    doubles = [struct.unpack("<d", rng.randbytes(8))[0] for _ in range(3000)]
    doubles = [d for d in doubles if d == d and abs(d) != float("inf")]
    doubles += [rng.uniform(-1e6, 1e6) for _ in range(1000)] + [
        rng.randint(-(2**53), 2**53) * 1.0 for _ in range(200)
    ]
    script = "let d='';process.stdin.on('data',c=>d+=c).on('end',()=>{process.stdout.write(JSON.stringify(JSON.parse(d).map(String)))})"
    spelled = json.loads(
        subprocess.run(
            [node, "-e", script],
            input=json.dumps(doubles),
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
    )
    ours = [canonical_json(d).decode() for d in doubles]
    mismatches = [
        (d, o, s) for d, o, s in zip(doubles, ours, spelled, strict=True) if o != s and s != "-0"
    ]
    assert not mismatches[:5]


def test_integers_no_double_holds_never_share_a_hash_with_their_neighbour() -> None:
    # 2^53 + 1 is no double: spelt as the double nearest it, it hashed as 2^53 — a
    # receipt or approval of one amount covered the other.
    assert canonical_json(2**53 + 1) == b"9007199254740993"
    assert canonical_hash({"amount": 2**53 + 1}) != canonical_hash({"amount": 2**53})
    assert canonical_hash(-(2**53) - 1) != canonical_hash(-(2**53))
    # an integer that is a double keeps the ECMAScript spelling RFC 8785 gives it
    assert canonical_json(2**60) == b"1152921504606847000"
    assert canonical_json(10**21) == b"1e+21"


def test_an_integer_beyond_every_double_is_its_digits_not_an_overflow() -> None:
    huge = 10**400  # arguments parse it exactly (pydantic_core keeps big integers)
    assert canonical_json({"n": huge}) == b'{"n":' + str(huge).encode() + b"}"
    assert canonical_hash(huge) != canonical_hash(huge + 1)


def test_nesting_deeper_than_the_interpreter_stack_is_written() -> None:
    deep: list[object] = []
    for _ in range(20_000):
        deep = [deep, {"b": 1, "a": deep[:0]}]
    text = canonical_json(deep)
    assert text.startswith(b"[[[") and text.endswith(b',{"a":[],"b":1}]')
    assert text.count(b"[") == text.count(b"]")
