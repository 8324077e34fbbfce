"""The hand-off between an agent's task and the transport that writes its events."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable

from ..wire._codec import encode_json
from ..wire._kinds import WireEvent

__all__ = ["EventChannel"]


class EventChannel:
    """Hands verified events from the agent's task to the transport, in order.

    ``push`` is synchronous: an ``await`` between judging and queueing would let another task's
    events overtake; events are encoded as pushed, so mutating an emitted dict changes nothing.
    Backpressure is :meth:`flow` (past ``high_water``). ``encode``: JSON, or a binary frame.
    A quiet stream is noticed by one alarm per stream, re-armed only when it rings early
    (:meth:`wait`), not by a timer set and cancelled per event.

    ``sink``, when the transport sets one, takes a payload straight to the connection
    (``False``: not now — its buffer is full, or the client left): a push with nothing
    queued ahead of it is written in the pushing task, with no hand-off to the reader,
    which then wakes only for what had to wait, the end, or a quiet stream.
    """

    def __init__(
        self,
        *,
        high_water: int | None = 256,
        encode: Callable[[WireEvent], bytes] = encode_json,
    ) -> None:
        self._encode = encode
        self._payloads: deque[bytes] = deque()
        # what the reader and the writers wait on: a bare future each, made only when
        # someone waits (an asyncio.Event per stream costs a deque and a coroutine layer)
        self._readable: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None
        self._behind = False
        self._high_water = high_water
        self.closed = False
        """The producer is done: nothing more will be pushed."""
        self.aborted = False
        """The reader is gone (client disconnected): pushes are dropped."""
        self.ended_with: str | None = None
        """The type of the last terminal event pushed (RUN_FINISHED / RUN_ERROR)."""
        self.pushed = 0
        """How many events were pushed (dropped ones, after an abort, are not counted)."""
        self.sink: Callable[[bytes], bool] | None = None
        """Where a push writes its payloads itself, when nothing is queued (see above)."""
        self._alarm: asyncio.TimerHandle | None = None
        self._quiet_until = 0.0
        self._quiet_for = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._rang = False

    def push(self, events: Iterable[WireEvent]) -> None:
        if self.aborted:
            return
        encode, payloads, sink = self._encode, self._payloads, self.sink
        count = 0
        for ev in events:
            payload = encode(ev)
            count += 1
            if ev["type"] in ("RUN_FINISHED", "RUN_ERROR"):
                self.ended_with = ev["type"]
            if sink is None or payloads or not sink(payload):
                payloads.append(payload)  # behind others, or the connection cannot take it
        self.pushed += count
        if count and self._loop is not None and self._alarm is not None and not payloads:
            # written: the quiet time starts again (the alarm moves when it rings)
            self._quiet_until = self._loop.time() + self._quiet_for
        if payloads:
            _wake(self._readable)
            if self._high_water is not None and len(self._payloads) >= self._high_water:
                self._behind = True

    async def flow(self) -> None:
        """Wait while the reader is behind (returns at once when it is not)."""
        if self._behind:
            waiter = self._writable
            if waiter is None or waiter.done():
                waiter = self._writable = asyncio.get_running_loop().create_future()
            await waiter

    @property
    def has_events(self) -> bool:
        return bool(self._payloads)

    def take(self) -> list[bytes]:
        """Every queued event, as its payload (see ``encode``)."""
        out = list(self._payloads)
        self._payloads.clear()
        self._behind = False
        _wake(self._writable)
        return out

    async def wait(self, timeout: float | None) -> bool:
        """Wait for events (or the end); ``False`` when ``timeout`` passed quietly.
        One reader: a second task waiting at once shares the first one's wait."""
        if self._payloads or self.closed or self.aborted:
            return True
        loop = asyncio.get_running_loop()
        waiter = self._readable
        if waiter is None or waiter.done():
            waiter = self._readable = loop.create_future()
            self._rang = False
        if timeout is not None:
            self._loop, self._quiet_for = loop, timeout
            self._quiet_until = until = loop.time() + timeout
            alarm = self._alarm
            if alarm is None or alarm.when() > until:
                if alarm is not None:
                    alarm.cancel()
                self._alarm = loop.call_at(until, self._ring)
        try:
            await waiter
        finally:
            self._readable = None
        if self._rang:
            self._rang = False
            if not (self._payloads or self.closed or self.aborted):
                return False
        return True

    def _ring(self) -> None:
        """The alarm: the waiter's quiet time is up — or it is not, and the alarm moves
        to when it will be (a stream that is not waiting arms it again when it waits)."""
        self._alarm = None
        if self._readable is None or self._readable.done():
            return
        loop = asyncio.get_running_loop()
        if loop.time() < self._quiet_until:
            self._alarm = loop.call_at(self._quiet_until, self._ring)
            return
        self._rang = True
        _wake(self._readable)

    def _disarm(self) -> None:
        if self._alarm is not None:
            self._alarm.cancel()
            self._alarm = None

    def close(self) -> None:
        self.closed = True
        self._disarm()
        _wake(self._readable)

    def abort(self) -> None:
        self.aborted = True
        self._disarm()
        self._payloads.clear()
        self._behind = False
        _wake(self._readable)
        _wake(self._writable)


def _wake(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)
