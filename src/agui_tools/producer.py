"""The producer side: make a well-formed run the easy thing for an agent to emit.

One import for agent code and transports; each name lives in the module of its
job, in the order an agent's events flow (h11's layering — the rules in a
synchronous object with no I/O, the async face and the transport around it):

================  ==============================================================
module            job
================  ==============================================================
``continuation``  the run input's history, judged before anything runs
                  (:func:`check_continuation`: FE-8, EVT-9)
``drive``         runs an agent to exactly one terminal event (:func:`drive`,
                  :func:`collect`) and decides which
``run``           what agent code holds: :class:`Run`, its handles and scopes,
                  and the stops :class:`RunCancelled` / :class:`RunInterrupted`
``emitter``       sans-I/O: builds every event and judges it before it is sent,
                  with the consumer's enforcement, expander and verifier
                  (:class:`Emitter`)
``channel``       verified order to the transport, with backpressure
                  (:class:`EventChannel`)
``server``        HTTP + SSE around all of it
================  ==============================================================
"""

from __future__ import annotations

from .channel import EventChannel
from .continuation import ContinuationRejected, check_continuation
from .drive import Agent, collect, drive
from .emitter import Emitter
from .run import (
    MessageHandle,
    ReasoningHandle,
    Run,
    RunCancelled,
    RunInterrupted,
    RunStop,
    ToolCallHandle,
    new_id,
)

__all__ = [
    "Agent",
    "ContinuationRejected",
    "Emitter",
    "EventChannel",
    "MessageHandle",
    "ReasoningHandle",
    "Run",
    "RunCancelled",
    "RunInterrupted",
    "RunStop",
    "ToolCallHandle",
    "check_continuation",
    "collect",
    "drive",
    "new_id",
]
