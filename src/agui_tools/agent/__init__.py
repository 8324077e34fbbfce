"""The agent side (producer): make a well-formed run the easy thing to emit.

Each name lives in the module of its job, in the order events flow (h11's layering):

================  ==============================================================
module            job
================  ==============================================================
``_history``      the run input's history judged first (:func:`check_continuation`)
``_runner``       an agent run to exactly one terminal event (:func:`drive`, :func:`collect`)
``_run``          what agent code holds: :class:`Run`, its handles, scopes and stops
``_emitter``      sans-I/O: every event built and judged before it is sent (:class:`Emitter`)
``_channel``      verified order to the transport, with backpressure (:class:`EventChannel`)
``_receipts``     a signed approval receipt checked before acting (:func:`verify_receipt`)
================  ==============================================================

HTTP + SSE around it is :func:`agui_tools.transport.agent_app`.
"""

from __future__ import annotations

from .._errors import ReceiptRejected
from ..app._receipts import Keyring
from ._channel import EventChannel
from ._emitter import Emitter
from ._history import ContinuationRejected, check_continuation
from ._receipts import verify_quorum, verify_receipt
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
    "verify_quorum",
    "verify_receipt",
]
