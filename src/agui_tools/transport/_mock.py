"""A mock agent: recorded runs served over HTTP, with faults injected on purpose.

What a frontend points at instead of a live model (``agui-tools mock``, :func:`mock_app`).
Each request is judged as :class:`~agui_tools.transport._server.AgentEndpoint` judges it,
then answered by the recorded run it matches (:class:`~agui_tools.app._recorded.Matcher`)
with the request's ids, in the binding its ``Accept`` asks for (SSE, or TRANS-7 frames).
Recorded events are sent as recorded (a broken agent's capture replays its breakage), and
faults break them more on purpose: ``cut``, ``stall``, ``malformed``, ``status``, ``drip``,
``duplicate`` (:func:`parse_fault`; the table is ``agui-tools mock --help``), events
counted from 0 as a consumer's errors count them.

At start every event is checked in both bindings: one JSON cannot write (past
:data:`JSON_WRITE_DEPTH`) refuses the capture; one the binary binding cannot carry makes its
run SSE-only (a protobuf request for it: 406, TRANS-7). Waits are capped at ``max_gap``
(:data:`DEFAULT_MAX_GAP`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import orjson
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from .._errors import UsageError
from .._text import guarded_logger
from ..app._recorded import (
    MATCH_MODES,
    Matcher,
    Miss,
    RecordedRun,
    retarget,
)
from ..wire._codec import encode_json
from ..wire._framing import sse_comment, sse_frame
from ._captures import NO_BODY, load_captures
from ._front import Refusal, refuse
from ._server import (
    _INTERNAL_ERROR,
    _PROTO_HEADERS,
    _SHUTDOWN_ERROR,
    _SSE_HEADERS,
    AgentEndpoint,
    accepts_proto,
    end_in_flight,
    routed,
)

__all__ = [
    "DEFAULT_MAX_GAP",
    "FAULT_KINDS",
    "Fault",
    "MockEndpoint",
    "load_captures",
    "mock_app",
    "parse_fault",
    "parse_max_gap",
    "parse_timing",
]

log = guarded_logger("agui_tools.transport")

FAULT_KINDS: Final = ("cut", "stall", "malformed", "status", "drip", "duplicate")
_FAULT_SYNTAX: Final = (
    "cut:N, stall:N:SECONDS, malformed:N, status:CODE[:BODY], drip:SECONDS, duplicate:N, "
    "each optionally followed by @R (only the R-th request)"
)
_NOT_PROTOBUF: Final = b"\xff\xff\xff\xff"  # an unfinished varint tag: no message decodes
_CUT_MESSAGE: Final = "ASGI callable returned without completing response."


@dataclass(frozen=True)
class Fault:
    """One injected fault; ``request``: only that request (1-based), ``None``: every one."""

    kind: Literal["cut", "stall", "malformed", "status", "drip", "duplicate"]
    event: int | None = None
    seconds: float = 0.0
    status: int = 0
    body: str | None = None
    request: int | None = None

    def applies(self, request: int) -> bool:
        return self.request is None or self.request == request

    def __str__(self) -> str:
        text = {
            "cut": f"cut:{self.event}",
            "stall": f"stall:{self.event}:{self.seconds:g}",
            "malformed": f"malformed:{self.event}",
            "status": f"status:{self.status}" + (f":{self.body}" if self.body is not None else ""),
            "drip": f"drip:{self.seconds:g}",
            "duplicate": f"duplicate:{self.event}",
        }[self.kind]
        return text + (f"@{self.request}" if self.request is not None else "")


def parse_fault(spec: str | Fault) -> Fault:
    """A ``--fault`` spec read (the syntax: ``agui-tools mock --help``); :class:`UsageError`
    saying what is wrong and the whole syntax (:data:`_FAULT_SYNTAX`) when it is not one."""
    if isinstance(spec, Fault):
        return spec

    def bad(why: str) -> UsageError:
        return UsageError(f"fault {spec!r}: {why}; a fault is one of {_FAULT_SYNTAX}")

    text, request = spec, None
    at = re.search(r"@([^@:]*)$", text)
    if at is not None:
        request = _count(at.group(1), "the request number after @", bad, least=1)
        text = text[: at.start()]
    kind, _, rest = text.partition(":")
    args = rest.split(":") if rest else []
    if kind not in FAULT_KINDS:
        lower = f" (kinds are lower-case: {kind.lower()})" if kind.lower() in FAULT_KINDS else ""
        raise bad(f"unknown kind {kind!r}{lower}")
    if kind == "status":
        if not args:
            raise bad("status needs a code")
        code = _count(args[0], "the status code", bad, least=400)
        if code > 599:
            raise bad(f"status {code} is no error status (use 400-599)")
        body = rest.split(":", 1)[1] if len(args) > 1 else None
        return Fault("status", status=code, body=body, request=request)
    want = {"cut": 1, "malformed": 1, "duplicate": 1, "stall": 2, "drip": 1}[kind]
    if len(args) != want:
        shape = {"stall": "stall:N:SECONDS", "drip": "drip:SECONDS"}.get(kind, f"{kind}:N")
        raise bad(f"{kind} takes {want} argument(s): {shape}")
    if kind == "drip":
        return Fault("drip", seconds=_seconds(args[0], bad), request=request)
    event = _count(args[0], "the event number", bad, least=0)
    seconds = _seconds(args[1], bad) if kind == "stall" else 0.0
    return Fault(kind, event=event, seconds=seconds, request=request)  # type: ignore[arg-type]


_WHOLE: Final = re.compile(r"-?[0-9]+")  # the sign read, to say "N or more"
_DECIMAL: Final = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


def _count(text: str, what: str, bad: Any, *, least: int) -> int:
    """ASCII digits only: ``int()`` would also take ``" 3"``, ``"+3"``, ``"3_0"``, ``"٣"``."""
    if not _WHOLE.fullmatch(text):
        raise bad(f"{what} {text!r} is not a whole number (ASCII digits 0-9)")
    value = int(text)
    if value < least:
        raise bad(f"{what} must be {least} or more, not {value}")
    return value


def _seconds(text: str, bad: Any) -> float:
    """A plain decimal (``2``, ``0.5``, ``.5``): no sign, exponent, ``inf`` or spaces."""
    if not _DECIMAL.fullmatch(text):
        raise bad(f"{text!r} is not a number of seconds (a decimal such as 2 or 0.5)")
    value = float(text)
    if value > 3600:
        raise bad(f"{text!r} seconds: use 0 to 3600")
    return value


DEFAULT_MAX_GAP: Final = 5.0
"""The longest wait ``--timing`` makes before an event (seconds): a capture whose
timestamps mix units or jump would otherwise hang its client."""


def parse_max_gap(value: str | float) -> float:
    """``--max-gap``: seconds, 0 to 3600 (a decimal when a string)."""
    if isinstance(value, str):
        if not _DECIMAL.fullmatch(value):
            raise UsageError(f"max gap {value!r}: a number of seconds (a decimal such as 5 or 0.5)")
        value = float(value)
    if not 0 <= value <= 3600:
        raise UsageError(f"max gap {value!r}: use 0 to 3600 seconds")
    return float(value)


def parse_timing(spec: str | float) -> float:
    """``recorded`` (1.0), ``fast`` (0.0) or ``xN`` (``×N`` too): the factor recorded gaps
    are multiplied by — ``x2`` replays twice as fast (0.5), ``x0.5`` at half speed.
    Exactly so: lower-case, no spaces, N a plain decimal of ASCII digits."""
    if not isinstance(spec, str):
        if not 0 <= spec < float("inf"):
            raise UsageError(f"timing {spec!r}: a factor of 0 or more")
        return float(spec)
    if spec == "recorded":
        return 1.0
    if spec == "fast":
        return 0.0
    if spec[:1] in ("x", "×") and _DECIMAL.fullmatch(spec[1:]):
        speed = float(spec[1:])
        if speed > 0:
            return 1 / speed
    raise UsageError(
        f"timing {spec!r}: use recorded (the events' timestamps), fast (no waits) or xN "
        "(N times the recorded speed, e.g. x2 or x0.5)"
    )


# -- serving ------------------------------------------------------------------------------------


class _CutFilter(logging.Filter):
    """uvicorn says "returned without completing response" when a mock cuts on purpose:
    not an error of anyone's — dropped while a deliberate cut is pending."""

    pending = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if _CutFilter.pending and record.getMessage() == _CUT_MESSAGE:
            _CutFilter.pending -= 1
            return False
        return True


_cut_filter = _CutFilter()


class MockEndpoint(AgentEndpoint):
    """The ASGI application replaying recorded runs (what :func:`mock_app` routes to): judged
    by :class:`AgentEndpoint`, answered by :meth:`_serve` with the matcher's run. ``requests``
    counts all; ``matcher.served`` those answered with a run.
    """

    def __init__(
        self,
        runs: Sequence[RecordedRun],
        *,
        match: str = "order",
        timing: str | float = "recorded",
        max_gap: str | float = DEFAULT_MAX_GAP,
        faults: Iterable[str | Fault] = (),
        on_request: Callable[[int, int, str], None] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(_no_agent, **options)
        self.on_request = on_request
        """Told of each request once it is answered: its number, the status, what it got."""
        if match not in MATCH_MODES:
            raise UsageError(f"match {match!r}: use one of {', '.join(MATCH_MODES)}")
        self.matcher = Matcher(runs, match)  # type: ignore[arg-type]
        self.factor = parse_timing(timing)
        self.max_gap = parse_max_gap(max_gap)
        self.faults = [parse_fault(f) for f in faults]
        self.requests = 0
        self.skipped: list[str] = []
        """Recorded exchanges left out, each ``FILE: not replayed: why`` (:func:`load_captures`)."""
        self._check_faults()
        self._streams: set[asyncio.Task[Any]] = set()
        self._stopped: set[asyncio.Task[Any]] = set()
        self.sse_only: dict[int, str] = {}
        """``id(run)`` → why that recorded run cannot be served in the binary binding."""
        for run in self.matcher.runs:
            why = _check_encodable(run)
            if why is not None:
                self.sse_only[id(run)] = why
        logging.getLogger("uvicorn.error").addFilter(_cut_filter)

    async def shutdown(self, grace: float) -> int:
        """Stop taking requests (503); let the replays in flight end for ``grace`` seconds,
        then end the rest: a stall or a recorded gap is cut short, the stream ends with
        ``RUN_ERROR`` ``ServerShuttingDown`` and its body is closed — as
        :meth:`AgentEndpoint.shutdown` ends an agent's runs. Returns how many were ended."""
        self.front.close()
        return await end_in_flight(self._streams, self._stopped, grace)

    def _check_faults(self) -> None:
        longest = max(len(r.events) for r in self.matcher.runs)
        for fault in self.faults:
            if fault.event is not None and fault.event >= longest:
                raise UsageError(
                    f"fault {fault}: event {fault.event} is past every recorded run (the longest "
                    f"has {longest} events, numbered from 0)"
                )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Every request counted and told (``on_request``) — one the front or the
        judge refused too, with what it was answered."""
        self.requests += 1
        number = self.requests
        refusal: list[Any] = []  # the status and body of a refusal, as sent
        told = False

        async def noted(message: Any) -> None:
            refusal.append(message.get("status", message.get("body", b"")))
            await send(message)

        async def serve(scope: Scope, receive: Receive, _noted: Send) -> None:
            nonlocal told  # (a refusal of the judge is noted; an answer is not kept)
            told = await self._reply(number, scope, receive, send, noted)

        await self.front.serve(scope, receive, noted, serve, check=self._check_head)
        if not told:
            status_code = refusal[0] if refusal else 499  # 499: the client left first
            self._said(number, status_code, _problem(b"".join(refusal[1:])))

    async def _reply(
        self, number: int, scope: Scope, receive: Receive, send: Send, noted: Send
    ) -> bool:
        """The answer to request ``number``, its body read; ``False`` when the judge
        refused the input (sent through ``noted``: the caller tells it) or the client
        left."""
        faults = [f for f in self.faults if f.applies(number)]
        status = next((f for f in faults if f.kind == "status"), None)
        if status is not None:
            await self._fault_status(status, number, send)
            self._said(number, status.status, f"fault {status}")
            return True
        run_input = await self._admit(scope, receive, noted)
        if run_input is None:
            return False
        binary = accepts_proto(Headers(scope=scope).get("accept"))
        chosen = self.matcher.choose(run_input, take=False)
        why = self.sse_only.get(id(chosen)) if binary else None
        if why is not None:
            assert isinstance(chosen, RecordedRun)
            message = (
                f"the recorded run {chosen.source} cannot be served in the binary binding "
                f"(TRANS-7): {why}; ask for text/event-stream (it is served over SSE)"
            )
            rejected = Refusal(406, {"rule": "TRANS-7", "path": "", "message": message})
            await refuse(scope, receive, send, rejected)
            self._said(number, 406, message)
            return True
        chosen = self.matcher.choose(run_input)
        if isinstance(chosen, Miss):
            rejected = Refusal(chosen.status, {"rule": None, "path": "", "message": chosen.message})
            await refuse(scope, receive, send, rejected)
            self._said(number, chosen.status, chosen.message)
            return True
        if chosen.as_recorded:
            await _answer(
                send, chosen.status, chosen.body, chosen.content_type, location=chosen.location
            )
            shown = ", ".join(str(f) for f in faults if f.kind != "status")
            unapplied = f" (faults {shown} not applied: it has no events)" if shown else ""
            self._said(number, chosen.status, f"the recorded answer of {chosen.source}{unapplied}")
            return True
        shown = ", ".join(str(f) for f in faults if f.kind != "status")
        self._said(
            number,
            200,
            f"thread {run_input.get('threadId')} run {run_input.get('runId')} gets "
            f"{chosen.source} ({len(chosen.events)} events, "
            f"{'protobuf' if binary else 'SSE'}{', faults ' + shown if shown else ''})",
        )
        await self._replay(chosen, run_input, faults, receive, send, binary=binary)
        return True

    def _said(self, number: int, status: int, text: str) -> None:
        if self.on_request is not None:
            self.on_request(number, status, text)

    async def _fault_status(self, fault: Fault, number: int, send: Send) -> None:
        """The status fault's answer (the front has read the body whole)."""
        if fault.body is None:
            body = orjson.dumps(
                {
                    "error": {
                        "path": "",
                        "message": f"fault injected by the mock: status {fault.status} for "
                        f"request {number} (--fault {fault})",
                    }
                }
            )
            kind = "application/json"
        else:
            body, kind = fault.body.encode(), _body_type(fault.body)
        await _answer(send, fault.status, body, kind)

    async def _replay(
        self,
        recorded: RecordedRun,
        run_input: dict[str, Any],
        faults: Sequence[Fault],
        receive: Receive,
        send: Send,
        *,
        binary: bool,
    ) -> None:
        events = retarget(
            recorded.events, run_input, thread_id=recorded.thread_id, run_id=recorded.run_id
        )
        delays = [
            min(d * self.factor, self.max_gap) if self.factor else 0.0 for d in recorded.delays()
        ]
        gone = asyncio.Event()
        watcher = asyncio.create_task(_watch(receive, gone))
        task = asyncio.current_task()
        assert task is not None
        self._streams.add(task)
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": _PROTO_HEADERS if binary else _SSE_HEADERS,
                }
            )
            complete = await self._send_events(events, delays, faults, send, gone, binary=binary)
            if complete:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if task not in self._stopped:
                raise
            task.uncancel()  # ended by shutdown(): the stream says so and ends
            try:
                await _body(send, _frame(_SHUTDOWN_ERROR, binary))
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            except OSError:
                return
        except OSError:
            return  # the client went away mid-send
        finally:
            self._streams.discard(task)
            self._stopped.discard(task)
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)

    async def _send_events(
        self,
        events: Sequence[dict[str, Any]],
        delays: Sequence[float],
        faults: Sequence[Fault],
        send: Send,
        gone: asyncio.Event,
        *,
        binary: bool,
    ) -> bool:
        """Send each event with its wait and faults; ``False`` when the body must not end
        (cut, or the client left)."""
        drip = sum(f.seconds for f in faults if f.kind == "drip")
        at: dict[tuple[str, int], Fault] = {
            (f.kind, f.event): f for f in faults if f.event is not None
        }
        for index, event in enumerate(events):
            stall = at.get(("stall", index))
            if stall is not None and not await _quiet(stall.seconds, gone):
                return False
            wait = delays[index] + drip
            if wait and not await self._wait(wait, send, gone, binary=binary):
                return False
            try:
                frame = _malformed(event, binary) if ("malformed", index) in at else None
                frame = frame or _frame(event, binary)
            except Exception as exc:  # pragma: no cover - judged at start (_check_encodable)
                log.error(
                    "recorded event %d (%s) cannot be sent in the %s binding (%s: %s); the "
                    "stream ends with RUN_ERROR",
                    index,
                    event.get("type"),
                    "binary" if binary else "SSE",
                    type(exc).__name__,
                    exc,
                )
                await _body(send, _frame(_INTERNAL_ERROR, binary))
                return True
            await _body(send, frame * 2 if ("duplicate", index) in at else frame)
            if ("cut", index) in at:
                _CutFilter.pending += 1
                return False
        return True

    async def _wait(self, seconds: float, send: Send, gone: asyncio.Event, *, binary: bool) -> bool:
        """Wait ``seconds``; an SSE stream gets its keep-alives meanwhile. ``False``: client gone."""
        step = self.keepalive if self.keepalive is not None and not binary else None
        while seconds > 0:
            chunk = min(seconds, step) if step is not None else seconds
            if not await _quiet(chunk, gone):
                return False
            seconds -= chunk
            if seconds > 0 and step is not None:
                await _body(send, sse_comment())
        return True


async def _no_agent(run: Any) -> None:  # pragma: no cover - the mock never drives an agent
    raise RuntimeError("a mock replays recorded runs; it runs no agent")


async def _quiet(seconds: float, gone: asyncio.Event) -> bool:
    """Sleep ``seconds`` unless the client leaves first (then ``False``)."""
    try:
        await asyncio.wait_for(gone.wait(), seconds)
    except TimeoutError:
        return True
    return False


async def _watch(receive: Receive, gone: asyncio.Event) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
            return


JSON_WRITE_DEPTH: Final = 254
"""The deepest nesting the SSE binding writes (orjson's limit; the event object counts
as one level). Deeper events are refused when a mock starts, whichever binding asks."""


def _check_encodable(run: RecordedRun) -> str | None:
    """Refuse (:class:`UsageError`) a run with an event JSON cannot write — it would be a
    RUN_ERROR mid-stream; say why (``str``) when the binary binding cannot carry one, so
    that a protobuf request for it is answered 406 before any stream."""
    why = None
    for index, event in enumerate(run.events):
        try:
            encode_json(event)
        except orjson.JSONEncodeError as exc:
            raise UsageError(
                f"{run.source}: event {index} ({event.get('type')}) cannot be written as JSON "
                f"({exc}): an SSE stream nests at most {JSON_WRITE_DEPTH} levels, the event "
                "object counted (the library reads 1024); a mock serves what both bindings "
                "can send, so it refuses this capture rather than end its stream with RUN_ERROR"
            ) from None
        if why is None:
            from ..wire._proto_codec import decode_proto_event, encode_proto_event

            stamp = event.get("timestamp")
            if stamp is not None and not (type(stamp) is int and -(2**63) <= stamp < 2**63):
                why = (
                    f"event {index} ({event.get('type')}) has the timestamp {stamp!r}, and the "
                    "binary binding carries a timestamp as a 64-bit integer only"
                )
                continue
            try:
                frame = encode_proto_event(event)
            except Exception as exc:  # any value the binding has no field for
                why = f"event {index} ({event.get('type')}) cannot be encoded: {exc}"
                continue
            try:
                decode_proto_event(frame)
            except Exception as exc:  # sent, a protobuf reader could not read it back
                why = f"event {index} ({event.get('type')}), encoded, does not decode ({exc})"
    return why


def timing_notes(run: RecordedRun, factor: float, max_gap: float) -> list[str]:
    """What ``--timing``/``--max-gap`` change in ``run``'s recorded gaps, for the start-up
    summary: gaps capped at ``max_gap``, timestamps going backwards (no wait)."""
    gaps = [g for g in run.gaps() if g is not None]
    notes = []
    capped = [g for g in gaps if factor and g * factor > max_gap]
    if capped:
        notes.append(
            f"{len(capped)} gap(s) capped at --max-gap {max_gap:g} s (the longest recorded: "
            f"{max(capped):.6g} s)"
        )
    backwards = sum(1 for g in gaps if g < 0)
    if backwards:
        notes.append(f"{backwards} timestamp(s) earlier than the event before (no wait)")
    return notes


def _body_type(body: str) -> str:
    """A ``status:CODE:BODY`` body's media type: JSON when it reads as a JSON object or
    array, else plain text."""
    if body.lstrip()[:1] in ("{", "["):
        try:
            orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
        else:
            return "application/json"
    return "text/plain; charset=utf-8"


def _problem(body: bytes) -> str:
    """A refusal's JSON problem in one line: ``[RULE] message``."""
    try:
        error = orjson.loads(body)["error"]
        rule = f"[{error['rule']}] " if error.get("rule") else ""
        return f"{rule}{error['message']}"
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return "refused before any stream"


def _frame(event: Mapping[str, Any], binary: bool) -> bytes:
    if binary:
        from ..wire._proto_codec import encode_proto_event
        from ..wire._proto_framing import proto_frame

        return proto_frame(encode_proto_event(event))
    return sse_frame(encode_json(event))


def _malformed(event: Mapping[str, Any], binary: bool) -> bytes:
    """Event ``event``'s frame, broken: half its JSON (SSE), or bytes no protobuf decodes."""
    if binary:
        from ..wire._proto_framing import proto_frame

        return proto_frame(_NOT_PROTOBUF)
    text = encode_json(event)
    return sse_frame(text[: max(len(text) // 2, 1)])


async def _body(send: Send, chunk: bytes) -> None:
    await send({"type": "http.response.body", "body": chunk, "more_body": True})


async def _answer(
    send: Send, status: int, body: bytes, content_type: str | None, *, location: str | None = None
) -> None:
    """An answer whole: ``content_type`` ``None`` sends none; a 204/304 has no body."""
    headers = []
    if content_type is not None:
        headers.append((b"content-type", content_type.encode("latin-1", "replace")))
    if location is not None:
        headers.append((b"location", location.encode("latin-1", "replace")))
    if status in NO_BODY:
        body = b""
    else:
        headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def mock_app(
    captures: str | os.PathLike[str] | RecordedRun | Iterable[str | os.PathLike[str] | RecordedRun],
    *,
    path: str = "/",
    match: str = "order",
    timing: str | float = "recorded",
    max_gap: str | float = DEFAULT_MAX_GAP,
    faults: Iterable[str | Fault] = (),
    on_request: Callable[[int, int, str], None] | None = None,
    **options: Any,
) -> Starlette:
    """A Starlette application replaying ``captures`` as an agent at ``POST path``.

    ``captures``: paths (:func:`load_captures`) or
    :class:`~agui_tools.app._recorded.RecordedRun` values. ``match``: ``"order"`` or
    ``"last-user-message"`` (:class:`~agui_tools.app._recorded.Matcher`). ``timing``:
    ``"recorded"``, ``"fast"``, ``"xN"``; ``max_gap`` caps a wait (:data:`DEFAULT_MAX_GAP`).
    ``faults``: specs (:func:`parse_fault`) or :class:`Fault` values. ``on_request(number,
    status, text)`` hears each answer. Other options are :class:`AgentEndpoint`'s. Raises
    :class:`~agui_tools.UsageError` for a bad capture, fault, timing or match. The endpoint is
    ``app.state.mock``.
    """
    if isinstance(captures, (str, os.PathLike, RecordedRun)):
        captures = [captures]
    skipped: list[str] = []
    runs = load_captures(captures, skipped=skipped)
    for run in runs:
        for note in run.notes:
            log.info("%s: %s", run.source, note)
    endpoint = MockEndpoint(
        runs,
        match=match,
        timing=timing,
        max_gap=max_gap,
        faults=faults,
        on_request=on_request,
        **options,
    )
    endpoint.skipped = skipped
    app = routed(endpoint, path, options.get("allowed_origins", ()))
    app.state.mock = endpoint
    return app
