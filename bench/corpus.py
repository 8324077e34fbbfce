"""The benchmark corpus: a deterministic stream of ~100k+ events shaped like
real traffic — runs of streamed text deltas, tool calls with streamed argument
deltas (explicit and chunked spelling), results, and their boundaries."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson

WORDS = [
    "the",
    "agent",
    "proposes",
    "and",
    "the",
    "application",
    "disposes",
    "of",
    "every",
    "tool",
    "call",
    "it",
    "streams",
]


def runs(
    n_runs: int, *, seed: int = 7, deltas: int = 20, thread: str = "bench-thread"
) -> list[dict[str, Any]]:
    """``n_runs`` well-formed runs; each has text, an explicit call, a chunked call and a result."""
    rnd = random.Random(seed)
    out: list[dict[str, Any]] = []
    for r in range(n_runs):
        run_id = f"run-{r}"
        out.append({"type": "RUN_STARTED", "threadId": thread, "runId": run_id})
        mid = f"m-{r}"
        out.append({"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"})
        for _ in range(deltas):
            out.append(
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": rnd.choice(WORDS) + " "}
            )
        out.append({"type": "TEXT_MESSAGE_END", "messageId": mid})
        cid = f"c-{r}"
        out.append(
            {
                "type": "TOOL_CALL_START",
                "toolCallId": cid,
                "toolCallName": "search",
                "parentMessageId": mid,
            }
        )
        args = orjson.dumps(
            {"query": " ".join(rnd.choice(WORDS) for _ in range(deltas)), "limit": 10}
        ).decode()
        step = max(1, len(args) // deltas)
        for i in range(0, len(args), step):
            out.append({"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": args[i : i + step]})
        out.append({"type": "TOOL_CALL_END", "toolCallId": cid})
        out.append(
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": f"t-{r}",
                "toolCallId": cid,
                "content": "3 results",
            }
        )
        kid = f"k-{r}"
        first = True
        for i in range(0, len(args), step):
            chunk: dict[str, Any] = {"type": "TOOL_CALL_CHUNK", "delta": args[i : i + step]}
            if first:
                chunk.update(toolCallId=kid, toolCallName="lookup", parentMessageId=mid)
                first = False
            out.append(chunk)
        out.append({"type": "RUN_FINISHED", "threadId": thread, "runId": run_id})
    return out


def standard(min_events: int = 100_000) -> list[dict[str, Any]]:
    """The corpus every benchmark in ``make bench`` shares (≥ ``min_events``)."""
    n = max(1, min_events // len(runs(1)))
    while len(events := runs(n)) < min_events:
        n += max(1, (min_events - len(events)) // len(runs(1)))
    return events


def write_ndjson(events: list[dict[str, Any]], path: Path) -> Path:
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return path


def lines(events: list[dict[str, Any]]) -> list[bytes]:
    return [orjson.dumps(e) for e in events]
