"""The resumable binding's tests' shared parts: the headers, an SSE body read with its
ids, and the agents a ``serve --resumable`` replica runs."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from agui_tools.agent import Run


async def working(run: Run) -> None:
    """Streams two deltas, then works until it is stopped (or its process dies)."""
    async with run.message(message_id="m1") as m:
        await m.delta("Working")
        await m.delta(" on it")
        await asyncio.Event().wait()


async def quick(run: Run) -> None:
    await run.text("Done.", message_id="m1")


SSE = {"accept": "text/event-stream"}
OPT_IN = {**SSE, "agui-resumable": "1"}


def ids_and_events(raw: bytes) -> list[tuple[str | None, dict[str, Any]]]:
    """Each SSE event's ``id`` (or ``None``) and its JSON data, keep-alives skipped."""
    out = []
    for block in raw.decode().split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.split("\n") if line and not line.startswith(":")
        )
        if "data" in fields:
            out.append((fields.get("id"), orjson.loads(fields["data"])))
    return out
