"""The store contract: one suite, run against memory, SQLite and PostgreSQL.

Every test takes ``open_store`` (tests/conftest.py), which opens "the" store
again on each call — a second connection to the same file or database, as a
second process would — so what one opening wrote, another must read.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import orjson
import pytest

from agui_tools._errors import JournalError, StaleThread, StoreError, StoreWriteFailed, UsageError
from agui_tools.app import AsyncDriver, Driver
from agui_tools.app._calls import Answer, CallStatus
from agui_tools.app._consent import ConsentPolicy
from agui_tools.app._conversation import Conversation
from agui_tools.app._journal import Claim, JournalKey
from agui_tools.app._store import MemoryStore, Snapshot, encode_snapshot, snapshot_of
from tests.helpers.conversation import CONFIRM, LOOKUP, call, run

from ..conftest import StoreFactory

THREAD = "t-store"
RUN = {"runId": "r1", "status": "success", "calls": []}


def saved(store: Any, version: int = 0, **kw: Any) -> int:
    args: dict[str, Any] = {
        "expected_version": version,
        "messages": [{"id": "u1", "role": "user", "content": "hi"}],
        "state": {"n": version},
        "resumed": [],
        "run": {**RUN, "runId": f"r{version + 1}"},
    }
    args.update(kw)
    expected = args.pop("expected_version")
    return int(store.save_run(THREAD, expected, encode_snapshot(**args)))


# -- the journal half: exactly-once claims -----------------------------------------


def test_a_claim_runs_once_then_the_answer_is_reused(open_store: StoreFactory) -> None:
    key = JournalKey(THREAD, "c1", "fp")
    first = open_store().claim(key, tool="charge")
    assert first.claim is Claim.RUN
    other = open_store()
    assert other.claim(key, tool="charge").claim is Claim.UNKNOWN  # started, no answer yet
    open_store().finish(key, {"callId": "c1", "outcome": "executed", "content": "ok"})
    again = other.claim(JournalKey(THREAD, "c1", "other-args"), tool="charge")
    assert again.claim is Claim.ANSWERED and again.answer is not None
    assert again.answer["content"] == "ok" and again.fingerprint == "fp"


def test_the_first_answer_wins_and_finish_needs_an_intent(open_store: StoreFactory) -> None:
    store = open_store()
    key = JournalKey(THREAD, "c1", "fp")
    store.claim(key, tool="t")
    store.finish(key, {"callId": "c1", "outcome": "executed", "content": "first"})
    open_store().finish(key, {"callId": "c1", "outcome": "executed", "content": "second"})
    assert open_store().answer_for(THREAD, "c1") == {
        "callId": "c1",
        "outcome": "executed",
        "content": "first",
    }
    with pytest.raises(JournalError, match="no intent is recorded for call 'c2'"):
        store.finish(JournalKey(THREAD, "c2", "fp"), {"content": "x"})


def test_settle_writes_answer_and_decision_together_or_yields_to_the_record(
    open_store: StoreFactory,
) -> None:
    store = open_store()
    decision = {"threadId": THREAD, "toolCallId": "c1", "approved": False, "fingerprint": "fp"}
    declined = {"callId": "c1", "outcome": "declined", "content": "no"}
    assert store.settle(JournalKey(THREAD, "c1", "fp"), declined, decision=decision).claim is (
        Claim.ANSWERED
    )
    assert open_store().decisions(THREAD, "c1") == [decision]
    # a call whose execution started is not declined after the fact, and the decline's
    # decision is not recorded either (one transaction: both or neither)
    store.claim(JournalKey(THREAD, "c2", "fp"), tool="t")
    standing = open_store().settle(
        JournalKey(THREAD, "c2", "fp"),
        {"callId": "c2", "outcome": "declined", "content": "no"},
        decision={**decision, "toolCallId": "c2"},
    )
    assert standing.claim is Claim.UNKNOWN
    assert open_store().decisions(THREAD, "c2") == []


def test_decisions_are_kept_in_order_per_call(open_store: StoreFactory) -> None:
    store = open_store()
    for n in range(3):
        store.record_decision({"threadId": THREAD, "toolCallId": "c1", "n": n})
    store.record_decision({"threadId": THREAD, "toolCallId": "c2", "n": 9})
    assert [d["n"] for d in open_store().decisions(THREAD, "c1")] == [0, 1, 2]
    assert open_store().lookup(THREAD, "nothing") is None


def test_of_many_concurrent_claimers_exactly_one_runs(open_store: StoreFactory) -> None:
    stores = [open_store() for _ in range(4)]
    results: list[Claim] = []
    barrier = threading.Barrier(16)

    def claimer(n: int) -> None:
        barrier.wait()
        for c in range(10):
            results.append(stores[n % 4].claim(JournalKey(THREAD, f"c{c}", "fp"), tool="t").claim)

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == 160
    assert results.count(Claim.RUN) == 10  # one per call, whoever won it


# -- the thread half: snapshots, runs, versions --------------------------------------


def test_a_saved_run_is_loaded_by_another_opening(open_store: StoreFactory) -> None:
    store = open_store()
    assert store.load(THREAD) is None
    assert saved(store) == 1
    assert saved(store, 1, resumed=["c9"], state={"deep": [1, {"x": None}]}) == 2
    record = open_store().load(THREAD)
    assert record is not None
    assert record.version == 2
    assert record.messages == [{"id": "u1", "role": "user", "content": "hi"}]
    assert record.state == {"deep": [1, {"x": None}]}
    assert record.resumed == ["c9"]
    assert [r["runId"] for r in record.runs] == ["r1", "r2"]


def test_a_stale_writer_gets_a_typed_error_and_nothing_is_half_written(
    open_store: StoreFactory,
) -> None:
    a, b = open_store(), open_store()
    saved(a)
    assert saved(a, 1, state={"by": "a"}) == 2
    with pytest.raises(StaleThread) as info:
        saved(b, 1, state={"by": "b"}, run={"runId": "b-run", "status": "success", "calls": []})
    err = info.value
    assert (err.thread_id, err.expected, err.actual) == (THREAD, 1, 2)
    assert f"{THREAD!r}" in str(err) and "version 1" in str(err) and "version 2" in str(err)
    record = open_store().load(THREAD)
    assert record is not None and record.version == 2 and record.state == {"by": "a"}
    assert [r["runId"] for r in record.runs] == ["r1", "r2"]  # no run row of the stale writer
    # a new thread's first save is checked the same way
    with pytest.raises(StaleThread, match="loaded version 0"):
        saved(b, 0)


def test_a_thread_that_is_not_json_is_refused_before_anything_is_written(
    open_store: StoreFactory,
) -> None:
    store = open_store()
    with pytest.raises(StoreError, match="not JSON"):
        saved(store, state={"when": object()})
    assert open_store().load(THREAD) is None


def test_a_save_is_encoded_one_way_whether_its_messages_come_plain_or_encoded() -> None:
    """``encode_snapshot`` (plain messages) is ``snapshot_of`` (the conversation's
    already-encoded ones): the bytes one ``orjson.dumps`` of the list gives."""
    messages = [
        {"id": "u1", "role": "user", "content": "hi \u2603"},
        {"id": "a1", "role": "assistant", "toolCalls": [{"id": "c1", "type": "function"}]},
    ]
    for some in (messages, []):
        plain = encode_snapshot(some, {"n": 1}, ["c2", "c1"], RUN, keep=3)
        blobs = [orjson.dumps(m) for m in some]
        assert plain == snapshot_of(blobs, 3, {"n": 1}, ["c2", "c1"], RUN)
        assert plain.messages == orjson.dumps(some) and plain.resumed == b'["c1","c2"]'
    with pytest.raises(StoreWriteFailed, match=r"cannot be stored: .* not JSON"):
        encode_snapshot([{"id": "u1", "when": object()}], None, [], RUN)


def test_concurrent_writers_of_one_version_exactly_one_wins(open_store: StoreFactory) -> None:
    saved(open_store())
    stores = [open_store() for _ in range(4)]
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def writer(n: int) -> None:
        barrier.wait()
        try:
            saved(stores[n % 4], 1, state={"by": n})
            outcomes.append(f"won {n}")
        except StaleThread:
            outcomes.append("stale")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    won = [o for o in outcomes if o.startswith("won")]
    assert len(won) == 1 and outcomes.count("stale") == 7
    record = open_store().load(THREAD)
    assert record is not None and record.version == 2 and len(record.runs) == 2
    assert record.state == {"by": int(won[0].split()[1])}


# -- a Conversation on a store: restore where another process left the thread ------------


def first_process(store: Any, consent: ConsentPolicy | None = None) -> Conversation:
    conv = Conversation(thread_id=THREAD, tools=[CONFIRM, LOOKUP], store=store, consent=consent)
    conv.next_input(user="order two widgets and look one up", run_id="r1")
    run(
        conv,
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "Doing both."},
        *call("c1", "confirm_order", '{"orderId":"A7","qty":2}', parent="m1"),
        *call("c2", "lookup", '{"q":"widget"}', parent="m1"),
        {"type": "STATE_SNAPSHOT", "snapshot": {"cart": ["A7"]}},
    )
    Driver(conv).end_run()
    return conv


def restored(store: Any, **kw: Any) -> Conversation:
    return Conversation(thread_id=THREAD, tools=[CONFIRM, LOOKUP], store=store, **kw)


def test_a_thread_is_picked_up_where_another_process_left_it(open_store: StoreFactory) -> None:
    first = first_process(open_store())
    Driver(first).approve("c1")  # the user approved; then the process died before executing
    again = restored(open_store())
    assert again.version == 1
    assert again.messages == first.messages
    assert again.state == {"cart": ["A7"]}
    assert [r.run_id for r in again.runs] == ["r1"]
    assert [(c.call_id, c.status) for c in again.pending] == [
        ("c1", CallStatus.APPROVED),  # the recorded approval stands
        ("c2", CallStatus.APPROVED),  # read-only: the policy approves again
    ]
    ran: list[str] = []
    Driver(again).execute("c1", lambda a: ran.append("c1") or "placed")
    Driver(again).execute("c2", lambda a: ran.append("c2") or "found")
    assert ran == ["c1", "c2"]
    sent = again.next_input()
    assert [m["content"] for m in sent["messages"] if m["role"] == "tool"] == ["placed", "found"]
    assert [t["name"] for t in sent["tools"]] == ["confirm_order", "lookup"]  # our registration


def test_a_restored_thread_never_reruns_a_call_another_process_claimed(
    open_store: StoreFactory,
) -> None:
    first = first_process(open_store(), consent=ConsentPolicy.auto_approve())
    Driver(first).execute("c2", lambda _a: "found")  # answered: the restore reuses the answer
    key = JournalKey(THREAD, "c1", first.call("c1").fingerprint)
    assert open_store().claim(key, tool="confirm_order").claim is Claim.RUN  # and it died
    again = restored(open_store(), consent=ConsentPolicy.auto_approve())
    c1, c2 = again.call("c1"), again.call("c2")
    assert c2.answer == Answer.executed("c2", "found")
    assert c1.answer is not None and "outcome unknown" in str(c1.answer.content)
    with pytest.raises(UsageError):
        Driver(again).execute("c1", lambda _a: pytest.fail("ran a call another process claimed"))
    again.next_input()  # nothing dangles


def test_a_stale_conversation_raises_and_writes_nothing(open_store: StoreFactory) -> None:
    first_process(open_store(), consent=ConsentPolicy.auto_approve())
    a = restored(open_store(), consent=ConsentPolicy.auto_approve())
    b = restored(open_store(), consent=ConsentPolicy.auto_approve())
    for conv, text in ((a, "from a"), (b, "from b")):
        for cid in ("c1", "c2"):
            Driver(conv).execute(cid, lambda _a: "ok")
        conv.next_input(user=text, run_id=f"run-{text[-1]}")
        run(conv, {"type": "TEXT_MESSAGE_CHUNK", "messageId": f"m-{text}", "delta": "fine"})
    Driver(a).end_run()
    with pytest.raises(StaleThread) as info:
        Driver(b).end_run()
    assert (info.value.expected, info.value.actual) == (1, 2)
    with pytest.raises(StaleThread):  # the stale copy is not used again by mistake
        b.next_input(user="again")
    record = open_store().load(THREAD)
    assert record is not None and [r["runId"] for r in record.runs] == ["r1", "run-a"]
    assert "from b" not in str(record.messages)
    # what the application does: reload, and retry
    retry = restored(open_store())
    retry.next_input(user="from b", run_id="run-b2")
    run(retry, {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m-b2", "delta": "fine"})
    Driver(retry).end_run()
    assert retry.version == 3


def test_an_interrupted_run_is_restored_with_its_interrupts(open_store: StoreFactory) -> None:
    conv = Conversation(thread_id=THREAD, tools=[CONFIRM], store=open_store())
    conv.next_input(user="order")
    interrupt = {"id": "i1", "reason": "tool_call", "toolCallId": "c1"}
    run(
        conv,
        *call("c1", "confirm_order", '{"orderId":"A7","qty":2}', parent="m1"),
        finish={"outcome": {"type": "interrupt", "interrupts": [interrupt]}},
    )
    Driver(conv).end_run()
    again = Conversation(thread_id=THREAD, tools=[CONFIRM], store=open_store())
    assert again.pending == []  # the interrupt's resume entry answers c1, not a tool message
    assert again.runs[-1].status == "interrupt" and again.runs[-1].interrupts == [interrupt]
    with pytest.raises(UsageError, match="INT-7"):
        again.next_input()
    again.next_input(resume=[{"interruptId": "i1", "status": "cancelled"}])
    run(again, {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m2", "delta": "Cancelled."})
    Driver(again).end_run()
    third = Conversation(thread_id=THREAD, tools=[CONFIRM], store=open_store())
    assert third.pending == [] and third.version == 2
    third.next_input(user="thanks")  # c1 stays covered by its resume entry


def test_a_call_whose_arguments_never_closed_is_not_run_after_a_restore(
    open_store: StoreFactory,
) -> None:
    store = open_store()
    conv = Conversation(thread_id=THREAD, tools=[LOOKUP], store=store)
    conv.next_input(user="look")
    start = {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "lookup"}
    conv.receive_many(
        [
            {"type": "RUN_STARTED", "threadId": THREAD, "runId": conv.pending_input["runId"]},
            {**start, "parentMessageId": "m1"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"q": "wid'},
        ]
    )
    Driver(conv).end_run()  # the stream broke mid-arguments
    again = Conversation(thread_id=THREAD, tools=[LOOKUP], store=open_store())
    answer = again.call("c1").answer
    assert answer is not None and "never closed" in str(answer.content)


class _DiesAfterSaving(MemoryStore):
    """A process that saved the run and stopped before answering anything."""

    dead = True

    def settle(self, *args: Any, **kwargs: Any) -> Any:
        if self.dead:
            raise StoreError("the process stopped here")
        return super().settle(*args, **kwargs)


def test_a_restore_knows_which_calls_never_closed_from_the_saved_run() -> None:
    store = _DiesAfterSaving()
    conv = Conversation(thread_id=THREAD, tools=[LOOKUP], store=store)
    conv.next_input(user="look")
    conv.receive_many(
        [
            {"type": "RUN_STARTED", "threadId": THREAD, "runId": conv.pending_input["runId"]},
            {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "lookup"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"q": "wid'},
        ]
    )
    with pytest.raises(StoreError, match="stopped here"):
        Driver(conv).end_run()
    assert store.lookup(THREAD, "c1") is None  # saved, but nothing answered it durably
    store.dead = False
    again = Conversation(thread_id=THREAD, tools=[LOOKUP], store=store)
    answer = again.call("c1").answer
    assert answer is not None and "never closed" in str(answer.content)


# -- async all the way: a store that waits does not stall the event loop -------------------


def test_execute_async_waits_for_a_locked_store_without_blocking_the_loop(
    open_durable_store: StoreFactory,
) -> None:
    """Another holder of the store's lock is released by *another task*: if waiting
    for the lock blocked the event loop, that task could never run, and the claim
    would time out instead of executing."""
    open_store = open_durable_store  # the memory store never waits (blocking = False)
    conv = first_process(open_store(), consent=ConsentPolicy.auto_approve())
    lock = _hold_write_lock(open_store, conv.call("c2").fingerprint)

    async def scenario() -> Answer:
        released = asyncio.Event()

        async def release_soon() -> None:
            await asyncio.sleep(0.3)
            lock.release()
            released.set()

        releaser = asyncio.create_task(release_soon())
        answer = await AsyncDriver(conv).execute("c2", lambda _a: "found")
        await releaser
        assert released.is_set()
        return answer

    assert asyncio.run(scenario()) == Answer.executed("c2", "found")


class _Held:
    def __init__(self, release: Any) -> None:
        self.release = release


def _hold_write_lock(open_store: StoreFactory, fingerprint: str) -> _Held:
    """Hold what a claim of call c2 must wait for, as another process would."""
    if open_store.backend == "sqlite":
        import sqlite3

        blocker = sqlite3.connect(open_store.path, isolation_level=None, timeout=5)
        blocker.execute("BEGIN IMMEDIATE")

        def release() -> None:
            blocker.execute("ROLLBACK")
            blocker.close()

        return _Held(release)
    import psycopg

    # "postgres-async" is the same database: its row lock holds the async store's claims
    assert open_store.backend in ("postgres", "postgres-async") and open_store.dsn is not None
    blocker_pg = psycopg.connect(open_store.dsn)  # a transaction left open: the row is locked
    blocker_pg.execute(
        "INSERT INTO agui_calls (thread_id, call_id, fingerprint, tool, started_at) "
        "VALUES (%s, 'c2', %s, 'lookup', 0)",
        (THREAD, fingerprint),
    )

    def release_pg() -> None:
        blocker_pg.rollback()
        blocker_pg.close()

    return _Held(release_pg)


def test_a_cancel_while_the_claim_is_recorded_answers_not_executed(
    open_durable_store: StoreFactory,
) -> None:
    open_store = open_durable_store  # the memory store claims inline: no moment to cancel in
    conv = first_process(open_store(), consent=ConsentPolicy.auto_approve())
    lock = _hold_write_lock(open_store, conv.call("c2").fingerprint)

    async def scenario() -> None:
        task = asyncio.create_task(AsyncDriver(conv).execute("c2", lambda _a: pytest.fail("ran")))
        await asyncio.sleep(0.1)  # the claim waits for the lock in its thread
        task.cancel()
        await asyncio.sleep(0.05)
        lock.release()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    answer = conv.call("c2").answer
    assert answer is not None and "not executed: cancelled" in str(answer.content)
    assert open_store().answer_for(THREAD, "c2") == answer.to_json()  # durable, as the truth
    conv.call("c1")  # and the thread goes on once c1 is answered
    Driver(conv).decline("c1")
    conv.next_input()


# -- what a save writes: the messages a run changed, not the whole history again ------------


class _Recording:
    """The store, with what each ``save_run`` was asked to write noted down."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.saves: list[tuple[int, int]] = []  # (keep, messages written)

    def save_run(self, thread_id: str, expected_version: int, snapshot: Snapshot) -> int:
        self.saves.append((snapshot.keep, len(orjson.loads(snapshot.messages))))
        return int(self._store.save_run(thread_id, expected_version, snapshot))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _chat(conv: Conversation, turns: range) -> None:
    for n in turns:
        conv.next_input(
            messages=[{"id": f"u{n}", "role": "user", "content": f"question {n}"}],
            run_id=f"r{n}",
        )
        run(conv, {"type": "TEXT_MESSAGE_CHUNK", "messageId": f"a{n}", "delta": f"answer {n}"})
        Driver(conv).end_run()


def test_a_long_thread_writes_what_each_run_changed_not_its_whole_history(
    open_store: StoreFactory,
) -> None:
    store = _Recording(open_store())
    conv = Conversation(thread_id=THREAD, store=store)
    _chat(conv, range(40))
    assert store.saves == [(2 * n, 2) for n in range(40)]  # two new messages a run
    reopened = _Recording(open_store())
    again = Conversation(thread_id=THREAD, store=reopened)  # rebuilt from the runs
    assert again.messages == conv.messages and len(again.messages) == 80
    _chat(again, range(40, 42))  # a restored thread goes on writing only what changed
    assert reopened.saves == [(80, 2), (82, 2)]
    assert Conversation(thread_id=THREAD, store=open_store()).messages == again.messages


def test_a_run_that_restates_the_history_rewrites_from_its_first_change(
    open_store: StoreFactory,
) -> None:
    store = _Recording(open_store())
    conv = Conversation(thread_id=THREAD, store=store)
    _chat(conv, range(3))
    restated = [dict(m) for m in conv.messages]
    restated[2]["content"] = "question 1, as the agent restates it"
    conv.next_input(messages=[{"id": "u3", "role": "user", "content": "question 3"}], run_id="r3")
    sent = conv.pending_input["messages"]
    run(conv, {"type": "MESSAGES_SNAPSHOT", "messages": [*restated[:6], sent[-1]]})
    Driver(conv).end_run()
    assert store.saves[-1] == (2, 5)  # kept the two before the change, wrote the rest
    again = Conversation(thread_id=THREAD, store=open_store())
    assert again.messages == conv.messages
    assert again.messages[2]["content"] == "question 1, as the agent restates it"


# -- another replica executing the call right now: wait for its answer (in_flight_wait) ------


def _executing_elsewhere(open_store: StoreFactory) -> tuple[threading.Event, threading.Thread]:
    """Replica A restores the thread and executes c2; its handler holds until released."""
    first_process(open_store(), consent=ConsentPolicy.auto_approve())
    release = threading.Event()
    a = restored(open_store(), consent=ConsentPolicy.auto_approve())

    def run_a() -> None:
        Driver(a).execute("c2", lambda _a: "found by A" if release.wait(30) else "timed out")

    worker = threading.Thread(target=run_a)
    worker.start()
    watcher = open_store()
    for _ in range(500):  # A's intent is recorded: c2 is executing in "another process"
        if watcher.lookup(THREAD, "c2") is not None:
            break
        time.sleep(0.01)
    return release, worker


def test_a_call_another_replica_is_executing_is_answered_by_it_when_waited_for(
    open_store: StoreFactory,
) -> None:
    release, worker = _executing_elsewhere(open_store)
    threading.Timer(0.4, release.set).start()  # A finishes while B waits
    t0 = time.monotonic()
    b = restored(open_store(), consent=ConsentPolicy.auto_approve(), in_flight_wait=20)
    waited = time.monotonic() - t0
    worker.join(30)
    assert b.call("c2").answer == Answer.executed("c2", "found by A")  # not "outcome unknown"
    assert 0.3 < waited < 15
    Driver(b).execute("c1", lambda _a: "placed")
    tools = [m["content"] for m in b.next_input()["messages"] if m["role"] == "tool"]
    assert sorted(tools) == ["found by A", "placed"]


def test_a_call_still_executing_after_the_wait_reads_outcome_unknown(
    open_store: StoreFactory,
) -> None:
    release, worker = _executing_elsewhere(open_store)
    try:
        b = restored(open_store(), consent=ConsentPolicy.auto_approve(), in_flight_wait=0.5)
        answer = b.call("c2").answer
        assert answer is not None and "outcome unknown" in str(answer.content)
        with pytest.raises(UsageError):
            Driver(b).execute("c2", lambda _a: pytest.fail("ran a call another replica is running"))
    finally:
        release.set()
        worker.join(30)
    assert open_store().answer_for(THREAD, "c2") == Answer.executed("c2", "found by A").to_json()


@pytest.mark.parametrize("bad", [-1, float("nan"), "5"])
def test_in_flight_wait_is_checked(bad: Any) -> None:
    with pytest.raises(UsageError, match="in_flight_wait must be 0 or more seconds"):
        Conversation(in_flight_wait=bad)
