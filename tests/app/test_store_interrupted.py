"""A Ctrl-C at any instant of a SQLite store's write leaves the file unlocked.

A profile hook raises ``KeyboardInterrupt`` just before and just after every
sqlite3 call of one disposal (end the run, approve, execute) — every instant
the interpreter can deliver a Ctrl-C between two calls. After each, the file's
write lock is free (another connection can take it) and the same store object
carries the next thread (found by an adversarial review: a Ctrl-C right after
``BEGIN IMMEDIATE`` left the transaction open for the life of the process).
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from agui_tools import Conversation, SQLiteStore, ToolSpec
from agui_tools.app import Driver

SPEC = ToolSpec(
    "place_order",
    "Place an order.",
    parameters={"type": "object", "properties": {"qty": {"type": "integer"}}},
    side_effects=True,
)
CALLS = ("Connection.execute", "Connection.commit", "Connection.rollback")


def _one_run(conv: Conversation, cid: str) -> None:
    ri = conv.next_input(user="order one")
    ids = {"threadId": ri["threadId"], "runId": ri["runId"]}
    conv.receive_many(
        [
            {"type": "RUN_STARTED", **ids},
            {"type": "TOOL_CALL_START", "toolCallId": cid, "toolCallName": "place_order"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": '{"qty": 1}'},
            {"type": "TOOL_CALL_END", "toolCallId": cid},
            {"type": "RUN_FINISHED", **ids},
        ]
    )
    Driver(conv).end_run()
    Driver(conv).approve(cid)
    Driver(conv).execute(cid, lambda _a: "ordered")


def _interrupted_at(store: SQLiteStore, k: int, phase: str) -> bool:
    """Run a disposal with a Ctrl-C at the k-th sqlite call (``phase``: before it,
    ``c_call``, or after it, ``c_return``); whether the k-th call was reached."""
    seen = 0
    struck = False

    def hook(_frame: FrameType, event: str, arg: Any) -> None:
        nonlocal seen, struck
        if event == phase and getattr(arg, "__qualname__", "") in CALLS:
            seen += 1
            if seen == k:
                sys.setprofile(None)
                struck = True
                raise KeyboardInterrupt

    sys.setprofile(hook)
    try:
        _one_run(Conversation(thread_id=f"t-{phase}-{k}", tools=[SPEC], store=store), "c1")
    except KeyboardInterrupt:
        pass
    finally:
        sys.setprofile(None)
    return struck


@pytest.mark.parametrize("phase", ["c_call", "c_return"])
def test_a_ctrl_c_at_any_instant_of_a_write_leaves_the_file_unlocked(
    tmp_path: Path, phase: str
) -> None:
    path = tmp_path / "s.sqlite"
    store = SQLiteStore(path, timeout=0.2)
    instants = 0
    for k in range(1, 60):
        if not _interrupted_at(store, k, phase):
            break
        instants += 1
        other = sqlite3.connect(path, isolation_level=None, timeout=0.2)
        try:
            other.execute("BEGIN IMMEDIATE")  # the write lock is free …
            other.execute("ROLLBACK")
        finally:
            other.close()
        # … and the same store carries another thread through
        _one_run(Conversation(thread_id=f"next-{phase}-{k}", tools=[SPEC], store=store), "c2")
    assert instants >= 10  # the hook reached every sqlite call of the disposal
    store.close()
