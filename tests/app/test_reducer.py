"""The thread reducer: what lands where (STATE-1/2, REAS-1/2, META-4/5, TEXT-2,
TOOL-7/25/26, activity)."""

from __future__ import annotations

from typing import Any

from agui_tools.app._reducer import ThreadState


def fold(events: list[dict[str, Any]], **kw: Any) -> ThreadState:
    t = ThreadState(**kw)
    t.apply_all(events)
    return t


def test_reopen_appends_and_keeps_established_values() -> None:
    t = fold(
        [
            {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "user", "name": "ann"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "a"},
            {"type": "TEXT_MESSAGE_END", "messageId": "m"},
            {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant", "name": "bob"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "b"},
            {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        ]
    )
    assert t.messages == [{"id": "m", "role": "user", "content": "ab", "name": "ann"}]


def test_a_reasoning_message_folds_its_deltas_and_end_metadata_like_text() -> None:
    t = fold(
        [
            {"type": "REASONING_MESSAGE_START", "messageId": "r", "role": "reasoning"},
            {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r", "delta": "think"},
            {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r", "delta": "ing"},
            {"type": "REASONING_MESSAGE_END", "messageId": "r", "metadata": {"model": "m"}},
        ]
    )
    [message] = t.messages
    assert message["role"] == "reasoning" and message["content"] == "thinking"
    assert message["metadata"] == {"model": "m"}


def test_tool_call_arguments_raw_metadata_on_the_call_not_the_message() -> None:
    t = fold(
        [
            {"type": "TEXT_MESSAGE_START", "messageId": "m", "metadata": {"on": "message"}},
            {"type": "TEXT_MESSAGE_END", "messageId": "m"},
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c",
                "toolCallName": "f",
                "parentMessageId": "m",
                "metadata": {"a": 1, "x": ["1", "2"]},
            },
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": '{"q": "not json'},
            {"type": "TOOL_CALL_END", "toolCallId": "c", "metadata": {"x": ["3"]}},
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c",
                "toolCallName": "f",
                "parentMessageId": "m",
            },
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "…"},
            {"type": "TOOL_CALL_END", "toolCallId": "c"},
        ]
    )
    [msg] = t.messages
    assert msg["metadata"] == {"on": "message"}
    assert msg["toolCalls"] == [
        {
            "id": "c",
            "type": "function",
            "function": {"name": "f", "arguments": '{"q": "not json…'},
            "metadata": {"a": 1, "x": ["3"]},  # last write wins, never recursing
        }
    ]


def test_parent_resolution_matches_the_official_client() -> None:
    t = fold(
        [
            {"type": "TEXT_MESSAGE_START", "messageId": "u", "role": "user"},
            {"type": "TEXT_MESSAGE_END", "messageId": "u"},
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c1",
                "toolCallName": "f",
                "parentMessageId": "missing",
            },
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c2",
                "toolCallName": "f",
                "parentMessageId": "u",
            },
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c3",
                "toolCallName": "f",
                "subagentRunId": "s1",
            },
        ]
    )
    assert [
        (m["id"], m["role"], [c["id"] for c in m.get("toolCalls", [])]) for m in t.messages
    ] == [
        ("u", "user", []),
        ("missing", "assistant", ["c1"]),  # a named parent that does not exist is created
        ("c2", "assistant", ["c2"]),  # a non-assistant parent: keyed by the call instead
        ("c3", "assistant", ["c3"]),  # no parent at all: keyed by the call
    ]
    assert t.messages[-1]["subagentRunId"] == "s1"


def test_result_goes_right_after_its_call_and_after_earlier_results() -> None:
    t = fold(
        [
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c1",
                "toolCallName": "f",
                "parentMessageId": "a",
            },
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c2",
                "toolCallName": "f",
                "parentMessageId": "a",
            },
            {"type": "TEXT_MESSAGE_START", "messageId": "later"},
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": "r1",
                "toolCallId": "c1",
                "content": "one",
                "metadata": {"k": 1},
            },
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": "r2",
                "toolCallId": "c2",
                "content": [{"type": "text", "text": "two"}],
            },
        ]
    )
    assert [m["id"] for m in t.messages] == ["a", "r1", "r2", "later"]
    assert t.message("r1") == {
        "id": "r1",
        "role": "tool",
        "content": "one",
        "toolCallId": "c1",
        "metadata": {"k": 1},
    }
    assert t.message("r2")["content"] == [{"type": "text", "text": "two"}]  # type: ignore[index]


def test_messages_snapshot_reconciles_by_id_in_place_with_client_only_exceptions() -> None:
    t = ThreadState(
        [
            {"id": "a", "role": "user", "content": "old"},
            {"id": "act", "role": "activity", "activityType": "s", "content": {}},
            {"id": "r", "role": "reasoning", "content": "thinking"},
            {"id": "gone", "role": "assistant", "content": "dropped"},
        ]
    )
    t.apply(
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {"id": "new", "role": "assistant", "content": "appended"},
                {"id": "a", "role": "user", "content": "restated"},
            ],
        }
    )
    assert [(m["id"], m.get("content")) for m in t.messages] == [
        ("a", "restated"),
        ("act", {}),
        ("r", "thinking"),
        ("new", "appended"),
    ]
    # a snapshot carrying reasoning declares the complete reasoning set: self-revoking
    t.apply(
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {"id": "a", "role": "user", "content": "restated"},
                {"id": "r2", "role": "reasoning", "content": "other"},
            ],
        }
    )
    assert [m["id"] for m in t.messages] == ["a", "act", "r2"]


def test_encrypted_values_land_on_the_call_or_message_and_types_never_mislabel() -> None:
    t = fold(
        [
            {"type": "TEXT_MESSAGE_START", "messageId": "m"},
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c",
                "toolCallName": "f",
                "parentMessageId": "m",
            },
            {
                "type": "REASONING_ENCRYPTED_VALUE",
                "subtype": "tool-call",
                "entityId": "c",
                "encryptedValue": "E1",
                "encryptedValueType": "anthropic.sig",
            },
            {
                "type": "REASONING_ENCRYPTED_VALUE",
                "subtype": "message",
                "entityId": "m",
                "encryptedValue": "M1",
                "encryptedValueType": "x.t",
            },
            {
                "type": "REASONING_ENCRYPTED_VALUE",
                "subtype": "message",
                "entityId": "m",
                "encryptedValue": "M2",
            },
            {
                "type": "REASONING_ENCRYPTED_VALUE",
                "subtype": "message",
                "entityId": "nobody",
                "encryptedValue": "?",
            },
        ]
    )
    msg = t.message("m")
    assert msg is not None
    assert msg["encryptedValue"] == "M2" and "encryptedValueType" not in msg
    assert msg["toolCalls"][0]["encryptedValue"] == "E1"
    assert msg["toolCalls"][0]["encryptedValueType"] == "anthropic.sig"
    assert [w.rule for w in t.warnings] == ["REAS-2"]


def test_state_snapshot_replaces_and_a_failed_patch_keeps_the_prior_state() -> None:
    t = ThreadState(state={"a": 1})
    t.apply({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/b", "value": 2}]})
    assert t.state == {"a": 1, "b": 2}
    t.apply(
        {
            "type": "STATE_DELTA",
            "delta": [
                {"op": "replace", "path": "/a", "value": 9},
                {"op": "test", "path": "/b", "value": 3},
            ],
        }
    )
    assert t.state == {"a": 1, "b": 2}, "atomic: no partially applied result"
    assert [w.rule for w in t.warnings] == ["STATE-2"]
    t.apply({"type": "STATE_SNAPSHOT", "snapshot": ["only-this"]})
    assert t.state == ["only-this"]


def test_activity_snapshot_replace_false_and_delta() -> None:
    t = fold(
        [
            {
                "type": "ACTIVITY_SNAPSHOT",
                "messageId": "a",
                "activityType": "search",
                "content": {"n": 1},
                "metadata": {"k": 1},
                "subagentRunId": "s1",
            },
            {
                "type": "ACTIVITY_SNAPSHOT",
                "messageId": "a",
                "activityType": "other",
                "content": {"n": 9},
                "replace": False,
                "metadata": {"j": 2},
            },
            {
                "type": "ACTIVITY_DELTA",
                "messageId": "a",
                "activityType": "search2",
                "patch": [{"op": "replace", "path": "/n", "value": 2}],
            },
            {"type": "ACTIVITY_DELTA", "messageId": "missing", "activityType": "x", "patch": []},
            {
                "type": "ACTIVITY_SNAPSHOT",
                "messageId": "a",
                "activityType": "search3",
                "content": {"n": 3},
            },
        ]
    )
    assert t.messages == [
        {
            "id": "a",
            "role": "activity",
            "content": {"n": 3},
            "activityType": "search3",
            "metadata": {"k": 1, "j": 2},
        }
    ]  # metadata survives replacement; owner re-minted
    assert [w.rule for w in t.warnings] == ["STATE-2"]


def test_run_started_input_messages_are_added_when_new() -> None:
    t = ThreadState([{"id": "u", "role": "user", "content": "mine"}])
    t.apply(
        {
            "type": "RUN_STARTED",
            "threadId": "t",
            "runId": "r",
            "input": {
                "threadId": "t",
                "runId": "r",
                "messages": [
                    {"id": "u", "role": "user", "content": "theirs"},
                    {"id": "x", "role": "user", "content": "echoed"},
                ],
            },
        }
    )
    assert [(m["id"], m["content"]) for m in t.messages] == [("u", "mine"), ("x", "echoed")]


def test_cost_per_event_does_not_copy_the_thread() -> None:
    """Appending is constant work: the message dicts are built only when read."""
    t = ThreadState()
    t.apply({"type": "TEXT_MESSAGE_START", "messageId": "m"})
    for _ in range(10_000):
        t.apply({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"})
    assert len(t._order[0].parts or []) == 10_000  # parts, not a re-built string per delta
    assert t.message("m")["content"] == "x" * 10_000  # type: ignore[index]
    assert len(t._order[0].parts or []) == 1  # joined once, on read


def test_subagent_state_updates_the_runs_state() -> None:
    """SUB-16: state is run-scoped; a subagent's update is not withheld."""
    t = fold(
        [
            {"type": "STATE_SNAPSHOT", "snapshot": {"plan": []}, "subagentRunId": "s1"},
            {
                "type": "STATE_DELTA",
                "delta": [{"op": "add", "path": "/plan/0", "value": "step"}],
                "subagentRunId": "s2",
            },
        ]
    )
    assert t.state == {"plan": ["step"]}


def test_deltas_after_a_snapshot_restated_the_open_message_keep_appending() -> None:
    """Found by differential testing against the official client (STREAM-5, STATE-1)."""
    t = fold(
        [
            {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hel"},
            {
                "type": "MESSAGES_SNAPSHOT",
                "messages": [{"id": "m1", "role": "assistant", "content": "Hel"}],
            },
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "lo"},
            {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        ]
    )
    assert t.messages == [{"id": "m1", "role": "assistant", "content": "Hello"}]
    assert t.warnings == []


def test_a_delta_for_a_message_a_snapshot_dropped_is_warned_about() -> None:
    t = fold(
        [
            {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
            {"type": "MESSAGES_SNAPSHOT", "messages": []},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "lost"},
        ]
    )
    assert t.messages == [] and [w.rule for w in t.warnings] == ["STATE-1"]


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def test_patches_cannot_compose_state_or_activity_past_the_depth_limit() -> None:
    """Each patch is within the event limit, but together they would nest state hundreds of
    levels deep — where a later deepcopy or re-send fails far from its cause. The patch that
    would cross the limit does not apply (STATE-2: prior value kept, failure surfaced)."""
    t = ThreadState()
    t.apply({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": _nested(100)}]})
    deeper = "/a" + "/0" * 99  # the innermost list, at level 101 of the state
    patch = [{"op": "add", "path": deeper + "/-", "value": _nested(100)}]
    t.apply({"type": "STATE_DELTA", "delta": patch})
    assert t.state == {"a": _nested(100)}
    [warning] = t.warnings
    assert warning.rule == "STATE-2" and "max_depth=128" in warning.message
    t.apply({"type": "ACTIVITY_SNAPSHOT", "messageId": "x", "activityType": "p", "content": {}})
    t.apply(
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "x",
            "activityType": "p",
            "patch": [{"op": "add", "path": "/a", "value": _nested(130)}],
        }
    )
    assert (t.message("x") or {})["content"] == {}
    assert [w.rule for w in t.warnings] == ["STATE-2", "STATE-2"]


def test_the_depth_limit_is_the_conversations_and_deep_initial_state_is_refused() -> None:
    """The reducer bounds state by the limit it is given (the pipeline's ``Limits``),
    and refuses initial state it could never send again — not a RecursionError later."""
    from agui_tools._errors import UsageError
    from agui_tools.app._conversation import Conversation
    from agui_tools.wire._verify import Limits

    conv = Conversation(thread_id="t", limits=Limits(max_depth=8))
    conv.thread.apply(
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": _nested(10)}]}
    )
    assert conv.state == {} and "max_depth=8" in conv.thread.warnings[0].message
    conv.thread.apply(
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": _nested(3)}]}
    )
    assert conv.state == {"a": _nested(3)}
    deep: Any = {}
    for _ in range(2000):
        deep = {"x": deep}
    for make in (lambda: ThreadState(state=deep), lambda: Conversation(state=deep)):
        try:
            make()
        except UsageError as exc:
            assert "initial state nests deeper than max_depth=128" in str(exc)
            assert "/x/x/x" in str(exc)
        else:
            raise AssertionError("deep initial state was accepted")


def test_a_patch_that_does_not_apply_is_named_and_the_prior_value_kept() -> None:
    t = ThreadState(state={"a": 1})
    t.apply({"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/nope"}]})
    t.apply({"type": "ACTIVITY_SNAPSHOT", "messageId": "x", "activityType": "p", "content": {}})
    t.apply(
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "x",
            "activityType": "p",
            "patch": [{"op": "remove", "path": "/nope"}],
        }
    )
    assert t.state == {"a": 1} and (t.message("x") or {})["content"] == {}
    state, activity = t.warnings
    assert state.rule == activity.rule == "STATE-2"
    assert state.message.startswith("STATE_DELTA did not apply (")
    assert "the prior state is kept until the next snapshot" in state.message
    assert activity.message.startswith("ACTIVITY_DELTA for 'x' did not apply (")
    assert "the activity keeps its prior content" in activity.message
