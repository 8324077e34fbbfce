"""Running the catalogue: selection, time bounds, strictness, headers, bad usage — through
the Python API and the command line."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agui_tools import TransportError, UsageError
from agui_tools.check import CASES, CheckReport, Verdict, acheck_agent, check_agent, select_cases
from agui_tools.testing import free_port, serving

from .agents import (
    agui_tools_serve,
    check_app,
    endless_agent,
    flood_agent,
    hanging_agent,
    raw_agent,
)

ROOT = Path(__file__).resolve().parents[2]
AGUI = [sys.executable, "-m", "agui_tools"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "160"}


def test_every_case_cites_known_rules_and_a_spec_page() -> None:
    from agui_tools.check._cases import PAGES
    from agui_tools.check._rules import RULES

    assert len({c.id for c in CASES}) == len(CASES)
    for case in CASES:
        assert case.rules and all(rule in RULES for rule in case.rules), case.id
        assert case.page in PAGES.values() and case.expected and case.title


def test_the_rule_texts_are_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_rules.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout


def test_selection_by_id_glob_and_section() -> None:
    assert [c.id for c in select_cases(["input.wrong-type"])] == ["input.wrong-type"]
    frontend = [c.id for c in select_cases(["frontend.*"])]
    assert frontend and all(c.startswith("frontend.") for c in frontend)
    assert {c.section for c in select_cases(sections=["history", "transport"])} == {
        "history",
        "transport",
    }
    with pytest.raises(UsageError, match=r"no case matches 'frontend\.nope'"):
        select_cases(["frontend.nope"])
    with pytest.raises(UsageError, match="unknown section"):
        select_cases(sections=["nope"])


def test_only_the_selected_cases_run() -> None:
    report = check_app(raw_agent(), cases=["input.missing-member", "history.*"])
    assert [c.id for c in report.cases] == ["input.missing-member", "history.dangling"]
    assert all(c.verdict is Verdict.PASS for c in report.cases)


def test_a_hanging_agent_fails_within_the_case_timeout() -> None:
    report = check_app(hanging_agent(), cases=["lifecycle.stream", "input.wrong-type"], timeout=0.5)
    stream = report.case("lifecycle.stream")
    assert stream.verdict is Verdict.FAIL
    assert "did not finish within 0.5 s" in stream.findings[0].message
    # the case after it still ran (and is judged on its own)
    assert report.case("input.wrong-type").findings or report.case("input.wrong-type").observed
    assert report.exit_code == 1


def test_strict_turns_warnings_into_failures() -> None:
    agent = raw_agent(pending_ids=False)  # leaves out pendingToolCallIds: a SHOULD
    lenient = check_app(agent, cases=["frontend.pending-ids"])
    assert lenient.case("frontend.pending-ids").verdict is Verdict.WARN
    assert lenient.exit_code == 0
    strict = check_app(agent, cases=["frontend.pending-ids"], strict=True)
    assert strict.exit_code == 1 and strict.failed()[0].id == "frontend.pending-ids"


def test_extra_headers_reach_the_agent() -> None:
    agent = raw_agent(token="s3cret")
    with pytest.raises(TransportError, match="HTTP 401"):  # one error, not case fails
        check_app(agent, cases=["lifecycle.stream"])
    allowed = check_app(
        agent, cases=["lifecycle.stream"], headers={"Authorization": "Bearer s3cret"}
    )
    assert allowed.case("lifecycle.stream").verdict is Verdict.PASS


def test_custom_tools_and_prompt_are_advertised() -> None:
    tool = {
        "name": "lookup_order",
        "description": "Find an order by number.",
        "parameters": {
            "type": "object",
            "properties": {"number": {"type": "integer"}},
            "required": ["number"],
        },
    }
    report = check_app(raw_agent(), sections=["frontend"], tools=[tool], prompt="Find order 7.")
    invite = report.case("frontend.invite")
    assert invite.verdict is Verdict.PASS and "lookup_order" in invite.observed
    request = invite.exchanges[0].request
    assert request is not None and request["tools"] == [tool]
    assert request["messages"][-1]["content"] == "Find order 7."
    assert report.case("frontend.arguments").verdict is Verdict.PASS


def test_an_unreachable_agent_is_one_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/"
    with pytest.raises(TransportError, match="cannot reach the agent"):
        check_agent(url, cases=["input.*"])
    proc = subprocess.run(
        [*AGUI, "check", url], capture_output=True, text=True, timeout=60, env=ENV
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "cannot reach the agent" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = subprocess.run(
        [*AGUI, "check", "not-a-url"], capture_output=True, text=True, timeout=60, env=ENV
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "is not an http:// or https:// URL with a host" in proc.stderr


def test_check_agent_refuses_to_block_an_event_loop() -> None:
    async def main() -> None:
        with pytest.raises(UsageError, match="acheck_agent"):
            check_agent("http://127.0.0.1:1/")

    asyncio.run(main())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--case", "nope.*"], "no case matches 'nope.*'"),
        (["--section", "nope"], "unknown section"),
        (["-H", "no colon here"], "a header is written 'Name: value'"),
        (["--timeout", "0"], "the timeout must be positive"),
        (["--tools", "missing-file.json"], "missing-file.json"),
    ],
)
def test_cli_bad_usage_is_exit_2_and_one_line(args: list[str], message: str) -> None:
    proc = subprocess.run(
        [*AGUI, "check", "http://127.0.0.1:1/", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
    )
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_cli_list_and_a_selected_run_with_tools_file(tmp_path: Path) -> None:
    listed = subprocess.run(
        [*AGUI, "check", "--list"], capture_output=True, text=True, timeout=60, env=ENV
    )
    assert listed.returncode == 0
    assert all(case.id in listed.stdout for case in CASES)
    lines = {line.split()[0]: line.split()[1:3] for line in listed.stdout.splitlines()}
    assert lines["interrupts.resolved"] == ["MUST", "interrupts"]  # its tier and capability
    assert lines["transport.keep-alive"] == ["informational", "-"]

    tools = tmp_path / "tools.json"
    tools.write_text(
        json.dumps(
            {
                "tools": [{"name": "pick_color", "description": "Let the user pick a color."}],
                "prompt": "Ask me for a color.",
            }
        )
    )

    async def main() -> subprocess.CompletedProcess[str]:
        async with serving(raw_agent("self-answer")) as base:
            return await asyncio.to_thread(
                subprocess.run,
                [*AGUI, "check", base + "/", "--section", "frontend", "--tools", str(tools)],
                capture_output=True,
                text=True,
                timeout=120,
                env=ENV,
            )

    proc = asyncio.run(main())
    assert proc.returncode == 1, proc.stderr
    assert "frontend.no-self-answer" in proc.stdout and "[FE-2]" in proc.stdout
    assert "pick_color" in proc.stdout


@pytest.mark.slow
def test_an_early_413_is_heard_before_the_upload_ends() -> None:
    """A server refusing a body by its Content-Length answers 413 and closes unread: the
    close resets the connection, and an ordinary upload mostly loses the answer. Asked
    with ``Expect: 100-continue`` the refusal comes before the body is sent. A real
    ``agui-tools serve`` process (in-process, the shared event loop hides the race)."""
    with agui_tools_serve() as url:
        for _ in range(10):
            case = check_agent(url, cases=["input.oversized"]).case("input.oversized")
            assert case.observed == "HTTP 413: refused", case.findings


def test_tools_from_a_module_attribute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agui_tools.cli.check_cmd import load_tools

    (tmp_path / "my_check_tools.py").write_text(
        "TOOLS = [{'name': 'pick_color', 'description': 'Pick a color.'}]\n"
        "OTHER = {'tools': [{'name': 'pick_size'}], 'prompt': 'Which size?'}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_tools("my_check_tools") == (
        [{"name": "pick_color", "description": "Pick a color."}],
        None,
    )
    assert load_tools("my_check_tools:OTHER") == (
        [{"description": "", "name": "pick_size"}],
        "Which size?",
    )
    (tmp_path / "bad_tools.json").write_text('[{"description": "no name"}]')
    with pytest.raises(ValueError, match="non-empty name"):
        load_tools(str(tmp_path / "bad_tools.json"))


def _refusing_then_hanging() -> Any:
    """400 to a body that is not JSON, at once; a stream that hangs to any other."""
    from starlette.responses import JSONResponse

    hanging = hanging_agent()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            body = b""
            more = True
            while more:
                message = await receive()
                body += message.get("body", b"")
                more = message.get("more_body", False)
            try:
                json.loads(body)
            except ValueError:
                await JSONResponse({"error": "not JSON"}, 400)(scope, receive, send)
                return
            replay = [{"type": "http.request", "body": body, "more_body": False}]

            async def again() -> Any:
                return replay.pop() if replay else await receive()

            await hanging(scope, again, send)
            return
        await hanging(scope, receive, send)

    return app


def test_ctrl_c_prints_interrupted_then_the_report_of_what_finished() -> None:
    """#36 item 7: Ctrl-C gave one line and no report — minutes of a check lost. Now each
    case is a line on stderr as it finishes; Ctrl-C says "interrupted" in one line, then
    the report of what finished (the rest: not run), exit 130."""
    from agui_tools.check.pytest_plugin import serving_in_thread

    with serving_in_thread(_refusing_then_hanging()) as url:
        proc = subprocess.Popen(
            [
                *AGUI,
                "check",
                url,
                "--case",
                "input.malformed-json",
                "--case",
                "lifecycle.*",
                "--timeout",
                "2",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        assert proc.stderr is not None
        first = proc.stderr.readline()  # the plain run stalls 2 s, then the first case
        assert first.startswith("[1/5] pass") and "input.malformed-json" in first, first
        time.sleep(0.3)  # lifecycle.stream is waiting on the hanging stream
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (out, err)
    assert err.strip() == "agui-tools check: interrupted", err  # one line, no traceback
    assert "input.malformed-json" in out and "pass" in out
    assert "not finished: interrupted (Ctrl-C)" in out  # the case running then
    assert "not run: interrupted (Ctrl-C)" in out  # the cases after it
    assert "stopped: interrupted (Ctrl-C)" in out


@pytest.mark.slow
def test_progress_is_a_line_per_case_on_stderr_and_quiet_silences_it() -> None:
    with agui_tools_serve() as url:
        said = subprocess.run(
            [*AGUI, "check", url, "--section", "input", "--json"],
            capture_output=True,
            text=True,
            timeout=120,
            env=ENV,
        )
        quiet = subprocess.run(
            [*AGUI, "check", url, "--case", "input.wrong-type", "-q"],
            capture_output=True,
            text=True,
            timeout=120,
            env=ENV,
        )
    assert said.returncode == 0, said.stderr
    lines = said.stderr.splitlines()
    ids = [c["id"] for c in json.loads(said.stdout)["cases"]]  # stdout: the document alone
    assert [line.split()[2] for line in lines] == ids, lines
    assert lines[0].startswith("[1/7] pass          input.malformed-json (")
    assert lines[-1].startswith("[7/7] ")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


def test_a_stream_that_never_ends_is_read_up_to_a_cap_and_judged() -> None:
    from agui_tools.check._probe import STREAM_CAP

    report = check_app(endless_agent(), cases=["lifecycle.stream"], timeout=60)
    case = report.case("lifecycle.stream")
    assert case.verdict is Verdict.WARN, case.findings
    # the checker stops reading at its budget, and says so as LIMIT
    assert [f.rule for f in case.findings] == ["LIMIT"]
    assert f"exceeded the checker's budget of {STREAM_CAP:,} bytes" in case.findings[0].message
    assert STREAM_CAP / 5 < len(case.exchanges[0].frames) * 4000 < STREAM_CAP * 1.5


@pytest.mark.parametrize("megabytes", [200, 0], ids=["200 MB", "endless"])
def test_a_check_against_a_flood_stays_bounded_in_memory_and_report(
    megabytes: int, tmp_path: Path
) -> None:
    """Issue 28 item 4: against an endless or a 1 GB stream the check took 4.8 / 4.4 GB
    and wrote a 752 / 625 MB HTML report (32 MiB kept per exchange, ~30 exchanges).
    Every case, as a real process: under 500 MB peak RSS, reports under 10 MB, and each
    capped stream is a LIMIT warning naming the budget. (The child's address space is
    capped at 3 GB so the code this replaces fails here rather than taking the machine.)"""
    import resource

    from agui_tools.check.pytest_plugin import serving_in_thread

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    html = tmp_path / "report.html"
    with serving_in_thread(flood_agent(megabytes)) as url:
        proc = subprocess.Popen(
            [*AGUI, "check", url, "--json", "--html", str(html), "--timeout", "60"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=ENV,
            preexec_fn=cap,
        )
        chunks: list[bytes] = []
        reader = threading.Thread(target=lambda: chunks.append(proc.stdout.read()))  # type: ignore[union-attr]
        reader.start()
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak RSS
        reader.join(60)
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert os.waitstatus_to_exitcode(status) == 1, err[-2000:]  # the flood fails cases
    out = b"".join(chunks)
    doc = json.loads(out)
    peak_mb = usage.ru_maxrss / 1024
    assert peak_mb < 500, peak_mb
    print(
        f"peak {peak_mb:.0f} MB, JSON {len(out) / 1e6:.1f} MB, HTML {html.stat().st_size / 1e6:.1f} MB"
    )
    assert len(out) < 10_000_000 and html.stat().st_size < 10_000_000
    capped = [
        f
        for c in doc["cases"]
        for f in c["findings"]
        if "exceeded the checker's budget of 2,097,152 bytes" in f["message"]
    ]
    assert len(capped) >= 5 and {f["rule"] for f in capped} == {"LIMIT"}
    # a long stream is summarised: its first and last events, and a count
    long = next(e for c in doc["cases"] for e in c["exchanges"] if "eventCount" in e)
    assert long["eventCount"] > 5000 and len(long["events"]) == len(long["eventIndexes"]) < 300
    assert long["eventIndexes"][-1] == long["eventCount"] - 1


def test_a_connection_the_server_dropped_after_a_500_does_not_fail_the_next_case() -> None:
    """Issue 23: CrewAI answers an input without ``tools`` with a 500 and drops the
    keep-alive connection without saying ``Connection: close``; a reused connection
    failed the *next* case (``input.newer-version``, VER-5) — but only when it ran after
    ``input.tools-absent``. A case's verdict must not depend on the case before it."""
    from .agents import drops_keep_alive_after_500

    async def main() -> CheckReport:
        async with drops_keep_alive_after_500() as url:
            return await acheck_agent(url, cases=["input.tools-absent", "input.newer-version"])

    report = asyncio.run(main())
    absent = report.case("input.tools-absent")
    assert absent.verdict is Verdict.FAIL  # the 500 itself...
    assert "the same prompt ran" in absent.findings[0].message  # ...and the run after it
    newer = report.case("input.newer-version")
    assert newer.verdict is Verdict.PASS, newer.findings
    for case in report.cases:  # every request got its answer
        assert all(ex.status is not None for ex in case.exchanges), case.exchanges


def _web_page(status: int) -> Any:
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    page = "<!DOCTYPE html>\n<html><head><title>My shop</title></head><body>" + "x" * 5000

    async def endpoint(request: Any) -> HTMLResponse:
        await request.body()
        return HTMLResponse(page, status_code=status if request.method == "POST" else 200)

    return Starlette(routes=[Route("/", endpoint, methods=["GET", "POST"])])


@pytest.mark.parametrize("status", [200, 501])
def test_a_web_page_is_one_clear_finding_not_thirty_failed_cases(status: int) -> None:
    """Issue 23: a URL that answers HTML (a web app's page; ``python -m http.server``'s
    501) printed its body in every case (119 lines), with a --prompt hint."""
    from agui_tools.check.pytest_plugin import serving_in_thread

    with serving_in_thread(_web_page(status)) as url:
        with pytest.raises(TransportError, match="this is not an AG-UI endpoint") as caught:
            check_agent(url)
        proc = subprocess.run(
            [*AGUI, "check", url], capture_output=True, text=True, timeout=60, env=ENV
        )
    said = str(caught.value)
    assert f"it answered HTTP {status} text/html" in said, said
    assert "My shop" in said and said.count("x") < 200  # the page's start, not the page
    assert proc.returncode == 2, proc.stdout
    assert proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    assert "this is not an AG-UI endpoint" in proc.stderr and "--prompt" not in proc.stderr


_IN_PROCESS = """
import asyncio
from agui_tools import Run, agent_app
from agui_tools.check import acheck_agent
from agui_tools.testing import serving

async def my_agent(run: Run) -> None:
    async with run.message() as m:
        await m.delta("Hello!")

async def main() -> None:
    async with serving(agent_app(my_agent)) as base:
        report = await acheck_agent(base + "/", cases=["input.unknown-members", "input.newer-version"])
    assert report.ok, report.failed()
    assert any("PROC-3" in line for line in report.agent_log), report.agent_log  # kept
    print(report.counts())

asyncio.run(main())
"""


def test_the_agents_warnings_about_the_checkers_input_stay_off_the_users_stderr() -> None:
    """Issue 23: an in-process agent (``serving``, the pytest fixture) logged a warning for
    every odd input the checker sends on purpose — unknown members (PROC-3), a newer
    version (VER-5) — and with no logging configured they landed on the user's stderr."""
    proc = subprocess.run(
        [sys.executable, "-c", _IN_PROCESS], capture_output=True, text=True, timeout=120, env=ENV
    )
    assert proc.returncode == 0, proc.stderr
    assert "'pass': 2" in proc.stdout
    assert proc.stderr == "", proc.stderr
