"""Argument text: previews while streaming (a prefix, cheaply), a verdict at TOOL_CALL_END."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import from_json

from agui_tools import UsageError
from agui_tools.app import _arguments as arguments_module
from agui_tools.app._arguments import (
    ArgumentBuffer,
    ParsedArguments,
    Preview,
    PreviewPolicy,
    UnparseableArguments,
    parse_arguments,
)

# -- preview: a prefix, filling in ------------------------------------------------


def stream(text: str, step: int = 1) -> Iterator[tuple[ArgumentBuffer, Preview]]:
    buffer = ArgumentBuffer()
    for i in range(0, len(text), step):
        buffer.append(text[i : i + step])
        yield buffer, buffer.preview()


def test_preview_of_a_growing_object_shows_fields_filling_in() -> None:
    text = '{"city": "Paris", "days": 31, "tags": ["a", "b"]}'
    values = [p.value for _, p in stream(text)]
    # in order, each of these states is seen
    milestones: list[Any] = [
        {},
        {"city": "P"},
        {"city": "Paris"},
        {"city": "Paris", "days": 3},
        {"city": "Paris", "days": 31},
        {"city": "Paris", "days": 31, "tags": ["a"]},
        {"city": "Paris", "days": 31, "tags": ["a", "b"]},
    ]
    at = 0
    for m in milestones:
        at = values.index(m, at)
    # a field never disappears once shown
    for before, after in itertools.pairwise(values):
        assert set(before) <= set(after)


def test_partial_mode_on_hides_strings_until_closed() -> None:
    buffer = ArgumentBuffer(policy=PreviewPolicy(partial="on"))
    buffer.append('{"n": 1, "city": "Par')
    assert buffer.preview().value == {"n": 1}
    buffer.append('is"')
    assert buffer.preview().value == {"n": 1, "city": "Paris"}


def test_preview_never_claims_completeness() -> None:
    text = '{"confirm": true}'
    previews = [p for _, p in stream(text)]
    assert previews[-1].value == {"confirm": True}  # the whole text has arrived...
    for p in previews:  # ...and it is still a prefix, because END has not
        assert p.complete is False
        assert p.is_prefix is True
        assert "PREFIX" in repr(p)


def test_preview_cannot_be_built_as_complete() -> None:
    with pytest.raises(TypeError):
        Preview({"a": 1}, 8, complete=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Preview({"a": 1}, 8, is_prefix=False)  # type: ignore[call-arg]
    p = Preview({"a": 1}, 8)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.complete = True  # type: ignore[misc, assignment]


def test_preview_offers_no_way_to_become_arguments() -> None:
    public = {name for name in dir(Preview) if not name.startswith("_")}
    assert public == {"value", "chars", "error", "complete", "is_prefix"}


def test_preview_before_anything_and_of_blank_text() -> None:
    buffer = ArgumentBuffer()
    assert buffer.preview() == Preview(None, 0)
    buffer.append("  \n")
    p = buffer.preview()
    assert p.value is None and p.error is None and p.chars == 3


def test_preview_of_malformed_text_is_none_with_a_reason() -> None:
    buffer = ArgumentBuffer()
    buffer.append('{"a": 1, "b": nope')
    p = buffer.preview()
    assert p.value is None
    assert p.error is not None and "expected" in p.error


def test_short_arguments_update_on_every_delta() -> None:
    text = orjson.dumps({"rows": [{"i": i, "name": f"row {i}"} for i in range(150)]}).decode()
    assert len(text) <= PreviewPolicy().live_limit
    for buffer, p in stream(text, step=3):
        assert p.chars == buffer.size


def test_empty_delta_does_not_reparse(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_partial_parses(monkeypatch)
    buffer = ArgumentBuffer('{"a": 1')
    first = buffer.preview()
    buffer.append("")
    assert buffer.preview() is first
    assert calls["n"] == 1


def test_large_argument_preview_lags_by_at_most_the_policy_step() -> None:
    policy = PreviewPolicy()
    text = '{"body": "' + "x" * 300_000 + '"}'
    for buffer, p in stream(text, step=1000):
        lag = buffer.size - p.chars
        assert 0 <= lag < max(policy.min_step, policy.growth * p.chars)
    assert p.value is not None and len(p.value["body"]) > 200_000


# -- preview cost: linear, by counting the work ------------------------------------


def count_partial_parses(
    monkeypatch: pytest.MonkeyPatch, budget: float = math.inf
) -> dict[str, int]:
    """Count the lenient parses and their characters; fail fast once over ``budget``.

    Failing fast matters: a quadratic preview on 1 MB would parse ~50 GB and
    the test would hang instead of failing.
    """
    counter = {"n": 0, "chars": 0}
    real = from_json

    def counting(data: str, **kwargs: Any) -> Any:
        if kwargs.get("allow_partial"):
            counter["n"] += 1
            counter["chars"] += len(data)
            assert counter["chars"] <= budget, f"parsed {counter['chars']:,} chars so far"
        return real(data, **kwargs)

    monkeypatch.setattr(arguments_module, "from_json", counting)
    return counter


def one_megabyte_object() -> str:
    rows = []
    i = 0
    size = 2
    while size < 1_000_000:
        row = {"id": i, "sku": f"SKU-{i:07d}", "qty": i % 17, "note": "handle with care"}
        rows.append(row)
        size += len(orjson.dumps(row)) + 1
        i += 1
    return orjson.dumps({"rows": rows}).decode()


def test_previewing_1mb_in_10_byte_deltas_after_every_delta_is_linear(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = one_megabyte_object()
    n = len(text)
    c = 6  # the documented bound with the defaults is 5 N + live_limit² / 2·(delta size)
    counter = count_partial_parses(monkeypatch, budget=c * n)
    buffer = ArgumentBuffer()
    last: Preview | None = None
    for i in range(0, n, 10):
        buffer.append(text[i : i + 10])
        last = buffer.preview()
    assert counter["chars"] <= c * n
    # and the bound's own terms: geometric tail plus the live head
    policy = buffer.policy
    live_deltas = policy.live_limit // 10
    bound = n * (1 + policy.growth) / policy.growth + policy.live_limit * live_deltas
    assert counter["chars"] <= bound
    # parses: one per delta while live, then logarithmically many
    assert counter["n"] <= live_deltas + 1 + math.log(n / policy.live_limit, 1 + policy.growth) + 1
    # the preview still shows most of the rows
    assert last is not None and len(last.value["rows"]) > 0.75 * len(orjson.loads(text)["rows"])


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=700), min_size=1, max_size=150),
    live_limit=st.integers(min_value=0, max_value=2000),
    growth=st.floats(min_value=0.05, max_value=2.0),
    min_step=st.integers(min_value=0, max_value=3000),
)
def test_documented_bound_holds_for_any_split_and_policy(
    sizes: list[int], live_limit: int, growth: float, min_step: int
) -> None:
    text = '["' + "y" * sum(sizes) + '"]'
    policy = PreviewPolicy(live_limit=live_limit, growth=growth, min_step=min_step)
    buffer = ArgumentBuffer(policy=policy)
    parsed, live_deltas, pos = 0, 0, 0
    previous: Preview | None = None
    for size in [*sizes, len(text) - sum(sizes)]:
        buffer.append(text[pos : pos + size])
        pos += size
        if size and buffer.size <= live_limit:
            live_deltas += 1
        p = buffer.preview()
        if p is not previous:
            parsed += p.chars
            previous = p
    n = len(text)
    assert parsed <= n * (1 + growth) / growth + live_limit * min(live_limit, live_deltas) + 1


def test_policy_refuses_settings_that_break_the_bound() -> None:
    with pytest.raises(UsageError):
        PreviewPolicy(growth=0)
    with pytest.raises(UsageError):
        PreviewPolicy(live_limit=-1)
    with pytest.raises(UsageError):
        PreviewPolicy(partial="off")  # type: ignore[arg-type]


# -- the buffer --------------------------------------------------------------------


def test_buffer_accumulates_text_and_size_in_characters() -> None:
    buffer = ArgumentBuffer()
    for piece in ['{"é', '": "', "😀", '"}']:
        buffer.append(piece)
    assert buffer.text == '{"é": "😀"}'
    assert buffer.size == len('{"é": "😀"}')
    buffer.append("")
    buffer.append(" ")
    assert buffer.text == '{"é": "😀"} '


def test_buffer_refuses_a_non_text_delta() -> None:
    with pytest.raises(UsageError):
        ArgumentBuffer().append(b"{}")  # type: ignore[arg-type]


def test_final_follows_a_reopened_call() -> None:
    """TOOL-7: a closed call may be reopened and further arguments append."""
    buffer = ArgumentBuffer()
    buffer.append('{"a":')
    first = buffer.final()
    assert isinstance(first, UnparseableArguments)
    assert buffer.final() is first  # cached while nothing arrives
    buffer.append(" 1}")
    assert buffer.final() == ParsedArguments({"a": 1})


# -- final: the strict verdict -----------------------------------------------------


def test_valid_object() -> None:
    assert parse_arguments('{"q": "x", "n": [1, 2.5, null]}') == ParsedArguments(
        {"q": "x", "n": [1, 2.5, None]}
    )


@pytest.mark.parametrize("text", ["", " ", "\n\t\r "])
def test_empty_text_means_no_arguments(text: str) -> None:
    assert parse_arguments(text) == ParsedArguments({}, from_empty_text=True)


def test_a_no_break_space_is_not_json_whitespace() -> None:
    result = parse_arguments("\u00a0")
    assert isinstance(result, UnparseableArguments) and result.kind == "syntax"


@pytest.mark.parametrize(
    ("text", "offender"),
    [
        ('{"a": x}', "x"),
        ('{"é": "ü", x: 1}', "x"),  # multi-byte characters before the error
        ('{"😀": 1, x}', "x"),  # astral-plane characters before the error
        ('{\n  "a": 1,\n  "b": ?\n}', "?"),  # on a later line
        ('{"a": 1}{"b": 2}', "{"),  # two objects glued together
        ('{"a": NaN}', "N"),  # not JSON
        ('{"a": "tab\there"}', "\t"),  # raw control character in a string
    ],
)
def test_invalid_json_is_unparseable_with_the_position_of_the_problem(
    text: str, offender: str
) -> None:
    result = parse_arguments(text)
    assert isinstance(result, UnparseableArguments)
    assert result.kind == "syntax"
    assert text[result.position] == offender
    line = text.count("\n", 0, result.position) + 1
    column = result.position - (text.rfind("\n", 0, result.position) + 1) + 1
    assert f"line {line}, column {column}" in result.reason
    assert str(result) == result.reason


def test_truncated_text_points_at_its_end() -> None:
    text = '{"a": [1, 2'
    result = parse_arguments(text)
    assert isinstance(result, UnparseableArguments)
    assert result.position == len(text)
    assert "EOF" in result.reason


@pytest.mark.parametrize(
    ("text", "type_name"),
    [("[1]", "an array"), ('"x"', "a string"), ("  42", "an integer"), ("null", "a null")],
)
def test_a_non_object_is_unparseable_for_a_tool(text: str, type_name: str) -> None:
    result = parse_arguments(text)
    assert isinstance(result, UnparseableArguments)
    assert result.kind == "not_an_object"
    assert "must be a JSON object" in result.reason and type_name in result.reason
    assert result.position == len(text) - len(text.lstrip())


def test_lone_surrogate_is_an_encoding_problem() -> None:
    text = '{"a": "\ud800"}'
    result = parse_arguments(text)
    assert isinstance(result, UnparseableArguments)
    assert result.kind == "encoding" and result.position == 7


def test_big_integers_stay_exact() -> None:
    result = parse_arguments('{"order": 123456789012345678901234567890}')
    assert result == ParsedArguments({"order": 123456789012345678901234567890})


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('{}[]":,0123456789.eE-+ \ntrufalsn\\xé😀'))))
def test_final_never_raises_and_positions_are_in_range(text: str) -> None:
    result = parse_arguments(text)
    if isinstance(result, UnparseableArguments):
        assert 0 <= result.position <= len(text)
    else:
        assert isinstance(result.value, dict)
