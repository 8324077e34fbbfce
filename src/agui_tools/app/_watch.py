"""Live traffic between a frontend and an agent, judged on both sides (``agui-tools proxy``).

Sans-I/O: the proxy hands bytes in and takes findings (and, strict, the bytes to forward)
out. Two judges, built from the library's own:

* :class:`StreamWatch` judges the agent as ``verify`` does (the loop of
  :func:`~agui_tools.app._capture.replay`); producer MUSTs
  (:data:`~agui_tools.wire._verify.PRODUCER_MUSTS`) are errors, as ``check`` counts them.
* :class:`ThreadLedger` judges each run input as our server does (:meth:`AgentEndpoint.judge_body
  <agui_tools.transport._server.AgentEndpoint.judge_body>`), then against the thread's
  previous run: pending calls answered (FE-8, FE-7), interrupts covered (INT-6/7/8), the
  messages it ended with still at the head of the history (INPUT-5, against a digest of
  their ids, so a thread costs the same whatever its history's length). Incremental: it
  holds the reader's unfinished event and the folded thread, never the stream.

A :class:`WatchFinding` is one JSON line of the proxy's log.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

import orjson

from .._errors import ProtocolViolation, ProtocolWarning, UsageError
from ..wire._codec import encode_json
from ..wire._framing import (
    PROTO_MEDIA_TYPE,
    SSE_MEDIA_TYPE,
    BrokenFrame,
    NDJSONReader,
    SSEReader,
    ndjson_frame,
    sse_frame,
)
from ..wire._kinds import WireEvent
from ..wire._pipeline import ConsumerPipeline, StreamResult
from ..wire._proto_framing import ProtoReader
from ..wire._verify import PRODUCER_MUSTS, Limits
from ._capture import fold_frame, sse_unfinished_at, truncation_at
from ._reducer import ThreadState
from ._resume import check_resume
from ._runs import RunResult

__all__ = [
    "BINDINGS",
    "InputJudged",
    "StreamOutcome",
    "StreamWatch",
    "ThreadLedger",
    "WatchFinding",
    "binding_of",
]

Severity = Literal["error", "warning"]
Side = Literal["agent", "frontend", "proxy"]
"""Whose doing a finding is: ``proxy`` for what the proxy itself could not do."""

BINDINGS: Final = {
    SSE_MEDIA_TYPE: "sse",
    PROTO_MEDIA_TYPE: "proto",
    "application/x-ndjson": "ndjson",
    "application/jsonl": "ndjson",
}
"""Response media types judged as event streams, and their binding."""

_SSE_EVENT_END: Final = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_SEPARATORS: Final = (b"\n\n", b"\r\n\r\n", b"\r\r")


def binding_of(content_type: str | None) -> str | None:
    """The binding a response's ``Content-Type`` names (``None``: not an event stream)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return BINDINGS.get(media)


@dataclass(frozen=True)
class WatchFinding:
    """One thing the proxy saw break a rule (or bend one: ``severity="warning"``)."""

    rule: str
    severity: Severity
    side: Side
    message: str
    thread_id: str | None = None
    run_id: str | None = None
    index: int | None = None
    """The event's position in its response stream (agent side); ``None`` for input."""
    ids: Mapping[str, str] = field(default_factory=dict)
    status: int | None = None
    """Frontend side: the status our server answers such an input with (``--strict``
    answers it so); ``None`` when our server would serve it."""
    problem: Mapping[str, Any] | None = None
    """Frontend side: the ``error`` member of that answer's JSON body."""

    def to_json(self) -> dict[str, Any]:
        """The structured log's line (one JSON object)."""
        out: dict[str, Any] = {
            "rule": self.rule,
            "severity": self.severity,
            "side": self.side,
            "threadId": self.thread_id,
            "runId": self.run_id,
            "index": self.index,
            "message": self.message,
        }
        calls = self.tool_call_ids
        if calls:
            out["toolCallIds"] = calls
        if self.ids:
            out["ids"] = dict(self.ids)
        if self.status is not None:
            out["status"] = self.status
        return out

    @property
    def tool_call_ids(self) -> list[str]:
        raw = self.ids.get("toolCallId") or self.ids.get("toolCallIds") or ""
        return [c for c in raw.split(",") if c]

    def line(self) -> str:
        """One line for a person (peer text: made safe for a terminal by the caller)."""
        where: list[str] = [self.side]
        if self.thread_id is not None:
            where.append(f"thread {self.thread_id!r}")
        if self.run_id is not None:
            where.append(f"run {self.run_id!r}")
        if self.index is not None:
            where.append(f"event #{self.index}")
        if self.status is not None:
            where.append(f"(our server answers {self.status})")
        return f"{self.severity} [{self.rule}] {' '.join(where)}: {self.message}"


def _said(rule: str, index: int | None, what: object) -> str:
    """A violation's or warning's text without what the finding carries apart: its rule and
    its event's position ("TOOL_CALL_RESULT: the producer answered …")."""
    text = str(what).removeprefix(f"[{rule}] ")
    return text.removeprefix(f"event #{index} ") if index is not None else text


def _ids_text(ids: Mapping[str, Any]) -> dict[str, str]:
    return {k: v if isinstance(v, str) else ",".join(map(str, v)) for k, v in ids.items()}


# -- the agent: its response stream ------------------------------------------------------


@dataclass(frozen=True)
class StreamOutcome:
    """What a stream left its thread with, for the next input's judge (plain data: it
    crosses from a judging process to the proxy's)."""

    run_id: str | None
    status: str
    """The last run's status, or ``"rejected"`` when the stream broke a fatal rule."""
    pending: tuple[str, ...]
    interrupts: tuple[dict[str, Any], ...]
    held: int
    """How many messages (with an id) the thread held when the stream ended …"""
    digest: bytes
    """… and the digest of their ids, in order (:func:`history_digest`)."""


class StreamWatch:
    """One response stream, judged as it passes (see the module's docstring).

    Feed chunks with :meth:`feed` (after forwarding them) or, in strict mode, with
    :meth:`admit` (before: it says what may be forwarded); then :meth:`close`.
    ``on_finding`` is called with each finding as it is made; with ``keep=False`` that
    is all (:attr:`findings` stays empty, the pipeline keeps no warning): the proxy
    counts them itself, and a stream earning a warning per event costs it nothing.
    """

    def __init__(
        self,
        binding: str,
        *,
        run_input: Mapping[str, Any] | None = None,
        limits: Limits | None = None,
        on_finding: Callable[[WatchFinding], None] | None = None,
        keep: bool = True,
    ) -> None:
        self.binding = binding
        self.keep = keep
        self.limits = limits or Limits()
        max_bytes = self.limits.max_event_bytes
        self._reader: SSEReader | ProtoReader | NDJSONReader
        if binding == "proto":
            self._reader = ProtoReader(max_event_bytes=max_bytes)
        elif binding == "ndjson":
            self._reader = NDJSONReader(max_event_bytes=max_bytes)
        else:
            self._reader = SSEReader(max_event_bytes=max_bytes)
        self._input: Mapping[str, Any] = run_input or {}
        self._on_finding = on_finding
        self.findings: list[WatchFinding] = []
        self.fatal: WatchFinding | None = None
        """The first error: the finding a strict proxy ends the stream on."""
        self.cut = False
        """Strict: the stream was ended at :attr:`fatal` (the rest is not the agent's to answer
        for: no truncation is said of it)."""
        self.failed = False
        """The pipeline rejected the stream: nothing after it is judged (as ``verify``)."""
        self.size = 0
        self.result: StreamResult | None = None
        self._tail = bytearray()  # SSE: the bytes since the last event's end …
        self._tail_at = 0  # … and where they start in the body
        self._strict = False  # fed by admit(): the stream ends at its first error
        self._pending = bytearray()  # strict: bytes judged but not yet forwarded
        self._frame_head = b""  # strict, binary: the current frame's header so far …
        self._frame_have = 0  # … and how many of its bytes have arrived
        self._per_frame = False  # strict: judged a frame at a time from here on
        self.pipe = ConsumerPipeline(
            run_input=run_input, limits=self.limits, on_warning=self._warned
        )
        self.thread = _Folded(
            self._input.get("messages") or (),
            self._input.get("state"),
            on_warning=self.pipe.record_warning,
            limits=self.limits,
        )

    # -- feeding ---------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> None:
        """Judge a chunk already forwarded."""
        self._count(chunk)
        if not self.failed:
            self._judge(self._frames(chunk))

    def admit(self, chunk: bytes) -> tuple[bytes, WatchFinding | None]:
        """Strict mode: judge ``chunk`` before any of it is forwarded.

        Returns the bytes that may go to the frontend now — whole events that broke
        nothing; an event's first bytes wait for its last — and the finding that
        ends the stream when one did (the bytes returned precede the event that
        broke the rule; nothing of it or after it is forwarded).

        An SSE chunk is read and judged whole, in the pipeline's own loop, up to its
        first error; only a chunk holding one is read again, an event at a time from
        the reader's state before it, to find where that event begins.
        """
        self._count(chunk)
        self._strict = True
        if self.fatal is not None or self.failed:
            return b"", self.fatal
        reader = self._reader
        if not isinstance(reader, SSEReader):
            return self._admit_pieces(chunk)
        end = self._last_event_end(chunk)
        before = reader.copy() if end >= 0 else None  # one piece: nothing to find
        judged = self._judge_whole(reader.feed_frames(chunk))
        pending = self._pending
        if self.fatal is not None:
            if before is None:
                pending.clear()
                self.cut = True
                return b"", self.fatal
            self._reader = before
            return self._admit_pieces(chunk, breaking=judged - 1)
        if not reader.has_partial_event:
            out = bytes(pending) + chunk
            pending.clear()
        elif end >= 0:
            out = bytes(pending) + chunk[:end]
            pending[:] = chunk[end:]
        else:
            pending += chunk
            out = b""
        return out, None

    def _admit_pieces(
        self, chunk: bytes, breaking: int | None = None
    ) -> tuple[bytes, WatchFinding | None]:
        """:meth:`admit` an event at a time: each piece read, judged and forwarded once
        whole — or, ``breaking`` given (the chunk's frames were judged, that one broke a
        rule), only read, to cut before the piece holding that frame."""
        out = bytearray()
        pending = self._pending
        seen = 0
        for piece in self._pieces(chunk):
            pending += piece
            frames = self._frames(piece)
            if breaking is None:
                self._judge(frames)
            seen += len(frames)
            if self.fatal is not None and (breaking is None or seen > breaking):
                pending.clear()
                self.cut = True
                return bytes(out), self.fatal
            if not self._reader.has_partial_event:
                out += pending
                pending.clear()
        return bytes(out), None

    def _last_event_end(self, chunk: bytes) -> int:
        """Where in ``chunk`` the last piece :meth:`_pieces` cuts it into before its tail
        ends (-1: it is one piece): the last separator's run of CRs and LFs matched from
        its start, as the pieces are."""
        carry = bytes(self._pending[-3:])
        data = carry + chunk
        at = max(data.rfind(b"\n\n"), data.rfind(b"\r\r"), data.rfind(b"\r\n\r\n"))
        if at < 0:
            return -1
        end = -1
        for match in _SSE_EVENT_END.finditer(data, len(data[:at].rstrip(b"\r\n"))):
            end = match.end()
        return end - len(carry) if end > len(carry) else -1

    def run_error(self, finding: WatchFinding) -> bytes:
        """The ``RUN_ERROR`` a strict proxy ends the stream with, framed for its binding."""
        where = f" at event #{finding.index}" if finding.index is not None else ""
        event = {
            "type": "RUN_ERROR",
            "message": f"[{finding.rule}] agui-tools proxy --strict ended the stream: the agent "
            f"broke {finding.rule}{where}: {finding.message}",
            "code": finding.rule,
        }
        if self.binding == "proto":
            from ..wire._proto_codec import encode_proto_event
            from ..wire._proto_framing import proto_frame

            return proto_frame(encode_proto_event(event))
        if self.binding == "ndjson":
            return ndjson_frame(encode_json(event))
        return sse_frame(encode_json(event))

    def outcome(self, run_input: Mapping[str, Any]) -> StreamOutcome | None:
        """The stream's :class:`StreamOutcome` (closing it); ``None``: it started no run of
        ``run_input``'s thread."""
        result = self.close()
        ids = [m["id"] for m in self.thread.messages if isinstance(m.get("id"), str)]
        if self._strict and self.cut and self.fatal is not None:
            # strict ended the stream at its fatal event with a RUN_ERROR: the frontend's
            # next input continues the run as it was forwarded (errored), not as sent
            return StreamOutcome(self._run_id(), "error", (), (), len(ids), history_digest(ids))
        thread_id = run_input.get("threadId")
        runs = [r for r in result.runs if r.thread_id in (None, thread_id)]
        pending: tuple[str, ...] = ()
        interrupts: tuple[dict[str, Any], ...] = ()
        if result.error is not None:
            status = "rejected"
        elif runs:
            run = runs[-1]
            status, pending, interrupts = run.status, tuple(run.pending), tuple(run.interrupts)
        else:
            return None
        run_id = runs[-1].run_id if runs else run_input.get("runId")
        return StreamOutcome(
            run_id,
            status,
            pending,
            interrupts,
            len(ids),
            history_digest(ids),
        )

    def close(self) -> StreamResult:
        """The body ended (or was cut): the verdict, with a truncated run said (TRANS-2)."""
        if self.result is not None:
            return self.result
        if isinstance(self._reader, NDJSONReader) and not self.failed:
            self._judge(self._reader.close())
        result = self.result = self.pipe.close()
        cut = None if self.cut else truncation_at(result, self.size, self._unfinished)
        if cut is not None:
            self._found(
                WatchFinding(
                    "TRANS-2",
                    "error",
                    "agent",
                    cut["message"],
                    thread_id=self._thread_id(),
                    run_id=cut["runId"],
                    index=cut["index"],
                )
            )
        return result

    # -- stages ----------------------------------------------------------------------------

    def _count(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.binding != "sse" or self.failed:
            return
        tail = self._tail
        tail += chunk
        found = [at + len(sep) for sep in _SEPARATORS if (at := tail.rfind(sep)) >= 0]
        if found:  # the unfinished event (if any) starts after the last one
            end = max(found)
            self._tail_at += end
            del tail[:end]

    def _unfinished(self) -> int | None:
        if isinstance(self._reader, ProtoReader):
            pending = self._reader.pending_frame()
            return None if pending is None else pending.offset
        if self.binding != "sse":
            return None
        start = sse_unfinished_at(bytes(self._tail))
        return None if start is None else self._tail_at + start

    def _frames(self, chunk: bytes) -> list[Any]:
        if isinstance(self._reader, NDJSONReader):
            try:
                return list(self._reader.feed(chunk))
            except ProtocolViolation as exc:
                return [BrokenFrame(exc)]
        return self._reader.feed_frames(chunk)

    def _pieces(self, chunk: bytes) -> Iterator[bytes]:
        """``chunk`` cut where an event may end, so each piece is judged before it is sent."""
        if self.binding == "proto":
            yield from self._frame_pieces(chunk)
            return
        if self.binding == "ndjson":
            ends = [m + 1 for m in _positions(chunk, b"\n")]
        else:
            # a separator may begin in the bytes before this chunk
            carry = bytes(self._pending[-3:])
            ends = [
                m.end() - len(carry)
                for m in _SSE_EVENT_END.finditer(carry + chunk)
                if m.end() > len(carry)
            ]
        start = 0
        for end in ends:
            yield chunk[start:end]
            start = end
        if start < len(chunk):
            yield chunk[start:]

    def _frame_pieces(self, chunk: bytes) -> Iterator[bytes]:
        """The binary binding's frames: a 4-byte big-endian length, then the event."""
        pos, n = 0, len(chunk)
        while pos < n:
            need = 4 - len(self._frame_head)
            if need > 0:
                self._frame_head += chunk[pos : pos + need]
                if len(self._frame_head) < 4:
                    self._frame_have += n - pos
                    yield chunk[pos:]
                    return
            total = 4 + int.from_bytes(self._frame_head, "big")
            end = min(n, pos + total - self._frame_have)
            self._frame_have += end - pos
            yield chunk[pos:end]
            pos = end
            if self._frame_have == total:
                self._frame_head, self._frame_have = b"", 0

    def _judge(self, frames: list[Any]) -> None:
        """The loop of :func:`~agui_tools.app._capture.replay` (one :func:`fold_frame` a
        frame), a chunk's frames at a time — not strict, in the pipeline's own loop
        (``feed_many``, each event folded as it is delivered: the same verdict, without
        a call per frame)."""
        pipe, thread = self.pipe, self.thread
        if not self._strict:
            if frames:
                try:
                    pipe.feed_many(frames, thread.apply)
                except ProtocolViolation:
                    self.failed = True
                    self._rejected(pipe.error)
            return
        for frame in frames:
            if fold_frame(pipe, thread, frame):
                self.failed = True
                self._rejected(pipe.error)
                return
            if self.fatal is not None and self._strict:
                return  # strict: nothing after the breaking event is judged either

    def _judge_whole(self, frames: list[Any]) -> int:
        """Strict: judge a chunk's frames up to the first that breaks a rule, as
        :meth:`_judge` would one by one; how many were judged (that one the last).
        Plain events go through the pipeline's own loop; from a chunk event (its lanes
        expand later events too) or a broken frame on, a frame at a time."""
        pipe, thread = self.pipe, self.thread
        taken = 0
        if not self._per_frame:

            def plain() -> Iterator[str]:
                nonlocal taken
                for frame in frames:
                    if self.fatal is not None:
                        return
                    if frame.__class__ is not str or "CHUNK" in frame:
                        self._per_frame = True
                        return
                    taken += 1
                    yield frame

            try:
                pipe.feed_many(plain(), thread.apply)
            except ProtocolViolation:
                self.failed = True
                self._rejected(pipe.error)
                return taken
        for frame in frames[taken:]:
            if self.fatal is not None:
                break
            taken += 1
            if fold_frame(pipe, thread, frame):
                self.failed = True
                self._rejected(pipe.error)
                break
        return taken

    def _rejected(self, error: ProtocolViolation | None) -> None:
        if error is None:  # pragma: no cover - a failed pipeline has its error
            return
        self._found(
            WatchFinding(
                error.rule,
                "error",
                "agent",
                _said(error.rule, error.index, error),
                thread_id=self._thread_id(),
                run_id=self._run_id(),
                index=error.index,
                ids=_ids_text(error.ids),
            )
        )

    def _warned(self, warning: ProtocolWarning) -> None:
        pipe = getattr(self, "pipe", None)  # (a warning while it is being built)
        if not self.keep and pipe is not None:
            pipe.warnings.clear()
            pipe.verifier.warnings.clear()
        self._found(
            WatchFinding(
                warning.rule,
                "error" if warning.rule in PRODUCER_MUSTS else "warning",
                "agent",
                _said(warning.rule, warning.index, warning),
                thread_id=self._thread_id(),
                run_id=self._run_id(),
                index=warning.index,
                ids=_ids_text(warning.ids),
            )
        )

    def _found(self, finding: WatchFinding) -> None:
        if self.keep:
            self.findings.append(finding)
        if finding.severity == "error" and self.fatal is None:
            self.fatal = finding
        if self._on_finding is not None:
            self._on_finding(finding)

    def _run(self) -> Any:
        pipe = getattr(self, "pipe", None)  # a warning while the pipeline is being built
        runs = pipe.runs if pipe is not None else []
        return runs[-1] if runs else None

    def _thread_id(self) -> str | None:
        run = self._run()
        if run is not None and run.thread_id is not None:
            return str(run.thread_id)
        tid = self._input.get("threadId")
        return tid if isinstance(tid, str) else None

    def _run_id(self) -> str | None:
        run = self._run()
        if run is not None and run.run_id is not None:
            return str(run.run_id)
        rid = self._input.get("runId")
        return rid if isinstance(rid, str) else None


class _Folded(ThreadState):
    """The reducer as ``verify`` runs it, minus what only a store or a page reads: which
    messages changed since the last save (``encoded``: a measurable share of the judge's
    time per event), and an ended message's streamed text — no rule reads it (what
    AGT-SNAP and AGT-ARGS compare, the verifier keeps), only its length: the watch holds
    at most the open messages' text, which the message limit bounds."""

    def _note(self, event: Mapping[str, Any]) -> None:
        return

    def _on_text_message_end(self, ev: WireEvent, index: int | None) -> None:
        super()._on_text_message_end(ev, index)
        record = self._by_id.get(ev["messageId"])
        if record is not None and record.parts:
            record.parts.clear()  # (its length still counted: the LIMIT holds)

    _on_reasoning_message_end = _on_text_message_end


def _positions(data: bytes, byte: bytes) -> Iterator[int]:
    at = data.find(byte)
    while at >= 0:
        yield at
        at = data.find(byte, at + 1)


# -- the frontend: its run inputs --------------------------------------------------------


@dataclass
class InputJudged:
    """What one request body amounted to, as a run input."""

    run_input: dict[str, Any] | None
    """The input as our server decodes it (``None``: our server would refuse it)."""
    thread_id: str | None
    run_id: str | None
    findings: list[WatchFinding]
    refusal: tuple[int, dict[str, Any]] | None = None
    """``(status, problem)``: what ``--strict`` answers instead of forwarding."""
    stream_input: dict[str, Any] | None = None
    """The input the agent's answer is judged against: :attr:`run_input`, or — for a
    body our server refuses only for what it says of the thread (409: a dangling
    history), which the agent is still sent — the body as sent, so that its stream is
    judged against the tools it advertised (FE-2) and the ids it carried."""


@dataclass
class _LastRun:
    """What the proxy saw of a thread's last run."""

    result: RunResult
    pending: list[str]
    held: int
    """How many messages the thread held when the run ended, and their ids' digest."""
    digest: bytes


class ThreadLedger:
    """Each thread's last run as the proxy saw it, and the next input judged against it.

    ``max_threads`` bounds the memory: the least recently seen thread is forgotten
    first (its next input is then judged as our server judges any input).
    """

    def __init__(self, *, max_threads: int = 10_000) -> None:
        self.max_threads = max_threads
        self._threads: OrderedDict[str, _LastRun] = OrderedDict()

    def judge(
        self,
        body: bytes,
        verdict: tuple[dict[str, Any] | None, int, dict[str, Any] | None],
        *,
        now: datetime | None = None,
    ) -> InputJudged:
        """Judge a request body, given the server's ``verdict`` on it (``judge_body``)."""
        run_input, status, problem = verdict
        if run_input is None:
            thread_id, run_id = _loose_ids(body)
            problem = dict(problem or {})
            rule = str(problem.get("rule") or "TRANS-4")
            ids = {"toolCallIds": ",".join(problem.get("toolCallIds") or ())}
            if problem.get("messageIds"):
                ids["messageIds"] = ",".join(problem["messageIds"])
            finding = WatchFinding(
                rule,
                "error",
                "frontend",
                f"{problem.get('message', 'the run input is refused')}"
                + (f" (at {problem['path']})" if problem.get("path") else ""),
                thread_id=thread_id,
                run_id=run_id,
                ids={k: v for k, v in ids.items() if v},
                status=status,
                problem=problem,
            )
            loose = _loose_input(body) if status == 409 else None
            return InputJudged(None, thread_id, run_id, [finding], (status, problem), loose)
        thread_id, run_id = run_input["threadId"], run_input["runId"]
        out = InputJudged(run_input, thread_id, run_id, [], stream_input=run_input)
        last = self._threads.get(thread_id)
        if last is None:
            return out
        self._threads.move_to_end(thread_id)

        def found(rule: str, message: str, calls: list[str], *, severity: Severity) -> None:
            problem = {"rule": rule, "path": "", "message": message}
            if calls:
                problem["toolCallIds"] = calls  # type: ignore[assignment]
            finding = WatchFinding(
                rule,
                severity,
                "frontend",
                message,
                thread_id=thread_id,
                run_id=run_id,
                ids={"toolCallIds": ",".join(calls)} if calls else {},
                status=409 if severity == "error" else None,
                problem=problem if severity == "error" else None,
            )
            out.findings.append(finding)
            if severity == "error" and out.refusal is None:
                out.refusal = (409, problem)

        resume = run_input.get("resume")
        covered: set[str] = set()
        try:
            covered = check_resume([last.result], resume, now or datetime.now(UTC))
        except UsageError as exc:
            # the resume list is refused: the calls its interrupts stand for are not also lost
            covered = {i["toolCallId"] for i in last.result.interrupts if "toolCallId" in i}
            found(
                exc.rule or "INT-6",
                f"{str(exc).removeprefix(f'[{exc.rule}] ')} — run {last.result.run_id!r} of this "
                "thread, as the proxy saw it",
                [],
                severity="error",
            )
        if last.result.status in ("success", "interrupt"):
            messages = run_input.get("messages") or ()
            answered = {m.get("toolCallId") for m in messages if m.get("role") == "tool"}
            lost = [c for c in last.pending if c not in answered and c not in covered]
            if lost:
                found(
                    "FE-8",
                    f"run {last.result.run_id!r} of this thread left tool call(s) "
                    f"{', '.join(map(repr, lost))} pending, and this input answers none of them "
                    "(no tool message names them"
                    + ("" if resume else "; the history no longer holds the call")
                    + "); a thread that continues must answer every call first.",
                    lost,
                    severity="error",
                )
            history = [m["id"] for m in messages if isinstance(m.get("id"), str)]
            if len(history) < last.held or history_digest(history[: last.held]) != last.digest:
                found(
                    "INPUT-5",
                    f"the history does not begin with the {last.held} message(s) the thread "
                    f"held after run {last.result.run_id!r}, in their order: the frontend "
                    "dropped, re-ordered or re-identified some, and the agent is shown another "
                    "conversation.",
                    [],
                    severity="warning",
                )
        return out

    def ended(self, run_input: Mapping[str, Any], watch: StreamWatch) -> None:
        """A stream answering ``run_input`` ended: remember the thread's last run."""
        self.remember(run_input, watch.outcome(run_input))

    def remember(self, run_input: Mapping[str, Any], outcome: StreamOutcome | None) -> None:
        """Remember ``outcome`` (:meth:`StreamWatch.outcome`) as its thread's last run."""
        thread_id = run_input.get("threadId")
        if outcome is None or not isinstance(thread_id, str):
            return
        self._threads[thread_id] = _LastRun(
            RunResult(outcome.run_id, outcome.status, [], interrupts=list(outcome.interrupts)),
            list(outcome.pending),
            outcome.held,
            outcome.digest,
        )
        self._threads.move_to_end(thread_id)
        while len(self._threads) > self.max_threads:
            self._threads.popitem(last=False)


def history_digest(ids: list[str]) -> bytes:
    """16 bytes standing for a history's message ids, in order (BLAKE2b)."""
    digest = hashlib.blake2b(digest_size=16)
    for message_id in ids:
        digest.update(message_id.encode("utf-8", "surrogatepass") + b"\0")
    return digest.digest()


def _loose_input(body: bytes) -> dict[str, Any] | None:
    """A refused body as sent, when it is a run input's shape (an object with string
    ``threadId`` and ``runId``, a list of ``tools`` and of ``messages`` if any)."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    if not (isinstance(obj.get("threadId"), str) and isinstance(obj.get("runId"), str)):
        return None
    if not all(isinstance(obj.get(k, []), list) for k in ("tools", "messages")):
        return None
    return obj


def _loose_ids(body: bytes) -> tuple[str | None, str | None]:
    """``threadId`` and ``runId`` of a body our server refuses, where it has them."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None, None
    if not isinstance(obj, dict):
        return None, None
    tid, rid = obj.get("threadId"), obj.get("runId")
    return (tid if isinstance(tid, str) else None, rid if isinstance(rid, str) else None)
