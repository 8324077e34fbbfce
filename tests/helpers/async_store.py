"""An async store over the memory store: the core's async path, without a server.

:class:`AsyncMemoryStore` is the :class:`~agui_tools.app._store.AsyncStore`
contract with coroutine methods, each a real ``await`` point: it records
every call (method, arguments, the thread it ran on) and may be held at a
gate (an ``asyncio.Event``) or made to fail — so a test can prove what the
conversation asked, that it asked on the event loop, and what it does when
the store waits or fails. The real async store, ``AsyncPostgresStore``, runs
the same tests where a server is needed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any, ClassVar

from agui_tools._errors import StoreError
from agui_tools.app._journal import ClaimResult, JournalKey
from agui_tools.app._store import MemoryStore, Snapshot, ThreadRecord


class AsyncForwarding:
    """The :class:`~agui_tools.app._store.AsyncStore` contract, each method awaiting
    one ``_call(method, *args, **kwargs)`` — the shape of every async store wrapper
    of the tests (this module's :class:`AsyncMemoryStore`, the fault campaign's
    ``AsyncFaultyStore``): a subclass says what a call does, once."""

    is_async: ClassVar[bool] = True
    blocking: ClassVar[bool] = False

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def claim(
        self, key: JournalKey, *, tool: str, decision: Mapping[str, Any] | None = None
    ) -> ClaimResult:
        # forwarded only when given: a recorded call reads as the sync face's
        kept = {"decision": decision} if decision is not None else {}
        result: ClaimResult = await self._call("claim", key, tool=tool, **kept)
        return result

    async def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await self._call("finish", key, answer)
        return result

    async def settle(
        self,
        key: JournalKey,
        answer: Mapping[str, Any],
        *,
        decision: Mapping[str, Any] | None = None,
    ) -> ClaimResult:
        result: ClaimResult = await self._call("settle", key, answer, decision=decision)
        return result

    async def lookup(self, thread_id: str, call_id: str) -> ClaimResult | None:
        result: ClaimResult | None = await self._call("lookup", thread_id, call_id)
        return result

    async def answer_for(self, thread_id: str, call_id: str) -> dict[str, Any] | None:
        result: dict[str, Any] | None = await self._call("answer_for", thread_id, call_id)
        return result

    async def record_decision(self, decision: Mapping[str, Any]) -> None:
        await self._call("record_decision", decision)

    async def decisions(self, thread_id: str, call_id: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = await self._call("decisions", thread_id, call_id)
        return result

    async def load(self, thread_id: str) -> ThreadRecord | None:
        result: ThreadRecord | None = await self._call("load", thread_id)
        return result

    async def save_run(self, thread_id: str, expected_version: int, snapshot: Snapshot) -> int:
        result: int = await self._call("save_run", thread_id, expected_version, snapshot)
        return result


class AsyncMemoryStore(AsyncForwarding):
    def __init__(self, inner: MemoryStore | None = None) -> None:
        self.inner = inner if inner is not None else MemoryStore()
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.threads: set[int] = set()
        self.gate: asyncio.Event | None = None
        self.fail: dict[str, Exception] = {}

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((method, args, kwargs))
        self.threads.add(threading.get_ident())
        await asyncio.sleep(0)  # every call is a real await point
        if self.gate is not None:
            await self.gate.wait()
        if method in self.fail:
            raise self.fail[method]
        return getattr(self.inner, method)(*args, **kwargs)

    @property
    def methods(self) -> list[str]:
        return [m for m, _, _ in self.calls]

    async def aclose(self) -> None:
        self.inner.close()


def store_error(what: str) -> StoreError:
    return StoreError(f"the test store could not {what}")
