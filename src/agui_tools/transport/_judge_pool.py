"""Streams judged in a process of their own, for ``agui-tools proxy`` (:class:`JudgePool`).

Non-strict streams are judged here so that forwarding never waits on the judge:
chunks go to a judging process through a non-blocking pipe, at idle priority,
and its findings and verdicts come back to the proxy's loop
(:mod:`agui_tools.transport._proxy` is the proxy; :mod:`agui_tools.app._watch`
the judges this process runs).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import pickle
import struct
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Final

from .._text import guarded_logger
from ..app._watch import StreamWatch, WatchFinding

__all__ = ["BACKLOG_BYTES", "KEPT_BYTES", "VERDICT_OVERDUE", "JudgePool"]

log = guarded_logger("agui_tools.proxy")

BACKLOG_BYTES: Final = 32 * 1024 * 1024
"""Bytes forwarded but not yet handed to the judge, across streams, before forwarding
waits for it: a judge slower than the agent holds at most this much, never the streams."""
_HEADER: Final = struct.Struct("!i")  # multiprocessing.Connection's own message header


def _yield_the_cores() -> None:
    """The judging process runs only on cores nothing else wants (``SCHED_IDLE`` on
    Linux, ``nice 19`` elsewhere).

    Forwarding never waits for the judge, so the judge need not keep pace with a
    burst: on cores the agent, the proxy and the frontend keep busy it falls behind
    and catches up as soon as they idle. Measured (``python -m bench --only proxy``;
    docs/proxy.md, "What it costs", has the figures): a burst goes through closer to
    direct with the judge at idle priority than at normal priority, competing with
    the three.
    The price: on cores kept busy by other work it may get no time at all — so what
    waits for it waits :data:`VERDICT_OVERDUE` at most, then the proxy judges the
    stream itself (:meth:`_RemoteWatch.take_over`, :meth:`_RemoteWatch.feed`).
    """
    with contextlib.suppress(OSError, AttributeError, ValueError):
        if hasattr(os, "SCHED_IDLE"):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        else:
            os.nice(19)


def _die_with_the_proxy() -> None:
    """The judging process is killed by the kernel when the proxy dies (Linux
    ``PR_SET_PDEATHSIG``): at idle priority on busy cores, an orphan reading its jobs'
    end of file could take tens of seconds to get the time to exit — holding the
    proxy's stdout and stderr open for whoever waits on them."""
    with contextlib.suppress(Exception):
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the proxy died before the line above
            os._exit(0)


def _judge_worker(jobs: Any, results: Any) -> None:
    """The judging process: a :class:`StreamWatch` per open stream, findings sent back.

    ``jobs`` and ``results`` are the two ends of one-way pipes (Connections); each
    message is a pickled tuple."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the proxy's to handle
    _die_with_the_proxy()
    _yield_the_cores()
    watches: dict[int, tuple[StreamWatch, Mapping[str, Any]]] = {}

    def put(message: Any) -> None:
        results.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    while True:
        try:
            job = pickle.loads(jobs.recv_bytes())
        except (EOFError, OSError):
            return  # the proxy is gone
        if job is None:
            return
        ex = job[1]
        try:
            _job(job, watches, put)
        except OSError:  # the results pipe is closed: the proxy has stopped
            return
        except Exception as exc:  # a bug of ours: said, and the stream's verdict is lost
            watches.pop(ex, None)
            try:
                put(("failed", ex, f"{type(exc).__name__}: {exc}"))
            except OSError:
                return


def _job(
    job: tuple[Any, ...],
    watches: dict[int, tuple[StreamWatch, Mapping[str, Any]]],
    put: Callable[[Any], None],
) -> None:
    """One job of the judging process: open a stream, judge a chunk, close a stream
    (or drop it: the proxy judges it itself from now on)."""
    kind, ex = job[0], job[1]
    if kind == "open":

        def found(finding: WatchFinding, ex: int = ex) -> None:
            put(("finding", ex, finding))

        watches[ex] = (StreamWatch(job[2], run_input=job[3], on_finding=found), job[3] or {})
    elif kind == "chunk":
        watches[ex][0].feed(job[2])
    elif kind == "close":
        watch, run_input = watches.pop(ex)
        watch.cut = watch.cut or bool(job[2])
        put(("closed", ex, watch.outcome(run_input)))
    elif kind == "drop":  # the proxy judges the stream itself now (the judge was behind)
        watches.pop(ex, None)


VERDICT_OVERDUE: Final = 0.5
"""Seconds the judging process may keep the proxy waiting — for a verdict (the same
thread's next input, the stop) or for room in its backlog — before the stream is judged
in the proxy's own process: on quiet cores even a large burst's verdict is in well
within it after its end; on cores busy with other work the idle-priority judge may get no time."""

TAKE_OVER_SLICE: Final = 64
"""Chunks of a stream taken over (:meth:`_RemoteWatch.take_over`) judged between two
turns of the proxy's loop."""

KEPT_BYTES: Final = BACKLOG_BYTES
"""Bytes of the open streams judged in the judging process kept in the proxy, across
streams, so that a judging process that dies loses no verdict: each open stream is
judged again in-process from its start. A stream that would pass the budget is no
longer kept: if the judge dies while it is open, it is said not judged (``PROXY-JUDGE``)."""


class _RemoteWatch:
    """One stream judged in the pool's process — its chunks kept (references, no copy,
    within :data:`KEPT_BYTES`) until its verdict is in, so that if the judging process
    dies the stream is judged in-process from its start (:meth:`rejudge`)."""

    def __init__(
        self,
        pool: JudgePool,
        ex: int,
        on_finding: Callable[[WatchFinding], None],
        binding: str = "sse",
        run_input: Mapping[str, Any] | None = None,
    ):
        self.pool, self.ex, self.on_finding = pool, ex, on_finding
        self.binding, self.run_input = binding, run_input
        self.done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.kept: list[bytes] | None = []  # None: past the budget, not kept
        self.kept_bytes = 0
        self.told = 0  # findings the judging process has told of this stream
        self.local: StreamWatch | None = None  # judged in-process since the judge died
        self.closing: bool | None = None  # cut_short, once the stream has ended
        self.given_up = False  # not judged: past the budget, the judge stalled (said)
        self.taking = False  # being judged here from its kept chunks (take_over)

    def found(self, finding: WatchFinding) -> None:
        self.told += 1
        self.on_finding(finding)

    async def feed(self, chunk: bytes) -> None:
        if self.local is not None:
            self.local.feed(chunk)
            return
        if self.pool.broken or self.given_up:
            return  # not kept, already said not judged
        self.pool.keep(self, chunk)  # before it is sent: a death while it waits loses nothing
        if await self.pool.send(("chunk", self.ex, chunk)):
            return
        # the backlog is still full after VERDICT_OVERDUE: the judging process
        # is starved (idle priority, cores kept busy by other work) — forwarding would
        # wait for it as long as they are busy. The stream is judged here from now on,
        # from its kept chunks; one not kept is left to the judging process, waited for
        # while it moves — given up, and said, once it has not moved for as long.
        if self.kept is None:
            while not await self.pool.room():
                if self.pool.stalled():
                    self.give_up("the judging process has not moved for 0.5 s")
                    return
            return
        self.pool.forget(self)
        self.pool.drop(self.ex)
        self.local = await self._judged_here()

    async def _judged_here(self) -> StreamWatch:
        """This stream judged in the proxy's process from its start, from its kept
        chunks — the loop let run every :data:`TAKE_OVER_SLICE` chunks (the other
        exchanges go on meanwhile; this stream's next chunk waits for it)."""
        local = self._local_watch()
        kept, self.kept = self.kept or [], None
        for i, chunk in enumerate(kept, 1):
            local.feed(chunk)
            if i % TAKE_OVER_SLICE == 0:
                await asyncio.sleep(0)
        return local

    async def outcome(self, cut_short: bool = False) -> Any:
        self.closing = cut_short
        if self.local is not None:
            return self._local_outcome()
        if self.given_up:
            return None
        await self.pool.send(("close", self.ex, cut_short))
        return await self.done

    def _local_outcome(self) -> Any:
        assert self.local is not None and self.closing is not None
        self.local.cut = self.local.cut or self.closing
        return self.local.outcome(self.run_input or {})

    def rejudge(self) -> None:
        """The judging process died with this stream open (or its verdict owed): the
        stream judged in-process from its start — the findings the judge told already
        not told again — or, its bytes not kept, said not judged (an error)."""
        if self.done.done():
            return
        if self.kept is None:
            self._not_judged("the judging process died while this stream was open")
            return
        local = self._local_watch()
        kept, self.kept = self.kept, None
        for chunk in kept:
            local.feed(chunk)
        self.local = local
        if self.closing is not None:  # its end had been sent: the verdict is owed now
            self.done.set_result(self._local_outcome())

    def give_up(self, why: str) -> None:
        """Not judged, and said: a stream past the kept budget (:data:`KEPT_BYTES`) that
        the judging process does not get to — a ``PROXY-JUDGE`` error (exit 1), never
        a run left as if it broke no rule, never a stream or an input held for ever."""
        if self.done.done() or self.given_up:
            return
        self.given_up = True
        self.pool.forget(self)
        self.pool.drop(self.ex)
        self._not_judged(why)

    def _not_judged(self, why: str) -> None:
        """The ``PROXY-JUDGE`` error of a stream whose bytes were not kept, and its
        verdict settled as unknown — the judging process died, or never got to it."""
        run_input = self.run_input or {}
        self.on_finding(
            WatchFinding(
                "PROXY-JUDGE",
                "error",
                "agent",
                f"not judged: {why}, and its bytes were not kept (the open streams keep "
                f"{KEPT_BYTES} bytes at most); the stream's verdict is unknown — no rule "
                "is known broken or kept",
                thread_id=run_input.get("threadId"),
                run_id=run_input.get("runId"),
            )
        )
        self.done.set_result(None)

    async def take_over(self, deadline: float | None = None) -> bool:
        """The verdict on this ended stream is overdue — the judging process, at idle
        priority, is starved by busy cores (or stopped): the stream is judged here from
        its kept chunks, the loop let run every :data:`TAKE_OVER_SLICE` chunks; what the
        judging process says of it later is not heard (:meth:`JudgePool.forget`), and
        the findings it told already are not told again. ``False`` when it cannot be
        taken over (it has not ended, or is judged here already). One whose bytes were
        not kept is waited for while the judging process moves, and given up
        (:meth:`give_up`) once it has not moved for :data:`VERDICT_OVERDUE`, or at
        ``deadline`` (the loop's time: the proxy stops)."""
        if self.done.done():
            return True
        if self.taking:  # another waiter is taking it over: its verdict is that one's
            await asyncio.shield(self.done)
            return True
        if self.closing is None or self.local is not None or self.given_up:
            return False
        if self.kept is None:
            loop = asyncio.get_running_loop()
            while not self.done.done():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self.done), VERDICT_OVERDUE)
                if self.done.done():
                    break
                if self.pool.stalled():
                    self.give_up("the judging process has not moved for 0.5 s")
                elif deadline is not None and loop.time() >= deadline:
                    self.give_up("the proxy stopped before the judging process got to it")
            return True
        self.taking = True
        self.pool.forget(self)
        self.local = await self._judged_here()
        if not self.done.done():
            self.done.set_result(self._local_outcome())
        return True

    def _local_watch(self) -> StreamWatch:
        """A judge of this stream in the proxy's process, from its start: the findings
        the judging process told already (:attr:`told`) not told again — judging is
        deterministic, so they are the first ones it finds."""
        skip = self.told

        def replayed(finding: WatchFinding) -> None:
            nonlocal skip
            if skip > 0:
                skip -= 1
                return
            self.on_finding(finding)

        return StreamWatch(self.binding, run_input=self.run_input, on_finding=replayed)


class JudgePool:
    """Streams judged in a process of their own, so forwarding never waits on the judge.

    Non-strict only (strict judges each chunk before it is forwarded). Started on first
    use (``spawn``). No thread on the proxy's side: jobs are written to a non-blocking
    pipe from the event loop, results read when the loop sees them (a thread moving
    them would take the GIL from the loop for up to a switch interval
    (``sys.getswitchinterval()``) on an event's way). A judging process that dies is said in the log, the streams open
    (or whose verdict is owed) then are judged again in-process from their start
    (their chunks kept, :data:`KEPT_BYTES`), and the streams after it are judged in
    the proxy's own process.
    """

    def __init__(self) -> None:
        self._process: Any = None
        self._jobs: Any = None  # the proxy's ends of the two pipes
        self._results: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._open: dict[int, _RemoteWatch] = {}
        self._next = 0
        self._out: deque[bytes | memoryview] = deque()  # framed jobs the pipe did not take
        self._queued = 0  # … and their bytes
        self._in = bytearray()
        self._drained = asyncio.Event()
        self.broken = False
        self.kept = 0  # bytes the open streams keep (:data:`KEPT_BYTES` at most)
        self._moved = 0.0  # the loop's time the judging process last took jobs or told

    def open(
        self,
        binding: str,
        run_input: Mapping[str, Any] | None,
        on_finding: Callable[[WatchFinding], None],
    ) -> _RemoteWatch:
        if self._process is None:
            self._start()
        self._next += 1
        remote = _RemoteWatch(self, self._next, on_finding, binding, run_input)
        self._open[self._next] = remote
        self._write(("open", self._next, binding, dict(run_input) if run_input else None))
        return remote

    def keep(self, remote: _RemoteWatch, chunk: bytes) -> None:
        """Keep a stream's chunk until its verdict is in, within :data:`KEPT_BYTES`."""
        if remote.kept is None:
            return
        if self.kept + len(chunk) > KEPT_BYTES:  # past the budget: this stream not kept
            self._unkeep(remote)
            remote.kept = None
            return
        remote.kept.append(chunk)
        remote.kept_bytes += len(chunk)
        self.kept += len(chunk)

    def forget(self, remote: _RemoteWatch) -> None:
        """A stream judged elsewhere from now on (:meth:`_RemoteWatch.take_over`): the
        judging process's later messages about it are not heard, its bytes not counted."""
        if self._open.get(remote.ex) is remote:
            del self._open[remote.ex]
            self._unkeep(remote)

    def _unkeep(self, remote: _RemoteWatch) -> None:
        self.kept -= remote.kept_bytes
        remote.kept_bytes = 0

    @property
    def behind(self) -> bool:
        """The judging process is half the backlog behind (:data:`BACKLOG_BYTES`): a new
        stream is judged in the proxy's own process instead, at the cost of forwarding
        at the rate the proxy judges — never a stall while the judge is starved."""
        return self._queued > BACKLOG_BYTES // 2

    async def send(self, job: tuple[Any, ...]) -> bool:
        """Queue a job; wait while the backlog is over :data:`BACKLOG_BYTES` —
        :data:`VERDICT_OVERDUE` seconds at most for it to drain: ``False`` then (the
        judging process is starved), ``True`` once the job is taken or queued within it."""
        if self.broken:
            return True
        self._write(job)
        while self._queued > BACKLOG_BYTES and not self.broken:
            self._drained.clear()
            try:
                await asyncio.wait_for(self._drained.wait(), VERDICT_OVERDUE)
            except TimeoutError:
                return False
        return True

    async def room(self) -> bool:
        """Wait :data:`VERDICT_OVERDUE` at most for the backlog to be within
        :data:`BACKLOG_BYTES` (or the process to die): ``True`` once it is."""
        if self._queued > BACKLOG_BYTES and not self.broken:
            self._drained.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._drained.wait(), VERDICT_OVERDUE)
        return self._queued <= BACKLOG_BYTES or self.broken

    def stalled(self) -> bool:
        """The judging process has taken no job and told nothing for
        :data:`VERDICT_OVERDUE` seconds (stopped, or given no time at all)."""
        assert self._loop is not None
        return self._loop.time() - self._moved >= VERDICT_OVERDUE

    def drop(self, ex: int) -> None:
        """The judging process forgets stream ``ex`` (judged in the proxy from now on)."""
        if not self.broken:
            self._write(("drop", ex))

    def _write(self, job: tuple[Any, ...]) -> None:
        payload = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
        pending = bool(self._out)
        self._out.append(_HEADER.pack(len(payload)))
        self._out.append(payload)
        self._queued += 4 + len(payload)
        if not pending:
            self._flush()

    def _flush(self) -> None:
        assert self._loop is not None
        fd = self._jobs.fileno()
        try:
            while self._out:
                # the backlog is a queue of the jobs as pickled, written as they are
                # (a bytearray appended to and cut from its front was copied whole on
                # each write: a third of the proxy's time on a burst)
                written = os.writev(fd, list(itertools.islice(self._out, 64)))
                self._queued -= written
                self._moved = self._loop.time()
                while written:
                    head = self._out[0]
                    if written < len(head):
                        self._out[0] = memoryview(head)[written:]
                        break
                    written -= len(head)
                    self._out.popleft()
        except BlockingIOError:
            self._loop.add_writer(fd, self._flush)
            return
        except OSError:  # the judging process is gone
            self._died()
            return
        self._loop.remove_writer(fd)
        self._drained.set()

    def _start(self) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        jobs_out, self._jobs = context.Pipe(duplex=False)
        self._results, results_in = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_judge_worker, args=(jobs_out, results_in), daemon=True
        )
        self._process.start()
        jobs_out.close()
        results_in.close()
        _widen(self._jobs.fileno())
        os.set_blocking(self._jobs.fileno(), False)
        os.set_blocking(self._results.fileno(), False)
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._results.fileno(), self._read)

    def _read(self) -> None:
        try:
            data = os.read(self._results.fileno(), 1 << 20)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._died()
            return
        assert self._loop is not None
        self._moved = self._loop.time()
        buf = self._in
        buf += data
        while len(buf) >= 4:
            (size,) = _HEADER.unpack_from(buf)
            if len(buf) < 4 + size:
                break
            message = pickle.loads(bytes(buf[4 : 4 + size]))
            del buf[: 4 + size]
            try:
                self._dispatch(message)
            except Exception as exc:  # a callback's failure: the next messages still go
                log.error(
                    "telling the judge's %r failed: %s: %s", message[0], type(exc).__name__, exc
                )

    def _died(self) -> None:
        if self.broken:
            return
        self.broken = True
        assert self._loop is not None
        self._loop.remove_reader(self._results.fileno())
        self._loop.remove_writer(self._jobs.fileno())
        if self._process is not None:
            self._process.join(timeout=1)
            log.error(
                "the judging process ended (exit %s); judging in-process from now on",
                self._process.exitcode,
            )
        self._drained.set()
        # no verdict lost: each stream open (or whose verdict is owed) judged again
        # in-process from its start, or said not judged
        open_, self._open = self._open, {}
        for remote in open_.values():
            self._unkeep(remote)
            try:
                remote.rejudge()
            except Exception as exc:  # a callback's failure: the other streams still go
                log.error("judging a stream again failed: %s: %s", type(exc).__name__, exc)
                if not remote.done.done():
                    remote.done.set_result(None)

    def _dispatch(self, message: tuple[Any, ...]) -> None:
        kind, ex = message[0], message[1]
        remote = self._open.get(ex)
        if kind == "finding" and remote is not None:
            remote.found(message[2])
        elif kind in ("closed", "failed"):
            self._open.pop(ex, None)
            if remote is not None:
                self._unkeep(remote)
                remote.kept = None
            if kind == "failed":
                log.error("judging a stream failed: %s", message[2])
            if remote is not None and not remote.done.done():
                remote.done.set_result(message[2] if kind == "closed" else None)

    def stop(self) -> None:
        """End the judging process: its pipe closed, it ends (or is ended)."""
        if self._process is None:
            return
        process, self._process = self._process, None
        self.broken = True
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._results.fileno())
            self._loop.remove_writer(self._jobs.fileno())
        self._jobs.close()  # the worker reads EOF and returns
        self._results.close()
        # every verdict owed has been taken over by now (``ProxyApp.drain``): a judging
        # process starved by busy cores (or stopped) is not waited for — ended, then
        # killed (a stopped process acts on no SIGTERM, and multiprocessing's exit would
        # wait for it forever)
        process.join(timeout=1)
        if process.is_alive():
            process.terminate()
            process.join(timeout=1)
        if process.is_alive():
            process.kill()
            process.join(timeout=5)


def _widen(fd: int) -> None:
    """The jobs pipe holds 1 MiB where the system allows (Linux ``F_SETPIPE_SZ``; the
    default is 64 KiB): fewer wake-ups of the loop to write a backlog."""
    with contextlib.suppress(ImportError, OSError, AttributeError):
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 1 << 20)
