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
* **Judging** — a ``POST`` body is judged as a run input (the frontend, as an
  application); a ``200`` answer whose ``Content-Type`` is an event stream is
  judged chunk by chunk as a producer's stream (the agent), after the chunk is
  forwarded. A ``gzip``/``deflate`` answer is judged (and recorded) decoded
  (:class:`_Decoded`: every gzip member; up to where it stops decoding), forwarded
  as it came; another ``Content-Encoding`` is not
  judged, and said (a TRANS-4 warning). Findings go to ``on_finding``; each
  thread's last run is remembered for the next input
  (:class:`~agui_tools.app._watch.ThreadLedger`).
* **Strict** — a chunk is judged *before* it is forwarded: whole events that break
  nothing go on at once, an event's first bytes wait for its last; the first event
  breaking a producer rule is replaced by a ``RUN_ERROR`` naming the rule, in the
  stream's binding, and the stream ends there (the agent's connection is closed).
  A judged stream is sent chunked (the agent's ``Content-Length`` dropped), a
  compressed one decoded (its ``Content-Encoding`` dropped): what was judged.
  An input our server would refuse is answered as our server answers it (409/422
  problem JSON) and never forwarded.
* **Upstream unreachable** — ``502`` with a JSON problem body naming the upstream
  and why; ``on_upstream_error`` is told. A body cut mid-stream by the agent cuts
  the answer there too — no end of body is sent, the server closes the connection,
  so the frontend sees the cut (the judge says TRANS-2: a truncated run). An upstream
  status outside 200-599 (which the ASGI server cannot answer) is a ``502`` too.
* **Recording** (``record``) — every POST exchange as files (docs/proxy.md has the
  contract): ``NNNN.input.json`` (the body as the frontend sent it),
  ``NNNN.sse`` / ``.pb`` / ``.ndjson`` / ``.json`` (the answer's body as the agent
  sent it, written as it arrives), ``NNNN.meta.json``.
* **Who may use it, and how much** — the front our server stands on
  (:class:`~agui_tools.transport._front.Front`) takes every request first: the
  ``Host`` (a DNS-rebinding page cannot reach the agent through the proxy), the
  concurrency cap, the body under its deadline and size limit. ``Origin`` and
  CORS are the agent's own (forwarded, answered by it).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.cookiejar
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from email.utils import formatdate
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol
from urllib.parse import unquote_plus, urlsplit, urlunsplit

import httpx
import orjson
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from .._text import guarded_logger, shown
from ..app._watch import (
    InputJudged,
    StreamWatch,
    ThreadLedger,
    WatchFinding,
    binding_of,
)
from ..wire._framing import BrokenFrame
from ._auth import HostPolicy
from ._client import _DECODABLE, _DECODED, _coding, _Decoding
from ._front import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_CONCURRENCY,
    ClientGone,
    Front,
    Refusal,
    received,
)
from ._judge_pool import VERDICT_OVERDUE, JudgePool, _RemoteWatch
from ._recording import RecordedExchange, Recording
from ._server import DEFAULT_MAX_BODY_BYTES, INLINE_JUDGE_BYTES, AgentEndpoint

if TYPE_CHECKING:
    from ..agent._run import Run

__all__ = ["HOP_BY_HOP", "JudgePool", "ProxyApp", "ProxyObserver", "Recording"]

log = guarded_logger("agui_tools.proxy")

HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
"""Headers that describe one connection, not the message (RFC 9110 §7.6.1)."""
_NOT_FORWARDED: Final = HOP_BY_HOP | {"host", "content-length", "accept-encoding"}


async def _never(run: Run) -> None:  # pragma: no cover - the judge never runs an agent
    raise AssertionError("the proxy's input judge runs no agent")


def _end_to_end(headers: Sequence[tuple[bytes, bytes]], drop: frozenset[str]) -> list[Any]:
    named = set(drop)
    for name, value in headers:
        if name.lower() == b"connection":
            named |= {t.strip().lower() for t in value.decode("latin-1").split(",")}
    return [(k, v) for k, v in headers if k.decode("latin-1").lower() not in named]


class ProxyObserver(Protocol):
    """What watches the traffic besides the judges (``--inspect``: a read-only inspector)."""

    def exchange_started(self, number: int, url: str, body: bytes) -> None: ...
    def exchange_event(self, number: int, index: int, frame: Any) -> None: ...
    def exchange_finding(self, number: int, finding: WatchFinding) -> None: ...
    def exchange_ended(self, number: int, status: int | None, outcome: Any) -> None: ...


class _Timeline:
    """One answer's frames, as the agent sent them, told to the observer."""

    def __init__(self, observer: ProxyObserver, number: int, binding: str) -> None:
        from ..wire._framing import FrameNote, NDJSONReader, SSEReader
        from ..wire._proto_framing import ProtoReader

        self.observer, self.number, self.index = observer, number, -1
        self._note = FrameNote
        self._reader: Any = (
            ProtoReader()
            if binding == "proto"
            else NDJSONReader()
            if binding == "ndjson"
            else SSEReader()
        )

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
            if not isinstance(frame, self._note):
                self.index += 1
                self.observer.exchange_event(self.number, self.index, frame)


class ProxyApp:
    """The ASGI application of ``agui-tools proxy`` (see the module's docstring).

    Args:
        upstream: the agent's URL (``http://127.0.0.1:8000/agent``).
        strict: refuse what breaks a rule instead of forwarding it.
        record: a folder to record every exchange in (``None``: none).
        on_finding: called with each finding, as it is made.
        on_upstream_error: called with ``(url, message)`` when the upstream
            cannot be reached or cuts a body.
        allowed_hosts: names the proxy is reached by besides ``localhost`` and IP
            addresses (``"*"``: any).
        connect_timeout: seconds to connect to the upstream (then 502).
        read_timeout: seconds the upstream may send nothing mid-body (``None``:
            no limit; an agent thinking for long is legitimate).
        max_body_bytes: the largest request body forwarded (413 beyond).
        body_timeout: seconds a frontend has to send its whole request body (408
            beyond; ``None``: no deadline).
        max_concurrency: requests served at once before new ones get 503
            (``None``: no limit).
        on_record_error: called once with a line saying why the recording stopped (a
            file of ``record`` cannot be written: forwarding goes on; ``None``: the
            proxy's log says it).
        judge_in_process: judge streams in a process of its own (:class:`JudgePool`),
            so forwarding never waits for the judge (not in strict mode, which judges
            each chunk before it is forwarded). The findings are the same; each arrives
            a moment after its event was forwarded; a body's end is forwarded at once
            and the verdict follows — the next input waits for it instead.
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
        judge_in_process: bool = False,
        observer: ProxyObserver | None = None,
        on_record_error: Callable[[str], None] | None = None,
    ) -> None:
        self.upstream = upstream
        self.strict = strict
        self.recording = Recording(record, on_record_error) if record is not None else None
        self.on_finding = on_finding
        self.on_upstream_error = on_upstream_error
        self.front = Front(
            hosts=HostPolicy(allowed_hosts),
            max_body_bytes=max_body_bytes,
            body_timeout=body_timeout,
            max_concurrency=max_concurrency,
            who="proxy",
        )
        """Every request's phases bounded before it is judged or forwarded."""
        self.ledger = ThreadLedger()
        self.exchanges = 0
        self.abandoned = 0
        """Streams cut short: the frontend left, or the proxy stopped, before their end."""
        self.findings: list[WatchFinding] = []
        """Every finding of the session, in order (the summary counts them)."""
        self._endpoint = AgentEndpoint(_never, max_body_bytes=max_body_bytes, body_timeout=None)
        self._judging = asyncio.Semaphore(1)
        self._timeout = httpx.Timeout(connect_timeout, read=read_timeout, write=30.0, pool=30.0)
        self._client: httpx.AsyncClient | None = None
        self._pool = JudgePool() if judge_in_process else None
        self.observer = observer
        self.via = f"agui-tools-{secrets.token_hex(6)}"
        """This proxy's name in the ``Via`` header it adds upstream (RFC 9110 §7.6.3): a
        request that comes back carrying it has gone round a loop (:meth:`_loop_problem`)."""
        self._outcomes: dict[int, Any] = {}
        self._settling: set[int] = set()
        """Exchanges whose body has ended and whose verdict is still to come."""
        self._held: dict[int, list[WatchFinding]] = {}
        """Findings of later exchanges, held until those verdicts are in (:meth:`_found`)."""
        self._taking: set[asyncio.Future[bool]] = set()
        """Overdue streams being judged here (:meth:`_overdue`), kept till they are."""
        self._owed: dict[asyncio.Future[None], _RemoteWatch] = {}
        """Each verdict still to come (a task of :attr:`_unsettled`), by the stream it is on."""
        self._unsettled: dict[str | None, set[asyncio.Future[None]]] = {}
        """Per thread, the judging process's verdicts on its streams, still to come:
        the thread's next input is judged against them once they are in (other
        threads' inputs do not wait for them)."""
        self._stop: asyncio.Future[None] | None = None
        """Done once the proxy stops (:meth:`stop_streams`): every open stream ends."""
        self._forwarding: set[asyncio.Task[Any]] = set()
        """The exchanges forwarded and not over yet (:meth:`stop_streams` waits for them)."""

    @property
    def client(self) -> httpx.AsyncClient:
        """The one client every frontend's requests go through (its connection pool,
        its timeouts). It keeps no cookie: an agent's ``Set-Cookie`` is the frontend's
        (forwarded to it), never replayed for the next request — another frontend's."""
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=self._timeout, follow_redirects=False, cookies=_no_cookies()
            )
        return self._client

    def stop_judge(self) -> None:
        """End the judging process, if one was started (:class:`JudgePool`)."""
        if self._pool is not None:
            self._pool.stop()

    async def stop_streams(self, timeout: float = 10.0) -> None:
        """End every exchange still being forwarded (the proxy stops: Ctrl-C, SIGTERM),
        so the server has no unfinished answer to cancel: an open stream is counted as
        cut short and its frontend given the body's end; a request the upstream has
        not answered yet is answered 503 (counted as cut short too). Waits
        (``timeout`` at most) for those exchanges to be over, their verdicts in."""
        self.front.close()  # a request still sending its body is answered 503 now
        if self._stop is None:
            self._stop = asyncio.get_running_loop().create_future()
        if not self._stop.done():
            self._stop.set_result(None)
        if self._forwarding:
            # an exchange is over once its verdict is in: those overdue judged here
            await self._settled(set(self._forwarding), timeout, owed=self._owed)

    async def drain(self, timeout: float = 10.0) -> None:
        """Wait (``timeout`` at most) for the verdicts still to come from the judging
        process — on the way out, so that the summary counts every stream forwarded."""
        pending = {task for tasks in self._unsettled.values() for task in tasks}
        if pending:
            await self._settled(pending, timeout)
        self._settling.clear()  # what is still held is told now, in order
        self._release()

    async def aclose(self) -> None:
        await self.drain()
        self.stop_judge()
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

    def _check_path(self, scope: Scope, headers: Headers) -> None:
        """What the front asks of a head before the body is read: a target that stays
        under ``upstream``, naming no parameter of its query again."""
        wrong = self._path_problem(scope) or self._query_problem(scope)
        if wrong is not None:
            raise Refusal(400, {"path": "", "message": wrong}, close=True)

    async def _exchange(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        try:
            body = await received(receive)
        except ClientGone:
            return
        loop = self._loop_problem(headers)
        if loop is not None:  # answered once, here, and not forwarded round again
            if self.on_upstream_error is not None:
                self.on_upstream_error(self.upstream, loop)
            await _answer(scope, receive, send, 508, f"agui-tools proxy: {loop}")
            return
        url = self._target(scope)
        judged: InputJudged | None = None
        exchange = None
        number = 0
        if scope["method"] == "POST":
            self.exchanges += 1
            number = self.exchanges
            if self.observer is not None:
                self.observer.exchange_started(number, url, body)
            judged = await self._judge_input(body)
            exchange = self.recording.start(body) if self.recording is not None else None
        meta: dict[str, Any] = {
            "url": url,
            "status": None,
            "contentType": None,
            "threadId": judged.thread_id if judged else None,
            "runId": judged.run_id if judged else None,
            "findings": [],
        }
        found: list[WatchFinding] = []
        settle: asyncio.Future[None] | None = None

        def on_finding(finding: WatchFinding) -> None:
            found.append(finding)
            self._found(finding, number)
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
            settle = await self._forward(
                scope, receive, send, url, body, judged, exchange, meta, on_finding, number
            )
        finally:
            if settle is not None:
                # the body has ended (the frontend is not kept waiting); the exchange
                # — its record, the inspector's card — is over once its verdict is in
                await asyncio.shield(settle)
            self._complete(number, meta, found, exchange)

    def _complete(
        self,
        number: int,
        meta: dict[str, Any],
        found: list[WatchFinding],
        exchange: RecordedExchange | None,
    ) -> None:
        """An exchange is over, its verdict in: the recording's meta, the inspector's card."""
        meta["findings"] = [f.to_json() for f in found]
        if self.observer is not None and number:
            outcome = self._outcomes.pop(number, None)
            self.observer.exchange_ended(number, meta["status"], outcome)
        if exchange is not None:
            exchange.finish(meta)

    def _loop_problem(self, headers: Headers) -> str | None:
        """Why the request has come round a loop — its ``Via`` names this proxy, so the
        proxy forwarded it to itself, directly or through other proxies (``None``: it
        has not)."""
        for value in headers.getlist("via"):
            for entry in value.split(","):
                received = entry.split()
                if len(received) >= 2 and received[1] == self.via:
                    return (
                        f"a request came back to this proxy (Via: {shown(value)}): UPSTREAM "
                        f"{shown(self.upstream)} leads back to the proxy itself — a loop; "
                        "answered 508 Loop Detected, not forwarded again."
                    )
        return None

    def _path_problem(self, scope: Scope) -> str | None:
        """Why the request's path cannot go upstream (``None``: it can). Only paths
        below ``upstream``'s go there: a ``.`` or ``..`` segment (``/../admin``, its
        percent-encoded spellings too, ``%2e%2e``, ``..%2F``) would leave it once
        the URL is resolved — refused, never normalised, and so is one that is ``.`` or
        ``..`` once its ``;`` parameters are removed (``..;``, which a servlet container
        resolves as ``..``); so is a target that is not a path (``http://other/``,
        ``*``), and one holding a ``#`` (a request-target has no fragment)."""
        path: str = scope.get("path", "/")
        prefix = shown(urlsplit(self.upstream).path or "/")
        if path and not path.startswith("/"):
            return (
                f"agui-tools proxy: the request target {shown(path)} is not a path "
                f"(origin-form, starting with '/'): only paths below UPSTREAM's {prefix} "
                "are forwarded."
            )
        raw: bytes = scope.get("raw_path") or b""
        if b"#" in raw or b"#" in scope.get("query_string", b""):
            # RFC 9112 §3.2: a request-target has no fragment — forwarding it would cut
            # the query at the '#' (the URL's fragment), silently
            return (
                f"agui-tools proxy: the request target {shown(_with_query(raw, scope))} holds "
                "a '#': a request-target carries no fragment (RFC 9112 §3.2), and what "
                "follows it would not reach UPSTREAM — refused, not cut (send it "
                "percent-encoded, %23)."
            )
        segments = path.replace("\\", "/").split("/")
        # a ';' starts a segment's parameters, which servlet containers (Tomcat, Jetty)
        # strip before resolving: '..;x' is a '..' there
        dots = next((seg for seg in segments if seg.split(";", 1)[0] in (".", "..")), None)
        if dots is None:
            return None
        return (
            f"agui-tools proxy: the request path {shown(path)} has a {dots!r} segment: it "
            f"would leave UPSTREAM's path {prefix}, and only paths below it are forwarded "
            "— refused, not normalised (send the path without '.' or '..' segments)."
        )

    def _query_problem(self, scope: Scope) -> str | None:
        """Why the request's query cannot go upstream (``None``: it can): it names a
        parameter of ``upstream``'s own query (``?code=KEY``). Forwarded, it would
        be a duplicate a last-wins parser reads as the frontend's value — refused,
        not dropped. Names are compared as the most lenient parser reads them
        (:func:`_query_names`)."""
        own = _query_names(urlsplit(self.upstream).query)
        if not own:
            return None
        asked = _query_names(scope.get("query_string", b"").decode("latin-1"))
        clash = sorted(own.keys() & asked.keys())
        if not clash:
            return None
        names = ", ".join(shown(asked[c]) for c in clash)
        return (
            f"agui-tools proxy: the request's query sets {names}, a parameter of UPSTREAM's "
            f"own query ({', '.join(shown(own[c]) for c in clash)}): a frontend cannot "
            "override or duplicate it — refused, not forwarded (drop it from the request)."
        )

    def _target(self, scope: Scope) -> str:
        """The upstream URL of a request: ``upstream``'s path, then the request's path
        below the proxy's root as the frontend sent it (``/`` is ``upstream`` itself);
        ``upstream``'s query, then the request's (``?code=KEY`` + ``?x=1`` is
        ``?code=KEY&x=1``) — a request naming one of ``upstream``'s parameters never
        gets here (:meth:`_query_problem`)."""
        base = urlsplit(self.upstream)
        raw: bytes = scope.get("raw_path") or scope.get("path", "/").encode("utf-8")
        sub = raw.decode("latin-1")
        path = base.path if sub in ("", "/") else base.path.rstrip("/") + sub
        query = "&".join(
            q for q in (base.query, scope.get("query_string", b"").decode("latin-1")) if q
        )
        return urlunsplit((base.scheme, base.netloc, path, query, ""))

    async def _judge_input(self, body: bytes) -> InputJudged:
        if len(body) > INLINE_JUDGE_BYTES:
            async with self._judging:
                verdict = await run_in_threadpool(self._endpoint.judge_body, body)
        else:
            verdict = self._endpoint.judge_body(body)
        run_input = verdict[0]
        pending = self._unsettled.get(run_input["threadId"] if run_input is not None else None)
        if pending:
            # the thread's verdicts still to come first: an input is judged against its
            # thread's last run, and a thread's findings are told in the order of its
            # exchanges
            await self._settled(set(pending))
        return self.ledger.judge(body, verdict)

    async def _settled(
        self,
        pending: set[asyncio.Future[Any]],
        timeout: float | None = None,
        owed: Mapping[asyncio.Future[None], _RemoteWatch] | None = None,
    ) -> None:
        """Wait for these verdicts of the judging process (``timeout`` at most) — the
        streams of those not in after :data:`VERDICT_OVERDUE` seconds judged here
        instead (or, with ``owed``, of every verdict still to come: the tasks waited
        for wait on them): the judging process runs at idle priority, and on cores kept
        busy by other work it can be starved for as long as they are — seconds, for an
        input waiting for its thread's verdict or for a stop."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        first = VERDICT_OVERDUE if timeout is None else min(VERDICT_OVERDUE, timeout)
        _, late = await asyncio.wait(pending, timeout=first)
        if not late:
            return
        streams = owed if owed is not None else self._owed
        for task in list(streams if owed is not None else late):
            remote = streams.get(task)
            if remote is not None:
                await remote.take_over(deadline)
        left = None if deadline is None else max(0.0, deadline - loop.time())
        await asyncio.wait(late, timeout=left)

    def _found(self, finding: WatchFinding, number: int = 0) -> None:
        """Tell a finding of exchange ``number`` — or hold it while an earlier exchange's
        verdict is still to come, so that the log tells findings in the order of the
        exchanges (a thread's input does not wait for another thread's verdict; its
        findings do)."""
        if number and any(m < number for m in self._settling):
            self._held.setdefault(number, []).append(finding)
            return
        self._tell(finding)

    def _tell(self, finding: WatchFinding) -> None:
        self.findings.append(finding)
        if self.on_finding is not None:
            # the callback's failure is its own: never the exchange's (a 500), nor the
            # judging process's reader's (which would stop telling verdicts: a hang)
            try:
                self.on_finding(finding)
            except Exception as exc:
                log.error(
                    "on_finding failed on [%s]: %s: %s", finding.rule, type(exc).__name__, exc
                )

    def _release(self) -> None:
        """Tell the held findings no earlier verdict is still holding, in exchange order."""
        for number in sorted(self._held):
            if any(m < number for m in self._settling):
                return
            for finding in self._held.pop(number):
                self._tell(finding)

    # -- forwarding ------------------------------------------------------------------------

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
    ) -> asyncio.Future[None] | None:
        """Forward the request and stream the answer back; the verdict of a stream
        judged in the judging process, when it is still to come (``None``: it is in)."""
        # built as is, not by the client (``build_request`` adds its default headers —
        # Accept, Accept-Encoding, User-Agent — and its cookies): the agent gets the
        # frontend's end-to-end headers, Host and Content-Length, and this proxy's Via
        # (RFC 9110 §7.6.3) after the frontend's own — a request that comes back with
        # it has gone round a loop (:meth:`_loop_problem`)
        via = f"{scope.get('http_version', '1.1')} {self.via}".encode("latin-1")
        request = httpx.Request(
            scope["method"],
            url,
            headers=[*_end_to_end(scope["headers"], _NOT_FORWARDED), (b"via", via)],
            content=body,
        )
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
        if sending.cancelled():  # the proxy stopped before the upstream answered
            message = f"agui-tools proxy: stopped before the upstream {url} answered"
            meta |= {"status": 503, "contentType": "application/json", "proxyStopped": True}
            self.abandoned += 1
            problem = {"path": "", "message": message, "upstream": url}
            if exchange is not None:
                exchange.open("application/json")
                exchange.write(orjson.dumps({"error": problem}))
            await JSONResponse(
                {"error": problem}, status_code=503, headers={"connection": "close"}
            )(scope, receive, send)
            return None
        try:
            response = sending.result()
        except httpx.HTTPError as exc:
            message = f"the upstream {url} cannot be reached: {_describe(exc)}"
            await self._bad_gateway(scope, receive, send, url, exchange, meta, message)
            return None
        if not 200 <= response.status_code <= 599:
            # HTTP allows any 3 digits (LinkedIn's 999), the ASGI servers answer 100-599:
            # a 502 naming what the agent said, never an answer cut before it starts
            await response.aclose()
            await self._bad_gateway(
                scope,
                receive,
                send,
                url,
                exchange,
                meta,
                f"the upstream {url} answered status {response.status_code} "
                f"({response.reason_phrase or 'no reason phrase'}), which the proxy cannot "
                "forward: an HTTP status it forwards is 200-599",
                upstreamStatus=response.status_code,
            )
            return None
        content_type = response.headers.get("content-type")
        meta |= {"status": response.status_code, "contentType": content_type}
        if "location" in response.headers:  # a redirect: the mock replays it with its target
            meta["location"] = response.headers["location"]
        binding = binding_of(content_type)
        watch: StreamWatch | None = None  # judged here (strict: before forwarding)
        remote: _RemoteWatch | None = None  # judged in the judging process
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
                        "agent",
                        f"not judged: the answer's Content-Encoding {coding!r} is not one "
                        f"the proxy decodes ({', '.join(_DECODED)}); the stream is forwarded "
                        "as it came, unjudged, and recorded as it came",
                        thread_id=judged.thread_id,
                        run_id=judged.run_id,
                    )
                )
        if judged_stream and binding is not None:
            if self.strict or self._pool is None or self._pool.broken or self._pool.behind:
                watch = StreamWatch(binding, run_input=run_input, on_finding=on_finding)
            else:
                remote = self._pool.open(binding, run_input, on_finding)
        if exchange is not None:
            exchange.open(content_type)
        timeline = (
            _Timeline(self.observer, number, binding)
            if self.observer is not None and binding is not None and number
            else None
        )
        pump = asyncio.create_task(
            self._pump(send, response, watch, remote, exchange, meta, timeline, decoded)
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
            # the upstream cut the body: the frontend's answer is cut too (byte for byte:
            # no end is sent, the server closes the connection) — never repaired; a stream
            # the proxy stopped is ended cleanly: the frontend holding its end (curl, a raw
            # socket) gets the body's end, the server no unfinished answer
            ended = stopped or (not pump.cancelled() and pump.exception() is None and pump.result())
            # cut short by the frontend leaving, or by the proxy stopping: the agent's run
            # did not end because of the agent — no truncation is said of it (TRANS-2)
            cut_short = pump.cancelled()
            if cut_short:
                self.abandoned += 1
            if decoded is not None and decoded.failure is not None:
                meta["decodeError"] = decoded.failure.message
            if decoded is not None and decoded.failure is not None and not pump.cancelled():
                # the stream stopped being judged where it stopped decoding: that
                # finding (told as it happened), no truncation said after it
                cut_short = True
            if not pump.cancelled() and pump.exception() is not None:
                log.error("proxying %s failed", url, exc_info=pump.exception())
            # the verdict is in — and the thread's last run remembered — before the body
            # ends: the frontend's next input on the thread is judged against it
            settle: asyncio.Future[None] | None = None
            if remote is not None:
                settle = self._settle(remote, cut_short, run_input, number)
            else:
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
                # the proxy stops: a frontend holding the stream unread (a busy tab, a
                # paused debugger) never takes the body's end — it is given a moment,
                # then its answer is left cut (the server closes the connection), not
                # waited for until the server gives up on the exchange and says so
                try:
                    await asyncio.wait_for(end, STOP_END_TIMEOUT)
                except TimeoutError:
                    meta["endUnsent"] = True
        return settle

    async def _bad_gateway(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        url: str,
        exchange: RecordedExchange | None,
        meta: dict[str, Any],
        message: str,
        **more: Any,
    ) -> None:
        """Answer ``502`` with a JSON problem naming the upstream and what went wrong."""
        meta |= {"status": 502, "contentType": "application/json", "upstreamError": message}
        meta |= more
        if self.on_upstream_error is not None:
            self.on_upstream_error(url, message)
        problem = {"path": "", "message": f"agui-tools proxy: {message}", "upstream": url}
        if exchange is not None:
            exchange.open("application/json")
            exchange.write(orjson.dumps({"error": problem}))
        await JSONResponse({"error": problem}, status_code=502)(scope, receive, send)

    def _remember(self, run_input: Mapping[str, Any] | None, outcome: Any, number: int) -> None:
        if run_input is not None:
            self.ledger.remember(run_input, outcome)
        if self.observer is not None and number:
            self._outcomes[number] = outcome

    def _settle(
        self,
        remote: _RemoteWatch,
        cut_short: bool,
        run_input: Mapping[str, Any] | None,
        number: int,
    ) -> asyncio.Future[None]:
        """The judging process's verdict on a stream, awaited apart from the body: the
        frontend has its answer's end at once (no wait for the judge), and the next
        input (:meth:`_judge_input`) waits for this instead."""

        async def settle() -> None:
            try:
                self._remember(run_input, await remote.outcome(cut_short), number)
            finally:
                self._settling.discard(number)
                self._release()

        if number:
            self._settling.add(number)

        thread_id = run_input.get("threadId") if run_input is not None else None
        task = asyncio.ensure_future(settle())
        pending = self._unsettled.setdefault(thread_id, set())
        pending.add(task)
        self._owed[task] = remote

        def settled(task: asyncio.Future[None]) -> None:
            pending.discard(task)
            self._owed.pop(task, None)
            if not pending and self._unsettled.get(thread_id) is pending:
                del self._unsettled[thread_id]

        task.add_done_callback(settled)
        # nobody may wait for it (no next input on the thread yet) — but later
        # exchanges' findings are held until it is in: overdue, it is judged here
        asyncio.get_running_loop().call_later(VERDICT_OVERDUE, self._overdue, task)
        return task

    def _overdue(self, task: asyncio.Future[None]) -> None:
        remote = self._owed.get(task)
        if remote is not None and not task.done():
            taking = asyncio.ensure_future(remote.take_over())
            self._taking.add(taking)
            taking.add_done_callback(self._taking.discard)

    async def _pump(
        self,
        send: Send,
        response: httpx.Response,
        watch: StreamWatch | None,
        remote: _RemoteWatch | None,
        exchange: RecordedExchange | None,
        meta: dict[str, Any],
        timeline: _Timeline | None = None,
        decoded: _Decoded | None = None,
    ) -> bool:
        """The answer, chunk by chunk, until its end; ``True`` when the body came whole
        (the caller sends the body's end), ``False`` when the upstream cut it (the
        caller cuts the frontend's answer too: no end is sent)."""
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
                # the loop runs between two chunks: a frontend that left (a reset
                # connection) is seen (uvicorn's connection_lost, then ``send`` writes
                # nothing) before the next write — a pump with the agent's bytes
                # already read never yields by itself, and asyncio logs "socket.send()
                # raised exception." for each write to the lost connection past the 4th
                await asyncio.sleep(0)
                # what the agent wrote: its Content-Encoding undone (judged, recorded)
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
                    elif remote is not None:
                        await remote.feed(data)
                    continue
                assert watch is not None
                fatal: WatchFinding | None
                out, fatal = watch.admit(data) if data else (b"", None)
                over = False
                if fatal is None and decoded is not None and decoded.failure is not None:
                    fatal = decoded.failure  # the rest does not decode: ended there
                    watch.cut = True  # by the proxy: no truncation said
                    # the run had ended when it stopped decoding (a bad CRC trailer): it
                    # went whole, and a RUN_ERROR after its end would break the protocol
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
            message = f"the upstream {response.request.url} cut the body: {_describe(exc)}"
            meta["upstreamError"] = message
            if self.on_upstream_error is not None:
                self.on_upstream_error(str(response.request.url), message)
            return False
        return True


class _Decoded:
    """An answer's body with its ``Content-Encoding`` (gzip, deflate) undone, as it
    arrives — what is judged and recorded (the frontend gets the bytes as they came).

    The client's bounded decoder (:class:`~._client._Decoding`: a gzip bomb is refused,
    LIMIT; every gzip member). A body that does not decode stops there — what decoded
    before that point, in the same chunk too, is returned first: :attr:`failure` is the
    finding (TRANS-4 naming the byte, or LIMIT), told to ``on_finding`` when the stream
    is judged."""

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


async def _answer(scope: Scope, receive: Receive, send: Send, status: int, message: str) -> None:
    await JSONResponse(
        {"error": {"path": "", "message": message}},
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


def _query_names(query: str) -> dict[str, str]:
    """A query's parameter names, each as the most lenient parsers read it → as written:
    split at ``&`` and ``;``, percent- and ``+``-decoded, cut at a NUL (PHP's names are
    C strings), stripped, case-folded (ASP.NET), cut at a ``[`` (PHP's and Rails'
    ``code[]`` is ``code``) — or, a ``[`` with no ``]`` after it, read as ``_`` as PHP
    does (``api[key`` is ``api_key``); brackets around it dropped as Rack 2 does
    (``[code]``, ``code]`` are ``code``) — ``.`` and spaces read as ``_`` (PHP's
    ``api.key`` is ``api_key``). A name may have several readings: all are kept."""
    names: dict[str, str] = {}
    for pair in re.split("[&;]", query):
        name = pair.split("=", 1)[0]
        if pair:
            read = unquote_plus(name, encoding="latin-1").split("\0", 1)[0].strip().casefold()
            rack = re.match(r"[\[\]]*([^\[\]]*)", read)
            readings = {read.split("[", 1)[0], rack.group(1) if rack else read}
            if "[" in read and "]" not in read.split("[", 1)[1]:
                readings.add(read.replace("[", "_", 1))
            for reading in readings:
                names.setdefault(re.sub(r"[. ]", "_", reading), name)
    return names


def _with_query(raw_path: bytes, scope: Scope) -> str:
    query: bytes = scope.get("query_string", b"")
    return (raw_path + (b"?" + query if query else b"")).decode("latin-1")


def _describe(exc: httpx.HTTPError) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text
