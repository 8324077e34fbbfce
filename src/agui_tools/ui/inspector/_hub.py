"""The inspector's message log for the page (:class:`Hub`) and what bounds its messages.

The back end appends plain JSON messages; a page reads them over Server-Sent Events
from any point (a reconnect, a second tab). :func:`compact` joins a catching-up page's
text deltas. :class:`Refused` is how any request the inspector turns down is said.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable
from typing import Any

import orjson

from ..._errors import Refused

__all__ = [
    "PREVIEW_LIMIT",
    "VALUE_LIMIT",
    "Busy",
    "Hub",
    "Refused",
    "bounded",
    "compact",
    "now_ms",
    "schema_errors",
]


def schema_errors(errors: Iterable[Any]) -> list[dict[str, Any]]:
    """Schema errors as the page shows them, each by its field (its JSON Pointer ``path``)."""
    return [{"path": e.path, "keyword": e.keyword, "message": e.message} for e in errors]


class Busy(Refused):
    def __init__(self) -> None:
        super().__init__(409, "a turn is in progress: wait for it to end")


def _jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (anything orjson cannot write becomes its repr)."""
    return orjson.loads(orjson.dumps(value, default=repr, option=orjson.OPT_NON_STR_KEYS))


PREVIEW_LIMIT = 16_384
"""The most characters of a streaming argument's preview a card update carries."""

VALUE_LIMIT = 262_144
"""The most characters of a value (a call's arguments, a run's input, the thread's
messages or state) one message carries whole; past it, a head (``…Head``) and the
size (``…Chars``) — the exports have the whole."""


def bounded(name: str, value: Any, limit: int = VALUE_LIMIT) -> dict[str, Any]:
    """``{name: value}`` when its JSON has at most ``limit`` characters, else
    ``{name + "Head": the first limit characters, name + "Chars": its length}``."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
        except TypeError:
            return {name: value}  # not JSON at all: _jsonable writes its repr
    if len(text) <= limit:
        return {name: value}
    return {f"{name}Head": text[:limit], f"{name}Chars": len(text)}


def now_ms() -> float:
    """The time a message is stamped with: milliseconds since the epoch."""
    return round(time.time() * 1000, 3)


class Hub:
    """An ordered, replayable log of messages for the page (``Last-Event-ID`` resumes, a new
    tab catches up).

    A message with a ``supersedes`` key replaces the previous one with that key (its sequence
    number never reused). ``budget`` bounds the log's JSON bytes (``None``: none); past it the
    oldest leave, down to nine tenths, counted in ``dropped`` — a days-long proxy shows recent
    traffic.
    """

    def __init__(self, *, budget: int | None = None) -> None:
        self._log: list[dict[str, Any] | None] = []
        self._sizes: list[int] = []
        self._base = 0  # the sequence number of _log[0]
        self._latest: dict[str, int] = {}
        self._changed = asyncio.Event()
        self.closed = False
        self.superseded = 0
        self.budget = budget
        self.bytes = 0
        """The bytes of JSON the messages kept hold."""
        self.dropped = 0
        self.thread_start = 0
        """Where a page that connects afresh starts: the last ``new-thread`` message (the
        threads before it are in the store and the exports, not in every new tab)."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The messages kept, in order (superseded ones left out)."""
        return [m for m in self._log if m is not None]

    @property
    def next_seq(self) -> int:
        return self._base + len(self._log)

    @property
    def first_seq(self) -> int:
        """The sequence number of the oldest message still kept (0 until the budget bit)."""
        return self._base

    def close(self) -> None:
        """End every follower (the server is stopping)."""
        self.closed = True
        self._changed.set()

    def push_event(self, run: int, index: int, event: Any, raw: str) -> str | None:
        """An ``event`` message for a frame as received; its ``type`` when it has one."""
        kind = event.get("type") if isinstance(event, dict) else None
        self.push(
            "event",
            run=run,
            index=index,
            type=kind if isinstance(kind, str) else "(not an event)",
            event=event,
            raw=raw,
            t=now_ms(),
        )
        return kind if isinstance(kind, str) else None

    def push(self, kind: str, *, supersedes: str | None = None, **fields: Any) -> dict[str, Any]:
        seq = self.next_seq
        data = orjson.dumps(
            {"seq": seq, "kind": kind, **fields}, default=repr, option=orjson.OPT_NON_STR_KEYS
        )
        message: dict[str, Any] = orjson.loads(data)  # plain JSON data (see _jsonable)
        if supersedes is not None:
            previous = self._latest.get(supersedes)
            if previous is not None and previous >= self._base:
                at = previous - self._base
                if self._log[at] is not None:
                    self._log[at] = None
                    self.bytes -= self._sizes[at]
                    self._sizes[at] = 0
                    self.superseded += 1
            self._latest[supersedes] = seq
        if kind == "new-thread":
            self.thread_start = seq
        self._log.append(message)
        self._sizes.append(len(data))
        self.bytes += len(data)
        if self.budget is not None and self.bytes > self.budget:
            self._trim(self.budget * 9 // 10)
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
        return message

    def _trim(self, target: int) -> None:
        """Drop the oldest messages until at most ``target`` bytes are kept (the newest
        message always stays)."""
        cut = 0
        while cut < len(self._log) - 1 and self.bytes > target:
            if self._log[cut] is not None:
                self.dropped += 1
            self.bytes -= self._sizes[cut]
            cut += 1
        del self._log[:cut]
        del self._sizes[:cut]
        self._base += cut
        self.thread_start = max(self.thread_start, self._base)
        self._latest = {k: v for k, v in self._latest.items() if v >= self._base}

    def settle(self, key: str) -> None:
        """Messages pushed with ``key`` from now on supersede nothing before this point."""
        self._latest.pop(key, None)

    def since(self, start: int) -> list[dict[str, Any]]:
        """The messages kept from sequence number ``start`` on."""
        return [m for m in self._log[max(0, start - self._base) :] if m is not None]

    async def follow(self, start: int = 0) -> AsyncIterator[dict[str, Any]]:
        """Every message from ``start`` on, waiting for new ones forever."""
        async for batch in self.batches(start):
            for message in batch:
                yield message

    async def batches(self, start: int = 0) -> AsyncIterator[list[dict[str, Any]]]:
        """What is new from ``start`` on, as a list each time: everything that piled up
        while the reader was away comes at once (a page catches up in one batch). A
        reader left behind by the budget goes on from the oldest message kept."""
        i = max(0, start)
        while not self.closed:
            changed = self._changed
            i = max(i, self._base)
            if i < self.next_seq:
                batch = [m for m in self._log[i - self._base :] if m is not None]
                i = self.next_seq
                if batch:
                    yield batch
                continue
            await changed.wait()


def compact(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with each run of text deltas of one message joined into one.

    Only ``event`` and ``warning`` messages (the frame list's) may stand between
    two deltas that are joined: anything the chat shows in between keeps them
    apart, so the page builds the same chat as from the deltas one by one.
    """
    out: list[dict[str, Any]] = []
    open_text: dict[str, Any] | None = None
    parts: list[str] = []
    for message in messages:
        kind = message["kind"]
        if kind == "text":
            if open_text is not None and open_text["messageId"] == message["messageId"]:
                parts.append(message["delta"])
                open_text["seq"] = message["seq"]
                continue
            if open_text is not None:
                open_text["delta"] = "".join(parts)
            open_text = dict(message)
            parts = [message["delta"]]
            out.append(open_text)
        else:
            if kind not in ("event", "warning") and open_text is not None:
                open_text["delta"] = "".join(parts)
                open_text = None
            out.append(message)
    if open_text is not None:
        open_text["delta"] = "".join(parts)
    return out
