"""``agui-tools run``: the options users reached for (--save, --json, -H, timeouts)
and the edges a new user hit (issue 13), each through the real command."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.cli_agents import TOKEN, guarded_api
from tests.helpers.terminal import AGUI, ENV, ROOT, served, serving_in_thread

TOOLS = ["--tools", "tests.helpers.cli_agents"]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with served() as found:
        yield found


def agui(*args: str, stdin: str | None = "", cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGUI, *args], input=stdin, capture_output=True, text=True, timeout=120, env=ENV, cwd=cwd
    )


def test_save_writes_the_raw_stream_and_verify_judges_it(url: str, tmp_path: Path) -> None:
    capture = tmp_path / "run.sse"
    proc = agui("run", url, 'call act {"what": "a"}', *TOOLS, "--yes", "--save", str(capture))
    assert proc.returncode == 0, proc.stderr
    raw = capture.read_bytes()
    assert raw.startswith(b"data: ") and raw.count(b'"type":"RUN_STARTED"') == 2
    verdict = agui("verify", str(capture), "--json")
    assert verdict.returncode == 0, verdict.stdout
    judged = json.loads(verdict.stdout)
    assert judged["outcome"] == "completed" and judged["warnings"] == []
    assert [r["status"] for r in judged["runs"]] == ["success", "success"]


def test_json_prints_one_document_on_stdout_and_the_ui_on_stderr(url: str) -> None:
    proc = agui("run", url, 'call act {"what": "b"}', *TOOLS, "--yes", "--json")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)  # nothing else on stdout
    assert document["status"] == "success" and document["error"] is None
    assert [r["status"] for r in document["runs"]] == ["success", "success"]
    tool = [m for m in document["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool] == ["did b"]
    assert "→ approved" in proc.stderr and "The thread" in proc.stderr


def test_principal_names_the_answers_in_the_approval_ledger(url: str, tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite"
    named = ["--journal", str(journal), "--principal", "alice@example.com"]
    proc = agui("run", url, 'call act {"what": "c"}', *TOOLS, "--yes", *named)
    assert proc.returncode == 0, proc.stderr
    proc = agui(
        "run", url, 'call act {"what": "d"}', *TOOLS, "--decline", "--journal", str(journal)
    )
    assert proc.returncode == 0, proc.stderr
    exported = agui("ledger", "export", str(journal))
    assert exported.returncode == 0, exported.stderr
    entries = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [(e["approved"], e["principal"]) for e in entries] == [
        (True, {"id": "alice@example.com"}),  # named, never dressed up as authenticated
        (False, {"id": "user"}),
    ]
    verified = agui("ledger", "verify", str(journal))
    assert verified.returncode == 0 and "2 entries, every link holds" in verified.stdout


def test_signing_key_signs_the_answers_receipts_into_the_message_and_ledger(
    url: str, tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    from agui_tools.agent import Keyring, verify_receipt
    from agui_tools.app import RECEIPT_KEY, Signer

    key = ed25519.Ed25519PrivateKey.generate()
    pem = tmp_path / "receipts.pem"
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    journal = tmp_path / "journal.sqlite"
    signed = ["--signing-key", str(pem), "--principal", "alice@example.com"]
    proc = agui(
        "run", url, 'call act {"what": "e"}', *TOOLS, "--yes", "--json", "--journal",
        str(journal), *signed,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (tool,) = [m for m in json.loads(proc.stdout)["messages"] if m["role"] == "tool"]
    receipt = tool["metadata"][RECEIPT_KEY]
    statement = verify_receipt(
        receipt,
        keys=Keyring.of(Signer.from_pem_file(pem)),
        thread_id=receipt["statement"]["threadId"],
        call_id=tool["toolCallId"],
        arguments={"what": "e"},
    )
    assert statement.principal.id == "alice@example.com"
    exported = agui("ledger", "export", str(journal))
    (entry,) = [json.loads(line) for line in exported.stdout.splitlines()]
    assert entry["receipt"] == receipt  # the ledger holds what the agent was sent


def test_an_unusable_signing_key_is_one_line_and_nothing_runs(url: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    journal = tmp_path / "journal.sqlite"
    proc = agui(
        "run", url, 'call act {"what": "f"}', *TOOLS, "--yes", "--journal", str(journal),
        "--signing-key", str(bad),
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.startswith("agui-tools run: --signing-key ") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr and not journal.exists()


def test_json_reports_a_failed_run_with_its_error(url: str) -> None:
    proc = agui("run", url, "boom", "--json")
    assert proc.returncode == 1
    document = json.loads(proc.stdout)
    assert document["status"] == "error" and "the agent failed" in document["error"]
    # the agent's RUN_ERROR message is said, not only "the run ended error"
    assert "the agent ended the run with an error: the agent failed (RuntimeError)" in proc.stderr


def test_end_of_input_at_the_consent_prompt_declines_as_nobodys_decision(url: str) -> None:
    proc = agui("run", url, 'call act {"what": "c"}', *TOOLS, "--json", stdin="")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "EOFError" not in proc.stderr
    (tool,) = [m for m in json.loads(proc.stdout)["messages"] if m["role"] == "tool"]
    assert "The user" not in tool["content"] and "no user was asked" in tool["content"]
    assert "the input ended before an answer was given" in tool["content"]
    assert "→ declined — nobody answered" in proc.stderr


def test_an_empty_script_declines_as_nobodys_decision(url: str, tmp_path: Path) -> None:
    script = tmp_path / "empty.txt"
    script.write_text("# no answers\n")
    proc = agui("run", url, 'call act {"what": "d"}', *TOOLS, "--script", str(script), "--json")
    assert proc.returncode == 0, proc.stderr
    (tool,) = [m for m in json.loads(proc.stdout)["messages"] if m["role"] == "tool"]
    assert "The user" not in tool["content"] and "the script had no answer" in tool["content"]


def test_the_demo_with_stdin_at_end_of_file_declines_as_nobodys_decision() -> None:
    proc = agui("demo", "--fast", stdin="")
    assert proc.returncode == 0, proc.stderr
    assert "The user declined" not in proc.stdout and "standard input ended" in proc.stdout


def test_headers_reach_the_agent_and_a_refusal_says_how_to_send_them(tmp_path: Path) -> None:
    with serving_in_thread(guarded_api()) as base:
        refused = agui("run", f"{base}/agent/", "hi")
        assert refused.returncode == 2
        assert "HTTP 401" in refused.stderr and "-H 'Authorization: Bearer TOKEN'" in refused.stderr
        admitted = agui("run", f"{base}/agent/", "hi", "-H", f"Authorization: Bearer {TOKEN}")
        assert admitted.returncode == 0, admitted.stderr
        assert "you said 'hi'" in admitted.stdout
        # a mount reached without its trailing slash: the redirect is explained
        redirected = agui("run", f"{base}/agent", "hi", "-H", f"Authorization: Bearer {TOKEN}")
        assert redirected.returncode == 2
        assert "HTTP 307" in redirected.stderr and f"try {base}/agent/" in redirected.stderr


def test_the_read_timeout_gives_up_a_silent_stream_as_truncated(url: str) -> None:
    proc = agui("run", url, "quiet 20", "--read-timeout", "0.5")
    assert proc.returncode == 1, proc.stderr
    assert "ReadTimeout" in proc.stderr and "truncated" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_handler_past_its_timeout_does_not_hold_the_command(url: str) -> None:
    """--timeout 1 with a tool that never returns: answered "did not finish", the
    conversation goes on, and the command exits (it used to wait for the handler)."""
    proc = agui("run", url, "call wait_forever {}", *TOOLS, "--timeout", "1")
    assert proc.returncode == 0, proc.stderr
    assert "did not finish within 1 s" in proc.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--timeout", "-5"], "argument --timeout: -5 is not a positive number of seconds"),
        (["--timeout", "0"], "argument --timeout: 0 is not a positive number of seconds"),
        (["--timeout", "nan"], "argument --timeout: nan is not a positive number"),
        (["--read-timeout", "0"], "argument --read-timeout: 0 is not a positive number"),
        (["--connect-timeout", "x"], "argument --connect-timeout: 'x' is not a number"),
        (["-H", "no colon"], "a header is written 'Name: value'"),
        (["-H", "Bad Name: v"], "'Bad Name' is not a valid header name"),
        (["-H", "Accept: text/html"], "Accept is written by the client itself"),
        (["-H", "X-Name: café"], "holds a character other than printable ASCII"),
        (["--tools", "cli_agents.py"], "--tools takes a module name, not a file: run --tools cli"),
        (["--save", "/no/such/dir/x.sse"], "cannot write --save /no/such/dir/x.sse"),
        (["--journal", "/no/such/dir/j.db"], "cannot open --journal /no/such/dir/j.db"),
    ],
    ids=["timeout-negative", "timeout-zero", "timeout-nan", "read-timeout-zero",
         "connect-timeout-text", "header-no-colon", "header-bad-name", "header-reserved",
         "header-not-ascii",
         "tools-file-name", "save-unwritable", "journal-unwritable"],
)  # fmt: skip
def test_bad_options_are_one_line_and_exit_2(url: str, args: list[str], says: str) -> None:
    proc = agui("run", url, "hi", *args)
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr and "Traceback" not in proc.stderr
    assert "you said" not in proc.stdout  # nothing was sent


def test_a_header_value_is_never_echoed() -> None:
    proc = agui("run", "http://127.0.0.1:9/agent", "hi", "-H", "X-Token: top\x01secret\nline")
    assert proc.returncode == 2 and "top" not in proc.stderr and "secret" not in proc.stderr


def test_an_empty_prompt_is_not_sent(url: str) -> None:
    proc = agui("run", url, "   ")
    assert proc.returncode == 2 and "PROMPT is empty" in proc.stderr


def test_a_call_cut_off_shows_the_text_received_and_failed_cards_say_the_error_once(
    url: str,
) -> None:
    proc = agui("run", url, 'cut act {"what": "hal', *TOOLS)
    assert proc.returncode == 1
    out = proc.stdout
    # the card shows what arrived — as the thread table does — not a repaired preview
    assert 'arguments (as received) {"what": "hal' in out
    assert '"what": "hal"' not in out
    assert out.count("the call never closed") == 2  # the card once, the thread table once
