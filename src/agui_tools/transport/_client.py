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
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Generic, Literal, Protocol, TypeVar

import httpx
import orjson

from .._errors import TransportError, UsageError
from ..app._conversation import Conversation, RunResult, Update
from ..app._downgrade import prepare_run_input
from ..wire._codec import refuse_non_finite
from ..wire._framing import DEFAULT_MAX_EVENT_BYTES, PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, SSEReader

__all__ = ["AgentClient", "BaseAgentClient", "SyncAgentClient", "Transport", "TransportError"]

log = logging.getLogger("agui_tools.transport")

Transport = Literal["sse", "proto", "auto"]
"""Which binding a client asks for: SSE only, or the binary one (SSE still accepted)."""

DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=300.0, write=30.0, pool=10.0)
_BODY_LIMIT = 64 * 1024
_HEADERS = {"Content-Type": "application/json", "Accept": SSE_MEDIA_TYPE}
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


class _Reader(Protocol):
    def feed_frames(self, chunk: bytes) -> list[Any]: ...


def _reader_for(response: httpx.Response, transport: str, max_event_bytes: int) -> _Reader:
    """The parser the response's ``Content-Type`` calls for (TRANS-7), or an error."""
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == PROTO_MEDIA_TYPE:
        from ..wire._proto_framing import ProtoReader

        return ProtoReader(max_event_bytes=max_event_bytes)
    if kind == SSE_MEDIA_TYPE:
        if transport == "proto":
            log.info(
                "the agent at %s answered SSE: it does not serve the binary binding",
                response.request.url,
            )
        return SSEReader(max_event_bytes=max_event_bytes)
    raise TransportError(
        f"the agent at {response.request.url} answered {response.status_code} with "
        f"Content-Type {kind or '(none)'!r}, not an event stream",
        status=response.status_code,
        url=str(response.request.url),
    )


def _body(run_input: Mapping[str, Any], peer_version: str | None) -> bytes:
    """The request body, exactly as sent — or a :class:`UsageError` and nothing sent.

    orjson writes NaN and ±Infinity as ``null`` without a word, which would
    change the state (or any value) the agent is handed: refused, naming the
    path (TRANS-4). A value orjson cannot write at all (nested past its 254
    levels, an integer beyond 64 bits, a non-JSON type) is refused the same way.
    """
    prepared, _ = prepare_run_input(run_input, peer_version=peer_version)
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

    __slots__ = ("body", "max_event_bytes", "reader", "streaming", "transport", "url")

    def __init__(self, client: BaseAgentClient[Any], run_input: Mapping[str, Any]) -> None:
        self.url = client.url
        # checked and prepared exactly as it will be sent (unknown material stripped,
        # malformed fields refused — before anything is sent)
        self.body = _body(run_input, client.peer_version)
        self.transport = client.transport
        self.max_event_bytes = client.max_event_bytes
        self.reader: _Reader | None = None
        self.streaming = False

    def accept(self, response: httpx.Response) -> None:
        """A 2xx answer: an event stream in the binding its Content-Type names, which
        from now on is being read."""
        self.reader = _reader_for(response, self.transport, self.max_event_bytes)
        self.streaming = True

    def frames(self, chunk: bytes) -> list[Any]:
        """What ``chunk`` completes, for the pipeline: SSE ``data`` payloads, or the
        events (and notes) of binary frames."""
        assert self.reader is not None, "accept() the response first"
        # a frame the reader cannot produce travels as a BrokenFrame, so the
        # conversation rejects the run at its position like any stream violation
        return self.reader.feed_frames(chunk)

    def failed(self, exc: httpx.HTTPError) -> TransportError:
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
        transport: ``"sse"`` (the default), or ``"proto"`` / ``"auto"`` to ask for
            the binary binding — the answer's ``Content-Type`` decides the parser.
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
    ) -> None:
        self.url = url
        self.transport = transport
        self.headers = _headers(transport, headers)
        self._own = http is None
        self._http: H = http if http is not None else self._new_http(timeout)
        self.peer_version = peer_version
        self.max_event_bytes = max_event_bytes

    @staticmethod
    def _new_http(timeout: httpx.Timeout | float | None) -> H:
        raise NotImplementedError

    def _exchange(self, run_input: Mapping[str, Any]) -> _Exchange:
        return _Exchange(self, run_input)


@contextmanager
def _ending(conversation: Conversation) -> Iterator[None]:
    """A transport failure or cancellation mid-stream still ends the run (as
    truncated, never as finished) before the exception propagates."""
    try:
        yield
    except BaseException:
        conversation.abandon_run()
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
        payloads, or the events of binary frames)."""
        exchange = self._exchange(run_input)
        try:
            async with self._http.stream(
                "POST", self.url, content=exchange.body, headers=self.headers
            ) as response:
                if response.status_code >= 300:
                    raise _status_error(response, await _error_body(response))
                exchange.accept(response)
                async for chunk in response.aiter_raw():
                    if frames := exchange.frames(chunk):
                        yield frames
        except httpx.HTTPError as exc:
            raise exchange.failed(exc) from exc

    async def run(
        self, conversation: Conversation, *, on_update: Callable[[Update], Any] | None = None
    ) -> RunResult:
        """Send the conversation's prepared input and consume the run it starts.

        Call ``conversation.next_input(...)`` first. The run ends when the body
        ends; a transport failure or cancellation mid-stream still ends the run
        (as truncated, never as finished) before the exception propagates.
        """
        run_input = conversation.pending_input
        with _ending(conversation):
            async for frames in self.frames(run_input):
                _deliver(conversation, frames, on_update)
        # ending a run saves it and disposes of its calls: store I/O, off the event loop
        return await conversation.off_loop(conversation.end_run)


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
        """POST the input; yield the SSE ``data`` payloads each network chunk completes."""
        exchange = self._exchange(run_input)
        try:
            with self._http.stream(
                "POST", self.url, content=exchange.body, headers=self.headers
            ) as response:
                if response.status_code >= 300:
                    raise _status_error(response, _error_body_sync(response))
                exchange.accept(response)
                for chunk in response.iter_raw():
                    if frames := exchange.frames(chunk):
                        yield frames
        except httpx.HTTPError as exc:
            raise exchange.failed(exc) from exc

    def run(
        self, conversation: Conversation, *, on_update: Callable[[Update], Any] | None = None
    ) -> RunResult:
        """Send the conversation's prepared input and consume the run it starts (see
        :meth:`AgentClient.run`)."""
        run_input = conversation.pending_input
        with _ending(conversation):
            for frames in self.frames(run_input):
                _deliver(conversation, frames, on_update)
        return conversation.end_run()
