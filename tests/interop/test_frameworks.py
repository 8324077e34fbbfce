"""The compatibility matrix (issues #23 item 4, #22 item 5): seven real frameworks' AG-UI
adapters, each on a scripted model in its own pinned venv (tests/helpers/frameworks.py), served
on loopback, and for each:

* ``check`` — its verdicts pinned by the committed baseline
  ``interop/frameworks/baselines/<framework>.json`` (every ``fail`` in it a real fault of that
  adapter, written up in docs/conformance.md): a new failure or a fixed one fails the test;
* a ``Session`` round trip through a frontend tool, approved and declined, and one through the
  agent's own tool — each capture judged by ``agui-tools verify``;
* for the frameworks that interrupt (Strands' ``interrupt_on_call``, LangGraph's ``interrupt()``
  with ``emit_interrupt_outcome``): ``check`` in that mode, the interrupt answered by
  ``Session`` (resolve and cancel) and by ``agui-tools run --yes`` / ``--decline``.

A venv that cannot be built fails these under CI and skips them elsewhere, saying why.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_tools.check import Baseline, CheckReport, Verdict, check_agent
from agui_tools.cli._http import Recorder
from agui_tools.transport import AgentClient, Approval, Interrupt, Session
from agui_tools.transport._session import PendingCall
from tests.helpers.frameworks import (
    FRAMEWORKS,
    INTERRUPTING,
    ROOT,
    Served,
    baseline_path,
    require_venv,
    serving_framework,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]  # a cold venv build counts


@pytest.fixture(scope="module", params=FRAMEWORKS)
def agent(request: pytest.FixtureRequest) -> Iterator[Served]:
    framework = str(request.param)
    python = require_venv(framework)
    with serving_framework(framework, python=python) as served:
        yield served


@pytest.fixture(scope="module", params=INTERRUPTING)
def interrupting(request: pytest.FixtureRequest) -> Iterator[Served]:
    framework = str(request.param)
    python = require_venv(framework)
    with serving_framework(framework, python=python, args=["--interrupt"]) as served:
        yield served


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "agui_tools", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def verify(capture: Path) -> dict[str, Any]:
    done = cli("verify", str(capture), "--json")
    assert done.returncode == 0, f"verify {capture}: exit {done.returncode}\n{done.stdout[-3000:]}"
    return dict(json.loads(done.stdout))


def _against_baseline(served: Served, mode: str | None = None) -> CheckReport:
    path = baseline_path(served.framework, mode)
    report = check_agent(served.url, timeout=60)
    diff = Baseline.load(path).compare(report)
    assert not diff.new and not diff.fixed, (
        "\n".join(diff.lines(path.name))
        + f"\n(re-record: python -m tests.helpers.frameworks baseline {served.framework}"
        + (" --interrupt" if mode else "")
        + " — and say why in docs/conformance.md)"
    )
    assert diff.exit_code == 0
    # the plain run the catalogue opens with streamed: the harness is an AG-UI agent at all
    opening = report.case("lifecycle.stream")
    assert opening.verdict in (Verdict.PASS, Verdict.WARN), opening.findings
    return report


def test_check_matches_the_committed_baseline(agent: Served) -> None:
    _against_baseline(agent)


def test_check_in_interrupt_mode_matches_its_baseline_and_exercises_interrupts(
    interrupting: Served,
) -> None:
    report = _against_baseline(interrupting, "interrupt")
    for case in report.cases:  # the interrupt cases ran (their verdicts: the baseline's)
        if case.section == "interrupts":
            assert case.verdict is not Verdict.NOT_EXERCISED, (case.id, case.observed)


async def _round_trip(
    url: str,
    capture: Path,
    *,
    frontend: bool,
    approve: bool,
    on_interrupt: Any = None,
    resumable: bool = False,
) -> tuple[Session, list[str], list[dict[str, Any]]]:
    asked: list[str] = []
    ran: list[dict[str, Any]] = []
    with capture.open("wb") as sink:
        recorder = Recorder(sink)
        http = httpx.AsyncClient(timeout=httpx.Timeout(60.0), transport=recorder.transport())

        def ask(call: PendingCall) -> Approval:
            asked.append(call.name)
            return Approval.approve() if approve else Approval.decline("not now")

        client = AgentClient(url, http=http, resumable=resumable)
        session = Session(client, ask=ask, on_interrupt=on_interrupt)
        if frontend:

            @session.tool(side_effects=True)
            def get_weather(city: str) -> str:
                """Look up the current weather for a city."""
                ran.append({"city": city})
                return f"sunny in {city}"

        try:
            result = await session.send("What is the weather in Paris? Use the tool.")
        finally:
            await http.aclose()
    if resumable:  # the adapter does not confirm the opt-in: the standard client ran
        assert client.current is not None and not client.current.confirmed
    assert result.status == "success", (result.status, result.error, result.violation)
    return session, asked, ran


def _last_text(session: Session) -> str:
    assert session.conversation is not None
    return str(session.conversation.messages[-1].get("content") or "")


def test_a_session_approves_the_frontend_tool_and_the_agent_answers(
    agent: Served, tmp_path: Path
) -> None:
    capture = tmp_path / "approve.sse"
    session, asked, ran = asyncio.run(_round_trip(agent.url, capture, frontend=True, approve=True))
    assert asked == ["get_weather"] and ran == [{"city": "Paris"}]
    assert "sunny in Paris" in _last_text(session)
    verdict = verify(capture)
    assert len(verdict["runs"]) == 2, verdict["runs"]  # the call, then the continuation


def test_a_session_declines_the_frontend_tool_and_the_agent_runs_on(
    agent: Served, tmp_path: Path
) -> None:
    capture = tmp_path / "decline.sse"
    session, asked, ran = asyncio.run(_round_trip(agent.url, capture, frontend=True, approve=False))
    assert asked == ["get_weather"] and ran == []  # declined: never executed
    text = _last_text(session)
    assert "declined" in text and "sunny" not in text, text
    assert len(verify(capture)["runs"]) == 2


def _shape(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What a run said, its ids and timestamps aside."""
    return [(e["type"], e.get("delta"), e.get("toolCallName"), e.get("content")) for e in events]


def test_our_resumable_client_reads_the_standard_binding_unchanged(
    agent: Served, tmp_path: Path
) -> None:
    """#38: an adapter without the extension, asked with Agui-Resumable: 1, answers the
    standard binding; our resumable client reads it as the standard client does."""
    plain, resumable = tmp_path / "plain.sse", tmp_path / "resumable.sse"
    asyncio.run(_round_trip(agent.url, plain, frontend=True, approve=True))
    _, asked, ran = asyncio.run(
        _round_trip(agent.url, resumable, frontend=True, approve=True, resumable=True)
    )
    assert asked == ["get_weather"] and ran == [{"city": "Paris"}]
    assert b"\nid:" not in b"\n" + resumable.read_bytes()  # no ids: the standard bytes
    got, want = verify(resumable), verify(plain)
    assert _shape(got["events"]) == _shape(want["events"])
    assert [r["status"] for r in got["runs"]] == [r["status"] for r in want["runs"]]


def test_the_agents_own_tool_is_answered_by_the_agent(agent: Served, tmp_path: Path) -> None:
    capture = tmp_path / "agent-tool.sse"
    session, asked, _ = asyncio.run(_round_trip(agent.url, capture, frontend=False, approve=True))
    assert asked == []  # nothing was left to the application
    assert "12:00 in UTC" in _last_text(session)
    assert len(verify(capture)["runs"]) == 1


@pytest.mark.parametrize("answer", ["resolve", "cancel"])
def test_a_session_answers_the_frameworks_interrupt(
    interrupting: Served, tmp_path: Path, answer: str
) -> None:
    seen: list[Interrupt] = []

    def on_interrupt(interrupt: Interrupt) -> Approval:
        seen.append(interrupt)
        return Approval.approve() if answer == "resolve" else Approval.decline("not now")

    capture = tmp_path / "interrupt.sse"
    session, _, _ = asyncio.run(
        _round_trip(
            interrupting.url, capture, frontend=False, approve=True, on_interrupt=on_interrupt
        )
    )
    (interrupt,) = seen
    assert interrupt.call is not None and interrupt.call.name == "get_time", interrupt
    text = _last_text(session)
    if answer == "resolve":
        assert "12:00 in UTC" in text, text
    else:
        assert "12:00" not in text, text
    runs = verify(capture)["runs"]
    assert len(runs) == 2, runs  # interrupted, then resumed


@pytest.mark.parametrize("flag", ["--yes", "--decline"])
def test_agui_tools_run_answers_the_frameworks_interrupt(
    interrupting: Served, tmp_path: Path, flag: str
) -> None:
    capture = tmp_path / "run.sse"
    done = cli("run", interrupting.url, "What time is it?", flag, "--json", "--save", str(capture))
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout)
    assert outcome["status"] == "success", outcome
    assert [r["status"] for r in outcome["runs"]] == ["interrupt", "success"], outcome["runs"]
    (entry,) = outcome["resumed"]
    assert entry["status"] == ("resolved" if flag == "--yes" else "cancelled"), entry
    said = str(outcome["messages"][-1].get("content"))
    assert ("12:00 in UTC" in said) is (flag == "--yes"), said
    assert len(verify(capture)["runs"]) == 2


def test_langgraphs_default_interrupt_signalling_is_still_a_custom_event_and_a_success() -> None:
    """Pins the INT-2 fault docs/conformance.md reports upstream: with the adapter's defaults
    a graph paused in ``interrupt()`` sends ``CUSTOM`` ``on_interrupt`` and finishes with a
    plain success. When this fails, upstream changed the default: update the write-up."""
    python = require_venv("langgraph")
    args = ["--interrupt", "--legacy-interrupts"]
    with serving_framework("langgraph", python=python, args=args) as served:
        body = {
            "threadId": "t-legacy",
            "runId": "r-legacy",
            "messages": [{"id": "u1", "role": "user", "content": "What time is it?"}],
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {},
        }
        with httpx.stream("POST", served.url, json=body, timeout=60) as response:
            assert response.status_code == 200
            events = [
                json.loads(line.removeprefix("data:"))
                for line in response.iter_lines()
                if line.startswith("data:")
            ]
    customs = [e for e in events if e["type"] == "CUSTOM" and e.get("name") == "on_interrupt"]
    assert customs, [e["type"] for e in events]
    (finished,) = [e for e in events if e["type"] == "RUN_FINISHED"]
    assert (finished.get("outcome") or {"type": "success"})["type"] == "success", finished
    started = {e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START"}
    answered = {e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_RESULT"}
    assert started - answered, "the paused call was answered"  # left for nobody to answer
