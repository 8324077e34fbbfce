"""The inspector driven over HTTP as its own page drives it (no browser).

:func:`running` serves an :class:`Inspector` and yields a client posting with the
page's origin and token; :func:`until` waits for a hub message; :func:`idle` and
:func:`unbatched` read the hub's messages; :func:`order_two_widgets` places the demo's
order as a user does; :func:`download_exports` fetches what the download links give.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from agui_tools.ui.inspector import Inspector, serve_inspector


@asynccontextmanager
async def running(inspector: Inspector) -> AsyncIterator[httpx.AsyncClient]:
    """Serve ``inspector``; yield a client that posts as its own page does."""
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    server = asyncio.create_task(serve_inspector(inspector, ready=ready.set_result))
    url = await asyncio.wait_for(ready, 10)
    headers = {
        "Origin": url.rstrip("/"),
        "X-Inspector-Token": inspector.token,
        "Content-Type": "application/json",
    }
    try:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=10) as client:
            yield client
    finally:
        server.cancel()
        await asyncio.gather(server, return_exceptions=True)


async def until(
    inspector: Inspector, predicate: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The first hub message matching ``predicate`` (waiting for it, 10 s at most)."""

    async def find() -> dict[str, Any]:
        async for message in inspector.hub.follow():
            if predicate(message):
                return message
        raise AssertionError("the hub closed")

    return await asyncio.wait_for(find(), 10)


def idle(m: dict[str, Any]) -> bool:
    return m["kind"] == "busy" and not m["busy"]


async def order_two_widgets(inspector: Inspector, page: httpx.AsyncClient) -> None:
    """The demo's order as a user places it on the page: the prompt, then each call
    it asks consent for (place_order, then email_receipt) approved, until idle."""
    await page.post("/api/prompt", json={"text": "Order two widgets for me."})
    for _ in range(2):
        ask = await until(
            inspector,
            lambda m: (
                m["kind"] == "consent"
                and not any(
                    d["kind"] == "consent-done" and d["callId"] == m["callId"]
                    for d in inspector.hub.messages
                )
            ),
        )
        await page.post("/api/consent", json={"callId": ask["callId"], "decision": "approve"})
    await until(inspector, idle)


async def download_exports(
    inspector: Inspector, page: httpx.AsyncClient, runs: Path, thread: Path | None = None
) -> int:
    """What the page's download links give, each an attachment: ``run-N.sse`` and
    ``run-N.input.json`` of every run, written into ``runs``, and ``thread.json``
    written as ``thread`` (when given). The number of runs."""
    token = {"token": inspector.token}
    wanted = [
        (f"/api/export/{what}", runs / what)
        for n in range(1, len(inspector.captures) + 1)
        for what in (f"run-{n}.sse", f"run-{n}.input.json")
    ]
    if thread is not None:
        wanted.append(("/api/export/thread.json", thread))
    for url, path in wanted:
        response = await page.get(url, params=token)
        assert response.status_code == 200, response.text
        assert response.headers["content-disposition"].startswith("attachment")
        path.write_bytes(response.content)
    return len(inspector.captures)


def unbatched(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of one SSE message of the page's stream (a batch holds several)."""
    return list(data["messages"]) if data["kind"] == "batch" else [data]
