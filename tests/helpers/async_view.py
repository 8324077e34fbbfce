"""A synchronous view of an :class:`AsyncPostgresStore`, so the one store contract
suite (tests/app/test_store.py) runs on the async store too.

The view owns an event loop in a background thread — where the async store's pool
lives — and runs each coroutine there (``run_coroutine_threadsafe(...).result()``),
exposing the sync :class:`~agui_tools.app._store.Store` surface. Callers wait, so
``blocking = True``: async callers run it in a worker thread, as a sync store.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Mapping
from typing import Any, ClassVar, TypeVar

from agui_tools.app._journal import ClaimResult, JournalKey
from agui_tools.app._store import Snapshot, ThreadRecord
from agui_tools.app._store_postgres import AsyncPostgresStore

__all__ = ["AsyncView"]

T = TypeVar("T")


class AsyncView:
    blocking: ClassVar[bool] = True

    def __init__(self, store: AsyncPostgresStore) -> None:
        self.store = store
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="async-store-view", daemon=True
        )
        self._thread.start()
        try:
            self._wait(store.open())
        except BaseException:
            self._stop()
            raise

    def _wait(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def close(self) -> None:
        try:
            self._wait(self.store.aclose())
        finally:
            self._stop()

    def claim(
        self, key: JournalKey, *, tool: str, decision: Mapping[str, Any] | None = None
    ) -> ClaimResult:
        return self._wait(self.store.claim(key, tool=tool, decision=decision))

    def finish(self, key: JournalKey, answer: Mapping[str, Any]) -> dict[str, Any]:
        return self._wait(self.store.finish(key, answer))

    def settle(
        self,
        key: JournalKey,
        answer: Mapping[str, Any],
        *,
        decision: Mapping[str, Any] | None = None,
    ) -> ClaimResult:
        return self._wait(self.store.settle(key, answer, decision=decision))

    def lookup(self, thread_id: str, call_id: str) -> ClaimResult | None:
        return self._wait(self.store.lookup(thread_id, call_id))

    def answer_for(self, thread_id: str, call_id: str) -> dict[str, Any] | None:
        return self._wait(self.store.answer_for(thread_id, call_id))

    def record_decision(self, decision: Mapping[str, Any]) -> None:
        self._wait(self.store.record_decision(decision))

    def decisions(self, thread_id: str, call_id: str) -> list[dict[str, Any]]:
        return self._wait(self.store.decisions(thread_id, call_id))

    def load(self, thread_id: str) -> ThreadRecord | None:
        return self._wait(self.store.load(thread_id))

    def save_run(self, thread_id: str, expected_version: int, snapshot: Snapshot) -> int:
        return self._wait(self.store.save_run(thread_id, expected_version, snapshot))

    def ledger(self) -> list[tuple[int, bytes]]:
        return self._wait(self.store.ledger())
