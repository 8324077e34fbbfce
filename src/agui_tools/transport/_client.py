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
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

import httpx
import orjson

from .._errors import TransportError, UsageError
from ..app._conversation import Conversation, RunResult, Update
from ..app._downgrade import prepare_run_input
from ..wire._codec import refuse_non_finite
from ..wire._framing import DEFAULT_MAX_EVENT_BYTES, SSEReader

__all__ = ["AgentClient", "SyncAgentClient", "TransportError"]

DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=300.0, write=30.0, pool=10.0)
_BODY_LIMIT = 64 * 1024
_HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream"}


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
        body += chunk
        if len(body) >= _BODY_LIMIT:
            break
    return bytes(body[:_BODY_LIMIT])


def _error_body_sync(response: httpx.Response) -> bytes:
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) >= _BODY_LIMIT:
            break
    return bytes(body[:_BODY_LIMIT])


def _status_error(response: httpx.Response, body: bytes) -> TransportError:
    text = body[:_BODY_LIMIT].decode("utf-8", "replace")
    return TransportError(
        f"the agent at {response.request.url} answered HTTP {response.status_code}: {text[:300]}",
        status=response.status_code,
        body=text,
        url=str(response.request.url),
    )


def _check_stream(response: httpx.Response) -> None:
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "text/event-stream":
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


class AgentClient:
    """Async client for one AG-UI agent endpoint.

    Args:
        url: the agent's POST endpoint.
        http: an ``httpx.AsyncClient`` to use (one is created, and closed by
            :meth:`aclose`, otherwise). Timeouts are on by default.
        headers: extra request headers (authentication, say).
        peer_version: the agent's protocol version when known (downgrades).
    """

    def __init__(
        self,
        url: str,
        *,
        http: httpx.AsyncClient | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = DEFAULT_TIMEOUT,
        peer_version: str | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        self.url = url
        self._own = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout)
        self.headers = {**_HEADERS, **(headers or {})}
        self.peer_version = peer_version
        self.max_event_bytes = max_event_bytes

    async def aclose(self) -> None:
        if self._own:
            await self._http.aclose()

    async def __aenter__(self) -> AgentClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def frames(self, run_input: Mapping[str, Any]) -> AsyncIterator[list[str]]:
        """POST the input; yield the SSE ``data`` payloads each network chunk completes.

        The input is checked and prepared exactly as it will be sent (unknown
        material stripped, malformed fields refused — before anything is sent).
        """
        body = _body(run_input, self.peer_version)
        reader = SSEReader(max_event_bytes=self.max_event_bytes)
        streaming = False
        try:
            async with self._http.stream(
                "POST", self.url, content=body, headers=self.headers
            ) as response:
                if response.status_code >= 300:
                    raise _status_error(response, await _error_body(response))
                _check_stream(response)
                streaming = True
                async for chunk in response.aiter_raw():
                    # a frame the reader cannot produce travels as a BrokenFrame, so the
                    # conversation rejects the run at its position like any stream violation
                    frames = reader.feed_frames(chunk)
                    if frames:
                        yield frames
        except httpx.HTTPError as exc:
            raise _connection_error(self.url, exc, streaming) from exc

    async def run(
        self, conversation: Conversation, *, on_update: Callable[[Update], Any] | None = None
    ) -> RunResult:
        """Send the conversation's prepared input and consume the run it starts.

        Call ``conversation.next_input(...)`` first. The run ends when the body
        ends; a transport failure or cancellation mid-stream still ends the run
        (as truncated, never as finished) before the exception propagates.
        """
        run_input = conversation.pending_input
        try:
            async for frames in self.frames(run_input):
                updates = conversation.receive_many(frames)
                if on_update is not None:
                    for update in updates:
                        on_update(update)
        except BaseException:
            conversation.abandon_run()
            raise
        # ending a run saves it and disposes of its calls: store I/O, off the event loop
        return await conversation.off_loop(conversation.end_run)


class SyncAgentClient:
    """The blocking face of :class:`AgentClient` (``httpx.Client`` underneath)."""

    def __init__(
        self,
        url: str,
        *,
        http: httpx.Client | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = DEFAULT_TIMEOUT,
        peer_version: str | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        self.url = url
        self._own = http is None
        self._http = http or httpx.Client(timeout=timeout)
        self.headers = {**_HEADERS, **(headers or {})}
        self.peer_version = peer_version
        self.max_event_bytes = max_event_bytes

    def close(self) -> None:
        if self._own:
            self._http.close()

    def __enter__(self) -> SyncAgentClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def frames(self, run_input: Mapping[str, Any]) -> Iterator[list[str]]:
        body = _body(run_input, self.peer_version)
        reader = SSEReader(max_event_bytes=self.max_event_bytes)
        streaming = False
        try:
            with self._http.stream(
                "POST", self.url, content=body, headers=self.headers
            ) as response:
                if response.status_code >= 300:
                    raise _status_error(response, _error_body_sync(response))
                _check_stream(response)
                streaming = True
                for chunk in response.iter_raw():
                    frames = reader.feed_frames(chunk)
                    if frames:
                        yield frames
        except httpx.HTTPError as exc:
            raise _connection_error(self.url, exc, streaming) from exc

    def run(
        self, conversation: Conversation, *, on_update: Callable[[Update], Any] | None = None
    ) -> RunResult:
        run_input = conversation.pending_input
        try:
            for frames in self.frames(run_input):
                updates = conversation.receive_many(frames)
                if on_update is not None:
                    for update in updates:
                        on_update(update)
        except BaseException:
            conversation.abandon_run()
            raise
        return conversation.end_run()
