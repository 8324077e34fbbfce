"""Adversarial checks of ``agui-tools check`` (issue #23): agents that expose a false
verdict or a missed fault. Each test states the spec text the expectation rests on.

These tests FAIL on the branch they were written against; each is a finding.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agui_tools import TransportError
from agui_tools.check import Baseline, Verdict
from agui_tools.testing import serving
from agui_tools.wire._proto_codec import encode_proto_event
from agui_tools.wire._proto_framing import proto_frame

from .agents import check_app, hanging_agent

PROTO = "application/vnd.ag-ui.event+proto"


def _sse(event: dict[str, Any]) -> bytes:
    return ("data: " + json.dumps(event) + "\n\n").encode()


def _hello(inp: dict[str, Any]) -> list[dict[str, Any]]:
    tid, rid = inp["threadId"], inp["runId"]
    mid = "m-" + uuid.uuid4().hex[:8]
    return [
        {"type": "RUN_STARTED", "threadId": tid, "runId": rid, "protocolVersion": "1.1"},
        {"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": "Hello"},
        {"type": "TEXT_MESSAGE_END", "messageId": mid},
        {"type": "RUN_FINISHED", "threadId": tid, "runId": rid},
    ]


async def _input(request: Request) -> dict[str, Any] | None:
    try:
        inp = json.loads(await request.body())
    except ValueError:
        return None
    ok = (
        isinstance(inp, dict)
        and isinstance(inp.get("messages"), list)
        and isinstance(inp.get("threadId"), str)
        and isinstance(inp.get("runId"), str)
    )
    return inp if ok else None


def protobuf_always_agent() -> Starlette:
    """Answers protobuf frames whatever the Accept header says — even to a client that
    sent ``Accept: text/event-stream`` only. A TRANS-7 fault: "producer MUST answer SSE
    otherwise"; TRANS-4: response ``200``, ``Content-Type: text/event-stream``."""

    async def endpoint(request: Request) -> Response:
        inp = await _input(request)
        if inp is None:
            return JSONResponse({"error": "malformed"}, status_code=422)
        body = b"".join(proto_frame(encode_proto_event(e)) for e in _hello(inp))
        return Response(body, media_type=PROTO)

    return Starlette(routes=[Route("/", endpoint, methods=["POST"])])


def status_agent(status: int) -> Starlette:
    """Answers every POST with one HTTP error status (a provider outage, missing auth)."""

    async def endpoint(request: Request) -> Response:
        await request.body()
        return JSONResponse({"error": "nope"}, status_code=status)

    return Starlette(routes=[Route("/", endpoint, methods=["POST"])])


def echoing_snapshot_agent() -> Starlette:
    """A correct agent that restates the thread with MESSAGES_SNAPSHOT each run
    (STATE-1 / TEXT-5: a snapshot MAY restate the conversation wholesale)."""

    async def endpoint(request: Request) -> Response:
        inp = await _input(request)
        if inp is None:
            return JSONResponse({"error": "malformed"}, status_code=422)
        events = _hello(inp)
        mid = events[1]["messageId"]
        snap = {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [*inp["messages"], {"id": mid, "role": "assistant", "content": "Hello"}],
        }
        events.insert(-1, snap)

        async def gen():  # type: ignore[no-untyped-def]
            for e in events:
                yield _sse(e)

        return StreamingResponse(gen(), media_type="text/event-stream")

    return Starlette(routes=[Route("/", endpoint, methods=["POST"])])


def _case(report: Any, case_id: str) -> Any:
    return next(c for c in report.cases if c.id == case_id)


# --- missed fault --------------------------------------------------------------------


def test_protobuf_to_an_sse_only_accept_is_a_fault_lifecycle_stream_catches() -> None:
    """lifecycle.stream "passes when a plain prompt gets `200 text/event-stream`"
    (docs/check.md). The checker asks with ``Accept: text/event-stream``; an agent that
    answers protobuf anyway breaks TRANS-7 ("MUST answer SSE otherwise") and TRANS-4.
    Today the case passes and only ``input.oversized`` fails (for the wrong reason)."""
    report = check_app(protobuf_always_agent(), cases=["lifecycle.stream"])
    case = _case(report, "lifecycle.stream")
    assert case.verdict is Verdict.FAIL, (case.verdict, case.observed)
    assert {f.rule for f in case.findings if f.verdict is Verdict.FAIL} & {"TRANS-7", "TRANS-4"}


def test_transport_protobuf_does_not_compare_protobuf_with_protobuf() -> None:
    """transport.protobuf compares the binary run with "the SSE run of the same input";
    against an agent that never answers SSE it reports "the same 5 events as over SSE"
    — there was no SSE run. TRANS-7: a producer MUST answer SSE when not asked for
    protobuf; the case should fail (or at least not pass)."""
    report = check_app(protobuf_always_agent(), cases=["lifecycle.stream", "transport.protobuf"])
    case = _case(report, "transport.protobuf")
    assert case.verdict is not Verdict.PASS, case.observed


def test_an_oversized_input_answered_with_protobuf_is_accepted_not_an_input_15_fail() -> None:
    """M2: ``input.oversized`` read the protobuf answer to its (SSE-only) request as
    "HTTP 200 …; expected a 4xx" under INPUT-15 — but the agent accepted the input and
    ran, which the spec allows (TRANS-1 sets no size). The binary answer is TRANS-7's
    business, reported once, by lifecycle.stream."""
    report = check_app(protobuf_always_agent(), cases=["input.oversized"], oversize_bytes=1 << 20)
    case = _case(report, "input.oversized")
    assert case.verdict is Verdict.INFO, [f.message for f in case.findings]
    assert not any(f.rule == "INPUT-15" for f in case.findings)
    assert "TRANS-7" in case.findings[0].message


# --- false verdicts ------------------------------------------------------------------


def test_tools_absent_is_info_when_the_agent_fails_both_ways_with_a_5xx() -> None:
    """docs/check.md, input.tools-absent: "a 4xx/5xx, or a run ending with RUN_ERROR,
    only without the member is a `fail` …; a run that errors either way is `info`".
    INPUT-11 asks a producer to treat a missing list "exactly as it would treat an empty
    one" — a 500 to both is exactly that. Today: `fail` (INPUT-11)."""
    report = check_app(status_agent(500), cases=["lifecycle.stream", "input.tools-absent"])
    case = _case(report, "input.tools-absent")
    assert case.verdict is not Verdict.FAIL, [f.message for f in case.findings]


def test_an_agent_behind_auth_checked_without_the_header_is_not_blamed_for_input_rules() -> None:
    """A 401 to every POST (the CI secret missing) gives four MUST `fail`s today:
    INPUT-16 ("must strip what it does not recognise and run"), INPUT-11, VER-5 and
    TRANS-4 — while ``input.malformed-json`` *passes* on the same 401. None of INPUT-16,
    INPUT-11, VER-5 is a fault the agent showed: it refused every input alike, for a
    reason none of those rules concerns. Claim (#23): "every `fail` names a real fault
    of the agent, with its rule"; a URL that cannot be checked gives one clear finding."""
    # (corrected from the tester's draft, which asked for a report without those fails:
    # the brief (#23 F2) asks for one finding and exit 2, as for a URL that is no agent)
    for status in (401, 403):
        with pytest.raises(TransportError, match=rf"HTTP {status}.*-H 'Authorization: "):
            check_app(
                status_agent(status),
                cases=["lifecycle.stream", "input.unknown-members", "input.tools-absent"],
            )


def test_an_agent_behind_auth_is_one_error_and_exit_2_on_the_command_line() -> None:
    async def main() -> subprocess.CompletedProcess[str]:
        async with serving(status_agent(401)) as base:
            return await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-m", "agui_tools", "check", base + "/", "--timeout", "5"],
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")},
            )

    proc = asyncio.run(main())
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "refused a plain, well-formed run input with HTTP 401" in proc.stderr
    assert "INPUT-16" not in proc.stdout + proc.stderr


def test_an_agent_failing_every_run_alike_gets_one_fail_for_it() -> None:
    """F2/L1, generally: an agent answering HTTP 500 to every POST broke TRANS-4 once —
    on the plain run, which lifecycle.stream judges. The cases whose own input got the
    very same answer learned nothing about INPUT-16, VER-5 or INPUT-15: `not exercised`,
    naming lifecycle.stream — one finding per cause."""
    report = check_app(
        status_agent(500),
        cases=[
            "input.malformed-json",
            "input.unknown-members",
            "input.newer-version",
            "lifecycle.stream",
        ],
    )
    fails = {(c.id, f.rule) for c in report.cases for f in c.findings if f.verdict is Verdict.FAIL}
    assert fails == {("lifecycle.stream", "TRANS-4")}, fails
    for cid in ("input.malformed-json", "input.unknown-members", "input.newer-version"):
        case = _case(report, cid)
        assert case.verdict is Verdict.NOT_EXERCISED, (cid, case.observed)
        assert "lifecycle.stream" in case.observed


def test_a_stalled_agent_gets_one_fail_not_one_per_rule() -> None:
    """L1: an agent that never finishes a run, checked with a short --timeout, failed ten
    cases under ten unrelated rules (INPUT-16, VER-5, FE-8 …), each "did not finish". The
    plain run stalled: lifecycle.stream fails for it; the rest are `not exercised`."""
    report = check_app(
        hanging_agent(),
        cases=[
            "lifecycle.stream",
            "input.unknown-members",
            "input.newer-version",
            "history.dangling",
        ],
        timeout=0.5,
    )
    fails = {(c.id, f.rule) for c in report.cases for f in c.findings if f.verdict is Verdict.FAIL}
    assert {cid for cid, _ in fails} == {"lifecycle.stream"}, fails
    assert "did not finish within 0.5 s" in _case(report, "lifecycle.stream").observed
    for cid in ("input.unknown-members", "input.newer-version", "history.dangling"):
        case = _case(report, cid)
        assert case.verdict is Verdict.NOT_EXERCISED, (cid, case.observed)
        assert "lifecycle.stream" in case.observed
    assert report.exit_code == 1


def test_a_baseline_warning_still_present_is_not_reported_fixed_at_a_lower_level(
    tmp_path: Path,
) -> None:
    """docs/check.md: "a baseline entry the report no longer shows is **fixed**". A
    baseline written at ``--level should`` records a `warn`; the next run at the
    default level still shows that very warning, yet the diff lists it as
    `fixed: … no longer found; rewrite it with --write-baseline` — rewriting would drop
    a fault the agent still has."""
    app = echoing_snapshot_agent()
    first = check_app(app, cases=["input.unknown-members"], level="should")
    assert not first.ok  # the warn this agent gets (see the finding list) fails at `should`
    path = tmp_path / "known.json"
    Baseline.of(first).write(path)
    second = check_app(app, cases=["input.unknown-members"])
    still = {(c.id, f.rule, f.verdict) for c in second.cases for f in c.findings}
    diff = Baseline.load(path).compare(second)
    wrongly_fixed = [e for e in diff.fixed if (e.case, e.rule, Verdict(e.verdict)) in still]
    assert not wrongly_fixed, wrongly_fixed


def test_a_5xx_on_a_dangling_history_is_info() -> None:
    """L2: history.dangling says "no rule binds the producer here" of a 5xx, yet graded it
    `warn` in a MUST-tier case (which fails at --level should). FE-8 binds the
    application; INPUT-15's 4xx concerns malformed input, and a dangling history is
    well-formed: `info`."""
    report = check_app(status_agent(500), cases=["history.dangling"], level="should")
    case = _case(report, "history.dangling")
    assert case.verdict is Verdict.INFO, [f.message for f in case.findings]
    assert report.ok


def test_an_echoed_probe_member_is_input_16_not_proc_3() -> None:
    """F4: PROC-3 binds the consumer (the checker, which stripped the member). The agent
    restating the checker's unknown member in MESSAGES_SNAPSHOT did not strip it, as
    INPUT-16 says a producer does: a `warn` citing INPUT-16."""
    report = check_app(echoing_snapshot_agent(), cases=["input.unknown-members"])
    case = _case(report, "input.unknown-members")
    assert case.verdict is Verdict.WARN, [(f.rule, f.message) for f in case.findings]
    rules = {f.rule for f in case.findings if f.verdict is Verdict.WARN}
    assert rules == {"INPUT-16"}, rules
    assert any("xAguiCheckNote" in f.message and f.event is not None for f in case.findings)


def duplicate_interrupt_ids_agent(interrupts: list[dict[str, Any]] | None = None) -> Starlette:
    """Interrupts with two interrupts sharing one id — INT-3: "Each interrupt's `id` MUST
    be unique within the run" (P; a consumer treats it as fatal)."""

    async def endpoint(request: Request) -> Response:
        inp = await _input(request)
        if inp is None:
            return JSONResponse({"error": "malformed"}, status_code=422)
        tid, rid = inp["threadId"], inp["runId"]
        listed = (
            [{"id": "d1", "reason": "a"}, {"id": "d1", "reason": "b"}]
            if interrupts is None
            else interrupts
        )
        outcome = {"type": "interrupt", "interrupts": listed}
        events = [
            {"type": "RUN_STARTED", "threadId": tid, "runId": rid, "protocolVersion": "1.1"},
            {"type": "RUN_FINISHED", "threadId": tid, "runId": rid, "outcome": outcome},
        ]
        return Response(b"".join(_sse(e) for e in events), media_type="text/event-stream")

    return Starlette(routes=[Route("/", endpoint, methods=["POST"])])


def test_duplicate_interrupt_ids_fail_interrupts_ids() -> None:
    """interrupts.ids "passes when every interrupt outcome has interrupts with unique
    ids". Against an agent answering the interrupt prompt with two interrupts both
    named 'd1', the check today says "none of the 2 run(s) … ended with the interrupt
    outcome", every interrupt case is `not exercised`, the exchange is in no case's
    transcript, and the exit code is 0: the one fault the case exists for is missed."""
    report = check_app(duplicate_interrupt_ids_agent(), cases=["interrupts.*"])
    case = _case(report, "interrupts.ids")
    assert case.verdict is Verdict.FAIL, (case.verdict, case.observed)
    assert any(f.rule == "INT-3" and f.verdict is Verdict.FAIL for f in case.findings)
    assert not report.ok


def test_an_empty_interrupt_list_fails_interrupts_ids() -> None:
    """INT-1: the interrupt outcome carries "one or more `Interrupt` objects — at least
    one" (schema `minItems 1`). An agent ending the interrupt prompt's run with
    `interrupts: []` gets every interrupt case `not exercised` and exit 0 today."""
    report = check_app(duplicate_interrupt_ids_agent([]), cases=["interrupts.*"])
    case = _case(report, "interrupts.ids")
    assert case.verdict is Verdict.FAIL, (case.verdict, case.observed)
    assert not report.ok
