"""The inspector's "run failed" card shows the agent's own error (issue 36, "smaller"):
the words ``run`` and ``chat`` say (:func:`agui_tools.app._runs.describe_run`), not
"the run ended error"."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agui_tools.agent import Run
from agui_tools.testing import serving
from agui_tools.transport import agent_app
from agui_tools.ui.inspector import Inspector


async def times_out(run: Run) -> None:
    await run.text("checking the provider")
    raise TimeoutError("the model provider timed out")


@pytest.mark.run_error("TimeoutError")
def test_a_failed_run_shows_the_agents_error() -> None:
    async def go() -> dict[str, Any]:
        async with serving(agent_app(times_out, path="/agent", expose_errors=True)) as base:
            inspector = Inspector(f"{base}/agent")
            inspector.send("hi")

            async def failed() -> dict[str, Any]:
                async for message in inspector.hub.follow():
                    if message["kind"] == "failed":
                        return message
                raise AssertionError("the hub closed")

            return await asyncio.wait_for(failed(), 10)  # a hang bound

    failed = asyncio.run(go())
    assert failed["message"] == (
        "the agent ended the run with an error: "
        "the agent failed (TimeoutError): the model provider timed out"
    ), failed
