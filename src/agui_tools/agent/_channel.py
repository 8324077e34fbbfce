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
    """

    def __init__(
        self,
        *,
        high_water: int | None = 256,
        encode: Callable[[WireEvent], bytes] = encode_json,
    ) -> None:
        self._encode = encode
        self._payloads: deque[bytes] = deque()
        self._readable = asyncio.Event()
        self._writable = asyncio.Event()
        self._writable.set()
        self._high_water = high_water
        self.closed = False
        """The producer is done: nothing more will be pushed."""
        self.aborted = False
        """The reader is gone (client disconnected): pushes are dropped."""
        self.ended_with: str | None = None
        """The type of the last terminal event pushed (RUN_FINISHED / RUN_ERROR)."""
        self.pushed = 0
        """How many events were pushed (dropped ones, after an abort, are not counted)."""

    def push(self, events: Iterable[WireEvent]) -> None:
        if self.aborted:
            return
        encode = self._encode
        before = len(self._payloads)
        for ev in events:
            self._payloads.append(encode(ev))
            if ev["type"] in ("RUN_FINISHED", "RUN_ERROR"):
                self.ended_with = ev["type"]
        self.pushed += len(self._payloads) - before
        if self._payloads:
            self._readable.set()
            if self._high_water is not None and len(self._payloads) >= self._high_water:
                self._writable.clear()

    async def flow(self) -> None:
        """Wait while the reader is behind (returns at once when it is not)."""
        if not self._writable.is_set():
            await self._writable.wait()

    @property
    def has_events(self) -> bool:
        return bool(self._payloads)

    def take(self) -> list[bytes]:
        """Every queued event, as its payload (see ``encode``)."""
        out = list(self._payloads)
        self._payloads.clear()
        if not self.closed and not self.aborted:
            self._readable.clear()
        self._writable.set()
        return out

    async def wait(self, timeout: float | None) -> bool:
        """Wait for events (or the end); ``False`` when ``timeout`` passed quietly."""
        if self._payloads or self.closed or self.aborted:
            return True
        try:
            async with asyncio.timeout(timeout):
                await self._readable.wait()
        except TimeoutError:
            return False
        return True

    def close(self) -> None:
        self.closed = True
        self._readable.set()

    def abort(self) -> None:
        self.aborted = True
        self._payloads.clear()
        self._readable.set()
        self._writable.set()
