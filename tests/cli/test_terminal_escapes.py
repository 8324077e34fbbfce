"""Agent-chosen text never reaches the user's terminal as controls (issue 28, item 6).

``check`` printed tool names raw (an OSC-0 title, ``CSI 2J``, an OSC-8 link),
``verify`` pending call ids and ``RUN_ERROR.message``, ``run`` the message on
stderr; ``--json`` documents carried C1 controls (orjson escapes only C0). Each
command here runs as a real process, its output piped, against a stream whose
every peer-chosen string is hostile: no ESC, no C1 CSI/OSC, no BEL may come out.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.helpers.scripted_server import serve, thread_and_run
from tests.helpers.terminal import AGUI, ENV, ROOT

EVIL = (
    "\x1b]0;pwned\x07"  # OSC 0: the window title
    "\x1b[2J\x1b[H"  # CSI: clear the screen, cursor home
    "\x1b]8;;http://evil.test/\x1b\\click\x1b]8;;\x1b\\"  # OSC 8: a hyperlink
    "\x9b31m\x9d0;c1\x9c"  # the same, as C1 controls (CSI, OSC, ST)
    "\r\u202eevil"  # overwrite the line, reverse what follows
)
FORBIDDEN = ("\x1b", "\x9b", "\x9d", "\x9c", "\x07", "\r", "\u202e")


def _stream(thread: str = "t", run: str = "r") -> list[dict[str, Any]]:
    """A run that calls a hostile tool (hostile id), says hostile text, and ends with a
    hostile RUN_ERROR — its call still pending."""
    return [
        {"type": "RUN_STARTED", "threadId": thread, "runId": run},
        {"type": "TEXT_MESSAGE_START", "messageId": f"m{EVIL}", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"m{EVIL}", "delta": EVIL},
        {"type": "TEXT_MESSAGE_END", "messageId": f"m{EVIL}"},
        {"type": "TOOL_CALL_START", "toolCallId": f"c{EVIL}", "toolCallName": f"t{EVIL}"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": f"c{EVIL}", "delta": '{"x": "' + "y" + '"}'},
        {"type": "CUSTOM", "name": EVIL, "value": EVIL},
        {"type": "RUN_ERROR", "message": EVIL, "code": EVIL},
    ]


def _violating() -> list[dict[str, Any]]:
    """A stream rejected on a peer-chosen id (its value is quoted in the violation)."""
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": f"c{EVIL}", "delta": "{}"},
    ]


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)


def agui(*args: str) -> subprocess.CompletedProcess[str]:
    """The command's output as written: bytes, decoded without newline translation
    (text mode would turn a carriage return into a line feed)."""
    proc = subprocess.run(
        [*AGUI, *args], input=b"", capture_output=True, timeout=300, env=ENV, cwd=ROOT
    )  # fmt: skip
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    )


def assert_inert(proc: subprocess.CompletedProcess[str], *, said: str = "pwned") -> None:
    """No control reached either stream — and the hostile text was shown, escaped."""
    for name, text in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        found = {repr(c) for c in FORBIDDEN if c in text}
        assert not found, f"{found} on {name}: {text[-3000:]!r}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert said in proc.stdout + proc.stderr


@pytest.mark.parametrize("json_out", [False, True], ids=["human", "json"])
@pytest.mark.parametrize("events", [_stream(), _violating()], ids=["run-error", "violation"])
def test_verify_shows_peer_text_inert(
    tmp_path: Path, events: list[dict[str, Any]], json_out: bool
) -> None:
    capture = tmp_path / "hostile.sse"
    capture.write_bytes(_sse(events))
    proc = agui("verify", str(capture), *(["--json"] if json_out else []))
    assert proc.returncode in (0, 1), proc.stderr
    assert_inert(proc)
    if json_out and events[-1]["type"] == "RUN_ERROR":  # the same data, escaped the JSON way
        [run] = orjson.loads(proc.stdout)["runs"]
        assert run["pending"] == [f"c{EVIL}"]


@pytest.fixture(scope="module")
def hostile_agent() -> Iterator[str]:
    """A server answering every POST with the hostile run, in the thread and run asked for
    (so a client follows it to its end)."""

    async def endpoint(request: Request) -> Response:
        thread, run = await thread_and_run(request)
        return Response(_sse(_stream(thread, run)), media_type="text/event-stream")

    with serve(Starlette(routes=[Route("/agent", endpoint, methods=["POST"])])) as base:
        yield f"{base}/agent"


@pytest.mark.parametrize("json_out", [False, True], ids=["human", "json"])
def test_run_shows_peer_text_inert(hostile_agent: str, json_out: bool) -> None:
    proc = agui("run", hostile_agent, "hi", "--yes", *(["--json"] if json_out else []))
    assert proc.returncode == 1, proc.stderr
    assert_inert(proc)


@pytest.mark.parametrize("json_out", [False, True], ids=["human", "json"])
def test_check_shows_peer_text_inert(hostile_agent: str, json_out: bool, tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    proc = agui(
        "check", hostile_agent, "--timeout", "5", "--html", str(html),
        *(["--json"] if json_out else []),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert_inert(proc)
    page = html.read_text(encoding="utf-8")
    assert not [c for c in FORBIDDEN if c in page]  # a report file is cat-ed too
