"""A session against the interrupting agent, on either face.

The fixtures :func:`url` (the ``scripted`` agent served once a module), :func:`face`
(``async`` and ``sync``) and :func:`log` (the file the agent appends each resume it
receives to, read by :func:`resumes`) are taken into a test module by assignment
(``url = interrupts.url``), as pytest finds fixtures by module name. :func:`make`
builds a session of a face; :func:`call` calls a method on either face.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agui_tools.transport import (
    AgentClient,
    Session,
    SyncAgentClient,
    SyncSession,
    agent_app,
)
from agui_tools.transport._session import BaseSession
from tests.helpers.cli_agents import scripted
from tests.helpers.scripted_server import serve

REFUND = 'approve refund {"order": "A1", "cents": 500}'


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve(agent_app(scripted)) as base:
        yield f"{base}/"


@pytest.fixture(params=["async", "sync"])
def face(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "resumes.jsonl"
    monkeypatch.setenv("AGUI_TEST_RESUME_LOG", str(path))  # the agent runs in this process
    return path


def resumes(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def make(url: str, face: str, **kw: Any) -> BaseSession[Any]:
    if face == "sync":
        return SyncSession(SyncAgentClient(url), **kw)
    return Session(AgentClient(url), **kw)


def call(session: BaseSession[Any], method: str, *args: Any, **kw: Any) -> Any:
    """``session.method(*args)`` on either face (the async one awaited)."""
    if isinstance(session, Session):

        async def main() -> Any:
            # each asyncio.run is a new loop: a client of its own, closed with it
            session.client = AgentClient(session.client.url)
            try:
                return await getattr(session, method)(*args, **kw)
            finally:
                await session.client.aclose()

        return asyncio.run(main())
    return getattr(session, method)(*args, **kw)
