"""Adversarial findings against ``agui-tools mock`` / ``mock_app`` (attack-mock).

Each test states what the user docs (docs/proxy.md "Test my frontend without a
model", docs/cli.md ``mock``, docs/api.md ``mock_app``) promise and fails while
the mock does otherwise.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from agui_tools import UsageError
from agui_tools.app._recorded import recorded_runs
from agui_tools.testing import serving
from agui_tools.transport import mock_app
from agui_tools.transport._mock import timing_notes
from tests.helpers.hostile_folder import INPUT

SRC = Path(__file__).resolve().parents[2] / "src"


def _sse(events: list[dict]) -> str:
    return "".join("data: " + json.dumps(e) + "\n\n" for e in events)


def _text_run(extra: list[dict] | None = None) -> list[dict]:
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        *(extra or []),
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "hi"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]


async def _post(url: str, accept: str = "text/event-stream") -> tuple[int, bytes, float]:
    started = time.monotonic()
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(
            url, json=INPUT, headers={"accept": accept, "content-type": "application/json"}
        )
    return response.status_code, response.content, time.monotonic() - started


def test_a_recorded_timestamp_of_zero_is_a_timestamp(tmp_path: Path) -> None:
    """``--timing recorded`` waits what the ``timestamp`` fields say; 0 is a valid
    timestamp (an integer), so 0 → 1000 is a one-second gap. The mock treats 0 as
    "no timestamp" and sends at once (1733000000000 → 1733000001000 is waited)."""
    events = _text_run()
    events[0]["timestamp"] = 0
    events[1]["timestamp"] = 1000
    capture = tmp_path / "zero.sse"
    capture.write_text(_sse(events))

    async def main() -> float:
        async with serving(mock_app(capture, path="/agent", timing="recorded")) as base:
            status, _, elapsed = await _post(f"{base}/agent")
            assert status == 200
            return elapsed

    assert asyncio.run(main()) >= 0.9


def _deep_run(depth: int) -> list[dict]:
    """A run whose STATE_SNAPSHOT nests ``depth`` lists deep (``depth + 1`` levels with
    the event object)."""
    deep = json.loads("[" * depth + "]" * depth)
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "STATE_SNAPSHOT", "snapshot": deep},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]


def test_an_event_nested_deeper_than_sse_writes_is_refused_at_start(tmp_path: Path) -> None:
    """The library reads captures nested up to 1024 levels; an SSE stream is written
    254 at most (the event object counted). Over SSE a STATE_SNAPSHOT nested 300 deep
    was a RUN_ERROR "internal error" mid-stream while the binary binding served it.
    Decided: a mock serves what both bindings can send — such a capture is refused at
    start, the file, the event and the limit named (docs/proxy.md)."""
    capture = tmp_path / "deep.json"
    capture.write_text(json.dumps(_deep_run(300)))
    with pytest.raises(UsageError) as refused:
        mock_app(capture, path="/agent", timing="fast")
    said = str(refused.value)
    assert str(capture) in said and "event 1 (STATE_SNAPSHOT)" in said
    assert "at most 254 levels" in said


PROTO = "application/vnd.ag-ui.event+proto"


@pytest.mark.parametrize(("depth", "accept"), [(253, "text/event-stream"), (45, PROTO)])
def test_an_event_as_deep_as_its_binding_carries_is_served(
    tmp_path: Path, depth: int, accept: str
) -> None:
    """The boundary: 253 lists in the event object (254 levels) is served over SSE;
    in the binary binding, as deep as protobuf's decoders read back."""
    capture = tmp_path / "deep.json"
    capture.write_text(json.dumps(_deep_run(depth)))

    async def main() -> list[dict]:
        async with serving(mock_app(capture, path="/agent", timing="fast")) as base:
            status, body, _ = await _post(f"{base}/agent", accept=accept)
            assert status == 200, body
            return [e for r in recorded_runs(body, source="answer") for e in r.events]

    types = [e["type"] for e in asyncio.run(main())]
    assert types == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_FINISHED"]


def test_a_run_the_binary_binding_cannot_carry_is_406_for_protobuf_only(tmp_path: Path) -> None:
    """Over the binary binding, a value no protobuf decoder reads back (253 deep) or a
    timestamp it has no field for (1.5, "x", true, 2**70) was a RUN_ERROR "internal
    error in the agent server" mid-stream. Decided at start: that run is served over SSE
    only; a protobuf request for it is answered 406 (TRANS-7) naming the event, before
    any stream, and does not use the run up (the next SSE request gets it)."""
    runs = {
        "deep": _deep_run(253),
        "float": _text_run([]),
        "string": _text_run([]),
        "bool": _text_run([]),
        "huge": _text_run([]),
    }
    runs["float"][2]["timestamp"] = 1.5
    runs["string"][2]["timestamp"] = "1733000000000"
    runs["bool"][2]["timestamp"] = True
    runs["huge"][2]["timestamp"] = 2**70
    for name, events in runs.items():
        capture = tmp_path / f"{name}.json"
        capture.write_text(json.dumps(events))

        async def main() -> tuple[tuple[int, bytes, float], tuple[int, bytes, float]]:
            async with serving(mock_app(capture, path="/agent", timing="fast")) as base:  # noqa: B023
                return await _post(f"{base}/agent", accept=PROTO), await _post(f"{base}/agent")

        (proto_status, proto_body, _), (sse_status, sse_body, _) = asyncio.run(main())
        assert proto_status == 406, (name, proto_body)
        error = json.loads(proto_body)["error"]
        assert error["rule"] == "TRANS-7", (name, error)
        said = "event 1 (STATE_SNAPSHOT)" if name == "deep" else "event 2 (TEXT_MESSAGE_CONTENT)"
        assert said in error["message"] and "text/event-stream" in error["message"], error
        assert name == "deep" or "64-bit integer" in error["message"], error
        assert sse_status == 200 and b"RUN_ERROR" not in sse_body, name
        assert b"RUN_FINISHED" in sse_body, name


def _start_mock(args: list[str]) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agui_tools", "mock", *args, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    line = proc.stdout.readline()
    assert line.startswith("Serving mock AG-UI agent at "), line
    return proc, line.split()[-1]


def _reading(url: str) -> tuple[threading.Thread, list[bytes]]:
    """A frontend reading INPUT's streamed answer in a daemon thread, to its end or its
    cut (an HTTP error is the end it gets): the thread, started, and the bytes it read."""
    got: list[bytes] = []

    def read() -> None:
        try:
            with httpx.stream(
                "POST", url, json=INPUT, headers={"accept": "text/event-stream"}, timeout=40
            ) as response:
                got.extend(response.iter_raw())
        except httpx.HTTPError:
            pass

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader, got


def _stopped_within(proc: subprocess.Popen, seconds: float, what: str) -> str:
    """The stderr of ``proc`` once the Ctrl-C just sent has stopped it within ``seconds``.
    Past that, the test fails with what a second Ctrl-C then makes it say (a traceback
    was the finding), and it is killed after 5 s more."""
    try:
        return proc.communicate(timeout=seconds)[1]
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        raise AssertionError(
            f"one Ctrl-C did not stop {what} within {seconds:g} s; then: {err[-600:]}"
        ) from None


def _mock_mid_stream(tmp_path: Path) -> tuple[subprocess.Popen, threading.Thread, list[bytes]]:
    """``agui-tools mock`` serving a run stalled after event 1 (``stall:1:30``) to a
    frontend reading it: the mock, and :func:`_reading`'s thread and bytes, a second in."""
    capture = tmp_path / "run.sse"
    capture.write_text(_sse(_text_run()))
    proc, url = _start_mock([str(capture), "--fault", "stall:1:30"])
    reader, got = _reading(url)
    time.sleep(1.0)
    return proc, reader, got


def test_ctrl_c_stops_the_mock_while_a_stream_is_in_flight(tmp_path: Path) -> None:
    """ "Ctrl-C stops it in one line (exit 0)". With a client reading a stalled
    stream (``stall:1:30``) one Ctrl-C does not stop the mock: it waits for the
    stream to end (any long recorded gap or stall), and a second Ctrl-C prints a
    uvicorn traceback ("Exception in ASGI application") before the line."""
    proc, reader, got = _mock_mid_stream(tmp_path)
    proc.send_signal(signal.SIGINT)
    err = _stopped_within(proc, 8, "the mock")
    assert proc.returncode == 0
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("agui-tools mock: stopped after 1 request(s)"), err
    assert last.endswith("1 stream(s) still being sent ended with RUN_ERROR after 2 s"), err
    reader.join(5)
    body = b"".join(got)  # the stalled stream ends with a terminal event, then its body
    assert body.startswith(b"data: {") and b'"code":"ServerShuttingDown"' in body, body


def test_a_second_ctrl_c_during_the_grace_prints_no_traceback(tmp_path: Path) -> None:
    """A second Ctrl-C (during the grace) cancelled the stream mid-``await``: uvicorn's
    "Exception in ASGI application" traceback (CancelledError out of ``_quiet``). Now
    the stop is the mock's own (its grace, then RUN_ERROR): still one line, exit 0."""
    proc, reader, got = _mock_mid_stream(tmp_path)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=8)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "Exception in ASGI" not in err, err
    assert err.strip().splitlines()[-1].startswith("agui-tools mock: stopped after 1 request(s)")
    reader.join(5)
    body = b"".join(got)  # a stream was in flight, and the mock's stop ended it
    assert body.startswith(b"data: {") and b'"code":"ServerShuttingDown"' in body, body


SLOW_AGENT = """
import asyncio

async def agent(run):
    await run.text("thinking")
    await asyncio.sleep(60)
"""


def test_ctrl_c_stops_serve_while_an_agent_is_mid_run(tmp_path: Path) -> None:
    """``serve`` shares ``serve_on``: an agent waiting (on its model) mid-stream kept one
    Ctrl-C waiting as the mock's stall did. Stopped within its grace (#28), exit 0."""
    (tmp_path / "slow_agent.py").write_text(SLOW_AGENT)
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agui_tools",
            "serve",
            "slow_agent:agent",
            "--port",
            "0",
            "--shutdown-grace",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("Serving AG-UI agent at "), line
    reader, got = _reading(line.split()[-1])
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    err = _stopped_within(proc, 8, "serve")
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    reader.join(5)
    body = b"".join(got)
    assert b"thinking" in body and b"ServerShuttingDown" in body, body[-300:]


def test_recorded_gaps_are_capped_and_backwards_ones_wait_nothing() -> None:
    """Timestamps mixing relative ms and epoch ms, or going backwards (-1e20), made
    ``--timing recorded`` wait for ever (keep-alives defeat a client's read timeout)."""
    stamps = [0, 1000, 1733000000000, -1e20, 1e20, None, 1e20 + 500]
    events = [{"type": "CUSTOM", "name": "n", "value": i} for i in range(len(stamps))]
    for event, stamp in zip(events, stamps, strict=True):
        if stamp is not None:
            event["timestamp"] = stamp
    run = recorded_runs(_sse(events).encode(), source="gaps")[0]
    gaps = run.gaps()
    assert gaps[0] is None and gaps[1] == 1.0 and gaps[5] is None
    assert gaps[3] is not None and gaps[3] < 0
    assert run.delays(max_gap=5) == [0.0, 1.0, 5.0, 0.0, 5.0, 0.0, 0.0]
    notes = timing_notes(run, factor=1.0, max_gap=5)
    assert notes[0].startswith("2 gap(s) capped at --max-gap 5 s")
    assert notes[1] == "1 timestamp(s) earlier than the event before (no wait)"
    assert timing_notes(run, factor=0.0, max_gap=5) == [notes[1]]  # fast: nothing capped


def test_a_huge_recorded_gap_is_served_within_the_max_gap(tmp_path: Path) -> None:
    events = _text_run()
    events[0]["timestamp"] = 1000  # relative ms, then epoch ms: a 55-year gap
    events[1]["timestamp"] = 1733000000000
    events[2]["timestamp"] = -1e20  # backwards: no wait
    capture = tmp_path / "gap.sse"
    capture.write_text(_sse(events))

    async def main() -> tuple[int, bytes, float]:
        app = mock_app(capture, path="/agent", timing="recorded", max_gap=0.5)
        async with serving(app) as base:
            return await asyncio.wait_for(_post(f"{base}/agent"), 20)

    status, body, elapsed = asyncio.run(main())
    assert status == 200 and b"RUN_FINISHED" in body
    assert elapsed >= 0.5  # the capped gap is still waited


def test_the_start_up_summary_warns_of_capped_gaps(tmp_path: Path) -> None:
    events = _text_run()
    events[0]["timestamp"] = 1000
    events[1]["timestamp"] = 1733000000000
    capture = tmp_path / "gap.sse"
    capture.write_text(_sse(events))
    proc, _ = _start_mock([str(capture), "--max-gap", "2"])
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=8)
    lines = err.splitlines()
    assert lines[0].endswith("timing recorded, max gap 2 s"), lines
    assert lines[2].startswith("    warning: 1 gap(s) capped at --max-gap 2 s"), lines


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--fault", "CUT:3"], "unknown kind 'CUT' (kinds are lower-case: cut)"),
        (["--fault", "cut: 3"], "' 3' is not a whole number (ASCII digits 0-9)"),
        (["--fault", "cut:\u0663"], "is not a whole number (ASCII digits 0-9)"),
        (["--fault", "cut:1@ 2"], "' 2' is not a whole number"),
        (["--fault", "drip:1e-400"], "'1e-400' is not a number of seconds"),
        (["--fault", "stall:1:inf"], "'inf' is not a number of seconds"),
        (["--fault", "drip:-1"], "'-1' is not a number of seconds"),
        (["--timing", "x 2"], "timing 'x 2': use recorded"),
        (["--timing", "X2"], "timing 'X2': use recorded"),
        (["--timing", "x1e400"], "timing 'x1e400': use recorded"),
        (["--timing", "x\u0662"], "use recorded"),
        (["--max-gap", "-1"], "max gap '-1'"),
        (["--max-gap", "4000"], "use 0 to 3600 seconds"),
    ],
)
def test_fault_timing_and_gap_specs_are_read_strictly(
    tmp_path: Path, flags: list[str], says: str
) -> None:
    """``int()``/``float()`` took spaces, any case, non-ASCII digits and exponents that
    round to 0: each is now bad usage, said in one line, exit 2."""
    capture = tmp_path / "run.sse"
    capture.write_text(_sse(_text_run()))
    done = subprocess.run(
        [sys.executable, "-m", "agui_tools", "mock", str(capture), "--port", "0", *flags],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(SRC)),
        timeout=30,
    )
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert says in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_a_rejected_run_names_its_rule_once(tmp_path: Path) -> None:
    """The start-up line said ``rejected: [RUN-1] [RUN-1] event #0 …``."""
    capture = tmp_path / "bad.sse"
    capture.write_text(_sse(_text_run()[1:]))  # no RUN_STARTED
    proc, _ = _start_mock([str(capture)])
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=8)
    line = err.splitlines()[1]
    assert "rejected: [RUN-1] event #0" in line, line
    assert line.count("[RUN-1]") == 1, line


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ('{"error": {"message": "busy"}}', "application/json"),
        ("[1, 2]", "application/json"),
        ("try later: busy", "text/plain; charset=utf-8"),
        ("{not json", "text/plain; charset=utf-8"),
    ],
)
def test_a_status_fault_body_that_is_json_is_sent_as_json(
    tmp_path: Path, body: str, kind: str
) -> None:
    capture = tmp_path / "run.sse"
    capture.write_text(_sse(_text_run()))

    async def main() -> httpx.Response:
        app = mock_app(capture, path="/agent", timing="fast", faults=[f"status:503:{body}"])
        async with serving(app) as base, httpx.AsyncClient(timeout=30) as client:
            return await client.post(f"{base}/agent", json=INPUT)

    answer = asyncio.run(main())
    assert answer.status_code == 503 and answer.text == body
    assert answer.headers["content-type"] == kind
