"""The one output channel (issue 34, item 4): a stalled reader never stops the event loop,
and what could not be written is counted and said at the end.

The queue is tried with a sink that blocks until the test lets it go (a reader
that stopped reading); the proxy as a real process whose stderr is a one-page
pipe nobody reads.
"""

from __future__ import annotations

import asyncio
import fcntl
import io
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agui_tools import _output
from agui_tools._output import OutputQueue, QueuedStream, channel
from tests.helpers.scripted_server import serve
from tests.helpers.terminal import AGUI, ENV, ROOT


class StalledReader:
    """A sink that takes nothing until :meth:`resume` (a pipe nobody reads)."""

    def __init__(self) -> None:
        self.going = threading.Event()
        self.written: list[bytes] = []

    def __call__(self, data: bytes) -> None:
        self.going.wait(30)
        self.written.append(data)

    def resume(self) -> None:
        self.going.set()


def test_a_write_from_an_event_loop_never_waits_and_what_is_dropped_is_counted() -> None:
    reader = StalledReader()
    queue = OutputQueue(limit=100)

    async def print_many() -> float:
        started = time.monotonic()
        for n in range(50):
            queue.put(reader, f"line {n:02}\n".encode(), wait=False)
        return time.monotonic() - started

    took = asyncio.run(print_many())
    assert took < 2.0  # a hang bound: 50 writes against a reader that reads nothing
    # 100 bytes are held (the line being written and those behind it); the rest dropped
    assert queue.dropped_lines == 50 - 100 // len(b"line 00\n")
    reader.resume()
    assert queue.drain()
    assert reader.written[0] == b"line 00\n"  # what was kept, in order
    assert b"".join(reader.written).decode().splitlines() == [
        f"line {n:02}" for n in range(len(reader.written))
    ]


def test_a_reader_that_never_reads_is_given_up_at_the_end_and_counted() -> None:
    reader = StalledReader()
    queue = OutputQueue()
    for n in range(3):
        queue.put(reader, f"line {n}\n".encode(), wait=False)
    started = time.monotonic()
    assert not queue.drain(stall=0.3)
    assert time.monotonic() - started < 5.0  # given up, not waited for
    assert queue.dropped_lines == 3  # the one held in the write, and the two behind it
    reader.resume()


def test_the_channel_says_at_exit_how_many_lines_could_not_be_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    said = io.StringIO()
    stalled = StalledReader()
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.setattr(sys, "stderr", said)
    real_sink_of = _output.sink_of

    def sink_of(stream: Any) -> Any:  # stdout's reader has stopped reading; stderr's has not
        return stalled if stream is sys.stdout else real_sink_of(stream)

    monkeypatch.setattr(_output, "sink_of", sink_of)

    async def loop_prints() -> None:
        for n in range(20):
            print(f"finding {n}", flush=True)

    with channel("proxy", stall=0.3):
        assert isinstance(sys.stdout, QueuedStream)
        asyncio.run(loop_prints())
    stalled.resume()
    assert said.getvalue() == "agui-tools proxy: 20 line(s) could not be written " "(their reader was not reading)\n"  # fmt: skip
    assert not isinstance(sys.stdout, QueuedStream)  # the streams are given back


def test_outside_an_event_loop_a_write_waits_for_room_and_nothing_is_lost() -> None:
    written: list[bytes] = []

    def slow(data: bytes) -> None:
        time.sleep(0.001)
        written.append(data)

    queue = OutputQueue(limit=64)
    for n in range(100):
        queue.put(slow, f"{n}\n".encode(), wait=True)
    assert queue.drain()
    assert queue.dropped_lines == 0
    assert b"".join(written) == b"".join(f"{n}\n".encode() for n in range(100))


# -- the proxy, its stderr a pipe nobody reads ------------------------------------------------


def _bad_run(thread: str, run: str) -> list[dict[str, Any]]:
    """A run whose agent breaks a rule (arguments for a call never started): a finding."""
    return [
        {"type": "RUN_STARTED", "threadId": thread, "runId": run},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "never-started-" + "x" * 200, "delta": "{}"},
        {"type": "RUN_FINISHED", "threadId": thread, "runId": run},
    ]


def _good_run(thread: str, run: str) -> list[dict[str, Any]]:
    return [
        {"type": "RUN_STARTED", "threadId": thread, "runId": run},
        {"type": "RUN_FINISHED", "threadId": thread, "runId": run},
    ]


@pytest.fixture(scope="module")
def agent() -> Iterator[str]:
    async def endpoint(request: Request) -> Response:
        asked = orjson.loads(await request.body())
        thread, run = str(asked["threadId"]), str(asked["runId"])
        events = _bad_run(thread, run) if thread.startswith("bad") else _good_run(thread, run)
        body = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)
        return Response(body, media_type="text/event-stream")

    with serve(Starlette(routes=[Route("/agent", endpoint, methods=["POST"])])) as base:
        yield f"{base}/agent"


def _run_input(thread: str, run: str) -> dict[str, Any]:
    return {
        "threadId": thread, "runId": run, "state": {}, "messages": [], "tools": [],
        "context": [], "forwardedProps": {},
    }  # fmt: skip


def test_a_stderr_nobody_reads_does_not_delay_another_threads_run(agent: str) -> None:
    read, write = os.pipe()
    fcntl.fcntl(write, 1031, 4096)  # F_SETPIPE_SZ: one page, full after a few findings
    proc = subprocess.Popen(
        [*AGUI, "proxy", agent, "--port", "0"],
        stdout=subprocess.PIPE, stderr=write, text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    os.close(write)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[3]
        with httpx.Client(timeout=30) as client:
            for n in range(60):  # ~300 bytes of findings each: the pipe is full long before
                answer = client.post(url, json=_run_input("bad", f"r{n}"))
                assert answer.status_code == 200
            took = []
            for n in range(5):
                started = time.monotonic()
                answer = client.post(url, json=_run_input(f"good-{n}", "r"))
                took.append(time.monotonic() - started)
                assert answer.status_code == 200 and b"RUN_FINISHED" in answer.content
        print(f"a run through the proxy, its stderr stalled: {max(took) * 1000:.0f} ms at most")
        assert max(took) < 2.0  # a hang bound: blocked on stderr, it would never answer
    finally:
        proc.terminate()
        said = b""
        with os.fdopen(read, "rb") as stderr:  # read now: the proxy writes the rest out
            said = stderr.read()
        proc.wait(60)
    text = said.decode()
    assert text.count("TOOL-") + text.count("could not be written") > 0, text[-2000:]
    assert "60 run request(s)" in text or "65 run request(s)" in text, text[-2000:]


@pytest.mark.slow
def test_a_log_fifo_nobody_reads_does_not_delay_a_run_and_what_was_lost_is_said(
    agent: str, tmp_path: Path
) -> None:
    fifo = tmp_path / "findings.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # there, but never reading
    fcntl.fcntl(reader, 1031, 4096)  # F_SETPIPE_SZ: one page, full after a few findings
    proc = subprocess.Popen(
        [*AGUI, "proxy", agent, "--port", "0", "--log", str(fifo)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[3]
        with httpx.Client(timeout=30) as client:
            for n in range(40):
                assert client.post(url, json=_run_input("bad", f"r{n}")).status_code == 200
            started = time.monotonic()
            answer = client.post(url, json=_run_input("good", "r"))
            took = time.monotonic() - started
        assert answer.status_code == 200 and b"RUN_FINISHED" in answer.content
        print(f"a run through the proxy, its --log stalled: {took * 1000:.0f} ms")
        assert took < 2.0  # a hang bound: blocked on the log, it would never answer
        proc.terminate()
        _, err = proc.communicate(timeout=60)  # the log is given up after 2 s, and said
    finally:
        proc.kill()
        os.close(reader)
    assert "40 run request(s)" in err or "41 run request(s)" in err, err[-2000:]
    [lost] = [line for line in err.splitlines() if "could not be written to" in line]
    assert re.fullmatch(rf"agui-tools proxy: \d+ line\(s\) could not be written to {fifo}", lost)


def test_the_channel_leaves_no_thread_behind_and_a_late_write_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    before = set(threading.enumerate())
    with channel("verify"):
        held = sys.stdout
        print("said in the command")
    deadline = time.monotonic() + 5  # a hang bound
    while any(t.is_alive() for t in set(threading.enumerate()) - before):
        assert time.monotonic() < deadline, "the writer thread outlived its command"
        time.sleep(0.01)
    print("said by a logger that kept the stream", file=held)
    assert out.getvalue() == "said in the command\nsaid by a logger that kept the stream\n"


def test_the_writer_thread_has_ended_when_the_channel_has() -> None:
    """A writer still alive as the interpreter finalizes can die holding the queue's lock
    (a daemon thread that takes a lock then the GIL, past finalization, exits): a late
    flush then waited for ever (``verify --json`` hung once at exit)."""
    with channel("verify") as queue:
        sys.stdout.write("x\n")
    thread = queue._thread
    assert thread is not None and not thread.is_alive()


def test_a_stream_used_after_its_channel_never_waits_for_the_queue_s_lock() -> None:
    """Held: the lock is held by a thread that never lets go (as one that died holding it
    does); a flush and a write through the closed channel's stream return at once."""
    sink = io.BytesIO()
    queue = OutputQueue()
    stream = QueuedStream(io.TextIOWrapper(sink, write_through=True), queue)
    queue.close()
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with queue._cond:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert held.wait(5)
    done = threading.Event()

    def late() -> None:
        stream.write("late\n")
        stream.flush()
        done.set()

    threading.Thread(target=late, daemon=True).start()
    try:
        assert done.wait(5), "a late write or flush waited for the queue's lock"
    finally:
        release.set()
    assert sink.getvalue() == b"late\n"
