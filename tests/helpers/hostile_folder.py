"""A recording folder made by hand for the mock's hostile-folder tests: a good exchange,
any exchange, and what the mock loads and serves of the folder."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from agui_tools.testing import serving
from agui_tools.transport import mock_app
from agui_tools.transport._captures import load_captures

INPUT = {
    "threadId": "T1",
    "runId": "R1",
    "messages": [{"id": "u1", "role": "user", "content": "hi"}],
    "tools": [],
    "context": [],
    "state": {},
    "forwardedProps": {},
}
EVENTS = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]
SECRET = "SECRET-OUTSIDE-THE-FOLDER"


def exchange(folder: Path, number: int, meta: dict[str, Any], body: bytes, ext: str) -> None:
    stem = folder / f"{number:04d}"
    Path(f"{stem}.input.json").write_text(json.dumps(INPUT))
    Path(f"{stem}.meta.json").write_text(json.dumps(meta))
    Path(f"{stem}.{ext}").write_bytes(body)


def good(folder: Path, number: int) -> None:
    sse = "".join(f"data: {json.dumps(e)}\n\n" for e in EVENTS).encode()
    exchange(folder, number, {"status": 200, "contentType": "text/event-stream"}, sse, "sse")


def served(folder: Path, requests: int = 2) -> list[tuple[int, bytes]]:
    """What ``requests`` POSTs get from ``mock_app(folder)``."""

    async def main() -> list[tuple[int, bytes]]:
        got = []
        async with serving(mock_app(folder)) as base, httpx.AsyncClient(timeout=30) as client:
            for _ in range(requests):
                r = await client.post(f"{base}/", json=INPUT)
                got.append((r.status_code, r.content))
        return got

    return asyncio.run(main())


def loaded(folder: Path) -> tuple[int, list[str]]:
    skipped: list[str] = []
    return len(load_captures([folder], skipped=skipped)), skipped
