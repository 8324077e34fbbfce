"""The checker's time bounds (#37, #36 item 7): every request is under ``--timeout`` from
its first byte (the reachability GET included), a whole check under its deadline, a slow
agent that keeps streaming is judged on what it streamed, and the evidence of a request
that ran out of time stays in its case's transcript."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from agui_tools.check import Verdict, acheck_agent

from .agents import check_app, hanging_agent


def _sse(event: dict[str, Any]) -> str:
    return f"data: {json.dumps(event)}\n\n"


def slow_agent(words: int = 40, every: float = 0.05) -> Starlette:
    """A live but slow agent: a well-formed run, one word every ``every`` seconds."""

    async def endpoint(request: Request) -> Response:
        try:
            data = json.loads(await request.body())
            thread, run = data["threadId"], data["runId"]
        except (ValueError, KeyError, TypeError):
            return Response('{"error": "not a RunAgentInput"}', 400, media_type="application/json")

        async def stream() -> AsyncIterator[str]:
            yield _sse({"type": "RUN_STARTED", "threadId": thread, "runId": run})
            yield _sse({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"})
            for n in range(words):
                await asyncio.sleep(every)
                yield _sse({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": f"w{n} "})
            yield _sse({"type": "TEXT_MESSAGE_END", "messageId": "m"})
            yield _sse({"type": "RUN_FINISHED", "threadId": thread, "runId": run})

        return StreamingResponse(stream(), media_type="text/event-stream")

    return Starlette(routes=[Route("/", endpoint, methods=["POST"])])


@asynccontextmanager
async def dripping_server(every: float = 0.3) -> AsyncIterator[tuple[str, list[str]]]:
    """A raw HTTP server answering every request one byte every ``every`` seconds, never
    finishing (#37's drip); yields its URL and the request lines it received."""
    seen: list[str] = []
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + b": x\n" * 1000

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            seen.append((await reader.readline()).decode("latin-1").strip())
            for byte in answer:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(every)
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/", seen
    finally:
        server.close()


def test_a_dripped_reachability_get_is_bounded_by_timeout() -> None:
    """#37: ``--timeout 3`` against an agent dripping its GET a byte at a time ran 90 s
    with no case sent: httpx's timeouts bound each read, never the whole GET."""

    async def main() -> tuple[Any, list[str], float]:
        async with dripping_server() as (url, seen):
            start = time.perf_counter()
            report = await asyncio.wait_for(
                acheck_agent(url, cases=["lifecycle.stream"], timeout=1), 60
            )
            return report, seen, time.perf_counter() - start

    report, seen, seconds = asyncio.run(main())
    assert seen[0].startswith("GET ") and any(line.startswith("POST ") for line in seen), seen
    case = report.case("lifecycle.stream")
    assert case.verdict is Verdict.FAIL, case.findings
    assert "did not finish within 1 s" in case.observed
    (exchange,) = case.exchanges  # the evidence is kept: the status line never came whole
    assert exchange.status is None and "no answer" in exchange.error
    assert seconds < 30  # a generous hang bound: the GET, the plain run, the case: ~3 s


def test_a_stalled_request_keeps_its_evidence_in_the_case() -> None:
    """#36 item 7: the case whose request ran out of time showed no exchange at all."""
    report = check_app(hanging_agent(), cases=["lifecycle.stream"], timeout=0.5)
    case = report.case("lifecycle.stream")
    assert case.verdict is Verdict.FAIL
    (exchange,) = case.exchanges
    assert exchange.status == 200 and len(exchange.frames) == 1  # RUN_STARTED, then silence
    assert "did not finish within 0.5 s" in exchange.error
    assert case.findings[0].exchange == 0 and "--timeout" in case.findings[0].message


@pytest.mark.slow
def test_a_slow_but_streaming_agent_is_judged_on_what_it_streamed() -> None:
    """#36 item 7: one word every 50 ms for 2 s, checked with a 1 s bound: not a MUST
    fail "did not finish", not 22 cases "not exercised" — what arrived is judged, and the
    verdict names the time and suggests ``--timeout``."""
    report = check_app(
        slow_agent(),
        cases=["lifecycle.stream", "lifecycle.ids-echoed", "input.newer-version"],
        timeout=1,
    )
    case = report.case("lifecycle.stream")
    assert case.verdict is Verdict.INFO, case.findings
    (finding,) = case.findings
    assert finding.rule == "TIMEOUT"
    assert "still streaming when the checker's time bound of 1 s passed" in finding.message
    assert "--timeout 30" in finding.message
    assert len(case.exchanges[0].frames) > 5  # the evidence
    # the headline every report shows says it too, not only the finding
    assert "cut at the 1 s bound while still streaming" in case.observed
    assert case.observed.endswith("--timeout 30")
    for cid in ("lifecycle.ids-echoed", "input.newer-version"):
        assert report.case(cid).verdict is not Verdict.NOT_EXERCISED, report.case(cid).findings
    assert report.case("lifecycle.ids-echoed").verdict is Verdict.PASS
    assert report.exit_code == 0
    # given the time, the same agent passes whole
    patient = check_app(slow_agent(), cases=["lifecycle.stream"], timeout=10)
    assert patient.case("lifecycle.stream").verdict is Verdict.PASS


def test_a_whole_check_stops_at_its_deadline_with_a_partial_report() -> None:
    """#37: a check has an overall deadline; the case running then keeps its evidence, the
    cases left are not run — all reported."""
    start = time.perf_counter()
    report = check_app(
        hanging_agent(),
        cases=["input.unknown-members", "input.newer-version", "lifecycle.stream"],
        timeout=1,
        deadline=2.5,  # the plain run 1 s, unknown-members 1 s, newer-version cut at 0.5 s
    )
    assert time.perf_counter() - start < 20  # generous: the deadline is 2.5 s
    assert report.stopped == "the check's deadline of 2.5 s passed (--deadline)"
    first, cut, left = (report.case(c.id) for c in report.cases)
    assert not first.observed.startswith(("not run", "not finished")), first.observed
    assert cut.id == "input.newer-version" and cut.verdict is Verdict.NOT_EXERCISED
    assert cut.observed == "not finished: " + report.stopped and cut.exchanges
    assert left.id == "lifecycle.stream" and left.verdict is Verdict.NOT_EXERCISED
    assert left.observed == "not run: " + report.stopped and not left.exchanges
    assert not report.ok and report.exit_code == 1
    assert report.to_json()["stopped"] == report.stopped
