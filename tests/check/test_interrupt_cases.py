"""Issue 22 item 4: the interrupt cases send a correct covering resume and judge what the
agent does with ``resolved``, ``cancelled``, expired and stray entries (INT-*), each
continuation on its own interrupted thread; a prompt invites an interrupt when no other
run interrupted (``--interrupt-prompt``). Hand-written agents (``scripted_agent``) of each
shape, a correct one first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.responses import JSONResponse, Response

from agui_tools.check import Verdict
from agui_tools.check._cases import DEFAULT_INTERRUPT_PROMPT, sample_payload

from .agents import call, check_app, dangling, run_of, say, scripted_agent

SCHEMA = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "amount": {"type": "number", "minimum": 1},
        "currency": {"enum": ["EUR", "USD"]},
    },
    "required": ["approved", "currency"],
}
INTERRUPTS = ("interrupts.uncovered-resume", "interrupts.resume", "interrupts.resolved")


def approvals(
    *,
    on: str = "refund",
    again: bool = False,
    stray: Response | None = None,
    resumed: Response | None = None,
    expires: list[str | None] | None = None,
    seen: list[dict[str, Any]] | None = None,
) -> Any:
    """An agent whose own ``refund`` call waits on an approval interrupt when the user's
    message mentions ``on``. Resumed, it answers the call from the entry (approved: refunded,
    else not) — or, ``again``, raises the same interrupt again; ``stray``: its answer to an
    entry naming an interrupt it never raised; ``resumed``: its answer to any resume;
    ``expires``: each interrupt's ``expiresAt`` (one interrupt per item); ``seen``: the
    resume entries it received."""

    def answer(data: dict[str, Any]) -> Response | list[dict[str, Any]]:
        run, left = data["runId"], dangling(data["messages"])
        gated = [c for c in left if c.startswith("refund-")]
        ids = [f"approve-{c}-{n}" for c in gated for n in range(len(expires or [None]))]
        if gated and "resume" in data:
            entries = {e["interruptId"]: e for e in data["resume"]}
            if seen is not None:
                seen.extend(data["resume"])
            if resumed is not None:
                return resumed
            if stray is not None and set(entries) - set(ids):
                return stray
            if not set(ids) <= set(entries):
                return JSONResponse({"error": "interrupt uncovered"}, status_code=409)
            if again:
                return _interrupt(data, gated[0], expires)
            entry = entries[ids[0]]
            ok = entry["status"] == "resolved" and entry["payload"]["approved"]
            result = {
                "type": "TOOL_CALL_RESULT",
                "messageId": f"r-{run}",
                "toolCallId": gated[0],
                "content": "refunded" if ok else "not refunded",
            }
            return run_of(data, result, *say(f"m-{run}", "Done."))
        if gated:  # continued without a resume entry: the interrupt stays open (INT-10)
            return _interrupt(data, gated[0], expires)
        text = str(data["messages"][-1].get("content", ""))
        if on not in text.lower():
            return run_of(data, *say(f"m-{run}", "Hello."))
        cid = f"refund-{run}"
        return _interrupt(
            data,
            cid,
            expires,
            *say(f"m-{run}", "Refunding."),
            *call(cid, "refund", '{"amount": 5}', parent=f"m-{run}"),
        )

    return scripted_agent(answer)


def _interrupt(
    data: dict[str, Any], cid: str, expires: list[str | None] | None, *events: Any
) -> list[dict[str, Any]]:
    interrupts = []
    for n, when in enumerate(expires or [None]):
        item = {
            "id": f"approve-{cid}-{n}",
            "reason": "tool_approval",
            "toolCallId": cid,
            "responseSchema": SCHEMA,
        }
        if when is not None:
            item["expiresAt"] = when
        interrupts.append(item)
    return run_of(data, *events, outcome={"type": "interrupt", "interrupts": interrupts})


def _check(agent: Any, **options: Any) -> Any:
    return check_app(agent, sections=["interrupts"], **options)


def test_a_correct_approval_agent_passes_every_interrupt_case() -> None:
    seen: list[dict[str, Any]] = []
    report = _check(approvals(seen=seen))
    verdicts = {c.id: c.verdict for c in report.cases}
    assert set(verdicts.values()) == {Verdict.PASS}, [(c.id, c.findings) for c in report.cases]
    # its own refund call answered in the resumed run (started in the interrupted one,
    # #36 item 13): a tool of its own, shown
    assert report.capabilities.keys() == {"interrupts", "agent-tools"}
    assert "answered its own 'refund'" in report.capabilities["agent-tools"]
    # the first interrupt came from the prompt inviting one: no other run interrupted
    ids = report.case("interrupts.ids")
    assert ids.exchanges[0].label == "a prompt inviting an interrupt"
    assert ids.exchanges[0].request["messages"][-1]["content"] == DEFAULT_INTERRUPT_PROMPT
    # resolved with a payload its schema accepts; cancelled with a reason; never a tool
    # message for the call the interrupt names
    resolved = report.case("interrupts.resolved").exchanges[-1].request
    (entry,) = resolved["resume"]
    assert entry["status"] == "resolved" and entry["payload"] == {
        "approved": True,
        "currency": "EUR",
    }
    assert "refunded" in report.case("interrupts.resolved").exchanges[-1].frames[1]
    cancelled = report.case("interrupts.resume").exchanges[-1].request
    assert [e["status"] for e in cancelled["resume"]] == ["cancelled"]
    for body in (resolved, cancelled):
        assert not [m for m in body["messages"] if m["role"] == "tool"]
    # each continuation continues its own interrupted run, on its own thread
    threads = {
        report.case(c).exchanges[-1].request["threadId"]
        for c in ("interrupts.resume", "interrupts.resolved", "interrupts.unknown-entry")
    }
    assert len(threads) == 3
    assert {e["interruptId"] for e in seen} >= {"check-never-raised"}


def test_an_agent_that_never_interrupts_leaves_the_cases_not_exercised() -> None:
    report = _check(approvals(on="no prompt says this"))
    for case in report.cases:
        assert case.verdict is Verdict.NOT_EXERCISED, (case.id, case.findings)
    message = report.case("interrupts.resume").findings[0].message
    assert DEFAULT_INTERRUPT_PROMPT in message and "--interrupt-prompt" in message


def test_interrupt_prompt_leads_an_agent_to_interrupt() -> None:
    prompt = "Cancel my subscription, once I approve it."
    report = _check(approvals(on="subscription"), interrupt_prompt=prompt)
    assert {c.verdict for c in report.cases} == {Verdict.PASS}, [
        (c.id, c.findings) for c in report.cases
    ]
    request = report.case("interrupts.ids").exchanges[0].request
    assert request["messages"][-1]["content"] == prompt


def test_raising_the_answered_interrupt_again_is_a_warning() -> None:
    report = _check(approvals(again=True))
    for case_id in ("interrupts.resume", "interrupts.resolved"):
        case = report.case(case_id)
        assert case.verdict is Verdict.WARN, (case_id, case.findings)
        (warning,) = [f for f in case.findings if f.verdict is Verdict.WARN]
        assert warning.rule == "INT-6" and "the very ones the resume answered" in warning.message
    # re-raising an interrupt nobody answered is what INT-10 asks for: no warning there
    assert report.case("interrupts.uncovered-resume").verdict is Verdict.PASS
    assert report.exit_code == 0 and not report.failed()  # level must: warnings do not fail
    report.level = "should"
    assert {c.id for c in report.failed()} == {"interrupts.resume", "interrupts.resolved"}


def test_refusing_a_stray_entry_is_a_warning_under_int_9() -> None:
    report = _check(approvals(stray=JSONResponse({"error": "unknown interrupt"}, 422)))
    case = report.case("interrupts.unknown-entry")
    assert case.verdict is Verdict.WARN, case.findings
    assert case.findings[-1].rule == "INT-9" and "HTTP 422" in case.findings[-1].message
    assert case.tier.value == "SHOULD"
    assert report.case("interrupts.resolved").verdict is Verdict.PASS


def test_a_server_error_on_a_correct_resume_fails() -> None:
    report = _check(approvals(resumed=Response("boom", status_code=500)))
    for case_id in ("interrupts.resume", "interrupts.resolved"):
        case = report.case(case_id)
        assert case.verdict is Verdict.FAIL, (case_id, case.findings)
        assert case.findings[-1].rule == "TRANS-4" and "HTTP 500" in case.findings[-1].message
    refused = _check(approvals(resumed=JSONResponse({"error": "no"}, 400)))
    assert refused.case("interrupts.resolved").verdict is Verdict.WARN  # refused: a warning


def test_an_expired_interrupt_is_cancelled_never_resolved() -> None:
    past = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    seen: list[dict[str, Any]] = []
    report = _check(approvals(expires=[past, future], seen=seen))
    case = report.case("interrupts.resolved")
    assert case.verdict is Verdict.PASS, case.findings
    entries = case.exchanges[-1].request["resume"]
    assert [e["status"] for e in entries] == ["cancelled", "resolved"]
    assert entries[0]["metadata"] == {"reason": "expired"} and "expired at" in case.observed
    # only expired ones: nothing can be resolved, so the case cannot judge a resolution
    only = _check(approvals(expires=[past]))
    lone = only.case("interrupts.resolved")
    assert lone.verdict is Verdict.NOT_EXERCISED and "expired at" in lone.findings[-1].message
    assert only.case("interrupts.resume").verdict is Verdict.PASS  # cancelling it is served


def test_sample_payloads_satisfy_their_schemas() -> None:
    from agui_tools.app._validation import ArgumentValidator

    schemas = [
        SCHEMA,
        {"type": "boolean"},
        {"type": "string", "minLength": 40},
        {"type": "integer", "minimum": 3},
        {"type": "array", "items": {"type": "string"}, "minItems": 2},
        {"oneOf": [{"const": "yes"}, {"const": "no"}]},
        {"type": ["null", "object"], "properties": {"ok": {"type": "boolean"}}},
    ]
    for schema in schemas:
        value = sample_payload(schema)
        assert not ArgumentValidator(schema).validate_value(value), (schema, value)
    assert sample_payload(SCHEMA)["approved"] is True  # an approval says yes
