"""An independent attempt at issue #37's promises, with only the docs in hand: each
test is an attack that got through, kept as its regression test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.proxy import post, proxied
from tests.helpers.scripted_server import serve
from tests.transport.test_mock_hostile_dir import exchange, good, loaded, served
from tests.transport.test_proxy_query import INPUT, upstream


@pytest.mark.parametrize(
    "meta",
    [
        {"status": 500, "contentType": " text/plain"},
        {"status": 500, "contentType": "text/plain\t"},
        {"status": 302, "location": "/elsewhere "},
    ],
)
def test_a_meta_value_with_edge_whitespace_is_left_out_not_an_h11_error(
    tmp_path: Path, meta: dict[str, Any]
) -> None:
    """RFC 9110 §5.5: a field value has no leading or trailing whitespace, and h11
    refuses one that has — a `LocalProtocolError` traceback on each request, 0 bytes
    to the client, as CR/LF gave before the round."""
    folder = tmp_path / "rec"
    folder.mkdir()
    exchange(folder, 1, meta, b"recorded", "body")
    good(folder, 2)
    runs, skipped = loaded(folder)
    assert runs == 1 and len(skipped) == 1, skipped
    assert "0001" in skipped[0] and "whitespace" in skipped[0], skipped
    assert [status for status, _ in served(folder, 1)] == [200]


@pytest.mark.parametrize(
    "query",
    [
        "api[key=EVIL",  # PHP reads an unmatched '[' as '_': $_GET['api_key']
        "api%5Bkey=EVIL",  # the same, percent-encoded
        "api_key%00=EVIL",  # PHP's names are C strings: cut at the NUL, 'api_key'
    ],
)
def test_php_s_other_readings_of_a_name_are_refused_too(query: str) -> None:
    seen: list[bytes] = []
    with serve(upstream(seen)) as base, proxied(f"{base}/agent?api_key=KEY") as px:
        answer = post(f"{px.url}?{query}", INPUT)
    assert answer.status_code == 400 and "'api_key'" in answer.text, answer.text
    assert seen == []  # nothing went upstream


def test_a_matched_bracket_still_goes_through_when_it_names_another_parameter() -> None:
    seen: list[bytes] = []
    with serve(upstream(seen)) as base, proxied(f"{base}/agent?api_key=KEY") as px:
        assert post(f"{px.url}?api[x]=1&apikey=2", INPUT).status_code == 200
    assert seen == [b"api_key=KEY&api[x]=1&apikey=2"]
