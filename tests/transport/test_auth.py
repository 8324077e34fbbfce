"""``agent_app(…, authorize=…)``: a hook judges each request before its body is read;
a refused request never reaches the agent (real HTTP, a FastAPI mount)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.requests import Request

from agui_tools.agent import Run
from agui_tools.app._conversation import Conversation
from agui_tools.testing import serving
from agui_tools.transport import AgentClient, agent_app

RAN: list[str] = []


async def agent(run: Run) -> None:
    RAN.append(run.run_id)
    await run.text("hello")


def post(base: str, headers: dict[str, str] | None = None) -> httpx.Response:
    body = {"threadId": "t", "runId": "r", "messages": [], "tools": [], "state": None,
            "context": [], "forwardedProps": None}  # fmt: skip
    return httpx.post(f"{base}/agent/", json=body, headers=headers or {}, timeout=30)


def test_a_hook_refuses_before_the_agent_runs_and_admits_with_the_header() -> None:
    seen: list[Any] = []

    async def authorize(request: Request) -> Any:
        seen.append((request.method, request.url.path))
        if request.headers.get("authorization") != "Bearer ok":
            raise HTTPException(401, "a bearer token is required", {"WWW-Authenticate": "Bearer"})
        return None

    api = FastAPI()
    api.mount("/agent", agent_app(agent, authorize=authorize))
    RAN.clear()

    async def main() -> None:
        async with serving(api) as base:
            refused = await asyncio.to_thread(post, base)
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
            assert refused.json() == {"error": {"message": "a bearer token is required"}}
            assert RAN == []
            conv = Conversation()
            conv.next_input(user="hi")
            async with AgentClient(f"{base}/agent/", headers={"Authorization": "Bearer ok"}) as c:
                result = await c.run(conv)
            assert result.status == "success" and conv.messages[-1]["content"] == "hello"
            assert len(RAN) == 1

    asyncio.run(main())
    assert seen == [("POST", "/agent/"), ("POST", "/agent/")]


@pytest.mark.run_error("authorization hook")
def test_a_hook_that_fails_refuses_with_500_never_admits() -> None:
    def broken(request: Request) -> None:
        raise KeyError("bug in the hook")

    def wrong_type(request: Request) -> Any:
        return True  # not a Response: never read as "admit"

    RAN.clear()

    async def main() -> None:
        for hook in (broken, wrong_type):
            async with serving(agent_app(agent, path="/agent/", authorize=hook)) as base:
                answer = await asyncio.to_thread(post, base)
                assert answer.status_code == 500, answer.text
                assert "could not be authorised" in answer.json()["error"]["message"]
        assert RAN == []

    asyncio.run(main())
