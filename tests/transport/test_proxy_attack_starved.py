"""Attack: a starved (stopped) judging process holds nothing up, and no verdict is lost or
told twice (docs/proxy.md "What it costs": VERDICT_OVERDUE; "If the judging process dies")."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import signal
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from agui_tools.wire._framing import PROTO_MEDIA_TYPE, sse_frame
from agui_tools.wire._proto_codec import encode_proto_event
from agui_tools.wire._proto_framing import proto_frame
from tests.helpers.judging_process import judging_process, log_lines
from tests.helpers.proxy import proxied, proxy_cmd, wait_until
from tests.helpers.scripted_server import serve

TOOLS = [{"name": "confirm_order", "description": "Ask the user to confirm an order."}]


def _input(thread: str, run: str, messages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": run,
        "messages": messages
        if messages is not None
        else [{"id": "u1", "role": "user", "content": "Order 2 widgets"}],
        "tools": TOOLS,
    }


def _fabricated(thread: str, run: str, call: str = "c1") -> list[dict[str, Any]]:
    """RUN_STARTED, a frontend tool's call answered by the agent itself (FE-2 at #3)."""
    return [
        {"type": "RUN_STARTED", "threadId": thread, "runId": run},
        {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": "confirm_order"},
        {"type": "TOOL_CALL_END", "toolCallId": call},
        {"type": "TOOL_CALL_RESULT", "toolCallId": call, "messageId": "m" + call, "content": "ok"},
        {"type": "RUN_FINISHED", "threadId": thread, "runId": run},
    ]


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(sse_frame(orjson.dumps(e)) for e in events)


def _proto(events: list[dict[str, Any]]) -> bytes:
    return b"".join(proto_frame(encode_proto_event(e)) for e in events)


def _post(url: str, body: dict[str, Any], timeout: float = 30, **headers: str) -> httpx.Response:
    return httpx.post(
        url,
        content=orjson.dumps(body),
        headers={"content-type": "application/json", **headers},
        timeout=timeout,
    )


def _agent(encoding: str | None = None, proto: bool = False) -> Starlette:
    """Each input answered on its own ids with a fabricated result (FE-2 at event #3)."""

    async def endpoint(request: Request) -> Response:
        body = orjson.loads(await request.body())
        events = _fabricated(body["threadId"], body["runId"])
        data = _proto(events) if proto else _sse(events)
        headers = {}
        if encoding == "gzip":
            data = gzip.compress(data)
            headers["content-encoding"] = "gzip"
        media = PROTO_MEDIA_TYPE if proto else "text/event-stream"
        return Response(data, media_type=media, headers=headers)

    return Starlette(routes=[Route("/agent", endpoint, methods=["POST"])])


def _settled(px: Any) -> int:
    wait_until(
        lambda: (
            not px.app._unsettled and px.app._pool is not None and px.app._pool._process is not None
        ),
        "the judging process never settled",
    )
    return int(px.app._pool._process.pid)


def _told(px: Any) -> list[tuple[str, str | None, str | None, int | None]]:
    with px.lock:
        return [(f.rule, f.thread_id, f.run_id, f.index) for f in px.findings]


@pytest.mark.parametrize("coding", ["identity", "gzip", "proto"])
def test_a_taken_over_coded_stream_is_judged_once(coding: str) -> None:
    agent = _agent("gzip" if coding == "gzip" else None, proto=coding == "proto")
    accept = {"accept": PROTO_MEDIA_TYPE} if coding == "proto" else {}
    with serve(agent) as base, proxied(f"{base}/agent", judge_in_process=True) as px:
        assert _post(px.url, _input("t0", "r0"), **accept).status_code == 200
        pid = _settled(px)
        os.kill(pid, signal.SIGSTOP)
        try:
            assert _post(px.url, _input("t1", "r1"), **accept).status_code == 200
            assert _post(px.url, _input("t1", "r2"), **accept).status_code == 200
        finally:
            os.kill(pid, signal.SIGCONT)
        _settled(px)
        time.sleep(0.5)
        told = [f for f in _told(px) if f[0] == "FE-2"]
        assert told == [("FE-2", "t0", "r0", 3), ("FE-2", "t1", "r1", 3), ("FE-2", "t1", "r2", 3)]


def _paused_agent(gate: threading.Event, second: list[dict[str, Any]]) -> Starlette:
    """t1's first answer: its FE-2 chunk, then (``gate`` set) the ``second`` events."""

    async def endpoint(request: Request) -> Response:
        body = orjson.loads(await request.body())
        events = _fabricated(body["threadId"], body["runId"])
        if body["runId"] != "r1":
            return Response(_sse(events), media_type="text/event-stream")

        async def gen() -> AsyncIterator[bytes]:
            yield _sse(events[:4])
            while not gate.is_set():
                await asyncio.sleep(0.02)
            yield _sse(second)

        return StreamingResponse(gen(), media_type="text/event-stream")

    return Starlette(routes=[Route("/agent", endpoint, methods=["POST"])])


def test_a_finding_told_before_the_stop_is_not_told_again_by_the_takeover() -> None:
    gate = threading.Event()
    second = [
        {"type": "TOOL_CALL_START", "toolCallId": "c2", "toolCallName": "confirm_order"},
        {"type": "TOOL_CALL_END", "toolCallId": "c2"},
        {"type": "TOOL_CALL_RESULT", "toolCallId": "c2", "messageId": "mc2", "content": "ok"},
        {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
    ]
    with (
        serve(_paused_agent(gate, second)) as base,
        proxied(f"{base}/agent", judge_in_process=True) as px,
    ):
        assert _post(px.url, _input("t0", "r0")).status_code == 200
        pid = _settled(px)
        answer: list[httpx.Response] = []
        t = threading.Thread(target=lambda: answer.append(_post(px.url, _input("t1", "r1"))))
        t.start()
        wait_until(lambda: len(_told(px)) == 2, "the first chunk's FE-2 never told")
        os.kill(pid, signal.SIGSTOP)
        try:
            gate.set()
            t.join(30)
            assert answer and answer[0].status_code == 200
            assert _post(px.url, _input("t1", "r2")).status_code == 200
        finally:
            os.kill(pid, signal.SIGCONT)
        _settled(px)
        time.sleep(0.5)
        assert [f for f in _told(px) if f[0] == "FE-2"] == [
            ("FE-2", "t0", "r0", 3),
            ("FE-2", "t1", "r1", 3),
            ("FE-2", "t1", "r1", 6),
            ("FE-2", "t1", "r2", 3),
        ]


@pytest.mark.run_error("the judging process ended")
def test_a_killed_judge_after_a_takeover_tells_nothing_twice() -> None:
    with serve(_agent()) as base, proxied(f"{base}/agent", judge_in_process=True) as px:
        assert _post(px.url, _input("t0", "r0")).status_code == 200
        pid = _settled(px)
        os.kill(pid, signal.SIGSTOP)
        assert _post(px.url, _input("t1", "r1")).status_code == 200
        assert _post(px.url, _input("t2", "r1")).status_code == 200
        assert _post(px.url, _input("t1", "r2")).status_code == 200  # t1/r1 taken over
        os.kill(pid, signal.SIGKILL)
        time.sleep(1.0)
        assert _post(px.url, _input("t3", "r1")).status_code == 200
        assert _post(px.url, _input("t2", "r2")).status_code == 200
        time.sleep(0.5)
        assert sorted(f for f in _told(px) if f[0] == "FE-2") == sorted(
            [
                ("FE-2", "t0", "r0", 3),
                ("FE-2", "t1", "r1", 3),
                ("FE-2", "t2", "r1", 3),
                ("FE-2", "t1", "r2", 3),
                ("FE-2", "t3", "r1", 3),
                ("FE-2", "t2", "r2", 3),
            ]
        )


def test_several_threads_waiting_at_once() -> None:
    threads = ["t1", "t2", "t3", "t4"]
    with serve(_agent()) as base, proxied(f"{base}/agent", judge_in_process=True) as px:
        assert _post(px.url, _input("t0", "r0")).status_code == 200
        pid = _settled(px)
        os.kill(pid, signal.SIGSTOP)
        try:
            for th in threads:
                assert _post(px.url, _input(th, "r1")).status_code == 200
            got: list[tuple[str, int, float]] = []
            start = time.monotonic()

            def nxt(th: str) -> None:
                r = _post(px.url, _input(th, "r2"))
                got.append((th, r.status_code, time.monotonic() - start))

            ts = [threading.Thread(target=nxt, args=(th,)) for th in threads]
            ts += [threading.Thread(target=nxt, args=(th,)) for th in threads[:2]]  # twice at once
            for x in ts:
                x.start()
            for x in ts:
                x.join(30)
            assert len(got) == 6 and all(c == 200 for _, c, _ in got)
        finally:
            os.kill(pid, signal.SIGCONT)
        _settled(px)
        time.sleep(0.5)
        fe2 = [f for f in _told(px) if f[0] == "FE-2"]
        assert sorted(fe2) == sorted(
            [("FE-2", "t0", "r0", 3)]
            + [("FE-2", th, "r1", 3) for th in threads]
            + [("FE-2", th, "r2", 3) for th in threads + threads[:2]]
        )


def _long_agent(n: int) -> Starlette:
    """t1/r1: a text message of ``n`` deltas in chunks of 100, then a FE-2; others short."""

    async def endpoint(request: Request) -> Response:
        body = orjson.loads(await request.body())
        events = _fabricated(body["threadId"], body["runId"])
        if body["runId"] != "r1":
            return Response(_sse(events), media_type="text/event-stream")
        text = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "tok " * 8}
        mid = [
            {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
            *[text] * n,
            {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        ]
        all_ = [events[0], *mid, *events[1:]]

        async def gen() -> AsyncIterator[bytes]:
            for i in range(0, len(all_), 100):
                yield _sse(all_[i : i + 100])

        return StreamingResponse(gen(), media_type="text/event-stream")

    return Starlette(routes=[Route("/agent", endpoint, methods=["POST"])])


# fixed (was xfail: "attack: a stream past the kept budget, judge stopped: the thread's next input hangs")
def test_the_next_input_after_an_unkept_stream_is_not_held_forever(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the judging process stopped; t1's stream passes the kept budget (16 KiB here, 32 MiB
    # in the product) so it cannot be judged in the proxy: docs/proxy.md says "that stream's
    # verdict is waited for" — but "a starved judge never holds anything up for more than
    # 0.5 s", and a stopped judge never gives it: t1's next input is held for ever (15 s
    # here, no answer), where a 'not judged' (PROXY-JUDGE) would let it through
    from agui_tools.transport import _judge_pool

    monkeypatch.setattr(_judge_pool, "KEPT_BYTES", 16 * 1024)
    with serve(_long_agent(2000)) as base, proxied(f"{base}/agent", judge_in_process=True) as px:
        assert _post(px.url, _input("t0", "r0")).status_code == 200
        pid = _settled(px)
        os.kill(pid, signal.SIGSTOP)
        try:
            assert _post(px.url, _input("t1", "r1")).status_code == 200  # ~160 KB, forwarded
            try:
                answer = _post(px.url, _input("t1", "r2"), timeout=15)
            except httpx.ReadTimeout:
                pytest.fail("t1's next input held 15 s by a stopped judge (no answer)")
            assert answer.status_code == 200
        finally:
            os.kill(pid, signal.SIGCONT)


# fixed (was xfail: "attack: a stream past the kept budget stalls mid-stream once the backlog is full")
def test_an_unkept_stream_is_never_stalled_by_a_full_backlog(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the judging process stopped; one stream longer than the kept budget and the backlog
    # (both 64 KiB here, both 32 MiB in the product): docs/proxy.md "a backlog that has not
    # moved for 0.5 s has its stream judged in the proxy from then on ... forwarding them at
    # --strict's rate, never stalled". The stream is not kept past the budget, so it cannot
    # be taken over — and forwarding stops mid-stream for as long as the judge is stopped
    # (no byte for 10 s: ReadTimeout), a valid ~3 MB stream never delivered whole
    from agui_tools.transport import _judge_pool

    monkeypatch.setattr(_judge_pool, "KEPT_BYTES", 64 * 1024)
    monkeypatch.setattr(_judge_pool, "BACKLOG_BYTES", 64 * 1024)
    with serve(_long_agent(40_000)) as base, proxied(f"{base}/agent", judge_in_process=True) as px:
        assert _post(px.url, _input("t0", "r0")).status_code == 200
        pid = _settled(px)
        os.kill(pid, signal.SIGSTOP)
        try:
            try:
                answer = httpx.post(
                    px.url,
                    content=orjson.dumps(_input("t1", "r1")),
                    headers={"content-type": "application/json"},
                    timeout=httpx.Timeout(30, read=10),
                )
            except httpx.ReadTimeout:
                pytest.fail(
                    "forwarding stalled 10 s mid-stream: the judge stopped, the stream unkept"
                )
            assert answer.status_code == 200
            assert answer.content.count(b"\n\n") == 40_000 + 7
        finally:
            os.kill(pid, signal.SIGCONT)


def _big_agent(mib: int) -> Starlette:
    """run 'big': a text message of ``mib`` MiB (past the 32 MiB kept budget), then a FE-2;
    any other run a short stream with a FE-2."""

    async def endpoint(request: Request) -> Response:
        body = orjson.loads(await request.body())
        events = _fabricated(body["threadId"], body["runId"])
        if body["runId"] != "big":
            return Response(_sse(events), media_type="text/event-stream")
        text = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "tok " * 8}
        chunk = _sse([text] * 100)
        start = {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}

        async def gen() -> AsyncIterator[bytes]:
            yield _sse([events[0], start])
            for _ in range(mib * 1024 * 1024 // len(chunk)):
                yield chunk
            yield _sse([{"type": "TEXT_MESSAGE_END", "messageId": "m1"}, *events[1:]])

        return StreamingResponse(gen(), media_type="text/event-stream")

    return Starlette(routes=[Route("/agent", endpoint, methods=["POST"])])


# fixed (was xfail: "attack: SIGTERM, judge stopped, a >32 MiB stream stalled: no meta, no verdict said")
def test_sigterm_with_a_stalled_unkept_stream_says_its_verdict(tmp_path: Path) -> None:
    # the real command, its defaults: the judging process stopped (SIGSTOP), a 40 MiB stream
    # stalls once past the 32 MiB kept budget and backlog (the in-process test above);
    # then SIGTERM, as a CI job stops its services. docs/proxy.md: "Every meta is written
    # by the time the proxy has stopped", "no verdict is lost" — a stream that cannot be
    # judged is said `PROXY-JUDGE`, "never left as a run with 'no rule broken'". Seen:
    # 0002 has no meta, the summary and the log say nothing of it (2 run requests, the one
    # error t0's), and the stop took 23 s ("10 s at most in all"; uvicorn: "Cancel 1
    # running task(s), timeout graceful shutdown exceeded")
    log, rec = tmp_path / "findings.jsonl", tmp_path / "rec"
    with serve(_big_agent(40)) as base:
        proc, url = proxy_cmd(f"{base}/agent", "--log", str(log), "--record", str(rec))
        reader: threading.Thread | None = None
        try:
            assert _post(url, _input("t0", "r0")).status_code == 200
            wait_until(lambda: log_lines(log), "the first verdict never came")
            pid = judging_process(proc.pid)
            os.kill(pid, signal.SIGSTOP)

            def read() -> None:
                with contextlib.suppress(httpx.HTTPError):
                    _post(url, _input("t1", "big"), timeout=90)

            reader = threading.Thread(target=read)
            reader.start()
            stream = rec / "0002.sse"
            sizes = [-1]

            def stalled() -> bool:
                size = stream.stat().st_size if stream.exists() else 0
                time.sleep(1)
                sizes.append(size)
                return size > 32 * 1024 * 1024 and sizes[-2] == size

            wait_until(stalled, "the big stream never got past 32 MiB", seconds=120)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if reader is not None:
                reader.join(60)
    assert (rec / "0002.meta.json").exists(), f"exchange 2 has no meta: {err}"
    assert "PROXY-JUDGE" in err or "2 error(s)" in err, err


DANGLING = [
    {
        "id": "a1",
        "role": "assistant",
        "toolCalls": [
            {
                "id": "c7",
                "type": "function",
                "function": {"name": "confirm_order", "arguments": "{}"},
            }
        ],
    },
    {"id": "u2", "role": "user", "content": "hi"},
]


# fixed (was xfail: "attack: a stopped judge holds every later finding (even the proxy's own) untold")
def test_a_stopped_judge_does_not_hold_the_findings_of_later_exchanges() -> None:
    # the judging process stopped; t1's stream (FE-2) owed, nobody waiting for it. Then
    # t2's dangling history (FE-8: the proxy finds it at once), and t3's stream, its verdict
    # made overdue by t3's next input and so judged in the proxy itself. docs/proxy.md: "a
    # starved judge never holds anything up for more than 0.5 s"; other threads' findings
    # "are held until it is in, so the log still tells findings in the order of the
    # exchanges" — held for as long as the judge is starved: 3 s later (for ever, with
    # a stopped judge) not one of them is told; the log, stderr and on_finding are silent
    # until the judge wakes or the proxy stops. t1's verdict is overdue too: once
    # VERDICT_OVERDUE has passed it could be judged in the proxy and everything told
    with serve(_agent()) as base, proxied(f"{base}/agent", judge_in_process=True) as px:
        assert _post(px.url, _input("t0", "r0")).status_code == 200
        pid = _settled(px)
        os.kill(pid, signal.SIGSTOP)
        try:
            assert _post(px.url, _input("t1", "r1")).status_code == 200
            assert _post(px.url, _input("t2", "r1", messages=DANGLING)).status_code == 200
            assert _post(px.url, _input("t3", "r1")).status_code == 200
            assert _post(px.url, _input("t3", "r2")).status_code == 200  # r1 overdue: judged
            time.sleep(3)  # six times VERDICT_OVERDUE
            told = _told(px)
        finally:
            os.kill(pid, signal.SIGCONT)
        assert told[:5] == [
            ("FE-2", "t0", "r0", 3),
            ("FE-2", "t1", "r1", 3),
            ("FE-8", "t2", "r1", None),
            ("FE-2", "t2", "r1", 3),  # its answer, judged against the body it was sent
            ("FE-2", "t3", "r1", 3),
        ], told


# fixed (was xfail: "attack: two 20 MiB streams at once, judge stopped: one stalls mid-stream for ever")
def test_two_streams_within_the_budget_at_once_are_never_stalled(tmp_path: Path) -> None:
    # the real command, its defaults: the judging process stopped; two 20 MiB streams at
    # once — each within the 32 MiB kept budget, not the two together. docs/proxy.md: a
    # backlog that has not moved for 0.5 s "has its stream judged in the proxy from then
    # on ... never stalled". Seen (3 runs of 3): one of them is delivered whole, the
    # other stops mid-stream (ReadTimeout: no byte for 10 s) — its bytes were not kept
    # past the budget, so it cannot be taken over; SIGTERM then took 23 s, no meta for it
    log = tmp_path / "findings.jsonl"
    with serve(_big_agent(20)) as base:
        proc, url = proxy_cmd(f"{base}/agent", "--log", str(log))
        pid = 0
        try:
            assert _post(url, _input("t0", "r0")).status_code == 200
            wait_until(lambda: log_lines(log), "the first verdict never came")
            pid = judging_process(proc.pid)
            os.kill(pid, signal.SIGSTOP)
            got: dict[str, object] = {}

            def read(thread: str) -> None:
                try:
                    answer = httpx.post(
                        url,
                        content=orjson.dumps(_input(thread, "big")),
                        headers={"content-type": "application/json"},
                        timeout=httpx.Timeout(60, read=10),  # a stall: ReadTimeout
                    )
                    got[thread] = answer.content.count(b"\n\n")
                except httpx.HTTPError as exc:
                    got[thread] = repr(exc)

            readers = [threading.Thread(target=read, args=(t,)) for t in ("t1", "t2")]
            for reader in readers:
                reader.start()
            for reader in readers:
                reader.join(90)
        finally:
            if pid:
                os.kill(pid, signal.SIGKILL)  # not left stopped behind the test
            proc.kill()
            proc.wait()
    assert got["t1"] == got["t2"] and isinstance(got["t1"], int), got
