"""Item 11 (issue 11): disposing of a run's calls costs O(calls) with the default
MemoryJournal. It was quadratic — ``decisions()`` scanned every decision and each
answer scanned the message list for its call's message: one run with 1k / 3k / 9k /
18k calls took 0.8 / 2.5 / 17.4 / 74.9 s. Work is counted in executed lines, not
timed: doubling the calls must about double it.
"""

from __future__ import annotations

from typing import Any

from agui_tools.app import Conversation, Driver, MemoryJournal, ToolSpec
from tests.helpers.cost import lines_executed


def run_with_calls(n: int) -> tuple[Conversation, list[Any]]:
    conv = Conversation(thread_id="t", tools=[ToolSpec("look", "read-only")], store=MemoryJournal())
    conv.next_input(run_id="r")
    events: list[Any] = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    for i in range(n):
        events += [
            {"type": "TOOL_CALL_START", "toolCallId": f"c{i}", "toolCallName": "look"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": f"c{i}", "delta": "{}"},
            {"type": "TOOL_CALL_END", "toolCallId": f"c{i}"},
        ]
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    conv.receive_many(events)
    return conv, events


def dispose(n: int) -> int:
    conv, _ = run_with_calls(n)

    def work() -> None:
        result = Driver(conv).end_run()
        for call in result.pending:
            Driver(conv).execute(call.call_id, lambda args: "ok")
        conv.next_input()  # the thread is read whole: every answer in place

    return lines_executed(work)


def test_disposal_is_linear_in_the_calls() -> None:
    small, large = dispose(300), dispose(1200)
    assert large < 5 * small, f"4x the calls cost {large / small:.1f}x the work"


def test_each_answer_lands_right_after_its_call() -> None:
    conv, _ = run_with_calls(3)
    result = Driver(conv).end_run()
    for call in reversed(result.pending):
        Driver(conv).execute(call.call_id, lambda args: "ok")
    roles = [(m["role"], m.get("toolCallId") or m["id"]) for m in conv.messages]
    assert roles == [
        ("assistant", "c0"),
        ("tool", "c0"),
        ("assistant", "c1"),
        ("tool", "c1"),
        ("assistant", "c2"),
        ("tool", "c2"),
    ]
    decisions = conv.journal.decisions("t", "c1")
    assert [d["toolCallId"] for d in decisions] == ["c1"] and decisions[0]["approved"]
