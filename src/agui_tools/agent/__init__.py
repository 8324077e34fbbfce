"""The agent side (producer): make a well-formed run the easy thing to emit.

Each name lives in the private module of its job, in the order an agent's
events flow (h11's layering — the rules in a synchronous object with no I/O,
the async face and the transport around it):

================  ==============================================================
module            job
================  ==============================================================
``_history``      the run input's history, judged before anything runs
                  (:func:`check_continuation`: FE-8, EVT-9)
``_runner``       runs an agent to exactly one terminal event (:func:`drive`,
                  :func:`collect`) and decides which
``_run``          what agent code holds: :class:`Run`, its handles and scopes,
                  and the stops :class:`RunCancelled` / :class:`RunInterrupted`
``_emitter``      sans-I/O: builds every event and judges it before it is sent,
                  with the consumer's enforcement, expander and verifier
                  (:class:`Emitter`)
``_channel``      verified order to the transport, with backpressure
                  (:class:`EventChannel`)
``_receipts``     a signed approval receipt checked before the agent acts on
                  it (:func:`verify_receipt`, :class:`Keyring`; docs/receipts.md)
================  ==============================================================

HTTP + SSE around all of it is :func:`agui_tools.transport.agent_app`.
"""

from __future__ import annotations

from .._errors import ReceiptRejected
from ..app._receipts import Keyring
from ._channel import EventChannel
from ._emitter import Emitter
from ._history import ContinuationRejected, check_continuation
from ._receipts import verify_receipt
from ._run import (
    MessageHandle,
    ReasoningHandle,
    Run,
    RunCancelled,
    RunInterrupted,
    RunStop,
    ToolCallHandle,
    new_id,
)
from ._runner import Agent, collect, drive

__all__ = [
    "Agent",
    "ContinuationRejected",
    "Emitter",
    "EventChannel",
    "Keyring",
    "MessageHandle",
    "ReasoningHandle",
    "ReceiptRejected",
    "Run",
    "RunCancelled",
    "RunInterrupted",
    "RunStop",
    "ToolCallHandle",
    "check_continuation",
    "collect",
    "drive",
    "new_id",
    "verify_receipt",
]
