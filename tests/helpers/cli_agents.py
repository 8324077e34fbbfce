"""Agents and tools the command-line tests serve and offer (``serve tests.helpers.cli_agents:…``).

``scripted`` reads the last user message as a small script, so one served
agent covers every phase a test needs to interrupt or inspect:

* ``call NAME {json}; call NAME2 {json}`` — the calls, in one run (ids unique per run);
* ``cut NAME {partial json`` — a call whose arguments break off, then the agent fails;
* ``slow N`` — N words, one every 50 ms (something to interrupt while it streams);
* ``quiet S`` — one word, then S seconds of silence (no keep-alive), then one more;
* ``boom`` — the agent raises;
* anything else — the reply names the message's number in the thread.

After a tool answer, the agent says what came back, per call.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from agui_tools.agent import Run


async def scripted(run: Run) -> None:
    last = run.messages[-1]
    if last.get("role") == "tool":
        answers = []
        for m in reversed(run.messages):
            if m.get("role") != "tool":
                break
            answers.insert(0, f"{m['toolCallId']}: {m.get('content')}")
        await run.text("the tools said — " + " | ".join(answers))
        return
    text = str(last.get("content") or "")
    users = sum(1 for m in run.messages if m.get("role") == "user")
    if text.startswith("call "):
        message = await run.text(f"calling (message {users} of this thread)")
        for n, part in enumerate(text.split(";")):
            _, name, args = part.strip().split(" ", 2)
            call_id = f"{run.run_id}-{n + 1}"
            async with run.tool_call(name, call_id=call_id, parent_message_id=message) as call:
                await call.args(args)
    elif text.startswith("cut "):
        _, name, args = text.split(" ", 2)
        async with run.tool_call(name, call_id=f"{run.run_id}-cut") as call:
            await call.args(args)
            raise RuntimeError("the model stopped mid-call")
    elif text.startswith("slow "):
        async with run.message() as m:
            for i in range(int(text.split()[1])):
                await m.delta(f"w{i} ")
                await asyncio.sleep(0.05)
    elif text.startswith("quiet "):
        async with run.message() as m:
            await m.delta("first ")
            await asyncio.sleep(float(text.split()[1]))
            await m.delta("second")
    elif text == "boom":
        raise RuntimeError("the model is down")
    else:
        await run.text(f"you said {text!r} (message {users} of this thread)")


def act(what: str) -> str:
    """Do something for the user (a side effect)."""
    return f"did {what}"


def look(what: str) -> str:
    """Look something up (read-only)."""
    return f"saw {what}"


def wait_forever() -> str:
    """Block for ever (read-only): a tool to interrupt, or to time out."""
    threading.Event().wait()
    return "never"


TOOLS: list[Any] = [(act, {"side_effects": True}), look, wait_forever]


def journal_rows(path: str) -> dict[str, Any]:
    """What a ``--journal`` SQLite file holds: answers and decisions per call id."""
    import sqlite3

    with sqlite3.connect(path) as db:
        calls = {
            row[0]: json.loads(row[1]) if row[1] is not None else None
            for row in db.execute("SELECT call_id, answer FROM calls")
        }
        decisions = [json.loads(row[0]) for row in db.execute("SELECT decision FROM decisions")]
    return {"answers": calls, "decisions": decisions}


TOKEN = "s3cret-token"


def guarded_api() -> Any:
    """A FastAPI application mounting the scripted agent behind a bearer-token hook."""
    from fastapi import FastAPI
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response

    from agui_tools.transport import agent_app

    async def require_token(request: Request) -> Response | None:
        if request.headers.get("authorization") == f"Bearer {TOKEN}":
            return None
        return JSONResponse(
            {"error": {"message": "a bearer token is required"}},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )

    api = FastAPI()
    api.mount("/agent", agent_app(scripted, authorize=require_token))
    return api
