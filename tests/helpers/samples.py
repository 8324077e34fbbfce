"""Hand-written wire events covering every event type, message role, content
part, part source and outcome of the schema — the round-trip corpus.

``test_samples_cover_the_schema`` fails when the schema grows a member this
list does not exercise, so the corpus cannot quietly fall behind.
"""

from __future__ import annotations

from typing import Any

PNG = "iVBORw0KGgo="

PARTS: list[dict[str, Any]] = [
    {"type": "text", "text": "Invoice attached.", "id": "p1", "metadata": {"k": 1}},
    {"type": "image", "source": {"type": "data", "value": PNG, "mimeType": "image/png"}},
    {
        "type": "audio",
        "source": {"type": "url", "value": "https://e.x/a.mp3", "mimeType": "audio/mpeg"},
    },
    {
        "type": "video",
        "source": {"type": "url", "value": "https://e.x/v.mp4"},
        "metadata": {"t": "v"},
    },
    {
        "type": "document",
        "id": "doc-1",
        "source": {
            "type": "file",
            "value": "file-abc",
            "provider": "openai",
            "mimeType": "application/pdf",
        },
        "metadata": {"title": "INV-2291"},
    },
]

MESSAGES: list[dict[str, Any]] = [
    {"id": "dev-1", "role": "developer", "content": "Be terse.", "name": "ops"},
    {"id": "sys-1", "role": "system", "content": "You are helpful.", "metadata": {"v": None}},
    {"id": "u-1", "role": "user", "content": "Find invoices."},
    {"id": "u-2", "role": "user", "content": PARTS, "subagentRunId": "s-1"},
    {
        "id": "a-1",
        "role": "assistant",
        "content": "Searching.",
        "encryptedValue": "opaque",
        "encryptedValueType": "acme.sig",
        "toolCalls": [
            {
                "id": "c-1",
                "type": "function",
                "function": {"name": "search", "arguments": '{"q": "inv'},
                "encryptedValue": "e1",
                "metadata": {"finish": "tool_calls"},
            }
        ],
    },
    {"id": "a-2", "role": "assistant"},
    {"id": "t-1", "role": "tool", "toolCallId": "c-1", "content": "3 results"},
    {"id": "t-2", "role": "tool", "toolCallId": "c-2", "content": PARTS[:2], "error": "partial"},
    {
        "id": "act-1",
        "role": "activity",
        "activityType": "web_search",
        "content": {"q": "x", "n": None},
    },
    {"id": "r-1", "role": "reasoning", "content": "thinking", "encryptedValue": "x"},
]

RUN_INPUT: dict[str, Any] = {
    "threadId": "thread-1",
    "runId": "run-1",
    "parentRunId": "run-0",
    "protocolVersion": "1.1",
    "state": {"draft": [1, None]},
    "messages": MESSAGES,
    "tools": [
        {
            "name": "confirm_order",
            "description": "Ask the user to confirm.",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
            "metadata": {"sideEffects": True},
        },
        {"name": "noop", "description": "No parameters."},
    ],
    "context": [{"description": "tz", "value": "UTC"}],
    "forwardedProps": {"any": ["json", None]},
    "resume": [
        {
            "interruptId": "i-1",
            "status": "resolved",
            "payload": {"ok": True},
            "metadata": {"sig": "x"},
        },
        {"interruptId": "i-2", "status": "cancelled"},
    ],
}

USAGE = [
    {
        "provider": "openai",
        "model": "gpt",
        "inputTokens": 100,
        "outputTokens": 20,
        "totalTokens": 120,
        "reasoningTokens": 5,
        "cachedInputTokens": 80,
        "cacheWriteInputTokens": 0,
    }
]

EVENTS: list[dict[str, Any]] = [
    {
        "type": "RUN_STARTED",
        "threadId": "thread-1",
        "runId": "run-1",
        "protocolVersion": "1.1",
        "parentRunId": "run-0",
        "input": RUN_INPUT,
        "timestamp": 1700000000000,
        "metadata": {"m": 1},
    },
    {
        "type": "TEXT_MESSAGE_START",
        "messageId": "m-1",
        "role": "assistant",
        "name": "bot",
        "subagentRunId": "s-1",
    },
    {
        "type": "TEXT_MESSAGE_CONTENT",
        "messageId": "m-1",
        "delta": "",
        "rawEvent": {"provider": "x"},
    },
    {"type": "TEXT_MESSAGE_END", "messageId": "m-1", "metadata": {"finish": "stop"}},
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m-2", "role": "user", "delta": "hi", "name": "n"},
    {"type": "TEXT_MESSAGE_CHUNK"},
    {
        "type": "TOOL_CALL_START",
        "toolCallId": "c-1",
        "toolCallName": "search",
        "parentMessageId": "m-1",
    },
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c-1", "delta": '{"q":'},
    {"type": "TOOL_CALL_END", "toolCallId": "c-1", "subagentRunId": "s-1"},
    {
        "type": "TOOL_CALL_CHUNK",
        "toolCallId": "c-2",
        "toolCallName": "f",
        "parentMessageId": "m-1",
        "delta": "{}",
    },
    {"type": "TOOL_CALL_CHUNK", "metadata": {"finish": "tool_calls"}},
    {
        "type": "TOOL_CALL_RESULT",
        "messageId": "t-9",
        "toolCallId": "c-1",
        "content": "3 results",
        "role": "tool",
    },
    {"type": "TOOL_CALL_RESULT", "messageId": "t-10", "toolCallId": "c-2", "content": PARTS},
    {"type": "STATE_SNAPSHOT", "snapshot": None},
    {"type": "STATE_SNAPSHOT", "snapshot": ["only-this"]},
    {
        "type": "STATE_DELTA",
        "delta": [
            {"op": "add", "path": "/a", "value": None},
            {"op": "remove", "path": "/b", "value": "leftover"},
            {"op": "replace", "path": "/c~1d", "value": 3},
            {"op": "move", "from": "/a", "path": "/e"},
            {"op": "copy", "from": "/e", "path": "/f", "x-vendor": 1},
            {"op": "test", "path": "", "value": {}},
        ],
    },
    {"type": "MESSAGES_SNAPSHOT", "messages": MESSAGES},
    {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": "act-1",
        "activityType": "web_search",
        "content": {"q": "x"},
        "replace": False,
    },
    {
        "type": "ACTIVITY_DELTA",
        "messageId": "act-1",
        "activityType": "web_search",
        "patch": [{"op": "replace", "path": "/q", "value": "y"}],
    },
    {"type": "RAW", "event": {"anything": [1, None]}, "source": "openai"},
    {"type": "RAW", "event": None},
    {"type": "CUSTOM", "name": "acme.cart", "value": None},
    {
        "type": "RUN_FINISHED",
        "threadId": "thread-1",
        "runId": "run-1",
        "result": {"r": 1},
        "usage": USAGE,
    },
    {
        "type": "RUN_FINISHED",
        "threadId": "t",
        "runId": "r",
        "outcome": {"type": "success", "pendingToolCallIds": ["c-1", "c-2"]},
    },
    {
        "type": "RUN_FINISHED",
        "threadId": "t",
        "runId": "r",
        "outcome": {
            "type": "interrupt",
            "interrupts": [
                {
                    "id": "i-1",
                    "reason": "approval",
                    "message": "OK?",
                    "toolCallId": "c-1",
                    "responseSchema": {"type": "object"},
                    "expiresAt": "2027-01-01T00:00:00Z",
                    "metadata": {"a": 1},
                    "subagentRunId": "s-1",
                }
            ],
        },
    },
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "cancelled"}},
    {"type": "RUN_ERROR", "message": "boom", "code": "E42", "usage": USAGE},
    {"type": "STEP_STARTED", "stepName": "plan", "subagentRunId": "s-1"},
    {"type": "STEP_FINISHED", "stepName": "plan"},
    {"type": "REASONING_START", "messageId": "rs-1"},
    {"type": "REASONING_MESSAGE_START", "messageId": "rm-1", "role": "reasoning"},
    {"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm-1", "delta": "hmm"},
    {"type": "REASONING_MESSAGE_END", "messageId": "rm-1"},
    {"type": "REASONING_MESSAGE_CHUNK", "messageId": "rm-2", "delta": "x"},
    {"type": "REASONING_END", "messageId": "rs-1"},
    {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": "tool-call",
        "entityId": "c-1",
        "encryptedValue": "enc",
        "encryptedValueType": "anthropic.redacted_thinking",
    },
    {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": "message",
        "entityId": "m-1",
        "encryptedValue": "enc",
    },
    {
        "type": "SUBAGENT_STARTED",
        "subagentRunId": "s-2",
        "name": "researcher",
        "description": "d",
        "parentSubagentRunId": "s-1",
        "parentToolCallId": "c-1",
        "parentMessageId": "m-1",
    },
    {
        "type": "SUBAGENT_FINISHED",
        "subagentRunId": "s-2",
        "result": "done",
        "outcome": {"type": "success"},
    },
    {
        "type": "SUBAGENT_FINISHED",
        "subagentRunId": "s-3",
        "outcome": {"type": "suspended", "interruptIds": ["i-1"]},
    },
    {"type": "SUBAGENT_ERROR", "subagentRunId": "s-4", "message": "failed", "code": "X"},
]
