"""A separate process for the journal crash tests: it plays an application that
receives one run, approves and executes its calls, recording every side effect
it performs in a file so the test can count them.

usage: python journal_worker.py JOURNAL EFFECTS MODE
  MODE "hang":   execute c1, and hang inside its handler (the test SIGKILLs us)
  MODE "finish": execute every pending approved call to completion
  Prints one JSON line: the answers it ended with.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from agui_tools.app import Driver

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from agui_tools.app._calls import CallStatus
from agui_tools.app._conversation import Conversation
from agui_tools.app._journal import SQLiteJournal
from agui_tools.app._tools import ToolSpec

CHARGE = ToolSpec(
    "charge_card",
    "Charge the user's card.",
    parameters={
        "type": "object",
        "properties": {"cents": {"type": "integer"}},
        "required": ["cents"],
    },
    side_effects=True,
)


def stream(thread: str, run: str) -> list[dict[str, object]]:
    events: list[dict[str, object]] = [{"type": "RUN_STARTED", "threadId": thread, "runId": run}]
    for cid, cents in (("c1", 500), ("c2", 700)):
        events += [
            {
                "type": "TOOL_CALL_START",
                "toolCallId": cid,
                "toolCallName": "charge_card",
                "parentMessageId": "m1",
            },
            {"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": json.dumps({"cents": cents})},
            {"type": "TOOL_CALL_END", "toolCallId": cid},
        ]
    events.append({"type": "RUN_FINISHED", "threadId": thread, "runId": run})
    return events


def main() -> None:
    journal_path, effects_path, mode = sys.argv[1:4]
    effects = Path(effects_path)
    journal = SQLiteJournal(journal_path)
    conv = Conversation(thread_id="thread-crash", tools=[CHARGE], store=journal)
    conv.next_input(user="pay", run_id="run-1")
    # the same stream every time: a replay after a restart, or a retried request
    conv.receive_many(stream("thread-crash", "run-1"))
    Driver(conv).end_run()

    def charge(args: dict[str, object]) -> str:
        with effects.open("a") as f:
            f.write(f"charged {args['cents']}\n")
            f.flush()
        if mode == "hang":
            print("IN_HANDLER", flush=True)
            time.sleep(120)
        return f"charged {args['cents']} cents"

    answers = {}
    for call in conv.pending:
        if call.status is CallStatus.AWAITING_CONSENT:
            Driver(conv).approve(call.call_id)  # the user approves (recorded before anything runs)
        if mode == "hang" and call.call_id != "c1":
            continue
        answers[call.call_id] = Driver(conv).execute(call.call_id, charge).to_json()
    for call in conv._calls.values():
        if call.answer is not None:
            answers[call.call_id] = call.answer.to_json()
    print(json.dumps(answers), flush=True)


if __name__ == "__main__":
    main()
