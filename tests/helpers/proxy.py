"""``agui-tools proxy`` in a test: a real :class:`ProxyApp` on a loopback port.

:func:`proxied` serves a proxy in front of ``upstream`` with uvicorn in a thread
(:func:`tests.helpers.scripted_server.serve`) and yields a :class:`Proxied`: its
URL, the app (its findings, its ledger) and what it told its log. :func:`stream_post` is
the frontend's side: a run input POSTed, the answer read as the proxy sends it.
:func:`proxy_cmd` runs the command itself (``agui-tools proxy`` in a subprocess;
:func:`mock_cmd` its sibling ``agui-tools mock``), :func:`ctrl_c` stops it as a terminal would. :func:`verify_says` is what the proxy's
findings on a recorded exchange are held to.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

from agui_tools.app._capture import truncation, verify_capture
from agui_tools.app._watch import WatchFinding
from agui_tools.transport._proxy import SERVER_OPTIONS, ProxyApp
from agui_tools.wire._framing import SSEReader
from tests.helpers.scripted_server import serve
from tests.helpers.terminal import AGUI, ENV, ROOT

__all__ = [
    "Proxied",
    "ctrl_c",
    "mock_cmd",
    "post",
    "proxied",
    "proxy_cmd",
    "raw_post",
    "serve_cmd",
    "sse_events",
    "stream_post",
    "verify_says",
    "wait_until",
]


@dataclass
class Proxied:
    url: str
    app: ProxyApp
    findings: list[WatchFinding] = field(default_factory=list)
    upstream_errors: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def rules(self, side: str | None = None) -> list[str]:
        with self.lock:
            return [f.rule for f in self.findings if side is None or f.side == side]


@contextmanager
def proxied(
    upstream: str,
    *,
    strict: bool = False,
    record: Path | None = None,
    wrap: Callable[[Any], Any] | None = None,
    **options: Any,
) -> Iterator[Proxied]:
    """``wrap``: ASGI middleware served around the proxy (a recorder of what it sent)."""
    holder: list[Proxied] = []

    def on_finding(finding: WatchFinding) -> None:
        with holder[0].lock:
            holder[0].findings.append(finding)

    def on_upstream_error(url: str, message: str) -> None:
        with holder[0].lock:
            holder[0].upstream_errors.append((url, message))

    app = ProxyApp(
        upstream,
        strict=strict,
        record=record,
        on_finding=on_finding,
        on_upstream_error=on_upstream_error,
        **options,
    )
    with serve(wrap(app) if wrap is not None else app, **SERVER_OPTIONS) as base:
        holder.append(Proxied(f"{base}/", app))
        yield holder[0]


def post(url: str, body: dict[str, Any], *, timeout: float = 30, **headers: str) -> httpx.Response:
    """``body`` POSTed as JSON, as a frontend sends a run input (plus ``headers``)."""
    return httpx.post(
        url,
        content=orjson.dumps(body),
        headers={"content-type": "application/json", **headers},
        timeout=timeout,
    )


def stream_post(
    url: str, body: dict[str, Any], *, timeout: float = 30, **headers: str
) -> AbstractContextManager[httpx.Response]:
    """:func:`post`, the answer streamed: read it with ``iter_raw()`` to see the bytes
    as they came, unbuffered and undecoded."""
    return httpx.stream(
        "POST",
        url,
        content=orjson.dumps(body),
        headers={"content-type": "application/json", **headers},
        timeout=timeout,
    )


@contextmanager
def raw_post(
    url: str, body: bytes, *, head: bytes = b"POST / HTTP/1.1", extra: bytes = b""
) -> Iterator[socket.socket]:
    """A socket to the loopback server at ``url`` that has sent one request exactly as
    given — ``head``, Host, a JSON Content-Type, the ``extra`` header lines (each ending
    in CRLF), Content-Length, ``body`` — and read nothing yet: what httpx would not send
    (no headers of its own, ``..`` unresolved), or a frontend holding its end."""
    port = int(url.rsplit(":", 1)[1].strip("/"))
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(
            head + b"\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n" + extra
            + b"content-length: %d\r\n\r\n%s" % (len(body), body)
        )  # fmt: skip
        yield sock


def sse_events(body: bytes) -> list[dict[str, Any]]:
    """The events of a whole SSE body, as the frontend got them."""
    return [orjson.loads(d) for d in SSEReader().feed(body)]


def proxy_cmd(*args: str) -> tuple[subprocess.Popen[str], str]:
    """``agui-tools proxy --port 0 ARGS`` started (a ``--port`` in ``args`` wins): the
    process, and the URL its one stdout line names — bound before that line is printed."""
    return _started("proxy", r"Proxying AG-UI at (\S+) to ", args)


def mock_cmd(*args: str) -> tuple[subprocess.Popen[str], str]:
    """``agui-tools mock --port 0 ARGS`` started, as :func:`proxy_cmd` starts the proxy."""
    return _started("mock", r"Serving mock AG-UI agent at (\S+)", args)


def serve_cmd(*args: str) -> tuple[subprocess.Popen[str], str]:
    """``agui-tools serve --port 0 ARGS`` started, as :func:`proxy_cmd` starts the proxy."""
    return _started("serve", r"Serving AG-UI agent at (\S+)", args)


def _started(command: str, banner: str, args: Sequence[str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [*AGUI, command, "--port", "0", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.match(banner, line)
    if found is None:  # not left running: what it said instead is the failure
        proc.kill()
        _, err = proc.communicate(timeout=60)
        raise AssertionError(f"agui-tools {command} printed {line!r}, not {banner!r}: {err}")
    return proc, found.group(1)


def ctrl_c(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    """SIGINT, as Ctrl-C sends it: the exit code, and the rest of stdout and stderr."""
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


def verify_says(stream: Path, run_input: Path) -> set[tuple[str, int | None]]:
    """What `agui-tools verify FILE --input INPUT` reports: warnings, the error, the cut."""
    data = stream.read_bytes()
    verdict = verify_capture(data, run_input=orjson.loads(run_input.read_bytes()))
    said = {(w.rule, w.index) for w in verdict.warnings}
    if verdict.result.error is not None:
        said.add((verdict.result.error.rule, verdict.result.error.index))
    cut = truncation(verdict, data)
    if cut is not None:
        said.add((cut["rule"], cut["index"]))
    return said


def wait_until(condition: Callable[[], object], what: str, seconds: float = 30) -> None:
    """Until ``condition()`` holds — a file written, a line said — failing with ``what`` past ``seconds`` (a bound, never a measure)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)
