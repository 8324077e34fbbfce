"""The HTTP+SSE client: POST a run input, read the SSE stream, feed the pipeline.

A thin adapter (the httpx side of the h11 picture): it owns the socket and the
bytes, nothing else. Every frame goes through :class:`~agui_tools.wire._framing.SSEReader`
and then through a :class:`~agui_tools.app._conversation.Conversation`'s pipeline and
reducer — there is no path that hands application code an event the pipeline
did not judge.

What the binding requires of a client (``basic/transports/http-sse``):

* ``POST`` with ``Content-Type: application/json`` and an explicit
  ``Accept: text/event-stream`` (TRANS-4, TRANS-7), the input declaring
  ``protocolVersion`` toward a current peer (INPUT-4);
* the full SSE grammar accepted (TRANS-5);
* a non-2xx answer is an error carrying status and body; a ``200`` never implies
  success (TRANS-6) — the run's terminal event does;
* a body that ends without a terminal event is a *truncated* run, and an
  abandoned stream (cancelled, timed out) never gets a synthetic
  ``RUN_FINISHED`` (TRANS-2, RUN-9).

The binary binding (``basic/transports/http-protobuf``, TRANS-7): with
``transport="proto"`` or ``"auto"`` the request's ``Accept`` names
``application/vnd.ag-ui.event+proto`` beside ``text/event-stream``; the parser
is chosen by the response's ``Content-Type`` — length-prefixed protobuf frames
(:class:`~agui_tools.wire._proto_framing.ProtoReader`) or SSE, which a client
MUST always be prepared for — and the decoded events enter the same pipeline.
``"proto"`` logs when the agent answered SSE instead; ``"auto"`` takes either
quietly. ``"sse"`` (the default) asks for SSE only.

The resumable extension (docs/resumable.md), with ``resumable=True``: the run
request opts in (``Agui-Resumable: 1``); when the agent confirms, a cut
(connection reset, a body ending before the run's terminal event, a read or idle
timeout) is followed by a rejoin with ``Last-Event-ID`` and backoff, and the
events already delivered are dropped from the replay, so the pipeline reads one
continuous stream (:mod:`._rejoin` decides; this module only moves the bytes). An
agent that does not confirm gets the standard client, unchanged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final, Generic, Literal, Protocol, TypeVar

import httpx
import orjson

from .. import _telemetry
from .._errors import TransportError, UsageError
from ..app._conversation import Conversation, RunResult, Update
from ..app._downgrade import prepare_run_input
from ..app._driver import AsyncDriver, Driver
from ..wire._codec import refuse_non_finite
from ..wire._enforce import DEFAULT_MAX_DEPTH, checked_max_depth, shared_enforcer
from ..wire._framing import (
    DEFAULT_MAX_EVENT_BYTES,
    PROTO_MEDIA_TYPE,
    SSE_MEDIA_TYPE,
    BrokenFrame,
    SSEReader,
)
from ._decoding import MAX_INFLATION
from ._decoding import _Decoding as _Decoding  # the proxy reads it here too
from ._rejoin import RESUMABLE_HEADER, RejoinPolicy, RejoinState

__all__ = [
    "MAX_INFLATION",
    "AgentClient",
    "BaseAgentClient",
    "RejoinPolicy",
    "SyncAgentClient",
    "Transport",
    "TransportError",
]

log = logging.getLogger("agui_tools.transport")

Transport = Literal["sse", "proto", "auto"]
"""Which binding a client asks for: SSE only, or the binary one (SSE still accepted)."""

DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=300.0, write=30.0, pool=10.0)
DEFAULT_IDLE_TIMEOUT: Final = 300.0
"""Seconds a stream may go without delivering a whole event. httpx's read
timeout restarts with every byte, so a peer dripping one byte a second — or an
endless flood of comments — held a client forever; this deadline does not
restart until an event is complete. 300 s, like the read timeout it replaces
as the bound: comments (keep-alives) do not count, and an agent may think long."""
_BODY_LIMIT = 64 * 1024
# the content codings the client decodes, named rather than left to httpx's default
# (which also offers br and zstd whenever their packages happen to be installed)
_DECODED: Final = ("gzip", "deflate")
_DECODABLE: Final = (*_DECODED, "x-gzip")  # x-gzip is gzip (RFC 9110 §8.4.1.3), never asked for
_HEADERS = {
    "Content-Type": "application/json",
    "Accept": SSE_MEDIA_TYPE,
    "Accept-Encoding": ", ".join(_DECODED),
}
_ACCEPT: dict[str, str] = {
    "sse": SSE_MEDIA_TYPE,
    "proto": f"{PROTO_MEDIA_TYPE}, {SSE_MEDIA_TYPE}",
    "auto": f"{PROTO_MEDIA_TYPE}, {SSE_MEDIA_TYPE}",
}


def _headers(transport: str, extra: Mapping[str, str] | None) -> dict[str, str]:
    if transport not in _ACCEPT:
        raise UsageError(
            f"transport={transport!r}: choose 'sse', 'proto' or 'auto'.", rule="TRANS-7"
        )
    return {**_HEADERS, "Accept": _ACCEPT[transport], **(extra or {})}


def _connection_error(url: str, exc: httpx.HTTPError, streaming: bool) -> TransportError:
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if streaming:
        return TransportError(
            f"the connection to the agent at {url} failed mid-stream ({detail}); the run ends "
            "truncated",
            url=url,
            truncated=True,
        )
    return TransportError(f"cannot reach the agent at {url} ({detail})", url=url)


async def _error_body(response: httpx.Response) -> bytes:
    """At most ``_BODY_LIMIT`` bytes of an error answer: the rest is never read.

    An error body is for a person to read; a server (or anything in between)
    answering a 500 with an endless body must not hold the client.
    """
    body = bytearray()
    async for chunk in response.aiter_bytes():
        if _full(body, chunk):
            break
    return bytes(body[:_BODY_LIMIT])


def _error_body_sync(response: httpx.Response) -> bytes:
    body = bytearray()
    for chunk in response.iter_bytes():
        if _full(body, chunk):
            break
    return bytes(body[:_BODY_LIMIT])


def _full(body: bytearray, chunk: bytes) -> bool:
    """Add ``chunk`` to an error body; True once it holds all of it anyone will read."""
    body += chunk
    return len(body) >= _BODY_LIMIT


def _status_error(response: httpx.Response, body: bytes) -> TransportError:
    text = body[:_BODY_LIMIT].decode("utf-8", "replace")
    return TransportError(
        f"the agent at {response.request.url} answered HTTP {response.status_code}: {text[:300]}",
        status=response.status_code,
        body=text,
        url=str(response.request.url),
    )


def _coding(response: httpx.Response) -> str:
    return str(response.headers.get("content-encoding", "")).strip().lower()


def _check_stream(response: httpx.Response) -> None:
    coding = _coding(response)
    if coding not in ("", "identity", *_DECODABLE):
        raise TransportError(
            f"the agent at {response.request.url} answered with Content-Encoding {coding!r}, "
            f"which this client does not decode (it asked for {', '.join(_DECODED)} or identity)",
            status=response.status_code,
            url=str(response.request.url),
        )


class _Reader(Protocol):
    def feed_frames(self, chunk: bytes) -> list[Any]: ...


def _reader_for(
    response: httpx.Response,
    transport: str,
    max_event_bytes: int,
    max_depth: int,
    event_ids: bool = False,
) -> _Reader:
    """The parser the response's ``Content-Type`` calls for (TRANS-7), or an error."""
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == PROTO_MEDIA_TYPE:
        from ..wire._proto_framing import ProtoReader

        return ProtoReader(max_event_bytes=max_event_bytes, max_depth=max_depth)
    if kind == SSE_MEDIA_TYPE:
        if transport == "proto":
            log.info(
                "the agent at %s answered SSE: it does not serve the binary binding",
                response.request.url,
            )
        return SSEReader(max_event_bytes=max_event_bytes, event_ids=event_ids)
    raise TransportError(
        f"the agent at {response.request.url} answered {response.status_code} with "
        f"Content-Type {kind or '(none)'!r}, not an event stream",
        status=response.status_code,
        url=str(response.request.url),
    )


class _Deadlines:
    """The idle-event deadline and the optional run deadline of one request."""

    def __init__(self, url: str, idle: float | None, run: float | None) -> None:
        self.url = url
        self.idle = idle
        self.run = run
        now = time.monotonic()
        self._started = now
        self._last_event = now
        self.capped = False  # the read timeout is the idle deadline
        self.idle_expired = False

    def restart_idle(self) -> None:
        """A rejoined stream: silence is counted from now, the run deadline is not."""
        self._last_event = time.monotonic()
        self.idle_expired = False

    def timeout(self, configured: httpx.Timeout) -> httpx.Timeout:
        """The request's timeouts, with silence (no byte at all) capped at ``idle``."""
        read = configured.read
        if self.idle is not None and (read is None or read > self.idle):
            read = self.idle
            self.capped = True
        return httpx.Timeout(
            connect=configured.connect, read=read, write=configured.write, pool=configured.pool
        )

    def check(self, events: int) -> None:
        now = time.monotonic()
        if events:
            self._last_event = now
        elif self.idle is not None and now - self._last_event > self.idle:
            self.idle_expired = True
            raise self.idle_error()
        if self.run is not None and now - self._started > self.run:
            raise TransportError(
                f"the run at {self.url} did not end within run_timeout={self.run:g} s; the run "
                "ends truncated",
                url=self.url,
                truncated=True,
            )

    def idle_error(self) -> TransportError:
        return TransportError(
            f"the agent at {self.url} sent no complete event for idle_timeout={self.idle:g} s "
            "(bytes or comments may have arrived); the run ends truncated",
            url=self.url,
            truncated=True,
        )


def _body(run_input: Mapping[str, Any], peer_version: str | None, max_depth: int) -> bytes:
    """The request body, exactly as sent — or a :class:`UsageError` and nothing sent.

    orjson writes NaN and ±Infinity as ``null`` without a word, which would
    change the state (or any value) the agent is handed: refused, naming the
    path (TRANS-4). A value orjson cannot write at all (nested past its 254
    levels, an integer beyond 64 bits, a non-JSON type) is refused the same way.
    """
    # judged at the client's own nesting limit: a state it accepted at a raised
    # max_depth is sent back at the same one
    prepared, _ = prepare_run_input(
        run_input, peer_version=peer_version, enforcer=shared_enforcer(max_depth)
    )
    refuse_non_finite(prepared, "refusing to send the run input")
    try:
        return orjson.dumps(prepared)
    except orjson.JSONEncodeError as exc:
        raise UsageError(
            f"refusing to send the run input: a value is not JSON ({exc}).", rule="TRANS-4"
        ) from None


H = TypeVar("H", httpx.AsyncClient, httpx.Client)


class _Exchange:
    """One POST and the stream answering it: everything both faces do around the bytes.

    The faces differ only in how they wait (``async for`` or ``for``); what is
    sent, what an answer must look like, how frames are cut and what a failure
    is called is decided here, once.
    """

    __slots__ = (
        "body",
        "deadlines",
        "decoding",
        "done",
        "max_depth",
        "max_event_bytes",
        "reader",
        "rejoin",
        "streaming",
        "transport",
        "url",
    )

    def __init__(self, client: BaseAgentClient[Any], run_input: Mapping[str, Any]) -> None:
        self.url = client.url
        # checked and prepared exactly as it will be sent (unknown material stripped,
        # malformed fields refused — before anything is sent)
        self.body = _body(run_input, client.peer_version, client.max_depth)
        self.transport = client.transport
        self.max_event_bytes = client.max_event_bytes
        self.max_depth = client.max_depth
        self.reader: _Reader | None = None
        self.streaming = False
        self.deadlines = _Deadlines(self.url, client.idle_timeout, client.run_timeout)
        self.decoding = _Decoding("")
        self.done = False  # the stream was refused mid-way: nothing more is read
        # the resumable opt-in's state (None: the standard binding only)
        self.rejoin = RejoinState(self.url, run_input, client.rejoin) if client.resumable else None

    def timeout(self, configured: httpx.Timeout) -> httpx.Timeout:
        return self.deadlines.timeout(configured)

    def accept(self, response: httpx.Response) -> None:
        """A 2xx answer: an event stream in the binding its Content-Type names (its
        content coding checked), which from now on is being read."""
        _check_stream(response)
        state = self.rejoin
        if state is not None and not state.confirmed:
            state.confirmed = RejoinState.confirms(response.headers)
        confirmed = state is not None and state.confirmed
        self.reader = _reader_for(
            response, self.transport, self.max_event_bytes, self.max_depth, confirmed
        )
        if confirmed and not isinstance(self.reader, SSEReader):
            self.rejoin = None  # the opt-in is SSE's alone: a binary answer is standard
        self.decoding = _Decoding(_coding(response))
        self.streaming = True

    def may_rejoin(self, exc: BaseException | None = None) -> bool:
        """Whether a stream that ended (``exc``: how it broke) is a cut to rejoin: the
        agent confirmed the opt-in, the run's terminal event has not arrived, and
        nothing was refused. A deadline of the run's own is never a cut."""
        state = self.rejoin
        if state is None or not state.confirmed or state.ended or state.broken or self.done:
            return False
        if isinstance(exc, TransportError):  # the idle deadline, or a rejoin's 5xx
            return self.deadlines.idle_expired or (exc.status or 0) >= 500
        return exc is None or isinstance(exc, httpx.TransportError)

    def complete(self) -> bool:
        """An opted-in run whose terminal event was delivered: it is whole."""
        return self.rejoin is not None and self.rejoin.ended

    def rejoin_request(self, why: str) -> tuple[str, dict[str, str | bytes], float]:
        """The next rejoin's URL, headers and the wait before it; raises the
        truncation :class:`TransportError` once the policy gives up."""
        state = self.rejoin
        assert state is not None
        delay = state.next_delay()
        if delay is None:
            raise TransportError(state.gave_up(why), url=self.url, truncated=True)
        log.info("the run at %s was cut (%s): rejoining after seq %d", self.url, why, state.last)
        return state.events_url, state.rejoin_headers(), delay

    def rejoined(self, response: httpx.Response, body: bytes | None) -> TransportError | None:
        """A rejoin's answer: ``None`` when it is the run's stream, now being read;
        the error to try again after (a 5xx); or, raised, the truncation error (the
        log is gone or refuses the id: 4xx, the run cannot be resumed)."""
        state = self.rejoin
        assert state is not None
        if response.status_code >= 500:
            return _status_error(response, body or b"")
        if response.status_code >= 300 or not RejoinState.confirms(response.headers):
            error = _status_error(response, body or b"")
            raise TransportError(
                f"{state.gave_up(f'HTTP {response.status_code}')}: {error}",
                status=response.status_code,
                body=error.body,
                url=self.url,
                truncated=True,
            )
        self.accept(response)
        self.deadlines.restart_idle()
        state.rejoins += 1
        return None

    def frames(self, raw: bytes) -> list[Any]:
        """The frames one received chunk completes, for the pipeline: SSE ``data``
        payloads, or the events (and notes) of binary frames — content coding
        undone, the deadlines checked. A frame the reader cannot produce travels
        as a BrokenFrame, so the conversation rejects the run at its position like
        any stream violation; a stream that inflates too far or does not decode
        ends with one, and :attr:`done` says to read no more."""
        assert self.reader is not None, "accept() the response first"
        frames: list[Any] = []
        for chunk in self.decoding.feed(raw):
            if isinstance(chunk, BrokenFrame):
                frames.append(chunk)
                self.done = True
                return frames
            new = self.reader.feed_frames(chunk)
            self.deadlines.check(len(new))
            if self.rejoin is not None and self.rejoin.confirmed:
                assert isinstance(self.reader, SSEReader)
                new = self.rejoin.admit(new, self.reader.take_event_ids())
                if self.rejoin.broken:
                    self.done = True
                    return frames + new
            frames += new
        return frames

    def cut_reason(self, exc: BaseException | None) -> str:
        if exc is None:
            return "the stream ended before the run's terminal event"
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__

    def failure(self, exc: httpx.HTTPError | TransportError) -> TransportError:
        """What a stream's failure is called (a TransportError stays itself)."""
        return exc if isinstance(exc, TransportError) else self.failed(exc)

    def failed(self, exc: httpx.HTTPError) -> TransportError:
        if isinstance(exc, httpx.ReadTimeout) and self.streaming and self.deadlines.capped:
            return self.deadlines.idle_error()
        return _connection_error(self.url, exc, self.streaming)


class BaseAgentClient(Generic[H]):
    """What the async and the sync client share (as httpx's ``BaseClient``).

    Args:
        url: the agent's POST endpoint.
        http: the httpx client to use (one is created, and closed with this
            client, otherwise). Timeouts are on by default.
        headers: extra request headers (authentication, say).
        timeout: for the httpx client this one creates.
        peer_version: the agent's protocol version when known (downgrades).
        max_event_bytes: the largest event accepted (an SSE event, a binary frame).
        max_depth: how deeply a binary frame's values may nest while it is decoded
            (:data:`~agui_tools.wire._enforce.DEFAULT_MAX_DEPTH`; give the
            conversation's ``limits.max_depth`` when it is raised): a deeper one
            ends the run rejected (``LIMIT``), as enforcement does on SSE.
        transport: ``"sse"`` (the default), or ``"proto"`` / ``"auto"`` to ask for
            the binary binding — the answer's ``Content-Type`` decides the parser.
        idle_timeout: seconds the stream may go without a complete event
            (:data:`DEFAULT_IDLE_TIMEOUT`; ``None``: no deadline).
        run_timeout: seconds the whole run may take (``None``, the default: no
            deadline). Either deadline ends the run truncated and raises
            :class:`TransportError` naming it.
        resumable: opt in to the resumable extension (docs/resumable.md): a cut
            run is rejoined where it left off, per ``rejoin``
            (:class:`~agui_tools.transport._rejoin.RejoinPolicy`), when the agent
            confirms; the idle deadline then rejoins too. :meth:`stop` asks the
            agent to end the run in flight as cancelled.
    """

    def __init__(
        self,
        url: str,
        *,
        http: H | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = DEFAULT_TIMEOUT,
        peer_version: str | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        transport: Transport = "sse",
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        run_timeout: float | None = None,
        max_depth: int = DEFAULT_MAX_DEPTH,
        resumable: bool = False,
        rejoin: RejoinPolicy | None = None,
    ) -> None:
        self.url = url
        self.transport = transport
        self.headers = _headers(transport, headers)
        self.resumable = resumable
        self.rejoin = rejoin or RejoinPolicy()
        if resumable:
            self.headers[RESUMABLE_HEADER] = "1"
        # the opted-in run being read (for stop()), and the last one's state
        self.current: RejoinState | None = None
        self._own = http is None
        self._http: H = http if http is not None else self._new_http(timeout)
        self.peer_version = peer_version
        self.max_event_bytes = max_event_bytes
        self.max_depth = checked_max_depth(max_depth)
        self.idle_timeout = idle_timeout
        self.run_timeout = run_timeout

    @staticmethod
    def _new_http(timeout: httpx.Timeout | float | None) -> H:
        raise NotImplementedError

    def _exchange(self, run_input: Mapping[str, Any]) -> _Exchange:
        exchange = _Exchange(self, run_input)
        self.current = exchange.rejoin
        return exchange

    def _stop_request(self) -> tuple[str, dict[str, str]] | None:
        state = self.current
        if state is None or not state.confirmed or state.ended:
            return None
        return state.stop_url, {**self.headers, "Content-Type": "application/json"}


def _stop_answer(response: httpx.Response, body: bytes) -> str:
    """``"stopping"`` (202) or ``"finished"`` (409: it had already ended); another
    answer is a :class:`TransportError` with its status and body."""
    if response.status_code == 202:
        return "stopping"
    if response.status_code == 409:
        return "finished"
    raise _status_error(response, body)


def _rejoin_headers(
    headers: Mapping[str, str], rejoin: Mapping[str, str | bytes]
) -> list[tuple[bytes, bytes]]:
    """A rejoin's GET: the run request's headers (authentication, say) and the
    rejoin's own, asking for SSE alone (the extension is SSE's). As bytes: the
    rejoin's ``Last-Event-ID`` is UTF-8, which a str header (ASCII) cannot carry."""
    out = {k: v for k, v in headers.items() if k.lower() != "content-type"}
    merged: dict[str, str | bytes] = {**out, "Accept": SSE_MEDIA_TYPE, **rejoin}
    return [
        (k.encode("ascii"), v if isinstance(v, bytes) else v.encode("ascii"))
        for k, v in merged.items()
    ]


@contextmanager
def _ending(
    conversation: Conversation, span: Any = None, events: list[int] | None = None
) -> Iterator[None]:
    """A transport failure or cancellation mid-stream still ends the run (as
    truncated, never as finished) before the exception propagates."""
    try:
        yield
    except BaseException:
        ended = Driver(conversation).abandon_run()
        if ended is not None:
            _telemetry.run_ended(span, ended, events[0] if events else 0)
        raise


def _deliver(
    conversation: Conversation, frames: list[Any], on_update: Callable[[Update], Any] | None
) -> None:
    updates = conversation.receive_many(frames)
    if on_update is not None:
        for update in updates:
            on_update(update)


class AgentClient(BaseAgentClient[httpx.AsyncClient]):
    """Async client for one AG-UI agent endpoint (arguments: :class:`BaseAgentClient`)."""

    @staticmethod
    def _new_http(timeout: httpx.Timeout | float | None) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=timeout)

    async def aclose(self) -> None:
        if self._own:
            await self._http.aclose()

    async def __aenter__(self) -> AgentClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def frames(self, run_input: Mapping[str, Any]) -> AsyncIterator[list[Any]]:
        """POST the input; yield what each network chunk completes (SSE ``data``
        payloads, or the events of binary frames) — on a resumable run, across
        rejoins, each event once."""
        exchange = self._exchange(run_input)
        cut: BaseException | None = None
        try:
            async with self._http.stream(
                "POST",
                self.url,
                content=exchange.body,
                headers=_telemetry.inject(self.headers),
                timeout=exchange.timeout(self._http.timeout),
            ) as response:
                if response.status_code >= 300:
                    raise _status_error(response, await _error_body(response))
                exchange.accept(response)
                async for chunk in response.aiter_raw():
                    if frames := exchange.frames(chunk):
                        yield frames
                    if exchange.done:
                        return
        except (httpx.HTTPError, TransportError) as exc:
            if exchange.complete():
                return  # the run's terminal event is in: what broke after it is no cut
            if not exchange.may_rejoin(exc):
                raise exchange.failure(exc) from exc
            cut = exc
        while exchange.may_rejoin(cut):
            url, headers, delay = exchange.rejoin_request(exchange.cut_reason(cut))
            await asyncio.sleep(delay)
            cut = None
            try:
                async with self._http.stream(
                    "GET",
                    url,
                    headers=_rejoin_headers(self.headers, headers),
                    timeout=exchange.timeout(self._http.timeout),
                ) as response:
                    body = await _error_body(response) if response.status_code >= 300 else None
                    if retry := exchange.rejoined(response, body):
                        cut = retry
                        continue
                    async for chunk in response.aiter_raw():
                        if frames := exchange.frames(chunk):
                            yield frames
                        if exchange.done:
                            return
            except (httpx.HTTPError, TransportError) as exc:
                if exchange.complete():
                    return
                if not exchange.may_rejoin(exc):
                    raise exchange.failure(exc) from exc
                cut = exc

    async def stop(self) -> str | None:
        """Ask the agent to stop the opted-in run in flight (it ends cancelled, RUN-5):
        ``"stopping"``, ``"finished"`` (it had already ended), or ``None`` when no
        confirmed resumable run is in flight (nothing is sent)."""
        request = self._stop_request()
        if request is None:
            return None
        url, headers = request
        try:
            async with self._http.stream("POST", url, content=b"{}", headers=headers) as response:
                return _stop_answer(response, await _error_body(response))
        except httpx.HTTPError as exc:
            raise _connection_error(url, exc, streaming=False) from exc

    async def run(
        self, conversation: Conversation, *, on_update: Callable[[Update], Any] | None = None
    ) -> RunResult:
        """Send the conversation's prepared input and consume the run it starts.

        Call ``conversation.next_input(...)`` first. The run ends when the body
        ends; a transport failure or cancellation mid-stream still ends the run
        (as truncated, never as finished) before the exception propagates.
        """
        run_input = conversation.pending_input
        events = 0
        with _telemetry.run_span(run_input, self.transport) as span:
            try:
                async for frames in self.frames(run_input):
                    events += len(frames)  # received, whether or not they are accepted
                    _deliver(conversation, frames, on_update)
            except BaseException:
                # a transport failure or cancellation mid-stream still ends the run (as
                # truncated, never as finished) before the exception goes on; ending saves
                # the run and disposes of its calls: store I/O, off the event loop
                ending = asyncio.ensure_future(AsyncDriver(conversation).abandon_run())
                try:
                    ended = await asyncio.shield(ending)
                except asyncio.CancelledError:
                    await ending  # cancelled again while the run was ended: seen through once
                    raise
                if ended is not None:
                    _telemetry.run_ended(span, ended, events)
                raise
            result = await AsyncDriver(conversation).end_run()
            _telemetry.run_ended(span, result, events)
            return result


class SyncAgentClient(BaseAgentClient[httpx.Client]):
    """The blocking face of :class:`AgentClient` (``httpx.Client`` underneath)."""

    @staticmethod
    def _new_http(timeout: httpx.Timeout | float | None) -> httpx.Client:
        return httpx.Client(timeout=timeout)

    def close(self) -> None:
        if self._own:
            self._http.close()

    def __enter__(self) -> SyncAgentClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def frames(self, run_input: Mapping[str, Any]) -> Iterator[list[Any]]:
        """POST the input; yield the SSE ``data`` payloads each network chunk completes
        (see :meth:`AgentClient.frames`)."""
        exchange = self._exchange(run_input)
        cut: BaseException | None = None
        try:
            with self._http.stream(
                "POST",
                self.url,
                content=exchange.body,
                headers=_telemetry.inject(self.headers),
                timeout=exchange.timeout(self._http.timeout),
            ) as response:
                if response.status_code >= 300:
                    raise _status_error(response, _error_body_sync(response))
                exchange.accept(response)
                for chunk in response.iter_raw():
                    if frames := exchange.frames(chunk):
                        yield frames
                    if exchange.done:
                        return
        except (httpx.HTTPError, TransportError) as exc:
            if exchange.complete():
                return  # the run's terminal event is in: what broke after it is no cut
            if not exchange.may_rejoin(exc):
                raise exchange.failure(exc) from exc
            cut = exc
        while exchange.may_rejoin(cut):
            url, headers, delay = exchange.rejoin_request(exchange.cut_reason(cut))
            time.sleep(delay)
            cut = None
            try:
                with self._http.stream(
                    "GET",
                    url,
                    headers=_rejoin_headers(self.headers, headers),
                    timeout=exchange.timeout(self._http.timeout),
                ) as response:
                    body = _error_body_sync(response) if response.status_code >= 300 else None
                    if retry := exchange.rejoined(response, body):
                        cut = retry
                        continue
                    for chunk in response.iter_raw():
                        if frames := exchange.frames(chunk):
                            yield frames
                        if exchange.done:
                            return
            except (httpx.HTTPError, TransportError) as exc:
                if exchange.complete():
                    return
                if not exchange.may_rejoin(exc):
                    raise exchange.failure(exc) from exc
                cut = exc

    def stop(self) -> str | None:
        """The blocking face of :meth:`AgentClient.stop`."""
        request = self._stop_request()
        if request is None:
            return None
        url, headers = request
        try:
            with self._http.stream("POST", url, content=b"{}", headers=headers) as response:
                return _stop_answer(response, _error_body_sync(response))
        except httpx.HTTPError as exc:
            raise _connection_error(url, exc, streaming=False) from exc

    def run(
        self, conversation: Conversation, *, on_update: Callable[[Update], Any] | None = None
    ) -> RunResult:
        """Send the conversation's prepared input and consume the run it starts (see
        :meth:`AgentClient.run`)."""
        run_input = conversation.pending_input
        events = [0]
        with _telemetry.run_span(run_input, self.transport) as span:
            with _ending(conversation, span, events):
                for frames in self.frames(run_input):
                    events[0] += len(frames)  # received, whether or not they are accepted
                    _deliver(conversation, frames, on_update)
            result = Driver(conversation).end_run()
            _telemetry.run_ended(span, result, events[0])
            return result
