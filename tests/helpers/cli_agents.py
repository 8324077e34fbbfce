"""Agents and tools the command-line tests serve and offer (``serve tests.helpers.cli_agents:…``).

``scripted`` reads the last user message as a small script, so one served
agent covers every phase a test needs to interrupt or inspect:

* ``call NAME {json}; call NAME2 {json}`` — the calls, in one run (ids unique per run);
* ``cut NAME {partial json`` — a call whose arguments break off, then the agent fails;
* ``slow N`` — N words, one every 50 ms (something to interrupt while it streams);
* ``quiet S`` — one word, then S seconds of silence (no keep-alive), then one more;
* ``boom`` — the agent raises;
* ``approve NAME {json}`` — an agent-side call NAME, then the run interrupts to ask
  approval for it (an interrupt naming the call, a ``{approved, arguments?}`` schema);
* ``ask {schema}`` — the run interrupts asking for a payload of that schema;
* ``expired`` — an interrupt whose ``expiresAt`` has passed; ``expires S`` — one that
  expires S seconds from now;
* a run that carries ``resume`` entries says what they were (and answers the approved
  call, with its edited arguments when there are); each is appended to the file
  ``AGUI_TEST_RESUME_LOG`` names, when set (exactly-once checks across processes).
* anything else — the reply names the message's number in the thread.

After a tool answer, the agent says what came back, per call.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from typing import Any

from agui_tools.agent import Run

APPROVAL_SCHEMA = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "arguments": {"type": "object"}},
    "required": ["approved"],
}


async def resumed(run: Run) -> None:
    log = os.environ.get("AGUI_TEST_RESUME_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            for entry in run.resume:
                f.write(json.dumps(entry) + "\n")
    said = []
    for entry in run.resume:
        iid, status = entry["interruptId"], entry["status"]
        payload = entry.get("payload")
        reason = (entry.get("metadata") or {}).get("reason")
        if iid.startswith("approve-"):
            call_id = iid.removeprefix("approve-")
            if status == "resolved" and isinstance(payload, dict) and payload.get("approved"):
                args = payload.get("arguments")
                await run.result(call_id, f"done {json.dumps(args) if args else 'as proposed'}")
            else:
                await run.result(call_id, "not done")
        said.append(f"{iid} {status} {json.dumps(payload) if payload is not None else reason}")
    await run.text("resumed — " + " | ".join(said))


async def scripted(run: Run) -> None:
    if run.resume:
        await resumed(run)
        return
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
    elif text.startswith("approve "):
        _, name, args = text.split(" ", 2)
        call_id = f"{run.run_id}-approve"
        async with run.tool_call(name, call_id=call_id) as call:
            await call.args(args)
        run.interrupt(
            {
                "id": f"approve-{call_id}",
                "reason": "approval",
                "message": f"May I {name}?",
                "toolCallId": call_id,
                "responseSchema": APPROVAL_SCHEMA,
            }
        )
    elif text.startswith("ask "):
        run.interrupt(
            {
                "id": f"ask-{run.run_id}",
                "reason": "input",
                "message": "Where to?",
                "responseSchema": json.loads(text.split(" ", 1)[1]),
                "metadata": {"step": 2},
            }
        )
    elif text.startswith("expires "):
        from datetime import UTC, datetime, timedelta

        when = datetime.now(UTC) + timedelta(seconds=float(text.split()[1]))
        run.interrupt(
            {"id": f"soon-{run.run_id}", "reason": "input", "expiresAt": when.isoformat()}
        )
    elif text == "expired":
        run.interrupt(
            {"id": f"late-{run.run_id}", "reason": "input", "expiresAt": "2000-01-01T00:00:00Z"}
        )
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


async def which_loop(run: Run) -> None:
    """Says the module of the event loop it runs on (``serve --loop``)."""
    await run.text(type(asyncio.get_running_loop()).__module__.split(".")[0])
