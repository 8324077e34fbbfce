"""``serve_on`` — the start-up path ``serve`` and ``mock`` share — freezes what start-up
left alive before uvicorn serves, so the collector's full passes skip it."""

from __future__ import annotations

import gc
import signal
import socket
from typing import Any

import pytest
import uvicorn

from agui_tools.cli import serve_cmd
from agui_tools.transport._server import agent_app


async def _agent(run: Any) -> None:
    async with run.message() as m:
        await m.delta("hi")


def test_serve_on_freezes_the_built_app_before_serving(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, Any] = {}

    def run(server: uvicorn.Server, sockets: list[socket.socket]) -> None:
        seen["frozen"] = gc.get_freeze_count()
        seen["app_still_young"] = any(o is app for o in gc.get_objects())

    monkeypatch.setattr(uvicorn.Server, "run", run)
    gc.unfreeze()
    app = agent_app(_agent, path="/agent")
    assert any(o is app for o in gc.get_objects())  # the collector tracks it before
    sock = socket.create_server(("127.0.0.1", 0))
    sigterm = signal.getsignal(signal.SIGTERM)
    try:
        serve_cmd.serve_on(app, sock, what="AG-UI agent", path="/agent", log_level="warning")
    finally:
        gc.unfreeze()  # this test process goes on collecting as before
        signal.signal(signal.SIGTERM, sigterm)
    assert seen["frozen"] > 0
    assert seen["app_still_young"] is False
    assert sock.fileno() == -1  # serve_on closed it on the way out
    assert "Serving AG-UI agent at http://127.0.0.1:" in capsys.readouterr().out
