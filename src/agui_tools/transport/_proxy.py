"""A verifying proxy in front of any agent: the I/O of ``agui-tools proxy``.

A thin adapter: the judging is :mod:`agui_tools.app._watch` (sans-I/O); this module
moves bytes, each chunk forwarded and then judged inline (strict: judged first), so a
verdict is in when its body ends. docs/proxy.md is the contract. A ``502`` blames the
agent, a ``503`` the proxy's own limits; the URL is shown redacted everywhere
(:func:`~._proxy_requests.redacted_url`); the front our server stands on
(:class:`~agui_tools.transport._front.Front`) takes every request first, its cap
fitted under the descriptor limit (:func:`descriptor_cap`). :class:`ProxyApp` is the
exchange from end to end; its jobs are mixins: the target (:mod:`._proxy_requests`),
the forwarding (:mod:`._proxy_forwarding`), the verdicts (:mod:`._proxy_verdicts`),
the resumable binding for frontends that opt in (:mod:`._proxy_resumable`).
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import secrets
from collections.abc import Callable, Mapping, Sequence
from email.utils import formatdate
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import httpx
import orjson
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from ..app._watch import InputJudged, ThreadLedger, WatchFinding
from ._auth import HostPolicy
from ._front import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_CONCURRENCY,
    ClientGone,
    Front,
    received,
)
from ._proxy_forwarding import HOP_BY_HOP, POOL_WAIT
from ._proxy_requests import TargetChecks, redacted_url
from ._proxy_resumable import ResumableForwarding, ending
from ._proxy_verdicts import FINDINGS_KEPT, ExchangeFindings, ProxyObserver, Tally
from ._recording import RecordedExchange, Recording
from ._resumable import Resumable, ResumableRuns
from ._server import DEFAULT_MAX_BODY_BYTES, AgentEndpoint

if TYPE_CHECKING:
    from ..agent._run import Run

__all__ = ["HOP_BY_HOP", "ProxyApp", "ProxyObserver", "Recording", "descriptor_cap"]

KEEPALIVE: Final = 15.0
"""Seconds of silence before a ``: keep-alive`` comment to a resumable run's reader."""
RESERVED_DESCRIPTORS: Final = 32
"""Descriptors kept out of the proxy's cap: stdio, the listening socket, the event
loop's, a log, the inspector's, and the momentary socket of a request answered 503."""


def descriptor_cap(cap: int | None, per_request: int) -> int | None:
    """``cap`` lowered to what the process's descriptor limit can hold: each proxied
    request spends ``per_request`` descriptors (the frontend's socket, the agent's, a
    recording's file), so a cap counting requests is met before ``accept()`` fails —
    what is past it gets the front's 503, never a 502 blaming the agent."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return cap
    fit = max(1, (soft - RESERVED_DESCRIPTORS) // per_request)
    return fit if cap is None else min(cap, fit)


async def _never(run: Run) -> None:  # pragma: no cover - the judge never runs an agent
    raise AssertionError("the proxy's input judge runs no agent")


class ProxyApp(TargetChecks, ResumableForwarding):
    """The ASGI application of ``agui-tools proxy`` (see the module's docstring).

    Args:
        upstream: the agent's URL (``http://127.0.0.1:8000/agent``).
        strict: refuse what breaks a rule instead of forwarding it.
        record: a folder to record every exchange in (``None``: none).
        on_finding: called with each finding told; ``on_upstream_error`` with ``(url,
            message)`` when the upstream cannot be reached or cuts a body (URL redacted);
            ``on_notice`` with a line the proxy says of itself (``None``: its log).
        allowed_hosts: names the proxy is reached by besides ``localhost`` and IPs.
        connect_timeout, read_timeout: seconds to connect to the upstream (then 502),
            and that it may send nothing mid-body (``None``: no limit).
        max_body_bytes, body_timeout: the largest request body (413), and the seconds a
            frontend has to send it (408; ``None``: no deadline).
        max_concurrency: requests served at once before 503, lowered to what the
            descriptor limit holds (:attr:`max_concurrency` is the cap in force).
        upstream_connections: connections to the upstream at once (``None``: as many as
            :attr:`max_concurrency`); none free for :data:`~._proxy_forwarding.POOL_WAIT`
            is a 503, ``side: proxy``.
        resumable: serve the resumable binding (docs/resumable.md) to frontends that opt
            in, the upstream read to its end into this run log (``None``: today's proxy).
    """

    def __init__(
        self,
        upstream: str,
        *,
        strict: bool = False,
        record: str | Path | None = None,
        on_finding: Callable[[WatchFinding], None] | None = None,
        on_upstream_error: Callable[[str, str], None] | None = None,
        allowed_hosts: Sequence[str] = (),
        connect_timeout: float = 10.0,
        read_timeout: float | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
        max_concurrency: int | None = DEFAULT_MAX_CONCURRENCY,
        upstream_connections: int | None = None,
        observer: ProxyObserver | None = None,
        on_notice: Callable[[str], None] | None = None,
        resumable: Resumable | None = None,
    ) -> None:
        self.upstream = upstream
        self.shown_upstream = redacted_url(upstream)
        self.strict = strict
        self.on_notice = on_notice
        self.recording = Recording(record, self._notice) if record is not None else None
        self.on_finding = on_finding
        self.on_upstream_error = on_upstream_error
        self.max_concurrency = descriptor_cap(max_concurrency, 2 if record is None else 3)
        self.front = Front(
            hosts=HostPolicy(allowed_hosts),
            max_body_bytes=max_body_bytes,
            body_timeout=body_timeout,
            max_concurrency=self.max_concurrency,
            who="proxy",
        )
        if upstream_connections is not None and upstream_connections < 1:
            raise ValueError("upstream_connections must be at least 1, or None")
        self.upstream_connections = upstream_connections or self.max_concurrency
        self.ledger = ThreadLedger()
        self.exchanges = 0
        self.abandoned = 0
        self.tally = Tally()
        self._endpoint = AgentEndpoint(_never, max_body_bytes=max_body_bytes, body_timeout=None)
        self._timeout = httpx.Timeout(
            connect_timeout, read=read_timeout, write=30.0, pool=POOL_WAIT
        )
        self._client: httpx.AsyncClient | None = None
        self.observer = observer
        self.via = f"agui-tools-{secrets.token_hex(6)}"
        """This proxy's name in the ``Via`` it adds (a request carrying it is a loop)."""
        self._outcomes: dict[int, Any] = {}
        self._stop: asyncio.Future[None] | None = None
        self._forwarding: set[asyncio.Task[Any]] = set()
        self._writers: set[asyncio.Task[None]] = set()
        self.resumable = (
            None
            if resumable is None
            else ResumableRuns(
                resumable,
                _never,
                verify=False,
                expose_errors=False,
                keepalive=KEEPALIVE,
                high_water=1,
                shutdown_error=ending("PROXY_STOPPED", "agui-tools proxy stopped"),
                internal_error=ending("PROXY_ERROR", "agui-tools proxy failed"),
            )
        )

    async def stop_streams(self, timeout: float = 10.0) -> None:
        """End every exchange still forwarded (Ctrl-C, SIGTERM): an open stream is given its
        body's end, one not answered yet a 503, both counted as cut short; waits for them."""
        self.front.close()  # a request still sending its body is answered 503 now
        if self._stop is None:
            self._stop = asyncio.get_running_loop().create_future()
        if not self._stop.done():
            self._stop.set_result(None)
        for writer in self._writers:  # a resumable run's log is ended PROXY_STOPPED
            writer.cancel()
        if self._forwarding or self._writers:
            await asyncio.wait({*self._forwarding, *self._writers}, timeout=timeout)
        if self.resumable is not None:
            await self.resumable.close()

    async def aclose(self) -> None:
        if self.resumable is not None:
            await self.resumable.close()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # -- ASGI ------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":  # pragma: no cover - served with lifespan off
            return
        if scope["type"] != "http":
            return
        # the server stopping (Ctrl-C) may give up waiting for an exchange: it ends here,
        # counted in the summary, not as a traceback per open stream
        with contextlib.suppress(asyncio.CancelledError):
            await self.front.serve(
                scope, receive, _dated(send), self._exchange, check=self._check_path
            )

    async def _exchange(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        try:
            body = await received(receive)
        except ClientGone:
            return
        loop = self._loop_problem(headers)
        if loop is not None:  # answered once, here, and not forwarded round again
            await self._problem((scope, receive, send), None, {}, self.shown_upstream, 508, loop)
            return
        if await self._extension(scope, receive, send):  # a rejoin, a stop (--resumable)
            return
        url = self._target(scope)
        shown = redacted_url(url)
        judged: InputJudged | None = None
        exchange = None
        number = 0
        if scope["method"] == "POST":
            self.exchanges += 1
            number = self.exchanges
            if self.observer is not None:
                self.observer.exchange_started(number, shown, body)
            judged = await self._judge_input(body)
            exchange = self.recording.start(body) if self.recording is not None else None
        tid, rid = (judged.thread_id, judged.run_id) if judged else (None, None)
        names = sorted({k.decode("latin-1").lower() for k, _ in scope["headers"]})
        meta: dict[str, Any] = {"url": shown, "status": None, "contentType": None, "threadId": tid}
        # header names only: a value (a token, a cookie) is never recorded
        meta |= {"runId": rid, "requestHeaders": names, "headerValues": "redacted"}
        found = ExchangeFindings()
        owned = False  # a resumable run's writer completes the exchange when it is over

        def on_finding(finding: WatchFinding) -> None:
            self.tally.add(finding)
            if not found.add(finding):
                return  # counted: past the first FINDINGS_KEPT of its rule
            self._tell(finding)
            if self.observer is not None:
                self.observer.exchange_finding(number, finding)

        try:
            if judged is not None:
                for finding in judged.findings:
                    on_finding(finding)
                if self.strict and judged.refusal is not None:
                    status, problem = judged.refusal
                    meta |= {"status": status, "contentType": "application/json", "refused": True}
                    await JSONResponse({"error": problem}, status_code=status)(scope, receive, send)
                    if exchange is not None:
                        exchange.open("application/json")
                        exchange.write(orjson.dumps({"error": problem}))
                    return
            task = asyncio.current_task()
            if task is not None:  # stop_streams ends it, and waits for it to be over
                self._forwarding.add(task)
                task.add_done_callback(self._forwarding.discard)
            if judged is not None and self._resumes(headers, judged):
                owned = await self._forward_resumable(
                    scope, receive, send, url, body, judged, exchange, meta, on_finding, number,
                    lambda: self._complete(number, meta, found, exchange),
                )  # fmt: skip
                return
            await self._forward(
                scope, receive, send, url, body, judged, exchange, meta, on_finding, number
            )
        finally:
            if not owned:
                self._complete(number, meta, found, exchange)

    def _complete(
        self,
        number: int,
        meta: dict[str, Any],
        found: ExchangeFindings,
        exchange: RecordedExchange | None,
    ) -> None:
        """An exchange is over, its verdict in: the recording's meta, the inspector's card."""
        found.to_meta(meta)
        left = found.not_kept()
        if left:
            counted = ", ".join(f"{n} [{rule}]" for rule, n in left.items())
            self._notice(
                f"exchange {number}: {counted} more finding(s) counted, not told (the first "
                f"{FINDINGS_KEPT} of each rule are; the summary counts them all)"
            )
        if self.observer is not None and number:
            outcome = self._outcomes.pop(number, None)
            self.observer.exchange_ended(number, meta["status"], outcome)
        if exchange is not None:
            exchange.finish(meta)


SERVER_OPTIONS: Final[Mapping[str, Any]] = {"server_header": False, "date_header": False}
"""The ``uvicorn.Config`` options the proxy is served with: the agent's ``Date`` and
``Server`` are forwarded, never doubled (RFC 9110 §5.3); :func:`_dated` adds a missing one."""


def _dated(send: Send) -> Send:
    """``send`` with a ``Date`` on an answer that has none: the proxy's own, and a
    forwarded one whose agent sent none (RFC 9110 §6.6.1)."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            if not any(name.lower() == b"date" for name, _ in headers):
                date = formatdate(usegmt=True).encode("latin-1")
                message = {**message, "headers": [*headers, (b"date", date)]}
        await send(message)

    return sending
