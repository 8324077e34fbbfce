"""The binary binding's canonical corpus: events, and the official encoder's bytes for them.

``tests/data/proto/corpus.json`` pins, for every event here, the bytes
``@ag-ui/proto`` 1.0.0 writes and the event its decoder reads back from them
(http-protobuf: "a corpus of canonical events pins the encoded bytes, and every
first-party encoder MUST reproduce the corpus byte for byte"). Regenerate after
changing the events (needs Node and ``interop/node_modules``)::

    .venv/bin/python -m tests.helpers.gen_proto_corpus

``tests/interop/test_proto.py`` checks the file against the live package, so a
stale corpus fails there; ``tests/wire/test_proto_codec.py`` checks our codec
against the file without Node.

Coverage: every event type, every optional field present and absent, open
payloads (state, metadata, ``rawEvent``, results, an unknown outcome type), JSON
``null`` where it is a value and where it stands for absence, object keys that
JavaScript orders first, unicode, timestamps and token counts at ±(2^53 − 1),
and every content part and source kind.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "proto" / "corpus.json"

S = 9007199254740991
C: list[dict[str, Any]] = []


def add(name: str, ev: dict[str, Any]) -> None:
    C.append({"name": name, "event": ev})


meta = {"b": 1, "a": {"10": True, "2": None, "x": [1, -2.5, "ü"]}, "7": "seven"}
add("text-start-minimal", {"type": "TEXT_MESSAGE_START", "messageId": "m1"})
add(
    "text-start-full",
    {
        "type": "TEXT_MESSAGE_START",
        "messageId": "m1",
        "role": "assistant",
        "name": "bot",
        "subagentRunId": "s1",
        "timestamp": 1700000000000,
        "metadata": meta,
        "rawEvent": {"provider": "x", "n": [1, 2]},
    },
)
add(
    "text-content-unicode",
    {
        "type": "TEXT_MESSAGE_CONTENT",
        "messageId": "m1",
        "delta": 'héllo 👋 — 日本語 \u0000 \n\t"quoted"',
    },
)
add("text-content-empty-delta", {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": ""})
add("text-end-max-timestamp", {"type": "TEXT_MESSAGE_END", "messageId": "m1", "timestamp": S})
add(
    "text-end-min-timestamp",
    {"type": "TEXT_MESSAGE_END", "messageId": "m1", "timestamp": -S, "subagentRunId": "s1"},
)
add("text-end-zero-timestamp", {"type": "TEXT_MESSAGE_END", "messageId": "m1", "timestamp": 0})
add("text-chunk-minimal", {"type": "TEXT_MESSAGE_CHUNK"})
add(
    "text-chunk-full",
    {
        "type": "TEXT_MESSAGE_CHUNK",
        "messageId": "m2",
        "role": "user",
        "delta": "",
        "name": "n",
        "subagentRunId": "s",
    },
)
add("tool-start", {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "search"})
add(
    "tool-start-full",
    {
        "type": "TOOL_CALL_START",
        "toolCallId": "c1",
        "toolCallName": "search",
        "parentMessageId": "m1",
        "subagentRunId": "s1",
        "timestamp": -1,
    },
)
add("tool-args", {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"q": "ñ"}'})
add(
    "tool-args-empty",
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "", "subagentRunId": "s1"},
)
add("tool-end", {"type": "TOOL_CALL_END", "toolCallId": "c1"})
add("tool-chunk-minimal", {"type": "TOOL_CALL_CHUNK"})
add(
    "tool-chunk-full",
    {
        "type": "TOOL_CALL_CHUNK",
        "toolCallId": "c2",
        "toolCallName": "f",
        "parentMessageId": "m",
        "delta": "{",
        "subagentRunId": "s",
    },
)
add(
    "tool-result-string",
    {"type": "TOOL_CALL_RESULT", "messageId": "r1", "toolCallId": "c1", "content": "42"},
)
add(
    "tool-result-empty-string",
    {
        "type": "TOOL_CALL_RESULT",
        "messageId": "r1",
        "toolCallId": "c1",
        "content": "",
        "role": "tool",
    },
)
add(
    "tool-result-parts",
    {
        "type": "TOOL_CALL_RESULT",
        "messageId": "r1",
        "toolCallId": "c1",
        "subagentRunId": "s1",
        "content": [
            {"type": "text", "text": "see image"},
            {"type": "text", "text": "", "id": "p2", "metadata": {"k": "v"}},
            {"type": "image", "source": {"type": "data", "value": "aGk=", "mimeType": "image/png"}},
            {
                "type": "audio",
                "id": "a1",
                "source": {"type": "url", "value": "https://e.x/a.mp3"},
                "metadata": [1, 2],
            },
            {
                "type": "video",
                "source": {"type": "url", "value": "https://e.x/v", "mimeType": "video/mp4"},
            },
            {
                "type": "document",
                "source": {
                    "type": "file",
                    "value": "file-1",
                    "provider": "openai",
                    "mimeType": "application/pdf",
                },
            },
            {"type": "document", "source": {"type": "file", "value": "file-2"}},
        ],
    },
)
add(
    "tool-result-empty-parts",
    {"type": "TOOL_CALL_RESULT", "messageId": "r1", "toolCallId": "c1", "content": []},
)
add(
    "state-snapshot-object",
    {
        "type": "STATE_SNAPSHOT",
        "snapshot": {
            "z": 1,
            "a": [1, 2.5, None, True, False, "x", {"2": 1, "1": 2, "z": 3}],
            "10": "ten",
            "01": "not an index",
            "": "empty key",
            "4294967295": "not an index either",
            "4294967294": "index",
        },
    },
)
add(
    "state-snapshot-scalars",
    {"type": "STATE_SNAPSHOT", "snapshot": [S, -S, 0, -0.5, 1e300, "", []], "subagentRunId": "s"},
)
add("state-snapshot-string", {"type": "STATE_SNAPSHOT", "snapshot": "just a string"})
add(
    "state-delta",
    {
        "type": "STATE_DELTA",
        "delta": [
            {"op": "add", "path": "/a", "value": 1},
            {"op": "remove", "path": "/b"},
            {"op": "replace", "path": "/c", "value": {"d": [None]}},
            {"op": "move", "from": "/a", "path": "/e"},
            {"op": "copy", "from": "/e", "path": "/f"},
            {"op": "test", "path": "/f", "value": None},
        ],
    },
)
add("state-delta-empty", {"type": "STATE_DELTA", "delta": []})
add(
    "messages-snapshot",
    {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            {"id": "d1", "role": "developer", "content": "dev"},
            {"id": "s1", "role": "system", "content": "sys", "name": "n"},
            {"id": "u1", "role": "user", "content": "hi"},
            {
                "id": "u2",
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image", "source": {"type": "url", "value": "https://e.x/i.png"}},
                ],
            },
            {
                "id": "a1",
                "role": "assistant",
                "content": "calling",
                "toolCalls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"q":1}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "f", "arguments": ""},
                        "metadata": {"m": 1},
                        "encryptedValue": "enc",
                    },
                ],
                "metadata": {"x": "y"},
                "subagentRunId": "s1",
                "encryptedValue": "ev",
            },
            {"id": "a2", "role": "assistant"},
            {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "result"},
            {
                "id": "t2",
                "role": "tool",
                "toolCallId": "c2",
                "content": [{"type": "text", "text": "part"}],
                "error": "boom",
            },
            {
                "id": "act1",
                "role": "activity",
                "activityType": "plan",
                "content": {"steps": [1, 2], "3": "x"},
            },
            {"id": "r1", "role": "reasoning", "content": "thinking", "encryptedValue": "sig"},
        ],
    },
)
add("messages-snapshot-empty", {"type": "MESSAGES_SNAPSHOT", "messages": []})
add(
    "activity-snapshot",
    {"type": "ACTIVITY_SNAPSHOT", "messageId": "act1", "activityType": "plan", "content": {"a": 1}},
)
add(
    "activity-snapshot-full",
    {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": "act1",
        "activityType": "plan",
        "content": {},
        "replace": False,
        "subagentRunId": "s",
    },
)
add(
    "activity-delta",
    {
        "type": "ACTIVITY_DELTA",
        "messageId": "act1",
        "activityType": "plan",
        "patch": [{"op": "add", "path": "/b", "value": [1]}],
        "subagentRunId": "s",
    },
)
add("raw", {"type": "RAW", "event": {"provider": "openai", "id": 5}})
add(
    "raw-full",
    {"type": "RAW", "event": "text", "source": "openai", "subagentRunId": "s", "rawEvent": None},
)
add("custom", {"type": "CUSTOM", "name": "x", "value": {"k": [True]}})
add("custom-no-value", {"type": "CUSTOM", "name": "x", "subagentRunId": "s"})
add("run-started-minimal", {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"})
add(
    "run-started-full",
    {
        "type": "RUN_STARTED",
        "threadId": "t1",
        "runId": "r1",
        "parentRunId": "r0",
        "protocolVersion": "1.0",
        "input": {
            "threadId": "t1",
            "runId": "r1",
            "protocolVersion": "1.0",
            "parentRunId": "r0",
            "state": {"s": 1},
            "messages": [
                {"id": "u1", "role": "user", "content": "hi"},
                {"id": "u2", "role": "user", "content": [{"type": "text", "text": "x"}]},
            ],
            "tools": [
                {
                    "name": "search",
                    "description": "Search",
                    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
                    "metadata": {"v": 1},
                }
            ],
            "context": [{"description": "d", "value": "v"}],
            "forwardedProps": {"fp": True},
            "resume": [
                {
                    "interruptId": "i1",
                    "status": "resolved",
                    "payload": {"ok": True},
                    "metadata": {"m": 1},
                }
            ],
        },
    },
)
add(
    "run-started-input-minimal",
    {
        "type": "RUN_STARTED",
        "threadId": "t1",
        "runId": "r1",
        "input": {"threadId": "t1", "runId": "r1", "messages": []},
    },
)
add("run-finished-plain", {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"})
add(
    "run-finished-result",
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1", "result": {"answer": 42}},
)
add(
    "run-finished-success",
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1", "outcome": {"type": "success"}},
)
add(
    "run-finished-success-pending",
    {
        "type": "RUN_FINISHED",
        "threadId": "t1",
        "runId": "r1",
        "outcome": {"type": "success", "pendingToolCallIds": ["c1", "c2"]},
    },
)
add(
    "run-finished-interrupt",
    {
        "type": "RUN_FINISHED",
        "threadId": "t1",
        "runId": "r1",
        "outcome": {
            "type": "interrupt",
            "interrupts": [
                {
                    "id": "i1",
                    "reason": "tool_approval",
                    "message": "ok?",
                    "toolCallId": "c1",
                    "responseSchema": {"type": "object"},
                    "expiresAt": "2030-01-01T00:00:00Z",
                    "metadata": {"m": 1},
                    "subagentRunId": "s",
                },
                {"id": "i2", "reason": "input"},
            ],
        },
    },
)
add(
    "run-finished-cancelled",
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1", "outcome": {"type": "cancelled"}},
)
add(
    "run-finished-unknown-outcome",
    {
        "type": "RUN_FINISHED",
        "threadId": "t1",
        "runId": "r1",
        "outcome": {"type": "handed_off", "to": "agent-2"},
    },
)
add(
    "run-finished-usage",
    {
        "type": "RUN_FINISHED",
        "threadId": "t1",
        "runId": "r1",
        "usage": [
            {
                "provider": "openai",
                "model": "gpt",
                "inputTokens": S,
                "outputTokens": 0,
                "totalTokens": S,
                "reasoningTokens": 1,
                "cachedInputTokens": 2,
                "cacheWriteInputTokens": 3,
            },
            {"model": "m2"},
        ],
    },
)
add("run-error", {"type": "RUN_ERROR", "message": "boom"})
add(
    "run-error-full",
    {
        "type": "RUN_ERROR",
        "message": "",
        "code": "E42",
        "usage": [{"inputTokens": 5}],
        "timestamp": 12,
    },
)
add("step-started", {"type": "STEP_STARTED", "stepName": "plan"})
add("step-finished", {"type": "STEP_FINISHED", "stepName": "plan", "subagentRunId": "s"})
add("reasoning-start", {"type": "REASONING_START", "messageId": "rm1"})
add(
    "reasoning-message-start",
    {
        "type": "REASONING_MESSAGE_START",
        "messageId": "rm1",
        "role": "reasoning",
        "subagentRunId": "s",
    },
)
add(
    "reasoning-message-content",
    {"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm1", "delta": "hmm 🤔"},
)
add("reasoning-message-end", {"type": "REASONING_MESSAGE_END", "messageId": "rm1"})
add(
    "reasoning-message-chunk", {"type": "REASONING_MESSAGE_CHUNK", "messageId": "rm1", "delta": "x"}
)
add("reasoning-message-chunk-minimal", {"type": "REASONING_MESSAGE_CHUNK"})
add("reasoning-end", {"type": "REASONING_END", "messageId": "rm1"})
add(
    "reasoning-encrypted-value",
    {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": "message",
        "entityId": "rm1",
        "encryptedValue": "b64==",
    },
)
add(
    "reasoning-encrypted-value-tool-call",
    {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": "tool-call",
        "entityId": "c1",
        "encryptedValue": "x",
        "subagentRunId": "s",
    },
)
add("subagent-started", {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "researcher"})
add(
    "subagent-started-full",
    {
        "type": "SUBAGENT_STARTED",
        "subagentRunId": "s2",
        "name": "r",
        "description": "d",
        "parentSubagentRunId": "s1",
        "parentToolCallId": "c1",
        "parentMessageId": "m1",
    },
)
add("subagent-finished-plain", {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1"})
add(
    "subagent-finished-success",
    {
        "type": "SUBAGENT_FINISHED",
        "subagentRunId": "s1",
        "result": [1, "two"],
        "outcome": {"type": "success"},
    },
)
add(
    "subagent-finished-suspended",
    {
        "type": "SUBAGENT_FINISHED",
        "subagentRunId": "s1",
        "outcome": {"type": "suspended", "interruptIds": ["i1"]},
    },
)
add(
    "subagent-finished-unknown-outcome",
    {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1", "outcome": {"type": "transferred"}},
)
add("subagent-error", {"type": "SUBAGENT_ERROR", "subagentRunId": "s1", "message": "failed"})
add(
    "subagent-error-code",
    {"type": "SUBAGENT_ERROR", "subagentRunId": "s1", "message": "failed", "code": "E1"},
)
add(
    "metadata-not-object-dropped",
    {"type": "STEP_STARTED", "stepName": "x", "metadata": {"nested": {"deep": {"deeper": [[[]]]}}}},
)
add("nulls-where-null-is-a-value", {"type": "CUSTOM", "name": "n", "value": None})
add("raw-null-event", {"type": "RAW", "event": None})
add("state-snapshot-null", {"type": "STATE_SNAPSHOT", "snapshot": None})
add(
    "optional-nulls-omitted",
    {
        "type": "RUN_FINISHED",
        "threadId": "t",
        "runId": "r",
        "result": None,
        "outcome": None,
        "usage": None,
        "timestamp": None,
        "rawEvent": None,
        "metadata": None,
    },
)
add("raw-event-scalar", {"type": "TEXT_MESSAGE_END", "messageId": "m", "rawEvent": 5})


def main() -> None:
    from tests.interop.node import run_node, skip_reason

    reason = skip_reason()
    if reason:
        raise SystemExit(reason)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"encode": [c["event"] for c in C]}, f)
    encoded = run_node("proto.mjs", "codec", f.name)["encoded"]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"decode": [e["hex"] for e in encoded]}, f)
    decoded = run_node("proto.mjs", "codec", f.name)["decoded"]
    out = [
        {**c, "hex": e["hex"], "decoded": d["event"]}
        for c, e, d in zip(C, encoded, decoded, strict=True)
    ]
    CORPUS.parent.mkdir(parents=True, exist_ok=True)
    CORPUS.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n")
    print(f"{len(out)} events -> {CORPUS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
