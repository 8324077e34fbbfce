"""The proxy's forwarding: the request sent upstream, its answer streamed back.

Headers each way, the answer chunk by chunk (judged inline after it is forwarded, or
before it in strict mode), decoded for the judge (:class:`_Decoded`), told to the
observer (:class:`_Timeline`); the proxy's own 502 and 503. A mixin of ProxyApp.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
from collections.abc import Callable, Sequence
from typing import Any, Final

import httpx
import orjson
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from ..app._watch import InputJudged, StreamWatch, WatchFinding, binding_of
from ..wire._framing import BrokenFrame, FrameNote, NDJSONReader, SSEReader
from ..wire._proto_framing import ProtoReader
from ._client import _DECODABLE, _DECODED, _coding, _Decoding
from ._proxy_requests import redacted_url
from ._proxy_verdicts import ProxyObserver, VerdictBook, log
from ._recording import RecordedExchange

__all__ = ["HOP_BY_HOP", "POOL_WAIT", "STOP_END_TIMEOUT", "Forwarding"]

POOL_WAIT: Final = 1.0
"""Seconds a request waits for one of the proxy's upstream connections before its 503."""

HOP_BY_HOP: Final = frozenset((
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
    "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
))  # fmt: skip
"""Headers that describe one connection, not the message (RFC 9110 §7.6.1)."""
_NOT_FORWARDED: Final = HOP_BY_HOP | {"host", "content-length", "accept-encoding"}


def _end_to_end(headers: Sequence[tuple[bytes, bytes]], drop: frozenset[str]) -> list[Any]:
    named = set(drop)
    for name, value in headers:
        if name.lower() == b"connection":
            named |= {t.strip().lower() for t in value.decode("latin-1").split(",")}
    return [(k, v) for k, v in headers if k.decode("latin-1").lower() not in named]


class _Timeline:
    """One answer's frames, as the agent sent them, told to the observer."""

    def __init__(self, observer: ProxyObserver, number: int, binding: str) -> None:
        self.observer, self.number, self.index = observer, number, -1
        readers = {"proto": ProtoReader, "ndjson": NDJSONReader}
        self._reader: Any = readers.get(binding, SSEReader)()

    def feed(self, chunk: bytes) -> None:
        if self._reader is None:
            return
        feed = getattr(self._reader, "feed_frames", None)
        try:
            frames = feed(chunk) if feed is not None else self._reader.feed(chunk)
        except Exception:  # NDJSON's reader raises: the judge says why, the timeline stops
            self._reader = None
            return
        for frame in frames:
            if not isinstance(frame, FrameNote):
                self.index += 1
                self.observer.exchange_event(self.number, self.index, frame)


class Forwarding(VerdictBook):
    """The exchanges of :class:`~._proxy.ProxyApp` sent upstream and answered."""

    via: str
    strict: bool
    abandoned: int
    upstream_connections: int | None
    on_upstream_error: Callable[[str, str], None] | None
    _timeout: httpx.Timeout
    _client: httpx.AsyncClient | None
    _stop: asyncio.Future[None] | None

    @property
    def client(self) -> httpx.AsyncClient:
        """The one client every frontend's requests go through; it keeps no cookie (an
        agent's ``Set-Cookie`` is the frontend's, never replayed for another's)."""
        if self._client is None:
            size = self.upstream_connections
            self._client = httpx.AsyncClient(
                timeout=self._timeout,
                limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
                follow_redirects=False,
                cookies=_no_cookies(),
            )
        return self._client

    def _upstream_request(
        self, scope: Scope, url: str, body: bytes, drop: frozenset[str] = frozenset()
    ) -> httpx.Request:
        """The request sent upstream, built as is, not by the client (whose build_request
        adds its default headers and cookies): the frontend's end-to-end headers but
        ``drop``, then this proxy's Via."""
        via = f"{scope.get('http_version', '1.1')} {self.via}".encode("latin-1")
        kept = _end_to_end(scope["headers"], _NOT_FORWARDED | drop)
        return httpx.Request(scope["method"], url, headers=[*kept, (b"via", via)], content=body)

    async def _forward(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        url: str,
        body: bytes,
        judged: InputJudged | None,
        exchange: RecordedExchange | None,
        meta: dict[str, Any],
        on_finding: Callable[[WatchFinding], None],
        number: int = 0,
    ) -> None:
        """Forward the request and stream the answer back, judged as it passes."""
        request = self._upstream_request(scope, url, body)
        if self._stop is None:
            self._stop = asyncio.get_running_loop().create_future()
        sending = asyncio.ensure_future(self.client.send(request, stream=True))
        waiting: set[asyncio.Future[Any]] = {sending, self._stop}
        try:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not sending.done():  # the proxy stops (or this exchange is cancelled)
                sending.cancel()
                await asyncio.wait({sending})
        shown, asgi = redacted_url(url), (scope, receive, send)
        if sending.cancelled():  # the proxy stopped before the upstream answered
            self.abandoned += 1
            message = f"stopped before the upstream {shown} answered"
            await self._problem(asgi, exchange, meta, shown, 503, message, proxyStopped=True)
            return
        try:
            response = sending.result()
        except httpx.PoolTimeout:  # the proxy's own limit: the agent was not asked
            message = (
                f"all {self.upstream_connections} upstream connection(s) in use for {POOL_WAIT} s "
                "(--upstream-connections): the proxy's own limit, the agent was not asked"
            )
            await self._problem(asgi, exchange, meta, shown, 503, message, poolFull=True)
            return
        except httpx.HTTPError as exc:
            message = f"the upstream {shown} cannot be reached: {_describe(exc)}"
            await self._problem(asgi, exchange, meta, shown, 502, message)
            return
        if not 200 <= response.status_code <= 599:
            # HTTP allows any 3 digits (LinkedIn's 999), the ASGI servers answer 100-599
            await response.aclose()
            message = (
                f"the upstream {shown} answered status {response.status_code} "
                f"({response.reason_phrase or 'no reason phrase'}), which the proxy cannot "
                "forward: an HTTP status it forwards is 200-599"
            )
            status = response.status_code
            await self._problem(asgi, exchange, meta, shown, 502, message, upstreamStatus=status)
            return
        content_type = response.headers.get("content-type")
        meta |= {"status": response.status_code, "contentType": content_type}
        meta["responseHeaders"] = sorted({k.lower() for k in response.headers})
        if "location" in response.headers:  # a redirect: the mock replays it with its target
            meta["location"] = response.headers["location"]
        binding = binding_of(content_type)
        watch: StreamWatch | None = None  # judged inline (strict: before forwarding)
        # (a body our server refuses for the thread's sake, 409, still reached the agent:
        # its answer is judged against the body it was sent, and remembered as its run)
        run_input = judged.stream_input if judged is not None else None
        judged_stream = judged is not None and binding is not None and response.status_code == 200
        coding = _coding(response)
        decoded: _Decoded | None = None
        if coding not in ("", "identity"):
            meta["contentEncoding"] = coding
            if coding in _DECODABLE:  # judged and recorded decoded; forwarded as it came
                decoded = _Decoded(coding, on_finding if judged_stream else None, judged)
            elif judged_stream:
                judged_stream = False
                assert judged is not None
                on_finding(
                    WatchFinding(
                        "TRANS-4",
                        "warning",
                        "proxy",  # the agent may use any coding: a request names none
                        f"not judged: the answer's Content-Encoding {coding!r} is not one "
                        f"the proxy decodes ({', '.join(_DECODED)}); the stream is forwarded "
                        "as it came, unjudged, and recorded as it came",
                        thread_id=judged.thread_id,
                        run_id=judged.run_id,
                    )
                )
        if judged_stream and binding is not None:
            watch = StreamWatch(binding, run_input=run_input, on_finding=on_finding, keep=False)
        if exchange is not None:
            exchange.open(content_type)
        timeline = (
            _Timeline(self.observer, number, binding)
            if self.observer is not None and binding is not None and number
            else None
        )
        pump = asyncio.create_task(
            self._pump(send, response, watch, exchange, meta, timeline, decoded)
        )
        gone = asyncio.create_task(_disconnected(receive))
        assert self._stop is not None  # (made when the request was sent upstream)
        ended = stopped = False
        try:
            streaming: set[asyncio.Future[Any]] = {pump, gone, self._stop}
            await asyncio.wait(streaming, return_when=asyncio.FIRST_COMPLETED)
            if not pump.done() and gone.done():  # the frontend left: so does the proxy
                pump.cancel()
                meta["clientGone"] = True
            elif not pump.done():  # the proxy stops (stop_streams): the stream ends here
                await asyncio.sleep(0)  # (the pump has sent the answer's start by now)
                pump.cancel()
                stopped = True
                meta["proxyStopped"] = True
        finally:
            gone.cancel()
            await asyncio.wait({pump, gone})
            await response.aclose()
            # an upstream cut is the frontend's cut too (no end is sent): never repaired;
            # a stream the proxy stopped is given the body's end
            ended = stopped or (not pump.cancelled() and pump.exception() is None and pump.result())
            # cut short by the frontend or the proxy: no truncation said of the agent
            cut_short = pump.cancelled()
            if cut_short:
                self.abandoned += 1
            if decoded is not None and decoded.failure is not None:
                meta["decodeError"] = decoded.failure.message
                cut_short = True  # judged up to where it stopped decoding, said then
            if not pump.cancelled() and pump.exception() is not None:
                log.error("proxying %s failed", shown, exc_info=pump.exception())
            # the verdict is in, the thread's last run remembered, before the body ends
            outcome = None
            if watch is not None:
                watch.cut = watch.cut or cut_short
                outcome = watch.outcome(run_input or {})
            self._remember(run_input, outcome, number)
        if ended:
            end = send({"type": "http.response.body", "body": b"", "more_body": False})
            if not stopped:
                await end
            else:
                # a frontend holding the stream unread is given a moment, then left cut
                try:
                    await asyncio.wait_for(end, STOP_END_TIMEOUT)
                except TimeoutError:
                    meta["endUnsent"] = True

    async def _problem(
        self,
        asgi: tuple[Scope, Receive, Send],
        exchange: RecordedExchange | None,
        meta: dict[str, Any],
        url: str,
        status: int,
        message: str,
        **more: Any,
    ) -> None:
        """Answer the proxy's own problem JSON: ``502`` blames the agent (the upstream
        cannot be reached, or answered what cannot be forwarded; ``on_upstream_error``
        is told), any other the proxy (503: it stops, its connections are in use; 508)."""
        side = "agent" if status == 502 else "proxy"
        meta |= {"status": status, "contentType": "application/json", **more}
        if status != 503:  # the upstream's doing, or the loop it leads into
            meta["upstreamError"] = message
            if self.on_upstream_error is not None:
                self.on_upstream_error(url, message)
        text = f"agui-tools proxy: {message}"
        problem = {"path": "", "message": text, "upstream": url, "side": side}
        if exchange is not None:
            exchange.open("application/json")
            exchange.write(orjson.dumps({"error": problem}))
        close = {"connection": "close"} if status != 502 else None
        await JSONResponse({"error": problem}, status_code=status, headers=close)(*asgi)

    async def _pump(
        self,
        send: Send,
        response: httpx.Response,
        watch: StreamWatch | None,
        exchange: RecordedExchange | None,
        meta: dict[str, Any],
        timeline: _Timeline | None = None,
        decoded: _Decoded | None = None,
    ) -> bool:
        """The answer, chunk by chunk; ``True`` when the body came whole (the caller
        sends its end), ``False`` when the upstream cut it (so is the frontend's)."""
        strict = self.strict and watch is not None
        drop = HOP_BY_HOP
        if strict or "transfer-encoding" in response.headers:
            # strict: the body sent may differ from the agent's (a RUN_ERROR ends it);
            # Transfer-Encoding beside Content-Length: the length is not the body's
            # (RFC 9112 §6.3, an intermediary removes it) — sent chunked instead
            drop = HOP_BY_HOP | {"content-length"}
        if strict and decoded is not None:
            # strict judges the decoded events and forwards what it judged: decoded
            drop |= {"content-encoding"}
        # the agent's end-to-end headers, and this proxy's Via after the agent's own
        # (RFC 9110 §7.6.3: a proxy sends one in each message it forwards, answers too)
        version = response.http_version.removeprefix("HTTP/")
        via = (b"via", f"{version} {self.via}".encode("latin-1"))
        headers = [*_end_to_end(response.headers.raw, drop), via]
        await send(
            {"type": "http.response.start", "status": response.status_code, "headers": headers}
        )
        try:
            async for chunk in response.aiter_raw():
                # a frontend gone is seen before the next write (else asyncio logs
                # "socket.send() raised exception." for each write past the 4th)
                await asyncio.sleep(0)
                data = chunk if decoded is None else decoded.feed(chunk)
                if exchange is not None:
                    exchange.write(data)
                if not strict:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    if not data:
                        continue
                    if timeline is not None:  # after the bytes left: the page never delays them
                        timeline.feed(data)
                    if watch is not None:
                        watch.feed(data)
                    continue
                assert watch is not None
                fatal: WatchFinding | None
                out, fatal = watch.admit(data) if data else (b"", None)
                over = False
                if fatal is None and decoded is not None and decoded.failure is not None:
                    fatal = decoded.failure  # the rest does not decode: ended there
                    watch.cut = True  # by the proxy: no truncation said
                    # (a run already over — a bad CRC trailer — gets no RUN_ERROR after it)
                    run = watch.pipe.verifier.current_run
                    over = run is not None and run.status != "running"
                if fatal is not None:
                    out += b"" if over else watch.run_error(fatal)
                    meta["cut"] = {"rule": fatal.rule, "index": fatal.index}
                if out:
                    await send({"type": "http.response.body", "body": out, "more_body": True})
                if timeline is not None and data:  # what the agent sent, the broken rest too
                    timeline.feed(data)
                if fatal is not None:
                    break
        except httpx.HTTPError as exc:
            shown = redacted_url(str(response.request.url))
            message = f"the upstream {shown} cut the body: {_describe(exc)}"
            meta["upstreamError"] = message
            if self.on_upstream_error is not None:
                self.on_upstream_error(shown, message)
            return False
        return True


class _Decoded:
    """An answer's body with its gzip/deflate undone as it arrives (the client's bounded
    decoder): what is judged and recorded. Where it stops decoding, :attr:`failure` is
    the finding (TRANS-4 or LIMIT), told when the stream is judged."""

    def __init__(
        self,
        coding: str,
        on_finding: Callable[[WatchFinding], None] | None,
        judged: InputJudged | None,
    ) -> None:
        self.coding = coding
        self._decoding = _Decoding(coding)
        self._on_finding = on_finding
        self._judged = judged
        self.failure: WatchFinding | None = None

    def feed(self, chunk: bytes) -> bytes:
        if self.failure is not None:
            return b""
        out = bytearray()
        for piece in self._decoding.feed(chunk):
            if isinstance(piece, BrokenFrame):
                error = piece.violation
                self.failure = WatchFinding(
                    error.rule,
                    "error",
                    "agent",
                    f"the answer's Content-Encoding {self.coding!r} does not decode after "
                    f"{self._decoding.decoded} byte(s): {error.explanation} Nothing after "
                    "it is judged or recorded.",
                    thread_id=self._judged.thread_id if self._judged else None,
                    run_id=self._judged.run_id if self._judged else None,
                )
                if self._on_finding is not None:
                    self._on_finding(self.failure)
                break
            out += piece
        return bytes(out)


STOP_END_TIMEOUT: Final = 0.5
"""Seconds a frontend not reading is given to take a stopped stream's body's end
(``stop_streams``): past it, its answer is left cut (``endUnsent`` in the meta)."""


def _no_cookies() -> http.cookiejar.CookieJar:
    """A cookie jar that keeps nothing (no domain is allowed to set a cookie in it)."""
    return http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _describe(exc: httpx.HTTPError) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text
