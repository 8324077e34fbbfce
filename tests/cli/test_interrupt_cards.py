"""``run`` and ``chat`` through an AG-UI interrupt (issue #22, item 2), in a real
terminal: the card, approve / cancel / resolve with an invalid then a valid payload,
Ctrl-C at the prompt, stdin closed, the flags — each ending as docs/cli.md says, no
traceback — and a restart: the process dies while the user decides, a new one on the
same store resumes the interrupt once.

(The Ctrl-C tests of ``test_interrupts.py`` are about the other kind of interrupt.)"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.terminal import AGUI, ENV, ROOT, Terminal, one_line_interrupt, served, terminal

REFUND = 'approve refund {"order": "A1", "cents": 500}'
CITY = 'ask {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}'


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("resumes") / "resumes.jsonl"
    ENV["AGUI_TEST_RESUME_LOG"] = str(path)  # read by the served agent's process
    try:
        yield path
    finally:
        del ENV["AGUI_TEST_RESUME_LOG"]


@pytest.fixture(scope="module")
def url(log: Path) -> Iterator[str]:
    with served() as found:
        yield found


@pytest.fixture
def resumes(log: Path) -> Iterator[Any]:
    """The resume entries the agent receives during one test."""
    log.write_text("")

    def read() -> list[dict[str, Any]]:
        return [json.loads(line) for line in log.read_text().splitlines()]

    yield read


def clean(text: str) -> None:
    assert "Traceback" not in text and "UsageError" not in text, text[-3000:]


def talk(term: Terminal, *exchanges: tuple[str, str]) -> None:
    """The user's side of a dialogue, one ``(prompt, typed)`` a turn: wait for the
    prompt (a pattern), then type."""
    for prompt, typed in exchanges:
        term.expect(prompt)
        term.type(typed)


def headless(*args: str, typed: str | None = None) -> subprocess.CompletedProcess[str]:
    """``agui-tools ARGS`` with no terminal and stdin closed — at once, or after the
    lines ``typed`` — as a script or a CI job runs it: exit 0, no traceback."""
    done = subprocess.run(
        [*AGUI, *args],
        **({"stdin": subprocess.DEVNULL} if typed is None else {"input": typed}),
        capture_output=True,
        text=True,
        env=ENV,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    clean(done.stdout + done.stderr)
    return done


def test_run_shows_the_card_and_an_approval_resumes_the_run(url: str, resumes: Any) -> None:
    with terminal(["run", url, REFUND]) as term:
        text = term.expect(r"\[a\]pprove / \[r\]esolve with JSON / \[c\]ancel\?")
        assert "The agent asks for approval" in text and "May I refund?" in text
        assert "refund" in text and '"cents": 500' in text and "answer schema" in text
        term.type("a\n")
        assert term.wait() == 0
        clean(term.text)
        assert "→ resolved" in term.text and "done as proposed" in term.text
    assert resumes() == [
        {
            "interruptId": resumes()[0]["interruptId"],
            "status": "resolved",
            "payload": {"approved": True},
        }
    ]


def test_run_cancel_with_a_reason(url: str, resumes: Any) -> None:
    with terminal(["run", url, REFUND]) as term:
        talk(term, (r"\[c\]ancel\?", "c\n"), ("reason", "too much\n"))
        assert term.wait() == 0
        clean(term.text)
        assert "→ cancelled: too much" in term.text and "not done" in term.text
    (entry,) = resumes()
    assert entry["status"] == "cancelled" and entry["metadata"] == {"reason": "too much"}


def test_run_resolve_with_an_invalid_then_a_valid_payload(url: str, resumes: Any) -> None:
    with terminal(["run", url, CITY]) as term:
        text = term.expect(r"\[r\]esolve with JSON / \[c\]ancel\?")
        assert "The agent is waiting" in text and "Where to?" in text
        term.type("r\n")
        talk(
            term,
            ("payload", '{"city": 3}\n'),
            (r"payload refused: /city: .*answer again", "r\n"),
            ("payload", '{"city": "Oslo"}\n'),
        )
        assert term.wait() == 0
        clean(term.text)
    assert [e.get("payload") for e in resumes()] == [{"city": "Oslo"}]  # the invalid one never


def test_run_with_stdin_closed_cancels_as_nobodys_answer(url: str, resumes: Any) -> None:
    done = headless("run", url, REFUND)
    assert "→ cancelled: nobody answered" in done.stdout
    (entry,) = resumes()
    assert entry["status"] == "cancelled" and "payload" not in entry


@pytest.mark.parametrize(
    ("flags", "prompt", "expected"),
    [
        (["--yes"], REFUND, {"status": "resolved", "payload": {"approved": True}}),
        (["--decline"], REFUND, {"status": "cancelled"}),
        (["--yes"], CITY, {"status": "cancelled"}),  # approve gives no payload
        (["--script", "SCRIPT"], CITY, {"status": "resolved", "payload": {"city": "Oslo"}}),
    ],
)
def test_run_answers_an_interrupt_from_the_flags_and_json_reports_it(
    url: str, resumes: Any, tmp_path: Path, flags: list[str], prompt: str, expected: Any
) -> None:
    script = tmp_path / "answers.txt"
    script.write_text('edit {"city": 3}\nedit {"city": "Oslo"}\n')  # the first is refused
    flags = [str(script) if f == "SCRIPT" else f for f in flags]
    document = json.loads(headless("run", url, prompt, "--json", *flags).stdout)
    first = document["runs"][0]
    assert first["status"] == "interrupt" and first["interrupts"][0]["reason"]
    (entry,) = resumes()
    assert {k: entry[k] for k in expected} == expected
    assert document["resumed"] == [entry]
    assert document["status"] == "success"


def test_chat_answers_interrupts_turn_after_turn(url: str, resumes: Any) -> None:
    with terminal(["chat", url]) as term:
        talk(
            term,
            ("you> ", REFUND + "\n"),
            (r"\[a\]pprove", "a\n"),
            ("you> ", CITY + "\n"),
            (r"\[r\]esolve", "r\n"),
            ("payload", "[]\n"),
            ("payload refused: /: .*answer again", "c\n"),
            ("reason", "\n"),
            ("you> ", "\x04"),
        )
        assert term.wait() == 0
        clean(term.text)
    assert [e["status"] for e in resumes()] == ["resolved", "cancelled"]


@pytest.mark.parametrize(
    ("command", "dialogue", "prompt"),
    [
        (["run", REFUND], [], r"\[c\]ancel\?"),
        (["chat"], [("you> ", REFUND + "\n")], r"\[a\]pprove"),
    ],
    ids=["run", "chat"],
)
def test_ctrl_c_at_the_interrupt_prompt(
    url: str, resumes: Any, command: list[str], dialogue: list[tuple[str, str]], prompt: str
) -> None:
    name, *rest = command
    with terminal([name, url, *rest]) as term:
        talk(term, *dialogue)
        term.expect(prompt)
        term.interrupt()
        assert term.wait() == 130
        one_line_interrupt(term.text, name)
    assert resumes() == []  # nothing was decided, nothing sent


def test_chat_with_stdin_closed_after_an_interrupting_line(url: str, resumes: Any) -> None:
    headless("chat", url, typed=REFUND + "\n")
    assert [e["status"] for e in resumes()] == ["cancelled"]


def test_a_restarted_chat_resumes_the_interrupt_once(
    url: str, resumes: Any, tmp_path: Path
) -> None:
    store = str(tmp_path / "threads.db")
    args = ["chat", url, "--store", store, "--thread", "t-int"]
    with terminal(args) as term:
        talk(term, ("you> ", REFUND + "\n"))
        term.expect(r"\[a\]pprove")
    # the process died (SIGKILL) while the user was deciding; a new one, the same store
    assert resumes() == []
    with terminal(args) as term:
        text = term.expect(r"\[a\]pprove")
        assert "waiting on 1 interrupt(s)" in text and '"cents": 500' in text
        term.type("a\n")
        talk(term, ("you> ", "\x04"))
        assert term.wait() == 0
        clean(term.text)
    with terminal(args) as term:  # and again: nothing is left to answer, nothing re-sent
        text = term.expect("you> ")
        assert "waiting on" not in text
        term.type("\x04")
        assert term.wait() == 0
    assert [e["status"] for e in resumes()] == ["resolved"]


@pytest.mark.slow
def test_an_interrupt_that_expires_while_the_user_decides(url: str, resumes: Any) -> None:
    """run: nothing is sent, one line, exit 1; chat: said, and the next turn can only
    cancel it (INT-8)."""
    with terminal(["run", url, "expires 1.5"]) as term:
        term.expect(r"\[r\]esolve with JSON")
        time.sleep(2)
        term.type("r\n")
        talk(term, ("payload", '"late"\n'))
        assert term.wait() == 1
        clean(term.text)
        assert "nothing was sent" in term.text and "INT-8" in term.text
    assert resumes() == []
    with terminal(["chat", url]) as term:
        talk(term, ("you> ", "expires 1.5\n"))
        term.expect(r"\[r\]esolve with JSON")
        time.sleep(2)
        term.type("r\n")
        talk(term, ("payload", '"late"\n'))
        term.expect("nothing was sent")
        talk(term, ("you> ", "hello\n"))
        term.expect(r"expired: it can only be cancelled")
        talk(term, (r"\[c\]ancel\?", "c\n"), ("reason", "\n"), ("you> ", "\x04"))
        assert term.wait() == 0
        clean(term.text)
    assert [e["status"] for e in resumes()] == ["cancelled"]
