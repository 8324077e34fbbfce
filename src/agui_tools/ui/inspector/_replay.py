"""Replay and compose: an imported capture judged by
:func:`~agui_tools.app._capture.verify_capture`, and a hand-edited ``RunAgentInput``
enforced as the client would before anything is sent — no verdict of the page's own making.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

import orjson

from ..._errors import ProtocolViolation
from ...app._capture import CaptureVerdict, read_frames, verify_capture
from ...wire._enforce import shared_enforcer

__all__ = ["MAX_IMPORT", "imported", "input_problems", "judged", "stream_text"]

MAX_IMPORT = 16 * 1024 * 1024
"""The largest capture an import reads (bytes, once decoded)."""


class ImportRefused(Exception):
    """A file that is no capture this inspector can read (the message says why)."""


def stream_text(body: bytes) -> dict[str, str]:
    """A run's body for ``thread.json``: its text (SSE, JSON), or base64 when it is binary
    (the protobuf binding) — so an export can be imported and judged again."""
    try:
        return {"stream": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"stream": base64.b64encode(body).decode("ascii"), "streamEncoding": "base64"}


def judged(body: bytes, run_input: Mapping[str, Any] | None) -> dict[str, Any]:
    """One capture's verdict, as ``verify`` prints it (``lines``) and as ``verify --json``
    writes it (``verdict``), with each frame as read (``frames``: index, type, event)."""
    try:
        frames = read_frames(body)
        verdict: CaptureVerdict = verify_capture(body, run_input=run_input)
    except ProtocolViolation as exc:  # no stream at all (TRANS-4): said, as verify says it
        return {
            "lines": [f"not a readable capture: {exc}"],
            "verdict": {"outcome": "unreadable", "error": exc.to_json() | {"message": str(exc)}},
            "frames": [],
            "input": run_input,
        }
    document = verdict.to_json()
    document.pop("events", None)  # the frames below say it, with their index
    shown: list[dict[str, Any]] = []
    for index, frame in enumerate(frames):
        event: Any = frame
        raw = None
        if isinstance(frame, bytes | str):
            try:
                event = orjson.loads(frame)
            except orjson.JSONDecodeError:
                event, raw = (
                    None,
                    frame.decode("utf-8", "replace") if isinstance(frame, bytes) else frame,
                )
        kind = event.get("type") if isinstance(event, dict) else None
        shown.append(
            {
                "index": index,
                "type": kind if isinstance(kind, str) else "(not an event)",
                "event": event,
                "raw": raw,
            }
        )
    return {"lines": verdict.lines(), "verdict": document, "frames": shown, "input": run_input}


def imported(name: str, data: bytes) -> dict[str, Any]:
    """What the page shows of an imported file: each run it holds, judged.

    The inspector's own ``thread.json`` export holds its runs' inputs and streams: each
    run is judged with its input. Anything else is one capture (SSE, NDJSON, a JSON
    array of events, the protobuf binding), judged without one.
    """
    if len(data) > MAX_IMPORT:
        raise ImportRefused(f"{name} is larger than {MAX_IMPORT // (1024 * 1024)} MB")
    export = _thread_export(data)
    if export is None:
        return {"name": name, "kind": "capture", "runs": [{"run": 1, **judged(data, None)}]}
    runs = []
    for n, run in enumerate(export["runs"], 1):
        if not isinstance(run, dict) or not isinstance(run.get("stream"), str):
            raise ImportRefused(
                f"{name}: run {n} holds no stream (an export from before streams were kept?)"
            )
        body: bytes
        if run.get("streamEncoding") == "base64":
            try:
                body = base64.b64decode(run["stream"], validate=True)
            except binascii.Error as exc:
                raise ImportRefused(f"{name}: run {n}'s stream is not base64 ({exc})") from None
        else:
            body = run["stream"].encode("utf-8")
        run_input = run.get("input") if isinstance(run.get("input"), dict) else None
        runs.append({"run": run.get("run", n), **judged(body, run_input)})
    return {
        "name": name,
        "kind": "thread",
        "threadId": export.get("threadId"),
        "agent": export.get("agent"),
        "runs": runs,
    }


def _thread_export(data: bytes) -> dict[str, Any] | None:
    """``data`` as the inspector's ``thread.json`` (an object with ``runs``), or ``None``."""
    if data.lstrip()[:1] != b"{":
        return None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None  # NDJSON: one event per line, judged as a capture
    if isinstance(value, dict) and isinstance(value.get("runs"), list) and "type" not in value:
        return value
    return None


def input_problems(value: Any) -> list[dict[str, Any]]:
    """Why ``value`` is no ``RunAgentInput`` (empty: it is one), each at its JSON path."""
    try:
        shared_enforcer().run_input(value)
    except ProtocolViolation as exc:
        return [{"path": exc.path, "rule": exc.rule, "message": exc.explanation}]
    return []
