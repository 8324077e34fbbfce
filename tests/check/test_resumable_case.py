"""``transport.resumable`` (docs/resumable.md): the extension judged when an agent
confirms it — passed by agent_app(resumable=...), not exercised without it, and each
broken promise a fail naming its rule (the reference server, spoiled on purpose)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from agui_tools.agent import Run
from agui_tools.check import Verdict, check_agent
from agui_tools.check._report import CaseResult
from agui_tools.transport import Resumable
from agui_tools.transport._server import agent_app
from tests.helpers.resumable_server import ReferenceServer, two_tool_agent
from tests.helpers.scripted_server import serve

CASE = "transport.resumable"


async def hello(run: Run) -> None:
    await run.text("Hello there.")


@contextmanager
def judged(app: object) -> Iterator[CaseResult]:
    with serve(app) as base:
        yield check_agent(f"{base}/agent", cases=[CASE], timeout=10).case(CASE)


def test_our_resumable_server_passes() -> None:
    with judged(agent_app(hello, path="/agent", resumable=Resumable())) as res:
        assert res.verdict is Verdict.PASS, res.findings
    assert "numbered" in res.observed and "did not stop the run" in res.observed
    labels = [e.label for e in res.exchanges]
    assert labels[0] == "a run opting in" and "a stop of that finished run" in labels


def test_the_extension_is_listed_among_the_capabilities_exercised() -> None:
    from agui_tools.check.reports import capabilities_line

    with serve(agent_app(hello, path="/agent", resumable=Resumable())) as base:
        report = check_agent(f"{base}/agent", cases=[CASE], timeout=10)
    assert "resumable" in report.capabilities, report.capabilities
    assert "a run opting in" in report.capabilities["resumable"]
    assert capabilities_line(report).startswith("capabilities exercised: resumable")
    with serve(agent_app(hello, path="/agent")) as base:
        plain = check_agent(f"{base}/agent", cases=[CASE], timeout=10)
    assert "resumable" not in plain.capabilities


def test_an_agent_without_the_extension_is_not_exercised() -> None:
    with judged(agent_app(hello, path="/agent")) as res:
        assert res.verdict is Verdict.NOT_EXERCISED
    assert [f.rule for f in res.findings] == ["RESUME-1"]
    assert len(res.exchanges) == 1  # nothing more is asked of it


def test_declaring_the_extension_without_serving_it_fails() -> None:
    from starlette.responses import JSONResponse

    standard = agent_app(hello, path="/agent")

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/agent/capabilities":
            answer = JSONResponse({"transport": {"streaming": True, "resumable": True}})
            await answer(scope, receive, send)
        else:
            await standard(scope, receive, send)

    with judged(app) as res:
        assert res.verdict is Verdict.FAIL
    assert [f.rule for f in res.findings] == ["RESUME-9"]
    assert "must not declare it" in res.findings[0].message


@pytest.mark.parametrize(
    ("server", "rules"),
    [
        (ReferenceServer(two_tool_agent({}), faulty="gap"), ["RESUME-2"]),
        (ReferenceServer(two_tool_agent({}), faulty="other-run"), ["RESUME-2"]),
        (ReferenceServer(two_tool_agent({}), forget=True), ["RESUME-5", "RESUME-3", "RESUME-7"]),
    ],
    ids=["gap", "other-run", "no-log"],
)
def test_a_broken_promise_fails_naming_its_rule(server: ReferenceServer, rules: list[str]) -> None:
    with judged(server.app()) as res:
        assert res.verdict is Verdict.FAIL
    assert [f.rule for f in res.findings] == rules
    for finding in res.findings:  # each points at the exchange it is about
        assert finding.exchange is not None and res.exchanges[finding.exchange].status
