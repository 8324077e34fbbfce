"""The official TypeScript client against OUR server (issue: interoperability, direction 1).

``@ag-ui/client`` 1.0.0's ``HttpAgent`` (``interop/ts/httpagent.mjs``) runs every
shared scenario against the agent of :mod:`tests.interop.our_agent`, written
with our ``Run`` API and served by ``agent_app`` + uvicorn on loopback. The
harness answers frontend calls with tool messages and runs again until nothing
is pending.

For each scenario:

* the client completes every run without error, and its only warning is the
  documented protocol-version one (our ``RUN_STARTED`` declares 1.1, the client
  speaks 1.0 — VER-5: "proceed, and warn");
* a recording middleware keeps the exact SSE bytes our server sent and the
  exact input the client posted; OUR consumer (``replay``: pipeline + reducer)
  folds the same bytes with the same run input, run after run, and must hold
  the same messages and state as the client after every run, and report the
  same pending calls;
* the client's continuation inputs are exactly the thread plus its answers.

No normalisation is applied: both sides hold wire-shaped messages
(``basic/messages``) and are compared as parsed JSON, where key order does not
exist.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from agui_tools.app._capture import read_frames, replay
from tests.helpers.scripted_server import serve
from tests.interop.node import run_node, skip_reason
from tests.interop.our_agent import FRONTEND_TOOLS, SCENARIOS, Recorder, app

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or ""),
]

# The 1.0 client's producer-declaration warning for our RUN_STARTED protocolVersion "1.1"
# (documented in docs/conformance.md); recorded, never counted as an error. VER-5: a party
# meeting a newer declaration proceeds and warns.
VERSION_WARNING = (
    "[ag-ui] The producer speaks protocol 1.1; this client speaks 1.0. "
    "Unrecognised material will be stripped with warnings."
)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Recorder]]:
    recorder = Recorder(app)
    with serve(recorder) as base:
        yield f"{base}/agent", recorder


def drive(url: str, scenario: str) -> tuple[str, dict[str, Any]]:
    thread_id = f"ts-{scenario}-{uuid.uuid4().hex[:8]}"
    out = run_node(
        "httpagent.mjs",
        url,
        "--scenario",
        scenario,
        "--thread-id",
        thread_id,
        "--tools",
        json.dumps(FRONTEND_TOOLS),
    )
    return thread_id, out


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_official_client_against_our_server(server: tuple[str, Recorder], scenario: str) -> None:
    url, recorder = server
    thread_id, ts = drive(url, scenario)
    runs = ts["runs"]

    # -- the official client completed every run, quietly ------------------------------------
    assert ts["outcome"] == "completed", ts["error"]
    assert all(r["outcome"] == "completed" for r in runs), [r["error"] for r in runs]
    assert ts["consoleErrors"] == []
    assert ts["warnings"] == [VERSION_WARNING] * len(runs), ts["warnings"]

    # -- our consumer over the very bytes it consumed -----------------------------------------
    exchanges = recorder.for_thread(thread_id)
    assert len(exchanges) == len(runs)
    messages: list[dict[str, Any]] = exchanges[0].request["messages"]
    for k, (ex, run) in enumerate(zip(exchanges, runs, strict=True)):
        request = ex.request
        assert ex.status == 200 and ex.headers["content-type"] == "text/event-stream"
        if k > 0:
            # the client continues the thread it holds, plus its answers (FE-8)
            assert request["messages"] == messages + runs[k - 1]["answered"]
            messages = request["messages"]
        ours = replay(read_frames(ex.body), run_input=request, initial_messages=messages)
        assert ours.result.outcome == "completed", ours.result.error
        assert ours.warnings == []
        (our_run,) = ours.result.runs
        assert our_run.run_id == run["runId"] == request["runId"]
        assert our_run.status == "success"
        messages = ours.thread.messages
        assert run["messages"] == messages, f"run {k}: the clients' threads differ"
        assert run["state"] == ours.thread.state, f"run {k}: the clients' states differ"
        # pending calls: ours from RUN_FINISHED, the TS harness's from its messages,
        # and the outcome the TS client delivered
        declared = (run["finishOutcome"] or {}).get("pendingToolCallIds", [])
        assert our_run.pending == run["pendingToolCallIds"] == declared
    assert ts["messages"] == messages
    assert runs[-1]["pendingToolCallIds"] == []

    # -- what each scenario is about ------------------------------------------------------------
    final = ts["messages"]
    if scenario == "frontend_call":
        assert len(runs) == 2
        assert final[-1]["content"] == (
            'The user answered: confirm_order done with {"sku":"W-1","qty":2}'
        )
    elif scenario == "parallel_calls":
        assert len(runs) == 2 and runs[0]["pendingToolCallIds"] == ["par-c1", "par-c2"]
        assert [m["toolCallId"] for m in final if m["role"] == "tool"] == ["par-c1", "par-c2"]
        assert final[-1]["content"] == "Both answered."
    else:
        assert len(runs) == 1
    if scenario == "agent_side_results":
        tool = [m for m in final if m["role"] == "tool"]
        assert [m["content"] for m in tool] == [
            "3 results",
            [{"type": "text", "text": "page text"}],
        ]
    elif scenario == "chunked":
        assert final[1]["content"] == "Chunks expand."
        assert final[1]["toolCalls"][0]["function"]["arguments"] == '{"q":"x"}'
    elif scenario == "reopened_call":
        call = next(m for m in final if m.get("toolCalls"))["toolCalls"][0]
        assert call["function"]["arguments"] == '{"q":"reopened"}'
    elif scenario == "subagents":
        sub = f"{runs[0]['runId']}-sub1"
        assert [m.get("subagentRunId") for m in final] == [None, sub, sub, None]
    elif scenario == "state_deltas":
        assert ts["state"] == {"items": [{"sku": "W-1"}], "status": "ready"}
