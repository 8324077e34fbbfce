"""Request targets the proxy refuses (issue #25, round 2): a '#' (RFC 9112 §3.2: no
fragment in a request-target) and a '.'/'..' segment spelled with ';' parameters.
A real upstream that records what reaches it, a real ProxyApp, a raw socket."""

from __future__ import annotations

import orjson
import pytest

from tests.helpers.proxy_attack import seen_upstream


@pytest.mark.parametrize("target", [b"/runs#frag", b"/runs?a=1#b=2", b"/runs/7?#"])
def test_a_hash_is_a_400_naming_the_target_and_the_rule(target: bytes) -> None:
    status, payload, seen = seen_upstream(target)
    assert (status, seen) == (400, [])
    message = orjson.loads(payload)["error"]["message"]
    assert "RFC 9112 §3.2" in message and "'#'" in message, message
    assert target.decode() in message, message  # the target whole, query and all


@pytest.mark.parametrize(
    "target", [b"/runs/..;/admin", b"/runs/..;jsessionid=x/admin", b"/.;/admin", b"/runs/..%3B/x"]
)
def test_a_dot_segment_with_parameters_is_refused(target: bytes) -> None:
    status, payload, seen = seen_upstream(target)
    assert (status, seen) == (400, []), payload[:200]
    assert "segment" in orjson.loads(payload)["error"]["message"]


@pytest.mark.parametrize(
    "target", [b"/runs/..x/y", b"/runs/a;..", b"/runs/v1;rev=2/x", b"/runs?a=%23"]
)
def test_what_is_not_a_dot_segment_nor_a_fragment_is_forwarded(target: bytes) -> None:
    """'..x' and 'a;..' are names, not dot segments; '%23' is a '#' sent as data."""
    status, _payload, seen = seen_upstream(target)
    assert status == 200 and len(seen) == 1, (status, seen)
