"""The binary binding on the command line: ``verify`` reads a captured binary body,
``run --proto`` and ``demo --proto`` talk HTTP + protobuf (TRANS-7)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from agui_tools.agent import Run
from agui_tools.cli import main
from agui_tools.demo.app import run_demo, scripted
from agui_tools.transport._server import agent_app
from agui_tools.wire._proto_codec import encode_proto_event
from agui_tools.wire._proto_framing import proto_frame
from tests.helpers.scripted_server import serve

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "120"}

GOOD: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "Looking"},
    {"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "toolCallName": "confirm", "delta": '{"id":'},
    {"type": "TOOL_CALL_CHUNK", "delta": "7}"},
    {"type": "STATE_SNAPSHOT", "snapshot": {"step": 2}},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1", "outcome": {"type": "handed_off"}},
]


def binary(events: list[dict[str, Any]]) -> bytes:
    return b"".join(proto_frame(encode_proto_event(e)) for e in events)


def verify(tmp_path: Path, data: bytes, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    path = tmp_path / "capture.bin"
    path.write_bytes(data)
    code = main(["verify", str(path), "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_verify_reads_a_binary_capture_as_it_reads_the_same_stream_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = verify(tmp_path, binary(GOOD), capsys)
    (tmp_path / "capture.json").write_text(json.dumps(GOOD))
    assert main(["verify", str(tmp_path / "capture.json"), "--json"]) == code == 0
    as_json = json.loads(capsys.readouterr().out)
    assert doc["outcome"] == "completed"
    assert doc["events"] == as_json["events"]
    assert doc["messages"] == as_json["messages"]
    assert [w["path"] for w in doc["warnings"]] == [w["path"] for w in as_json["warnings"]]
    assert doc["warnings"]  # the unknown outcome, stripped by enforcement on both


def test_verify_rejects_a_binary_capture_at_its_undecodable_frame(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = binary(GOOD[:2]) + proto_frame(b"\x12\x01") + binary(GOOD[2:])
    code, doc = verify(tmp_path, data, capsys)
    assert code == 1
    assert doc["outcome"] == "failed"
    assert (doc["error"]["rule"], doc["error"]["index"]) == ("TRANS-7", 2)
    assert [e["type"] for e in doc["events"]][:2] == ["RUN_STARTED", "TEXT_MESSAGE_START"]


def test_verify_calls_a_binary_capture_cut_mid_frame_truncated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = verify(tmp_path, binary(GOOD)[:-5], capsys)
    assert doc["outcome"] == "truncated" and code == 1  # not rejected, and not a success
    assert doc["runs"][0]["status"] == "truncated" and doc["truncated"]["rule"] == "TRANS-2"
    assert doc["truncated"]["unfinishedAt"] is not None


def test_verify_human_output_names_the_rule(tmp_path: Path) -> None:
    path = tmp_path / "broken.bin"
    path.write_bytes(binary(GOOD[:1]) + proto_frame(b"\xff"))
    proc = subprocess.run(
        [sys.executable, "-m", "agui_tools", "verify", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
        cwd=ROOT,
    )
    assert proc.returncode == 1
    assert "TRANS-7" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_demo_over_the_binary_binding_ends_like_the_sse_demo() -> None:
    results = {}
    for transport in ("sse", "proto"):
        console = Console(file=open(os.devnull, "w"), width=120)  # noqa: SIM115
        conv, result = asyncio.run(
            run_demo(
                console=console,
                decide=scripted(iter(["approve", "decline not today"])),
                fast=True,
                transport=transport,  # type: ignore[arg-type]
            )
        )
        results[transport] = (result.status, len(conv.runs), [m["role"] for m in conv.messages])
    assert results["proto"] == results["sse"]
    assert results["proto"][0] == "success"


requests: list[dict[str, str]] = []


async def greeter(run: Run) -> None:
    await run.text("Hello over protobuf — ✓")


@pytest.fixture(scope="module")
def recorded_agent() -> Iterator[str]:
    app = agent_app(greeter)

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode(): v.decode() for k, v in scope["headers"]}
            requests.append(headers)
            if scope["path"] == "/agent":
                scope = {**scope, "path": "/"}

            async def capture(message: Any) -> None:
                if message["type"] == "http.response.start":
                    for k, v in message["headers"]:
                        if k == b"content-type":
                            headers["answered"] = v.decode()
                await send(message)

            await app(scope, receive, capture)
            return
        await app(scope, receive, send)

    with serve(recording) as base:
        yield f"{base}/agent"


@pytest.mark.parametrize(("flag", "answered"), [([], "text/event-stream"), (["--proto"], "+proto")])
def test_run_asks_for_the_binding_it_is_told_to(
    recorded_agent: str, flag: list[str], answered: str
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agui_tools", "run", recorded_agent, "hi", *flag],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Hello over protobuf — ✓" in proc.stdout
    assert requests[-1]["answered"].endswith(answered)


def test_demo_proto_flag_runs_the_demo_over_the_binary_binding() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agui_tools", "demo", "--proto", "--yes", "--fast"],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "(binary binding)" in proc.stdout
    assert "last status success" in proc.stdout
