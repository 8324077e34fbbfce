"""``proxy --resumable``: a standard agent behind the proxy made resumable (docs/proxy.md).

A frontend that opts in (``Agui-Resumable: 1``, RESUME-1) is answered as ``serve
--resumable`` answers it, by the same code (:class:`~._resumable.ResumableRuns`: the
run log, its keeper, the reader every response and rejoin is): here the run's writer
is the upstream's answer, read to its end by a task of its own — still judged inline —
whether the frontend stays or not. The upstream is asked a standard request (the
opt-in headers dropped); what only a producer could say, the proxy says in the log's
terminal event: a stop closes the upstream connection, the one stop a standard agent
knows, and ends the run ``RUN_ERROR`` ``STOPPED`` — the proxy cannot close in order
what the agent opened (RUN-6's alternative); an upstream that ends without a terminal
event ends it ``UPSTREAM_CUT`` (TRANS-6). A mixin of ProxyApp.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import httpx
import orjson
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from .._errors import LimitExceeded, ProtocolViolation
from ..app._watch import InputJudged, StreamWatch, WatchFinding, binding_of
from ..wire._framing import SSE_MEDIA_TYPE, SSEReader
from ..wire._lifecycle import ends_run
from ._client import _DECODABLE, _coding
from ._proxy_forwarding import Forwarding, _Decoded, _describe, _Timeline
from ._proxy_requests import redacted_url
from ._proxy_verdicts import log
from ._recording import RecordedExchange
from ._resumable import OPT_IN, ResumableRuns, opted_in, run_ids
from ._server import accepts_proto

if TYPE_CHECKING:
    from ._front import Front

__all__ = ["ResumableForwarding"]

_NOT_ASKED_UPSTREAM: Final = frozenset((OPT_IN, "last-event-id", "accept"))
"""The opt-in is the proxy's to honour: the upstream is asked a standard SSE run."""


def ending(code: str, message: str) -> bytes:
    """A ``RUN_ERROR`` the proxy ends a logged run with when the agent did not."""
    return orjson.dumps({"type": "RUN_ERROR", "message": message, "code": code})


def _framed(payload: str) -> bytes:
    """A payload as the log keeps it: each line after the first its own ``data:`` line."""
    return payload.encode().replace(b"\n", b"\ndata: ")


class _Logged:
    """A run's events on their way to the log. A terminal event is held until the
    body's next event or its end: a standard stream may say more after it, and the
    log takes nothing past the event it is closed with."""

    def __init__(self, runs: ResumableRuns, key: tuple[str, str]) -> None:
        self.runs, self.key = runs, key
        self.seq = 0
        self.room = runs.config.max_run_bytes
        self.held: bytes | None = None
        self.closed = False
        """The log took the terminal event, or a replica closed the run."""

    async def add(self, payloads: list[str]) -> None:
        """Log the decoded ``payloads`` (terminal or not is judged on them, before a
        multi-line payload is framed again as the log keeps it)."""
        batch = [self.held] if self.held is not None else []
        batch += [_framed(p) for p in payloads]
        self.held = batch.pop() if payloads and ends_run(payloads[-1]) else None
        await self._append(batch, terminal=False)

    async def end(self, otherwise: bytes) -> None:
        """The body is over: its held terminal event, else ``otherwise``, ends the run."""
        if not self.closed:
            await self._append([self.held if self.held is not None else otherwise], terminal=True)

    async def _append(self, batch: list[bytes], *, terminal: bool) -> None:
        if not batch or self.closed:
            return
        batch, terminal, self.room = self.runs.within_cap(self.key, batch, terminal, self.room)
        if not await self.runs.append(self.key, self.seq + 1, batch, terminal):
            self.closed = True  # closed by a replica that thought us dead
            return
        self.seq += len(batch)
        self.closed = terminal


class ResumableForwarding(Forwarding):
    """The opted-in exchange: the log begun, the upstream asked, its answer logged."""

    resumable: ResumableRuns | None
    front: Front
    _writers: set[asyncio.Task[None]]

    def _resumes(self, headers: Headers, judged: InputJudged | None) -> bool:
        """The frontend opted in, as ``serve --resumable`` reads it (a binary stream is
        not the binding's: it gets today's proxy)."""
        return (
            self.resumable is not None
            and not accepts_proto(headers.get("accept"))
            and judged is not None
            and isinstance(judged.thread_id, str)
            and opted_in(headers, judged.run_id)
        )

    async def _extension(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Serve a rejoin, a stop or the capabilities at the proxy's paths; ``False``:
        the request is none of them (it is forwarded)."""
        if self.resumable is None:
            return False
        ids = run_ids(scope)
        if ids is not None:
            await self.resumable.serve_extension(
                {**scope, "path_params": {"ids": ids}}, receive, send
            )
            return True
        if scope["method"] == "GET" and scope.get("path", "").endswith("/capabilities"):
            await self.resumable.serve_extension(scope, receive, send)
            return True
        return False

    async def _forward_resumable(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        url: str,
        body: bytes,
        judged: InputJudged,
        exchange: RecordedExchange | None,
        meta: dict[str, Any],
        on_finding: Callable[[WatchFinding], None],
        number: int,
        complete: Callable[[], None],
    ) -> bool:
        """The opted-in run; ``True`` when its writer took it over (and calls
        ``complete`` when the upstream's answer is over), ``False`` when it is over."""
        runs = self.resumable
        assert runs is not None and judged.thread_id is not None and judged.run_id is not None
        thread_id, run_id = str(judged.thread_id), str(judged.run_id)
        key = (thread_id, run_id)
        if not await runs.begin(thread_id, run_id, scope, receive, send):
            meta |= {"contentType": "application/json", "refused": True}
            return False
        meta["resumable"] = True
        stop = runs.writing(key)
        detached = False
        try:
            request = self._upstream_request(scope, url, body, drop=_NOT_ASKED_UPSTREAM)
            request.headers["accept"] = SSE_MEDIA_TYPE
            if self._stop is None:
                self._stop = asyncio.get_running_loop().create_future()
            sending = asyncio.ensure_future(self.client.send(request, stream=True))
            stopping = asyncio.ensure_future(stop.wait())
            try:
                waiting: set[asyncio.Future[Any]] = {sending, stopping, self._stop}
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stopping.cancel()
                if not sending.done():
                    sending.cancel()
                    await asyncio.wait({sending})
            shown, asgi = redacted_url(url), (scope, receive, send)
            logged = _Logged(runs, key)
            if sending.cancelled():
                if stop.is_set():  # asked before the upstream answered: the run is over
                    await logged.end(_stopped())
                    await runs.follow(thread_id, run_id, 0, receive, send)
                    return False
                self.abandoned += 1
                await logged.end(_proxy_stopped())
                message = f"stopped before the upstream {shown} answered"
                await self._problem(asgi, exchange, meta, shown, 503, message, proxyStopped=True)
                return False
            problem = sending.exception()
            if isinstance(problem, httpx.HTTPError):
                message = f"the upstream {shown} cannot be reached: {_describe(problem)}"
                status = 503 if isinstance(problem, httpx.PoolTimeout) else 502
                await logged.end(ending("UPSTREAM_UNREACHABLE", f"agui-tools proxy: {message}"))
                await self._problem(asgi, exchange, meta, shown, status, message)
                return False
            response = sending.result()
            content_type = response.headers.get("content-type")
            meta |= {"status": response.status_code, "contentType": content_type}
            meta["responseHeaders"] = sorted({k.lower() for k in response.headers})
            coding = _coding(response)
            if (
                response.status_code != 200
                or binding_of(content_type) != "sse"
                or coding not in ("", "identity", *_DECODABLE)
            ):
                what = f"status {response.status_code}, {content_type or 'no content type'}"
                if coding not in ("", "identity"):
                    what += f", Content-Encoding {coding}"
                await logged.end(
                    ending(
                        "UPSTREAM_REFUSED",
                        f"agui-tools proxy: the upstream {shown} answered no SSE run ({what}); "
                        "its answer was forwarded as it came",
                    )
                )
                try:  # the answer as today's proxy forwards it, unjudged as a stream
                    if exchange is not None:
                        exchange.open(content_type)
                    if await self._pump(send, response, None, exchange, meta):
                        await send({"type": "http.response.body", "body": b"", "more_body": False})
                finally:
                    await response.aclose()
                return False
            decoded = None
            if coding not in ("", "identity"):
                meta["contentEncoding"] = coding
                decoded = _Decoded(coding, on_finding, judged)
            watch = StreamWatch(
                "sse", run_input=judged.stream_input, on_finding=on_finding, keep=False
            )
            if exchange is not None:
                exchange.open(content_type)
            writing = self._write_log(
                response, logged, stop, watch, decoded, judged, exchange, meta, number, complete
            )
            runs.detach(writing, self._writers, self.front.slot, run_id)
            detached = True  # the writer says written() when the answer is over
            await runs.follow(thread_id, run_id, 0, receive, send)
            return True
        finally:
            if not detached:
                runs.written(key)

    async def _write_log(
        self,
        response: httpx.Response,
        logged: _Logged,
        stop: asyncio.Event,
        watch: StreamWatch,
        decoded: _Decoded | None,
        judged: InputJudged,
        exchange: RecordedExchange | None,
        meta: dict[str, Any],
        number: int,
        complete: Callable[[], None],
    ) -> None:
        """Read the upstream's answer to its end (or a stop), judging it and logging its
        events; end the logged run; then the exchange's verdict."""
        assert self.resumable is not None
        timeline = _Timeline(self.observer, number, "sse") if self.observer and number else None
        reading = asyncio.create_task(
            self._read_upstream(response, logged, watch, decoded, exchange, meta, timeline)
        )
        stopping = asyncio.create_task(stop.wait())
        otherwise = b""
        try:
            await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not reading.done():  # a stop: the upstream connection is closed
                reading.cancel()
                await asyncio.gather(reading, return_exceptions=True)
                watch.cut, meta["stopped"] = True, True
                otherwise = _stopped()
            elif reading.exception() is not None:
                log.error("logging the upstream's answer failed", exc_info=reading.exception())
                otherwise = ending("PROXY_ERROR", "agui-tools proxy failed logging the run")
            else:
                otherwise = reading.result()
            await logged.end(otherwise)
        except asyncio.CancelledError:  # the proxy stops: said in the log, then over
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)
            watch.cut, meta["proxyStopped"] = True, True
            self.abandoned += 1
            await asyncio.shield(logged.end(_proxy_stopped()))
            raise
        except Exception:  # the log failed: the run's lease lapses (WORKER_DIED)
            log.exception("run %s: its log cannot be closed", logged.key[1])
        finally:
            stopping.cancel()
            self.resumable.written(logged.key)
            await response.aclose()
            if decoded is not None and decoded.failure is not None:
                meta["decodeError"] = decoded.failure.message
                watch.cut = True
            run_input = judged.stream_input
            self._remember(run_input, watch.outcome(run_input or {}), number)
            complete()

    async def _read_upstream(
        self,
        response: httpx.Response,
        logged: _Logged,
        watch: StreamWatch,
        decoded: _Decoded | None,
        exchange: RecordedExchange | None,
        meta: dict[str, Any],
        timeline: _Timeline | None,
    ) -> bytes:
        """The answer's events to the log as they come; what ends the log when the agent
        ended no run (its terminal event, when it did, is :class:`_Logged`'s)."""
        shown = redacted_url(str(response.request.url))
        events = SSEReader(max_event_bytes=watch.limits.max_event_bytes)
        strict = self.strict
        try:
            async for chunk in response.aiter_raw():
                data = chunk if decoded is None else decoded.feed(chunk)
                if exchange is not None:
                    exchange.write(data)
                fatal = decoded.failure if decoded is not None else None
                if strict:  # what a frontend would be sent: up to the first error
                    out, fatal = watch.admit(data) if data else (b"", fatal)
                    fatal = fatal or (decoded.failure if decoded is not None else None)
                    if fatal is not None:
                        watch.cut = True
                        out += watch.run_error(fatal)
                        meta["cut"] = {"rule": fatal.rule, "index": fatal.index}
                else:
                    out = data
                    watch.feed(data)
                if timeline is not None and data:
                    timeline.feed(data)
                if out:
                    try:
                        payloads = events.feed(out)
                    except (ProtocolViolation, LimitExceeded) as exc:
                        return ending("UPSTREAM_BROKEN", f"agui-tools proxy: {exc}")
                    await logged.add(payloads)
                if logged.closed or fatal is not None:
                    break
        except httpx.HTTPError as exc:
            message = f"the upstream {shown} cut the body: {_describe(exc)}"
            meta["upstreamError"] = message
            if self.on_upstream_error is not None:
                self.on_upstream_error(shown, message)
            return ending("UPSTREAM_CUT", f"[TRANS-6] agui-tools proxy: {message}")
        return ending(
            "UPSTREAM_CUT",
            f"[TRANS-6] agui-tools proxy: the upstream {shown} ended its answer before the "
            "run's terminal event",
        )


def _stopped() -> bytes:
    return ending(
        "STOPPED",
        "[RESUME-6] stopped through agui-tools proxy: it closed the upstream connection (a "
        "standard agent knows no other stop); what the run opened is not closed in order, "
        "so the run ends with RUN_ERROR (RUN-6)",
    )


def _proxy_stopped() -> bytes:
    return ending("PROXY_STOPPED", "agui-tools proxy stopped before the run ended")
