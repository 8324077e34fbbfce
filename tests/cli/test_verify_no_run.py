"""``verify`` says only what a capture holds (issue 36, item 9): an empty array or a
capture of keep-alives only completed nothing; no run without ids is reported; a
``proxy --record`` folder is judged exchange by exchange, as ``mock DIR`` reads it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.helpers.proxy import post, proxied
from tests.helpers.scripted_server import serve
from tests.helpers.terminal import AGUI, ENV, ROOT


def verify(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGUI, "verify", *args], capture_output=True, text=True, timeout=120, env=ENV, cwd=ROOT
    )  # fmt: skip


def test_an_empty_array_is_no_capture(tmp_path: Path) -> None:
    capture = tmp_path / "empty.json"
    capture.write_text("[]")
    proc = verify(str(capture))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == (
        f"agui-tools verify: {capture} is not a readable capture: [TRANS-4] capture: an empty "
        "JSON array: no event was captured.\n"
    )


@pytest.mark.parametrize("json_out", [False, True], ids=["human", "json"])
def test_keep_alives_only_are_no_completed_run(tmp_path: Path, json_out: bool) -> None:
    capture = tmp_path / "pings.sse"
    capture.write_bytes(b": ping\n\n: ping\n\n")
    proc = verify(str(capture), *(["--json"] if json_out else []))
    assert proc.returncode == 1, proc.stderr
    if json_out:
        document = orjson.loads(proc.stdout)
        assert document["outcome"] == "empty"
        assert document["runs"] == []  # no run with null ids
    else:
        assert proc.stdout.splitlines() == [
            "0 event(s) read, 0 delivered, 0 warning(s)",
            "outcome: empty (no run in the capture: keep-alives only — not a success)",
        ]


def test_a_rejected_stream_lists_no_run_without_ids(tmp_path: Path) -> None:
    capture = tmp_path / "orphan.json"
    capture.write_bytes(orjson.dumps([{"type": "TEXT_MESSAGE_START", "messageId": "m"}]))
    proc = verify(str(capture), "--json")
    assert proc.returncode == 1, proc.stderr
    document = orjson.loads(proc.stdout)
    assert document["outcome"] == "failed"
    assert all(run["runId"] is not None for run in document["runs"]), document["runs"]


@pytest.fixture(scope="module")
def agent() -> Iterator[str]:
    """Thread ``bad`` gets a call's arguments for a call never started; others a clean run."""

    async def endpoint(request: Request) -> Response:
        asked = orjson.loads(await request.body())
        thread, run = asked["threadId"], asked["runId"]
        events = [{"type": "RUN_STARTED", "threadId": thread, "runId": run}]
        if thread == "bad":
            events.append({"type": "TOOL_CALL_ARGS", "toolCallId": "ghost", "delta": "{}"})
        events.append({"type": "RUN_FINISHED", "threadId": thread, "runId": run})
        body = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)
        return Response(body, media_type="text/event-stream")

    with serve(Starlette(routes=[Route("/agent", endpoint, methods=["POST"])])) as base:
        yield f"{base}/agent"


def _input(thread: str) -> dict[str, object]:
    return {
        "threadId": thread, "runId": "r", "state": {}, "messages": [], "tools": [],
        "context": [], "forwardedProps": {},
    }  # fmt: skip


def test_a_recording_folder_is_judged_exchange_by_exchange(agent: str, tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    with proxied(agent, record=folder) as proxy:
        post(proxy.url, _input("good"))
        post(proxy.url, _input("bad"))
    proc = verify(str(folder))
    assert "Is a directory" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the second run broke a rule
    lines = proc.stdout.splitlines()
    assert lines[0] == f"== {folder / '0001.sse'} (input 0001.input.json)"
    assert "outcome: completed" in lines
    assert f"== {folder / '0002.sse'} (input 0002.input.json)" in lines
    assert any(line.startswith("VIOLATION [TOOL-") or "ghost" in line for line in lines), lines
    document = orjson.loads(verify(str(folder), "--json").stdout)
    outcomes = [(Path(e["file"]).name, e["outcome"]) for e in document["exchanges"]]
    assert outcomes[:2] == [("0001.sse", "completed"), ("0002.sse", "failed")]
