"""The producer side without HTTP: the Emitter's rules and the Run API.

Every stream a test produces is judged by the consumer pipeline in strict mode
(:func:`judge`): an emitter whose output a conforming consumer would reject or
warn about is broken no matter what else a test checks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from agui_tools._errors import InputRejected, ProtocolViolation, UsageError
from agui_tools._version import PROTOCOL_VERSION
from agui_tools.agent import (
    Agent,
    ContinuationRejected,
    Emitter,
    EventChannel,
    Run,
    RunCancelled,
    check_continuation,
    collect,
    drive,
)
from agui_tools.wire._enforce import Enforcer
from agui_tools.wire._expand import Expander
from agui_tools.wire._kinds import CHUNK_TYPES
from agui_tools.wire._pipeline import ConsumerPipeline, StreamResult
from agui_tools.wire._verify import Verifier
from tests.helpers import conformance, judging
from tests.helpers.gen_streams import GeneratedStream, streams

Event = dict[str, Any]

INPUT: dict[str, Any] = {
    "threadId": "t1",
    "runId": "r1",
    "messages": [{"id": "u1", "role": "user", "content": "Book me a table."}],
    "tools": [{"name": "confirm_booking", "description": "Ask the user to confirm."}],
}


def judge(
    events: list[Event], run_input: dict[str, Any] = INPUT, *, run_error: bool = False
) -> StreamResult:
    """The strict consumer's verdict on ``events`` (:func:`tests.helpers.judging.judge`)."""
    return judging.judge(events, run_input, run_error=run_error)


def run_agent(agent: Agent, run_input: dict[str, Any] = INPUT) -> list[Event]:
    return judging.run_agent(agent, run_input)


def types(events: list[Event]) -> list[str]:
    return [e["type"] for e in events]


def emitter(run_input: dict[str, Any] = INPUT, **kw: Any) -> tuple[Emitter, list[Event]]:
    em = Emitter(run_input, **kw)
    return em, em.start()


# -- the run's boundaries --------------------------------------------------------------


def test_run_started_declares_our_protocol_version_and_echoes_the_input_ids() -> None:
    async def agent(run: Run) -> None:
        assert (run.thread_id, run.run_id) == ("t1", "r1")
        assert run.frontend_tools == {"confirm_booking"}
        assert run.messages[0]["id"] == "u1"
        assert run.state == {}

    events = run_agent(agent)
    assert events[0] == {
        "type": "RUN_STARTED",
        "threadId": "t1",
        "runId": "r1",
        "protocolVersion": PROTOCOL_VERSION,
    }
    assert events[-1] == {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}
    assert judge(events).runs[0].status == "success"


def test_the_agent_reads_its_input_through_the_run() -> None:
    """Asserted inside the agent body: a failure there fails the test (tests/helpers/run_errors)."""
    run_input = {
        **INPUT,
        "state": {"cart": ["tea"]},
        "context": [{"description": "timezone", "value": "Europe/Paris"}],
        "forwardedProps": {"tenant": "acme"},
        "resume": [{"interruptId": "i1", "status": "resolved"}],
    }

    async def agent(run: Run) -> None:
        assert run.input == run_input
        assert run.tools == INPUT["tools"]
        assert run.state == {"cart": ["tea"]}
        assert run.context == [{"description": "timezone", "value": "Europe/Paris"}]
        assert run.forwarded_props == {"tenant": "acme"}
        assert run.resume == [{"interruptId": "i1", "status": "resolved"}]
        run.messages.clear()  # a copy: the agent cannot rewrite the input
        assert run.messages == INPUT["messages"]

    judge(run_agent(agent, run_input), run_input)


def test_set_result_and_usage_travel_on_run_finished() -> None:
    async def agent(run: Run) -> None:
        run.set_result({"answer": 42})
        run.add_usage({"provider": "openai", "inputTokens": 10, "outputTokens": 2})

    events = run_agent(agent)
    assert events[-1]["result"] == {"answer": 42}
    assert events[-1]["usage"] == [{"provider": "openai", "inputTokens": 10, "outputTokens": 2}]
    judge(events)


# -- messages ------------------------------------------------------------------------


def test_text_and_message_explicit_spelling() -> None:
    async def agent(run: Run) -> None:
        await run.text("Hello.", message_id="m1")
        async with run.message(message_id="m2") as m:
            await m.delta("Hel")
            await m.delta("lo")
            assert m.content == "Hello"

    events = run_agent(agent)
    assert types(events)[1:-1] == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
    ]
    judge(events)


def test_chunked_spelling_sends_only_chunks_and_the_consumer_assembles_the_same() -> None:
    async def agent(run: Run) -> None:
        async with run.message(message_id="m1", chunked=True) as m:
            await m.delta("Hel")
            await m.delta("lo")
        async with run.tool_call("search", call_id="c1", chunked=True) as call:
            await call.args('{"q":')
            await call.args('"x"}')
        await run.result("c1", "found")

    events = run_agent(agent)
    assert types(events)[1:-1] == [
        "TEXT_MESSAGE_CHUNK",
        "TEXT_MESSAGE_CHUNK",
        "TEXT_MESSAGE_CHUNK",
        "TOOL_CALL_CHUNK",
        "TOOL_CALL_CHUNK",
        "TOOL_CALL_CHUNK",
        "TOOL_CALL_RESULT",
    ]
    assert events[4] == {"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "toolCallName": "search"}
    pipe = ConsumerPipeline(run_input=INPUT, strict=True)
    delivered = [e for ev in events for e in pipe.feed(ev)]
    assert types(delivered)[1:5] == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
    ]
    args = "".join(e["delta"] for e in delivered if e["type"] == "TOOL_CALL_ARGS")
    assert args == '{"q":"x"}'
    assert pipe.close().warnings == []


# the rules of each discipline — opened twice, continued or closed while not open, left
# open at the finish — written out here, not read from wire/_kinds.py (which the
# emitter uses: the test must not share the table it checks)
DISCIPLINE = {
    "text": ("STREAM-2", "STREAM-3", "STREAM-4"),
    "tool": ("TOOL-20", "TOOL-20", "TOOL-20"),
    "reasoning": ("REAS-4", "REAS-4", "REAS-4"),
    "span": ("REAS-4", "REAS-4", "REAS-4"),
    "step": ("STEP-1", "STEP-1", "STEP-2"),
    "subagent": ("SUB-5", "SUB-6", "SUB-6"),
}


@pytest.mark.parametrize("kind", DISCIPLINE)
def test_each_kinds_misuse_is_refused_under_its_own_rule(kind: str) -> None:
    twice, not_open, left_open = DISCIPLINE[kind]
    em, _ = emitter()
    start: Callable[[str], Any] = {
        "text": em.text_start,
        "tool": lambda i: em.tool_start(i, "lookup"),
        "reasoning": em.reasoning_message_start,
        "span": em.reasoning_start,
        "step": em.step_start,
        "subagent": lambda i: em.subagent_start(i, "helper"),
    }[kind]
    end: Callable[[str], Any] = {
        "text": em.text_end,
        "tool": em.tool_end,
        "reasoning": em.reasoning_message_end,
        "span": em.reasoning_end,
        "step": em.step_end,
        "subagent": em.subagent_finish,
    }[kind]
    content = {"text": em.text_content, "tool": em.tool_args, "reasoning": em.reasoning_content}
    start("i1")
    with pytest.raises(UsageError) as info:
        start("i1")
    assert info.value.rule == twice
    if kind in content:  # scopes hold no content
        with pytest.raises(UsageError) as info:
            content[kind]("i9", "x")
        assert info.value.rule == not_open
    with pytest.raises(UsageError) as info:
        end("i9")
    assert info.value.rule == not_open
    with pytest.raises(UsageError) as info:
        em.finish()
    assert info.value.rule == left_open


def test_ids_are_minted_when_not_given() -> None:
    ids: list[str] = []

    async def agent(run: Run) -> None:
        ids.append(await run.text("a"))
        ids.append(await run.text("b"))

    judge(run_agent(agent))
    assert len(set(ids)) == 2 and all(ids)


def test_reopening_a_message_with_another_role_is_refused() -> None:
    em, _ = emitter()
    em.text_start("m1")
    em.text_end("m1")
    with pytest.raises(UsageError) as err:
        em.text_start("m1", role="user")
    assert err.value.rule == "TEXT-3"
    em.text_start("m1")  # an agreeing reopen appends (TEXT-2)
    events = [*em.text_content("m1", "more"), *em.text_end("m1"), *em.finish()]
    assert types(events) == ["TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]


def test_a_message_id_of_another_kind_is_refused() -> None:
    em, _ = emitter()
    with pytest.raises(UsageError) as err:
        em.reasoning_message_start("u1")  # u1 is the history's user message
    assert err.value.rule == "EVT-8"


# -- tool calls ------------------------------------------------------------------------


def test_agent_side_call_with_result_and_a_frontend_call_left_pending() -> None:
    async def agent(run: Run) -> None:
        async with run.message(message_id="m1") as m:
            await m.delta("Checking availability.")
            async with run.tool_call("availability", call_id="c1", parent_message_id=m.id) as c:
                await c.args('{"day":"fri"}')
                assert c.arguments == '{"day":"fri"}'
        await run.result("c1", [{"type": "text", "text": "19:00 free"}])
        async with run.tool_call("confirm_booking", call_id="c2") as confirm:
            await confirm.args('{"time":"19:00"}')
        async with run.tool_call("confirm_booking", call_id="c3") as confirm:
            await confirm.args('{"time":"20:00"}')

    events = run_agent(agent)
    assert events[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ["c2", "c3"]}
    result = judge(events)
    assert result.runs[0].pending == ["c2", "c3"]


def test_no_outcome_when_nothing_is_pending() -> None:
    async def agent(run: Run) -> None:
        async with run.tool_call("lookup", call_id="c1"):
            pass
        await run.result("c1", "ok")

    events = run_agent(agent)
    assert "outcome" not in events[-1]
    judge(events)


def test_result_for_an_advertised_frontend_tool_raises_and_emits_nothing() -> None:
    caught: list[UsageError] = []

    async def agent(run: Run) -> None:
        async with run.tool_call("confirm_booking", call_id="c1") as call:
            await call.args("{}")
        try:
            await run.result("c1", "confirmed")
        except UsageError as exc:
            caught.append(exc)

    events = run_agent(agent)
    assert caught and caught[0].rule == "FE-2"
    assert "TOOL_CALL_RESULT" not in types(events)
    assert judge(events).runs[0].pending == ["c1"]


@pytest.mark.parametrize(
    ("setup", "call_id", "rule"),
    [
        ("none", "c9", "TOOL-10"),  # never made
        ("open", "c1", "TOOL-10"),  # still open
        ("answered", "c1", "TOOL-10"),  # a second result
    ],
)
def test_results_answer_exactly_one_closed_call(setup: str, call_id: str, rule: str) -> None:
    em, _ = emitter()
    em.tool_start("c1", "lookup")
    if setup != "open":
        em.tool_end("c1")
    if setup == "answered":
        em.tool_result("c1", "ok", message_id="t1")
    with pytest.raises(UsageError) as err:
        em.tool_result(call_id, "ok", message_id="t2")
    assert err.value.rule == rule


def test_result_for_a_call_of_the_history_is_judged_against_the_thread() -> None:
    history = {
        **INPUT,
        "messages": [
            *INPUT["messages"],
            {
                "id": "a1",
                "role": "assistant",
                "toolCalls": [
                    {"id": "h1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "h2", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                ],
            },
            {"id": "t1", "role": "tool", "toolCallId": "h1", "content": "done"},
        ],
    }
    em, events = emitter(history)
    with pytest.raises(UsageError) as err:
        em.tool_result("h1", "again", message_id="t9")
    assert err.value.rule == "TOOL-10"
    with pytest.raises(UsageError) as err:
        em.tool_result("h2", "late", message_id="t1")  # t1 already names a message
    assert err.value.rule == "EVT-8"
    events += em.tool_result("h2", "late", message_id="t2")
    events += em.finish()
    judge(events, history)


def test_malformed_result_content_is_refused_by_enforcement() -> None:
    em, _ = emitter()
    em.tool_start("c1", "lookup")
    em.tool_end("c1")
    with pytest.raises(UsageError) as err:
        em.tool_result("c1", {"not": "a list"}, message_id="t1")  # type: ignore[arg-type]
    assert err.value.rule == "TOOL-12"
    assert em.tool_result("c1", "fine", message_id="t1")  # nothing was recorded by the refusal


def test_a_handle_used_after_its_block_is_refused() -> None:
    async def agent(run: Run) -> None:
        async with run.tool_call("lookup") as call:
            pass
        with pytest.raises(UsageError) as err:
            await call.args("late")
        assert err.value.rule == "TOOL-20"

    judge(run_agent(agent))


# -- chunk lanes -----------------------------------------------------------------------


def test_an_event_that_would_close_a_live_chunk_stream_is_refused() -> None:
    async def agent(run: Run) -> None:
        async with run.message(chunked=True) as m:
            await m.delta("Half ")
            with pytest.raises(UsageError) as err:
                await run.custom("progress", 1)  # would close m's stream (CHUNK-11)
            assert err.value.rule == "CHUNK-11"
            with pytest.raises(UsageError) as err:
                await run.text("other")  # an explicit message in the same lane
            assert err.value.rule == "CHUNK-11"
            with pytest.raises(UsageError) as err:
                async with run.tool_call("f", chunked=True):  # a second chunk stream in the lane
                    pass
            assert err.value.rule == "CHUNK-11"
            await run.raw({"provider": "x"})  # stands aside: allowed
            await run.activity("progress", {"pct": 50})  # stands aside: allowed
            await m.delta("and half.")
        await run.custom("progress", 2)  # the stream ended with its block: fine now

    events = run_agent(agent)
    judge(events)
    texts = [e.get("delta") for e in events if e["type"] == "TEXT_MESSAGE_CHUNK"]
    assert "".join(t for t in texts if t) == "Half and half."


def test_naming_a_live_chunked_item_explicitly_is_refused() -> None:
    em, _ = emitter()
    em.tool_start("c1", "f", chunked=True)
    with pytest.raises(UsageError) as err:
        em.tool_result("c1", "x", message_id="t1")
    assert err.value.rule == "TOOL-10"  # the emitter's own rule comes first
    em.tool_end("c1")
    assert types(em.tool_result("c1", "x", message_id="t1")) == ["TOOL_CALL_RESULT"]


def test_subagent_lanes_are_separate_from_the_parents() -> None:
    async def agent(run: Run) -> None:
        async with run.message(chunked=True) as m:
            await m.delta("parent ")
            async with run.subagent("helper") as sub:
                await sub.state_delta([{"op": "add", "path": "/x", "value": 1}])  # its own lane
                async with sub.message(chunked=True) as sm:
                    await sm.delta("sub")
            await m.delta("continues")

    judge(run_agent(agent))


def test_a_chunked_tool_call_inside_an_explicit_message() -> None:
    async def agent(run: Run) -> None:
        async with run.message() as m:
            await m.delta("Let me look.")
            async with run.tool_call("search", parent_message_id=m.id, chunked=True) as c:
                await c.args("{}")
            await m.delta(" Done.")  # the call's block ended: its stream may close

    judge(run_agent(agent))


# The emitter asks its own Expander — the consumer's — which lanes an event closes
# (``Expander.closures``). The three tests below are cases an earlier hand-written
# copy of the closing rules got wrong: it filed every untagged event under the
# parent agent and let any event naming a stream's id end it.


@pytest.mark.parametrize("verify", [True, False])
def test_an_untagged_call_on_a_subagents_live_chunked_message_is_refused(verify: bool) -> None:
    em, events = emitter(verify=verify)
    events += em.subagent_start("s1", "helper")
    events += em.text_start("m1", owner="s1", chunked=True)
    events += em.text_content("m1", "Let me ")
    with pytest.raises(UsageError) as err:
        # untagged, but its message is s1's: a consumer files it in s1's lane (SUB-12)
        # and would end m1's stream there — splitting the message in two
        em.tool_start("c1", "f", parent_message_id="m1")
    assert err.value.rule == "CHUNK-11"
    assert "subagent 's1'" in str(err.value)
    # the refusal changed nothing: no call was made, the message goes on
    assert not em.is_open("tool", "c1") and em.call_name("c1") is None
    assert em.pending_tool_call_ids == []
    events += em.text_content("m1", "look.")
    events += em.text_end("m1")
    events += em.tool_start("c1", "f", parent_message_id="m1")  # m1's block ended: fine now
    events += em.tool_end("c1")
    events += em.subagent_finish("s1")
    events += em.finish()
    pipe = ConsumerPipeline(run_input=INPUT, strict=True)
    delivered = [e for ev in events for e in pipe.feed(ev)]
    assert types(delivered).count("TEXT_MESSAGE_START") == 1  # one message, not two halves
    judge(events)


@pytest.mark.parametrize("verify", [True, False])
def test_an_untagged_close_of_an_ended_subagents_call_leaves_the_parents_chunk_stream(
    verify: bool,
) -> None:
    em, events = emitter(verify=verify)
    events += em.subagent_start("s1", "helper")
    events += em.tool_start("c1", "f", owner="s1")
    events += em.tool_args("c1", '{"a":')
    em.abandon("tool", "c1")
    events += em.subagent_error("s1", "failed")
    events += em.text_start("m1", chunked=True)
    events += em.text_content("m1", "Half ")
    # s1 has ended, so the END is untagged (SUB-10); a consumer files it in the lane of
    # c1's opener, s1 — not the parent's, where m1 is still being written
    events += em.tool_end("c1")
    assert events[-1] == {"type": "TOOL_CALL_END", "toolCallId": "c1"}
    events += em.text_content("m1", "and half.")
    events += em.text_end("m1")
    events += em.finish()
    judge(events)


def test_a_span_does_not_end_another_lanes_chunk_stream_by_sharing_its_id() -> None:
    em, events = emitter()
    events += em.subagent_start("s1", "helper")
    events += em.text_start("x", owner="s1", chunked=True)
    events += em.text_content("x", "Half ")
    events += em.reasoning_start("x")  # a span's id is not a message id: s1's stream goes on
    events += em.text_content("x", "and half.")
    events += em.text_end("x")
    events += em.reasoning_end("x")
    events += em.subagent_finish("s1")
    events += em.finish()
    judge(events)


def test_naming_a_live_chunked_item_in_the_other_spelling_is_refused_as_mixing_them() -> None:
    em, _ = emitter()
    em.text_start("m1", chunked=True)
    em.text_content("m1", "Hal")
    # no public method sends this (text_end closes a chunked item silently): the rule
    # is reached through the emitter's single way out
    with pytest.raises(UsageError) as err:
        em._send({"type": "TEXT_MESSAGE_END", "messageId": "m1"})
    assert err.value.rule == "CHUNK-3"
    assert "names it explicitly" in str(err.value)
    assert em.is_open("text", "m1")
    assert types(em.text_content("m1", "f")) == ["TEXT_MESSAGE_CHUNK"]


def closures_agree(events: list[Any], run_input: Mapping[str, Any] | None = None) -> int:
    """``Expander.closures(ev)`` names exactly the lanes ``feed(ev)`` then closes, in
    order, and asking changes nothing. Returns how many streams were closed.

    Fed like the consumer pipeline feeds it (enforced events; the verifier answers
    ``owner_of``); stops quietly where the stream is refused.
    """
    ends = {
        "TEXT_MESSAGE_END": "text",
        "TOOL_CALL_END": "tool",
        "REASONING_MESSAGE_END": "reasoning",
    }
    enforce = Enforcer().event
    verifier = Verifier(history=(run_input or {}).get("messages") or ())
    expander = Expander(owner_of=verifier.owner_of)
    closed = 0
    for raw in events:
        try:
            ev, _ = enforce(raw)
        except ProtocolViolation:
            return closed
        if ev is None:
            continue
        before = list(expander.open_lanes.items())
        lanes = expander.closures(ev)
        assert list(expander.open_lanes.items()) == before, "closures() changed the lanes"
        expected = [(*expander.stream_in(lane), lane) for lane in lanes]  # type: ignore[misc]
        try:
            out = expander.feed(ev)
        except ProtocolViolation:
            return closed
        synthesized = (
            [e for e in out if e["type"] in ends] if ev["type"] in CHUNK_TYPES else out[:-1]
        )
        got = [
            (ends[e["type"]], e.get("messageId", e.get("toolCallId")), e.get("subagentRunId"))
            for e in synthesized
        ]
        assert got == expected, (ev, got, expected)
        closed += len(got)
        try:
            for e in out:
                verifier.feed(e)
        except ProtocolViolation:
            return closed
    return closed


@pytest.mark.timeout(900)  # passing takes seconds; shrinking a failure can take minutes
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(streams())
def test_the_lanes_closures_names_are_the_lanes_feed_closes(stream: GeneratedStream) -> None:
    closures_agree(stream.chunked)


@pytest.mark.parametrize("name", conformance.names())
def test_closures_agree_with_feed_on_the_conformance_streams(name: str) -> None:
    fixture = conformance.load(name)
    closures_agree(fixture["stream"], fixture.get("input"))


def test_closures_agree_with_feed_on_untagged_continuations() -> None:
    """The routes the generated streams do not take: untagged continuations (SUB-10),
    an untagged call on a subagent's message (SUB-12), ids shared across namespaces."""
    streams_: list[list[Event]] = []
    for verify in (True, False):
        em, events = emitter(verify=verify)
        events += em.subagent_start("s1", "helper")
        events += em.text_start("m1", owner="s1", chunked=True)
        events += em.text_content("m1", "a")
        events += em.reasoning_start("m1")  # the parent's span, sharing s1's message id
        events += em.text_start("p1", chunked=True)
        events += em.text_content("p1", "b")
        events += em.text_end("m1")
        events += em.tool_start("c1", "f", parent_message_id="m1")  # closes s1's lane
        events += em.tool_args("c1", "{}")  # untagged, s1's
        events += em.tool_end("c1")
        events += em.text_end("p1")
        events += em.reasoning_end("m1")  # closes p1's ended stream
        events += em.tool_start("c2", "g", owner="s1", chunked=True)
        events += em.tool_end("c2")
        events += em.tool_result("c2", "ok", message_id="r2", owner="s1")  # names c2's stream
        events += em.subagent_finish("s1")
        events += em.finish()
        judge(events)
        streams_.append(events)
    assert [closures_agree(events, INPUT) for events in streams_] == [3, 3]


# -- reasoning, steps, standalone events -----------------------------------------------


@pytest.mark.parametrize("chunked", [False, True])
def test_reasoning_is_a_span_around_a_reasoning_message(chunked: bool) -> None:
    async def agent(run: Run) -> None:
        async with run.step("think"), run.reasoning(chunked=chunked) as r:
            await r.delta("Considering ")
            await r.delta("options.")
        await run.text("Done.")

    events = run_agent(agent)
    kinds = types(events)
    assert kinds[1:3] == ["STEP_STARTED", "REASONING_START"]
    assert ("REASONING_MESSAGE_CHUNK" in kinds) is chunked
    judge(events)


def test_a_step_already_open_is_refused() -> None:
    async def agent(run: Run) -> None:
        async with run.step("plan"):
            with pytest.raises(UsageError) as err:
                async with run.step("plan"):
                    pass
            assert err.value.rule == "STEP-1"

    judge(run_agent(agent))


def test_state_custom_raw_activity_and_snapshots() -> None:
    async def agent(run: Run) -> None:
        await run.state_snapshot({"cart": []})
        await run.state_delta([{"op": "add", "path": "/cart/-", "value": "tea"}])
        await run.custom("vendor.progress", {"pct": 10})
        await run.raw({"id": "chatcmpl-1"}, source="openai")
        activity = await run.activity("search", {"query": "tea"})
        await run.activity_delta(activity, "search", [{"op": "add", "path": "/hits", "value": 3}])
        await run.messages_snapshot([{"id": "u1", "role": "user", "content": "Book me a table."}])

    judge(run_agent(agent))


def test_values_that_are_not_json_are_refused() -> None:
    em, _ = emitter()
    with pytest.raises(UsageError) as err:
        em.custom("x", {1, 2})
    assert err.value.rule == "TRANS-4"
    with pytest.raises(UsageError) as err:
        em.custom(3, "name must be a string")  # type: ignore[arg-type]
    assert err.value.rule == "PROC-2"
    em.custom("x", None)  # a required null is data (EVT-5)


# -- subagents ---------------------------------------------------------------------------


def test_subagent_events_carry_its_id_and_it_finishes_on_exit() -> None:
    async def agent(run: Run) -> None:
        async with run.subagent("researcher", subagent_run_id="s1", description="finds") as sub:
            assert sub.subagent_run_id == "s1"
            await sub.text("found it", message_id="m1")
            async with sub.tool_call("lookup", call_id="c1") as call:
                await call.args("{}")
            await sub.result("c1", "ok")
            async with sub.subagent("nested", subagent_run_id="s2") as inner:
                await inner.text("deep")
            sub.set_result({"n": 1})

    events = run_agent(agent)
    inside = events[
        2 : events.index(
            {
                "type": "SUBAGENT_STARTED",
                "subagentRunId": "s2",
                "name": "nested",
                "parentSubagentRunId": "s1",
            }
        )
    ]
    assert all(e.get("subagentRunId") == "s1" for e in inside)
    assert {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1", "result": {"n": 1}} in events
    judge(events)


def test_a_failing_subagent_reports_subagent_error_and_the_parent_may_continue() -> None:
    async def agent(run: Run) -> None:
        try:
            async with run.subagent("flaky", subagent_run_id="s1") as sub, sub.step("work"):
                raise ValueError("secret detail")
        except ValueError:
            pass
        await run.text("Recovered.")

    events = run_agent(agent)
    error = next(e for e in events if e["type"] == "SUBAGENT_ERROR")
    assert error["code"] == "ValueError" and "secret" not in error["message"]
    assert types(events)[-1] == "RUN_FINISHED"
    assert judge(events).runs[0].status == "success"


@pytest.mark.run_error("RuntimeError")
def test_a_subagent_failure_that_propagates_ends_the_run_with_run_error() -> None:
    async def agent(run: Run) -> None:
        async with run.subagent("flaky", subagent_run_id="s1") as sub:
            async with sub.tool_call("f", call_id="c1") as call:
                await call.args('{"a":')
                raise RuntimeError("model stream broke")

    events = run_agent(agent)
    assert types(events)[-3:] == ["TOOL_CALL_ARGS", "SUBAGENT_ERROR", "RUN_ERROR"]
    judge(events, run_error=True)


def test_a_failed_subagents_abandoned_call_is_closed_untagged_when_the_run_ends_cleanly() -> None:
    async def agent(run: Run) -> None:
        try:
            async with run.subagent("flaky", subagent_run_id="s1") as sub:
                async with sub.reasoning(span_id="sp1", message_id="rm1") as r:
                    await r.delta("hmm")
                    async with sub.tool_call("f", call_id="c1") as call:
                        await call.args('{"a":')
                        raise RuntimeError
        except RuntimeError:
            pass

    events = run_agent(agent)
    tail = events[[e["type"] for e in events].index("SUBAGENT_ERROR") :]
    assert tail[1:] == [
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},  # its owner ended: untagged (SUB-10)
        {"type": "REASONING_MESSAGE_END", "messageId": "rm1"},
        {"type": "REASONING_END", "messageId": "sp1"},
        {
            "type": "RUN_FINISHED",
            "threadId": "t1",
            "runId": "r1",
            "outcome": {"type": "success", "pendingToolCallIds": ["c1"]},
        },
    ]
    judge(events)


def test_a_scope_is_unusable_after_its_subagent_ended() -> None:
    async def agent(run: Run) -> None:
        async with run.subagent("x") as sub:
            pass
        with pytest.raises(UsageError):
            await sub.text("too late")

    judge(run_agent(agent))


# -- how a run ends ----------------------------------------------------------------------


def test_cancel_closes_everything_open_in_order_then_finishes_cancelled() -> None:
    async def agent(run: Run) -> None:
        async with run.step("work"), run.subagent("helper", subagent_run_id="s1") as sub:
            async with sub.message(message_id="m1") as m:
                await m.delta("partial")
                async with sub.tool_call("f", call_id="c1", parent_message_id="m1") as call:
                    await call.args('{"a": "cut of')
                    raise RunCancelled("user pressed stop")

    events = run_agent(agent)
    tail = types(events)[types(events).index("TOOL_CALL_ARGS") + 1 :]
    assert tail == [
        "TOOL_CALL_END",  # a call cut off mid-arguments closes like any other (RUN-6)
        "TEXT_MESSAGE_END",
        "SUBAGENT_ERROR",
        "STEP_FINISHED",
        "RUN_FINISHED",
    ]
    assert events[-1]["outcome"] == {"type": "cancelled"}
    result = judge(events)
    assert result.runs[0].status == "cancelled"


def test_run_cancel_method_passes_through_except_exception_handlers() -> None:
    async def agent(run: Run) -> None:
        async with run.message():
            try:
                run.cancel("budget exhausted")
            except Exception:  # an agent's broad handler must not swallow a stop
                pytest.fail("RunCancelled must not be an Exception")

    events = run_agent(agent)
    assert events[-1]["outcome"] == {"type": "cancelled"}
    judge(events)


def test_interrupt_ends_with_the_outcome_and_suspends_active_subagents() -> None:
    async def agent(run: Run) -> None:
        async with run.subagent("approver", subagent_run_id="s1") as sub:
            async with sub.tool_call("transfer", call_id="c1") as call:
                await call.args('{"amount":100}')
            sub.interrupt({"id": "i1", "reason": "approval", "toolCallId": "c1"})

    events = run_agent(agent)
    assert {
        "type": "SUBAGENT_FINISHED",
        "subagentRunId": "s1",
        "outcome": {"type": "suspended", "interruptIds": ["i1"]},
    } in events
    outcome = events[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    assert outcome["interrupts"] == [
        {"id": "i1", "reason": "approval", "toolCallId": "c1", "subagentRunId": "s1"}
    ]
    result = judge(events)
    assert result.runs[0].status == "interrupt" and result.runs[0].pending == ["c1"]


@pytest.mark.run_error("FE-3")
def test_interrupt_after_an_unanswered_frontend_call_is_refused() -> None:
    async def agent(run: Run) -> None:
        async with run.tool_call("confirm_booking"):
            pass
        run.interrupt({"reason": "approval"})

    events = run_agent(agent)
    assert events[-1] == {
        "type": "RUN_ERROR",
        "message": "the agent broke a protocol rule (FE-3)",
        "code": "UsageError",
    }
    judge(events, run_error=True)


def test_malformed_interrupts_are_refused_before_anything_is_closed() -> None:
    em, _ = emitter()
    em.text_start("m1")
    with pytest.raises(UsageError):
        em.interrupt([{"id": "i1"}])  # reason is required
    with pytest.raises(UsageError) as err:
        em.interrupt([{"id": "i1", "reason": "a"}, {"id": "i1", "reason": "b"}])
    assert err.value.rule == "INT-3"
    assert em.is_open("text", "m1")


@pytest.mark.run_error("KeyError")
def test_an_exception_becomes_run_error_and_everything_open_is_abandoned() -> None:
    async def agent(run: Run) -> None:
        async with run.step("work"), run.message(message_id="m1") as m:
            await m.delta("Calling")
            async with run.tool_call("f", call_id="c1", parent_message_id="m1") as call:
                await call.args('{"to": "ali')
                raise KeyError("api-key-1234")

    events = run_agent(agent)
    assert events[-1] == {
        "type": "RUN_ERROR",
        "message": "the agent failed (KeyError)",
        "code": "KeyError",
    }
    assert "TOOL_CALL_END" not in types(events)
    assert "TEXT_MESSAGE_END" not in types(events)
    pipe = ConsumerPipeline(run_input=INPUT, strict=True)
    for ev in events:
        pipe.feed(ev)
    result = pipe.close()
    assert result.completed and result.warnings == []
    assert result.runs[0].status == "error"
    assert not pipe.verifier.was_closed("tool", "c1"), "truncated arguments were declared complete"


@pytest.mark.run_error("ValueError")
def test_expose_errors_puts_the_exception_text_in_the_message() -> None:
    async def agent(run: Run) -> None:
        raise ValueError("bad city")

    events = asyncio.run(collect(agent, INPUT, expose_errors=True))
    assert events[-1]["message"] == "the agent failed (ValueError): bad city"


def test_an_abandoned_item_is_closed_if_the_run_still_ends_cleanly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def agent(run: Run) -> None:
        try:
            async with run.tool_call("f", call_id="c1") as call:
                await call.args('{"a":')
                raise TimeoutError
        except TimeoutError:
            pass
        await run.text("The tool timed out.")

    with caplog.at_level(logging.WARNING, logger="agui_tools.agent"):
        events = run_agent(agent)
    assert types(events)[-2:] == ["TOOL_CALL_END", "RUN_FINISHED"]
    assert events[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ["c1"]}
    assert "abandoned" in caplog.text
    judge(events)


@pytest.mark.run_error("STREAM-4")
def test_finishing_while_a_block_is_still_live_is_an_error_not_a_bad_stream() -> None:
    left_running: list[asyncio.Task[None]] = []

    async def agent(run: Run) -> None:
        started = asyncio.Event()

        async def stream() -> None:
            async with run.message() as m:
                started.set()
                await asyncio.sleep(3600)
                await m.delta("never")

        left_running.append(asyncio.create_task(stream()))
        await started.wait()  # and return with the message still open

    async def main() -> list[Event]:
        events = await collect(agent, INPUT)
        left_running[0].cancel()
        await asyncio.wait(left_running)
        return events

    events = asyncio.run(main())
    assert events[-1] == {
        "type": "RUN_ERROR",
        "message": "the agent broke a protocol rule (STREAM-4)",
        "code": "UsageError",
    }
    judge(events, run_error=True)


def test_a_cancelled_task_the_agent_awaited_ends_the_run_cancelled() -> None:
    async def agent(run: Run) -> None:
        task = asyncio.create_task(asyncio.sleep(3600))
        await asyncio.sleep(0)
        task.cancel()
        await task

    events = run_agent(agent)
    assert events[-1]["outcome"] == {"type": "cancelled"}
    judge(events)


def test_a_run_cancelled_mid_message_closes_it_without_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # how a resumable server's stop (RESUME-6) ends a run: the agent's task is
    # cancelled inside its block, then the run ends cancelled and closes what was cut
    async def agent(run: Run) -> None:
        async with run.message(message_id="m1") as m:
            await m.delta("half a sen")
            task = asyncio.create_task(asyncio.sleep(3600))
            await asyncio.sleep(0)
            task.cancel()
            await task

    with caplog.at_level(logging.WARNING, logger="agui_tools.agent"):
        events = run_agent(agent)
    assert types(events)[-2:] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert events[-1]["outcome"] == {"type": "cancelled"}
    assert caplog.text == "", "a cancelled run cuts what it interrupts by design"
    judge(events)


def test_cancelling_the_driver_emits_nothing_more() -> None:
    seen: list[str] = []

    async def agent(run: Run) -> None:
        async with run.message() as m:
            await m.delta("streaming")
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise

    async def main() -> list[Event]:
        channel = EventChannel(high_water=None)
        task = asyncio.create_task(drive(agent, INPUT, channel))
        while not any(b"TEXT_MESSAGE_CONTENT" in p for p in channel.take()):
            await channel.wait(None)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert channel.closed
        return [orjson.loads(p) for p in channel.take()]

    leftover = asyncio.run(main())
    assert seen == ["cancelled"]
    assert all(e["type"] not in ("RUN_FINISHED", "RUN_ERROR", "TEXT_MESSAGE_END") for e in leftover)


# -- the emitter's own contract --------------------------------------------------------------


def test_nothing_before_start_nothing_after_the_end_except_a_late_error() -> None:
    em = Emitter(INPUT)
    with pytest.raises(UsageError) as err:
        em.text_start("m1")
    assert err.value.rule == "RUN-1"
    events = em.start() + em.finish()
    with pytest.raises(UsageError) as err:
        em.custom("x", 1)
    assert err.value.rule == "RUN-12"
    events += em.error("flush failed")  # a late RUN_ERROR is allowed (RUN-12)
    with pytest.raises(UsageError):
        em.error("twice")
    pipe = ConsumerPipeline(run_input=INPUT, strict=True)
    for ev in events:
        pipe.feed(ev)
    assert pipe.close().runs[0].status == "error"


def test_run_error_may_open_a_stream() -> None:
    em = Emitter(INPUT)
    events = em.error("could not reach the model")
    judge(events, run_error=True)


def test_a_verifier_refusal_poisons_the_emitter_until_run_error() -> None:
    em, _ = emitter()
    em.text_start("m1")
    # bypass the emitter's own books to reach the verifier: a second start for m1
    em._open.clear()
    with pytest.raises(UsageError) as err:
        em.text_start("m1")
    assert err.value.rule in ("STREAM-2", "TEXT-8")
    with pytest.raises(UsageError):
        em.custom("x", 1)
    assert types(em.error("internal")) == ["RUN_ERROR"]


def test_verify_false_skips_judging_but_keeps_the_books() -> None:
    em, _ = emitter(verify=False)
    em.custom(3, "unchecked")  # type: ignore[arg-type]
    em.tool_start("c1", "confirm_booking")
    em.tool_end("c1")
    with pytest.raises(UsageError) as err:
        em.tool_result("c1", "x", message_id="t1")
    assert err.value.rule == "FE-2"
    assert em.finish()[-1]["outcome"]["pendingToolCallIds"] == ["c1"]


def test_a_run_from_the_input_declares_its_parent_run() -> None:
    em = Emitter({**INPUT, "parentRunId": "r0"})
    assert em.start()[0]["parentRunId"] == "r0"


# -- continuation checks ---------------------------------------------------------------------


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def test_continuation_with_a_dangling_call_is_rejected_naming_it() -> None:
    run_input = {
        **INPUT,
        "messages": [
            {"id": "a1", "role": "assistant", "toolCalls": [_call("c1"), _call("c2")]},
            {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "ok"},
        ],
    }
    with pytest.raises(ContinuationRejected) as err:
        check_continuation(run_input)
    assert isinstance(err.value, InputRejected)
    assert err.value.rule == "FE-8"
    assert err.value.tool_call_ids == ("c2",)
    assert err.value.to_json()["path"] == "/messages/0/toolCalls/1/id"
    check_continuation({**run_input, "resume": [{"interruptId": "i1", "status": "resolved"}]})


def test_continuation_with_a_tool_message_answering_nothing_is_rejected() -> None:
    run_input = {
        **INPUT,
        "messages": [{"id": "t1", "role": "tool", "toolCallId": "zz", "content": ""}],
    }
    with pytest.raises(ContinuationRejected) as err:
        check_continuation(run_input)
    assert err.value.rule == "EVT-9"
    assert err.value.to_json()["toolCallIds"] == ["zz"]
    assert err.value.to_json()["path"] == "/messages/0/toolCallId"


@pytest.mark.parametrize(
    ("history", "rule", "ids"),
    [
        (
            [
                {"id": "m", "role": "user", "content": "a"},
                {"id": "m", "role": "user", "content": "b"},
            ],
            "EVT-8",
            {"messageIds": ["m"]},
        ),
        (
            [
                {"id": "a1", "role": "assistant", "toolCalls": [_call("c1"), _call("c1")]},
                {"id": "t1", "role": "tool", "toolCallId": "c1", "content": ""},
            ],
            "EVT-9",
            {"toolCallIds": ["c1"]},
        ),
        (
            [
                {"id": "t1", "role": "tool", "toolCallId": "c1", "content": ""},
                {"id": "a1", "role": "assistant", "toolCalls": [_call("c1")]},
            ],
            "INPUT-5",
            {"toolCallIds": ["c1"]},
        ),
        (
            [
                {"id": "a1", "role": "assistant", "toolCalls": [_call("c1")]},
                {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "yes"},
                {"id": "t2", "role": "tool", "toolCallId": "c1", "content": "no"},
            ],
            "FE-8",
            {"toolCallIds": ["c1"]},
        ),
    ],
    ids=["message-id-twice", "call-id-twice", "answer-before-call", "two-answers"],
)
def test_continuation_with_conflicting_ids_or_answers_is_rejected_naming_them(
    history: list[dict[str, Any]], rule: str, ids: dict[str, list[str]]
) -> None:
    """EVT-8 (a messageId is unique in its thread), EVT-9 (an id identifies one call),
    INPUT-5 (the history is in order), FE-8 (one tool message per call) — resume entries
    change none of it."""
    for run_input in (
        {**INPUT, "messages": history},
        {**INPUT, "messages": history, "resume": [{"interruptId": "i1", "status": "resolved"}]},
    ):
        with pytest.raises(ContinuationRejected) as err:
            check_continuation(run_input)
        assert err.value.rule == rule
        assert {k: err.value.to_json()[k] for k in ids} == ids


# -- non-finite numbers and nesting: what orjson would change or refuse -------------------


@pytest.mark.parametrize("verify", [True, False])
@pytest.mark.parametrize(
    ("emit", "where"),
    [
        (lambda em: em.custom("x", float("nan")), "/value"),
        (lambda em: em.state_snapshot({"a": float("inf")}), "/snapshot/a"),
        (
            lambda em: em.state_delta([{"op": "add", "path": "/a", "value": -float("inf")}]),
            "/delta/0/value",
        ),
        (lambda em: em.raw({"v": [1, float("nan")]}), "/event/v/1"),
        (lambda em: em.finish(result={"score": float("nan")}), "/result/score"),
    ],
    ids=["custom", "snapshot", "delta", "raw", "result"],
)
def test_non_finite_numbers_are_refused_naming_the_path(
    emit: Callable[[Emitter], list[Event]], where: str, verify: bool
) -> None:
    """orjson writes NaN and ±Infinity as null: the consumer would get another value."""
    em, _ = emitter(verify=verify)
    with pytest.raises(UsageError) as err:
        emit(em)
    assert err.value.rule == "TRANS-4"
    assert f"at {where} is NaN or infinite" in str(err.value)
    assert em.finish()[-1]["type"] == "RUN_FINISHED"  # nothing was emitted; the run goes on


def test_text_deltas_are_never_walked_for_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hot path stays as it was: deltas are strings, nothing inspects them for numbers."""
    import agui_tools.agent._books as books_module

    walked: list[str] = []
    monkeypatch.setattr(books_module, "refuse_non_finite", lambda ev, _: walked.append(ev["type"]))
    em, _ = emitter()
    em.text_start("m1")
    em.text_content("m1", "hello")
    em.text_end("m1")
    em.tool_start("c1", "confirm_booking")
    em.tool_args("c1", "{}")
    em.tool_end("c1")
    assert walked == []
    em.custom("x", 1)
    assert walked == ["CUSTOM"]


def test_the_emitter_refuses_nesting_a_consumer_would_reject() -> None:
    """Past max_depth a consumer rejects the stream (LIMIT); the emitter says so first,
    rather than emitting it (or failing inside orjson past 254 levels)."""
    value: Any = 0
    for _ in range(200):
        value = [value]
    em, _ = emitter()
    with pytest.raises(UsageError) as err:
        em.custom("x", value)
    assert err.value.rule == "LIMIT" and "max_depth=128" in str(err.value)
    assert types(em.finish()) == ["RUN_FINISHED"]


# -- the layout ------------------------------------------------------------------------------


def test_the_producer_side_is_one_import_with_each_name_in_the_module_of_its_job() -> None:
    import agui_tools
    from agui_tools import agent as producer
    from agui_tools.agent import _channel as channel
    from agui_tools.agent import _emitter as emitter
    from agui_tools.agent import _history as continuation
    from agui_tools.agent import _receipts as receipts
    from agui_tools.agent import _run as run
    from agui_tools.agent import _runner as drive_module

    homes = {
        channel: ["EventChannel"],
        continuation: ["ContinuationRejected", "check_continuation"],
        drive_module: ["Agent", "collect", "drive"],
        emitter: ["Emitter"],
        receipts: ["Keyring", "ReceiptRejected", "verify_quorum", "verify_receipt"],
        run: [
            "MessageHandle",
            "ReasoningHandle",
            "Run",
            "RunCancelled",
            "RunInterrupted",
            "RunStop",
            "ToolCallHandle",
            "new_id",
        ],
    }
    assert sorted(n for names in homes.values() for n in names) == sorted(producer.__all__)
    for module, names in homes.items():
        for name in names:
            assert getattr(producer, name) is getattr(module, name), name
    for name in ("Run", "RunCancelled", "RunInterrupted"):
        assert getattr(agui_tools, name) is getattr(producer, name), name


# -- the channel's quiet alarm ------------------------------------------------------------------


def test_channel_wait_says_quiet_only_after_the_whole_timeout() -> None:
    async def main() -> tuple[bool, float, bool, bool]:
        loop = asyncio.get_running_loop()
        channel = EventChannel(high_water=None)
        started = loop.time()
        quiet = await channel.wait(0.05)
        waited = loop.time() - started
        # an event arriving before the timeout wakes the waiter with True
        loop.call_later(0.01, channel.push, [{"type": "CUSTOM", "name": "x", "value": 1}])
        woke = await channel.wait(5.0)
        channel.take()
        # events keep arriving more often than the timeout: never quiet, however long
        saw_quiet = False
        for _ in range(6):
            loop.call_later(0.02, channel.push, [{"type": "CUSTOM", "name": "y", "value": 2}])
            saw_quiet = saw_quiet or not await channel.wait(0.05)
            channel.take()
        return quiet, waited, woke, saw_quiet

    quiet, waited, woke, saw_quiet = asyncio.run(main())
    assert quiet is False and waited >= 0.049
    assert woke is True
    assert saw_quiet is False


def test_channel_alarm_rings_for_a_shorter_timeout_and_is_gone_once_closed() -> None:
    async def main() -> tuple[bool, float, bool]:
        loop = asyncio.get_running_loop()
        channel = EventChannel(high_water=None)
        loop.call_later(0.01, channel.push, [{"type": "CUSTOM", "name": "x", "value": 1}])
        assert await channel.wait(10.0)  # arms an alarm 10 s out
        channel.take()
        started = loop.time()
        quiet = await channel.wait(0.03)  # a shorter wait must not wait for that alarm
        waited = loop.time() - started
        channel.close()
        return quiet, waited, channel._alarm is None

    quiet, waited, disarmed = asyncio.run(main())
    assert quiet is False and waited < 5.0
    assert disarmed


def test_a_run_started_early_is_driven_to_the_same_stream() -> None:
    from agui_tools.agent._runner import start

    async def agent(run: Run) -> None:
        async with run.message() as m:
            await m.delta("hi")

    async def main(early: bool) -> list[Event]:
        channel = EventChannel(high_water=None)
        started = start(INPUT, channel) if early else None
        if early:  # queued before the agent's task exists
            assert [orjson.loads(p)["type"] for p in list(channel._payloads)] == ["RUN_STARTED"]
        await drive(agent, INPUT, channel, started=started)
        return [orjson.loads(p) for p in channel.take()]

    early = asyncio.run(main(True))
    assert [e["type"] for e in early] == [e["type"] for e in asyncio.run(main(False))]
    assert early[0]["type"] == "RUN_STARTED" and early[-1]["type"] == "RUN_FINISHED"
    judging.judge(early, INPUT)


@pytest.mark.run_error("KeyError")
def test_a_run_that_cannot_start_early_is_reported_by_drive() -> None:
    from agui_tools.agent._runner import start

    async def agent(run: Run) -> None:
        raise AssertionError("never runs")

    async def main() -> list[Event]:
        channel = EventChannel(high_water=None)
        bad = {"threadId": "t"}  # no runId: no emitter can be made
        started = start(bad, channel)
        assert started is None and not channel.has_events
        await drive(agent, bad, channel, started=started)
        return [orjson.loads(p) for p in channel.take()]

    events = asyncio.run(main())
    assert [e["type"] for e in events] == ["RUN_ERROR"]
    assert events[0]["code"] == "InternalError"
