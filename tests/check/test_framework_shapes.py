"""Issue 23: what the checker said about seven real frameworks, re-enacted by hand.

Each agent here is a hand-written stream of the shape a framework sent
(``scripted_agent``: no framework installed), and each test pins one verdict
the checker got wrong — a producer failed for what the rules leave to the
application, a fault it never reported, a finding whose text said what the
stream did not contain.
"""

from __future__ import annotations

import uuid
from typing import Any

from starlette.responses import JSONResponse, Response

from agui_tools.check import Verdict

from .agents import call, check_app, dangling, run_of, say, scripted_agent


def _mid(data: dict[str, Any], tag: str = "m") -> str:
    return f"{tag}-{data['runId']}"


def _hello(data: dict[str, Any]) -> list[dict[str, Any]]:
    return run_of(data, *say(_mid(data), "Hello."))


def _fails(case: Any) -> set[str]:
    return {f.rule for f in case.findings if f.verdict is Verdict.FAIL}


# -- 1. history.dangling: FE-8 binds the application ---------------------------------


def test_running_a_dangling_history_is_not_the_producers_fault() -> None:
    """Every framework runs the history it is shown (INPUT-5); FE-8 binds whoever sent it."""
    report = check_app(scripted_agent(_hello), cases=["history.dangling"])
    case = report.case("history.dangling")
    assert case.verdict is Verdict.INFO, case.findings
    assert "INPUT-5" in case.findings[0].message and "application" in case.findings[0].message
    assert report.exit_code == 0


def _answers_the_dangling_call(how: str) -> Any:
    def answer(data: dict[str, Any]) -> list[dict[str, Any]]:
        left = dangling(data["messages"])
        if not left:
            return _hello(data)
        if how == "result":
            made: list[dict[str, Any]] = [
                {
                    "type": "TOOL_CALL_RESULT",
                    "messageId": _mid(data, "r"),
                    "toolCallId": left[0],
                    "content": "sunny",
                }
            ]
        else:  # a tool message the snapshot invents
            fabricated = {
                "id": _mid(data, "t"),
                "role": "tool",
                "toolCallId": left[0],
                "content": "sunny",
            }
            made = [{"type": "MESSAGES_SNAPSHOT", "messages": [*data["messages"], fabricated]}]
        return run_of(data, *made, *say(_mid(data), "It is sunny."))

    return answer


def test_fabricating_the_dangling_calls_answer_fails_fe_2() -> None:
    for how in ("result", "snapshot"):
        report = check_app(
            scripted_agent(_answers_the_dangling_call(how)), cases=["history.dangling"]
        )
        case = report.case("history.dangling")
        assert case.verdict is Verdict.FAIL, (how, case.findings)
        assert _fails(case) == {"FE-2"}, (how, case.findings)
        assert "check-dangling-call" in next(f.message for f in case.findings if f.rule == "FE-2")


# -- 2. an interrupt-named backend call is not a frontend call -----------------------------


def _strands_interrupt_mode(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Calls its own ``place_order`` and interrupts for approval, naming the call; a resume
    answers it in-stream."""
    left = dangling(data["messages"])
    if data.get("resume") and left:
        result = {
            "type": "TOOL_CALL_RESULT",
            "messageId": _mid(data, "r"),
            "toolCallId": left[0],
            "content": "not placed: the user declined",
        }
        return run_of(data, result, *say(_mid(data), "I did not place it."))
    interrupt = {"id": f"int-{uuid.uuid4().hex[:8]}", "reason": "tool_approval"}
    if left:  # continued without a resume: still waiting
        return run_of(
            data,
            outcome={"type": "interrupt", "interrupts": [{**interrupt, "toolCallId": left[0]}]},
        )
    if not data.get("tools"):
        return _hello(data)
    cid = _mid(data, "c")
    return run_of(
        data,
        *say(_mid(data), "Placing the order."),
        *call(cid, "place_order", '{"item": "widget"}', parent=_mid(data)),
        outcome={"type": "interrupt", "interrupts": [{**interrupt, "toolCallId": cid}]},
    )


def test_a_backend_call_an_interrupt_names_is_not_adopted() -> None:
    report = check_app(scripted_agent(_strands_interrupt_mode), sections=["frontend", "interrupts"])
    assert not report.failed(), [(c.id, c.findings) for c in report.failed()]
    invite = report.case("frontend.invite")
    assert invite.verdict is Verdict.NOT_EXERCISED, invite.findings
    assert len(invite.exchanges) == 1  # asked once: nothing adopted, nothing asked again
    assert (
        "interrupt" in invite.findings[-1].message and "place_order" in invite.findings[-1].message
    )
    for case_id in ("frontend.success-outcome", "frontend.continuation", "frontend.decline"):
        assert report.case(case_id).verdict is Verdict.NOT_EXERCISED, report.case(case_id)
    assert report.case("interrupts.resume").verdict is Verdict.PASS


# -- 3. a covering resume answers the frontend calls ---------------------------------


def _frontend_call_and_an_approval(data: dict[str, Any]) -> Response | list[dict[str, Any]]:
    """Calls the advertised tool and its own ``charge_card``, interrupting for the latter
    only; refuses, as FE-8 asks, a history whose frontend call has no answer."""
    left = dangling(data["messages"])
    gated = [c for c in left if c.startswith("card-")]
    if set(left) - set(gated):
        return JSONResponse({"error": f"unanswered calls {left}"}, status_code=409)
    if gated and data.get("resume"):
        result = {
            "type": "TOOL_CALL_RESULT",
            "messageId": _mid(data, "r"),
            "toolCallId": gated[0],
            "content": "not charged",
        }
        return run_of(data, result, *say(_mid(data), "Not charged."))
    interrupt = {"id": f"int-{uuid.uuid4().hex[:8]}", "reason": "approval"}
    if gated:
        return run_of(
            data,
            outcome={"type": "interrupt", "interrupts": [{**interrupt, "toolCallId": gated[0]}]},
        )
    tools = data.get("tools") or []
    if not tools or data["messages"][-1].get("role") != "user":
        return _hello(data)
    card = f"card-{data['runId']}"
    return run_of(
        data,
        *say(_mid(data), "Checking the weather, and charging."),
        *call(_mid(data, "c"), tools[0]["name"], '{"city": "Paris"}', parent=_mid(data)),
        *call(card, "charge_card", "{}", parent=_mid(data)),
        outcome={"type": "interrupt", "interrupts": [{**interrupt, "toolCallId": card}]},
    )


def test_a_covering_resume_answers_frontend_calls_and_covers_interrupted_ones() -> None:
    report = check_app(
        scripted_agent(_frontend_call_and_an_approval), sections=["frontend", "interrupts"]
    )
    resume = report.case("interrupts.resume")
    assert resume.verdict is Verdict.PASS, resume.findings
    sent = resume.exchanges[-1].request
    assert sent is not None
    answered = {m["toolCallId"] for m in sent["messages"] if m["role"] == "tool"}
    interrupted = resume.exchanges[0].frames[-1]
    assert any(c.startswith("c-") for c in answered), answered  # the frontend call: a tool message
    assert not any(c.startswith("card-") for c in answered)  # the gated one: the resume entry
    assert len(sent["resume"]) == 1 and sent["resume"][0]["interruptId"] in interrupted
    assert report.case("interrupts.uncovered-resume").verdict is Verdict.PASS


# -- 6, 7. a missing tools member -----------------------------------------------------


def _adk(data: dict[str, Any]) -> list[dict[str, Any]]:
    if "tools" not in data:
        started, _ = run_of(data)
        return [started, {"type": "RUN_ERROR", "message": "object of type 'NoneType' has no len()"}]
    return _hello(data)


def _crewai(data: dict[str, Any]) -> Response | list[dict[str, Any]]:
    if "tools" not in data:
        return Response("Internal Server Error", status_code=500, media_type="text/plain")
    return _hello(data)


def test_a_missing_tools_member_failing_the_run_fails_input_11_either_way() -> None:
    """ADK: RUN_STARTED then RUN_ERROR; CrewAI: HTTP 500 — with ``tools: []`` both run."""
    found = {}
    for name, agent in (("adk", _adk), ("crewai", _crewai)):
        report = check_app(scripted_agent(agent), cases=["input.tools-absent"])
        case = report.case("input.tools-absent")
        assert case.verdict is Verdict.FAIL, (name, case.findings)
        failing = [f for f in case.findings if f.verdict is Verdict.FAIL]
        assert [f.rule for f in failing] == ["INPUT-11"], (name, case.findings)
        text = failing[0].message
        assert "strip what it does not recognise" not in text, text  # INPUT-16's words
        assert "tools: []" in text and "exactly as" in text, text
        found[name] = text
    assert "NoneType" in found["adk"] and "HTTP 500" in found["crewai"]
