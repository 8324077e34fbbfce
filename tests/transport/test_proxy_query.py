"""The proxy's query merge (issue #37): UPSTREAM's query parameters are its own — a
frontend's request that names one of them again (any spelling a parser reads as the
same name) is refused 400 naming it, never forwarded as a duplicate a last-wins
parser would take; the frontend's other parameters follow UPSTREAM's."""

from __future__ import annotations

import pytest

from tests.helpers.proxy import post, proxied
from tests.helpers.proxy_query import INPUT, upstream
from tests.helpers.scripted_server import serve


@pytest.mark.parametrize(
    "query",
    [
        "code=EVIL",  # the plain override
        "x=1&code=EVIL",  # after one of its own
        "code",  # a bare name
        "%63ode=EVIL",  # percent-encoded: decoded, it is 'code'
        "x=1;code=EVIL",  # split at ";" by some parsers
        "CODE=EVIL",  # case-insensitive parsers (ASP.NET, Azure Functions) read it too
        "code+=EVIL",  # '+' is a space to form parsers, and some strip it: 'code' again
        "code[]=EVIL",  # PHP and Rails read 'code[]' as 'code' (an array, last wins)
        "code%5Bx%5D=EVIL",  # the same, percent-encoded
    ],
)
def test_a_frontend_cannot_override_or_duplicate_an_upstream_parameter(query: str) -> None:
    seen: list[bytes] = []
    with serve(upstream(seen)) as base, proxied(f"{base}/agent?code=KEY") as px:
        answer = post(f"{px.url}runs/7?{query}", INPUT)
    assert answer.status_code == 400, answer.text
    assert "'code'" in answer.text and "UPSTREAM" in answer.text, answer.text
    assert seen == []  # nothing went upstream


@pytest.mark.parametrize("query", ["api.key=EVIL", "api+key=EVIL", "API_KEY=EVIL"])
def test_php_s_reading_of_names_is_covered_too(query: str) -> None:
    seen: list[bytes] = []
    with serve(upstream(seen)) as base, proxied(f"{base}/agent?api_key=KEY") as px:
        answer = post(f"{px.url}?{query}", INPUT)
    assert answer.status_code == 400 and "'api_key'" in answer.text, answer.text
    assert seen == []


def test_the_frontend_s_other_parameters_follow_upstream_s() -> None:
    seen: list[bytes] = []
    with serve(upstream(seen)) as base, proxied(f"{base}/agent?code=KEY") as px:
        assert post(f"{px.url}?x=1&codes=2&y", INPUT).status_code == 200
        assert post(px.url, INPUT).status_code == 200
    assert seen == [b"code=KEY&x=1&codes=2&y", b"code=KEY"]


def test_without_an_upstream_query_every_parameter_goes_through() -> None:
    seen: list[bytes] = []
    with serve(upstream(seen)) as base, proxied(f"{base}/agent") as px:
        assert post(f"{px.url}?code=1&code=2", INPUT).status_code == 200
    assert seen == [b"code=1&code=2"]  # the frontend's own duplicates are its own
