"""The edges a new user hits (issue 26), each through the real command — in a
terminal (a pty) where the user's path is a terminal, a subprocess with a pipe
or a closed descriptor where it is one."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.terminal import AGUI, ENV, ROOT, served, terminal

TOOLS = ["--tools", "tests.helpers.cli_agents"]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with served() as found:
        yield found


def agui(
    *args: str, stdin: str | None = "", cwd: Path = ROOT, timeout: float = 120, **kwargs: object
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [*AGUI, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
        cwd=cwd,
        **kwargs,
    )


def no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]


# -- 1. an edit the tool's schema refuses ---------------------------------------------------


def test_a_scripted_edit_the_schema_refuses_is_said_and_the_next_line_answers(
    tmp_path: Path,
) -> None:
    script = tmp_path / "a.txt"
    script.write_text('edit {"sku":"widget","qty":"three"}\n')
    proc = agui("demo", "--fast", "--script", str(script))
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "edit refused [TOOL-21]" in out and '/qty: "three" is not of type "integer"' in out
    assert "approved (edited arguments)" not in out  # never "approved" for a refused edit
    # the script had no next line: declined as nobody's decision
    after = out.split("edit refused", 1)[1]
    assert "→ declined — nobody answered (the script had no answer" in after


def test_a_scripted_edit_refused_then_a_valid_one_is_approved(url: str, tmp_path: Path) -> None:
    script = tmp_path / "a.txt"
    script.write_text('edit {"what": 3}\nedit {"what": "fixed"}\n')
    proc = agui("run", url, 'call act {"what": "a"}', *TOOLS, "--script", str(script), "--json")
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert "edit refused [TOOL-21]" in proc.stderr and "/what: 3 is not of type" in proc.stderr
    assert proc.stderr.count("→ approved (edited arguments)") == 1
    (tool,) = [m for m in json.loads(proc.stdout)["messages"] if m["role"] == "tool"]
    assert tool["content"] == "did fixed"


@pytest.mark.parametrize("command", ["run", "chat"])
def test_an_edit_typed_at_the_terminal_the_schema_refuses_is_asked_again(
    url: str, command: str
) -> None:
    prompt = 'call act {"what": "a"}'
    args = ["run", url, prompt, *TOOLS] if command == "run" else ["chat", url, *TOOLS]
    with terminal(args) as term:
        if command == "chat":
            term.expect(r"you> ")
            term.type(prompt + "\r")
        term.expect(r"\[a\]pprove / \[d\]ecline / \[e\]dit")
        term.type("e\r")
        term.expect(r"new arguments \(JSON object\): ")
        term.type('{"what": 3}\r')
        term.expect(r"edit refused \[TOOL-21\].*/what: 3 is not of type")
        term.expect(r"\[a\]pprove / \[d\]ecline / \[e\]dit")  # asked again
        term.type("e\r")
        term.expect(r"new arguments \(JSON object\): ")
        term.type('{"what": "b"}\r')
        term.expect(r"→ approved \(edited arguments\)")
        term.expect(r"did b")
        if command == "chat":
            term.expect(r"you> ")
            term.type("/quit\r")
        assert term.wait() == 0, term.text[-3000:]
        assert "Traceback" not in term.text and "UsageError" not in term.text
        assert term.text.count("→ approved") == 1


# -- 2. binary captures: --proto with --save, and chat's /save -------------------------------


def _verified(path: Path) -> dict[str, object]:
    verdict = agui("verify", str(path), "--json")
    assert verdict.returncode == 0, verdict.stdout + verdict.stderr
    judged: dict[str, object] = json.loads(verdict.stdout)
    return judged


def test_run_proto_save_writes_the_binary_stream_and_verify_reads_it(
    url: str, tmp_path: Path
) -> None:
    capture = tmp_path / "p.bin"
    proc = agui("run", url, 'call act {"what": "a"}', *TOOLS, "--yes", "--proto", "--save",
                str(capture))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    raw = capture.read_bytes()
    assert raw[:1] == b"\x00", raw[:40]  # length-prefixed frames, not an empty file
    judged = _verified(capture)
    assert [r["status"] for r in judged["runs"]] == ["success", "success"]  # type: ignore[attr-defined]


def test_chat_proto_save_and_slash_save_write_the_binary_stream(url: str, tmp_path: Path) -> None:
    live, saved = tmp_path / "live.bin", tmp_path / "saved.bin"
    proc = agui("chat", url, "--proto", "--save", str(live),
                stdin=f"hello\nagain\n/save {saved}\n")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "saved 0 bytes" not in proc.stdout and "2 run(s)" in proc.stdout
    assert live.read_bytes() == saved.read_bytes() and live.read_bytes()[:1] == b"\x00"
    assert len(_verified(saved)["runs"]) == 2  # type: ignore[arg-type]


def test_a_binary_body_cut_mid_frame_does_not_swallow_the_next_runs_frames(
    tmp_path: Path,
) -> None:
    from agui_tools.cli._http import Recorder
    from agui_tools.wire._proto_codec import encode_proto_event
    from agui_tools.wire._proto_framing import proto_frame

    def frame(event: dict[str, str]) -> bytes:
        return proto_frame(encode_proto_event(event))

    started = frame({"type": "RUN_STARTED", "threadId": "t", "runId": "r1"})
    second = frame({"type": "RUN_STARTED", "threadId": "t", "runId": "r2"}) + frame(
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r2"}
    )
    path = tmp_path / "cut.bin"
    with path.open("wb") as sink:
        recorder = Recorder(sink)
        recorder._start(binary=True)
        recorder._write(
            started + frame({"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"})[:7]
        )
        recorder._start(binary=True)
        recorder._write(second[:3])  # the header itself arrives in pieces
        recorder._write(second[3:])
    assert path.read_bytes() == recorder.data == started + second


# -- 3. a capture that ends mid-run is not a success ----------------------------------------


def test_verify_fails_a_capture_cut_mid_run_naming_the_rule_and_where(
    url: str, tmp_path: Path
) -> None:
    capture = tmp_path / "run.sse"
    assert agui("run", url, "slow 30", "--save", str(capture)).returncode == 0
    cut = tmp_path / "t.sse"
    cut.write_bytes(capture.read_bytes()[:1500])  # head -c 1500 run.sse > t.sse
    proc = agui("verify", str(cut), "--strict")
    no_traceback(proc)
    assert proc.returncode == 1, proc.stdout
    assert "TRUNCATED [TRANS-2]" in proc.stdout and "at byte 1500" in proc.stdout
    assert "outcome: completed" not in proc.stdout
    assert agui("verify", str(capture), "--strict").returncode == 0  # the whole one passes
    doc = json.loads(agui("verify", str(cut), "--json").stdout)
    assert doc["truncated"]["rule"] == "TRANS-2" and doc["truncated"]["offset"] == 1500
    assert doc["truncated"]["index"] == doc["events"].__len__() - 1


def test_verify_fails_a_binary_capture_cut_mid_frame_saying_where_the_frame_starts(
    url: str, tmp_path: Path
) -> None:
    capture = tmp_path / "p.bin"
    assert agui("run", url, "slow 10", "--proto", "--save", str(capture)).returncode == 0
    whole = capture.read_bytes()
    cut = tmp_path / "t.bin"
    cut.write_bytes(whole[:-5])
    proc = agui("verify", str(cut))
    assert proc.returncode == 1, proc.stdout
    assert "TRUNCATED [TRANS-2]" in proc.stdout and "inside an unfinished event" in proc.stdout


# -- 6. a closed stdin ------------------------------------------------------------------------


def _closed_stdin() -> None:
    os.close(0)


def test_a_closed_stdin_at_a_consent_prompt_declines_as_nobodys_decision(url: str) -> None:
    proc = agui("run", url, 'call act {"what": "c"}', *TOOLS, "--json", stdin=None,
                preexec_fn=_closed_stdin)  # fmt: skip
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    (tool,) = [m for m in json.loads(proc.stdout)["messages"] if m["role"] == "tool"]
    assert "no user was asked" in tool["content"] and "The user" not in tool["content"]


def test_chat_with_a_closed_stdin_ends_as_at_end_of_input(url: str) -> None:
    proc = agui("chat", url, stdin=None, preexec_fn=_closed_stdin)
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr


def test_verify_stdin_closed_is_one_line_and_exit_2() -> None:
    proc = agui("verify", "-", stdin=None, preexec_fn=_closed_stdin)
    no_traceback(proc)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "standard input" in proc.stderr


def test_the_demo_with_a_closed_stdin_never_says_you_declined() -> None:
    proc = agui("demo", "--fast", stdin=None, preexec_fn=_closed_stdin)
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert "standard input ended" in proc.stdout
    # nobody was asked: the agent must not tell the user they declined
    assert "you declined" not in proc.stdout.lower() and "The user declined" not in proc.stdout
    assert "no one was asked" in proc.stdout


# -- 8. the reader of stdout goes away ---------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--list"],
        ["demo", "--yes", "--fast"],
        ["verify", "{capture}"],
        ["verify", "{capture}", "--json"],
        ["run", "{url}", "slow 20"],
        ["run", "{url}", "slow 20", "--json"],
        ["chat", "{url}"],
        ["conformance", "tests/conformance/streams"],
    ],
    ids=lambda a: "-".join(x for x in a if not x.startswith("{")),
)
def test_a_reader_gone_ends_the_command_quietly(url: str, tmp_path: Path, args: list[str]) -> None:
    capture = tmp_path / "c.sse"
    capture.write_bytes(
        b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
        b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n' * 1
    )
    argv = [a.format(url=url, capture=capture) for a in args]
    read, write = os.pipe()
    os.close(read)  # `| head -1` that already left
    try:
        proc = subprocess.run(
            [*AGUI, *argv], stdin=subprocess.DEVNULL, stdout=write, stderr=subprocess.PIPE,
            text=True, timeout=120, env=ENV, cwd=ROOT,
        )  # fmt: skip
    finally:
        os.close(write)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode == 141, proc.stderr


# -- 7. serve: an ASGI application, a file name --------------------------------------------

ASGI_MODULE = """\
from fastapi import FastAPI

from agui_tools.transport import agent_app


async def agent(run):
    await run.text("hi")


api = FastAPI()
wrapped = agent_app(agent)


async def raw(scope, receive, send):
    pass
"""


@pytest.mark.parametrize("attr", ["api", "wrapped", "raw"])
def test_serve_refuses_an_asgi_application_and_says_what_to_pass(tmp_path: Path, attr: str) -> None:
    (tmp_path / "myapp.py").write_text(ASGI_MODULE)
    proc = agui("serve", f"myapp:{attr}", "--port", "0", cwd=tmp_path, timeout=20)
    no_traceback(proc)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout  # never "Serving …"
    assert "is an ASGI application" in proc.stderr and "async def agent(run)" in proc.stderr
    assert proc.stderr.count("\n") == 1


@pytest.mark.parametrize("spec", ["myapp.py:agent", "./myapp.py:agent"])
def test_serve_given_a_file_name_says_which_module_name_to_try(tmp_path: Path, spec: str) -> None:
    (tmp_path / "myapp.py").write_text(ASGI_MODULE)
    proc = agui("serve", spec, "--port", "0", cwd=tmp_path)
    no_traceback(proc)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "try myapp:agent" in proc.stderr


# -- the smaller ones ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (["run", "http://127.0.0.1:9/agent", "hi", "--bogus"], "run"),
        (["verify", "x.sse", "--nope"], "verify"),
        (["chat", "http://127.0.0.1:9/agent", "extra"], "chat"),
        (["demo", "--colour"], "demo"),
    ],
    ids=["run", "verify", "chat", "demo"],
)
def test_an_unknown_flag_after_a_command_prints_that_commands_usage(
    args: list[str], command: str
) -> None:
    proc = agui(*args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"usage: agui-tools {command} "), proc.stderr
    assert f"agui-tools {command}: error: unrecognized arguments: {args[-1]}" in proc.stderr


@pytest.mark.parametrize("flags", [["--port", "8790"], ["--no-browser"], ["--host", "0.0.0.0"]])
def test_demo_web_flags_without_web_are_refused_saying_to_add_it(flags: list[str]) -> None:
    proc = agui("demo", "--fast", "--yes", *flags)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout  # the demo did not run
    assert "add --web" in proc.stderr and proc.stderr.count("\n") == 1


LONG = "http://127.0.0.1:9/" + "a" * 100_000


@pytest.mark.parametrize(
    "args",
    [["run", LONG, "hi"], ["chat", LONG], ["inspect", LONG, "--no-browser"], ["check", LONG],
     ["run", LONG[:5000], "hi"], ["check", LONG[:5000], "--timeout", "2"]],
    ids=["run", "chat", "inspect", "check", "run-unreachable", "check-unreachable"],
)  # fmt: skip
def test_a_huge_url_is_cut_in_the_error_line(args: list[str]) -> None:
    proc = agui(*args, stdin="")
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr[:500]
    assert len(proc.stderr) < 1000 and proc.stderr.count("\n") == 1, proc.stderr[:500]
    assert "characters)" in proc.stderr  # it says how long the URL was


def test_run_json_interrupted_writes_what_was_received_and_the_interruption(
    url: str, tmp_path: Path
) -> None:
    save = tmp_path / "i.sse"
    proc = subprocess.Popen(
        [*AGUI, "run", url, "slow 400", "--json", "--save", str(save)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not (save.exists() and b"w5 " in save.read_bytes()):
        assert time.monotonic() < deadline and proc.poll() is None, "the text never streamed"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().endswith("agui-tools run: interrupted")
    document = json.loads(out)
    assert document["status"] == "interrupted" and "interrupted" in document["error"]
    (reply,) = [m for m in document["messages"] if m["role"] == "assistant"]
    assert reply["content"].startswith("w0 w1 w2 w3 w4 w5 ")  # what was received is kept


# -- 4. a resumed chat shows its thread, and its pending calls, at once ----------------------


def test_a_resumed_chat_shows_its_thread_and_asks_about_its_pending_call_at_once(
    url: str, tmp_path: Path
) -> None:
    store = tmp_path / "threads.sqlite"
    with terminal(["chat", url, *TOOLS, "--store", str(store)]) as term:
        found = term.expect(r"thread (chat-\w+) is kept in")
        thread = re.search(r"thread (chat-\w+) is kept in", found).group(1)  # type: ignore[union-attr]
        term.expect(r"you> ")
        term.type("hello\r")
        term.expect(r"you> ")
        term.type('call act {"what": "the order"}\r')
        term.expect(r"\[a\]pprove / \[d\]ecline")
        term.interrupt()  # the call is left pending in the store
        assert term.wait() == 130
    with terminal(["chat", url, *TOOLS, "--store", str(store), "--thread", thread]) as term:
        term.expect(rf"(?s)resumed thread {thread} from .*?: 4\s+message\(s\)")
        term.expect(r"you said 'hello'")  # the history, shown before anything is typed
        term.expect(r"left 1 call\(s\) pending: act")
        term.expect(r"\[a\]pprove / \[d\]ecline")  # asked at once, not after a line is typed
        term.type("a\r")
        term.expect(r"the tools said — \S+: did the order")
        term.expect(r"you> ")
        term.type("/state\r")
        term.expect(r"\{\}")
        term.type("/quit\r")
        assert term.wait() == 0, term.text[-3000:]
        assert "Traceback" not in term.text


def test_a_binary_body_cut_mid_frame_into_a_pipe_is_kept_not_a_crash() -> None:
    """--save into a pipe (`--save /dev/stdout | …`) cannot take bytes back: they stay."""
    from agui_tools.cli._http import Recorder

    read, write = os.pipe()
    with open(write, "wb") as sink, open(read, "rb") as source:
        recorder = Recorder(sink)
        recorder._start(binary=True)
        recorder._write(b"\x00\x00\x00\x09abc")  # a frame announcing 9 bytes, 3 came
        recorder._start(binary=True)  # the next run: the fragment cannot be taken back
        sink.close()
        assert source.read() == b"\x00\x00\x00\x09abc"
