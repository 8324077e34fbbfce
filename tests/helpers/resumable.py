"""The resumable binding's tests' shared parts: the headers, an SSE body read with its
ids, the agents a ``serve --resumable`` replica runs, and the run logs opened for a
test (:func:`opened_run_log`)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from agui_tools.agent import Run
from agui_tools.app._run_log import MemoryRunLog, RunLog
from agui_tools.app._run_log_sql import PostgresRunLog, SQLiteRunLog


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
        fields: dict[str, list[str]] = {}
        for line in block.split("\n"):
            if line and not line.startswith(":"):
                name, value = line.split(": ", 1)
                fields.setdefault(name, []).append(value)
        if "data" in fields:  # data lines join with a newline (WHATWG SSE)
            event_id = fields["id"][-1] if "id" in fields else None
            out.append((event_id, orjson.loads("\n".join(fields["data"]))))
    return out


executed: list[str] = []
"""The runs :func:`refund` executed its agent-side tool in."""


async def refund(run: Run) -> None:
    """An agent-side tool with a side effect (counted), and a frontend call after it."""
    async with run.message(message_id="m1") as m:
        await m.delta("Refunding.")
        async with run.tool_call("refund", call_id="c1", parent_message_id="m1") as call:
            await call.args('{"order":"A-1"}')
    executed.append(run.run_id)
    await asyncio.sleep(0.01)  # the cut may land while the run is live
    await run.result("c1", "refunded", message_id="res1")
    async with run.tool_call("confirm", call_id="c2") as card:
        await card.args('{"ok":true}')


def refund_input(run_id: str) -> dict[str, Any]:
    """The run input :func:`refund` is asked with: thread ``t``, the frontend tool."""
    return {
        "threadId": "t",
        "runId": run_id,
        "messages": [{"id": "u1", "role": "user", "content": "Refund A-1."}],
        "tools": [{"name": "confirm", "description": "Ask the user to confirm."}],
    }


@contextmanager
def opened_run_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunLog]:
    """The run log ``request.param`` names (memory, sqlite, postgres), closed after."""
    if request.param == "memory":
        yield MemoryRunLog()
        return
    opened: SQLiteRunLog | PostgresRunLog = (
        SQLiteRunLog(str(tmp_path / "runs.db"))
        if request.param == "sqlite"
        else PostgresRunLog(request.getfixturevalue("postgres_dsn"))
    )
    try:
        yield opened
    finally:
        opened.close()


async def cut_after(client: httpx.AsyncClient, run_id: str, k: int) -> list[Any]:
    """Deliver :func:`refund`'s run's first ``k`` events, cut, rejoin after ``k`` (at the
    client's base URL): the ids and events a client got."""
    delivered: list[Any] = []
    raw = b""
    async with client.stream("POST", "/", json=refund_input(run_id), headers=OPT_IN) as stream:
        assert stream.headers.get("agui-resumable") == "1"
        async for chunk in stream.aiter_bytes():
            raw += chunk
            whole = raw[: raw.rfind(b"\n\n") + 2]
            if len(ids_and_events(whole)) >= k:
                delivered = ids_and_events(whole)[:k]
                break
    rejoin = await client.get(
        f"/threads/t/runs/{run_id}/events",
        headers={**SSE, "last-event-id": f"{run_id}:{k}"},
    )
    assert rejoin.status_code == 200, rejoin.text
    return delivered + ids_and_events(rejoin.content)
