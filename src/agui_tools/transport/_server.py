"""HTTP + Server-Sent Events, producer side: serve an agent at a POST endpoint.

A thin adapter, in the h11 manner: the producer side (:mod:`agui_tools.agent._runner`,
:mod:`agui_tools.agent._run`, :mod:`agui_tools.agent._emitter`) decides every event; this
module only moves bytes. It is a plain ASGI application wrapped in
a :class:`~starlette.applications.Starlette` router, so FastAPI mounts it
unchanged (``api.mount("/agent", agent_app(agent))`` serves ``POST /agent/``).

Theory of operation (``basic/transports/http-sse``):

* **Before the stream** — the request is judged whole, and a rejection is an
  HTTP error with a JSON body and no event stream (INPUT-15, TRANS-1). The
  front (:mod:`agui_tools.transport._front`: shutting down, the concurrency
  cap, ``Host``, then this endpoint's Origin and ``Content-Type``, then the
  body under its deadline and size limit) answers first; then a body that is
  not JSON is 400; a body that is JSON but
  not one unambiguous object — an array, a string, a name written twice, an
  integer that would arrive rounded, nesting beyond ``max_depth`` — is 422, as
  is a malformed run input, each naming the field; a history that leaves a
  call unanswered, answers none or repeats an id is 409 naming the ids.
  Unrecognised members are stripped and logged (INPUT-16). Judging a large
  body runs in a worker thread, so other streams' keep-alives keep flowing.
  Nothing a client sends produces a 500.
* **The stream** — ``200 text/event-stream``, one JSON event per ``data:``
  line, LF only (TRANS-5), a ``: keep-alive`` comment whenever the agent has
  been quiet for ``keepalive`` seconds, and the body closed right after the
  run's terminal event. Once the status is sent a failure can only travel
  in-stream, so even a bug of ours ends with ``RUN_ERROR`` rather than a hung
  or silently truncated response (TRANS-6). On uvicorn the run's own task
  writes each event to the connection (:mod:`~agui_tools.transport._direct`).
* **The binary binding** (``basic/transports/http-protobuf``, TRANS-7) — when
  the request's ``Accept`` admits ``application/vnd.ag-ui.event+proto`` with a
  positive quality (a wildcard range admits it too), the same run is answered
  ``200 application/vnd.ag-ui.event+proto``, one length-prefixed protobuf frame
  per event; otherwise — no ``Accept``, or one that does not admit it — SSE.
  Errors are the same: a rejection before the stream is an HTTP error, a
  failure inside it a ``RUN_ERROR`` frame. The binding has no comment frame, so
  a quiet binary stream sends nothing (no keep-alives: set idle timeouts
  accordingly).
* **Disconnect** — a task watches for ``http.disconnect`` and cancels the run
  (the agent sees ``asyncio.CancelledError`` and nothing more is emitted: a
  consumer that abandons a stream has a truncated run, RUN-9). Every task
  the request started is awaited before the handler returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Final

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .. import _telemetry
from .._errors import ProtocolViolation, ProtocolWarning, describe_value, json_type_name
from .._text import guarded_logger
from .._version import PROTOCOL_VERSION, parse_version
from ..agent._channel import EventChannel
from ..agent._history import ContinuationRejected, check_continuation
from ..agent._runner import Agent, drive, start
from ..wire._codec import check_exact_json, decode_run_input, encode_json, parse_json
from ..wire._enforce import DEFAULT_MAX_DEPTH, checked_max_depth
from ..wire._framing import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, sse_comment, sse_frame
from ._auth import Authorize, Authorized, HostPolicy
from ._direct import DirectBody, DirectRouted, direct_body
from ._front import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CONCURRENCY,
    ClientGone,
    Front,
    Refusal,
    received,
    refuse,
)
from ._resumable import (
    Resumable,
    ResumableRuns,
    extension_routes,
    is_extension,
    is_stop,
    opted_in,
)

__all__ = ["DEFAULT_MAX_BODY_BYTES", "AgentEndpoint", "accepts_proto", "agent_app"]

log = guarded_logger("agui_tools.transport")

DEFAULT_MAX_UNKNOWN: Final = 1000
"""Unrecognised members stripped from one run input before it is refused (422)."""
DEFAULT_MAX_MESSAGES: Final = 10_000
"""Messages one run input may carry (413 beyond): each is judged in Python."""
INLINE_JUDGE_BYTES: Final = 64 * 1024
"""Bodies up to this size are judged on the event loop; larger ones in a worker
thread. Judging is pure Python, proportional to the body (a history of megabytes
takes most of a second): on the loop it would stall every other stream's keep-alives
and events; for a small body a thread hop costs more than it saves."""
_SSE_HEADERS: Final = [
    (b"content-type", SSE_MEDIA_TYPE.encode()),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),  # proxies (nginx) must not hold events back
]
_PROTO_HEADERS: Final = [(b"content-type", PROTO_MEDIA_TYPE.encode()), *_SSE_HEADERS[1:]]
_INTERNAL_ERROR: Final = {
    "type": "RUN_ERROR",
    "message": "internal error in the agent server",
    "code": "InternalError",
}
_FALLBACK_ERROR: Final = sse_frame(encode_json(_INTERNAL_ERROR))
_SHUTDOWN_ERROR: Final = {
    "type": "RUN_ERROR",
    "message": "the server is shutting down: the run did not finish within the grace period",
    "code": "ServerShuttingDown",
}


def accepts_proto(accept: str | None) -> bool:
    """Whether an ``Accept`` header admits the binary binding with a positive quality.

    The most specific range that matches the media type decides its quality
    (``application/vnd.ag-ui.event+proto`` over ``application/*`` over ``*/*``;
    among equals the higher quality, then the earlier one) — RFC 9110 as the
    official encoder's negotiator reads it. Quality relative to
    ``text/event-stream`` is not consulted (http-protobuf: admission is what
    opts in). No header, or an empty one, is SSE: a client that wants the
    binding says so.
    """
    if not accept:
        return False
    kind, sub = PROTO_MEDIA_TYPE.split("/")
    best: tuple[int, float] | None = None
    for entry in accept.split(","):
        media, *params = (p.strip() for p in entry.split(";"))
        if "/" not in media:
            continue
        etype, esub = (x.strip().lower() for x in media.split("/", 1))
        quality, extra = 1.0, False
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value.strip().strip('"'))
                except ValueError:
                    quality = 0.0
                break  # parameters after q are accept-extensions
            extra = True
        if extra:
            continue  # a parameter the media type does not carry: not this range
        if etype == kind and esub == sub:
            specificity = 6
        elif etype == kind and esub == "*":
            specificity = 4
        elif etype == "*" and esub == "*":
            specificity = 0
        else:
            continue
        if best is None or specificity > best[0] or (specificity == best[0] and quality > best[1]):
            best = (specificity, quality)
    return best is not None and best[1] > 0


async def end_in_flight(
    tasks: set[asyncio.Task[Any]],
    ended: set[asyncio.Task[Any]],
    grace: float,
    *,
    on_left: Callable[[int], None] | None = None,
) -> int:
    """A shutdown's end of the streams in flight (``tasks``, each removing itself when
    done): ``grace`` seconds to finish, then the rest are put in ``ended`` (``on_left``
    told how many first) and cancelled — each then writes its ``RUN_ERROR``
    ``ServerShuttingDown`` — with 5 s more to do so. Returns how many were cancelled."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    while tasks and loop.time() < deadline:
        await asyncio.sleep(0.05)
    left = list(tasks)
    if left and on_left is not None:
        on_left(len(left))
    for task in left:
        ended.add(task)
        task.cancel()
    end = loop.time() + 5.0
    while tasks and loop.time() < end:  # their streams write the RUN_ERROR
        await asyncio.sleep(0.02)
    return len(left)


class AgentEndpoint:
    """The ASGI application serving one agent (what :func:`agent_app` routes to).

    Args:
        agent: ``async def agent(run: Run) -> None``.
        verify: judge every emitted event before it is sent (see
            :class:`~agui_tools.agent._emitter.Emitter`). On by default — an agent
            bug becomes ``RUN_ERROR`` naming the rule instead of a stream a
            consumer rejects; turn it off only for throughput you have measured.
        keepalive: seconds of agent silence before a ``: keep-alive`` comment
            (``None``: never). Proxies and browsers drop idle connections.
        max_body_bytes: the largest request body accepted (413 beyond).
        strict_input: refuse a continuation that leaves a call unanswered or
            answers none (409). ``False`` logs it and runs anyway — for agents
            whose model tolerates a dangling call; the input is never repaired.
        expose_errors: put the agent's exception text in ``RUN_ERROR.message``
            (off: the text may hold what a client must not see).
        high_water: events queued for a slow client before the agent waits.
        max_depth: how deeply the run input may nest (422 beyond); see
            :data:`~agui_tools.wire._enforce.DEFAULT_MAX_DEPTH`.
        allowed_origins: browser origins (``"https://app.example"``) allowed to
            start runs besides the server's own; ``"*"`` allows any. A request
            carrying another ``Origin`` is refused (403), so a web page on
            another origin cannot start runs with a "simple" POST.
            :func:`agent_app` also answers CORS for these origins.
        allowed_hosts: the names (``Host``) the server is reached by besides
            ``localhost``, ``*.localhost`` and IP addresses: ``"agent.example"``,
            ``".corp.example"`` (every name under it), ``"*"`` (any). Any other
            ``Host`` is refused (403) before anything else is judged: a
            DNS-rebinding page sends its own name (see
            :class:`~agui_tools.transport._auth.HostPolicy`).
        body_timeout: seconds to receive the whole body (408 beyond; ``None``:
            no deadline).
        max_concurrency: requests served at once before new ones get 503
            (``None``: no limit).
        max_unknown: unrecognised members stripped from one input before it
            is refused (422, ``LIMIT``).
        max_messages: messages one input may carry (413 beyond).
        resumable: serve the resumable binding (docs/resumable.md) to requests that
            opt in; others get the standard binding unchanged.

    Large bodies are judged in a worker thread, one at a time: judging is pure
    Python and holds the GIL, and many judged at once would take the server's
    memory to gigabytes and delay a small request's first byte by seconds.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        verify: bool = True,
        keepalive: float | None = 15.0,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        strict_input: bool = True,
        expose_errors: bool = False,
        high_water: int = 256,
        max_depth: int = DEFAULT_MAX_DEPTH,
        allowed_origins: Sequence[str] = (),
        body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
        max_concurrency: int | None = DEFAULT_MAX_CONCURRENCY,
        max_unknown: int = DEFAULT_MAX_UNKNOWN,
        max_messages: int = DEFAULT_MAX_MESSAGES,
        allowed_hosts: Sequence[str] = (),
        resumable: Resumable | None = None,
    ) -> None:
        if keepalive is not None and keepalive <= 0:
            raise ValueError("keepalive must be a positive number of seconds, or None")
        self.agent = agent
        self.verify = verify
        self.keepalive = keepalive
        self.strict_input = strict_input
        self.expose_errors = expose_errors
        self.high_water = high_water
        self.max_depth = checked_max_depth(max_depth)
        self.allowed_origins = frozenset(o.lower().rstrip("/") for o in allowed_origins)
        self.front = Front(
            hosts=HostPolicy(allowed_hosts),
            max_body_bytes=max_body_bytes,
            body_timeout=body_timeout,
            max_concurrency=max_concurrency,
        )
        self.max_unknown = max_unknown
        self.max_messages = max_messages
        self._judging = asyncio.Semaphore(1)
        self._runs: set[asyncio.Task[None]] = set()
        self._ended_by_shutdown: set[asyncio.Task[None]] = set()
        self.resumable = (
            None
            if resumable is None
            else ResumableRuns(
                resumable,
                agent,
                verify=verify,
                expose_errors=expose_errors,
                keepalive=keepalive,
                high_water=high_water,
                shutdown_error=encode_json(_SHUTDOWN_ERROR),
                internal_error=encode_json(_INTERNAL_ERROR),
            )
        )

    async def shutdown(self, grace: float) -> int:
        """Stop taking runs; let those in flight finish for ``grace`` seconds; end the rest.

        A run still going after the grace period is cancelled (the agent sees
        ``asyncio.CancelledError``) and its stream ends with ``RUN_ERROR``
        ``ServerShuttingDown`` — a terminal event, so its client knows the run
        ended rather than seeing a cut stream (TRANS-1) — and the body is closed.
        Requests arriving meanwhile (on a kept-alive connection), and those still
        sending their bodies, get 503. Returns
        how many runs were ended that way. ``serve`` calls it on SIGTERM/SIGINT.
        """
        self.front.close()

        def said(left: int) -> None:
            log.warning(
                "shutting down: ending %d run(s) still going after %g s with RUN_ERROR",
                left,
                grace,
            )

        ended = await end_in_flight(self._runs, self._ended_by_shutdown, grace, on_left=said)
        if self.resumable is not None:
            await self.resumable.close()
        return ended

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # pragma: no cover - the route only admits HTTP
            raise RuntimeError("AgentEndpoint serves HTTP only")
        frees = is_stop if self.resumable is not None else None
        await self.front.serve(
            scope, receive, send, self._serve, check=self._check_head, frees=frees
        )

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.resumable is not None and is_extension(scope):
            await self.resumable.serve_extension(scope, receive, send)
            return
        run_input = await self._admit(scope, receive, send)
        if run_input is None:
            return
        headers = Headers(scope=scope)
        binary = accepts_proto(headers.get("accept"))
        with _telemetry.extracted(headers):  # the client's run span is the parent of ours
            if (
                self.resumable is not None
                and not binary
                and opted_in(headers, run_input.get("runId"))
            ):
                await self.resumable.start(
                    run_input, scope, receive, send, self._runs, self.front.slot
                )
                return
            await self._stream(run_input, scope, receive, send, binary=binary)

    async def _admit(self, scope: Scope, receive: Receive, send: Send) -> dict[str, Any] | None:
        """The request judged whole: the run input, or ``None`` once it was refused
        (answered here) or the client left. Its head and the body's reading were judged
        by the front (:meth:`_check_head`, :class:`~agui_tools.transport._front.Front`)."""
        try:
            body = await received(receive)
            if len(body) > INLINE_JUDGE_BYTES:
                async with self._judging:
                    verdict = await run_in_threadpool(self._verdict, body)
            else:
                verdict = self._verdict(body)
            del body  # the run keeps what it decoded, never the bytes
            if isinstance(verdict, Refusal):
                raise verdict
            return verdict
        except ClientGone:
            return None
        except Refusal as rejected:
            await refuse(scope, receive, send, rejected)
            return None

    # -- before the stream ---------------------------------------------------------

    def _check_head(self, scope: Scope, headers: Headers) -> None:
        """What the front asks of a head before the body is read: its Origin, its type
        (a rejoin or a stop has no body to type)."""
        self._check_origin(scope, headers)
        if self.resumable is None or not is_extension(scope):
            _check_content_type(headers)

    def _check_origin(self, scope: Scope, headers: Headers) -> None:
        """Same-origin by default: a browser names the page's origin on every
        cross-origin POST, and a "simple" one (form, text/plain) needs no preflight
        — refusing it here is what stops a web page from starting runs on an agent
        on the user's loopback. Clients that are not browsers send no ``Origin``.

        "Own origin" is ``Host``'s, so the ``Host`` is judged first, against the
        names the server answers — not against the ``Origin``: a DNS-rebinding
        page makes both its own name (the front judged the ``Host``)."""
        origin = headers.get("origin")
        if origin is None:
            if headers.get("sec-fetch-site") == "cross-site":
                raise _forbidden("a cross-site request without an Origin header")
            return
        normal = origin.lower().rstrip("/")
        if "*" in self.allowed_origins or normal in self.allowed_origins:
            return
        host = headers.get("host")
        if host is not None and normal == f"{scope.get('scheme', 'http')}://{host}".lower():
            return
        raise _forbidden(f"Origin {describe_value(origin)} is not this server's, nor allowed")

    def judge_body(self, body: bytes) -> tuple[dict[str, Any] | None, int, dict[str, Any] | None]:
        """The server's verdict on a request body, as data — nothing is run or sent.

        ``(run_input, 200, None)`` when it would be served; ``(None, status, problem)``
        when it would be refused: the status and the ``error`` member of the JSON
        body this server answers (400, 413, 422, 409 — see :meth:`_judge`).
        ``agui-tools proxy`` judges a frontend's inputs with it, so the proxy and
        the server hold one copy of every input rule. Synchronous, like
        :meth:`_judge`: a large body is judged in a worker thread by the caller.
        """
        verdict = self._verdict(body)
        if isinstance(verdict, Refusal):
            return None, verdict.status, verdict.error
        return verdict, 200, None

    def _verdict(self, body: bytes) -> dict[str, Any] | Refusal:
        """:meth:`_judge`, with a refusal returned — detached — instead of raised.

        A refusal raised in the worker thread crossed back through anyio's
        future, and its traceback held that future's frame (which holds the
        future, which holds the exception): a reference cycle keeping the
        judging frame alive — and in it the parsed body. Each refused large
        body kept several times its size until a full collection, which the
        process rarely runs: a few dozen would take ``serve`` to gigabytes. The refusal that leaves here
        is a fresh exception with no traceback, cause or context.
        """
        try:
            return self._judge(body)
        except Refusal as rejected:
            return rejected.detached()

    def _judge(self, body: bytes) -> dict[str, Any]:
        """JSON, one unambiguous object, the run input's schema, the thread's continuation.

        Synchronous and self-contained, so it can run in a worker thread.
        """
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            try:  # a nesting the parser refuses is valid JSON: the limit, not a syntax error
                parse_json(body, where="run input")
            except ProtocolViolation as violation:
                if violation.rule == "LIMIT":
                    raise Refusal(422, _error_json(violation)) from None
            raise Refusal(
                400,
                {
                    "rule": "TRANS-4",
                    "path": "",
                    "message": f"the request body is not valid JSON ({exc.args[0]}); it must be "
                    "one RunAgentInput object, UTF-8 encoded.",
                },
            ) from None
        if type(obj) is not dict:
            # judged here, before decoding: a JSON string would otherwise be read as JSON text
            # a second time
            raise Refusal(
                422,
                {
                    "rule": "TRANS-4",
                    "path": "",
                    "message": f"the request body is a JSON {json_type_name(obj)}, not an "
                    "object; it must be one RunAgentInput object.",
                    "value": describe_value(obj),
                },
            )
        messages = obj.get("messages")
        if type(messages) is list and len(messages) > self.max_messages:
            raise Refusal(
                413,
                {
                    "rule": "LIMIT",
                    "path": "/messages",
                    "message": f"the run input carries {len(messages)} messages, more than "
                    f"max_messages={self.max_messages}.",
                },
            )
        try:
            check_exact_json(body, obj, max_depth=self.max_depth)
            decoded = decode_run_input(obj, max_depth=self.max_depth, max_unknown=self.max_unknown)
        except ProtocolViolation as exc:
            raise Refusal(422, _error_json(exc)) from None
        except Exception:
            # never a 500 for what a client sent; the log keeps what went wrong
            log.exception("the run input could not be decoded")
            raise Refusal(
                422,
                {"rule": "PROC-2", "path": "", "message": "the run input could not be decoded."},
            ) from None
        wire = decoded.wire
        if decoded.warnings:
            _log_warnings(wire.get("runId"), decoded.warnings)
        _note_version(wire)
        try:
            check_continuation(wire)
        except ContinuationRejected as exc:
            if self.strict_input:
                raise Refusal(409, _error_json(exc)) from None
            log.warning("run input of run %r accepted despite: %s", wire.get("runId"), exc)
        return wire

    # -- the stream -------------------------------------------------------------------

    async def _stream(
        self,
        run_input: dict[str, Any],
        scope: Scope,
        receive: Receive,
        send: Send,
        *,
        binary: bool = False,
    ) -> None:
        if binary:
            from ..wire._proto_codec import encode_proto_event
            from ..wire._proto_framing import proto_frame

            def encode(event: dict[str, Any]) -> bytes:
                return proto_frame(encode_proto_event(event))

            channel = EventChannel(high_water=self.high_water, encode=encode)
            headers, frame, keepalive = _PROTO_HEADERS, _as_is, None
            fallback, closing = encode(_INTERNAL_ERROR), encode(_SHUTDOWN_ERROR)
        else:
            channel = EventChannel(high_water=self.high_water)
            headers, frame, keepalive = _SSE_HEADERS, sse_frame, sse_comment()
            fallback, closing = _FALLBACK_ERROR, sse_frame(encode_json(_SHUTDOWN_ERROR))
        # RUN_STARTED is queued here, so it follows the headers at once (see start())
        started = start(run_input, channel, verify=self.verify)
        driver = asyncio.create_task(
            drive(
                self.agent,
                run_input,
                channel,
                verify=self.verify,
                expose_errors=self.expose_errors,
                started=started,
            ),
            name=f"agui-run-{run_input['runId']}",
        )
        # even if drive() itself died, the reader below must wake up and end the body
        driver.add_done_callback(lambda _: channel.close())
        watcher = asyncio.create_task(_watch_disconnect(receive, channel, driver))
        self._runs.add(driver)

        def ending() -> tuple[bytes, bool]:  # what a stream that stopped short ends with
            if driver in self._ended_by_shutdown:
                return closing, True
            return fallback, False

        try:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            direct = direct_body(scope)
            if direct is not None:  # the run's task writes its own events from now on
                channel.sink = direct.framed(frame)
            await self._pump(channel, send, frame, keepalive, ending, direct)
        finally:
            self._runs.discard(driver)
            self._ended_by_shutdown.discard(driver)
            watcher.cancel()
            driver.cancel()
            await asyncio.wait({watcher, driver})
            for task in (watcher, driver):
                if not task.cancelled() and task.exception() is not None:
                    log.error("run %r: task failed", run_input["runId"], exc_info=task.exception())

    async def _pump(
        self,
        channel: EventChannel,
        send: Send,
        frame: Callable[[bytes], bytes],
        keepalive: bytes | None,
        ending: Callable[[], tuple[bytes, bool]],
        direct: DirectBody | None = None,
    ) -> None:
        """Move events to the wire until the run's terminal event (or the client leaves).

        ``frame`` wraps one payload for the binding, ``keepalive`` is what a quiet
        stream sends (``None``: nothing), ``ending()`` the ``RUN_ERROR`` for a
        producer that stopped short: a bug of ours, or the shutdown's grace period
        that ran out. With ``direct`` (:mod:`~agui_tools.transport._direct`), the
        run's task writes what the connection takes at once; this writes what had to
        wait, taking it only when it can be written whole, so nothing overtakes it."""
        ended = False
        out = partial(_body, send) if direct is None else direct.put
        try:
            while not channel.aborted:
                if not channel.has_events:
                    if channel.closed:
                        break
                    if not await channel.wait(self.keepalive) and keepalive is not None:
                        await out(keepalive)
                    continue
                if direct is not None and not direct.ready:
                    if direct.gone:
                        raise ConnectionResetError("the client disconnected")
                    await direct.drain()
                    continue
                await out(b"".join(frame(payload) for payload in channel.take()))
            if channel.aborted:
                return
            if channel.ended_with is None:
                # the producer ended without a terminal event: ended by the shutdown, or a
                # bug of ours — reported in-stream either way
                last, shutting_down = ending()
                if not shutting_down:
                    log.error("the run ended without a terminal event; sending RUN_ERROR")
                await out(last)
            ended = True
        except OSError:
            channel.abort()  # ASGI 2.4 servers raise on send after a disconnect
            return
        except Exception:
            log.exception("internal error while streaming the run")
            if channel.ended_with != "RUN_ERROR":
                await out(ending()[0])
            ended = True
        finally:
            if ended:
                await send({"type": "http.response.body", "body": b"", "more_body": False})


def _as_is(payload: bytes) -> bytes:
    return payload  # a binary payload is already its frame


async def _body(send: Send, chunk: bytes) -> None:
    await send({"type": "http.response.body", "body": chunk, "more_body": True})


async def _watch_disconnect(
    receive: Receive, channel: EventChannel, run: asyncio.Task[None]
) -> None:
    """The request body is read; the next message can only be the client leaving."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            if not channel.closed:
                log.info("client disconnected; cancelling run %s", run.get_name())
            channel.abort()
            run.cancel()
            return


def _log_warnings(run_id: Any, warnings: Sequence[ProtocolWarning]) -> None:
    """One line for a whole input, however many members it stripped (INPUT-16):
    a count per rule and the first few warnings. (The guard escapes the line.)"""
    counts: dict[str, int] = {}
    for w in warnings:
        counts[w.rule] = counts.get(w.rule, 0) + 1
    tally = ", ".join(f"{rule} x{n}" for rule, n in counts.items())
    first = "; ".join(str(w) for w in warnings[:3])
    more = f"; and {len(warnings) - 3} more" if len(warnings) > 3 else ""
    log.warning(
        "run input of run %s: %d warning(s) (%s): %s%s",
        describe_value(run_id),
        len(warnings),
        tally,
        first,
        more,
    )


def _note_version(run_input: Mapping[str, Any]) -> None:
    """A newer or uninterpretable declaration is served anyway, with a warning (VER-5).

    The declaration is the client's text: logged truncated, never parsed beyond
    what :func:`~agui_tools._version.parse_version` bounds.
    """
    declared = run_input.get("protocolVersion")
    if declared is None:
        return
    theirs, ours = parse_version(declared), parse_version(PROTOCOL_VERSION)
    if theirs is None or (ours is not None and theirs > ours):
        log.warning(
            "[VER-5] run %r: the client declares protocol version %s; this producer speaks %s "
            "and serves the run under the processing model.",
            run_input.get("runId"),
            describe_value(declared),
            PROTOCOL_VERSION,
        )


def _check_content_type(headers: Headers) -> None:
    """Only ``application/json`` (TRANS-4): the other types a browser may POST
    without a CORS preflight (form encodings, ``text/plain``) — and none at all —
    are exactly what a cross-site forgery sends."""
    declared = headers.get("content-type")
    kind = (declared or "").split(";", 1)[0].strip().lower()
    if kind != "application/json":
        raise Refusal(
            415,
            {
                "rule": "TRANS-4",
                "path": "",
                "message": "the request body must be sent as Content-Type: application/json, not "
                f"{describe_value(declared) if declared is not None else '(none)'}.",
            },
            close=True,
        )


def _forbidden(what: str) -> Refusal:
    return Refusal(
        403,
        {
            "path": "",
            "message": f"{what}: this agent serves its own origin only (allowed_origins "
            "lists others).",
        },
        close=True,
    )


def _error_json(exc: ProtocolViolation) -> dict[str, Any]:
    out = exc.to_json()
    out.pop("index", None)  # run input has no stream position
    return out


def agent_app(
    agent: Agent,
    *,
    path: str = "/",
    verify: bool = True,
    keepalive: float | None = 15.0,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    strict_input: bool = True,
    expose_errors: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
    authorize: Authorize | None = None,
    allowed_origins: Sequence[str] = (),
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
    max_concurrency: int | None = DEFAULT_MAX_CONCURRENCY,
    max_unknown: int = DEFAULT_MAX_UNKNOWN,
    max_messages: int = DEFAULT_MAX_MESSAGES,
    allowed_hosts: Sequence[str] = (),
    resumable: Resumable | None = None,
) -> Starlette:
    """A Starlette application serving ``agent`` at ``POST path``.

    Mount it in FastAPI or Starlette (``api.mount("/agent", agent_app(agent))``)
    or run it directly (``uvicorn.run(agent_app(agent))``). ``authorize``
    judges each request before its body is read (see
    :mod:`agui_tools.transport._auth`). With ``allowed_origins``, CORS is
    answered for those origins (preflight included), so a browser frontend
    served elsewhere can call the agent; without, browsers on other origins are
    refused. With ``resumable``, runs that opt in survive their connection
    (docs/resumable.md): rejoined at ``GET path/threads/T/runs/R/events``, stopped
    at ``POST …/stop``, declared at ``GET path/capabilities``. Other options: see
    :class:`AgentEndpoint`.
    """
    endpoint = AgentEndpoint(
        agent,
        verify=verify,
        keepalive=keepalive,
        max_body_bytes=max_body_bytes,
        strict_input=strict_input,
        expose_errors=expose_errors,
        max_depth=max_depth,
        allowed_origins=allowed_origins,
        body_timeout=body_timeout,
        max_concurrency=max_concurrency,
        max_unknown=max_unknown,
        max_messages=max_messages,
        allowed_hosts=allowed_hosts,
        resumable=resumable,
    )
    app: Any = endpoint if authorize is None else Authorized(endpoint, authorize)
    return routed(app, path, allowed_origins, endpoint=endpoint, resumable=resumable is not None)


def routed(
    app: Any,
    path: str,
    allowed_origins: Sequence[str],
    *,
    endpoint: Any = None,
    resumable: bool = False,
) -> Starlette:
    """``app`` at ``POST path``, with CORS answered for ``allowed_origins`` (none: no CORS);
    ``endpoint`` (default: ``app`` itself) is kept as ``state.agui_endpoint``, which
    ``serve`` shuts down gracefully. ``resumable`` routes the binding's rejoin, stop
    and capabilities to ``app`` too."""
    routes = [
        Route(path, app, methods=["POST"]),
        *(extension_routes(path, app) if resumable else ()),
    ]
    headers = ["content-type", "accept", "authorization"]
    if resumable:
        headers += ["agui-resumable", "last-event-id"]
    middleware = []
    if allowed_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(allowed_origins),
                allow_methods=["GET", "POST"] if resumable else ["POST"],
                allow_headers=headers,
                expose_headers=["agui-resumable"] if resumable else [],
            )
        )
    served = DirectRouted(routes=routes, middleware=middleware)
    served.state.agui_endpoint = app if endpoint is None else endpoint
    return served
