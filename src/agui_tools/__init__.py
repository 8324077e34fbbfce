"""agui-tools: the AG-UI protocol's tool-call machinery, both sides of the wire.

Three jobs, one import each::

    # serve an agent
    from agui_tools import Run, agent_app
    # drive one, disposing of its frontend tool calls
    from agui_tools import Session, AgentClient, ToolSpec, ConsentPolicy, SQLiteStore
    # verify a captured stream
    from agui_tools import verify_capture

Laid out as the data flows (``docs/architecture.md``): ``wire`` → ``app`` and ``agent``, with
``transport``, ``cli`` and ``ui`` as thin I/O faces. Names are imported on first use, so
``import agui_tools`` loads neither pydantic nor httpx; the rest is on each subpackage's
surface (docs/api.md).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._errors import (
    AguiError,
    InputRejected,
    LimitExceeded,
    ProtocolViolation,
    ProtocolWarning,
    RunCancelled,
    RunInterrupted,
    StoreError,
    TransportError,
    UsageError,
)
from ._version import PROTOCOL_VERSION, __version__

if TYPE_CHECKING:  # for type checkers and editors; the runtime imports lazily below
    from .agent import Run
    from .app import (
        Answer,
        AsyncPostgresStore,
        ConsentPolicy,
        Conversation,
        PendingCall,
        PostgresStore,
        RunResult,
        SQLiteStore,
        ToolSpec,
        verify_capture,
    )
    from .transport import AgentClient, Approval, Session, SyncAgentClient, SyncSession, agent_app
    from .wire import Limits

# name → the subpackage whose surface holds it; the one table of lazy names
_LAZY: dict[str, str] = {
    # serve an agent
    "Run": "agent",
    "agent_app": "transport",
    # drive one, with frontend tools
    "Session": "transport",
    "SyncSession": "transport",
    "AgentClient": "transport",
    "SyncAgentClient": "transport",
    "Approval": "transport",
    "Conversation": "app",
    "ToolSpec": "app",
    "ConsentPolicy": "app",
    "PendingCall": "app",
    "Answer": "app",
    "RunResult": "app",
    # keep a thread between processes (docs/deployment.md)
    "SQLiteStore": "app",
    "PostgresStore": "app",
    "AsyncPostgresStore": "app",
    # verify a stream
    "verify_capture": "app",
    "Limits": "wire",
}


def __getattr__(name: str) -> Any:
    subpackage = _LAZY.get(name)
    if subpackage is None:
        raise AttributeError(f"module 'agui_tools' has no attribute {name!r}")
    value = getattr(import_module(f".{subpackage}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    *_LAZY,
    # the stops agent code raises
    "RunCancelled",
    "RunInterrupted",
    # errors, grouped by whose fault (docs/api.md; the tree in _errors.py)
    "AguiError",
    "ProtocolViolation",
    "InputRejected",
    "LimitExceeded",
    "TransportError",
    "UsageError",
    "StoreError",
    "ProtocolWarning",
    # versions
    "PROTOCOL_VERSION",
    "__version__",
]
