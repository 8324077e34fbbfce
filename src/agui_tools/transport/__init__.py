"""The I/O faces over HTTP: thin adapters around the sans-I/O cores.

``_client``   httpx: POST a RunAgentInput, read the SSE stream into a
              Conversation (AgentClient, SyncAgentClient; their BaseAgentClient)
``_session``  the object applications write against: client + conversation +
              typed tool registration + consent + UI updates (Session,
              SyncSession; the loop both run is BaseSession's)
``_server``   Starlette/ASGI: judge the input, run the agent, stream SSE
              (agent_app, AgentEndpoint); ``_resumable`` its opt-in resumable
              binding (Resumable), ``_rejoin`` the client's side (RejoinPolicy)
``_mock``     the same judging, then recorded runs replayed instead of an agent,
              faults injected on purpose (mock_app, MockEndpoint)
"""

from __future__ import annotations

from .._errors import ResumeOutcomeUnknown
from ..app._resume import SentResume
from ._client import AgentClient, BaseAgentClient, SyncAgentClient
from ._mock import Fault, MockEndpoint, mock_app
from ._rejoin import RejoinPolicy
from ._resumable import Resumable
from ._server import AgentEndpoint, agent_app
from ._session import (
    Approval,
    BaseSession,
    Interrupt,
    InterruptedCall,
    InvalidPayload,
    Resolution,
    Session,
    SyncSession,
    ToolContext,
    tool_spec_from_function,
)

__all__ = [
    "AgentClient",
    "AgentEndpoint",
    "Approval",
    "BaseAgentClient",
    "BaseSession",
    "Fault",
    "Interrupt",
    "InterruptedCall",
    "InvalidPayload",
    "MockEndpoint",
    "RejoinPolicy",
    "Resolution",
    "Resumable",
    "ResumeOutcomeUnknown",
    "SentResume",
    "Session",
    "SyncAgentClient",
    "SyncSession",
    "ToolContext",
    "agent_app",
    "mock_app",
    "tool_spec_from_function",
]
