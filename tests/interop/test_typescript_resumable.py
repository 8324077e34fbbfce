"""The official TypeScript client against our server with the resumable binding on
(docs/resumable.md, RESUME-1): a client that does not opt in sees the standard
binding, byte for byte.

``@ag-ui/client``'s ``HttpAgent`` runs every shared scenario against the agent of
:mod:`tests.interop.our_agent` served with ``resumable=Resumable()``; each exchange
is recorded as it crossed the socket, and the same request sent to the same agent
served without the option must be answered the same bytes — no ``id:`` lines, no
``Agui-Resumable`` header, nothing logged.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import httpx
import pytest

from agui_tools.app._run_log import MemoryRunLog
from agui_tools.transport._resumable import Resumable
from agui_tools.transport._server import agent_app
from tests.helpers.scripted_server import serve
from tests.interop.node import run_node, skip_reason
from tests.interop.our_agent import FRONTEND_TOOLS, SCENARIOS, Recorder, agent, app

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or ""),
]

LOG = MemoryRunLog()


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, Recorder, str]]:
    recorder = Recorder(agent_app(agent, path="/agent", resumable=Resumable(log=LOG)))
    with serve(recorder) as resumable, serve(app) as plain:
        yield f"{resumable}/agent", recorder, f"{plain}/agent"


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_official_client_sees_the_standard_binding(
    servers: tuple[str, Recorder, str], scenario: str
) -> None:
    url, recorder, plain = servers
    thread_id = f"ts-{scenario}-{uuid.uuid4().hex[:8]}"
    ts = run_node(
        "httpagent.mjs", url, "--scenario", scenario, "--thread-id", thread_id,
        "--tools", json.dumps(FRONTEND_TOOLS),
    )  # fmt: skip
    assert ts["outcome"] == "completed", ts["error"]
    assert all(r["outcome"] == "completed" for r in ts["runs"])
    assert ts["consoleErrors"] == []
    exchanges = recorder.for_thread(thread_id)
    assert len(exchanges) == len(ts["runs"]) >= 1
    for ex in exchanges:
        assert "agui-resumable" not in ex.request_headers, "the official client never opts in"
        assert ex.status == 200 and "agui-resumable" not in ex.headers
        assert b"\nid:" not in b"\n" + ex.body
        same = httpx.post(
            plain,
            content=ex.request_body,
            headers={"content-type": "application/json", "accept": ex.request_headers["accept"]},
            timeout=30,
        )
        assert same.content == ex.body, "the bytes differ from the standard server's"
        run = json.loads(ex.request_body)
        assert LOG.state(run["threadId"], run["runId"]) is None, "a standard run is not logged"
