"""``mock_app`` against the official TypeScript ``HttpAgent`` (issue 25, item 2's acceptance).

A real conversation is recorded first: the official client (``interop/ts/httpagent.mjs``)
runs the ``frontend_call`` scenario against OUR server (:mod:`tests.interop.our_agent`),
and every exchange is kept as ``proxy --record`` keeps it (``NNNN.input.json``,
``NNNN.sse``, ``NNNN.meta.json``). Then the mock replays that directory:

* the official client, on a new thread, ends with the same messages as in the
  original run — over SSE and over the binary binding (it asks with ``--binary 1``);
* every fault kind is injected, and the test says what OUR ``Session`` sees and
  what the official client sees (its error, or its process dying) — the table in
  docs/proxy.md is this test's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agui_tools._errors import ProtocolViolation, TransportError
from agui_tools.transport._client import SyncAgentClient
from agui_tools.transport._mock import mock_app
from agui_tools.transport._session import SyncSession
from tests.helpers.scripted_server import serve
from tests.interop.node import node_process, run_node, skip_reason
from tests.interop.our_agent import FRONTEND_TOOLS, Recorder, app

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or ""),
]


def record_dir(recorder: Recorder, folder: Path) -> Path:
    """The recorder's exchanges written as ``proxy --record DIR`` writes them."""
    folder.mkdir(parents=True, exist_ok=True)
    for n, ex in enumerate(recorder.exchanges, 1):
        (folder / f"{n:04d}.input.json").write_bytes(ex.request_body)
        (folder / f"{n:04d}.sse").write_bytes(ex.body)
        meta = {
            "url": "http://upstream/agent",
            "status": ex.status,
            "contentType": ex.headers.get("content-type"),
            "threadId": ex.request.get("threadId"),
            "runId": ex.request.get("runId"),
            "findings": [],
        }
        (folder / f"{n:04d}.meta.json").write_text(json.dumps(meta))
    return folder


def ts_args(url: str, thread: str, *, binary: bool = False) -> list[str]:
    args = [url, "--scenario", "frontend_call", "--thread-id", thread]
    args += ["--tools", json.dumps(FRONTEND_TOOLS)]
    return args + (["--binary", "1"] if binary else [])


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The official client's conversation with our server, and its recording."""
    recorder = Recorder(app)
    with serve(recorder) as base:
        document = run_node("httpagent.mjs", *ts_args(f"{base}/agent", "original"))
    assert document["outcome"] == "completed" and len(document["runs"]) == 2, document
    yield record_dir(recorder, tmp_path_factory.mktemp("recorded")), document


@pytest.mark.parametrize("binary", [False, True], ids=["sse", "protobuf"])
def test_the_official_client_ends_with_the_original_messages(
    original: tuple[Path, dict[str, Any]], binary: bool
) -> None:
    folder, document = original
    with serve(mock_app(folder, path="/agent", timing="fast")) as base:
        replayed = run_node("httpagent.mjs", *ts_args(f"{base}/agent", "replay", binary=binary))
    assert replayed["outcome"] == "completed", replayed
    assert replayed["messages"] == document["messages"]
    assert [r["pendingToolCallIds"] for r in replayed["runs"]] == [["fe-c1"], []]
    # the request's runId, not the recorded one, is what the client was told
    recorded_runs = [r["runId"] for r in document["runs"]]
    assert all(r["runId"] not in recorded_runs for r in replayed["runs"])
    assert replayed["consoleErrors"] == []


def session_sees(url: str, **client: Any) -> str:
    """What our Session reports for one conversation against the mock."""
    session = SyncSession(SyncAgentClient(url, **client))

    @session.tool
    def confirm_order(sku: str, qty: int) -> str:
        """Confirm an order."""
        return f"confirmed {qty} x {sku}"

    try:
        result = session.send("scenario frontend_call")
    except ProtocolViolation as exc:
        return f"ProtocolViolation {exc.rule} at event {exc.index}"
    except TransportError as exc:
        return f"TransportError {exc.status}: {exc}"
    finally:
        session.client.close()
    return f"{result.status}: {session.conversation.messages[-1]['content']}"


def official_client_sees(url: str, *, binary: bool = False) -> str:
    proc = node_process("httpagent.mjs", *ts_args(url, "fault", binary=binary))
    if proc.returncode != 0:  # the process died: an exception nothing in runAgent caught
        last = [line for line in proc.stderr.splitlines() if "Error" in line]
        return f"died: {last[0].strip() if last else proc.stderr[-200:]}"
    document = json.loads(proc.stdout)
    return f"{document['outcome']}: {document['error']}"


# What each side reports, fault by fault: (fault, session prefix, official client prefix).
FAULTS = [
    (
        "cut:3",
        "TransportError None: the connection to the agent",
        "died: TypeError: terminated",
    ),
    (
        "malformed:2",
        "ProtocolViolation TRANS-4 at event 2",
        "failed: Unterminated string in JSON",
    ),
    ("status:503", "TransportError 503:", "failed: HTTP 503:"),
    (
        "duplicate:1",
        "ProtocolViolation STREAM-2 at event 2",
        "failed: Cannot send 'TEXT_MESSAGE_START' event: A text message with ID",
    ),
]


@pytest.mark.parametrize(("fault", "ours", "theirs"), FAULTS, ids=[f[0] for f in FAULTS])
def test_a_fault_as_our_session_and_the_official_client_see_it(
    original: tuple[Path, dict[str, Any]], fault: str, ours: str, theirs: str
) -> None:
    folder, _ = original
    with serve(mock_app(folder, path="/agent", timing="fast", faults=[fault])) as base:
        seen_by_session = session_sees(f"{base}/agent")
    with serve(mock_app(folder, path="/agent", timing="fast", faults=[fault])) as base:
        seen_by_client = official_client_sees(f"{base}/agent")
    assert seen_by_session.startswith(ours), seen_by_session
    assert seen_by_client.startswith(theirs), seen_by_client


def test_a_malformed_binary_frame_as_both_see_it(original: tuple[Path, dict[str, Any]]) -> None:
    folder, _ = original
    with serve(mock_app(folder, path="/agent", timing="fast", faults=["malformed:2"])) as base:
        seen_by_session = session_sees(f"{base}/agent", transport="proto")
    with serve(mock_app(folder, path="/agent", timing="fast", faults=["malformed:2"])) as base:
        seen_by_client = official_client_sees(f"{base}/agent", binary=True)
    assert seen_by_session.startswith("ProtocolViolation TRANS-7 at event 2"), seen_by_session
    assert seen_by_client.startswith("failed: Failed to decode protocol buffer message")


def test_a_stall_ends_our_idle_deadline_and_the_official_client_waits_it_out(
    original: tuple[Path, dict[str, Any]],
) -> None:
    folder, document = original
    with serve(mock_app(folder, path="/agent", timing="fast", faults=["stall:2:1.5@1"])) as base:
        seen_by_session = session_sees(f"{base}/agent", idle_timeout=0.5)
    assert seen_by_session.startswith("TransportError None:"), seen_by_session
    assert "0.5" in seen_by_session  # the deadline it names
    with serve(mock_app(folder, path="/agent", timing="fast", faults=["stall:2:1.5@1"])) as base:
        started = time.monotonic()
        proc = node_process("httpagent.mjs", *ts_args(f"{base}/agent", "stalled"))
        waited = time.monotonic() - started
    replayed = json.loads(proc.stdout)
    # the official client has no idle deadline: it waits, then completes as recorded
    assert replayed["outcome"] == "completed" and replayed["messages"] == document["messages"]
    assert waited >= 1.5  # the stall happened (a lower bound, not a performance threshold)


def test_a_drip_slows_both_and_breaks_neither(original: tuple[Path, dict[str, Any]]) -> None:
    folder, document = original
    events = 10 + 6  # the two recorded runs
    with serve(mock_app(folder, path="/agent", timing="fast", faults=["drip:0.05"])) as base:
        started = time.monotonic()
        seen_by_session = session_sees(f"{base}/agent")
        session_took = time.monotonic() - started
    with serve(mock_app(folder, path="/agent", timing="fast", faults=["drip:0.05"])) as base:
        started = time.monotonic()
        replayed = run_node("httpagent.mjs", *ts_args(f"{base}/agent", "dripped"))
        client_took = time.monotonic() - started
    # the recorded answer to the recorded call: the mock replays, it does not react
    assert seen_by_session == (
        'success: The user answered: confirm_order done with {"sku":"W-1","qty":2}'
    )
    assert replayed["outcome"] == "completed" and replayed["messages"] == document["messages"]
    assert min(session_took, client_took) >= events * 0.05  # every event waited its drip
