"""A session's conversation holding one frontend call its handler has not run yet."""

from __future__ import annotations

from typing import Any

from agui_tools.app import Driver
from agui_tools.app._conversation import Conversation
from agui_tools.transport._session import (
    BaseSession,
)


def pending_call(session: BaseSession[Any], name: str, args: str) -> Conversation:
    conv = session._conversation()
    conv.next_input(user="go", run_id="r1")
    conv.receive_many(
        [
            {"type": "RUN_STARTED", "threadId": conv.thread_id, "runId": "r1"},
            {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": name},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": args},
            {"type": "TOOL_CALL_END", "toolCallId": "c1"},
            {"type": "RUN_FINISHED", "threadId": conv.thread_id, "runId": "r1"},
        ]
    )
    Driver(conv).end_run()
    return conv
