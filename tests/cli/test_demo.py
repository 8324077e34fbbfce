"""The main job: ``agui-tools demo`` shows the whole loop, non-interactively and
in a real terminal (a pty); ``serve`` and ``run`` work as documented."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from agui_tools.demo.agent import REFUND_SCHEMA
from agui_tools.demo.app import run_demo, scripted

ROOT = Path(__file__).resolve().parents[2]
AGUI = [sys.executable, "-m", "agui_tools"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "120"}


def _demo(*answers: str) -> Any:
    console = Console(file=open(os.devnull, "w"), width=120)  # noqa: SIM115
    return asyncio.run(run_demo(console=console, decide=scripted(iter(answers)), fast=True))


def test_demo_thread_every_call_answered_once_declined_says_so_invalid_errors() -> None:
    conv, result = _demo("approve", "decline not today", "decline too much")
    assert result.status == "success" and conv.pending == []
    # no run ended in error; the fifth stopped to ask for the refund's approval (an interrupt)
    assert [run.status for run in conv.runs] == ["success"] * 4 + ["interrupt", "success"]
    messages = conv.messages
    calls = [c for m in messages if m.get("toolCalls") for c in m["toolCalls"]]
    answers = [m for m in messages if m["role"] == "tool"]
    # every call answered exactly once (agent-side in-stream, frontend by the app)
    assert sorted(m["toolCallId"] for m in answers) == sorted(c["id"] for c in calls)
    by_call = {m["toolCallId"]: m for m in answers}
    assert (
        "error" in by_call["s2-order"] and "/qty" in by_call["s2-order"]["error"]
    )  # invalid arguments
    assert by_call["s3-order"]["content"].startswith("order #")  # approved and executed
    assert (
        "The user declined" in by_call["s4-email"]["content"]
    )  # declined, and says it was the user
    assert "not a tool this application advertised" in by_call["s4-unsub"]["error"]  # unadvertised
    assert by_call["s1-inventory"]["content"].startswith('{"sku"')  # agent-side, in-stream
    assert {"s1-location", "s1-preferences"} <= set(by_call)  # parallel calls answered together
    # the agent reacted to each answer
    said = " ".join(str(m.get("content")) for m in messages if m["role"] == "assistant")
    assert "declined the receipt email" in said and "never offered that tool" in said
    assert "Fixing the quantity" in said
    # the refund: the agent's own call, approved through an interrupt — here cancelled
    interrupt = conv.runs[4].interrupts[0]
    assert interrupt["toolCallId"] == "s5-refund" and interrupt["responseSchema"] == REFUND_SCHEMA
    assert json.loads(by_call["s5-refund"]["content"])["refunded"] == 0
    final = messages[-1]["content"]
    assert "the refund was cancelled, so none was issued (too much)" in final, final


def test_demo_refund_approved_through_its_interrupt_is_issued() -> None:
    conv, result = _demo("approve", "approve", "approve")
    assert result.status == "success"
    answer = next(m for m in conv.messages if m.get("toolCallId") == "s5-refund")
    assert json.loads(answer["content"])["refunded"] == 4.5
    assert "Done — refunded 4.50 EUR (reference RF-" in conv.messages[-1]["content"]


def test_demo_command_runs_non_interactively() -> None:
    proc = subprocess.run(
        [*AGUI, "demo", "--yes", "--fast"],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "6 runs, last status success; 9 tool results" in proc.stdout
    assert "The agent asks for approval" in proc.stdout and "May I refund 4.50 EUR" in proc.stdout
    assert "→ resolved with" in proc.stdout and "Done — refunded 4.50 EUR" in proc.stdout
    assert "Traceback" not in proc.stderr


def _read_until(fd: int, pattern: str, buffer: list[str], timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = "".join(buffer)
        if re.search(pattern, text):
            return text
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"did not see {pattern!r}; got:\n{text[-3000:]}"
        ready, _, _ = select.select([fd], [], [], min(remaining, 0.5))
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if not data:
                text = "".join(buffer)
                assert re.search(pattern, text), f"EOF before {pattern!r}:\n{text[-3000:]}"
                return text
            buffer.append(data.decode(errors="replace"))


def test_interactive_demo_in_a_real_terminal_approve_one_decline_another() -> None:
    pid, fd = pty.fork()
    if pid == 0:  # the child: the demo, on a real terminal
        os.execvpe(sys.executable, [*AGUI, "demo", "--fast"], {**ENV, "TERM": "xterm-256color"})
    buffer: list[str] = []
    try:
        _read_until(fd, r"\[a\]pprove / \[d\]ecline", buffer)
        assert "place_order" in "".join(buffer)
        os.write(fd, b"a\r")
        mark = len("".join(buffer))
        buffer_text = _read_until(fd, r"(?s)email_receipt.*\[a\]pprove / \[d\]ecline", buffer)
        assert len(buffer_text) > mark
        os.write(fd, b"d\r")
        _read_until(fd, r"reason \(optional\)", buffer)
        os.write(fd, b"privacy\r")
        # the refund's approval: an interrupt card, answered like run's and chat's
        _read_until(fd, r"(?s)asks for approval.*\[a\]pprove / \[r\]esolve with JSON", buffer)
        os.write(fd, b"a\r")
        out = _read_until(fd, r"tool results in the thread", buffer)
    finally:
        for _ in range(100):  # give it time to exit, then make sure it does
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, 9)
            _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, out[-3000:]
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out)
    assert "order #" in plain and "The user declined" in plain and "privacy" in plain
    assert "Done — refunded 4.50 EUR" in plain


@pytest.mark.slow
def test_serve_prints_the_url_and_run_drives_it(tmp_path: Path) -> None:
    server = subprocess.Popen(
        [*AGUI, "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=ROOT,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        match = re.match(r"Serving AG-UI agent at (http://127\.0\.0\.1:\d+/agent)", line)
        assert match, (line, server.stderr.read() if server.stderr else "")
        url = match.group(1)
        (tmp_path / "my_tools.py").write_text(
            "from agui_tools.demo.tools import register\n"  # the demo's own frontend tools
        )
        script = tmp_path / "answers.txt"
        script.write_text('edit {"sku": "widget", "qty": 3}\ndecline\n')
        deadline = time.monotonic() + 30
        while True:  # the server prints before uvicorn binds: wait until it answers
            try:
                import httpx

                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        proc = subprocess.run(
            [
                *AGUI,
                "run",
                url,
                "Order two widgets for me.",
                "--tools",
                "my_tools",
                "--script",
                str(script),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env={**ENV, "PYTHONPATH": f"{ENV['PYTHONPATH']}:{tmp_path}"},
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
        assert (
            "order #" in proc.stdout and ": 3 x widget" in proc.stdout
        )  # the edited arguments ran
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_run_reports_an_unreachable_agent_with_exit_2() -> None:
    proc = subprocess.run(
        [*AGUI, "run", "http://127.0.0.1:9/agent", "hi"],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and "cannot reach" in proc.stderr and "Traceback" not in proc.stderr


def test_run_reports_a_connection_broken_mid_run_as_a_failed_run_with_exit_1() -> None:
    """A run that started and broke off did not end in success (exit 1), and says so;
    an agent that cannot be reached at all is exit 2 (above)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def one_broken_response() -> None:
        conn, _ = listener.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
            while len(body) < length:
                body += conn.recv(65536)
            request = json.loads(body)
            started = {
                "type": "RUN_STARTED",
                "threadId": request["threadId"],
                "runId": request["runId"],
            }
            event = b"data: " + json.dumps(started).encode() + b"\n\n"
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
                + f"{len(event):x}\r\n".encode()
                + event
                + b"\r\n"
            )
            time.sleep(0.2)  # then the server dies: no terminating chunk

    server = threading.Thread(target=one_broken_response)
    server.start()
    try:
        proc = subprocess.run(
            [*AGUI, "run", f"http://127.0.0.1:{port}/agent", "hi", "--yes"],
            capture_output=True,
            text=True,
            timeout=60,
            env=ENV,
            cwd=ROOT,
        )
    finally:
        server.join(10)
        listener.close()
    assert proc.returncode == 1, proc.stderr
    assert "failed mid-stream" in proc.stderr and "truncated" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_serve_with_an_unknown_agent_is_usage_error() -> None:
    proc = subprocess.run(
        [*AGUI, "serve", "no_such_module:agent"],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and "cannot load the agent" in proc.stderr


@pytest.mark.parametrize("command", ["demo", "serve", "run", "verify", "conformance"])
def test_every_command_has_help(command: str) -> None:
    proc = subprocess.run(
        [*AGUI, command, "--help"], capture_output=True, text=True, timeout=60, env=ENV
    )
    assert proc.returncode == 0 and "Exit codes" in proc.stdout


@pytest.fixture
def bad_inputs(tmp_path: Path) -> Path:
    """Files a user might point the commands at by mistake, in a working directory."""
    (tmp_path / "binary.bin").write_bytes(b"\x00\x01\x02\xff\xfe binary")
    (tmp_path / "bad_verb.txt").write_text("approve\nfrobnicate\n")
    (tmp_path / "bad_json.txt").write_text("# answers\nedit {not json\n")
    (tmp_path / "badsyntax_tools.py").write_text("def register(s):\n  return (\n")
    (tmp_path / "boom_tools.py").write_text('raise RuntimeError("boom at import")\n')
    return tmp_path


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["demo", "--fast", "--script", "binary.bin"], "is not UTF-8 text (byte 3)"),
        (["demo", "--fast", "--script", "bad_verb.txt"], "line 2: unknown script answer"),
        (["demo", "--fast", "--script", "bad_json.txt"], "line 2: edit needs JSON arguments"),
        (["run", "http://127.0.0.1:9/a", "hi", "--script", "binary.bin"], "is not UTF-8 text"),
        (["run", "http://127.0.0.1:9/a", "hi", "--tools", "badsyntax_tools"], "(SyntaxError in "),
        (
            ["run", "http://127.0.0.1:9/a", "hi", "--tools", "boom_tools"],
            "boom at import (RuntimeError)",
        ),
        (["run", "http://[::1/agent", "hi"], "is not a valid URL"),
        (["run", "ftp://example.com/agent", "hi"], "is not an http:// or https:// URL"),
        (["serve", "badsyntax_tools:register", "--port", "0"], "(SyntaxError in "),
        (["serve", "boom_tools:x", "--port", "0"], "boom at import (RuntimeError)"),
        (["serve", "--port", "99999"], "99999 is not a port"),
        (["serve", "--port", "-1"], "-1 is not a port"),
    ],
    ids=[
        "demo-script-binary",
        "demo-script-verb",
        "demo-script-json",
        "run-script-binary",
        "run-tools-syntax",
        "run-tools-raises",
        "run-url-invalid",
        "run-url-scheme",
        "serve-syntax",
        "serve-raises",
        "serve-port-high",
        "serve-port-negative",
    ],
)
def test_bad_usage_is_one_readable_line_and_exit_2(
    bad_inputs: Path, args: list[str], says: str
) -> None:
    """Nothing starts — no "Serving …", no demo — and no traceback reaches the user."""
    proc = subprocess.run(
        [*AGUI, *args], capture_output=True, text=True, timeout=60, env=ENV, cwd=bad_inputs
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert says in proc.stderr
    assert "Traceback" not in proc.stderr
    assert "Serving" not in proc.stdout and "AG-UI demo" not in proc.stdout


def test_a_bad_answer_on_stdin_is_reported_when_its_prompt_comes() -> None:
    """stdin may be a pipe that never ends, so its answers are judged as they are read."""
    proc = subprocess.run(
        [*AGUI, "demo", "--fast"],
        input="frobnicate\n",
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        cwd=ROOT,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "the consent answers on stdin, answer 1: unknown script answer" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_demo_keeps_its_thread_in_a_sqlite_store(tmp_path: Path) -> None:
    from agui_tools.app._store_sqlite import SQLiteStore

    path = tmp_path / "threads.sqlite"
    proc = subprocess.run(
        [sys.executable, "-m", "agui_tools", "demo", "--yes", "--fast", "--store", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    thread_id = proc.stdout.strip().splitlines()[-1].split(" as ")[1].strip("'")
    with SQLiteStore(path) as store:
        record = store.load(thread_id)
    assert record is not None and record.version >= 2  # every run of the demo was saved
    assert any(m["role"] == "tool" for m in record.messages)


def test_a_damaged_store_file_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "threads.sqlite"
    path.write_bytes(b"this is not a database file, whatever it once was" * 100)
    proc = subprocess.run(
        [sys.executable, "-m", "agui_tools", "demo", "--yes", "--fast", "--store", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert str(path) in proc.stderr and "damaged" in proc.stderr
