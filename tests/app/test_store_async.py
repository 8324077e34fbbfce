"""A conversation on an async store: every store call awaited on the event loop.

The disposition path is written once (generators of ``StoreOp``); these tests
prove the async face performs it — on the loop, never in a worker thread —
asks the store exactly what the sync face asks, refuses the sync methods with
a clear error, and keeps the store's guarantees when the store waits, fails
or the task is cancelled. ``AsyncMemoryStore`` (tests/helpers/async_store.py)
stands in for the server; tests/app/test_store_postgres_async.py runs the real
``AsyncPostgresStore``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from agui_tools._errors import JournalError, ReloadRequired, StaleThread, StoreError, UsageError
from agui_tools.app import AsyncDriver, Driver
from agui_tools.app._calls import Answer, CallStatus
from agui_tools.app._consent import ConsentPolicy
from agui_tools.app._conversation import Conversation
from agui_tools.app._store import MemoryStore
from tests.helpers.conversation import CONFIRM, LOOKUP, call, run

from ..helpers.async_store import AsyncMemoryStore, store_error

THREAD = "t-async"


def _first_run(conv: Conversation) -> None:
    conv.next_input(
        messages=[{"id": "u1", "role": "user", "content": "order two widgets and look one up"}],
        run_id="r1",
    )
    run(
        conv,
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "Doing both."},
        *call("c1", "confirm_order", '{"orderId":"A7","qty":2}', parent="m1"),
        *call("c2", "lookup", '{"q":"widget"}', parent="m1"),
    )


def _conv(store: Any, **kw: Any) -> Conversation:
    return Conversation(thread_id=THREAD, tools=[CONFIRM, LOOKUP], store=store, **kw)


async def _ended(store: AsyncMemoryStore, *, end: bool = True) -> Conversation:
    """A conversation on ``store`` whose first run arrived (and ended, unless not
    ``end``), both calls approved by policy."""
    conv = _conv(store, consent=ConsentPolicy.auto_approve())
    await AsyncDriver(conv).restore()
    _first_run(conv)
    if end:
        await AsyncDriver(conv).end_run()
    return conv


async def _a_whole_thread(store: AsyncMemoryStore) -> Conversation:
    conv = _conv(store)
    assert await AsyncDriver(conv).restore() is False  # a new thread: nothing stored
    _first_run(conv)
    result = await AsyncDriver(conv).end_run()
    assert [(c.call_id, c.status) for c in result.pending] == [
        ("c1", CallStatus.AWAITING_CONSENT),
        ("c2", CallStatus.APPROVED),
    ]
    await AsyncDriver(conv).approve("c1", arguments={"orderId": "A7", "qty": 3})
    placed = await AsyncDriver(conv).execute("c1", lambda a: f"placed {a['qty']}")
    found = await AsyncDriver(conv).execute("c2", lambda a: "found")
    assert (placed, found) == (Answer.executed("c1", "placed 3"), Answer.executed("c2", "found"))
    return conv


def test_a_thread_on_an_async_store_is_performed_on_the_event_loop() -> None:
    store = AsyncMemoryStore()

    async def scenario() -> int:
        await _a_whole_thread(store)
        return threading.get_ident()

    loop_thread = asyncio.run(scenario())
    assert store.threads == {loop_thread}  # no worker thread: psycopg's async API's way
    assert store.methods == [
        "load",
        "save_run",
        "lookup",  # c1: nothing recorded, so its decisions are read
        "decisions",
        "lookup",  # c2: read-only, approved by policy, the decision recorded
        "decisions",
        "record_decision",
        "record_decision",  # the user's edited approval of c1
        "claim",
        "finish",
        "claim",
        "finish",
    ]
    inner = store.inner
    assert inner.answer_for(THREAD, "c1") == Answer.executed("c1", "placed 3").to_json()
    assert inner.decisions(THREAD, "c1")[-1]["editedArguments"] == {"orderId": "A7", "qty": 3}


def test_another_process_restores_the_thread_from_the_async_store() -> None:
    store = AsyncMemoryStore()

    async def scenario() -> Conversation:
        first = await _a_whole_thread(store)
        first.next_input(user="thanks", run_id="r2")
        run(first, {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m2", "delta": "Done."})
        await AsyncDriver(first).end_run()
        again = _conv(AsyncMemoryStore(store.inner))  # another process, the same store
        assert await AsyncDriver(again).restore() is True
        assert await AsyncDriver(again).restore() is True  # once is enough; no second load
        assert again.messages == first.messages
        return again

    again = asyncio.run(scenario())
    assert again.version == 2 and [r.run_id for r in again.runs] == ["r1", "r2"]
    assert again.pending == []
    again.next_input(user="one more")  # nothing dangles


def test_the_async_face_asks_the_store_exactly_what_the_sync_face_asks() -> None:
    """The same thread, disposed by both faces, makes the same store calls with
    the same arguments and ends in the same thread: the faces cannot drift."""
    sync_calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    class Recorded(MemoryStore):
        def __getattribute__(self, name: str) -> Any:
            value = super().__getattribute__(name)
            if name in _STORE_METHODS:

                def recorded(*args: Any, **kwargs: Any) -> Any:
                    sync_calls.append((name, args, kwargs))
                    return value(*args, **kwargs)

                return recorded
            return value

    def comparable(calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> list[Any]:
        # decisions carry their time, and runs their wall clock: compare the rest
        return [(m, _no_time(a), _no_time(k)) for m, a, k in calls]

    sync_conv = _conv(Recorded(), consent=ConsentPolicy.auto_approve())
    _first_run(sync_conv)
    Driver(sync_conv).end_run()
    Driver(sync_conv).execute("c1", lambda a: "placed")
    Driver(sync_conv).fail("c2", "not needed")

    store = AsyncMemoryStore()

    async def scenario() -> Conversation:
        conv = await _ended(store)
        await AsyncDriver(conv).execute("c1", lambda a: "placed")
        await AsyncDriver(conv).fail("c2", "not needed")
        return conv

    async_conv = asyncio.run(scenario())
    assert store.methods[0] == "load"  # the async face's restore; the sync one's constructor
    assert comparable(store.calls[1:]) == comparable(sync_calls[1:])
    assert sync_calls[0][0] == "load"
    assert async_conv.messages == sync_conv.messages
    assert len(sync_calls) > 8  # it compared a whole disposition, not two empty lists


_STORE_METHODS = {
    "claim",
    "finish",
    "settle",
    "lookup",
    "answer_for",
    "record_decision",
    "decisions",
    "load",
    "save_run",
}


def _no_time(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_time(v) for k, v in value.items() if k not in ("decidedAt", "at")}
    if isinstance(value, (list, tuple)):
        return [_no_time(v) for v in value]
    return value


# -- the sync methods refuse an async store; nothing is written -------------------------


@pytest.mark.parametrize(
    "use",
    [
        lambda c: Driver(c).end_run(),
        lambda c: Driver(c).approve("c1"),
        lambda c: Driver(c).decline("c1"),
        lambda c: Driver(c).fail("c1", "no"),
        lambda c: Driver(c).execute("c1", lambda a: "ran"),
        lambda c: Driver(c).restore(),
    ],
    ids=["end_run", "approve", "decline", "fail", "execute", "restore"],
)
def test_a_sync_method_on_an_async_store_is_a_clear_error_and_writes_nothing(
    use: Callable[[Conversation], Any],
) -> None:
    store = AsyncMemoryStore()

    async def opened() -> Conversation:
        conv = _conv(store)
        await AsyncDriver(conv).restore()
        _first_run(conv)
        await AsyncDriver(conv).end_run()
        await AsyncDriver(conv).approve("c1")  # every method below may now act on c1
        return conv

    conv = asyncio.run(opened())
    before = list(store.calls)
    with pytest.raises(UsageError, match=r"async store \(AsyncMemoryStore\).*AsyncDriver"):
        use(conv)
    assert store.calls == before


def test_the_thread_must_be_loaded_before_it_goes_on() -> None:
    conv = _conv(AsyncMemoryStore())
    with pytest.raises(UsageError, match=r"AsyncDriver\(conversation\)\.restore\(\)"):
        conv.next_input(user="hi")
    assert conv.messages == []


# -- a store that waits, fails, or a task cancelled ---------------------------------------


def test_a_store_that_waits_does_not_stall_other_tasks() -> None:
    store = AsyncMemoryStore()

    async def scenario() -> tuple[int, int]:
        conv = await _ended(store, end=False)
        store.gate = asyncio.Event()
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while not store.gate or not store.gate.is_set():
                ticks += 1
                await asyncio.sleep(0.01)

        ticking = asyncio.create_task(ticker())
        ending = asyncio.create_task(AsyncDriver(conv).end_run())
        await asyncio.sleep(0.3)
        assert not ending.done()  # the store holds it …
        waited = ticks
        store.gate.set()  # … and another task's doing releases it
        result = await ending
        await ticking
        assert [c.status for c in result.pending] == [CallStatus.APPROVED] * 2
        return waited, len(store.calls)

    waited, calls = asyncio.run(scenario())
    assert waited >= 10  # the loop ran other tasks while the store waited
    assert calls >= 5


def test_a_failed_save_is_raised_and_no_call_of_the_unsaved_run_is_disposed() -> None:
    store = AsyncMemoryStore()
    store.fail["save_run"] = store_error("save a run")

    async def scenario() -> Conversation:
        conv = await _ended(store, end=False)
        with pytest.raises(StoreError, match="could not save a run"):
            await AsyncDriver(conv).end_run()
        with pytest.raises(ReloadRequired, match="could not save a run"):
            await AsyncDriver(conv).approve("c1")  # it goes no further: reload
        return conv

    conv = asyncio.run(scenario())
    assert conv.pending == []  # no call of a run that is not saved is disposed of
    assert store.inner.load(THREAD) is None  # nothing half-written
    assert store.inner.decisions(THREAD, "c1") == []  # nor approved through the journal


def test_a_stale_writer_on_an_async_store_writes_nothing() -> None:
    store = AsyncMemoryStore()

    async def scenario() -> None:
        a = _conv(store, consent=ConsentPolicy.auto_approve())
        b = _conv(AsyncMemoryStore(store.inner), consent=ConsentPolicy.auto_approve())
        for conv in (a, b):
            await AsyncDriver(conv).restore()
            _first_run(conv)
        await AsyncDriver(a).end_run()
        with pytest.raises(StaleThread, match="t-async"):
            await AsyncDriver(b).end_run()
        assert b.pending == []  # nothing of the stale run is disposed …
        with pytest.raises(StaleThread):
            b.next_input(user="go on")  # … and it cannot go on: reload and retry
        with pytest.raises(StaleThread):
            await AsyncDriver(b).restore()  # not by restoring this object: a new one reloads

    asyncio.run(scenario())
    record = store.inner.load(THREAD)
    assert record is not None and record.version == 1


def test_an_answer_the_store_could_not_record_is_given_and_the_error_says_so() -> None:
    store = AsyncMemoryStore()
    store.fail["finish"] = store_error("record an answer")

    async def scenario() -> Conversation:
        conv = await _ended(store)
        with pytest.raises(
            JournalError, match=r"executed and is answered.*could not record an answer"
        ):
            await AsyncDriver(conv).execute("c2", lambda _a: "found")
        return conv

    conv = asyncio.run(scenario())
    assert conv.call("c2").answer == Answer.executed("c2", "found")  # given: it ran
    claimed = store.inner.lookup(THREAD, "c2")
    assert claimed is not None and claimed.answer is None  # its intent: "outcome unknown" later


def test_a_cancel_while_an_async_store_records_the_claim_answers_not_executed() -> None:
    store = AsyncMemoryStore()

    async def scenario() -> Conversation:
        conv = await _ended(store)
        store.gate = asyncio.Event()
        task = asyncio.create_task(AsyncDriver(conv).execute("c2", lambda _a: pytest.fail("ran")))
        await asyncio.sleep(0.05)  # the claim waits at the store
        task.cancel()
        await asyncio.sleep(0.05)
        store.gate.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        return conv

    conv = asyncio.run(scenario())
    answer = conv.call("c2").answer
    assert answer is not None and "not executed: cancelled" in str(answer.content)
    assert store.inner.answer_for(THREAD, "c2") == answer.to_json()


def test_a_cancel_while_the_handler_runs_is_recorded_as_outcome_unknown() -> None:
    store = AsyncMemoryStore()

    async def scenario() -> Conversation:
        conv = await _ended(store)
        started = asyncio.Event()

        async def slow(_a: dict[str, Any]) -> str:
            started.set()
            await asyncio.sleep(30)
            return "never"

        task = asyncio.create_task(AsyncDriver(conv).execute("c2", slow))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return conv

    conv = asyncio.run(scenario())
    answer = conv.call("c2").answer
    assert answer is not None and "outcome unknown" in str(answer.content)
    assert store.inner.answer_for(THREAD, "c2") == answer.to_json()
