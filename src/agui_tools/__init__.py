"""agui-tools: the AG-UI protocol's tool-call machinery, both sides of the wire.

The data flows one way, one module per stage::

    framing (SSE/NDJSON bytes) → codec (decode) → compat (retired shapes)
    → enforce (strip unknown, malformed is fatal) → expand (chunk lanes)
    → verify (sequence rules) → reduce (thread) → conversation (dispose)
    → next run input

The names below are the public surface; each lives in the module named in
``docs/architecture.md``. Transport and server names are imported on first
use, so ``import agui_tools`` stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .codec import (
    Decoded,
    DecodedInput,
    Decoder,
    decode_event,
    decode_run_input,
    encode_event,
    from_model,
    to_model,
)
from .compat import CompatibilityBoundary
from .enforce import Enforcer
from .errors import (
    AguiError,
    InputRejected,
    LimitExceeded,
    ProtocolViolation,
    ProtocolWarning,
    UsageError,
)
from .framing import NDJSONReader, SSEReader, ndjson_frame, sse_comment, sse_frame
from .version import PROTOCOL_VERSION, __version__

if TYPE_CHECKING:
    from .client import AgentClient, SyncAgentClient, TransportError
    from .consent import ConsentPolicy, Verdict
    from .conversation import CallUpdate, Conversation, RunResult, TextDelta
    from .dispose import Answer, CallStatus, PendingCall
    from .drive import collect
    from .emitter import Emitter
    from .journal import MemoryJournal, SQLiteJournal
    from .pipeline import ConsumerPipeline, StreamResult
    from .reduce import Thread
    from .run import Run, RunCancelled, RunInterrupted
    from .server import AgentEndpoint, agent_app
    from .session import Approval, Session
    from .tools import ToolSpec
    from .verify import Limits, RunSummary

_LAZY = {
    "ConsumerPipeline": "pipeline",
    "StreamResult": "pipeline",
    "Limits": "verify",
    "RunSummary": "verify",
    "Thread": "reduce",
    "Conversation": "conversation",
    "RunResult": "conversation",
    "TextDelta": "conversation",
    "CallUpdate": "conversation",
    "Answer": "dispose",
    "CallStatus": "dispose",
    "PendingCall": "dispose",
    "ToolSpec": "tools",
    "ConsentPolicy": "consent",
    "Verdict": "consent",
    "MemoryJournal": "journal",
    "SQLiteJournal": "journal",
    "AgentClient": "client",
    "SyncAgentClient": "client",
    "TransportError": "client",
    "Session": "session",
    "Approval": "session",
    "Run": "run",
    "Emitter": "emitter",
    "RunCancelled": "run",
    "RunInterrupted": "run",
    "collect": "drive",
    "agent_app": "server",
    "AgentEndpoint": "server",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agui_tools' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "PROTOCOL_VERSION",
    "AgentClient",
    "AgentEndpoint",
    "AguiError",
    "Answer",
    "Approval",
    "CallStatus",
    "CallUpdate",
    "CompatibilityBoundary",
    "ConsentPolicy",
    "ConsumerPipeline",
    "Conversation",
    "Decoded",
    "DecodedInput",
    "Decoder",
    "Emitter",
    "Enforcer",
    "InputRejected",
    "LimitExceeded",
    "Limits",
    "MemoryJournal",
    "NDJSONReader",
    "PendingCall",
    "ProtocolViolation",
    "ProtocolWarning",
    "Run",
    "RunCancelled",
    "RunInterrupted",
    "RunResult",
    "RunSummary",
    "SQLiteJournal",
    "SSEReader",
    "Session",
    "StreamResult",
    "SyncAgentClient",
    "TextDelta",
    "Thread",
    "ToolSpec",
    "TransportError",
    "UsageError",
    "Verdict",
    "__version__",
    "agent_app",
    "collect",
    "decode_event",
    "decode_run_input",
    "encode_event",
    "from_model",
    "ndjson_frame",
    "sse_comment",
    "sse_frame",
    "to_model",
]
