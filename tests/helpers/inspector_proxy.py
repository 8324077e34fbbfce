"""``agui-tools proxy --inspect`` and a conforming application in front of it.

:func:`proxy_with_inspector` runs the command as a user does and yields the proxy's
and the inspector's URLs; :class:`Frontend` is an application on one thread that
folds every answer and answers its pending calls from :data:`ANSWERS`.
"""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import orjson

from agui_tools.app import Conversation, Driver
from agui_tools.app._tools import ToolSpec
from agui_tools.wire._framing import SSEReader
from tests.helpers.terminal import AGUI, ENV, ROOT

TOOLS = [
    ToolSpec("get_location", "Where the user is.", parameters={"type": "object"}),
    ToolSpec(
        "get_preferences",
        "The user's shipping preferences.",
        parameters={"type": "object", "properties": {"fields": {"type": "array"}}},
    ),
    ToolSpec("show_order_summary", "Show the order to the user.", parameters={"type": "object"}),
    ToolSpec(
        "place_order",
        "Place an order.",
        parameters={
            "type": "object",
            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
            "required": ["sku", "qty"],
        },
    ),
]
ANSWERS = {
    "get_location": "Berlin",
    "get_preferences": '{"shipping": "express", "currency": "EUR"}',
}


@contextmanager
def proxy_with_inspector(upstream: str) -> Iterator[tuple[str, str]]:
    """``agui-tools proxy UPSTREAM --inspect``, as a user runs it: yields the proxy's URL
    and the inspector's; Ctrl-C must stop it with its summary, never a traceback."""
    proc = subprocess.Popen(
        [*AGUI, "proxy", upstream, "--inspect", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        proxied = re.match(r"Proxying AG-UI at (\S+) to ", proc.stdout.readline())
        shown = re.match(r"AG-UI inspector \(read-only\): (\S+)", proc.stdout.readline())
        assert proxied is not None and shown is not None
        yield proxied.group(1), shown.group(1)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err
    assert "agui-tools proxy: stopped" in err


class Frontend:
    """A conforming application on one thread, talking to the proxy over HTTP."""

    def __init__(self, url: str, thread_id: str) -> None:
        self.url = url
        self.conv = Conversation(thread_id=thread_id, tools=TOOLS)

    def run(self, run_input: dict[str, Any], *, fold: bool = True) -> None:
        """Send ``run_input`` and fold the whole answer, as it streams (``fold=False``: a
        frontend that re-sends an input of its own making, and only reads the answer)."""
        reader = SSEReader()
        with httpx.stream(
            "POST",
            self.url,
            content=orjson.dumps(run_input),
            headers={"content-type": "application/json", "accept": "text/event-stream"},
            timeout=30,
        ) as response:
            assert response.status_code == 200, response.read()
            for chunk in response.iter_raw():
                frames = reader.feed(chunk)
                if fold:
                    self.conv.receive_many(frames)
        if fold:
            Driver(self.conv).end_run()

    def answer_pending(self) -> None:
        for call in self.conv.pending:
            Driver(self.conv).execute(
                call.call_id, lambda _args, name=call.name: ANSWERS.get(name, "ok")
            )
