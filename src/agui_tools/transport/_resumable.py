"""The server side of the resumable binding (docs/resumable.md, RESUME-1…11).

A run request that opts in (``Agui-Resumable: 1``) is run **detached**: a writer
task drives the agent and appends each batch of its events to the run log
(:mod:`agui_tools.app._run_log`); the response is only a reader of that log,
from seq 1 — exactly what a rejoin (``GET …/threads/T/runs/R/events``) is from
the seq it names. A disconnect ends a reader, never the run; a stop
(``POST …/stop``) is recorded in the log and observed by the run's writer,
which ends the agent with :class:`~agui_tools.RunCancelled` (RUN-5/RUN-6).

Each worker process holds a lease on its runs, renewed by its keeper task,
which also observes stops asked through other replicas, closes runs whose
worker died (``WORKER_DIED``) and expires finished logs past their retention.
Requests reach this module only through the server's front
(:class:`~agui_tools.transport._front.Front`) and its authorization.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import Callable, Coroutine
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar
from urllib.parse import parse_qs, unquote

import orjson
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .._errors import RunCancelled
from .._text import guarded_logger
from ..agent._channel import EventChannel
from ..agent._run import Run
from ..agent._runner import Agent, drive
from ..app._run_log import (
    STOP_OF_ENDED,
    LogRefusal,
    MemoryRunLog,
    RunLog,
    RunState,
    judge_ids,
    judge_rejoin,
    judge_stop,
    parse_after,
    seen_by,
)
from ..wire._framing import SSE_MEDIA_TYPE, sse_comment
from ._auth import principal_of
from ._front import Refusal, refuse

__all__ = [
    "MIN_LEASE",
    "OPT_IN",
    "Resumable",
    "ResumableRuns",
    "extension_routes",
    "is_extension",
    "is_stop",
    "opted_in",
    "run_ids",
]

log = guarded_logger("agui_tools.transport")

OPT_IN: Final = "agui-resumable"
"""The header a client opts in with, and a server answers it honoured (RESUME-1)."""
_HEADERS: Final = [
    (b"content-type", SSE_MEDIA_TYPE.encode()),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
    (OPT_IN.encode(), b"1"),
]
CAPABILITIES: Final = {"transport": {"streaming": True, "httpBinary": True, "resumable": True}}
"""What ``GET <path>/capabilities`` declares (RESUME-9), in the schema's shape."""
_BATCH: Final = 256
"""Events read from the log per query while a reader catches up."""
_UNAVAILABLE: Final = LogRefusal(503, "RESUME-7", "the run log is unavailable; retry")
TOMBSTONE: Final = 86_400.0
"""Seconds an expired run is remembered past its retention (410), before it is
forgotten (404)."""
_NOTIFIED_POLL: Final = 1.0
"""Seconds between a reader's looks at a log that notifies appends: a safety net for
a notification lost while its listener reconnected."""
DEFAULT_MAX_RUN_BYTES: Final = 64 * 1024 * 1024
"""The events one run may log, in bytes, by default: four of the largest event a
consumer reads (``Limits.max_event_bytes``)."""
MIN_LEASE: Final = 0.1
"""The shortest lease, in seconds: the keeper renews four times a lease, so a
shorter one would spin it (and every replica's reaper) without rest."""
_T = TypeVar("_T")


@dataclass(frozen=True)
class Resumable:
    """The resumable binding's options (``agent_app(..., resumable=Resumable())``).

    Args:
        log: where runs' events are kept: :class:`~agui_tools.app._run_log.MemoryRunLog`
            (default; one process), ``SQLiteRunLog(path)`` or ``PostgresRunLog(url)``
            (replicas share it).
        retention: seconds a finished run's log is kept (410 after, RESUME-8).
        lease: seconds a worker's runs are presumed alive without a renewal; a run
            whose lease lapses is closed ``WORKER_DIED`` by any replica (RESUME-10);
            at least :data:`MIN_LEASE`.
        poll: seconds between a reader's looks at a shared log for events another
            process appended.
        max_run_bytes: the most one run may log (its events' JSON, in bytes): a run
            about to exceed it is stopped and its log ends with ``RUN_ERROR``
            ``code: "RUN_LOG_LIMIT"`` — what every stream of it, live or rejoined,
            ends with — so a huge detached run cannot grow the log without bound.
    """

    log: RunLog = field(default_factory=MemoryRunLog)
    retention: float = 300.0
    lease: float = 10.0
    poll: float = 0.05
    max_run_bytes: int = DEFAULT_MAX_RUN_BYTES

    def __post_init__(self) -> None:
        for name in ("retention", "lease", "poll"):
            if not getattr(self, name) > 0:
                raise ValueError(f"Resumable.{name} must be a positive number of seconds")
        if not self.lease >= MIN_LEASE:
            raise ValueError(
                f"Resumable.lease must be at least {MIN_LEASE:g} seconds (the keeper renews "
                f"four times a lease), not {self.lease:g}"
            )
        if not (isinstance(self.max_run_bytes, int) and self.max_run_bytes > 0):
            raise ValueError(
                f"Resumable.max_run_bytes must be a positive number of bytes, "
                f"not {self.max_run_bytes!r}"
            )


def opted_in(headers: Headers, run_id: object) -> bool:
    """The request asks for the binding and its ``runId`` can be an SSE ``id`` (no
    line break or NUL, which would end the field): RESUME-1/RESUME-2."""
    return (
        headers.get(OPT_IN, "").strip() == "1"
        and isinstance(run_id, str)
        and not any(c in run_id for c in "\r\n\0")
    )


def extension_routes(path: str, app: Any) -> list[Route]:
    """The binding's own routes beside the agent's ``POST path``, to the same ``app``
    (so the same front and authorization): rejoin and stop, and the capabilities."""
    base = path.rstrip("/")
    return [
        Route(base + "/threads/{ids:path}", app, methods=["GET", "POST"]),
        Route(base + "/capabilities", app, methods=["GET"]),
    ]


def is_extension(scope: Scope) -> bool:
    """A request on :func:`extension_routes` (the agent's own route is POST only)."""
    return scope["method"] != "POST" or "ids" in scope.get("path_params", {})


def run_ids(scope: Scope) -> tuple[str, str, str] | None:
    """``(threadId, runId, action)`` from the raw path's last five segments, each
    percent-decoded (an id may hold an encoded ``/``); ``None`` when not that shape."""
    raw = scope.get("raw_path") or scope["path"].encode()
    parts = raw.decode("latin-1").split("?", 1)[0].split("/")
    if len(parts) < 6 or parts[-5] != "threads" or parts[-3] != "runs":
        return None
    action = parts[-1]
    if action not in ("events", "stop"):
        return None
    return unquote(parts[-4]), unquote(parts[-2]), action


def _last_event_id(scope: Scope) -> str | None:
    """The ``Last-Event-ID`` header as text. A browser resends the id it read from the
    stream, which is UTF-8 (as every SSE field is), so it is decoded as UTF-8 —
    Starlette's headers are Latin-1, which would make a non-ASCII ``runId`` never
    match its own id; bytes that are not UTF-8 stay Latin-1, to be refused by name."""
    for name, value in scope["headers"]:
        if name == b"last-event-id":
            try:
                return str(value.decode("utf-8"))
            except UnicodeDecodeError:
                return str(value.decode("latin-1"))
    return None


def is_stop(scope: Scope) -> bool:
    """A stop (``POST …/threads/T/runs/R/stop``): it ends a run that holds a place of
    the front's ``max_concurrency``, so it is served even when every place is held."""
    ids = run_ids(scope) if scope["method"] == "POST" else None
    return ids is not None and ids[2] == "stop"


class _Wakes:
    """Readers in this process waiting for a run's next events."""

    def __init__(self) -> None:
        self._waiting: dict[tuple[str, str], set[asyncio.Event]] = {}

    def listen(self, key: tuple[str, str]) -> asyncio.Event:
        event = asyncio.Event()
        self._waiting.setdefault(key, set()).add(event)
        return event

    def forget(self, key: tuple[str, str], event: asyncio.Event) -> None:
        waiting = self._waiting.get(key)
        if waiting is not None:
            waiting.discard(event)
            if not waiting:
                del self._waiting[key]

    def notify(self, key: tuple[str, str]) -> None:
        for event in self._waiting.get(key, ()):
            event.set()


class ResumableRuns:
    """One agent endpoint's resumable runs: the writers, the readers, the keeper."""

    def __init__(
        self,
        config: Resumable,
        agent: Agent,
        *,
        verify: bool,
        expose_errors: bool,
        keepalive: float | None,
        high_water: int,
        shutdown_error: bytes,
        internal_error: bytes,
    ) -> None:
        self.config = config
        self.log = config.log
        self.agent = agent
        self.verify = verify
        self.expose_errors = expose_errors
        self.keepalive = keepalive
        self.high_water = high_water
        self._shutdown_error = shutdown_error
        self._internal_error = internal_error
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._wakes = _Wakes()
        self._stops: dict[tuple[str, str], asyncio.Event] = {}
        self._keeper: asyncio.Task[None] | None = None
        self._unwatch: Callable[[], None] | None = None

    async def _call(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        if self.log.blocking:
            return await asyncio.to_thread(fn, *args, **kwargs)
        return fn(*args, **kwargs)

    def _lease_until(self) -> float:
        return time.time() + self.config.lease

    # -- the keeper ---------------------------------------------------------------------

    def ensure_keeper(self) -> None:
        """Start the keeper, and hear of other replicas' appends, once per event loop."""
        if self._keeper is None or self._keeper.done():
            self._keeper = asyncio.create_task(self._keep(), name="agui-run-log-keeper")
            if self._unwatch is not None:
                self._unwatch()
            loop, wakes = asyncio.get_running_loop(), self._wakes

            def appended(thread_id: str, run_id: str) -> None:  # in the log's thread
                loop.call_soon_threadsafe(wakes.notify, (thread_id, run_id))

            self._unwatch = self.log.watch(appended)

    async def close(self) -> None:
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        if self._keeper is not None:
            self._keeper.cancel()
            await asyncio.gather(self._keeper, return_exceptions=True)

    async def _keep(self) -> None:
        """Renew this worker's leases, observe stops, reap the dead, expire the old."""
        interval = min(self.config.lease / 4, 1.0)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.tend()
            except Exception:
                log.exception("the run log's keeper failed; retrying")

    async def tend(self) -> None:
        """One round of the keeper's duties."""
        now = time.time()
        writing = list(self._stops)  # the runs this worker is writing now
        renewed = await self._call(self.log.renew, self.owner, writing, now + self.config.lease)
        for key in renewed:
            stop = self._stops.get(key)
            if stop is not None:
                stop.set()
        for key in await self._call(self.log.reap, now):
            log.warning("run %s of thread %s: its worker died; closed WORKER_DIED", key[1], key[0])
            self._wakes.notify(key)
        expired = now - self.config.retention
        await self._call(self.log.expire, expired, expired - TOMBSTONE)

    # -- a run request that opted in --------------------------------------------------

    async def start(
        self,
        run_input: dict[str, Any],
        scope: Scope,
        receive: Receive,
        send: Send,
        runs: set[asyncio.Task[None]],
        slot: Callable[[], AbstractContextManager[None]],
    ) -> None:
        """Log the run, start it detached (its task in ``runs``, which a shutdown
        ends, holding a ``slot`` of the front's ``max_concurrency`` while it runs:
        detached runs are bounded as streams are), and follow it from its first
        event."""
        thread_id, run_id = run_input["threadId"], run_input["runId"]
        if not await self.begin(thread_id, run_id, scope, receive, send):
            return
        self.detach(self._write(run_input), runs, slot, run_id)
        await self.follow(thread_id, run_id, 0, receive, send)

    async def begin(
        self, thread_id: str, run_id: str, scope: Scope, receive: Receive, send: Send
    ) -> bool:
        """Log a new run; ``False`` once it was refused (answered here): the log holds
        it already (409, RESUME-4: never run twice) or is unavailable (503)."""
        self.ensure_keeper()
        principal = principal_of(scope)
        try:
            begun = await self._call(
                self.log.begin,
                thread_id,
                run_id,
                self.owner,
                self._lease_until(),
                started_by=None if principal is None else principal.id,
            )
        except Exception:
            log.exception("the run log failed beginning run %s", run_id)
            await self._refuse(scope, receive, send, _UNAVAILABLE, thread_id, run_id)
            return False
        if not begun:
            refusal = LogRefusal(
                409,
                "RESUME-4",
                "the log holds or held this run, and a run is never run twice: rejoin it "
                "with GET …/events while it is kept (410 once its retention passed)",
            )
            await self._refuse(scope, receive, send, refusal, thread_id, run_id)
        return begun

    def detach(
        self,
        writing: Coroutine[Any, Any, None],
        runs: set[asyncio.Task[None]],
        slot: Callable[[], AbstractContextManager[None]],
        run_id: str,
    ) -> None:
        """Run a begun run's writer in a task of its own (in ``runs``, which a shutdown
        ends), holding a ``slot`` of the front's ``max_concurrency`` while it runs."""

        async def held() -> None:
            with slot():
                await writing

        writer = asyncio.create_task(held(), name=f"agui-run-{run_id}")
        runs.add(writer)
        writer.add_done_callback(runs.discard)

    def writing(self, key: tuple[str, str]) -> asyncio.Event:
        """A writer starts writing ``key``: its lease is renewed, and the event returned is
        set when a stop is asked (here or through a replica); :meth:`written` when done."""
        stop = self._stops[key] = asyncio.Event()
        return stop

    def written(self, key: tuple[str, str]) -> None:
        self._stops.pop(key, None)

    async def _write(self, run_input: dict[str, Any]) -> None:
        """Drive the agent; append its events to the log as they come, to its end."""
        key = (run_input["threadId"], run_input["runId"])
        stop = self.writing(key)
        channel = EventChannel(high_water=self.high_water)
        driver = asyncio.create_task(
            drive(
                _stoppable(self.agent, stop),
                run_input,
                channel,
                verify=self.verify,
                expose_errors=self.expose_errors,
            )
        )
        driver.add_done_callback(lambda _: channel.close())
        seq, finished, room = 0, False, self.config.max_run_bytes
        try:
            while True:
                await channel.wait(None)
                if not channel.has_events:
                    if channel.closed:
                        break
                    continue
                terminal = channel.ended_with is not None
                batch = channel.take()
                batch, terminal, room = self.within_cap(key, batch, terminal, room)
                if not await self.append(key, seq + 1, batch, terminal):
                    return  # closed by a replica that thought us dead: stop writing
                seq += len(batch)
                if terminal:
                    finished = True
                    break
            if not finished:
                log.error("run %s ended without a terminal event; logging RUN_ERROR", key[1])
                await self.append(key, seq + 1, [self._internal_error], True)
        except asyncio.CancelledError:
            if not finished:  # the server is shutting down: say so in the log
                await asyncio.shield(self.append(key, seq + 1, [self._shutdown_error], True))
            raise
        except Exception:  # a bug of ours, or the log failing: never a log left open
            log.exception("run %s: writing its log failed", key[1])
            if not finished:
                try:
                    await self.append(key, seq + 1, [self._internal_error], True)
                except Exception:  # the log is down: the run's lease lapses (WORKER_DIED)
                    log.exception("run %s: its log cannot be closed", key[1])
        finally:
            self.written(key)
            driver.cancel()
            await asyncio.gather(driver, return_exceptions=True)

    def within_cap(
        self, key: tuple[str, str], batch: list[bytes], terminal: bool, room: int
    ) -> tuple[list[bytes], bool, int]:
        """``batch`` as a run's log may take it with ``room`` bytes left, the flag saying
        it ends the run, and the room after it: past ``max_run_bytes``, what fits and then
        ``RUN_LOG_LIMIT``, which ends the run. Every writer of a log (an agent's, the
        proxy's) goes through here."""
        kept = _within(batch, room)
        if kept < len(batch):  # the cap: what fits, then the run ends saying so
            log.warning("run %s reached max_run_bytes; stopped", key[1])
            batch, terminal = [*batch[:kept], self._log_limit()], True
        return batch, terminal, room - sum(len(p) for p in batch)

    def _log_limit(self) -> bytes:
        return orjson.dumps(
            {
                "type": "RUN_ERROR",
                "message": f"the run's log reached max_run_bytes={self.config.max_run_bytes}: "
                "the run was stopped",
                "code": "RUN_LOG_LIMIT",
            }
        )

    async def append(
        self, key: tuple[str, str], first: int, batch: list[bytes], terminal: bool
    ) -> bool:
        """Log ``batch`` from seq ``first`` (``terminal``: its last event ends the run) and
        wake its readers; ``False`` when a replica closed the run (stop writing)."""
        at = time.time() if terminal else None
        written = await self._call(self.log.append, key[0], key[1], first, batch, finished_at=at)
        self._wakes.notify(key)
        return written

    # -- following a run: the opted-in response and every rejoin ------------------------

    async def follow(
        self, thread_id: str, run_id: str, after: int, receive: Receive, send: Send
    ) -> None:
        """Answer 200 and send the run's events after seq ``after`` as they are logged,
        to its end or until the client leaves (which ends this reader, not the run)."""
        await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
        reader = asyncio.create_task(self._read(thread_id, run_id, after, send))
        watcher = asyncio.create_task(_until_disconnect(receive))
        try:
            await asyncio.wait({reader, watcher}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (reader, watcher):
                task.cancel()
            await asyncio.gather(reader, watcher, return_exceptions=True)
        if not reader.done() or reader.cancelled():
            return  # the client left
        problem = reader.exception()
        if problem is not None:  # the client left mid-send, or the log failed: a cut
            if not isinstance(problem, OSError):
                log.error("following run %s failed", run_id, exc_info=problem)
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _read(self, thread_id: str, run_id: str, after: int, send: Send) -> None:
        key = (thread_id, run_id)
        prefix = f"id: {run_id}:".encode()
        sent = after
        quiet_since = time.monotonic()
        while True:
            woken = self._wakes.listen(key)
            try:
                events = await self._call(self.log.read, thread_id, run_id, sent, _BATCH)
                if events:
                    chunk = b"".join(
                        b"%s%d\ndata: %s\n\n" % (prefix, sent + i + 1, payload)
                        for i, payload in enumerate(events)
                    )
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    sent += len(events)
                    quiet_since = time.monotonic()
                    if not self.log.blocking:
                        await asyncio.sleep(0)  # a long replay lets the other streams flow
                    continue
                state = await self._call(self.log.state, thread_id, run_id)
                if state is None or state.expired or (state.finished and sent >= state.last_seq):
                    return  # an expired log has no events left: a cut, its rejoin is 410
                if state.finished:
                    continue
                if state.lease_until < time.time():
                    # the keeper's round, not a bare reap: it renews this worker's own
                    # runs first, so a wall clock stepped forward (which lapses every
                    # lease at once) closes only the runs no live worker is writing
                    await self.tend()
                    continue
                if not self.log.shared:
                    timeout = self.keepalive
                elif self.log.notifies or key in self._stops:
                    # woken on each append (by the log, or by this worker writing the
                    # run): a look a second besides, for what another process did to it
                    timeout = _NOTIFIED_POLL
                else:
                    timeout = self.config.poll
                if self.keepalive is not None:
                    left = self.keepalive - (time.monotonic() - quiet_since)
                    if left <= 0:
                        await send(
                            {"type": "http.response.body", "body": sse_comment(), "more_body": True}
                        )
                        quiet_since = time.monotonic()
                        continue
                    timeout = left if timeout is None else min(timeout, left)
                try:
                    async with asyncio.timeout(timeout):
                        await woken.wait()
                except TimeoutError:
                    pass
            finally:
                self._wakes.forget(key, woken)

    # -- rejoin and stop ------------------------------------------------------------------

    async def serve_extension(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A rejoin (GET …/events), a stop (POST …/stop), the capabilities, or 404."""
        if scope["method"] == "GET" and "ids" not in scope.get("path_params", {}):
            await JSONResponse(CAPABILITIES)(scope, receive, send)
            return
        ids = run_ids(scope)
        method = scope.get("method", "GET")
        if ids is None or (ids[2] == "events") != (method == "GET"):
            wrong = LogRefusal(
                404,
                "RESUME-5",
                "not a rejoin (GET …/threads/T/runs/R/events) nor a stop "
                "(POST …/threads/T/runs/R/stop)",
            )
            await self._refuse(scope, receive, send, wrong, "", "")
            return
        thread_id, run_id, action = ids
        self.ensure_keeper()
        answer = self._stop if action == "stop" else self._rejoin
        try:
            refusal = judge_ids(thread_id, run_id) or await answer(
                scope, receive, send, thread_id, run_id
            )
        except Exception:  # before any answer: the log failed, never the client
            log.exception("the run log failed serving a %s of run %s", action, run_id)
            refusal = _UNAVAILABLE
        if refusal is not None:
            await self._refuse(scope, receive, send, refusal, thread_id, run_id)

    async def _state(self, scope: Scope, thread_id: str, run_id: str) -> RunState | None:
        """The run's state as the caller may see it: a run another principal started
        is none (RESUME-5)."""
        principal = principal_of(scope)
        state = await self._call(self.log.state, thread_id, run_id)
        return seen_by(state, None if principal is None else principal.id)

    async def _stop(
        self, scope: Scope, receive: Receive, send: Send, thread_id: str, run_id: str
    ) -> LogRefusal | None:
        state = await self._state(scope, thread_id, run_id)
        refusal = judge_stop(state, time.time(), self.config.retention)
        if refusal is not None:
            return refusal
        if not await self._call(self.log.request_stop, thread_id, run_id):
            # the run ended between the look and the record: judged as it is now
            state = await self._state(scope, thread_id, run_id)
            return judge_stop(state, time.time(), self.config.retention) or STOP_OF_ENDED
        local = self._stops.get((thread_id, run_id))
        if local is not None:  # ours: at once, not at the keeper's next round
            local.set()
        await _json(scope, receive, send, 202, {"runId": run_id, "status": "stopping"})
        return None

    async def _rejoin(
        self, scope: Scope, receive: Receive, send: Send, thread_id: str, run_id: str
    ) -> LogRefusal | None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        last_event_id = _last_event_id(scope)
        after = parse_after(run_id, last_event_id, (query.get("after") or [None])[0])
        if isinstance(after, LogRefusal):
            return after
        state = await self._state(scope, thread_id, run_id)
        refusal = judge_rejoin(state, after, time.time(), self.config.retention)
        if refusal is not None:
            return refusal
        await self.follow(thread_id, run_id, after, receive, send)
        return None

    async def _refuse(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        refusal: LogRefusal,
        thread_id: str,
        run_id: str,
    ) -> None:
        body = refusal.body(thread_id, run_id)
        await refuse(scope, receive, send, Refusal(refusal.status, body), lambda r: r.error)


def _within(batch: list[bytes], room: int) -> int:
    """How many of ``batch``'s first events fit in ``room`` bytes."""
    for i, payload in enumerate(batch):
        room -= len(payload)
        if room < 0:
            return i
    return len(batch)


def _stoppable(agent: Agent, stop: asyncio.Event) -> Agent:
    """``agent`` in a task of its own, ended as cancelled when ``stop`` is set: the
    runner then closes what it opened and finishes cancelled (RUN-5, RUN-6)."""

    async def stoppable(run: Run) -> None:
        task = asyncio.ensure_future(agent(run))
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            stopped.cancel()
            await asyncio.gather(task, stopped, return_exceptions=True)
            raise
        if task.done():
            stopped.cancel()
            task.result()  # the agent's own ending, as the runner reads it
            return
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise RunCancelled("stopped by request (RESUME-6)")

    return stoppable


async def _until_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _json(scope: Scope, receive: Receive, send: Send, status: int, body: Any) -> None:
    await JSONResponse(body, status_code=status)(scope, receive, send)
