"""A scripted agent for the end-to-end tests: it reads the last user message and
the history, and answers the way the test needs (no model, no network).

Served in-process by the tests, and as a separate process (``python -m
tests.helpers.e2e_agent PORT``) when a test must kill the server mid-run.
"""

from __future__ import annotations

import asyncio
import json
import sys

from agui_tools.agent import Run
from agui_tools.transport._server import agent_app


def _last_user(run: Run) -> str:
    for msg in reversed(run.messages):
        if msg["role"] == "user":
            return str(msg["content"])
    return ""


async def agent(run: Run) -> None:
    said = _last_user(run)
    pending = [
        m for m in run.messages if m["role"] == "tool" and m["toolCallId"].startswith(run.thread_id)
    ]
    if pending:
        # a continuation: react to the application's answers
        lines = []
        for m in pending:
            lines.append(
                f"{m['toolCallId'].split(':')[-1]}: {m['content']}"
                + (f" (error: {m['error']})" if m.get("error") else "")
            )
        await run.text("Noted. " + "; ".join(lines))
        return
    call = lambda name: f"{run.thread_id}:{run.run_id}:{name}"  # noqa: E731
    if said == "text":
        async with run.message() as m:
            for word in ("Hello ", "from ", "the ", "agent."):
                await m.delta(word)
    elif said in ("frontend", "decline", "failure"):
        async with run.message() as m:
            await m.delta("Please confirm the order.")
        async with run.tool_call("confirm_order", call_id=call("c1"), parent_message_id=m.id) as c:
            await c.args('{"sku": "W-1", ')
            await c.args('"qty": 2}')
    elif said == "parallel":
        async with run.message() as m:
            await m.delta("Two things.")
        async with run.tool_call("confirm_order", call_id=call("c1"), parent_message_id=m.id) as c:
            await c.args('{"sku": "A", "qty": 1}')
        async with run.tool_call("show_chart", call_id=call("c2"), parent_message_id=m.id) as c:
            await c.args('{"series": [1, 2]}')
    elif said == "invalid":
        async with run.tool_call("confirm_order", call_id=call("c1")) as c:
            await c.args('{"sku": "A", "qty": "two"}')
    elif said == "agent-side":
        async with run.tool_call("web_search", call_id=call("s1")) as c:
            await c.args('{"q": "ag-ui"}')
        await run.result(c.id, "3 results")
        await run.text("Found 3 results.")
    elif said.startswith("slow"):
        async with run.message() as m:
            for i in range(200):
                await m.delta(f"tick {i} ")
                await asyncio.sleep(0.05)
    else:
        await run.text(f"You said: {said}")


app = agent_app(agent, path="/agent", keepalive=0.05)

if __name__ == "__main__":
    import uvicorn

    port = int(sys.argv[1])
    print(json.dumps({"port": port}), flush=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
