"""Adversarial findings (issue #26): each test is a reproduction that fails today.

- verify: a capture cut inside the first event of a run (SSE or binary) is
  reported "completed", exit 0 — docs/cli.md says a capture that stops inside
  an event is truncated (TRANS-2), names the byte that event starts at, exit 1.
- chat: two chats on one thread of one ``--store`` — the one that loaded the
  thread first dies with a StaleThread traceback when it sends its next line.
- a full disk (`--save /dev/full`, stdout > /dev/full): a traceback (OSError ENOSPC).
- idempotency_key("a\\x00b", "c") == idempotency_key("a", "b\\x00c"); a non-UTF-8 PROMPT exits 1, not 2.
- a URL whose port is out of range (`run`, `check`) and a non-ASCII `-H` value
  (`check`): tracebacks, not the one-line exit-2 usage error.
- ToolContext: a parameter annotated ``ToolContext | None`` / ``Optional[ToolContext]``
  is put into the advertised schema as an argument, and the model's value is
  passed to the handler as its "context" — a forged call id and idempotency key
  (docs/application.md: "The parameter is not an argument: it is left out of
  the schema, and a model that sends it is refused").
"""

from __future__ import annotations

import json
import re
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Optional

import pytest

from agui_tools.cli import main
from agui_tools.transport import ToolContext, tool_spec_from_function
from agui_tools.wire._proto_codec import encode_proto_event

RUN1 = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "hi"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
]
RUN2_STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"}


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def _frames(events: list[dict[str, Any]]) -> bytes:
    out = b""
    for e in events:
        body = encode_proto_event(e)
        out += struct.pack(">I", len(body)) + body
    return out


def _verdict(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["verify", str(path), "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_sse_cut_inside_the_first_event_is_truncated_not_completed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `head -c 40 run.sse`: the capture stops inside its first event
    path = tmp_path / "cut.sse"
    path.write_bytes(_sse(RUN1)[:40])
    code, verdict = _verdict(path, capsys)
    assert verdict["outcome"] != "completed"
    assert verdict["truncated"] is not None
    assert verdict["truncated"]["rule"] == "TRANS-2"
    assert verdict["truncated"]["unfinishedAt"] == 0
    assert code == 1


def test_sse_cut_inside_the_next_runs_first_event_is_truncated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = _sse(RUN1)
    path = tmp_path / "cut.sse"
    path.write_bytes(whole + _sse([RUN2_STARTED])[:30])
    code, verdict = _verdict(path, capsys)
    assert verdict["truncated"] is not None, verdict
    assert verdict["truncated"]["unfinishedAt"] == len(whole)
    assert code == 1


def test_binary_cut_inside_the_next_runs_first_frame_is_truncated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = _frames(RUN1)
    path = tmp_path / "cut.bin"
    path.write_bytes(whole + _frames([RUN2_STARTED])[:10])
    code, verdict = _verdict(path, capsys)
    assert verdict["truncated"] is not None, verdict
    assert verdict["truncated"]["unfinishedAt"] == len(whole)
    assert code == 1


def _optional_union(x: int, ctx: ToolContext | None = None) -> str:
    """A handler whose context is optional."""
    return f"{x} {ctx}"


def _optional_typing(x: int, ctx: Optional[ToolContext] = None) -> str:  # noqa: UP045
    """A handler whose context is optional."""
    return f"{x} {ctx}"


@pytest.mark.parametrize("handler", [_optional_union, _optional_typing])
def test_an_optional_tool_context_is_no_argument(handler: Any) -> None:
    spec, _ = tool_spec_from_function(handler)
    assert spec.parameters is not None
    assert list(spec.parameters["properties"]) == ["x"], spec.parameters["properties"].keys()
    assert "$defs" not in spec.parameters  # ToolContext/ToolSpec docstrings sent to the model


# -- two chats on one SQLite store ------------------------------------------------------


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "agui_tools", *args]


@pytest.fixture
def demo_agent_url() -> Iterator[str]:
    server = subprocess.Popen(
        _cli("serve", "--port", "0"), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        yield line.strip().rsplit(" ", 1)[-1]
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_two_chats_on_one_thread_end_without_a_traceback(
    tmp_path: Path, demo_agent_url: str
) -> None:
    # docs/cli.md: a later `chat --store FILE --thread ID` resumes the thread "where
    # any process left it"; a chat that loaded it before another chat moved it on
    # must say so in one line, never raise StaleThread as a traceback.
    store = str(tmp_path / "threads.sqlite")
    first = subprocess.run(
        _cli("chat", demo_agent_url, "--store", store, "--yes"),
        input="hello\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    thread = re.search(r"chat-[0-9a-f]+", first.stdout + first.stderr)
    assert thread is not None
    a = subprocess.Popen(
        _cli("chat", demo_agent_url, "--store", store, "--thread", thread.group(0), "--yes"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        time.sleep(3)  # A has restored the thread and waits at its prompt
        subprocess.run(
            _cli("chat", demo_agent_url, "--store", store, "--thread", thread.group(0), "--yes"),
            input="hi from B\n",
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        out, _ = a.communicate("hi from A\nhi again from A\n", timeout=60)
    finally:
        if a.poll() is None:
            a.kill()
            a.wait()
    assert "Traceback" not in out, out[-3000:]
    # said once, the thread reloaded, and the next line goes through on it
    assert out.count("the thread moved on in another process") == 1, out[-3000:]
    assert a.returncode == 0, out[-3000:]


# -- a full disk ------------------------------------------------------------------------

needs_dev_full = pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")


@needs_dev_full
@pytest.mark.parametrize(
    "args", [("verify", "CAPTURE"), ("verify", "CAPTURE", "--json"), ("check", "--list")]
)
def test_stdout_on_a_full_disk_is_one_line_not_a_traceback(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    capture = tmp_path / "run.sse"
    capture.write_bytes(_sse(RUN1))
    argv = [str(capture) if a == "CAPTURE" else a for a in args]
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            _cli(*argv), stdout=full, stderr=subprocess.PIPE, text=True, timeout=60
        )
    assert "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


@needs_dev_full
def test_save_on_a_full_disk_is_one_line_not_a_traceback(demo_agent_url: str) -> None:
    done = subprocess.run(
        _cli("run", demo_agent_url, "hi", "--yes", "--save", "/dev/full"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith("agui-tools run: cannot write --save")


@needs_dev_full
def test_a_json_run_whose_stdout_is_full_says_so_in_one_line(demo_agent_url: str) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            _cli("run", demo_agent_url, "hi", "--yes", "--json"),
            stdin=subprocess.DEVNULL,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == "agui-tools run: cannot write standard output: No space left on device", last


# -- small ones -------------------------------------------------------------------------


def test_idempotency_keys_of_different_calls_differ() -> None:
    # "a pure function of the thread id and the call id": two different
    # (thread, call) pairs must not share the key a payment API dedupes on
    from agui_tools.app import idempotency_key

    assert idempotency_key("a\x00b", "c") != idempotency_key("a", "b\x00c")


def test_a_prompt_that_is_not_utf8_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    # a PROMPT from a non-UTF-8 argv (surrogate-escaped): nothing is sent, so it is
    # bad usage (exit 2, docs/cli.md) — not "the run did not end in success" (1)
    assert main(["run", "http://127.0.0.1:9/agent", "\udcff\udcfe"]) == 2


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "http://127.0.0.1:99999/agent", "hi"],
        ["check", "http://127.0.0.1:99999/agent", "--case", "input.*"],
        ["check", "http://127.0.0.1:9/agent", "-H", "X-A: \u00e9", "--case", "input.*"],
        ["inspect", "http://127.0.0.1:99999/agent", "--port", "0", "--no-browser"],
    ],
    ids=["run-port-99999", "check-port-99999", "check-non-ascii-header", "inspect-port-99999"],
)
def test_bad_url_or_header_is_one_line_and_exit_2(argv: list[str]) -> None:
    # docs/cli.md: a URL that is not http(s)://host…, a malformed -H: one line, exit 2
    done = subprocess.run(
        _cli(*argv), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
    )
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 2


def _annotated_optional(x: int, ctx: Annotated[ToolContext | None, "the call"] = None) -> str:
    """A handler whose context is optional and annotated."""
    return f"{x} {ctx}"


@pytest.mark.parametrize("handler", [_optional_union, _optional_typing, _annotated_optional])
def test_a_model_sending_an_optional_context_is_refused_and_the_real_one_is_passed(
    handler: Any,
) -> None:
    from agui_tools.app import idempotency_key

    spec, call = tool_spec_from_function(handler)
    forged = {"x": 1, "ctx": {"thread_id": "t", "call_id": "c", "idempotency_key": "forged"}}
    with pytest.raises(ValueError, match="unknown argument"):
        call(forged)
    assert call({"x": 1}) == "1 None"  # no context given: the function's default
    real = ToolContext("t", "r", "c", spec, idempotency_key("t", "c"))
    assert call({"x": 1}, context=real) == f"1 {real}"


# -- a bad JSON edit on piped stdin -----------------------------------------------------


def test_a_piped_edit_that_is_no_json_is_said_and_the_next_line_answers(tmp_path: Path) -> None:
    # like an edit the schema refuses: said, the next line answers; at the end of the
    # input the call is declined as nobody's decision — the demo is not stopped (exit 2)
    done = subprocess.run(
        _cli("demo", "--fast", "--journal", str(tmp_path / "j.db")),
        input="edit {bad json\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]
    assert "edit refused [TOOL-21]" in done.stdout and "is not JSON" in done.stdout
    after = done.stdout.split("edit refused", 1)[1]
    assert "→ declined — nobody answered" in after
    assert "approved (edited arguments)" not in done.stdout


# -- a new journal on a full disk -------------------------------------------------------

_CREATE_UNDER_A_LIMIT = """
import resource, sys
from agui_tools.app._journal import SQLiteJournal
from agui_tools._errors import JournalError
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.RLIM_INFINITY))
try:
    SQLiteJournal(sys.argv[1]).close()
except JournalError as exc:
    print(exc)
"""


@pytest.mark.parametrize("kib", range(16, 72, 4))
def test_a_journal_that_cannot_be_created_says_so_and_leaves_no_file(
    tmp_path: Path, kib: int
) -> None:
    # RLIMIT_FSIZE: every write past kib KiB fails (EFBIG; Python ignores SIGXFSZ), as on
    # a full disk — somewhere in this range the file is made and its first open fails
    done = subprocess.run(
        [sys.executable, "-c", _CREATE_UNDER_A_LIMIT, str(tmp_path / "j.db"), str(kib * 1024)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in done.stderr, done.stderr
    said = done.stdout.strip()
    assert "not a readable journal" not in said and "restore it from a backup" not in said
    if said:  # not created: nothing of it is left behind
        assert "cannot create the journal" in said, said
        assert sorted(p.name for p in tmp_path.iterdir()) == [], said


def test_a_thread_the_store_does_not_hold_is_said_to_be_new(tmp_path: Path) -> None:
    # `--thread nope` (a typo): never silently a fresh thread that passes for the resumed one
    store = tmp_path / "st.sqlite"
    done = subprocess.run(
        _cli("chat", "http://127.0.0.1:9/agent", "--store", str(store), "--thread", "nope"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in done.stderr, done.stderr
    said = "".join(done.stdout.split())  # rich wraps the line, within a long path too
    assert f"nothread'nope'in{store}:startinganewone" in said, done.stdout


@pytest.mark.parametrize(
    ("command", "flag", "value"),
    [
        ("chat", "--store", "postgresql://u:s3cret@127.0.0.1/x"),
        ("run", "--journal", "host=db dbname=x password=s3cret"),
        ("inspect", "--store", "postgres://u:s3cret@db/x"),
    ],
)
def test_a_postgres_dsn_given_for_a_sqlite_file_is_named_not_echoed(
    tmp_path: Path, command: str, flag: str, value: str
) -> None:
    args = [command, "http://127.0.0.1:9/agent", flag, value]
    if command == "run":
        args.append("hi")
    done = subprocess.run(
        _cli(*args), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"agui-tools {command}: error: argument {flag}: that is a PostgreSQL")
    assert "s3cret" not in done.stderr + done.stdout
    assert list(tmp_path.iterdir()) == [], "nothing is created for it"


def test_a_connection_string_is_told_from_a_file_name() -> None:
    from agui_tools.cli._common import is_postgres

    dsns = [
        "postgresql://u:pw@db/x",
        "host=db dbname=x password=pw",
        "sslmode=require dbname=x",
        "host=/run/pg port=5432 user=u options='-c search_path=t_1'",
    ]
    files = ["runs.db", "/tmp/x=1/runs.sqlite", "a=b.db", "dbname=x.db extra"]
    assert [is_postgres(d) for d in dsns] == [True] * len(dsns)
    assert [is_postgres(f) for f in files] == [False] * len(files)


# -- Ctrl-C before the run started ------------------------------------------------------


def test_ctrl_c_while_preparing_a_json_run_still_prints_the_document(tmp_path: Path) -> None:
    # a Ctrl-C while `run` is still preparing (here: while its --tools module is imported,
    # deterministic) — docs/cli.md: the --json document is still printed, exit 130
    (tmp_path / "ctrl_c_tools.py").write_text("raise KeyboardInterrupt\n")
    done = subprocess.run(
        _cli("run", "http://127.0.0.1:9/agent", "hi", "--json", "--tools", "ctrl_c_tools"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 130, done.stderr
    document = json.loads(done.stdout)
    assert document["status"] == "interrupted" and document["runs"] == []


def test_a_sigint_held_while_the_cli_is_imported_is_raised_when_released() -> None:
    import os

    from agui_tools import _sigint

    _sigint.hold()
    try:
        os.kill(os.getpid(), signal.SIGINT)  # held, not raised: the CLI is not ready
        time.sleep(0.01)
    except KeyboardInterrupt:  # pragma: no cover - the failure this test is about
        pytest.fail("a SIGINT while held was raised at once")
    with pytest.raises(KeyboardInterrupt):
        _sigint.release()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# -- what a --tools module or a served agent is not -------------------------------------

_ODD_MODULE = '''
import functools

def add(a: int, b: int) -> int:
    """Add."""
    return a + b

async def agent(run):
    yield 1

TOOLS = 5
'''


def test_tools_and_agents_that_are_not_what_they_should_be_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import functools

    from agui_tools import UsageError
    from agui_tools.cli._drive import load_tools
    from agui_tools.cli.serve_cmd import load_agent

    (tmp_path / "odd_edges_mod.py").write_text(_ODD_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=r"TOOLS is not a list \(its type is int\)"):
        load_tools(object(), "odd_edges_mod")
    with pytest.raises(ValueError, match="is an async generator function"):
        load_agent("odd_edges_mod:agent")

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with pytest.raises(UsageError, match="is a partial, not a function"):
        tool_spec_from_function(functools.partial(add, 1))


def test_ndjson_cut_inside_its_last_line_is_truncated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = b"".join(json.dumps(e).encode() + b"\n" for e in RUN1)
    first = len(json.dumps(RUN1[0])) + 1
    path = tmp_path / "cut.ndjson"
    path.write_bytes(lines[: first + 20])  # inside the second line
    code, verdict = _verdict(path, capsys)
    assert verdict["truncated"] is not None, verdict
    assert (verdict["truncated"]["rule"], verdict["truncated"]["unfinishedAt"]) == (
        "TRANS-2",
        first,
    )
    assert verdict["error"] is None and code == 1
    path.write_bytes(lines.rstrip(b"\n"))  # whole, without the last newline: not cut
    code, verdict = _verdict(path, capsys)
    assert verdict["truncated"] is None and code == 0


@pytest.mark.parametrize("kind", ["sse", "ndjson"])
def test_an_event_over_a_limit_is_a_limit_refusal_not_an_unreadable_capture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    path = tmp_path / f"run.{kind}"
    body = _sse(RUN1) if kind == "sse" else b"".join(json.dumps(e).encode() + b"\n" for e in RUN1)
    path.write_bytes(body)
    code = main(["verify", str(path), "--json", "--limit", "max_event_bytes=1"])
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["outcome"] == "failed" and verdict["error"]["rule"] == "LIMIT"
    assert code == 1  # the stream is refused (1), the capture was readable (not 2)


def test_the_mock_says_a_capture_cut_inside_an_event_at_start_up() -> None:
    # `mock` replays the whole events; the unfinished one is not dropped in silence
    from agui_tools.app._recorded import recorded_runs
    from agui_tools.cli.mock_cmd import _judged
    from agui_tools.transport import mock_app

    def judged(body: bytes, source: str) -> list[str]:
        app = mock_app(recorded_runs(body, source=source))
        return _judged(app.state.agui_endpoint)

    whole = _sse(RUN1)
    lines = judged(whole + _sse([RUN2_STARTED])[:30], "cut.sse")
    assert any(f"stops inside an event at byte {len(whole)}" in line for line in lines), lines
    assert not any("stops inside" in line for line in judged(whole, "w"))
