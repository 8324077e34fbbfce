"""No answer lost, none duplicated, no side effect run twice — across restarts,
retries, cancellations, failing hooks and two processes sharing one journal.

Each test here pins a way the guarantee was once broken. A "restart" is a new
:class:`Conversation` on the same journal file, fed the same stream again, which
is what an application does after it stops; a "crash mid-handler" is the state
it leaves behind — an intent with no answer — made directly with
``journal.claim`` (tests/app/test_journal.py does it with a real SIGKILL).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agui_tools import (
    AgentClient,
    InputRejected,
    Run,
    Session,
    TransportError,
    UsageError,
    agent_app,
)
from agui_tools._errors import JournalError, ReloadRequired, StoreWriteFailed
from agui_tools.app import AsyncDriver, Driver
from agui_tools.app._calls import Answer, CallStatus
from agui_tools.app._consent import ConsentPolicy, PolicyVerdict
from agui_tools.app._conversation import Conversation
from agui_tools.app._journal import Claim, Journal, JournalKey, MemoryJournal, SQLiteJournal
from agui_tools.testing import free_port, serving
from tests.helpers.conversation import CONFIRM, LOOKUP, call, run

THREAD = "t1"


@pytest.fixture(params=["sqlite", "memory"])
def journal_factory(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[], Journal]]:
    """Opens "the" journal again on each call: a new connection to one file, or the same memory."""
    opened: list[SQLiteJournal] = []
    memory = MemoryJournal()

    def open_journal() -> Journal:
        if request.param == "memory":
            return memory
        j = SQLiteJournal(tmp_path / "app.sqlite")
        opened.append(j)
        return j

    yield open_journal
    for j in opened:
        j.close()


def received(
    journal: Journal,
    *calls: tuple[str, str, str],
    consent: ConsentPolicy | None = None,
    **kw: Any,
) -> Conversation:
    """A conversation (a fresh process's) that received one run making ``calls``."""
    conv = Conversation(
        thread_id=THREAD, tools=[CONFIRM, LOOKUP], store=journal, consent=consent, **kw
    )
    conv.next_input(user="go", run_id="r1")
    events = [ev for cid, name, args in calls for ev in call(cid, name, args, parent="m1")]
    run(conv, *events)
    Driver(conv).end_run()
    return conv


ORDER = ("c1", "confirm_order", '{"orderId":"A7","qty":2}')
READ = ("c1", "lookup", '{"q":"widget"}')


# -- every answer is durable, not only an execution's --------------------------------


@pytest.mark.parametrize(
    ("calls", "dispose", "outcome"),
    [
        ([READ], lambda c: Driver(c).fail("c1", "no handler here"), "failed"),
        ([ORDER], lambda c: Driver(c).decline("c1", reason="not now"), "declined"),
        ([("c1", "unadvertised", "{}")], lambda c: None, "failed"),
        ([("c1", "confirm_order", '{"orderId":"A7","qty":0}')], lambda c: None, "failed"),
    ],
    ids=["fail", "user-decline", "unadvertised", "schema-invalid"],
)
def test_an_answer_that_ran_nothing_survives_a_restart_and_nothing_runs(
    journal_factory: Callable[[], Journal],
    calls: list[tuple[str, str, str]],
    dispose: Callable[[Conversation], object],
    outcome: str,
) -> None:
    first = received(journal_factory(), *calls)
    dispose(first)
    given = first.call("c1").answer
    assert given is not None and given.outcome == outcome
    assert journal_factory().answer_for(THREAD, "c1") == given.to_json()  # durable, as given

    again = received(journal_factory(), *calls)
    assert again.call("c1").answer == given  # the same answer, from the journal
    assert again.call("c1").status.answered
    with pytest.raises(UsageError):
        Driver(again).execute("c1", lambda _a: pytest.fail("a settled call ran"))


def test_a_policy_denial_is_durable_with_its_decision(
    journal_factory: Callable[[], Journal],
) -> None:
    deny = ConsentPolicy(overrides={"confirm_order": PolicyVerdict.DENY})
    first = received(journal_factory(), ORDER, consent=deny)
    assert first.call("c1").status is CallStatus.DECLINED
    journal = journal_factory()
    assert journal.answer_for(THREAD, "c1") == first.call("c1").answer.to_json()  # type: ignore[union-attr]
    [decision] = journal.decisions(THREAD, "c1")
    assert decision["approved"] is False and decision["decidedBy"] == "policy"
    # a restart with a policy that would now approve does not overturn the recorded answer
    again = received(journal_factory(), ORDER, consent=ConsentPolicy.auto_approve())
    assert again.call("c1").status is CallStatus.DECLINED


# -- consent on edited arguments survives a restart ----------------------------------


def test_a_decline_after_an_edited_approval_stands_after_a_restart(
    journal_factory: Callable[[], Journal],
) -> None:
    first = received(journal_factory(), ORDER)
    Driver(first).approve("c1", arguments={"orderId": "A7", "qty": 1})
    Driver(first).decline("c1", reason="changed my mind")

    again = received(journal_factory(), ORDER)
    assert again.call("c1").status is CallStatus.DECLINED
    assert again.pending == []


def test_a_reapproval_of_edited_arguments_runs_the_edit_after_a_restart(
    journal_factory: Callable[[], Journal],
) -> None:
    first = received(journal_factory(), ORDER)
    Driver(first).approve("c1", arguments={"orderId": "A7", "qty": 1})
    Driver(first).approve("c1")  # confirmed again, e.g. on a second screen

    again = received(journal_factory(), ORDER)
    assert again.call("c1").status is CallStatus.APPROVED
    assert again.call("c1").effective_arguments == {"orderId": "A7", "qty": 1}
    ran: list[dict[str, Any]] = []
    Driver(again).execute("c1", lambda a: ran.append(a) or "ok")
    assert ran == [{"orderId": "A7", "qty": 1}]


def test_a_recorded_approval_stands_after_a_restart_and_is_not_recorded_twice(
    journal_factory: Callable[[], Journal],
) -> None:
    first = received(journal_factory(), ORDER)
    Driver(first).approve("c1", reason="looks right")
    [recorded] = journal_factory().decisions(THREAD, "c1")

    again = received(journal_factory(), ORDER)  # the disposition gate reads it back
    assert again.call("c1").status is CallStatus.APPROVED
    assert again.call("c1").decision is not None
    assert again.call("c1").decision.to_json() == recorded  # the user's, not the policy's
    assert journal_factory().decisions(THREAD, "c1") == [recorded]  # read, not written again


# -- an execution that started is never run again, nor declined after the fact -------


def test_after_a_crash_mid_handler_the_call_is_answered_unknown_at_once(
    journal_factory: Callable[[], Journal],
) -> None:
    first = received(journal_factory(), ORDER)
    Driver(first).approve("c1")
    key = JournalKey(THREAD, "c1", first.call("c1").fingerprint)
    assert journal_factory().claim(key, tool="confirm_order").claim is Claim.RUN  # …and it died

    again = received(journal_factory(), ORDER)
    answer = again.call("c1").answer
    assert answer is not None and answer.outcome == "failed" and "outcome unknown" in answer.content
    # neither a decline (it may have happened) nor edited arguments (a second run) get through
    with pytest.raises(UsageError):
        Driver(again).decline("c1")
    with pytest.raises(UsageError):
        Driver(again).approve("c1", arguments={"orderId": "A7", "qty": 1})
    # the unknown answer is not written over the intent: the journal still says "started"
    state = journal_factory().lookup(THREAD, "c1")
    assert state is not None and state.claim is Claim.UNKNOWN


def test_edited_arguments_cannot_start_a_call_whose_execution_started_elsewhere(
    journal_factory: Callable[[], Journal],
) -> None:
    a = received(journal_factory(), ORDER)
    b = received(journal_factory(), ORDER)  # a second process, disposed before A claimed
    Driver(a).approve("c1")
    a_key = JournalKey(THREAD, "c1", a.call("c1").fingerprint)
    assert journal_factory().claim(a_key, tool="confirm_order").claim is Claim.RUN  # A executing
    Driver(b).approve("c1", arguments={"orderId": "A7", "qty": 1})
    answer = Driver(b).execute(
        "c1", lambda _a: pytest.fail("ran a second time, with other arguments")
    )
    assert answer.outcome == "failed" and "outcome unknown" in answer.content
    # and a decline in a third process does not claim the call was not executed
    c = received(journal_factory(), ORDER)
    assert c.call("c1").answer is not None
    assert "outcome unknown" in c.call("c1").answer.content  # type: ignore[union-attr]


def test_the_application_can_establish_an_unknown_outcome(
    journal_factory: Callable[[], Journal],
) -> None:
    first = received(journal_factory(), ORDER)
    Driver(first).approve("c1")
    key = JournalKey(THREAD, "c1", first.call("c1").fingerprint)
    journal_factory().claim(key, tool="confirm_order")
    seen: list[tuple[str, object]] = []

    def reconcile(pending: Any, started: object) -> Answer | None:
        seen.append((pending.call_id, started))
        return Answer.executed("ignored", "order A7 was placed (found in the order system)")

    again = received(journal_factory(), ORDER, outcome_unknown=reconcile)
    assert [cid for cid, _ in seen] == ["c1"]
    assert again.call("c1").answer == Answer.executed(
        "c1", "order A7 was placed (found in the order system)"
    )
    # recorded as the execution's answer: the next restart does not ask again
    third = received(journal_factory(), ORDER, outcome_unknown=lambda *_: pytest.fail("asked"))
    assert third.call("c1").answer == again.call("c1").answer


def test_two_processes_the_executors_result_is_what_the_journal_keeps(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    in_handler, release = threading.Event(), threading.Event()
    results: dict[str, Answer] = {}

    def process_a() -> None:
        with SQLiteJournal(path) as journal:
            conv = received(journal, ORDER)
            Driver(conv).approve("c1")

            def charge(_a: dict[str, Any]) -> str:
                in_handler.set()
                release.wait(10)
                return "placed, receipt R-1"

            results["a"] = Driver(conv).execute("c1", charge)

    a = threading.Thread(target=process_a)
    a.start()
    assert in_handler.wait(10)
    with SQLiteJournal(path) as journal:  # process B receives the same run meanwhile
        b = received(journal, ORDER)
        b_answer = b.call("c1").answer
    release.set()
    a.join(10)
    assert b_answer is not None and "outcome unknown" in b_answer.content
    assert results["a"] == Answer.executed("c1", "placed, receipt R-1")
    with SQLiteJournal(path) as journal:
        assert journal.answer_for(THREAD, "c1") == results["a"].to_json()


# -- one answer per call, even when the application misbehaves -----------------------


def test_fail_is_refused_while_the_call_is_executing(
    journal_factory: Callable[[], Journal],
) -> None:
    conv = received(journal_factory(), READ)

    async def scenario() -> Answer:
        gate, started = asyncio.Event(), asyncio.Event()

        async def slow(_a: dict[str, Any]) -> str:
            started.set()
            await gate.wait()
            return "the real result"

        task = asyncio.create_task(AsyncDriver(conv).execute("c1", slow))
        await started.wait()  # the claim may be recorded in a worker thread first
        assert conv.call("c1").status is CallStatus.EXECUTING
        with pytest.raises(UsageError, match="executing"):
            Driver(conv).fail("c1", "timed out")
        gate.set()
        return await task

    answer = asyncio.run(scenario())
    assert answer == Answer.executed("c1", "the real result")
    results = [m for m in conv.messages if m["role"] == "tool"]
    assert [m["content"] for m in results] == ["the real result"]


def test_a_cancelled_execution_is_answered_unknown_and_the_thread_continues(
    journal_factory: Callable[[], Journal],
) -> None:
    conv = received(journal_factory(), READ)
    effects: list[str] = []

    async def scenario() -> None:
        started = asyncio.Event()

        async def charge(_a: dict[str, Any]) -> str:
            effects.append("charged")
            started.set()
            await asyncio.sleep(30)
            return "never"

        task = asyncio.create_task(AsyncDriver(conv).execute("c1", charge))
        await started.wait()  # cancelled mid-handler
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    answer = conv.call("c1").answer
    assert effects == ["charged"]
    assert answer is not None and answer.outcome == "failed"
    assert "outcome unknown" in answer.content and "CancelledError" in answer.content
    assert journal_factory().answer_for(THREAD, "c1") == answer.to_json()
    conv.next_input()  # nothing is left dangling


def test_an_async_handler_given_to_execute_is_refused_before_anything_is_recorded(
    journal_factory: Callable[[], Journal],
) -> None:
    conv = received(journal_factory(), READ)

    async def handler(_a: dict[str, Any]) -> str:
        return "async result"

    with pytest.raises(UsageError, match=r"AsyncDriver\(\.\.\.\)\.execute\(\)"):
        Driver(conv).execute("c1", handler)
    assert conv.call("c1").status is CallStatus.APPROVED
    assert journal_factory().lookup(THREAD, "c1") is None
    assert asyncio.run(AsyncDriver(conv).execute("c1", handler)) == Answer.executed(
        "c1", "async result"
    )


def test_a_handler_raising_usage_error_is_a_failed_answer_like_any_exception(
    journal_factory: Callable[[], Journal],
) -> None:
    conv = received(journal_factory(), READ)

    def handler(_a: dict[str, Any]) -> str:
        raise UsageError("the handler's own misuse")

    answer = Driver(conv).execute("c1", handler)
    assert answer.outcome == "failed" and "the handler's own misuse" in answer.content
    assert journal_factory().answer_for(THREAD, "c1") == answer.to_json()


def test_content_parts_that_are_not_json_fail_the_call_not_the_application(
    journal_factory: Callable[[], Journal],
) -> None:
    conv = received(journal_factory(), READ)
    answer = Driver(conv).execute("c1", lambda _a: [{"type": "text", "text": "x", "tags": {"a"}}])
    assert answer.outcome == "failed" and "not JSON" in answer.content
    assert journal_factory().answer_for(THREAD, "c1") == answer.to_json()


def test_an_answer_the_journal_cannot_record_is_kept_in_memory_and_the_error_says_so(
    tmp_path: Path,
) -> None:
    with SQLiteJournal(tmp_path / "app.sqlite", timeout=0.05) as journal:
        conv = received(journal, READ)
        blocker = sqlite3.connect(tmp_path / "app.sqlite", isolation_level=None)

        def charge(_a: dict[str, Any]) -> str:
            blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
            return "charged"

        with pytest.raises(JournalError, match="was executed and is answered"):
            Driver(conv).execute("c1", charge)
        blocker.execute("ROLLBACK")
        blocker.close()
        assert conv.call("c1").answer == Answer.executed("c1", "charged")
        assert [m["content"] for m in conv.messages if m["role"] == "tool"] == ["charged"]
    # restarted, the call reads as outcome unknown — never as "not run"
    with SQLiteJournal(tmp_path / "app.sqlite") as journal:
        again = received(journal, READ)
        answer = again.call("c1").answer
        assert answer is not None and "outcome unknown" in answer.content


def test_a_failing_hook_answers_its_call_and_the_run_is_still_recorded() -> None:
    seen: list[str] = []

    def decide(tool: Any, args: Any) -> None:
        seen.append(args["q"])
        if args["q"] == "two":
            raise RuntimeError("policy service unavailable")

    calls = [
        (f"c{i}", "lookup", f'{{"q":"{q}"}}') for i, q in ((1, "one"), (2, "two"), (3, "three"))
    ]
    conv = received(MemoryJournal(), *calls, consent=ConsentPolicy(decide=decide))
    assert seen == ["one", "two", "three"]
    assert len(conv.runs) == 1
    assert [c.status for c in conv.runs[0].pending] == [
        CallStatus.APPROVED,
        CallStatus.FAILED,
        CallStatus.APPROVED,
    ]
    assert "policy service unavailable" in conv.call("c2").answer.content  # type: ignore[union-attr]


def test_a_journal_failure_while_disposing_stops_the_conversation_and_guesses_no_answer(
    tmp_path: Path,
) -> None:
    with SQLiteJournal(tmp_path / "app.sqlite", timeout=0.05) as journal:
        conv = Conversation(thread_id=THREAD, tools=[LOOKUP], store=journal)
        conv.next_input(user="go")
        run(conv, *call("c1", "lookup", "not json", parent="m1"))
        blocker = sqlite3.connect(tmp_path / "app.sqlite", isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreWriteFailed) as failed:
            Driver(conv).end_run()
        blocker.execute("ROLLBACK")
        blocker.close()
        assert failed.value.written == "no"
        # the answer the journal refused is not given from memory, nor sent: the
        # conversation stops, saying reload — the journal holds nothing of the call
        assert conv.call("c1").answer is None and journal.lookup(THREAD, "c1") is None
        assert not conv.in_step
        with pytest.raises(ReloadRequired) as refused:
            conv.next_input()
        assert refused.value.cause is failed.value


# -- calls answered some other way stay answered --------------------------------------


def test_a_call_cancelled_through_its_interrupt_is_never_executed_later() -> None:
    conv = Conversation(thread_id=THREAD, tools=[CONFIRM], store=MemoryJournal())
    conv.next_input(user="order")
    interrupt = {"id": "i1", "reason": "tool_call", "toolCallId": "c1"}
    run(
        conv,
        *call("c1", "confirm_order", '{"orderId":"A7","qty":2}', parent="m1"),
        finish={"outcome": {"type": "interrupt", "interrupts": [interrupt]}},
    )
    assert Driver(conv).end_run().pending == []
    conv.next_input(resume=[{"interruptId": "i1", "status": "cancelled"}])
    run(conv, {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m2", "delta": "Cancelled."})
    assert Driver(conv).end_run().pending == []
    with pytest.raises(UsageError):
        conv.call("c1")
    conv.next_input()  # and it does not count as dangling


def test_an_answer_a_snapshot_dropped_is_restored() -> None:
    conv = Conversation(thread_id=THREAD, tools=[LOOKUP], store=MemoryJournal())
    conv.next_input(user="look")
    run(conv, *call("c1", "lookup", '{"q":"x"}', parent="m1"))
    Driver(conv).end_run()
    Driver(conv).execute("c1", lambda _a: "found")
    conv.next_input()
    snapshot = [m for m in conv.messages if m["role"] != "tool"]  # the agent forgot our answer
    run(conv, {"type": "MESSAGES_SNAPSHOT", "messages": snapshot})
    assert Driver(conv).end_run().pending == []
    assert [m["content"] for m in conv.messages if m["role"] == "tool"] == ["found"]
    conv.next_input()


def test_a_run_that_never_started_takes_back_its_user_message() -> None:
    conv = Conversation(thread_id=THREAD, store=MemoryJournal())
    conv.next_input(user="Order two widgets")
    assert Driver(conv).abandon_run() is None  # the POST failed: nothing of the stream arrived
    sent = conv.next_input(user="Order two widgets")  # the retry
    assert [m["content"] for m in sent["messages"]] == ["Order two widgets"]


def test_a_session_retry_after_a_connection_failure_sends_the_message_once() -> None:
    seen: list[list[str]] = []

    async def agent(r: Run) -> None:
        seen.append([m["content"] for m in r.messages if m["role"] == "user"])
        await r.text("ok")

    async def scenario() -> None:
        session = Session(AgentClient(f"http://127.0.0.1:{free_port()}/agent"))  # nobody listens
        with pytest.raises(TransportError):
            await session.send("Order two widgets")
        async with serving(agent_app(agent, path="/agent")) as base:
            session.client = AgentClient(f"{base}/agent")
            assert (await session.send("Order two widgets")).status == "success"

    asyncio.run(scenario())
    assert seen == [["Order two widgets"]]


# -- the session's own deadline, and nobody else's -------------------------------------


async def _calls_lookup(r: Run) -> None:
    """An agent that calls the frontend tool ``lookup`` once, then acknowledges its answer."""
    if r.messages[-1]["role"] == "tool":
        await r.text("noted")
        return
    async with r.tool_call("lookup", parent_message_id="m1") as c:
        await c.args('{"q": "x"}')


@pytest.mark.parametrize("timeout", [60.0, None])
def test_a_handlers_own_timeout_error_is_its_failure_not_the_sessions_deadline(
    timeout: float | None,
) -> None:
    async def scenario() -> str:
        async with serving(agent_app(_calls_lookup, path="/agent")) as base:
            session = Session(AgentClient(f"{base}/agent"), timeout=timeout)

            @session.tool
            def lookup(q: str) -> str:
                """Look something up."""
                raise TimeoutError("upstream socket timed out after 2 s")

            await session.send("go")
            answer = session.conversation.call(  # type: ignore[union-attr]
                session.conversation.runs[0].pending[0].call_id  # type: ignore[union-attr]
            ).answer
            assert answer is not None
            return answer.content if isinstance(answer.content, str) else ""

    content = asyncio.run(scenario())
    assert "upstream socket timed out" in content
    assert "did not finish within" not in content


def test_the_sessions_deadline_is_reported_as_such() -> None:
    async def scenario() -> str:
        async with serving(agent_app(_calls_lookup, path="/agent")) as base:
            session = Session(AgentClient(f"{base}/agent"), timeout=0.05)

            @session.tool
            async def lookup(q: str) -> str:
                """Look something up."""
                await asyncio.sleep(5)
                return "late"

            await session.send("go")
            conv = session.conversation
            assert conv is not None
            answer = conv.call(conv.runs[0].pending[0].call_id).answer
            assert answer is not None and isinstance(answer.content, str)
            return answer.content

    assert "did not finish within 0.05 s; its outcome is unknown" in asyncio.run(scenario())


def test_a_decline_by_the_system_is_worded_and_attributed_as_the_applications() -> None:
    conv = received(MemoryJournal(), ORDER)
    answer = Driver(conv).decline("c1", by="system", reason="shutting down")
    assert answer.decided_by == "system"
    assert "the application declined" in answer.content and "user" not in answer.error  # type: ignore[operator]
    [decision] = conv.journal.decisions(THREAD, "c1")
    assert decision["decidedBy"] == "system"


def test_an_outcome_check_that_fails_leaves_the_outcome_unknown_and_says_why(
    journal_factory: Callable[[], Journal],
) -> None:
    first = received(journal_factory(), ORDER)
    Driver(first).approve("c1")
    journal_factory().claim(JournalKey(THREAD, "c1", first.call("c1").fingerprint), tool="x")

    def reconcile(_call: Any, _started: object) -> Answer | None:
        raise ConnectionError("order system down")

    again = received(journal_factory(), ORDER, outcome_unknown=reconcile)
    answer = again.call("c1").answer
    assert answer is not None and "outcome unknown" in answer.content
    assert "order system down" in answer.content
    state = journal_factory().lookup(THREAD, "c1")
    assert state is not None and state.claim is Claim.UNKNOWN  # still open for a later check


def test_an_outcome_check_that_returns_no_answer_leaves_the_outcome_unknown_and_says_so(
    journal_factory: Callable[[], Journal],
) -> None:
    """A hook returning something else than an Answer or None (a str, say) is the
    application's bug: the thread still loads, the call stays "outcome unknown" and
    the answer says what the hook returned — it used to be a TypeError that kept
    every replica with that hook from loading the thread."""
    first = received(journal_factory(), ORDER)
    Driver(first).approve("c1")
    journal_factory().claim(JournalKey(THREAD, "c1", first.call("c1").fingerprint), tool="x")
    again = received(journal_factory(), ORDER, outcome_unknown=lambda *_: "charged")
    answer = again.call("c1").answer
    assert answer is not None and "outcome unknown" in answer.content
    assert "returned str, not an Answer or None" in answer.content
    state = journal_factory().lookup(THREAD, "c1")
    assert state is not None and state.claim is Claim.UNKNOWN  # still open for a later check


def test_a_hooks_answer_recorded_first_is_the_one_the_executor_gives_too(
    journal_factory: Callable[[], Journal],
) -> None:
    """A replica's outcome_unknown check answers a call the executor is still running
    (in_flight_wait=0: the hazard docs/deployment.md warns of); when the executor's
    result arrives second, the executor's conversation gives the answer that stands —
    the thread and the journal never disagree on the call."""
    a = received(journal_factory(), ORDER)
    Driver(a).approve("c1")

    def charge(_args: dict[str, Any]) -> str:
        b = received(
            journal_factory(),
            ORDER,
            outcome_unknown=lambda *_: Answer.failed("c1", "not charged: no payment found"),
        )
        assert b.call("c1").answer == Answer.failed("c1", "not charged: no payment found")
        return "charged"

    answer = Driver(a).execute("c1", charge)
    assert answer == Answer.failed("c1", "not charged: no payment found")
    assert journal_factory().answer_for(THREAD, "c1") == answer.to_json()
    tool = [m for m in a.messages if m["role"] == "tool"]
    assert [m["content"] for m in tool] == [answer.content]


def test_an_input_refused_before_sending_leaves_the_thread_as_it_was() -> None:
    conv = Conversation(thread_id=THREAD, store=MemoryJournal())
    with pytest.raises(InputRejected, match="/messages/0/content"):
        conv.next_input(messages=[{"id": "u1", "role": "user", "content": 5}], user="hello")
    assert conv.messages == []
    sent = conv.next_input(user="hello")
    assert [m["content"] for m in sent["messages"]] == ["hello"]
