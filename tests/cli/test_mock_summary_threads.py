"""`mock`'s start-up summary judges each capture as `verify` judges it: the runs one
file splits into are one thread, and two files are two threads — whatever their paths."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from tests.helpers.proxy import mock_cmd


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def _run(run_id: str, *middle: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": run_id},
        *middle,
        {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id},
    ]


CALL = [
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "lookup"},
    {"type": "TOOL_CALL_END", "toolCallId": "c1"},
]
ANSWER = {"type": "TOOL_CALL_RESULT", "messageId": "m1", "toolCallId": "c1", "content": "ok"}


def _summary(*captures: Path) -> str:
    proc, _url = mock_cmd(*map(str, captures))
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    return err


def test_the_runs_of_one_capture_are_judged_as_one_thread(tmp_path: Path) -> None:
    both = tmp_path / "both.sse"
    both.write_bytes(_sse(_run("r1", *CALL) + _run("r2", ANSWER)))
    said = _summary(both)
    assert "run 2 (" in said and "warning" not in said, said


def test_two_captures_are_two_threads_even_in_a_folder_named_run(tmp_path: Path) -> None:
    """The second file answers a call only the first started: judged alone, as `verify`
    judges it, that is TOOL-10 — never folded into the first file's thread because the
    paths look alike."""
    folder = tmp_path / "my run 3"
    folder.mkdir()
    (folder / "a.sse").write_bytes(_sse(_run("r1", *CALL)))
    (folder / "b.sse").write_bytes(_sse(_run("r2", ANSWER)))
    said = _summary(folder / "a.sse", folder / "b.sse")
    lines = [line for line in said.splitlines() if "b.sse" in line]
    assert lines and "1 warning(s)" in lines[0], said
