"""The exceptions and warnings of agui-tools, in one place.

Who broke the rule is part of the error (the h11 habit): the peer, our caller,
the store, the network — each a branch of one tree::

    AguiError                      raised on purpose; catch it to catch them all
    ├── ProtocolViolation          the peer sent what the specification calls fatal
    │   ├── InputRejected          a RunAgentInput is malformed            → HTTP 422
    │   │   └── ContinuationRejected  it contradicts the thread's history  → HTTP 409
    │   └── LimitExceeded          a configured resource limit was passed (rule LIMIT)
    ├── UsageError                 our caller misused the library; nothing was sent
    │   ├── InvalidPayload         an interrupt's payload fails its responseSchema
    │   └── ApprovalRefused        an approval does not let a call run now (APPROVE-n)
    ├── TransportError             the agent could not be reached or the stream broke
    ├── ResumeOutcomeUnknown       a resume was sent before and may have reached the agent
    ├── ProviderStreamError        a model provider's stream cannot be translated
    ├── Refused                    the inspector turns a request down (HTTP status, why)
    ├── ReceiptRejected            a signed approval receipt does not vouch for the call
    └── StoreError                 the journal or the thread store failed (``written``)
        ├── StoreReadFailed        a read failed; nothing was written
        ├── StoreWriteFailed       a write failed or was rolled back; nothing was written
        ├── StoreOutcomeUnknown    a write was sent; its outcome is unknown
        ├── StaleThread            another writer saved a run first
        └── ReloadRequired         this object stopped at an earlier store failure

    RunStop (a BaseException)      agent code ends its run on purpose, not failing it
    ├── RunCancelled               the run ends with the cancelled outcome
    └── RunInterrupted             the run ends with the interrupt outcome

    ProtocolWarning                not an exception: something was stripped, dropped,
                                   translated or tolerated, and the spec asks it be said

Every violation and warning names a rule ID from the specification's rule
index (``spec/RULES.md``) so a reader can look up the sentence that decided it.
Each class is also importable from the surface that uses it (``agui_tools``,
``agui_tools.app``, ``agui_tools.agent``, ``agui_tools.transport``,
``agui_tools.ui.inspector``, ``agui_tools.integrations.openai``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

_VALUE_LIMIT = 80


def describe_value(value: Any, limit: int = _VALUE_LIMIT) -> str:
    """Render an offending value for a person: JSON-ish, truncated, with its type.

    Truncation keeps a megabyte-long argument string from turning an error message into
    a wall of text; the type is named because "42" and 42 look alike in prose.
    """
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"{text} ({json_type_name(value)})"


def json_type_name(value: Any) -> str:
    """The JSON name of a Python value's type, as a schema would say it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


class AguiError(Exception):
    """Base class of every exception this library raises on purpose."""


class ProtocolViolation(AguiError):
    """The peer broke a rule the specification calls fatal.

    Attributes:
        rule: the rule ID (``"PROC-2"``, ``"TOOL-20"``…) from ``spec/RULES.md``.
        index: the offending event's stream position (0-based); ``None`` for run input.
        path: JSON Pointer to the offending value (``""``: the whole event).
        value: the offending value, truncated for display, or ``None``.
        explanation: one sentence saying what was expected.
        event_type: the event's ``type`` when known.
        ids: identifiers involved (``{"toolCallId": "c1"}``), for grepping logs.
        where: what it concerns without a stream position (``"stream framing"``, ``"capture"``,
            ``"run input"``); by default "run input" for :class:`InputRejected`, else "stream".
    """

    def __init__(
        self,
        rule: str,
        explanation: str,
        *,
        index: int | None = None,
        path: str = "",
        value: str | None = None,
        event_type: str | None = None,
        ids: Mapping[str, str] | None = None,
        where: str | None = None,
    ) -> None:
        self.rule = rule
        self.explanation = explanation
        self.index = index
        self.path = path
        self.value = value
        self.event_type = event_type
        self.ids: dict[str, str] = dict(ids or {})
        self.where = where
        super().__init__(self._render())

    def at(self, index: int) -> ProtocolViolation:
        """Return this violation placed at stream position ``index``.

        Stages deeper than the pipeline do not know where in the stream they
        are; the pipeline stamps the position on the way out.
        """
        if self.index == index:
            return self
        return type(self)(
            self.rule,
            self.explanation,
            index=index,
            path=self.path,
            value=self.value,
            event_type=self.event_type,
            ids=self.ids,
            where=self.where,
        )

    def _render(self) -> str:
        where = []
        if self.index is not None:
            where.append(f"event #{self.index}")
        elif self.where is not None:
            where.append(self.where)
        elif self.event_type is None and isinstance(self, InputRejected):
            where.append("run input")
        if self.event_type:
            where.append(self.event_type)
        if self.path:
            where.append(f"at {self.path}")
        ids = ", ".join(f"{k}={v!r}" for k, v in self.ids.items())
        text = f"[{self.rule}] {' '.join(where) or 'stream'}: {self.explanation}"
        if self.value is not None:
            text += f" Got {self.value}."
        if ids:
            text += f" ({ids})"
        return text

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready description, for ``--json`` output and HTTP error bodies."""
        out: dict[str, Any] = {
            "rule": self.rule,
            "index": self.index,
            "path": self.path,
            "message": self.explanation,
        }
        if self.value is not None:
            out["value"] = self.value
        if self.event_type:
            out["eventType"] = self.event_type
        if self.ids:
            out["ids"] = self.ids
        return out


class InputRejected(ProtocolViolation):
    """A ``RunAgentInput`` is malformed (or fails a continuation rule).

    A subclass rather than a flag so that a server can map it to HTTP 4xx
    and a client can refuse to send, each by catching one type.
    """


class ContinuationRejected(InputRejected):
    """The run input continues a thread in a way the producer must not accept.

    A dangling call or an answer to nothing is not malformed JSON: it is a
    conflict with the thread's own history, which is why a server answers it
    with 409 rather than 422, naming the ids in ``tool_call_ids``.
    """

    def __init__(
        self,
        rule: str,
        explanation: str,
        *,
        tool_call_ids: Sequence[str] = (),
        message_ids: Sequence[str] = (),
        **kw: Any,
    ) -> None:
        self.tool_call_ids = tuple(tool_call_ids)
        self.message_ids = tuple(message_ids)
        ids = {"toolCallIds": ",".join(self.tool_call_ids)}
        if self.message_ids:
            ids["messageIds"] = ",".join(self.message_ids)
        kw.setdefault("ids", ids)
        super().__init__(rule, explanation, **kw)

    def at(self, index: int) -> ContinuationRejected:
        return self  # run input has no stream position

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        out.pop("ids", None)
        out["toolCallIds"] = list(self.tool_call_ids)
        if self.message_ids:
            out["messageIds"] = list(self.message_ids)
        return out


class UsageError(AguiError):
    """The calling code misused the library; nothing was sent or executed.

    Carries the rule the misuse would have broken when there is one, so the
    message tells the caller *why* the library refused.
    """

    def __init__(self, message: str, *, rule: str | None = None) -> None:
        self.rule = rule
        super().__init__(f"[{rule}] {message}" if rule else message)


class InvalidPayload(UsageError):
    """A payload does not satisfy its interrupt's ``responseSchema``; nothing was sent.

    ``interrupt`` is the open interrupt (:class:`~agui_tools.transport.Interrupt`);
    ``errors`` holds each failure at its JSON path, as for tool arguments.
    """

    def __init__(self, interrupt: Any, errors: Sequence[Any]) -> None:
        self.interrupt = interrupt
        self.errors = list(errors)
        listed = "; ".join(str(e) for e in self.errors)
        super().__init__(
            f"the payload for interrupt {interrupt.id!r} does not satisfy its responseSchema: "
            f"{listed}"
        )


class ApprovalRefused(UsageError):
    """A call's approval does not let it run now: the arguments that would run are not
    those approved (APPROVE-1), the approval expired (APPROVE-2), or its tool's quorum
    does not hold (APPROVE-3) — docs/approvals.md. Nothing ran; the call is back to
    awaiting consent. ``call_id`` and ``tool`` name the call.
    """

    def __init__(self, call: Any, rule: str, why: str) -> None:
        self.call_id: str = call.call_id
        self.tool: str = call.name
        super().__init__(
            f"call {call.call_id!r} of {call.name!r} is not executed: {why}; it awaits consent "
            "again",
            rule=rule,
        )


class ResumeOutcomeUnknown(AguiError):
    """A resume of the interrupted run was sent before (an earlier life, another replica)
    and no run of it was saved: it may have reached the agent, so nothing is sent now.
    ``sent`` is the recorded :class:`~agui_tools.app.SentResume`; a session's
    ``resume_unknown=`` decides whether to send it again (docs/transport.md).
    """

    rule = "INT-7"

    def __init__(self, message: str, sent: Any) -> None:
        self.sent = sent
        super().__init__(f"[INT-7] {message}")


class LimitExceeded(ProtocolViolation):
    """A configured resource limit was exceeded (event size, argument text…).

    Not a rule of the specification but of this consumer: ``rule`` is
    ``"LIMIT"`` and the explanation names the limit and how to raise it.
    """


class TransportError(AguiError):
    """The agent could not be reached, answered with something other than an event stream,
    or the connection failed mid-stream.

    ``status`` (``None``: no connection; the httpx exception is ``__cause__``); ``body``, the
    start of the answer (where a server names the rejected field); ``truncated``: failed
    mid-stream, the run already ended truncated with what arrived.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: str = "",
        url: str = "",
        truncated: bool = False,
    ) -> None:
        self.status = status
        self.body = body
        self.url = url
        self.truncated = truncated
        super().__init__(message)


class ProviderStreamError(AguiError):
    """The provider's stream is not a Chat Completions stream we can translate.

    Raised inside the agent, so the run ends with ``RUN_ERROR``: a malformed
    provider stream is the agent's failure, not something to repair.
    """


class Refused(AguiError):
    """A request the inspector turns down, with the HTTP status and why (shown to the user)."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra


class ReceiptRejected(AguiError):
    """A receipt does not vouch for what the agent is about to do (docs/receipts.md).

    ``rule`` is the receipt rule it fails (``"RCPT-1"`` … ``"RCPT-8"``: malformed,
    unknown key, bad signature, another call's, other arguments, expired, not an
    approval, too few approvers); ``statement`` the statement as read, when it could be read.
    Nothing the receipt vouches for may be executed.
    """

    def __init__(
        self, rule: str, explanation: str, *, statement: Any = None, about: str | None = None
    ) -> None:
        self.rule = rule
        self.explanation = explanation
        self.statement = statement
        self.about = about
        where = f"the receipt for {about}" if about else "the receipt"
        super().__init__(f"[{rule}] {where} is refused: {explanation}")


class RunStop(BaseException):
    """Ends the run on purpose, without failing it.

    A ``BaseException`` for the reason ``asyncio.CancelledError`` is one: agent
    code wraps tool calls in ``except Exception`` handlers, and a stop must
    pass through them to :func:`~agui_tools.agent.drive`.
    """


class RunCancelled(RunStop):
    """Stop the run before it completes, for a reason that is not a failure.

    The run ends with ``RUN_FINISHED`` carrying the cancelled outcome (RUN-5),
    after everything open is closed (RUN-6). ``reason`` is logged; the
    cancelled outcome has no field to carry it.
    """

    def __init__(self, reason: str | None = None) -> None:
        self.reason = reason
        super().__init__(reason or "cancelled")


class RunInterrupted(RunStop):
    """Stop the run to ask for something; it ends with the interrupt outcome."""

    def __init__(self, interrupts: Sequence[Mapping[str, Any]]) -> None:
        self.interrupts = [dict(i) for i in interrupts]
        super().__init__(f"interrupted ({len(self.interrupts)} interrupt(s))")


@dataclass(frozen=True, slots=True)
class ProtocolWarning:
    """Something was stripped, dropped, translated or tolerated.

    ``path`` is a JSON Pointer inside the event (``"/futureProp"``) or empty;
    ``index`` is the event's stream position, ``None`` for run input.
    """

    rule: str
    message: str
    index: int | None = None
    path: str = ""
    event_type: str | None = None
    ids: Mapping[str, str] = field(default_factory=dict)

    def at(self, index: int) -> ProtocolWarning:
        if self.index == index:
            return self
        return ProtocolWarning(self.rule, self.message, index, self.path, self.event_type, self.ids)

    def __str__(self) -> str:
        where = (
            f"event #{self.index}"
            if self.index is not None
            else ("" if self.event_type else "run input")
        )
        if self.event_type:
            where = f"{where} {self.event_type}".strip()
        if self.path:
            where += f" at {self.path}"
        return f"[{self.rule}] {where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "index": self.index,
            "path": self.path,
            "message": self.message,
        }
        if self.event_type:
            out["eventType"] = self.event_type
        if self.ids:
            out["ids"] = dict(self.ids)
        return out


Written = Literal["no", "unknown", "yes"]
"""What a failed store operation left in the store: nothing, perhaps something, or all of it."""


class StoreError(AguiError):
    """The journal or the thread store could not record or read something — the one root of
    every storage failure, sync or async (the tree above: each subclass says what happened).

    The recovery is always "reload" (docs/deployment.md, "When the store fails"): a new
    ``Session``/``Conversation`` on the same store and ``thread_id`` (a ``Session`` does it on
    its next ``send``), then the same ``send(text, message_id=…)``. It is safe: the journal
    decides what ran, so nothing runs or is added twice.

    Attributes:
        written: ``"no"``, ``"unknown"`` or ``"yes"`` — what the failed operation left stored.
        operation: what was being done, in words ("save run 3 of thread 't1'").
        advice: what the application should do next, in one sentence.
    """

    written: Written = "unknown"
    advice: str = (
        "reload the thread (a new Session or Conversation on the same store and thread_id) "
        "and retry with the same message_id"
    )

    def __init__(
        self, message: str, *, written: Written | None = None, operation: str = ""
    ) -> None:
        if written is not None:
            self.written = written
        self.operation = operation
        super().__init__(message)


JournalError = StoreError
"""The name of :class:`StoreError` before the journal and the store shared one tree."""


class StoreReadFailed(StoreError):
    """A read (load, lookup, decisions) failed: nothing was written."""

    written: Written = "no"


class StoreWriteFailed(StoreError):
    """A write failed before it reached the store, or was rolled back: nothing was
    written (a pool that had no connection, a SQLite lock held too long, a full disk)."""

    written: Written = "no"


class StoreOutcomeUnknown(StoreError):
    """A write was sent and its outcome is unknown: it may have committed. Either way the
    call reads "outcome unknown" afterwards, never "not run", and is never run twice.
    """

    written: Written = "unknown"


class StaleThread(StoreError):
    """A writer's copy of a thread is out of date: another writer saved a run first. Nothing
    of the refused run was written; reload and retry.
    """

    written: Written = "no"

    def __init__(self, thread_id: str, expected: int, actual: int) -> None:
        self.thread_id = thread_id
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"thread {thread_id!r} moved on: this writer loaded version {expected}, the store "
            f"holds version {actual} (another process saved a run meanwhile); nothing of this "
            "run was written — reload the thread (a new Conversation or Session on the same "
            "store and thread_id) and retry; a Session retry passes the same message_id, so the "
            "user's message is not added twice",
            operation=f"save a run of thread {thread_id!r}",
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.thread_id, self.expected, self.actual))


class ReloadRequired(StoreError):
    """This conversation stopped at an earlier store failure (``cause``) and refuses to go on:
    its copy may be ahead of or behind the store. Nothing was written; reload (a new
    ``Conversation``/``Session`` on the same store and ``thread_id``) and retry — a ``Session``
    reloads itself on its next ``send``.
    """

    written: Written = "no"

    def __init__(self, thread_id: str, cause: StoreError) -> None:
        self.thread_id = thread_id
        self.cause = cause
        super().__init__(
            f"thread {thread_id!r}: this conversation stopped at a store failure "
            f"({type(cause).__name__}: {cause}) and goes no further; nothing was written — "
            "reload the thread (a new Conversation or Session on the same store and "
            "thread_id; a Session reloads on its next send) and retry with the same message_id",
            operation="continue after a store failure",
        )
