"""The proxy and a compressed answer's end (issue #25, round 2): a gzip body whose
CRC trailer is wrong after a whole, valid run. Real upstream, real ProxyApp on
loopback, a real client."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from tests.helpers.proxy import proxied, sse_events
from tests.helpers.proxy_attack import GOOD, encoded_agent, raw_stream, sse, wait_findings
from tests.helpers.scripted_server import serve


def _bad_crc(body: bytes) -> bytes:
    whole = bytearray(gzip.compress(body))
    whole[-8] ^= 0xFF  # the member's CRC-32 (RFC 1952 §2.3.1): its data all decodes
    return bytes(whole)


@pytest.mark.parametrize("strict", [False, True], ids=["watching", "strict"])
def test_a_bad_crc_after_a_whole_run_is_judged_whole_then_trans4(
    tmp_path: Path, strict: bool
) -> None:
    """The run is judged (and recorded) whole — no TRANS-2, its events all seen — then
    TRANS-4 for the trailer, naming where decoding stopped. --strict forwards the run
    as judged, with no RUN_ERROR after its RUN_FINISHED (an event after the run's end
    would be the proxy's own protocol break)."""
    body = _bad_crc(sse(GOOD))
    with (
        serve(encoded_agent(body, "gzip")) as base,
        proxied(f"{base}/agent", strict=strict, record=tmp_path) as px,
    ):
        _answer, raw = raw_stream(px.url)
        wait_findings(px)
    assert [f.rule for f in px.findings] == ["TRANS-4"], [f.message for f in px.findings]
    message = px.findings[0].message
    assert f"after {len(sse(GOOD))} byte(s)" in message, message
    # zlib checks the CRC once its 4 bytes are in: it stops at their last one
    assert "incorrect data check" in message and f"at byte {len(body) - 5} " in message, message
    assert (tmp_path / "0001.sse").read_bytes() == sse(GOOD)
    meta = orjson.loads((tmp_path / "0001.meta.json").read_bytes())
    assert "incorrect data check" in meta["decodeError"]
    if strict:
        events = sse_events(raw)
        assert events == GOOD, raw
    else:
        assert raw == body  # forwarded as it came


def test_x_gzip_is_judged_as_gzip(tmp_path: Path) -> None:
    """RFC 9110 §8.4.1.3: a recipient SHOULD treat x-gzip as gzip — judged and recorded
    decoded, not 'not judged: Content-Encoding x-gzip'."""
    body = gzip.compress(sse(GOOD))
    with (
        serve(encoded_agent(body, "x-gzip")) as base,
        proxied(f"{base}/agent", record=tmp_path) as px,
    ):
        _answer, raw = raw_stream(px.url)
        wait_findings(px, seconds=1)
    assert raw == body
    assert px.findings == [], [f.message for f in px.findings]
    assert (tmp_path / "0001.sse").read_bytes() == sse(GOOD)
