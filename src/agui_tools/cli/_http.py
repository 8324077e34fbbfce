"""What every command that talks to an agent shares: ``-H`` headers, ``--connect-timeout``,
``--read-timeout`` (:func:`add_http_options`), and the raw stream (:class:`Recorder`).
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final

if TYPE_CHECKING:
    import httpx

    from ..transport._client import TransportError

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_READ_TIMEOUT",
    "Recorder",
    "add_http_options",
    "describe_transport_error",
    "header",
    "positive_seconds",
]

DEFAULT_CONNECT_TIMEOUT: Final = 10.0
DEFAULT_READ_TIMEOUT: Final = 300.0

# RFC 9110 field-name: a token
_TOKEN: Final = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
# the client writes these itself, as the binding requires (TRANS-4, TRANS-7)
_RESERVED: Final = frozenset(
    {"content-type", "accept", "content-length", "transfer-encoding", "host"}
)


def positive_seconds(text: str) -> float:
    """A finite number of seconds above zero, judged while parsing (exit 2 otherwise)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def header(text: str) -> tuple[str, str]:
    """``'Name: value'`` → ``(name, value)``. The value is never echoed (it is a secret)."""
    name, sep, value = text.partition(":")
    name = name.strip()
    if not sep or not name:
        raise argparse.ArgumentTypeError(
            "a header is written 'Name: value', e.g. -H 'Authorization: Bearer TOKEN'"
        )
    if not _TOKEN.match(name):
        raise argparse.ArgumentTypeError(f"{name!r} is not a valid header name")
    value = value.strip()
    if any(not (" " <= c <= "~" or c == "\t") for c in value):
        raise argparse.ArgumentTypeError(
            f"the value of header {name} holds a character other than printable ASCII (a line "
            "break, a control character, a letter like é), which a header cannot carry"
        )
    if name.lower() in _RESERVED:
        raise argparse.ArgumentTypeError(
            f"{name} is written by the client itself, as the AG-UI binding requires; it cannot "
            "be set with -H"
        )
    return name, value


def header_items(items: list[str]) -> dict[str, str]:
    """``-H`` flags given as text (``check``, ``inspect``) as a dict, each judged by
    :func:`header`; raises :class:`ValueError` saying why one is no header."""
    out: dict[str, str] = {}
    for item in items:
        try:
            name, value = header(item)
        except argparse.ArgumentTypeError as exc:
            raise ValueError(f"-H: {exc}") from None
        out[name] = value
    return out


def add_http_options(parser: argparse.ArgumentParser) -> None:
    """``-H/--header``, ``--connect-timeout``, ``--read-timeout``."""
    group = parser.add_argument_group("HTTP")
    group.add_argument(
        "-H",
        "--header",
        dest="headers",
        metavar="'NAME: VALUE'",
        type=header,
        action="append",
        default=[],
        help="send this header with every request (repeatable), "
        "e.g. -H 'Authorization: Bearer TOKEN'",
    )
    group.add_argument(
        "--connect-timeout",
        metavar="S",
        type=positive_seconds,
        default=DEFAULT_CONNECT_TIMEOUT,
        help=f"seconds to wait for the connection (default {DEFAULT_CONNECT_TIMEOUT:g})",
    )
    group.add_argument(
        "--read-timeout",
        metavar="S",
        type=positive_seconds,
        default=DEFAULT_READ_TIMEOUT,
        help="seconds the agent may stay silent mid-stream before the run is given up "
        f"as truncated (default {DEFAULT_READ_TIMEOUT:g}; servers send keep-alives)",
    )


PROTO_MEDIA_TYPE: Final = "application/vnd.ag-ui.event+proto"
_RECORDED: Final = frozenset({"text/event-stream", PROTO_MEDIA_TYPE})


class Recorder:
    """The raw bytes of every event stream a client reads, in order, joined into one capture
    ``verify`` judges (``sink``: written and flushed as they arrive).

    An SSE body broken mid-event gets a blank line, so it does not fuse with the next run's
    first event; a binary body cut mid-frame keeps its fragment only at the end. A resumable run's body
    (``Agui-Resumable: 1``) loses a cut fragment instead: the rejoin resends it whole. Error
    answers are not recorded.
    """

    def __init__(self, sink: IO[bytes] | None = None) -> None:
        self.streams = 0
        self._data = bytearray()
        self._sink = sink
        self._binary = False
        self._frame_left = 0  # bytes of the current binary frame still to come
        self._header = bytearray()  # the current binary frame's length, while it arrives
        self._frame_bytes = 0  # bytes of the current binary frame received (header included)
        self._resumable = False  # the current SSE body is a resumable run's (ids, rejoins)
        self._event_end = 0  # … and where its last complete event ends in the capture

    def transport(self) -> httpx.AsyncBaseTransport:
        """An httpx transport that records what the real one reads."""
        return _recording_transport(self)

    @property
    def data(self) -> bytes:
        return bytes(self._data)

    def save(self, path: str | Path) -> int:
        """Write every stream so far to ``path``; the number of bytes written."""
        data = self.data
        Path(path).write_bytes(data)
        return len(data)

    def _start(self, binary: bool = False, resumable: bool = False) -> None:
        self.streams += 1
        dangling = len(self._header) + self._frame_bytes
        if self._binary and dangling:
            self._drop(dangling)
        elif self._resumable and not self._data.endswith(b"\n\n"):
            # a resumable run's body cut mid-event: its rejoin replays that event whole
            # (docs/resumable.md), so the fragment is dropped rather than closed as an event
            self._drop(len(self._data) - self._event_end)
        self._binary, self._frame_left, self._frame_bytes = binary, 0, 0
        self._resumable = resumable and not binary
        self._header = bytearray()
        if not binary and self._data and not self._data.endswith(b"\n\n"):
            self._write(b"\n\n")
        self._event_end = len(self._data)

    def _drop(self, count: int) -> None:
        """Forget the last ``count`` bytes: a binary frame another body will never finish,
        or a resumable run's event its rejoin sends again."""
        if count <= 0:
            return
        del self._data[-count:]
        if self._sink is not None:
            try:
                self._sink.seek(len(self._data))
                self._sink.truncate()
            except OSError:  # a pipe or a device: what was written stays written
                pass

    def _write(self, chunk: bytes) -> None:
        self._data += chunk
        if self._binary:
            self._track_frames(chunk)
        elif self._resumable:
            end = self._data.rfind(b"\n\n", max(self._event_end, len(self._data) - len(chunk) - 1))
            if end >= 0:
                self._event_end = end + 2
        if self._sink is not None:
            self._sink.write(chunk)
            self._sink.flush()

    def _track_frames(self, chunk: bytes) -> None:
        view = memoryview(chunk)
        while view:
            if self._frame_left == 0:
                take = min(4 - len(self._header), len(view))
                self._header += view[:take]
                view = view[take:]
                if len(self._header) == 4:
                    self._frame_left = int.from_bytes(self._header, "big")
                    self._frame_bytes = 4
                    self._header = bytearray()
                    if self._frame_left == 0:
                        self._frame_bytes = 0
                continue
            take = min(self._frame_left, len(view))
            self._frame_left -= take
            self._frame_bytes += take
            view = view[take:]
            if self._frame_left == 0:
                self._frame_bytes = 0


def _recording_classes() -> tuple[type, type]:
    """Built on first use: httpx is imported lazily, like every I/O dependency."""
    import httpx

    class Stream(httpx.AsyncByteStream):
        def __init__(
            self, inner: httpx.AsyncByteStream, recorder: Recorder, binary: bool, resumable: bool
        ) -> None:
            self._inner = inner
            self._recorder = recorder
            self._binary = binary
            self._resumable = resumable

        async def __aiter__(self) -> AsyncIterator[bytes]:
            self._recorder._start(self._binary, self._resumable)
            async for chunk in self._inner:
                self._recorder._write(chunk)
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    class Transport(httpx.AsyncBaseTransport):
        def __init__(self, recorder: Recorder) -> None:
            self._inner = httpx.AsyncHTTPTransport()
            self._recorder = recorder

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            response = await self._inner.handle_async_request(request)
            kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if response.status_code >= 300 or kind not in _RECORDED:
                return response
            assert isinstance(response.stream, httpx.AsyncByteStream)
            return httpx.Response(
                response.status_code,
                headers=response.headers,
                stream=Stream(
                    response.stream,
                    self._recorder,
                    kind == PROTO_MEDIA_TYPE,
                    response.headers.get("agui-resumable", "").strip() == "1",
                ),
                extensions=response.extensions,
            )

        async def aclose(self) -> None:
            await self._inner.aclose()

    return Stream, Transport


def _recording_transport(recorder: Recorder) -> httpx.AsyncBaseTransport:
    transport: httpx.AsyncBaseTransport = _recording_classes()[1](recorder)
    return transport


def describe_transport_error(exc: TransportError, url: str) -> str:
    """The error, and what to try when the answer says it: a redirect, a refusal.

    A long URL is said cut (its start, its end, its length), never echoed whole.
    """
    from ._common import cut

    text = str(exc).replace(url, cut(url)) if len(url) > 1 else str(exc)
    status = exc.status
    if status in (301, 302, 303, 307, 308):
        hint = (
            " — a redirect: an app mounted in FastAPI or Starlette answers below its mount, "
            f"at its own path; try {cut(url)}/ (an agent_app on its default path) or "
            f"{cut(url)}/agent (agent_app(agent, path='/agent'))"
            if not url.endswith("/")
            else " — a redirect: use the URL the agent is served at (agui-tools does not follow "
            "redirects, which would re-send the run elsewhere)"
        )
        return text.rstrip(": ") + hint
    if status in (401, 403):
        return text + " — pass credentials with -H, e.g. -H 'Authorization: Bearer TOKEN'"
    # a web page, not an agent: said in one line as `check` says it, the page not dumped
    page = _html_page(exc.body)
    if page is not None:
        said = f"{cut(url)} answered HTTP {status} with an HTML page"
        said += f" titled {page!r}" if page else ""
    elif "Content-Type 'text/html'" in text:
        said = text
    else:
        return text
    return (
        f"this is not an AG-UI endpoint: {said} — an agent answers a run input with 200 "
        "text/event-stream; give the URL of the agent's POST endpoint"
    )


_HTML: Final = re.compile(
    r"\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b", re.I | re.S
)
_TITLE: Final = re.compile(r"<title[^>]*>(.*?)</title", re.I | re.S)


def _html_page(body: str) -> str | None:
    """The title of an HTML page (``""`` when it has none), or ``None``: no HTML page."""
    if not _HTML.match(body):
        return None
    title = _TITLE.search(body)
    return " ".join(title.group(1).split())[:80] if title else ""
