"""Attack on the proxy's claim "judging every event" at burst speed (docs/proxy.md, "What it
costs"): a real agent on loopback sends 50,000-event bursts as fast as it can, each with ONE
violation, through ``python -m agui_tools proxy … --record … --log …``.

What held is guarded here (the violation, wherever it is, is in the log, the summary and the
meta, with the rule ID and index ``agui-tools verify`` gives the recording). What did not
when streams were judged in a separate process at idle priority, on cores kept busy (a CI
runner running the end-to-end tests the docs suggest): the next input waited 3-11 s for a
verdict, the stop took 11.8-19.5 s (past docker's 10 s SIGTERM grace), and a valid stream
froze 7-33 s. Each stream is now judged inline, its verdict in when its body ends. The
bounds below are hang guards, far above what is seen.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
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

from tests.helpers.scripted_server import serve
from tests.helpers.terminal import AGUI, ENV, ROOT

N = 50_000  # events a burst, as the claim's
GHOST = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "ghost", "delta": "x"}  # STREAM-3


def _burst(tid: str, rid: str, n: int, bad: int | None, kind: str) -> list[dict[str, Any]]:
    mid = f"m-{rid}"
    out: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": tid, "runId": rid},
        {"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"},
    ]
    out += [{"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": "tok "}] * (n - 4)
    out += [
        {"type": "TEXT_MESSAGE_END", "messageId": mid},
        {"type": "RUN_FINISHED", "threadId": tid, "runId": rid},
    ]
    if bad is not None and kind == "ghost":
        out.insert(bad, GHOST)
    elif bad is not None:  # TOOL_CALL_ARGS after its TOOL_CALL_END (TOOL-20), ARGS at bad + 2
        out[bad:bad] = [
            {"type": "TOOL_CALL_START", "toolCallId": "c9", "toolCallName": "f"},
            {"type": "TOOL_CALL_END", "toolCallId": "c9"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c9", "delta": "{}"},
        ]
    return out


async def _agent(request: Request) -> Response:
    """forwardedProps: n, bad (the violation's index), kind, per (events a chunk)."""
    body = orjson.loads(await request.body())
    p = body.get("forwardedProps") or {}
    events = _burst(body["threadId"], body["runId"], int(p.get("n", N)), p.get("bad"), p.get("kind", "ghost"))  # fmt: skip
    frames = [b"data: " + orjson.dumps(e) + b"\n\n" for e in events]
    per = int(p.get("per", 100))

    async def gen() -> AsyncIterator[bytes]:
        for i in range(0, len(frames), per):
            yield b"".join(frames[i : i + per])

    return StreamingResponse(gen(), media_type="text/event-stream")


AGENT = Starlette(routes=[Route("/agent", _agent, methods=["POST"])])


@contextmanager
def _proxy(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str, Path, Path]]:
    """The agent on loopback, ``agui-tools proxy`` in front of it recording and logging."""
    rec, log = tmp_path / "rec", tmp_path / "findings.jsonl"
    with serve(AGENT) as base:
        proc = subprocess.Popen(
            [*AGUI, "proxy", f"{base}/agent", "--port", "0", "--record", str(rec), "--log", str(log)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            found = re.match(r"Proxying AG-UI at (\S+) to ", proc.stdout.readline())
            assert found is not None
            yield proc, found.group(1), rec, log
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=30)


def _run(url: str, tid: str, rid: str, history: list[dict[str, Any]] | None = None, **props: Any) -> bytes:  # fmt: skip
    body = orjson.dumps({"threadId": tid, "runId": rid, "messages": history or [], "forwardedProps": props})  # fmt: skip
    with httpx.stream(
        "POST", url, content=body, headers={"content-type": "application/json"}, timeout=120
    ) as r:
        return b"".join(r.iter_raw())


def _verify(rec: Path, number: int) -> tuple[str, int] | None:
    stem = rec / f"{number:04d}"
    out = subprocess.run(
        [*AGUI, "verify", f"{stem}.sse", "--input", f"{stem}.input.json", "--json"],
        capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=120,
    )  # fmt: skip
    error = json.loads(out.stdout)["error"]
    return (error["rule"], error["index"]) if error else None


@contextmanager
def _busy_cores(count: int = 2) -> Iterator[None]:
    """``count`` busy loops at normal priority — a CI runner's tests on both cores —
    ended (by their pid) on the way out."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.3)
        yield
    finally:
        for h in hogs:
            h.kill()
            h.wait(timeout=10)


CASES = [  # (where, kind) -> the rule and the index the judge must name
    (1, "ghost", "STREAM-3", 1),
    (N // 2, "ghost", "STREAM-3", N // 2),
    (N - 3, "ghost", "STREAM-3", N - 3),  # near the very end
    (N - 1, "ghost", "STREAM-3", N - 1),  # in the last chunk, beside RUN_FINISHED
    (N - 3, "args", "TOOL-20", N - 1),  # TOOL_CALL_ARGS after its TOOL_CALL_END
]


def test_one_violation_anywhere_in_a_burst_is_said_as_verify_says_it(tmp_path: Path) -> None:
    """Guards what held: log, summary, meta and ``verify`` agree, for a violation at index
    1, in the middle, near the end and in the last chunk, the proxy stopped (SIGTERM) right
    after the last burst."""
    with _proxy(tmp_path) as (proc, url, rec, log):
        for i, (bad, kind, _, _) in enumerate(CASES):
            _run(url, f"t{i}", f"r{i}", n=N, bad=bad, kind=kind)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(f["runId"], f["rule"], f["index"]) for f in logged] == [
        (f"r{i}", rule, index) for i, (_, _, rule, index) in enumerate(CASES)
    ]
    assert f"{len(CASES)} run request(s), {len(CASES)} error(s), 0 warning(s)" in err
    for i, (_, _, rule, index) in enumerate(CASES):
        meta = json.loads((rec / f"{i + 1:04d}.meta.json").read_text())
        assert [(f["rule"], f["index"]) for f in meta["findings"]] == [(rule, index)]
        assert _verify(rec, i + 1) == (rule, index)
        assert f"run 'r{i}' event #{index}:" in err


def test_sigterm_on_busy_cores_gives_the_summary_within_10_s(tmp_path: Path) -> None:
    """SIGTERM is "how a CI job stops its services" (docker stop: SIGTERM, then SIGKILL 10 s
    later): the summary comes within that. Seen with a judging process: 11.8–19.5 s."""
    with _busy_cores(), _proxy(tmp_path) as (proc, url, _, _):
        for i in range(4):
            _run(url, f"t{i}", f"r{i}", n=N, bad=N - 3)
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=10)  # what docker stop gives it
        except subprocess.TimeoutExpired:
            proc.kill()  # what docker stop does then: the summary and the exit code are lost
            pytest.fail("no summary 10 s after SIGTERM")
    assert proc.returncode == 1
    assert "4 run request(s), 4 error(s)" in err


def test_the_next_input_after_a_burst_on_busy_cores_waits_about_what_the_docs_say(
    tmp_path: Path,
) -> None:
    """The same thread's next input is judged against the burst's verdict, in when its body
    ended: it waits for nothing. Allowed here: 5 s (a hang guard). Seen with a judging
    process at idle priority and two busy loops on the two cores: 3.0, 11.2, 9.0 s."""
    waits = []
    with _busy_cores(), _proxy(tmp_path) as (_, url, _, _):
        for i in range(3):
            _run(url, "t0", f"r{i}", n=N, bad=N - 3)
            history = [{"id": f"m-r{i}", "role": "assistant", "content": "tok " * (N - 4)}]
            t0 = time.perf_counter()
            _run(url, "t0", f"n{i}", history, n=10)
            waits.append(time.perf_counter() - t0)
    assert max(waits) < 5.0, waits


def test_back_to_back_bursts_on_busy_cores_never_stall_the_stream(tmp_path: Path) -> None:
    """With a judging process at idle priority, on cores that never idle, the 10th
    back-to-back 50,000-event burst (3.5 MB each) froze mid-stream for 7.3 s, then 33 s
    (direct: no gap over 0.01 s); judged inline, nothing falls behind. Here a frontend with a 5 s idle deadline (a hang guard) reads 11 such bursts, each on its
    own thread."""
    with _busy_cores(), _proxy(tmp_path) as (_, url, _, _):
        for i in range(11):
            body = orjson.dumps({"threadId": f"t{i}", "runId": f"r{i}", "messages": [], "forwardedProps": {"n": N}})  # fmt: skip
            timeout = httpx.Timeout(30, read=5.0)
            try:
                with httpx.stream(
                    "POST",
                    url,
                    content=body,
                    headers={"content-type": "application/json"},
                    timeout=timeout,
                ) as r:
                    for _ in r.iter_raw():
                        pass
            except httpx.ReadTimeout:
                pytest.fail(f"burst {i + 1}: no byte for 5 s mid-stream (a valid stream, stalled)")
