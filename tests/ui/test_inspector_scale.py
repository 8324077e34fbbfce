"""The inspector at scale (issue 24 item 1, issue 28 item 3): what the back end keeps and
sends for a long stream, measured in bytes and messages — never in time."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from agui_tools.testing import serving
from agui_tools.transport import agent_app
from agui_tools.ui.inspector import Inspector
from agui_tools.ui.inspector._hub import PREVIEW_LIMIT, VALUE_LIMIT
from tests.helpers.inspector_page import idle, running, unbatched

from .inspector_agents import big_argument_agent, register_upload

MB = 1024 * 1024


def _rss() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class _PeakRSS:
    """The highest resident set size seen while the block runs (sampled every 20 ms)."""

    def __enter__(self) -> _PeakRSS:
        self.baseline = self.peak = _rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _rss())

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())


def test_a_4mb_argument_in_1kb_deltas_keeps_the_inspector_bounded() -> None:
    """Issue 28, item 3: each argument delta pushed a card update with the whole preview,
    and every update was kept: a 1 MB argument in 1 KB deltas took 3.4 GB and sent 3.46 GB
    to the page. Now a preview is sent when it changed, at most PREVIEW_LIMIT characters of
    it, and each supersedes the last: the page is sent ~2 bytes per argument byte (the
    frames themselves, parsed and raw), the log keeps one preview per call."""
    size = 4 * MB

    async def go() -> tuple[int, int, list[dict[str, Any]], Inspector]:
        app = agent_app(big_argument_agent(size), path="/agent")
        async with serving(app) as base:
            inspector = Inspector(f"{base}/agent", register=register_upload)
            async with running(inspector) as page:
                sent = 0
                received: list[dict[str, Any]] = []

                async def read() -> None:
                    nonlocal sent
                    async with page.stream(
                        "GET", "/api/events", params={"token": inspector.token}
                    ) as r:
                        async for line in r.aiter_lines():
                            sent += len(line) + 1
                            if line.startswith("data: "):
                                received.extend(unbatched(json.loads(line[6:])))
                                if any(idle(m) for m in received):
                                    return

                reader = asyncio.create_task(read())
                await asyncio.sleep(0.1)
                await page.post("/api/prompt", json={"text": "upload it"})
                await asyncio.wait_for(reader, 120)
                return sent, inspector.hub.superseded, received, inspector

    with _PeakRSS() as rss:
        sent, superseded, received, inspector = asyncio.run(go())
    cards = [m for m in received if m["kind"] == "call" and m["callId"] == "big"]
    kept = [m for m in inspector.hub.messages if m["kind"] == "call" and m["callId"] == "big"]
    frames = [m for m in received if m["kind"] == "event" and m["type"] == "TOOL_CALL_ARGS"]
    received = [m for m in received if m["kind"] != "event"]  # the frames: 1 KB each, checked
    assert len(frames) == size // 1024  # every frame still reaches the frame list
    # the call was answered with the whole argument: bounding the page lost nothing
    done = [m for m in cards if m.get("answer")]
    assert done and done[-1]["answer"]["content"] == f"stored {size - 12} characters"
    # bytes to the page: the frames (each delta as JSON and as raw) and bounded previews
    assert sent < 2.5 * size + 2 * MB, f"{sent / MB:.1f} MB sent for a {size / MB:.0f} MB argument"
    for m in received:  # cards, the run's input, the thread: each a bounded head of the argument
        limit = PREVIEW_LIMIT if m.get("status") == "streaming" else VALUE_LIMIT
        assert len(json.dumps(m)) < limit + 4096, f"a {m['kind']} message carried the argument"
    # updates kept: one preview per call at a time (plus the card's status changes)
    assert superseded > 0 and len(kept) <= 4, [m.get("status") for m in kept]
    # memory: the whole process (agent, inspector, client) within 300 MB of where it began
    growth = rss.peak - rss.baseline
    assert growth < 300 * MB, f"RSS grew {growth / MB:.0f} MB"
    print(
        f"\n4 MB argument: {sent / MB:.1f} MB sent, {len(cards)} card updates, "
        f"{len(kept)} kept, RSS +{growth / MB:.0f} MB"
    )
