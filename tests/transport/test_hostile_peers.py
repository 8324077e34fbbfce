"""Hostile peers, round 2 (issue 28), against real servers on loopback.

Each test failed on the code before it: refused bodies were kept alive in a
reference cycle (``serve`` grew 46 MB per refused 7.3 MB body, and never gave it
back); a DNS-rebinding page — ``Host`` = ``Origin`` = ``evil.test:PORT`` — was
answered 200 and read the stream.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import orjson
import pytest

from tests.helpers.terminal import AGUI, ENV, ROOT

RSS_BUDGET_MB = 100
"""The issue's acceptance: within 100 MB of the baseline after 64 refused 7.4 MB bodies.
Fixed, the server levels off 20-25 MB above it (what the allocator keeps of one
body's parse); before, each 7.3 MB body refused 413 kept 46 MB, each 3.5 MB one
refused 422 kept 23 MB."""


def _rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"VmRSS:\s+(\d+) kB", status)
    assert match, status
    return int(match.group(1)) / 1024


@contextmanager
def serve_process(*extra: str) -> Iterator[tuple[str, int]]:
    """``agui-tools serve`` (the demo agent) in a subprocess: its URL and pid."""
    server = subprocess.Popen(
        [*AGUI, "serve", "--port", "0", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        match = re.match(r"Serving AG-UI agent at (\S+)", line)
        assert match, line
        yield match.group(1), server.pid
    finally:
        server.terminate()
        server.wait(timeout=20)


def _too_many_messages() -> bytes:
    """7.3 MB: 100,000 messages, over the default max_messages=10,000 (413)."""
    messages = [{"id": f"m{i}", "role": "user", "content": "x" * 30} for i in range(100_000)]
    return orjson.dumps({"threadId": "t", "runId": "r", "messages": messages})


def _too_many_unknown() -> bytes:
    """3.5 MB: 300,000 unrecognised members, over the default max_unknown=1,000 (422)."""
    body: dict[str, object] = {"threadId": "t", "runId": "r", "messages": []}
    for i in range(300_000):
        body[f"u{i}"] = 1
    return orjson.dumps(body)


@pytest.mark.parametrize(
    ("make_body", "status"),
    [(_too_many_messages, 413), (_too_many_unknown, 422)],
    ids=["413-max-messages", "422-max-unknown"],
)
def test_refused_large_bodies_are_freed(make_body: object, status: int) -> None:
    """Item 1: a refusal raised in the judging thread held, through anyio's future,
    the frame that parsed the body. 24 refusals in a row; the server must stay
    within RSS_BUDGET_MB of its baseline after each (checked after each, so the
    test stops — and the server's memory with it — at the first one over)."""
    assert callable(make_body)
    body = make_body()
    headers = {"content-type": "application/json"}
    with serve_process() as (url, pid), httpx.Client(timeout=120) as client:
        ok = client.post(url, json={"threadId": "t", "runId": "r0", "messages": []})
        assert ok.status_code == 200  # everything a request loads is loaded
        baseline = _rss_mb(pid)
        grown = []
        for _ in range(24):
            answer = client.post(url, content=body, headers=headers)
            assert answer.status_code == status, answer.text[:500]
            grown.append(round(_rss_mb(pid) - baseline))
            assert grown[-1] < RSS_BUDGET_MB, f"MB over the baseline after each refusal: {grown}"
        # and the server still answers
        assert client.post(url, json={"threadId": "t", "runId": "r1", "messages": []}).is_success
