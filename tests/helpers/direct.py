"""What the direct writer's tests share (tests/transport/test_direct_*.py): the stacks
they serve on and a spy on the server's ``direct_body``."""

from __future__ import annotations

from typing import Any

import pytest

from agui_tools.transport import _direct, _server
from agui_tools.transport._deadlines import deadline_protocol

STACKS: dict[str, dict[str, Any]] = {
    "h11": {"http": "h11"},
    "httptools": {"http": "httptools"},
    "deadlines (serve's h11)": {"http": deadline_protocol()},
}
"""uvicorn's HTTP stacks on asyncio, and the front's deadline protocol ``serve`` runs."""


def spy_direct_bodies(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every ``direct_body`` the server asks for from now on, as it answered (``None``:
    the ASGI path), so a test can prove which path it went through."""
    seen: list[Any] = []
    real = _direct.direct_body

    def spy(scope: Any) -> Any:
        writer = real(scope)
        seen.append(writer)
        return writer

    monkeypatch.setattr(_server, "direct_body", spy)
    return seen
