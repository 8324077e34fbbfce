"""The interop scenarios: what an agent sends for each, as wire events.

Shared by every interop direction — the server built only with the official
Python package, our own server, and the official TypeScript client's harness —
so each peer is judged on the same streams. A scenario is a function of the
run input (it reads the history to tell a first run from a continuation) that
returns the events of one run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Event = dict[str, Any]
Scenario = Callable[[Mapping[str, Any]], list[Event]]

FRONTEND_TOOLS: list[dict[str, Any]] = [
    {
        "name": "confirm_order",
        "description": "Ask the user to confirm an order.",
        "parameters": {
            "type": "object",
            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
            "required": ["sku", "qty"],
        },
    },
    {
        "name": "show_chart",
        "description": "Render a chart in the UI.",
        "parameters": {"type": "object", "properties": {"series": {"type": "array"}}},
    },
]


def _ids(inp: Mapping[str, Any]) -> dict[str, str]:
    return {"threadId": inp["threadId"], "runId": inp["runId"]}


def _answers(inp: Mapping[str, Any]) -> dict[str, Any]:
    return {
        m["toolCallId"]: m["content"] for m in inp.get("messages", []) if m.get("role") == "tool"
    }


def _text(mid: str, text: str, **extra: Any) -> list[Event]:
    return [
        {"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant", **extra},
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": mid,
            "delta": text[: len(text) // 2],
            **extra,
        },
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": mid,
            "delta": text[len(text) // 2 :],
            **extra,
        },
        {"type": "TEXT_MESSAGE_END", "messageId": mid, **extra},
    ]


def _call(cid: str, name: str, args: str, parent: str, **extra: Any) -> list[Event]:
    return [
        {
            "type": "TOOL_CALL_START",
            "toolCallId": cid,
            "toolCallName": name,
            "parentMessageId": parent,
            **extra,
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": args[:5], **extra},
        {"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": args[5:], **extra},
        {"type": "TOOL_CALL_END", "toolCallId": cid, **extra},
    ]


def text(inp: Mapping[str, Any]) -> list[Event]:
    rid = inp["runId"]
    return [
        {"type": "RUN_STARTED", **_ids(inp)},
        *_text(f"{rid}-m1", "Hello from the agent."),
        {"type": "RUN_FINISHED", **_ids(inp)},
    ]


def frontend_call(inp: Mapping[str, Any]) -> list[Event]:
    rid, answers = inp["runId"], _answers(inp)
    out: list[Event] = [{"type": "RUN_STARTED", **_ids(inp)}]
    if "fe-c1" in answers:
        out += _text(f"{rid}-m2", f"The user answered: {answers['fe-c1']}")
        out.append({"type": "RUN_FINISHED", **_ids(inp)})
        return out
    out += _text(f"{rid}-m1", "I need your confirmation.")
    out += _call("fe-c1", "confirm_order", '{"sku":"W-1","qty":2}', f"{rid}-m1")
    out.append(
        {
            "type": "RUN_FINISHED",
            **_ids(inp),
            "outcome": {"type": "success", "pendingToolCallIds": ["fe-c1"]},
        }
    )
    return out


def parallel_calls(inp: Mapping[str, Any]) -> list[Event]:
    rid, answers = inp["runId"], _answers(inp)
    out: list[Event] = [{"type": "RUN_STARTED", **_ids(inp)}]
    if "par-c1" in answers and "par-c2" in answers:
        out += _text(f"{rid}-m2", "Both answered.")
        out.append({"type": "RUN_FINISHED", **_ids(inp)})
        return out
    out += _text(f"{rid}-m1", "Two things at once.")
    # interleaved: both calls open at once
    out += [
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "par-c1",
            "toolCallName": "confirm_order",
            "parentMessageId": f"{rid}-m1",
        },
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "par-c2",
            "toolCallName": "show_chart",
            "parentMessageId": f"{rid}-m1",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "par-c1", "delta": '{"sku":"A",'},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "par-c2", "delta": '{"series":[1,2]}'},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "par-c1", "delta": '"qty":1}'},
        {"type": "TOOL_CALL_END", "toolCallId": "par-c2"},
        {"type": "TOOL_CALL_END", "toolCallId": "par-c1"},
    ]
    out.append({"type": "RUN_FINISHED", **_ids(inp)})
    return out


def agent_side_results(inp: Mapping[str, Any]) -> list[Event]:
    rid = inp["runId"]
    return [
        {"type": "RUN_STARTED", **_ids(inp)},
        *_text(f"{rid}-m1", "Searching."),
        *_call(f"{rid}-s1", "web_search", '{"q":"ag-ui"}', f"{rid}-m1"),
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": f"{rid}-r1",
            "toolCallId": f"{rid}-s1",
            "content": "3 results",
        },
        *_call(f"{rid}-s2", "read_page", '{"url":"https://example.com"}', f"{rid}-m1"),
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": f"{rid}-r2",
            "toolCallId": f"{rid}-s2",
            "content": [{"type": "text", "text": "page text"}],
        },
        *_text(f"{rid}-m2", "Found it."),
        {"type": "RUN_FINISHED", **_ids(inp)},
    ]


def chunked(inp: Mapping[str, Any]) -> list[Event]:
    rid = inp["runId"]
    return [
        {"type": "RUN_STARTED", **_ids(inp)},
        {
            "type": "TEXT_MESSAGE_CHUNK",
            "messageId": f"{rid}-m1",
            "role": "assistant",
            "delta": "Chunks ",
        },
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "expand."},
        {
            "type": "TOOL_CALL_CHUNK",
            "toolCallId": f"{rid}-k1",
            "toolCallName": "lookup",
            "parentMessageId": f"{rid}-m1",
            "delta": '{"q":',
        },
        {"type": "TOOL_CALL_CHUNK", "delta": '"x"}'},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": f"{rid}-r1",
            "toolCallId": f"{rid}-k1",
            "content": "found",
        },
        {"type": "RUN_FINISHED", **_ids(inp)},
    ]


def reopened_call(inp: Mapping[str, Any]) -> list[Event]:
    rid = inp["runId"]
    cid = f"{rid}-c1"
    return [
        {"type": "RUN_STARTED", **_ids(inp)},
        *_text(f"{rid}-m1", "Working."),
        {
            "type": "TOOL_CALL_START",
            "toolCallId": cid,
            "toolCallName": "lookup",
            "parentMessageId": f"{rid}-m1",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": '{"q":'},
        {"type": "TOOL_CALL_END", "toolCallId": cid},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": cid,
            "toolCallName": "lookup",
            "parentMessageId": f"{rid}-m1",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": '"reopened"}'},
        {"type": "TOOL_CALL_END", "toolCallId": cid},
        {"type": "TOOL_CALL_RESULT", "messageId": f"{rid}-r1", "toolCallId": cid, "content": "ok"},
        {"type": "RUN_FINISHED", **_ids(inp)},
    ]


def subagents(inp: Mapping[str, Any]) -> list[Event]:
    rid = inp["runId"]
    s1 = f"{rid}-sub1"
    return [
        {"type": "RUN_STARTED", **_ids(inp)},
        {"type": "SUBAGENT_STARTED", "subagentRunId": s1, "name": "researcher"},
        {"type": "STEP_STARTED", "stepName": "research", "subagentRunId": s1},
        *_text(f"{rid}-m1", "Subagent speaking.", subagentRunId=s1),
        *_call(f"{rid}-c1", "lookup", '{"q":"sub"}', f"{rid}-m1", subagentRunId=s1),
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": f"{rid}-r1",
            "toolCallId": f"{rid}-c1",
            "content": "sub result",
            "subagentRunId": s1,
        },
        {"type": "STEP_FINISHED", "stepName": "research", "subagentRunId": s1},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": s1},
        *_text(f"{rid}-m2", "Parent again."),
        {"type": "RUN_FINISHED", **_ids(inp)},
    ]


def state_deltas(inp: Mapping[str, Any]) -> list[Event]:
    return [
        {"type": "RUN_STARTED", **_ids(inp)},
        {"type": "STATE_SNAPSHOT", "snapshot": {"items": [], "status": "draft"}},
        {
            "type": "STATE_DELTA",
            "delta": [{"op": "add", "path": "/items/0", "value": {"sku": "W-1"}}],
        },
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/status", "value": "ready"}]},
        {"type": "RUN_FINISHED", **_ids(inp)},
    ]


SCENARIOS: dict[str, Scenario] = {
    "text": text,
    "frontend_call": frontend_call,
    "parallel_calls": parallel_calls,
    "agent_side_results": agent_side_results,
    "chunked": chunked,
    "reopened_call": reopened_call,
    "subagents": subagents,
    "state_deltas": state_deltas,
}


def scenario_of(inp: Mapping[str, Any]) -> str:
    props = inp.get("forwardedProps")
    name = props.get("scenario") if isinstance(props, dict) else None
    return name if name in SCENARIOS else "text"
