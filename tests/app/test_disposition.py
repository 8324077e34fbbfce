"""The disposition gates, one by one (app/_disposition.py).

The conversation tests (tests/app/test_conversation.py, test_exactly_once.py)
drive the gates through whole runs and restarts; these call them directly, to
show what each rules, that the first ruling decides, and that a gate only
rules: it never writes the journal — the conversation carries a ruling out.
"""

from __future__ import annotations

from typing import Any

import pytest

from agui_tools.app._arguments import parse_arguments
from agui_tools.app._calls import Answer, PendingCall
from agui_tools.app._consent import ConsentPolicy, PolicyVerdict
from agui_tools.app._disposition import GATES, Approve, Ask, Desk, Settle, Stand, rule_on
from agui_tools.app._journal import JournalKey, MemoryJournal
from agui_tools.app._tools import ToolSpec

ORDER = ToolSpec(
    "order",
    "Place an order.",
    parameters={
        "type": "object",
        "properties": {"qty": {"type": "integer"}},
        "required": ["qty"],
        "additionalProperties": False,
    },
    side_effects=True,
)
LOOKUP = ToolSpec("lookup", "Look something up.")


def pending(
    text: str = '{"qty": 2}', tool: ToolSpec | None = ORDER, name: str = "order"
) -> PendingCall:
    return PendingCall("t", "r", "c1", name, text, parse_arguments(text), tool)


def desk(journal: MemoryJournal | None = None, closed: bool = True, **kw: Any) -> Desk:
    """What the conversation reads of ``journal`` for call c1 of thread t, as it reads it."""
    journal = journal if journal is not None else MemoryJournal()
    record = journal.lookup("t", "c1")
    return Desk(
        record,
        journal.decisions("t", "c1") if record is None else [],
        kw.pop("consent", ConsentPolicy()),
        kw.pop("unadvertised", None),
        closed,
    )


def test_the_gates_in_their_documented_order() -> None:
    assert [g.__name__ for g in GATES] == [
        "journal_holds",
        "never_closed",
        "not_advertised",
        "invalid_arguments",
        "decision_recorded",
        "consent_policy",
    ]


def test_a_well_formed_call_reaches_the_policy() -> None:
    assert isinstance(rule_on(pending(), desk()), Ask)  # side effects: the user is asked
    ruling = rule_on(pending("{}", LOOKUP, "lookup"), desk())
    assert isinstance(ruling, Approve) and ruling.record
    assert ruling.decision.decided_by == "policy" and ruling.decision.approved


def test_what_the_journal_holds_stands_before_anything_else() -> None:
    journal = MemoryJournal()
    call = pending(tool=None)  # would be refused as unadvertised, and never closed
    journal.settle(JournalKey("t", "c1", call.fingerprint), Answer.executed("c1", "ok").to_json())
    ruling = rule_on(call, desk(journal, closed=False))
    assert (
        isinstance(ruling, Stand) and ruling.record.answer == Answer.executed("c1", "ok").to_json()
    )


@pytest.mark.parametrize(
    ("call", "kw", "error"),
    [
        (pending(), {"closed": False}, "never closed"),
        (pending(tool=None), {}, "unadvertised tools are not executed"),
        (pending('{"qty": "two"}'), {}, "/qty"),
        (pending('{"qty": 2'), {}, "not valid JSON"),
    ],
    ids=["never-closed", "unadvertised", "schema", "unparseable"],
)
def test_each_refusal_answers_failed_and_says_why(call: PendingCall, kw: Any, error: str) -> None:
    ruling = rule_on(call, desk(**kw))
    assert isinstance(ruling, Settle) and ruling.answer.outcome == "failed"
    assert error in (ruling.answer.error or "")


def test_the_unadvertised_hook_adopts_a_tool_or_its_failure_refuses() -> None:
    call = pending(tool=None)
    assert isinstance(rule_on(call, desk(unadvertised=lambda name, args: ORDER)), Ask)
    assert call.tool is ORDER

    def broken(name: str, args: Any) -> ToolSpec | None:
        raise RuntimeError("router down")

    ruling = rule_on(pending(tool=None), desk(unadvertised=broken))
    assert isinstance(ruling, Settle) and "router down" in (ruling.answer.error or "")


def test_a_gate_rules_and_never_writes() -> None:
    journal = MemoryJournal()
    deny = ConsentPolicy(overrides={"order": PolicyVerdict.DENY})
    ruling = rule_on(pending(), desk(journal, consent=deny))
    assert isinstance(ruling, Settle) and ruling.answer.outcome == "declined"
    assert ruling.decision is not None and ruling.decision.decided_by == "policy"
    assert journal.lookup("t", "c1") is None and journal.decisions("t", "c1") == []
