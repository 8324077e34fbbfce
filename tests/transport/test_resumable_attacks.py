"""The resumable server attacked as a stranger would, over real HTTP on loopback.

Each test is a finding: a rejoin or a stop that the spec page (docs/resumable.md)
answers one way and the server answered another. Waiting is on the agents' own
flags and on the stream; the bounds are hang bounds, never timings.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from agui_tools.transport._resumable import Resumable
from agui_tools.transport._server import agent_app
from agui_tools.transport._serving import serving
from tests.helpers.resumable import OPT_IN, SSE, ids_and_events, working


def run_input(thread_id: str = "t1", run_id: str = "r1") -> dict[str, Any]:
    return {
        "threadId": thread_id,
        "runId": run_id,
        "messages": [{"id": "u1", "role": "user", "content": "Go"}],
    }


@asynccontextmanager
async def served(**options: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        serving(agent_app(working, resumable=Resumable(**options))) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        yield client


async def started(client: httpx.AsyncClient, body: dict[str, Any], events: int = 3) -> None:
    """Start a detached run, read its first ``events`` and leave (the run goes on)."""
    async with client.stream("POST", "/", json=body, headers=OPT_IN) as stream:
        assert stream.headers["agui-resumable"] == "1"
        seen = b""
        async for chunk in stream.aiter_bytes():
            seen += chunk
            if len(ids_and_events(seen)) >= events:
                return


def run_async(test: Any) -> None:
    asyncio.run(asyncio.wait_for(test(), 60))


def test_a_seq_beyond_a_running_runs_log_is_400_not_a_silent_stream() -> None:
    """RESUME-7: events are logged before they are sent, so no client holds a seq past
    the log's last; such a rejoin was answered 200 and then nothing (or, once the
    run caught up, the events after it: a gap the client never hears of)."""

    async def main() -> None:
        async with served() as client:
            await started(client, run_input())  # RUN_STARTED, TEXT_MESSAGE_START, 2 deltas
            url = "/threads/t1/runs/r1/events"
            for headers, query in (({"last-event-id": "r1:99"}, ""), ({}, "?after=5")):
                answer = await client.get(url + query, headers={**SSE, **headers})
                assert answer.status_code == 400, answer.text
                problem = answer.json()
                assert problem["rule"] == "RESUME-7" and "beyond" in problem["error"], problem
                assert b"data:" not in answer.content
            # nothing was lost: the run still runs, and stops cancelled
            assert (await client.post("/threads/t1/runs/r1/stop")).status_code == 202
            whole = ids_and_events((await client.get(url, headers=SSE)).content)
            assert [i for i, _ in whole] == [f"r1:{n}" for n in range(1, len(whole) + 1)]
            assert whole[-1][1]["outcome"] == {"type": "cancelled"}

    run_async(main)
