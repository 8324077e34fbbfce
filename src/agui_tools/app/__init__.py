"""The application core: one thread, its runs, and the disposal of tool calls.

Sans-I/O, in the order a verified event travels::

    _reducer       ThreadState: messages, tool calls, state, runs
    _arguments     the argument preview while a call streams, strict parse at END
    _validation    the advertised JSON Schema (jsonschema-rs), errors at their path
    _tools         what the application advertised (ToolSpec)
    _consent       who decided, over which exact arguments (ConsentPolicy)
    _journal       intent before, answer after: a side effect runs at most once
    _store         the whole thread, kept between processes (MemoryStore; SQLiteStore
                   in _store_sqlite, PostgresStore and
                   AsyncPostgresStore in _store_postgres, on the SQL of
                   _store_postgres_plans and the connections of
                   _store_postgres_connect)
    _calls         one pending call and its one answer (PendingCall, Answer)
    _disposition   the gates a pending call passes, one small function each
    _answering     every way a call gets its one answer, as store steps
    _conversation  all of it for one thread, carrying out the gates' rulings
    _store_drive   the one place those steps meet the journal or store
    _driver        Driver / AsyncDriver: those steps and the handlers, performed
    _downgrade     the next RunAgentInput, shaped for older peers
    _capture       a captured stream through pipeline + reducer (verify_capture)
    _run_log       the resumable binding's run log (MemoryRunLog; SQLiteRunLog and
                   PostgresRunLog in _run_log_sql), and what a rejoin is answered
"""

from __future__ import annotations

from .._errors import (
    ReloadRequired,
    StaleThread,
    StoreOutcomeUnknown,
    StoreReadFailed,
    StoreWriteFailed,
)
from ._calls import Answer, CallStatus, PendingCall, ToolContext, idempotency_key
from ._capture import CaptureVerdict, read_frames, replay, verify_capture
from ._consent import ConsentDecision, ConsentPolicy, PolicyVerdict
from ._conversation import CallUpdate, Conversation, RunResult, TextDelta
from ._driver import AsyncDriver, Driver
from ._journal import Journal, MemoryJournal, SQLiteJournal
from ._reducer import ThreadState
from ._resume import SentResume
from ._run_log import MemoryRunLog, RunLog
from ._run_log_sql import PostgresRunLog, SQLiteRunLog
from ._store import MemoryStore, Store, ThreadRecord
from ._store_postgres import AsyncPostgresStore, PostgresStore
from ._store_sqlite import SQLiteStore
from ._tools import ToolSpec

__all__ = [
    "Answer",
    "AsyncDriver",
    "AsyncPostgresStore",
    "CallStatus",
    "CallUpdate",
    "CaptureVerdict",
    "ConsentDecision",
    "ConsentPolicy",
    "Conversation",
    "Driver",
    "Journal",
    "MemoryJournal",
    "MemoryRunLog",
    "MemoryStore",
    "PendingCall",
    "PolicyVerdict",
    "PostgresRunLog",
    "PostgresStore",
    "ReloadRequired",
    "RunLog",
    "RunResult",
    "SQLiteJournal",
    "SQLiteRunLog",
    "SQLiteStore",
    "SentResume",
    "StaleThread",
    "Store",
    "StoreOutcomeUnknown",
    "StoreReadFailed",
    "StoreWriteFailed",
    "TextDelta",
    "ThreadRecord",
    "ThreadState",
    "ToolContext",
    "ToolSpec",
    "idempotency_key",
    "read_frames",
    "replay",
    "verify_capture",
]
