"""A verifying proxy in front of any agent: the I/O of ``agui-tools proxy``.

A thin adapter, like the server: the judging is :mod:`agui_tools.app._watch`
(sans-I/O); this module moves bytes. A frontend points at the proxy instead of the
agent; every request is forwarded to ``upstream`` and its answer streamed back.

Theory of operation:

* **Forwarding** — method, body and end-to-end headers go upstream (hop-by-hop
  headers — ``Connection`` and the ones it names, ``Keep-Alive``, ``TE``,
  ``Transfer-Encoding``, ``Upgrade``, ``Proxy-*`` — are dropped, as are ``Host``
  and ``Content-Length``, which httpx sets; ``Accept-Encoding`` is dropped so the
  body arrives as the agent wrote it, uncompressed, and can be judged). Nothing of
  httpx's is added (no ``User-Agent``, ``Accept``), and no cookie: the client,
  shared by every frontend, keeps none — an agent's ``Set-Cookie`` goes to the
  frontend that asked, never into another frontend's request. One header is the
  proxy's own: a ``Via`` naming it (``1.1 agui-tools-<random>``, RFC 9110 §7.6.3),
  after the frontend's; a request arriving with it has come round a loop (UPSTREAM
  is the proxy, or leads back to it) and is answered ``508`` naming the loop, once,
  never forwarded again (the answer gets the same ``Via``, after the agent's: a
  proxy sends one in each message it forwards). ``Accept`` is untouched, so the frontend still negotiates
  the binding (SSE or protobuf). The request path is appended to ``upstream``'s
  path (``/`` is ``upstream`` itself) as the frontend sent it (still
  percent-encoded), its query after ``upstream``'s own (``?code=KEY&x=1``); a path
  with a ``.`` or ``..`` segment (percent-encoded too, or with ``;`` parameters:
  ``..;``), which would leave ``upstream``'s path, is answered ``400`` naming it,
  never normalised, as is a target holding a ``#`` (RFC 9112 §3.2). The
  answer's status and end-to-end headers come back (``Date`` and ``Server`` the
  agent's, once: served with :data:`SERVER_OPTIONS`; a ``Date`` added where there
  is none), then its body
  **byte for byte, each chunk as it arrives** (httpx ``aiter_raw``; nothing is
  held to be sent later).
* **Judging** — inline, in the proxy's process: a ``POST`` body is judged as a run
  input (the frontend, as an application); a ``200`` answer whose ``Content-Type``
  is an event stream is judged chunk by chunk as a producer's stream (the agent),
  each chunk fed to the stream's verifier right after it is forwarded — the verdict
  is known when the body ends, before the frontend gets its end. A
  ``gzip``/``deflate`` answer is judged (and recorded) decoded (:class:`_Decoded`:
  every gzip member; up to where it stops decoding), forwarded as it came; another
  ``Content-Encoding`` is not judged, and said (a TRANS-4 warning, the proxy's
  side: the agent may use any coding). Findings go to ``on_finding`` — per
  exchange the first :data:`~._proxy_verdicts.FINDINGS_KEPT` of each rule, the
  rest counted (:class:`~._proxy_verdicts.ExchangeFindings`); each thread's last
  run is remembered for the next input (:class:`~agui_tools.app._watch.ThreadLedger`).
* **Strict** — a chunk is judged *before* it is forwarded: whole events that break
  nothing go on at once, an event's first bytes wait for its last; the first event
  breaking a producer rule is replaced by a ``RUN_ERROR`` naming the rule, in the
  stream's binding, and the stream ends there (the agent's connection is closed).
  A judged stream is sent chunked (the agent's ``Content-Length`` dropped), a
  compressed one decoded (its ``Content-Encoding`` dropped): what was judged.
  An input our server would refuse is answered as our server answers it (409/422
  problem JSON) and never forwarded.
* **Upstream unreachable** — ``502`` with a JSON problem body naming the upstream
  and why (``side: agent``); ``on_upstream_error`` is told. Every upstream
  connection in use (``upstream_connections``) is the proxy's own limit: ``503``,
  ``side: proxy``. A body cut mid-stream by the agent cuts
  the answer there too — no end of body is sent, the server closes the connection,
  so the frontend sees the cut (the judge says TRANS-2: a truncated run). An upstream
  status outside 200-599 (which the ASGI server cannot answer) is a ``502`` too.
* **Recording** (``record``) — every POST exchange as files (docs/proxy.md has the
  contract): ``NNNN.input.json`` (the body as the frontend sent it),
  ``NNNN.sse`` / ``.pb`` / ``.ndjson`` / ``.json`` (the answer's body as the agent
  sent it, written as it arrives), ``NNNN.meta.json`` (header names, never their
  values; the URL :func:`~._proxy_requests.redacted_url`, as everywhere it is shown).
* **Who may use it, and how much** — the front our server stands on
  (:class:`~agui_tools.transport._front.Front`) takes every request first: the
  ``Host`` (a DNS-rebinding page cannot reach the agent through the proxy), the
  concurrency cap (fitted under the descriptor limit: :func:`descriptor_cap`), the
  body under its deadline and size limit. ``Origin`` and CORS are the agent's own
  (forwarded, answered by it).

:class:`ProxyApp` is the exchange from end to end (the front, the input judged, the
recording's meta); its jobs are mixins of their own modules: the target's checks
(:mod:`._proxy_requests`), the forwarding and streaming (:mod:`._proxy_forwarding`),
the verdicts and the order findings are told in (:mod:`._proxy_verdicts`).
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
from ._proxy_forwarding import HOP_BY_HOP, POOL_WAIT, Forwarding
from ._proxy_requests import TargetChecks, redacted_url
from ._proxy_verdicts import FINDINGS_KEPT, ExchangeFindings, ProxyObserver, Tally
from ._recording import RecordedExchange, Recording
from ._server import DEFAULT_MAX_BODY_BYTES, AgentEndpoint

if TYPE_CHECKING:
    from ..agent._run import Run

__all__ = ["HOP_BY_HOP", "ProxyApp", "ProxyObserver", "Recording", "descriptor_cap"]

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


class ProxyApp(TargetChecks, Forwarding):
    """The ASGI application of ``agui-tools proxy`` (see the module's docstring).

    Args:
        upstream: the agent's URL (``http://127.0.0.1:8000/agent``).
        strict: refuse what breaks a rule instead of forwarding it.
        record: a folder to record every exchange in (``None``: none).
        on_finding: called with each finding told, as it is made.
        on_upstream_error: called with ``(url, message)`` when the upstream
            cannot be reached or cuts a body (the URL redacted).
        allowed_hosts: names the proxy is reached by besides ``localhost`` and IP
            addresses (``"*"``: any).
        connect_timeout: seconds to connect to the upstream (then 502).
        read_timeout: seconds the upstream may send nothing mid-body (``None``:
            no limit; an agent thinking for long is legitimate).
        max_body_bytes: the largest request body forwarded (413 beyond).
        body_timeout: seconds a frontend has to send its whole request body (408
            beyond; ``None``: no deadline).
        max_concurrency: requests served at once before new ones get 503
            (``None``: no limit), lowered to what the descriptor limit holds
            (:func:`descriptor_cap`): :attr:`max_concurrency` is the cap in force.
        upstream_connections: connections to the upstream at once (``None``: as many
            as :attr:`max_concurrency`, so none waits); a request finding every one
            in use for :data:`~._proxy_forwarding.POOL_WAIT` is answered 503,
            ``side: proxy``.
        on_notice: called with a line the proxy says of itself — the recording
            stopped (its folder cannot be written), an exchange's findings past
            :data:`~._proxy_verdicts.FINDINGS_KEPT` counted (``None``: the proxy's log).
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
    ) -> None:
        self.upstream = upstream
        self.shown_upstream = redacted_url(upstream)
        """The upstream as the proxy shows it: no userinfo, no query value."""
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
        """Every request's phases bounded before it is judged or forwarded."""
        if upstream_connections is not None and upstream_connections < 1:
            raise ValueError("upstream_connections must be at least 1, or None")
        self.upstream_connections = upstream_connections or self.max_concurrency
        self.ledger = ThreadLedger()
        self.exchanges = 0
        self.abandoned = 0
        """Streams cut short: the frontend left, or the proxy stopped, before their end."""
        self.tally = Tally()
        """Every finding of the session, counted per rule (the summary tells them)."""
        self._endpoint = AgentEndpoint(_never, max_body_bytes=max_body_bytes, body_timeout=None)
        self._timeout = httpx.Timeout(
            connect_timeout, read=read_timeout, write=30.0, pool=POOL_WAIT
        )
        self._client: httpx.AsyncClient | None = None
        self.observer = observer
        self.via = f"agui-tools-{secrets.token_hex(6)}"
        """This proxy's name in the ``Via`` header it adds upstream (RFC 9110 §7.6.3): a
        request that comes back carrying it has gone round a loop (:meth:`_loop_problem`)."""
        self._outcomes: dict[int, Any] = {}
        self._stop: asyncio.Future[None] | None = None
        """Done once the proxy stops (:meth:`stop_streams`): every open stream ends."""
        self._forwarding: set[asyncio.Task[Any]] = set()
        """The exchanges forwarded and not over yet (:meth:`stop_streams` waits for them)."""

    async def stop_streams(self, timeout: float = 10.0) -> None:
        """End every exchange still being forwarded (the proxy stops: Ctrl-C, SIGTERM),
        so the server has no unfinished answer to cancel: an open stream is counted as
        cut short and its frontend given the body's end; a request the upstream has
        not answered yet is answered 503 (counted as cut short too). Waits
        (``timeout`` at most) for those exchanges to be over."""
        self.front.close()  # a request still sending its body is answered 503 now
        if self._stop is None:
            self._stop = asyncio.get_running_loop().create_future()
        if not self._stop.done():
            self._stop.set_result(None)
        if self._forwarding:
            await asyncio.wait(set(self._forwarding), timeout=timeout)

    async def aclose(self) -> None:
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
            if self.on_upstream_error is not None:
                self.on_upstream_error(self.shown_upstream, loop)
            await _answer(scope, receive, send, 508, f"agui-tools proxy: {loop}")
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
        meta: dict[str, Any] = {
            "url": shown,
            "status": None,
            "contentType": None,
            "threadId": judged.thread_id if judged else None,
            "runId": judged.run_id if judged else None,
            # names only: a header's value (a token, a cookie) is never recorded
            "requestHeaders": sorted({k.decode("latin-1").lower() for k, _ in scope["headers"]}),
            "headerValues": "redacted",
            "findings": [],
        }
        found = ExchangeFindings()

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
            await self._forward(
                scope, receive, send, url, body, judged, exchange, meta, on_finding, number
            )
        finally:
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


async def _answer(scope: Scope, receive: Receive, send: Send, status: int, message: str) -> None:
    await JSONResponse(
        {"error": {"path": "", "message": message, "side": "proxy"}},
        status_code=status,
        headers={"connection": "close"},
    )(scope, receive, send)


SERVER_OPTIONS: Final[Mapping[str, Any]] = {"server_header": False, "date_header": False}
"""The ``uvicorn.Config`` options the proxy is served with: the agent's ``Date`` and
``Server`` are forwarded, and a server adding its own gave the frontend two of each
(RFC 9110 §5.3: neither is a list). :func:`_dated` adds the ``Date`` an answer lacks."""


def _dated(send: Send) -> Send:
    """``send`` with a ``Date`` on an answer that has none: the proxy's own (400, 403,
    413, 502, 503, 508), and a forwarded one whose agent sent none (RFC 9110 §6.6.1: a
    recipient with a clock forwarding a response without ``Date`` adds one)."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            if not any(name.lower() == b"date" for name, _ in headers):
                date = formatdate(usegmt=True).encode("latin-1")
                message = {**message, "headers": [*headers, (b"date", date)]}
        await send(message)

    return sending
