"""A separate process for the resume-once tests (issue #22): an application that
carries one thread over a SQLite store and dies — a real ``SIGKILL`` — where a
test says, so a new process on the same store picks the thread up.

usage: python resume_worker.py URL STORE MODE
  STORE "sqlite:PATH" or "postgres:CONNINFO" (a PostgresStore)
  MODE "decide-die":  send the refund request; die while the user is deciding
                      (inside the interrupt handler, before anything is answered)
  MODE "send-die":    send it, approve, and die after the resume run was sent and
                      streamed, as its run is about to be saved
  MODE "resume":      a new process: answer the open interrupt (approve) and carry on
  MODE "resume-again": as "resume", with a ``resume_unknown`` check that sends a lost
                      resume again
  Prints one JSON line: what the process ended with.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from agui_tools._errors import ResumeOutcomeUnknown, UsageError
from agui_tools.app import SentResume, SQLiteStore
from agui_tools.transport import Approval, Interrupt, SyncAgentClient, SyncSession

THREAD = "t-resume-once"
REFUND = 'approve refund {"order": "A1", "cents": 500}'


def open_store(spec: str) -> Any:
    kind, _, where = spec.partition(":")
    if kind == "postgres":
        from agui_tools.app import PostgresStore

        return PostgresStore(where, max_size=2, timeout=10)
    return SQLiteStore(Path(where))


def dies_at_the_resume_save(store: Any) -> Any:
    """The process is killed as the run a resume started is about to be saved."""
    save_run = store.save_run

    def dying(thread_id: str, version: int, *args: Any, **kwargs: Any) -> int:
        if version >= 1:  # version 1 is the interrupted run: this save is the resume's
            os.kill(os.getpid(), signal.SIGKILL)
        result: int = save_run(thread_id, version, *args, **kwargs)
        return result

    store.save_run = dying
    return store


def die_deciding(interrupt: Interrupt) -> Approval:
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


def main() -> None:
    url, spec, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    store = open_store(spec)
    if mode == "send-die":
        dies_at_the_resume_save(store)
    seen: list[SentResume] = []

    def again(sent: SentResume) -> bool:
        seen.append(sent)
        return True

    with SyncAgentClient(url) as client:
        session = SyncSession(
            client,
            store=store,
            thread_id=THREAD,
            on_interrupt=die_deciding if mode == "decide-die" else (lambda i: Approval.approve()),
            resume_unknown=again if mode == "resume-again" else None,
        )
        out: dict[str, Any] = {"mode": mode}
        try:
            text = REFUND if mode in ("decide-die", "send-die") else None
            result = session.send(text)
            out["status"] = result.status
            out["reply"] = session.conversation.messages[-1].get("content")  # type: ignore[union-attr]
            out["run_id"] = result.run_id
        except ResumeOutcomeUnknown as exc:
            out["error"] = "ResumeOutcomeUnknown"
            out["rule"] = exc.rule
            out["sent_run_id"] = exc.sent.run_id
            out["sent_resume"] = exc.sent.resume
        except UsageError as exc:
            out["error"] = "UsageError"
            out["message"] = str(exc)
        out["seen"] = [{"run_id": s.run_id, "resume": s.resume} for s in seen]
    store.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
