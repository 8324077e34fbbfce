"""Ctrl-C at every phase of ``run``, ``demo`` and ``chat``, typed in a real terminal:
one line, exit 130, no traceback — and the journal keeps what was recorded before."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.cli_agents import journal_rows
from tests.helpers.terminal import one_line_interrupt, served, terminal

TOOLS = ["--tools", "tests.helpers.cli_agents"]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with served() as found:
        yield found


def test_run_interrupted_while_text_streams(url: str) -> None:
    with terminal(["run", url, "slow 400"]) as term:
        term.expect(r"w5 ")
        term.interrupt()
        assert term.wait() == 130
        one_line_interrupt(term.text, "run")


def test_run_interrupted_before_the_agent_answers() -> None:
    """Connected, request sent, nothing back yet: the client is waiting for headers."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted, release = threading.Event(), threading.Event()

    def hold() -> None:
        conn, _ = listener.accept()
        accepted.set()
        conn.recv(65536)
        release.wait(60)  # hold the connection open; never answer
        conn.close()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    try:
        port = listener.getsockname()[1]
        with terminal(["run", f"http://127.0.0.1:{port}/agent", "hi"]) as term:
            assert accepted.wait(30)
            term.interrupt()
            assert term.wait() == 130
            one_line_interrupt(term.text, "run")
    finally:
        release.set()
        listener.close()


def test_run_interrupted_at_the_consent_prompt_on_the_first_ctrl_c(
    url: str, tmp_path: Path
) -> None:
    journal = tmp_path / "journal.db"
    with terminal(
        ["run", url, 'call look {"what": "x"}; call act {"what": "y"}', *TOOLS,
         "--journal", str(journal)]
    ) as term:  # fmt: skip
        term.expect(r"\[a\]pprove / \[d\]ecline")
        term.interrupt()  # once: asyncio.run's handler used to swallow the first
        assert term.wait() == 130
        one_line_interrupt(term.text, "run")
    rows = journal_rows(str(journal))
    # the read-only call ran before the prompt and is recorded; the other was never decided
    (looked,) = [a for cid, a in rows["answers"].items() if cid.endswith("-1")]
    assert looked["outcome"] == "executed" and looked["content"] == "saw x"
    assert [d["tool"] for d in rows["decisions"]] == ["look"]


def test_run_interrupted_while_a_sync_tool_runs(url: str, tmp_path: Path) -> None:
    """The handler blocks for ever: the command ends at once (it used to wait for the
    handler), and the journal holds the approval, the answer before, and the intent —
    answered "outcome unknown", so it is never run again."""
    journal = tmp_path / "journal.db"
    with terminal(
        ["run", url, 'call act {"what": "y"}; call wait_forever {}', *TOOLS,
         "--journal", str(journal)]
    ) as term:  # fmt: skip
        term.expect(r"\[a\]pprove / \[d\]ecline")
        term.type("a\r")
        term.expect(r"→ approved")
        # the spinner, past its first second: the claim (now recorded off the event loop)
        # is long done and the handler is running — before that a Ctrl-C rightly
        # answers "not executed"
        term.expect(r"running for [1-9]\d* s")
        term.interrupt()
        assert term.wait(timeout=30) == 130
        one_line_interrupt(term.text, "run")
        assert f"what was decided and run is in {journal}" in term.text
    rows = journal_rows(str(journal))
    answers = {cid.rsplit("-", 1)[1]: a for cid, a in rows["answers"].items()}
    assert answers["1"]["content"] == "did y"
    assert answers["2"]["outcome"] == "failed" and "outcome unknown" in answers["2"]["error"]
    decided = {(d["tool"], d["approved"], d["decidedBy"]) for d in rows["decisions"]}
    assert decided == {("act", True, "user"), ("wait_forever", True, "policy")}


def test_demo_interrupted_at_its_consent_prompt() -> None:
    with terminal(["demo", "--fast"]) as term:
        term.expect(r"\[a\]pprove / \[d\]ecline")
        term.interrupt()  # it used to re-prompt "please answer a, d or e"
        assert term.wait() == 130
        one_line_interrupt(term.text, "demo")
        assert "please answer" not in term.text


def test_demo_interrupted_while_text_streams() -> None:
    with terminal(["demo"]) as term:  # human pace: text streams for a while
        term.expect(r"Let me check")
        term.interrupt()
        assert term.wait() == 130
        one_line_interrupt(term.text, "demo")


def test_chat_interrupted_at_its_prompt(url: str) -> None:
    with terminal(["chat", url]) as term:
        term.expect(r"you> ")
        term.type("hello\r")
        term.expect(r"message 1 of this thread")
        term.expect(r"you> ")
        term.interrupt()
        assert term.wait() == 130
        one_line_interrupt(term.text, "chat")


def test_chat_interrupted_while_text_streams(url: str) -> None:
    with terminal(["chat", url]) as term:
        term.expect(r"you> ")
        term.type("slow 400\r")
        term.expect(r"w5 ")
        term.interrupt()
        assert term.wait() == 130
        one_line_interrupt(term.text, "chat")


def test_chat_interrupted_at_a_consent_prompt_and_while_a_tool_runs(url: str) -> None:
    with terminal(["chat", url, *TOOLS]) as term:
        term.expect(r"you> ")
        term.type('call act {"what": "z"}\r')
        term.expect(r"\[a\]pprove / \[d\]ecline")
        term.interrupt()
        assert term.wait() == 130
        one_line_interrupt(term.text, "chat")
    with terminal(["chat", url, *TOOLS]) as term:
        term.expect(r"you> ")
        term.type("call wait_forever {}\r")
        term.expect(r"running for [1-9]\d* s")
        term.interrupt()
        assert term.wait(timeout=30) == 130
        one_line_interrupt(term.text, "chat")
