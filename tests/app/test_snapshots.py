"""What the user sees is what runs: snapshots that restate tool calls, and the producer
slips they reveal (AGT-SNAP-1, AGT-SNAP-2, AGT-ARGS-1, AGT-HIST-1; docs/conformance.md).

The streams are the shape LangGraph's AG-UI adapter (``ag-ui-langgraph`` 0.0.47) sends:
the first argument chunk of a call is dropped (upstream ag-ui #2463, #2653) and an
agent-side tool's result is restated under a fresh message id (#1745).
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from agui_tools import ProtocolViolation, ProtocolWarning
from agui_tools.app import CallStatus, CallUpdate, Conversation, Driver, ToolSpec
from agui_tools.app._call_order import in_call_order, misplaced_tool_messages
from agui_tools.ui.terminal import TerminalUI
from tests.helpers.conversation import run

CONFIRM = ToolSpec(
    "confirm_order",
    "Ask the user to confirm an order.",
    parameters={
        "type": "object",
        "properties": {"item": {"type": "string"}, "quantity": {"type": "integer"}},
        "required": ["item", "quantity"],
        "additionalProperties": False,
    },
)
FULL = '{"item": "blue widget", "quantity": 2}'


def user(conv: Conversation) -> dict[str, Any]:
    return next(m for m in conv.messages if m["role"] == "user")


def langgraph_run(conv: Conversation, *, streamed_args: str = '"quantity": 2}') -> list[Any]:
    """One run: an agent-side lookup answered in-stream, then a frontend confirm_order
    whose first argument chunk the adapter dropped; the closing snapshot restates all."""
    first = user(conv)
    return run(
        conv,
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Let me check stock."},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c-look",
            "toolCallName": "lookup_stock",
            "parentMessageId": "m1",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c-look", "delta": '{"item": "blue widget"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c-look"},
        # the adapter names the tool message after the call id…
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "c-look",
            "toolCallId": "c-look",
            "content": "in stock",
        },
        {"type": "TEXT_MESSAGE_START", "messageId": "m2", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m2", "delta": "Please confirm."},
        {"type": "TEXT_MESSAGE_END", "messageId": "m2"},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c-conf",
            "toolCallName": "confirm_order",
            "parentMessageId": "m2",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c-conf", "delta": streamed_args},
        {"type": "TOOL_CALL_END", "toolCallId": "c-conf"},
        # …and its snapshot restates it under a fresh uuid
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                first,
                {
                    "id": "m1",
                    "role": "assistant",
                    "content": "Let me check stock.",
                    "toolCalls": [
                        {
                            "id": "c-look",
                            "type": "function",
                            "function": {
                                "name": "lookup_stock",
                                "arguments": '{"item": "blue widget"}',
                            },
                        }
                    ],
                },
                {
                    "id": "3f1c-uuid",
                    "role": "tool",
                    "toolCallId": "c-look",
                    "content": "in stock",
                },
                {
                    "id": "m2",
                    "role": "assistant",
                    "content": "Please confirm.",
                    "toolCalls": [
                        {
                            "id": "c-conf",
                            "type": "function",
                            "function": {"name": "confirm_order", "arguments": FULL},
                        }
                    ],
                },
            ],
        },
    )


def rules(items: list[Any]) -> list[str]:
    return [w.rule for w in items if isinstance(w, ProtocolWarning)]


def test_the_final_card_shows_the_arguments_that_ran_not_the_streamed_preview() -> None:
    out = io.StringIO()
    ui = TerminalUI(Console(file=out, width=200, color_system=None), live=False)
    conv = Conversation(thread_id="t1", tools=[CONFIRM])
    conv.next_input(user="order two blue widgets")
    for update in langgraph_run(conv):
        ui.on_update(update)
    Driver(conv).end_run()
    ran: list[dict[str, Any]] = []
    Driver(conv).execute("c-conf", lambda args: ran.append(args) or "confirmed")
    for update in conv.take_updates():
        ui.on_update(update)
    ui.finish_run()
    assert ran == [{"item": "blue widget", "quantity": 2}]
    final_card = out.getvalue().rsplit("confirm_order", 1)[1]
    assert "blue widget" in final_card and "quantity" in final_card
    assert "[done]" in final_card


def test_a_snapshot_that_restates_a_call_refreshes_its_card() -> None:
    conv = Conversation(thread_id="t1", tools=[CONFIRM])
    conv.next_input(user="order")
    updates = langgraph_run(conv)
    cards = [u for u in updates if isinstance(u, CallUpdate) and u.call_id == "c-conf"]
    assert cards[-1].has_arguments
    assert cards[-1].arguments == {"item": "blue widget", "quantity": 2}
    assert cards[-1].status is CallStatus.STREAMING
    # a call the snapshot restates unchanged gets no correction
    assert not any(
        u.has_arguments for u in updates if isinstance(u, CallUpdate) and u.call_id == "c-look"
    )
    Driver(conv).end_run()
    Driver(conv).approve("c-conf", arguments={"item": "red widget", "quantity": 1})
    approved = [u for u in conv.take_updates() if isinstance(u, CallUpdate)]
    assert approved[-1].arguments == {"item": "red widget", "quantity": 1}  # the user's edit runs


def test_the_dropped_first_chunk_and_the_renamed_result_are_named_by_default() -> None:
    conv = Conversation(thread_id="t1", tools=[CONFIRM])
    conv.next_input(user="order")
    updates = langgraph_run(conv)
    assert rules(updates) == ["AGT-SNAP-2", "AGT-ARGS-1"]
    snap2, args1 = (w for w in updates if isinstance(w, ProtocolWarning))
    assert snap2.ids == {
        "toolCallId": "c-look",
        "messageId": "3f1c-uuid",
        "resultMessageId": "c-look",
    }
    assert args1.ids == {"toolCallId": "c-conf"}
    assert '\\"quantity\\": 2}' in args1.message and "blue widget" in args1.message
    assert args1.event_type == "MESSAGES_SNAPSHOT" and args1.index is not None
    result = Driver(conv).end_run()
    assert result.status == "success"
    assert [c.call_id for c in result.pending] == ["c-conf"]


@pytest.mark.parametrize(
    ("streamed", "rule"),
    [('"quantity": 2}', "AGT-ARGS-1"), ('{"item": "red widget", "quantity": 2}', "AGT-SNAP-1")],
)
def test_each_slip_is_fatal_in_strict_mode(streamed: str, rule: str) -> None:
    conv = Conversation(thread_id="t1", tools=[CONFIRM], strict=True)
    first = conv.next_input(user="order")
    with pytest.raises(ProtocolViolation) as caught:
        run(
            conv,
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c-conf",
                "toolCallName": "confirm_order",
            },
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c-conf", "delta": streamed},
            {"type": "TOOL_CALL_END", "toolCallId": "c-conf"},
            {
                "type": "MESSAGES_SNAPSHOT",
                "messages": [
                    first["messages"][0],
                    {
                        "id": "m2",
                        "role": "assistant",
                        "toolCalls": [
                            {
                                "id": "c-conf",
                                "type": "function",
                                "function": {"name": "confirm_order", "arguments": FULL},
                            }
                        ],
                    },
                ],
            },
        )
    assert caught.value.rule == rule
    assert Driver(conv).end_run().status == "rejected"


def test_the_renamed_result_is_fatal_in_strict_mode() -> None:
    conv = Conversation(thread_id="t1", tools=[CONFIRM], strict=True)
    conv.next_input(user="order")
    with pytest.raises(ProtocolViolation) as caught:
        langgraph_run(conv)
    assert caught.value.rule == "AGT-SNAP-2"


def test_a_snapshot_restating_the_same_arguments_differently_spelled_is_no_slip() -> None:
    conv = Conversation(thread_id="t1", tools=[CONFIRM])
    first = conv.next_input(user="order")
    updates = run(
        conv,
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "confirm_order"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": '{"quantity":2,"item":"x"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                first["messages"][0],
                {
                    "id": "m",
                    "role": "assistant",
                    "toolCalls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {
                                "name": "confirm_order",
                                "arguments": '{"item": "x", "quantity": 2}',
                            },
                        }
                    ],
                },
            ],
        },
    )
    assert rules(updates) == []


def test_a_history_out_of_call_order_is_reported_and_sent_as_folded_by_default() -> None:
    conv = Conversation(thread_id="t1", tools=[CONFIRM])
    conv.next_input(user="order")
    langgraph_run(conv)
    Driver(conv).end_run()
    Driver(conv).execute("c-conf", lambda args: "confirmed")
    sent = conv.next_input(user="thanks")
    roles = [(m["role"], m["id"]) for m in sent["messages"]]
    # reconciled by id, the restated tool message landed after the next assistant message
    assert roles.index(("tool", "3f1c-uuid")) > roles.index(("assistant", "m2"))
    hist = [w for w in conv.warnings if w.rule == "AGT-HIST-1"]
    assert len(hist) == 1
    assert "3f1c-uuid" in hist[0].message and "'m1'" in hist[0].message
    assert "tool_message_order='call-order'" in hist[0].message
    assert hist[0].ids == {"toolMessageId": "3f1c-uuid", "toolCallId": "c-look"}
    assert conv.messages == sent["messages"]  # nothing reordered silently


def test_call_order_sends_each_tool_message_after_its_call_and_keeps_every_message() -> None:
    conv = Conversation(thread_id="t1", tools=[CONFIRM], tool_message_order="call-order")
    conv.next_input(user="order")
    langgraph_run(conv)
    Driver(conv).end_run()
    Driver(conv).execute("c-conf", lambda args: "confirmed")
    sent = conv.next_input(user="thanks")
    ids = [m["id"] for m in sent["messages"]]
    assert ids.index("3f1c-uuid") == ids.index("m1") + 1
    assert sorted(ids) == sorted(m["id"] for m in conv.messages)
    assert misplaced_tool_messages(sent["messages"]) == []
    assert [w.rule for w in conv.warnings if w.rule == "AGT-HIST-1"] == ["AGT-HIST-1"]


def test_in_call_order_sorts_a_tool_block_by_call_order_and_leaves_orphans() -> None:
    history = [
        {"id": "a", "role": "assistant", "toolCalls": [{"id": "x"}, {"id": "y"}]},
        {"id": "ty", "role": "tool", "toolCallId": "y"},
        {"id": "u", "role": "user"},
        {"id": "tx", "role": "tool", "toolCallId": "x"},
        {"id": "orphan", "role": "tool", "toolCallId": "nobody"},
    ]
    assert [m.tool_message_id for m in misplaced_tool_messages(history)] == ["tx"]
    assert [m["id"] for m in in_call_order(history)] == ["a", "tx", "ty", "u", "orphan"]


def test_tool_message_order_is_checked() -> None:
    from agui_tools import UsageError

    with pytest.raises(UsageError, match="tool_message_order"):
        Conversation(tool_message_order="sorted")  # type: ignore[arg-type]


# -- issue 23 item 5: AGT-SNAP-2 says what the stream did ---------------------------------


def _snapshot(conv: Conversation, tag: str, *more: dict[str, Any]) -> dict[str, Any]:
    """LlamaIndex's shape: every message restated under a re-minted id, in order."""
    tool_call = {
        "id": "c-search",
        "type": "function",
        "function": {"name": "search_docs", "arguments": "{}"},
    }
    return {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            {**user(conv), "id": f"{tag}-user"},
            {"id": f"{tag}-a", "role": "assistant", "toolCalls": [tool_call]},
            {"id": f"{tag}-t", "role": "tool", "toolCallId": "c-search", "content": "sunny"},
            *more,
        ],
    }


def test_a_result_re_minted_by_a_second_snapshot_names_the_snapshot_and_stays_beside() -> None:
    """No TOOL_CALL_RESULT anywhere: the earlier id came from the first snapshot, and the
    second re-mints every id in order — the result does not move away from its call."""
    conv = Conversation(thread_id="t1")
    conv.next_input(user="search")
    updates = run(
        conv,
        {"type": "TOOL_CALL_START", "toolCallId": "c-search", "toolCallName": "search_docs"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c-search", "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": "c-search"},
        _snapshot(conv, "x"),
        _snapshot(conv, "y", {"id": "y-m", "role": "assistant", "content": "It is sunny."}),
    )
    (snap2,) = [w for w in updates if isinstance(w, ProtocolWarning) and w.rule == "AGT-SNAP-2"]
    text = snap2.message
    assert "TOOL_CALL_RESULT" not in text and "away from its call" not in text, text
    assert "a MESSAGES_SNAPSHOT at event #4 had it as message 'x-t'" in text, text
    assert "beside its call" in text and "'y-t'" in text, text


def test_a_streamed_result_restated_after_other_messages_moves_away_from_its_call() -> None:
    conv = Conversation(thread_id="t1")
    conv.next_input(user="search")
    updates = run(
        conv,
        {"type": "TEXT_MESSAGE_START", "messageId": "a1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a1", "delta": "Searching."},
        {"type": "TEXT_MESSAGE_END", "messageId": "a1"},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c-search",
            "toolCallName": "search_docs",
            "parentMessageId": "a1",
        },
        {"type": "TOOL_CALL_END", "toolCallId": "c-search"},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "c-search",
            "toolCallId": "c-search",
            "content": "found",
        },
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                user(conv),
                {
                    "id": "a1",
                    "role": "assistant",
                    "content": "Searching.",
                    "toolCalls": [
                        {
                            "id": "c-search",
                            "type": "function",
                            "function": {"name": "search_docs", "arguments": ""},
                        }
                    ],
                },
                {"id": "a2", "role": "assistant", "content": "Found it."},
                {"id": "uuid-1", "role": "tool", "toolCallId": "c-search", "content": "found"},
            ],
        },
    )
    (snap2,) = [w for w in updates if isinstance(w, ProtocolWarning) and w.rule == "AGT-SNAP-2"]
    text = snap2.message
    assert "its TOOL_CALL_RESULT at event #6 had it as message 'c-search'" in text, text
    assert "away from its call" in text and "beside its call" not in text, text
