"""The official TypeScript ``HttpAgent`` through ``agui-tools proxy`` (issue #25's acceptance).

``@ag-ui/client``'s ``HttpAgent`` (``interop/ts/httpagent.mjs``) completes a
frontend-tool round trip — run 1 leaves a call to an advertised tool pending, the
harness answers it with a tool message, run 2 continues — with the proxy between
it and each upstream: our own server (the interop agent of
:mod:`tests.interop.our_agent`) and each of the seven framework adapters of
``interop/frameworks/`` (each on a scripted model, in its pinned venv:
:mod:`tests.helpers.frameworks`).

For every exchange: the bytes the client received (a recorder around the proxy's
own ASGI app — what went on the client's socket) equal the upstream's (what the
proxy read, kept by ``--record``); for our server also what our server wrote; and
the proxy's findings on the exchange equal what ``verify`` says of the recording.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers.frameworks import FRAMEWORKS, require_venv, serving_framework
from tests.helpers.proxy import Proxied, proxied, verify_says
from tests.helpers.scripted_server import serve
from tests.interop.node import run_node, skip_reason
from tests.interop.our_agent import FRONTEND_TOOLS, Recorder, app

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or ""),
]


@pytest.fixture(params=["ours", *FRAMEWORKS])
def upstream(request: pytest.FixtureRequest) -> Iterator[tuple[str, Recorder | None]]:
    if request.param == "ours":
        recorder = Recorder(app)
        with serve(recorder) as base:
            yield f"{base}/agent", recorder
        return
    python = require_venv(request.param)  # skips (fails under CI) when it cannot be built
    with serving_framework(request.param, python=python) as served:
        yield served.url, None


def test_httpagent_round_trip_through_the_proxy(
    upstream: tuple[str, Recorder | None], tmp_path: Path
) -> None:
    url, ours = upstream
    client_side = Recorder(None)  # type: ignore[arg-type]  # its inner app is set by wrap

    def wrap(proxy: Any) -> Recorder:
        client_side.inner = proxy
        return client_side

    thread_id = f"proxy-{uuid.uuid4().hex[:8]}"
    px: Proxied
    with proxied(url, record=tmp_path, wrap=wrap) as px:
        ts = run_node(
            "httpagent.mjs",
            px.url,
            "--scenario",
            "frontend_call",
            "--thread-id",
            thread_id,
            "--tools",
            json.dumps(FRONTEND_TOOLS),
        )
    runs = ts["runs"]
    # -- a frontend-tool round trip, completed by the official client ------------------------
    assert ts["outcome"] == "completed", ts["error"]
    assert ts["consoleErrors"] == []
    assert len(runs) >= 2, runs
    assert runs[0]["pendingToolCallIds"], "run 1 leaves the frontend call pending"
    assert runs[0]["answered"], "the harness answered it"
    assert runs[-1]["pendingToolCallIds"] == []
    names = {c["function"]["name"] for m in ts["messages"] for c in m.get("toolCalls") or ()}
    assert names & {t["name"] for t in FRONTEND_TOOLS}

    # -- the bytes: what the client received is what the upstream sent -------------------------
    exchanges = client_side.for_thread(thread_id)
    assert len(exchanges) == len(runs)
    for n, ex in enumerate(exchanges, start=1):
        prefix = tmp_path / f"{n:04d}"
        assert Path(f"{prefix}.input.json").read_bytes() == ex.request_body
        stream = Path(f"{prefix}.sse")
        assert ex.status == 200 and ex.body == stream.read_bytes()
        # -- the proxy's findings are what verify says of the recording -------------------------
        meta = orjson.loads(Path(f"{prefix}.meta.json").read_bytes())
        agent = {(f["rule"], f["index"]) for f in meta["findings"] if f["side"] == "agent"}
        assert agent == verify_says(stream, Path(f"{prefix}.input.json"))
    if ours is not None:
        wrote = ours.for_thread(thread_id)
        assert [ex.body for ex in wrote] == [ex.body for ex in exchanges]
        assert px.findings == []  # our server and the official client: nothing to report
    # what the proxy said of the frameworks, for the note (docs/proxy.md)
    print(f"{url}: findings {[(f.side, f.rule, f.index) for f in px.findings]}")
    assert not [f for f in px.findings if f.side == "frontend"], px.findings
