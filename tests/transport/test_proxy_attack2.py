"""Second-round attacks on ``agui-tools proxy`` (docs/proxy.md, CHANGELOG), after the
first round's fixes. Real upstreams, a real :class:`ProxyApp`, a real client; each
test asserts what the docs promise (``xfail(strict=True)`` until fixed; now each guards its fix)."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import orjson
import pytest

from tests.helpers.proxy import proxied, sse_events
from tests.helpers.proxy_attack import (
    GOOD,
    INPUT,
    encoded_agent,
    raw_stream,
    seen_upstream,
    sse,
    wait_findings,
)
from tests.helpers.scripted_server import serve

GOOD_IN_TWO_MEMBERS = gzip.compress(sse(GOOD[:2])) + gzip.compress(sse(GOOD[2:]))


def test_a_multi_member_gzip_stream_is_judged_and_recorded_whole(tmp_path: Path) -> None:
    """RFC 9110 §8.4.1.3's gzip is RFC 1952's format, "a series of members"; browsers,
    httpx and curl decode every member. A well-formed run split across two members
    (an agent that gzips each flush on its own, or a CDN concatenating) breaks nothing."""
    agent = encoded_agent(GOOD_IN_TWO_MEMBERS, "gzip")
    with serve(agent) as base, proxied(f"{base}/agent", record=tmp_path) as px:
        _answer, raw = raw_stream(px.url)
        assert raw == GOOD_IN_TWO_MEMBERS  # forwarded as it came: holds
        assert gzip.decompress(raw) == sse(GOOD)  # what every frontend reads: a whole run
        wait_findings(px)
    # docs/proxy.md: "judged and recorded decoded" — the whole body, not its first member
    assert [(f.rule, f.index) for f in px.findings] == [], [f.message for f in px.findings]
    assert (tmp_path / "0001.sse").read_bytes() == sse(GOOD)


def test_strict_forwards_a_multi_member_gzip_stream_whole() -> None:
    agent = encoded_agent(GOOD_IN_TWO_MEMBERS, "gzip")
    with serve(agent) as base, proxied(f"{base}/agent", strict=True) as px:
        _answer, raw = raw_stream(px.url)
    # "what the frontend gets is what was judged": a run that broke no rule, whole —
    # it got RUN_STARTED, TOOL_CALL_START and a clean end of the body (the rest dropped)
    events = sse_events(raw)
    assert [e["type"] for e in events] == [e["type"] for e in GOOD], raw


def test_a_dot_dot_segment_with_a_path_parameter_is_refused() -> None:
    """docs/proxy.md: a path with a '..' segment "which would leave UPSTREAM's path once
    resolved" is a 400, its spellings too (a '\\' counts as a '/'). '..;' is the
    spelling a servlet container resolves as '..' (it strips ';' path parameters
    before resolving): '/agent/runs/..;/admin' reaches '/agent/admin' there — the
    classic way past a front proxy's '..' check."""
    status, payload, seen = seen_upstream(b"/runs/..;/admin")
    assert status == 400, (payload[:200], seen)
    assert seen == []


@pytest.mark.parametrize(
    "target", [b"/runs?a=1#frag", b"/runs?#frag"], ids=["query-hash", "empty-hash"]
)
def test_a_hash_in_the_request_target_is_not_silently_dropped(target: bytes) -> None:
    """A '#' is not allowed in a request-target (RFC 9112 §3.2): refuse it (400), or
    forward the query the frontend sent (docs/proxy.md: "UPSTREAM's query followed by
    the request's") — not a query with its tail cut off, never said."""
    status, _payload, seen = seen_upstream(target)
    sent_query = target.split(b"?", 1)[1]
    forwarded_whole = bool(seen) and seen[0][1].endswith(sent_query.replace(b"#", b"%23"))
    assert status == 400 or forwarded_whole, (status, seen)


def test_a_recording_folder_is_continued_after_its_highest_number_overwriting_nothing(
    tmp_path: Path,
) -> None:
    """docs/proxy.md: "a folder that already holds a recording is continued after its
    highest number, never overwritten". A number is claimed by creating its
    NNNN.input.json; a kept exchange without one (its input removed by hand, a refusal
    kept as NNNN.body) is overwritten, and the new exchanges slot in before it."""
    (tmp_path / "0001.input.json").write_bytes(orjson.dumps(INPUT))
    (tmp_path / "0001.sse").write_bytes(sse(GOOD))
    (tmp_path / "0002.sse").write_bytes(b"data: {}\n\n")  # an earlier exchange: its input gone
    (tmp_path / "0002.meta.json").write_bytes(b'{"kept": 2}')
    (tmp_path / "0009.body").write_bytes(b"kept 9")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    agent = encoded_agent(sse(GOOD), "identity")
    with serve(agent) as base, proxied(f"{base}/agent", record=tmp_path) as px:
        raw_stream(px.url)
        raw_stream(px.url)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    changed = sorted(name for name, data in before.items() if after.get(name) != data)
    assert changed == [], changed  # 0002.sse and 0002.meta.json: the new exchange's now
    new = sorted({name.split(".")[0] for name in after} - {name.split(".")[0] for name in before})
    assert new == ["0010", "0011"], new


def _decodable_then_corrupt_in_one_body() -> bytes:
    """Four whole events, flushed, then bytes no inflater reads — one body, sent at once
    (a buffered agent's answer, read by the proxy as one chunk)."""
    packer = zlib.compressobj(wbits=31)
    return packer.compress(sse(GOOD[:4])) + packer.flush(zlib.Z_SYNC_FLUSH) + b"\xff" * 16


def test_a_gzip_body_that_stops_decoding_mid_chunk_is_judged_up_to_where_it_stops(
    tmp_path: Path,
) -> None:
    """docs/proxy.md: "A body that stops decoding is a TRANS-4 error where it stops".
    Round one's repro had the corrupt bytes in a chunk of their own; here they share it
    with four decodable events — which the judge and the recording never see."""
    body = _decodable_then_corrupt_in_one_body()
    with (
        serve(encoded_agent(body, "gzip")) as base,
        proxied(f"{base}/agent", record=tmp_path) as px,
    ):
        raw_stream(px.url)
        wait_findings(px)
    assert [f.rule for f in px.findings] == ["TRANS-4"]
    good = len(sse(GOOD[:4]))
    assert f"after {good} byte(s)" in px.findings[0].message, px.findings[0].message
    assert (tmp_path / "0001.sse").read_bytes() == sse(GOOD[:4])  # "recorded decoded"


def test_strict_forwards_the_events_before_a_mid_chunk_decoding_error() -> None:
    """docs/proxy.md, --strict: "the events before it were forwarded as they came" —
    the frontend gets RUN_STARTED … TOOL_CALL_END, then the RUN_ERROR (TRANS-4)."""
    body = _decodable_then_corrupt_in_one_body()
    with serve(encoded_agent(body, "gzip")) as base, proxied(f"{base}/agent", strict=True) as px:
        _answer, raw = raw_stream(px.url)
    events = sse_events(raw)
    assert [e["type"] for e in events] == [e["type"] for e in GOOD[:4]] + ["RUN_ERROR"], raw
    assert events[-1]["code"] == "TRANS-4"
