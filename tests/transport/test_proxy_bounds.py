"""The proxy bounded by construction, and blaming only where it is due (issue #35).

Each test is a finding measured on the proxy before it judged inline: every finding of
a session kept (50-105 MB a stream for an agent earning a warning per event), the
thread ledger keeping every message id, ``--record`` globbing the folder per exchange,
httpx's pool of 100 blamed on the agent (502), the upstream's secrets on the page and
in the meta, ``--strict`` judging the next input against the run as the agent sent it
rather than as it was forwarded.
"""

from __future__ import annotations

import asyncio
import threading
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from agui_tools.app._watch import (
    StreamOutcome,
    StreamWatch,
    ThreadLedger,
    WatchFinding,
    history_digest,
)
from agui_tools.transport import _recording
from agui_tools.transport._proxy_verdicts import (
    FINDINGS_KEPT,
    META_FINDINGS_BYTES,
    ExchangeFindings,
)
from agui_tools.transport._recording import RecordedExchange, Recording
from agui_tools.wire._framing import sse_frame
from tests.helpers.proxy import post, proxied
from tests.helpers.scripted_server import Script, app_for, serve

INPUT: dict[str, Any] = {"threadId": "t1", "runId": "r1", "messages": []}
RS = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
RF = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}


def _sse(events: list[dict[str, Any]]) -> list[bytes]:
    return [sse_frame(orjson.dumps(e)) for e in events]


# -- findings: the first FINDINGS_KEPT of a rule told, every one counted ------------------------


def test_an_agent_earning_a_warning_per_event_is_counted_not_kept(tmp_path: Path) -> None:
    # each content event carries an unknown field: PROC-3, a warning, 3,000 times
    n = 3_000
    chatty = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x", "extra": 1}
    events = [
        RS,
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        *[chatty] * n,
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        RF,
    ]
    script = Script(chunks=_sse(events))
    notices: list[str] = []
    with (
        serve(app_for(script)) as base,
        proxied(f"{base}/agent", record=tmp_path, on_notice=notices.append) as px,
    ):
        answer = post(px.url, INPUT)
    assert answer.content == b"".join(script.chunks)  # forwarded whole
    assert px.rules() == ["PROC-3"] * FINDINGS_KEPT  # told: the first of the rule
    assert px.app.tally.counts[("agent", "warning", "PROC-3")] == n  # counted: all
    meta = orjson.loads((tmp_path / "0001.meta.json").read_bytes())
    assert len(meta["findings"]) == FINDINGS_KEPT
    assert meta["findingsNotKept"] == {"PROC-3": n - FINDINGS_KEPT}
    assert len(notices) == 1 and f"{n - FINDINGS_KEPT} [PROC-3]" in notices[0], notices


def test_the_meta_spends_at_most_its_cap_on_findings() -> None:
    found = ExchangeFindings()
    long = "x" * (40 * 1024)  # a finding quoting a long peer string
    for rule in ("A-1", "B-2"):
        for _ in range(FINDINGS_KEPT):
            found.add(WatchFinding(rule, "warning", "agent", long))
    meta: dict[str, Any] = {}
    found.to_meta(meta)
    assert len(orjson.dumps(meta["findings"])) <= META_FINDINGS_BYTES
    shown = len(meta["findings"])
    assert 0 < shown < 2 * FINDINGS_KEPT
    # what did not fit is counted, per rule: nothing is lost without a word
    assert sum(meta["findingsNotKept"].values()) == 2 * FINDINGS_KEPT - shown


# -- the thread ledger: a digest per thread, not every id -------------------------------------


def _outcome(ids: list[str]) -> StreamOutcome:
    return StreamOutcome("r1", "success", (), (), len(ids), history_digest(ids))


def test_the_ledger_keeps_a_bounded_digest_per_thread() -> None:
    ledger = ThreadLedger()
    histories = {f"t{t}": [f"t{t}-message-{i:06d}" for i in range(10_000)] for t in range(20)}
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for thread, ids in histories.items():
            ledger.remember({"threadId": thread}, _outcome(ids))
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # every id kept would be 200,000 strings (~15 MB); a digest is a few hundred bytes
    assert grown < 200_000, grown


def _judged(ledger: ThreadLedger, ids: list[str]) -> list[str]:
    body = {
        "threadId": "t1",
        "runId": "r2",
        "messages": [{"id": i, "role": "user", "content": "hi"} for i in ids],
        "tools": [],
        "state": None,
        "context": [],
        "forwardedProps": None,
    }
    return [f.rule for f in ledger.judge(orjson.dumps(body), (body, 200, None)).findings]


def test_the_digest_still_says_a_dropped_message_and_not_a_continued_history() -> None:
    ledger = ThreadLedger()
    held = ["u1", "a1", "u2", "a2"]
    ledger.remember({"threadId": "t1"}, _outcome(held))
    assert _judged(ledger, [*held, "u3"]) == []  # continued: nothing
    assert _judged(ledger, ["u1", "u2", "a2", "u3"]) == ["INPUT-5"]  # a1 dropped
    assert _judged(ledger, ["u1", "a1", "u2"]) == ["INPUT-5"]  # shorter than what was held
    assert _judged(ledger, ["u1", "a1", "u2", "a2-renamed"]) == ["INPUT-5"]


# -- --record: numbering costs the same however many exchanges are recorded ---------------------


def test_record_numbering_never_looks_at_the_folder_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "0041.sse").write_bytes(b"")  # an earlier session's, without its input
    recording = Recording(tmp_path)

    def scanned(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the folder was scanned for an exchange's number")

    monkeypatch.setattr(Path, "glob", scanned)
    monkeypatch.setattr(Path, "iterdir", scanned)
    numbers = []
    for _ in range(50):
        exchange = recording.start(b"{}")
        assert exchange is not None
        numbers.append(int(exchange.prefix.name))
    assert numbers == list(range(42, 92))


# -- the upstream connections: the proxy's own limit is its own 503 ------------------------------


@contextmanager
def _held_agent() -> Iterator[tuple[str, threading.Event]]:
    """An agent whose streams stay open (RUN_STARTED sent) until the event is set."""
    release = threading.Event()

    async def agent(request: Request) -> Response:
        await request.body()

        async def events() -> AsyncIterator[bytes]:
            yield sse_frame(orjson.dumps(RS))
            while not release.is_set():
                await asyncio.sleep(0.02)
            yield sse_frame(orjson.dumps(RF))

        return StreamingResponse(events(), media_type="text/event-stream")

    with serve(Starlette(routes=[Route("/agent", agent, methods=["POST"])])) as base:
        try:
            yield f"{base}/agent", release
        finally:
            release.set()


def test_every_upstream_connection_in_use_is_the_proxys_503_not_the_agents_502() -> None:
    with _held_agent() as (agent, release), proxied(agent, upstream_connections=1) as px:
        with httpx.stream(
            "POST", px.url, content=orjson.dumps(INPUT), timeout=30
        ) as first:  # holds the one connection
            assert first.status_code == 200
            second = post(px.url, {**INPUT, "threadId": "t2"}, timeout=30)
            release.set()
            b"".join(first.iter_raw())
    assert second.status_code == 503
    problem = second.json()["error"]
    assert problem["side"] == "proxy" and "upstream connection(s) in use" in problem["message"]
    assert px.upstream_errors == []  # nothing said against the upstream
    assert px.findings == []


def test_more_open_streams_than_httpxs_default_pool_are_all_served() -> None:
    # httpx's default pool is 100 connections: the 101st frontend waited 30 s for it and
    # got a 502 saying the upstream "cannot be reached"
    async def open_streams(url: str, count: int) -> list[int]:
        limits = httpx.Limits(max_connections=count + 10)
        async with httpx.AsyncClient(limits=limits, timeout=20) as client:
            requests = [
                client.build_request("POST", url, content=orjson.dumps({**INPUT, "runId": f"r{i}"}))
                for i in range(count)
            ]
            answers = await asyncio.gather(*(client.send(r, stream=True) for r in requests))
            statuses = [a.status_code for a in answers]
            for answer in answers:
                await answer.aclose()
            return statuses

    with _held_agent() as (agent, _), proxied(agent, max_concurrency=200) as px:
        statuses = asyncio.run(open_streams(px.url, 110))
    assert statuses == [200] * 110
    assert px.upstream_errors == []


# -- secrets: no userinfo, query value or header value on the page, in the log or the meta -------


def test_the_upstreams_secrets_reach_no_answer_log_or_meta(tmp_path: Path) -> None:
    script = Script(chunks=_sse([RS, RF]))
    with serve(app_for(script)) as base:
        secret_url = base.replace("http://", "http://user:hunter2@") + "/agent?code=SECRET1"
        with proxied(secret_url, record=tmp_path) as px:
            assert post(px.url, INPUT, **{"x-api-key": "SECRET2"}).status_code == 200
    # the agent had the header: a secret is forwarded, only never shown
    assert script.requests[0]["headers"]["x-api-key"] == "SECRET2"
    # an upstream that cannot be reached: the 502 the frontend gets, the log line
    dead = "http://user:hunter2@127.0.0.1:9/agent?code=SECRET1"
    with proxied(dead, record=tmp_path / "dead") as px:
        answer = post(px.url, INPUT, **{"x-api-key": "SECRET2"})
    assert answer.status_code == 502 and answer.json()["error"]["side"] == "agent"
    said = [
        answer.text,
        *(f"{u} {m}" for u, m in px.upstream_errors),
        *(p.read_text() for p in tmp_path.rglob("*.meta.json")),
    ]
    assert len(said) >= 4
    for text in said:
        for secret in ("hunter2", "SECRET1", "SECRET2", "user:"):
            assert secret not in text, (secret, text)
    meta = orjson.loads((tmp_path / "0001.meta.json").read_bytes())
    assert "x-api-key" in meta["requestHeaders"] and meta["headerValues"] == "redacted"
    assert meta["url"].endswith("/agent?code=***")


# -- --strict: the next input is judged against the run as it was forwarded ------------------------


def test_strict_judges_the_next_input_against_the_run_it_forwarded() -> None:
    # the agent ends its run interrupted with a frontend call pending (FE-3): --strict
    # replaces that RUN_FINISHED with a RUN_ERROR. The frontend saw an errored run, so
    # its next input resumes nothing — and must not be refused for leaving the agent's
    # interrupt uncovered (INT-7, 409), which stopped the official HttpAgent.
    tools = [{"name": "confirm_order", "description": "ask", "parameters": {"type": "object"}}]
    first = {**INPUT, "tools": tools}
    events = [
        RS,
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "confirm_order"},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {**RF, "outcome": {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "ok"}]}},
    ]
    script = Script(chunks=_sse(events))
    with serve(app_for(script)) as base, proxied(f"{base}/agent", strict=True) as px:
        cut = post(px.url, first)
        assert b'"RUN_ERROR"' in cut.content and b"FE-3" in cut.content
        script.chunks = _sse([{**RS, "runId": "r2"}, {**RF, "runId": "r2"}])
        again = post(px.url, {**first, "runId": "r2", "messages": []})
    assert again.status_code == 200, again.text
    assert "INT-7" not in px.rules() and px.rules() == ["FE-3"]


def _growth(event: dict[str, Any]) -> tuple[int, StreamWatch]:
    """Memory a proxy's watch (keep=False) grows by over 20,000 copies of ``event``."""
    frame = sse_frame(orjson.dumps(event))
    start = {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}
    watch = StreamWatch("sse", keep=False, on_finding=lambda finding: None)
    watch.feed(b"".join(_sse([RS, start])) + frame * 100)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(200):
            watch.feed(frame * 100)
        return tracemalloc.get_traced_memory()[0] - before, watch
    finally:
        tracemalloc.stop()


def test_a_watch_that_counts_keeps_nothing_per_warning() -> None:
    # the same 20,000 deltas, conforming and each earning a warning (PROC-3): the message
    # they build is the thread's either way; the warnings cost nothing more (kept — the
    # watch's, the pipeline's, the verifier's lists — they were some 15 MB)
    delta = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"}
    clean, _ = _growth(delta)
    chatty, watch = _growth({**delta, "extra": 1})
    assert watch.findings == [] and watch.pipe.warnings == []
    assert chatty < clean * 1.2 + 50_000, (chatty, clean)


def test_a_watch_keeps_no_streamed_text() -> None:
    # a 400 MB conforming run peaked the proxy at 513 MiB: the folded thread kept every
    # message's text, which no rule reads. 20 MB of text now grows the watch by little.
    watch = StreamWatch("sse", keep=False)
    watch.feed(b"".join(_sse([RS])))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for m in range(50):
            start = {"type": "TEXT_MESSAGE_START", "messageId": f"m{m}", "role": "assistant"}
            delta = {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"m{m}", "delta": "y" * 4000}
            end = {"type": "TEXT_MESSAGE_END", "messageId": f"m{m}"}
            watch.feed(b"".join(_sse([start])) + _sse([delta])[0] * 100 + b"".join(_sse([end])))
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    watch.feed(b"".join(_sse([RF])))
    watch.close()
    assert watch.findings == [] and not watch.failed
    assert grown < 2_000_000, grown  # the text kept was 20 MB
    outcome = watch.outcome(INPUT)
    assert outcome is not None and outcome.held == 50  # the messages are still the thread's


def test_a_recordings_meta_appears_whole_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader polling for ``NNNN.meta.json`` (verify DIR, the mock, a test) never reads
    it empty or cut: it is written aside and renamed into place."""
    exchange = RecordedExchange(tmp_path / "0001")
    exchange.open("text/event-stream")
    exchange.write(b"data: {}\n\n")
    final = tmp_path / "0001.meta.json"
    seen: list[bool] = []
    rename = _recording.os.replace

    def replace(src: Any, dst: Any) -> None:
        seen.append(final.exists())  # before the rename: not there, even partly
        rename(src, dst)

    monkeypatch.setattr(_recording.os, "replace", replace)
    exchange.finish({"status": 200, "findings": []})
    assert seen == [False]
    assert orjson.loads(final.read_bytes()) == {"status": 200, "findings": []}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0001.meta.json", "0001.sse"]


def test_a_meta_that_cannot_be_written_leaves_no_file_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exchange = RecordedExchange(tmp_path / "0001")
    exchange.open("text/event-stream")

    def full(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_recording.os, "replace", full)
    exchange.finish({"status": 200})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0001.sse"]
