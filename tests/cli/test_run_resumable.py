"""``agui-tools run --resumable`` (docs/resumable.md) through the real command: a cut
connection rejoined with each event shown once, and Ctrl-C sending the stop."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.cutting_proxy import Cutter, cutting_proxy
from tests.helpers.resumable_server import ReferenceServer, slow_agent, two_tool_agent
from tests.helpers.scripted_server import serve
from tests.helpers.terminal import AGUI, ENV, ROOT, terminal

TOOLS = ["--tools", "tests.helpers.resumable_server"]


def test_a_cut_run_is_rejoined_and_the_thread_is_whole(tmp_path: Path) -> None:
    executions: dict[str, int] = {}
    server = ReferenceServer(two_tool_agent(executions))
    cutter = Cutter(cut_at=7)
    save = tmp_path / "cut.sse"
    with serve(server.app()) as base, cutting_proxy(int(base.rsplit(":", 1)[1]), cutter) as url:
        proc = subprocess.run(
            [*AGUI, "run", f"{url}/agent", "order two", "--resumable", *TOOLS, "--json",
             "--save", str(save)],
            capture_output=True, text=True, timeout=120, env=ENV, cwd=ROOT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert cutter.cuts == 1 and any(m == "GET" for m, _, _ in server.requests)
    document = json.loads(proc.stdout)
    assert [r["status"] for r in document["runs"]] == ["success", "success"]
    said = [(m["role"], m.get("content")) for m in document["messages"]]
    assert said == [
        ("user", "order two"),
        ("assistant", "Looking it up."),  # its deltas once each, across the cut
        ("tool", "7 in stock"),
        ("assistant", None),
        ("tool", "confirmed 2"),
        ("assistant", "Done: confirmed 2"),
    ]
    assert list(executions.values()) == [1]
    # the capture (both bodies of the cut run, then the next run) verifies as one stream
    verdict = subprocess.run(
        [*AGUI, "verify", str(save)], capture_output=True, text=True, timeout=120, env=ENV, cwd=ROOT
    )
    assert verdict.returncode == 0, verdict.stdout
    assert "event ids (docs/resumable.md): run " in verdict.stdout
    assert "seq 1–14" in verdict.stdout and "seq 1–5" in verdict.stdout


def test_a_run_cut_mid_event_saves_a_capture_verify_reads_whole(tmp_path: Path) -> None:
    """The torn event's fragment is not kept (the rejoin sends it whole): the capture
    verifies as one stream, every event once."""
    server = ReferenceServer(two_tool_agent({}))
    cutter = Cutter(cut_at=3, mid_event=100)  # through the id line, into the data
    save = tmp_path / "torn.sse"
    with serve(server.app()) as base, cutting_proxy(int(base.rsplit(":", 1)[1]), cutter) as url:
        proc = subprocess.run(
            [*AGUI, "run", f"{url}/agent", "order two", "--resumable", *TOOLS, "--save", str(save)],
            capture_output=True, text=True, timeout=120, env=ENV, cwd=ROOT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert cutter.cuts == 1
    verdict = subprocess.run(
        [*AGUI, "verify", str(save), "--json"],
        capture_output=True, text=True, timeout=120, env=ENV, cwd=ROOT,
    )  # fmt: skip
    assert verdict.returncode == 0, verdict.stdout[-2000:]
    document = json.loads(verdict.stdout)
    assert document["ids"]["replayed"] == [] and len(document["ids"]["runs"]) == 2
    assert [r["status"] for r in document["runs"]] == ["success", "success"]


def test_without_the_flag_a_cut_run_is_truncated() -> None:
    server = ReferenceServer(two_tool_agent({}))
    cutter = Cutter(cut_at=7)
    with serve(server.app()) as base, cutting_proxy(int(base.rsplit(":", 1)[1]), cutter) as url:
        proc = subprocess.run(
            [*AGUI, "run", f"{url}/agent", "order two", *TOOLS, "--json"],
            capture_output=True, text=True, timeout=120, env=ENV, cwd=ROOT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert proc.returncode == 1
    assert "agui-resumable" not in server.requests[0][2]
    assert json.loads(proc.stdout)["runs"][0]["status"] == "truncated"


def ctrl_c_mid_run(server: ReferenceServer, save: Path) -> tuple[int, str]:
    """``run --resumable`` against ``server``, Ctrl-C once the text streams: exit, stderr."""
    with serve(server.app()) as base:
        proc = subprocess.Popen(
            [*AGUI, "run", f"{base}/agent", "go", "--resumable", "--save", str(save)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=ENV, cwd=ROOT,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not (save.exists() and b"tick 5 " in save.read_bytes()):
            assert time.monotonic() < deadline and proc.poll() is None, "the text never streamed"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        [log] = server.logs.values()
        while not log.done:
            assert time.monotonic() < deadline, "the stopped run never ended"
            time.sleep(0.05)
    return proc.returncode, err


def test_ctrl_c_asks_the_agent_to_stop_the_run(tmp_path: Path) -> None:
    server = ReferenceServer(slow_agent(ticks=2000, every=0.01))
    code, err = ctrl_c_mid_run(server, tmp_path / "r.sse")
    assert code == 130, err
    [log] = server.logs.values()
    assert "Traceback" not in err and err.strip().endswith(
        f"agui-tools run: interrupted; the agent was asked to stop run {log.run_id!r}: "
        "it ends cancelled"
    )
    assert server.stops == 1
    assert json.loads(log.events[-1]) == {
        "type": "RUN_FINISHED", "threadId": log.thread_id, "runId": log.run_id,
        "outcome": {"type": "cancelled"},
    }  # fmt: skip
    assert len(log.events) < 1000  # it ended at the stop, not at its own end


@pytest.mark.slow
def test_ctrl_c_says_when_the_agent_refused_the_stop(tmp_path: Path) -> None:
    # the run goes on on the agent: the user is told so, in the one last line
    server = ReferenceServer(slow_agent(ticks=300, every=0.01), forget=True)
    code, err = ctrl_c_mid_run(server, tmp_path / "r.sse")
    assert code == 130, err
    [log] = server.logs.values()
    [last] = err.strip().splitlines()[-1:]
    assert last.startswith(
        f"agui-tools run: interrupted; the agent did not take the stop, run {log.run_id!r} "
        "may go on ("
    ), err
    assert "404" in last and "Traceback" not in err
    assert server.stops == 0
    ended = json.loads(log.events[-1])
    assert ended["type"] == "RUN_FINISHED" and "outcome" not in ended  # ran to its own end


def test_chat_resumable_rejoins_a_cut_turn() -> None:
    executions: dict[str, int] = {}
    server = ReferenceServer(two_tool_agent(executions))
    cutter = Cutter(cut_at=4)
    with serve(server.app()) as base, cutting_proxy(int(base.rsplit(":", 1)[1]), cutter) as url:
        with terminal(["chat", f"{url}/agent", "--resumable", *TOOLS]) as term:
            term.expect(r"you> ")
            term.type("order two\r")
            term.expect(r"Done: confirmed 2")
            term.expect(r"you> ")
            term.type("/quit\r")
            assert term.wait() == 0
            shown = term.text
    assert cutter.cuts == 1 and any(m == "GET" for m, _, _ in server.requests)
    assert "Looking it up." in shown  # the cut turn's text, each delta once:
    assert "Looking Looking" not in shown and "it up.it up." not in shown
    assert list(executions.values()) == [1]
