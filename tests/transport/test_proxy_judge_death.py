"""A judging process that dies loses no verdict (#25 round 2, finding 1; docs/proxy.md
"If the judging process dies"): each stream open — or whose verdict is still owed —
when it dies is judged again in the proxy from its start, its findings told once; a
stream whose bytes were not kept is said not judged (``PROXY-JUDGE``, an error).

A real proxy on loopback with its real judging process, killed with SIGKILL."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from agui_tools.transport import _judge_pool
from agui_tools.wire._framing import sse_frame
from tests.helpers.proxy import Proxied, proxied, stream_post, wait_until
from tests.helpers.proxy_order import ARGS_AFTER_END, INPUT, RF, RS, TA, TE, TS, post, sse
from tests.helpers.scripted_server import Script, app_for, serve


def _kill_judge(px: Proxied) -> None:
    pool = px.app._pool
    assert pool is not None and pool._process is not None, "the judging process never started"
    os.kill(pool._process.pid, signal.SIGKILL)
    wait_until(lambda: pool.broken, "the proxy never saw its judging process die")


@contextmanager
def _gated(
    before: list[dict[str, object]], after: list[dict[str, object]]
) -> Iterator[tuple[str, threading.Event]]:
    """An agent that sends ``before``, waits for the gate, then sends ``after``."""
    gate = threading.Event()

    async def agent(request: Request) -> Response:
        await request.body()

        async def events() -> AsyncIterator[bytes]:
            for event in before:
                yield sse_frame(orjson.dumps(event))
            while not gate.is_set():
                await asyncio.sleep(0.02)
            for event in after:
                yield sse_frame(orjson.dumps(event))

        return StreamingResponse(events(), media_type="text/event-stream")

    with serve(Starlette(routes=[Route("/agent", agent, methods=["POST"])])) as base:
        yield f"{base}/agent", gate


def _stream_through(px: Proxied, gate: threading.Event, dies: object) -> bytes:
    """A frontend reading the whole stream; ``dies()`` once the first part is in."""
    with stream_post(px.url, INPUT) as answer:
        pieces = answer.iter_raw()
        seen = b""
        while b"TOOL_CALL_ARGS" not in seen:
            seen += next(pieces)
        dies()  # type: ignore[operator]
        gate.set()
        for piece in pieces:
            seen += piece
    return seen


DIED = pytest.mark.run_error("the judging process ended")  # said once, in the log


@DIED
def test_a_finding_told_before_the_death_is_not_told_again_and_the_rest_is_judged() -> None:
    # PROC-3 at event #1 (a stripped property, a warning) is told by the judging
    # process; it dies; the stream goes on with TOOL-20 at #4, judged in-process from
    # the stream's start: each told once, and the verdict in
    odd_start = {**TS, "foo": 1}
    with _gated([RS, odd_start, TA], [TE, TA, RF]) as (url, gate):
        with proxied(url, judge_in_process=True) as px:

            def dies() -> None:
                wait_until(lambda: "PROC-3" in px.rules(), "the judging process never told PROC-3")
                _kill_judge(px)

            seen = _stream_through(px, gate, dies)
            wait_until(lambda: not px.app._unsettled, "the stream's verdict never came")
            assert b"RUN_FINISHED" in seen
            told = [(f.rule, f.index) for f in px.findings]
            assert told == [("PROC-3", 1), ("TOOL-20", 4)], told
            # the verdict is in: the thread's run is remembered (its next input judged
            # against it); the next stream is judged in-process, its findings told
            assert px.app.ledger._threads.get("t1") is not None
            assert post(px.url, {**INPUT, "runId": "r2"}).status_code == 200
            wait_until(lambda: len(px.findings) >= 4, "the next stream was not judged")
            assert [f.rule for f in px.findings[2:]] == ["PROC-3", "TOOL-20"], px.findings


@DIED
def test_a_stream_whose_verdict_is_owed_when_the_judge_dies_is_judged() -> None:
    # the judging process stopped (SIGSTOP): a whole stream breaking TOOL-20 goes
    # through, its verdict owed; then the judge is killed — the verdict comes from the
    # proxy itself, not lost
    script = Script(chunks=sse(ARGS_AFTER_END))
    with serve(app_for(script)) as base, proxied(f"{base}/agent", judge_in_process=True) as px:
        assert post(px.url, {**INPUT, "runId": "r0", "messages": []}).status_code == 200
        wait_until(lambda: not px.app._unsettled, "the first verdict never came")
        first = len(px.findings)
        pool = px.app._pool
        assert pool is not None and pool._process is not None
        os.kill(pool._process.pid, signal.SIGSTOP)
        try:
            assert post(px.url, INPUT).status_code == 200
            assert px.app._unsettled, "the verdict was not owed"
        finally:
            _kill_judge(px)
        wait_until(lambda: not px.app._unsettled, "the owed verdict never came")
        assert [(f.rule, f.index) for f in px.findings[first:]] == [("TOOL-20", 3)]


@DIED
def test_a_stream_not_kept_is_said_not_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    # the open streams keep KEPT_BYTES at most: a stream past it is not kept, so when
    # the judge dies it cannot be judged again — said, an error (exit 1), never silent
    monkeypatch.setattr(_judge_pool, "KEPT_BYTES", 64)
    with _gated([RS, TS, TE, TA], [RF]) as (url, gate):
        with proxied(url, judge_in_process=True) as px:
            _stream_through(px, gate, lambda: _kill_judge(px))
            wait_until(lambda: not px.app._unsettled, "the stream's verdict never came")
            said = [f for f in px.findings if f.rule == "PROXY-JUDGE"]
            assert len(said) == 1, px.findings
            assert said[0].severity == "error" and "not judged" in said[0].message
            assert (said[0].thread_id, said[0].run_id) == ("t1", "r1")
            assert px.app._pool is not None and px.app._pool.kept == 0
