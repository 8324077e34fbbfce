"""``serve --access-log`` (issue #36, item 6): one line per request on stderr whatever
``--log-level`` is — the default (warning) included, which once printed nothing."""

from __future__ import annotations

import re
import subprocess
import time

import httpx
import pytest

from tests.helpers.terminal import AGUI, ENV, ROOT

AGENT = "tests.helpers.cli_agents:scripted"


@pytest.mark.parametrize("level", [[], ["--log-level", "warning"], ["--log-level", "error"]])
def test_the_access_log_prints_at_every_log_level(level: list[str]) -> None:
    server = subprocess.Popen(
        [*AGUI, "serve", AGENT, "--port", "0", "--access-log", *level],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    try:
        assert server.stdout is not None and server.stderr is not None
        line = server.stdout.readline()
        url = re.match(r"Serving AG-UI agent at (\S+)", line).group(1)  # type: ignore[union-attr]
        answer = httpx.post(url, content=b"[]", headers={"Content-Type": "application/json"})
        assert answer.status_code == 422
    finally:
        time.sleep(0.5)  # the access line is written after the answer is sent
        server.terminate()
        server.wait(timeout=20)
    assert server.stderr is not None
    logged = server.stderr.read()
    assert '"POST /agent HTTP/1.1" 422' in logged, logged
    # the level still rules the rest: no INFO line but the access log's
    others = [x for x in logged.splitlines() if " INFO " in x and "uvicorn.access" not in x]
    assert others == [], others
