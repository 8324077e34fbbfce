"""``agui-tools chat URL``: a thread kept across turns, consent as in the demo,
``/save`` judged by ``verify``, and the other commands of the REPL."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.terminal import AGUI, ENV, ROOT, served, terminal

TOOLS = ["--tools", "tests.helpers.cli_agents"]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with served() as found:
        yield found


def test_three_turns_one_approval_one_decline_then_save_and_verify(
    url: str, tmp_path: Path
) -> None:
    capture = tmp_path / "chat.sse"
    with terminal(["chat", url, *TOOLS]) as term:
        term.expect(r"you> ")
        term.type('call act {"what": "the order"}\r')  # turn 1: approved
        term.expect(r"\[a\]pprove / \[d\]ecline")
        term.type("a\r")
        term.expect(r"→ approved")
        term.expect(r"the tools said — \S+-1: did the order")
        term.expect(r"you> ")
        term.type('call act {"what": "the email"}\r')  # turn 2: declined
        term.expect(r"message 2 of this thread")  # the thread is kept
        term.expect(r"\[a\]pprove / \[d\]ecline")
        term.type("d\r")
        term.expect(r"reason \(optional\)")
        term.type("not today\r")
        term.expect(r"→ declined: not today")
        term.expect(r"The user declined this tool call; it was not executed\. The user said: not")
        term.expect(r"you> ")
        term.type("thanks\r")  # turn 3: text only
        term.expect(r"you said 'thanks' \(message 3 of this thread\)")
        term.expect(r"you> ")
        term.type(f"/save {capture}\r")
        term.expect(r"saved \d+ bytes, 5 run\(s\)")
        term.expect(r"you> ")
        term.type("/state\r")
        term.expect(r"\{\}")
        term.type("/events\r")
        term.expect(r"\d+ event\(s\) in 5 run\(s\)")
        events = term.text
        term.type("/nonsense\r")
        term.expect(r"unknown command /nonsense")
        term.type("/quit\r")
        assert term.wait() == 0
    assert "TOOL_CALL_START" in events and "toolCallName=act" in events
    assert "Traceback" not in term.text
    verdict = subprocess.run(
        [*AGUI, "verify", str(capture), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
        cwd=ROOT,
    )
    assert verdict.returncode == 0, verdict.stdout[-2000:] + verdict.stderr
    judged = json.loads(verdict.stdout)
    assert judged["outcome"] == "completed" and judged["error"] is None
    assert judged["warnings"] == []
    assert [r["status"] for r in judged["runs"]] == ["success"] * 5
    human = subprocess.run(
        [*AGUI, "verify", str(capture)], capture_output=True, text=True, timeout=60, env=ENV
    )
    assert "VIOLATION" not in human.stdout and "outcome: completed" in human.stdout


def test_a_failed_turn_is_reported_and_the_chat_goes_on(url: str) -> None:
    """The agent fails mid-call: the call is answered "not executed", the next turn
    is sent on the same thread; Ctrl-D leaves with exit 0."""
    with terminal(["chat", url, *TOOLS]) as term:
        term.expect(r"you> ")
        term.type('cut act {"what": "hal\r')
        term.expect(r"the agent ended the run with an error")
        term.expect(r"you> ")
        term.type("still there?\r")
        term.expect(r"message 2 of this thread")
        term.expect(r"you> ")
        term.type("\x04")  # Ctrl-D
        assert term.wait() == 0
    assert "Traceback" not in term.text


def test_chat_reads_its_turns_from_a_pipe(url: str, tmp_path: Path) -> None:
    """Without a terminal the chat still works line by line, and consent at the end
    of input declines as nobody's decision."""
    capture = tmp_path / "piped.sse"
    proc = subprocess.run(
        [*AGUI, "chat", url, *TOOLS, "--save", str(capture)],
        input='hello\ncall act {"what": "x"}\n',
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "message 1 of this thread" in proc.stdout
    assert "The user declined" not in proc.stdout and "no user was asked" in proc.stdout
    assert capture.read_bytes().count(b'"type":"RUN_STARTED"') == 3


def test_a_chat_kept_in_a_store_is_resumed_by_thread_id(url: str, tmp_path: Path) -> None:
    """Issue 13: `--thread ID` resumes, once a store exists (issue 12): the second chat
    — another process — continues the first one's thread instead of starting anew."""
    store = tmp_path / "threads.sqlite"

    def chat(*extra: str, said: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*AGUI, "chat", url, *TOOLS, "--store", str(store), *extra],
            input=said, capture_output=True, text=True, timeout=60, env=ENV, cwd=ROOT,
        )  # fmt: skip

    first = chat(said="hello\n")
    assert first.returncode == 0, first.stderr
    assert "message 1 of this thread" in first.stdout
    found = re.search(r"thread (chat-\w+) is kept in", first.stdout)
    assert found, first.stdout
    thread = found.group(1)
    again = chat("--thread", thread, said="hello again\n")
    assert again.returncode == 0, again.stderr
    assert "you said 'hello again' (message 2 of this thread)" in again.stdout  # it came back
    lost = chat("--thread", "chat-x", "--journal", str(tmp_path / "j.db"), said="")
    assert lost.returncode == 2 and "not both" in lost.stderr
    alone = subprocess.run(
        [*AGUI, "chat", url, "--thread", thread], input="", capture_output=True, text=True,
        timeout=60, env=ENV, cwd=ROOT,
    )  # fmt: skip
    assert alone.returncode == 2 and "--thread ID needs --store FILE" in alone.stderr
