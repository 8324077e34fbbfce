"""``agui-tools verify``: formats, output, exit codes (run in-process and as a real process)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agui_tools.cli import main

GOOD: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "Looking", "future": True},
    {
        "type": "TOOL_CALL_CHUNK",
        "toolCallId": "c1",
        "toolCallName": "confirm",
        "parentMessageId": "m1",
        "delta": '{"id":',
    },
    {"type": "TOOL_CALL_CHUNK", "delta": "7}"},
    {"type": "STATE_SNAPSHOT", "snapshot": {"step": 2}},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
]
BAD = [*GOOD[:2], {"type": "TOOL_CALL_ARGS", "toolCallId": "nope", "delta": "{}"}, GOOD[-1]]

# what a consumer delivers for GOOD: the chunks expanded, each item closed
DELIVERED = [
    "RUN_STARTED",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "TOOL_CALL_START",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
    "STATE_SNAPSHOT",
    "RUN_FINISHED",
]


def write(tmp: Path, name: str, events: list[dict[str, Any]], fmt: str) -> Path:
    path = tmp / name
    if fmt == "json":
        path.write_text(json.dumps(events))
    elif fmt == "ndjson":
        path.write_text("".join(json.dumps(e) + "\n" for e in events))
    else:
        path.write_bytes(
            b": keep-alive\r\n\r\n"
            + b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in events)
        )
    return path


@pytest.mark.parametrize("fmt", ["json", "ndjson", "sse"])
def test_formats_give_the_same_document(
    tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, f"good.{fmt}", GOOD, fmt)
    assert main(["verify", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["outcome"] == "completed" and doc["error"] is None
    assert [w["path"] for w in doc["warnings"]] == ["/future"]
    assert [e["type"] for e in doc["events"]] == DELIVERED
    assert doc["runs"] == [{"threadId": "t", "runId": "r1", "status": "success", "pending": ["c1"]}]
    assert doc["messages"] == [
        {
            "id": "m1",
            "role": "assistant",
            "content": "Looking",
            "toolCalls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "confirm", "arguments": '{"id":7}'},
                }
            ],
        }
    ]
    assert doc["state"] == {"step": 2}


def test_rejected_stream_exits_1_and_names_rule_and_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "bad.ndjson", BAD, "ndjson")
    assert main(["verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert "VIOLATION [TOOL-20] event #2 TOOL_CALL_ARGS" in out
    assert "outcome: failed" in out and "rejected" in out
    assert main(["verify", str(path), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["outcome"] == "failed"
    assert (doc["error"]["rule"], doc["error"]["index"]) == ("TOOL-20", 2)
    assert [e["type"] for e in doc["events"]] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
    ]
    assert doc["runs"][0]["status"] == "rejected"


def test_truncated_stream_is_not_a_success(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "cut.json", GOOD[:4], "json")
    # consumed, but the run is truncated: no outcome, not a success (TRANS-2), exit 1
    assert main(["verify", str(path), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["runs"][0]["status"] == "truncated" and doc["truncated"]["rule"] == "TRANS-2"
    # what arrived is delivered (the text closed by the call's chunk), and nothing is
    # invented for what did not: no end for the open call, no RUN_FINISHED
    assert [e["type"] for e in doc["events"]] == DELIVERED[:7]


def test_input_and_strict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answered = [
        *GOOD[:4],
        {"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c1", "content": "ok"},
        GOOD[-1],
    ]
    path = write(tmp_path, "fe.json", answered, "json")
    run_input = tmp_path / "input.json"
    run_input.write_text(
        json.dumps(
            {
                "threadId": "t",
                "runId": "r1",
                "messages": [],
                "tools": [{"name": "confirm", "description": "ask"}],
            }
        )
    )
    assert main(["verify", str(path), "--input", str(run_input), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [w["rule"] for w in doc["warnings"]] == ["PROC-3", "FE-2"]
    assert main(["verify", str(path), "--input", str(run_input), "--strict"]) == 1
    assert "[FE-2]" in capsys.readouterr().out


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(tmp_path / "missing.json")]) == 2
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("[{")
    assert main(["verify", str(bad_json)]) == 2
    good = write(tmp_path, "g.json", GOOD, "json")
    (tmp_path / "in.json").write_text("[1]")
    assert main(["verify", str(good), "--input", str(tmp_path / "in.json")]) == 2
    with pytest.raises(SystemExit) as info:
        main(["verify"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err


def test_stdin_and_real_process(tmp_path: Path) -> None:
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in GOOD)
    proc = subprocess.run(
        [sys.executable, "-m", "agui_tools.cli", "verify", "-", "--json"],
        input=body.encode(),
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["outcome"] == "completed"
    proc = subprocess.run(
        [sys.executable, "-m", "agui_tools.cli", "verify", "--help"],
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0 and b"Exit codes" in proc.stdout


def test_stdin_in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(json.dumps(BAD).encode()))
    monkeypatch.setattr("sys.stdin", stdin)
    assert main(["verify", "-"]) == 1


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", "no event found"),
        (b"\x07\x01\x02\xff\xfe binary", "not UTF-8 text (byte 3)"),  # a leading 0 is a frame
        (b"\x00\x01\x02\xff\xfe binary", "no complete binary frame"),
        (b'{"type":"RUN_STARTED","threadId":"t\xff","runId":"r"}\n', "not UTF-8 text"),
        (b"hello, not a stream\n", "no event found"),
    ],
    ids=["empty", "binary", "binary-frame-header", "ndjson-not-utf8", "prose"],
)
def test_an_unreadable_capture_is_usage_error_not_a_completed_stream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, why: str
) -> None:
    path = tmp_path / "capture"
    path.write_bytes(content)
    assert main(["verify", str(path)]) == 2
    captured = capsys.readouterr()
    assert "is not a readable capture: [TRANS-" in captured.err and why in captured.err
    assert "completed" not in captured.out


def test_a_capture_of_keepalives_only_is_a_readable_empty_stream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "quiet.sse"
    path.write_bytes(b": keep-alive\n\n: keep-alive\n\n")
    assert main(["verify", str(path), "--json"]) == 1  # it completed nothing (issue 36)
    document = json.loads(capsys.readouterr().out)
    assert (document["outcome"], document["runs"]) == ("empty", [])


def test_a_malformed_input_is_judged_first_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write(tmp_path, "g.json", GOOD, "json")
    bad_input = tmp_path / "in.json"
    bad_input.write_text('{"threadId": 5, "runId": "r1", "messages": []}')
    assert main(["verify", str(good), "--input", str(bad_input)]) == 2
    err = capsys.readouterr().err
    assert "is not a valid RunAgentInput: [INPUT-2] run input at /threadId" in err
    bad_input.write_text('{"threadId": "t", "runId": "r1", "runId": "r2", "messages": []}')
    assert main(["verify", str(good), "--input", str(bad_input)]) == 2
    assert "at /runId: member 'runId' appears twice" in capsys.readouterr().err


def test_a_parse_error_in_a_capture_is_not_labelled_run_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("[{")
    assert main(["verify", str(bad_json)]) == 2
    err = capsys.readouterr().err
    assert "[TRANS-4] capture:" in err and "run input" not in err


def test_hostile_payloads_are_verdicts_not_tracebacks(tmp_path: Path) -> None:
    """A thousand-level state or custom value, a 5,000-digit version: each is judged."""
    deep = "[" * 1000 + "]" * 1000
    start = '{"type":"RUN_STARTED","threadId":"t","runId":"r"'
    finish = '{"type":"RUN_FINISHED","threadId":"t","runId":"r"}'
    cases = {
        "deep_state.json": (
            f'[{start}}},{{"type":"STATE_SNAPSHOT","snapshot":{{"a":{deep}}}}},{finish}]',
            1,
        ),
        "deep_custom.json": (
            f'[{start}}},{{"type":"CUSTOM","name":"x","value":{deep}}},{finish}]',
            1,
        ),
        "version.json": (f'[{start},"protocolVersion":"1.{"9" * 5000}"}},{finish}]', 0),
    }
    for name, (text, code) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        proc = subprocess.run(
            [sys.executable, "-m", "agui_tools", "verify", str(path), "--json"],
            capture_output=True,
            timeout=60,
        )
        assert proc.returncode == code, (name, proc.stderr[-500:])
        assert b"Traceback" not in proc.stderr
        doc = json.loads(proc.stdout)
        if code:
            assert doc["error"]["rule"] == "LIMIT" and doc["runs"][0]["status"] == "rejected"
        else:
            assert [w["rule"] for w in doc["warnings"]] == ["VER-5"]


def test_a_limit_refusal_names_the_option_that_raises_it(tmp_path: Path) -> None:
    """It used to say "raise the limit" with no way to; --limit NAME=N is that way."""
    deep = {"a": {"b": {"c": {"d": 1}}}}
    capture = tmp_path / "deep.json"
    capture.write_text(
        json.dumps(
            [
                {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                {"type": "STATE_SNAPSHOT", "snapshot": deep},
                {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
            ]
        )
    )

    def verify(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agui_tools", "verify", str(capture), *extra],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    low = verify("--limit", "max_depth=3")
    assert low.returncode == 1 and "[LIMIT]" in low.stdout and "--limit NAME=N" in low.stdout
    assert verify("--limit", "max_depth=30").returncode == 0
    bad = verify("--limit", "max_deep=3")
    assert bad.returncode == 2 and "NAME one of max_event_bytes" in bad.stderr


def test_the_limit_names_in_help_are_the_limits_fields() -> None:
    import dataclasses

    from agui_tools.cli.verify_cmd import LIMIT_NAMES
    from agui_tools.wire import Limits

    assert tuple(f.name for f in dataclasses.fields(Limits)) == LIMIT_NAMES


def test_a_patch_bomb_capture_is_a_limit_violation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 11, item 1: ``verify`` folded the 3 KB bomb for 52 s and 700 MB, then
    called the run a success; the capture is rejected at the delta, by name."""
    from tests.helpers.attacks import patch_bomb

    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "STATE_SNAPSHOT", "snapshot": {"a": [0] * 64}},
        {"type": "STATE_DELTA", "delta": patch_bomb(19)},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    path = write(tmp_path, "bomb.ndjson", events, "ndjson")
    assert main(["verify", str(path), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["outcome"] == "failed"
    assert doc["error"]["rule"] == "LIMIT" and doc["error"]["index"] == 2
    assert "max_state_bytes" in doc["error"]["message"]
