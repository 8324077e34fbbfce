"""The thread reducer: verified events folded into messages and state.

It trusts the pipeline's sequence and only assembles; cost per event does not grow with the
thread (deltas append to part lists, ids are indexed, nothing is cloned per event). Where
things land (``basic/metadata``, ``events/*``):

* text messages, reopen appending without changing role or name (TEXT-2, TEXT-3);
* tool calls on their assistant message, raw ``arguments`` (TOOL-26); results as tool
  messages right after their call's message (TOOL-12), data never obeyed (TOOL-23);
* reasoning and activity messages; ``MESSAGES_SNAPSHOT`` reconciled by id, keeping
  client-only roles (STATE-1);
* ``STATE_SNAPSHOT`` replaces, ``STATE_DELTA`` applies atomically or warns (STATE-2);
* ``encryptedValue`` kept unmodified (REAS-1), an unknown entity warns (REAS-2);
* metadata merged per key, last write wins, never recursing (META-4, META-5).

A call's parent is the assistant message ``parentMessageId`` names, else a new one with that
id, else (none, or not an assistant) a new one keyed by the call id — as the official client.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from .._errors import LimitExceeded, ProtocolWarning, UsageError
from ..wire._enforce import checked_max_depth, depth_excess
from ..wire._kinds import WireEvent, handlers
from ..wire._verify import Limits
from ._arguments import ArgumentBuffer
from ._patch import Document, PatchFailed, PatchTooDeep, PatchTooLarge

__all__ = ["ThreadState"]

JsonObj = dict[str, Any]

_TEXT_ROLES: Final = frozenset({"developer", "system", "assistant", "user"})
# Enforcement bounds every event's nesting, but patches compose: each may add a
# value as deep as one event allows under a path into what earlier ones built.
# State sits at level 2 of the events and run inputs that carry it, hence the
# value budget of max_depth - 1 (ThreadState._value_depth).


@dataclass(frozen=True, slots=True)
class Encoded:
    """The thread's messages as a save last encoded them: the records, and each one's
    JSON bytes (:meth:`ThreadState.encoded`)."""

    records: list[object]
    blobs: list[bytes]


NOTHING_ENCODED = Encoded([], [])


def _common_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """How many leading items ``a`` and ``b`` share, by identity, compared a slice at a
    time (list equality tests identity first, in C)."""
    n = min(len(a), len(b))
    i = 0
    while i < n:
        j = min(i + 1024, n)
        if a[i:j] == b[i:j]:
            i = j
            continue
        while a[i] is b[i]:
            i += 1
        return i
    return n


class _Call:
    __slots__ = ("buffer", "encrypted", "encrypted_type", "id", "message", "metadata", "name")

    def __init__(self, call_id: str, name: str, message: _Message, arguments: str = "") -> None:
        self.id = call_id
        self.name = name
        self.buffer = ArgumentBuffer(arguments)
        self.metadata: dict[str, Any] | None = None
        self.encrypted: str | None = None
        self.encrypted_type: str | None = None
        self.message = message

    @property
    def arguments(self) -> str:
        return self.buffer.text

    def to_wire(self) -> JsonObj:
        out: JsonObj = {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }
        if self.encrypted is not None:
            out["encryptedValue"] = self.encrypted
            if self.encrypted_type is not None:
                out["encryptedValueType"] = self.encrypted_type
        if self.metadata is not None:
            out["metadata"] = dict(self.metadata)
        return out


class _Message:
    """A message under assembly. ``fields`` holds everything but content/calls/metadata."""

    __slots__ = ("calls", "content", "fields", "id", "length", "metadata", "parts", "role", "size")

    def __init__(self, message_id: str, role: str) -> None:
        self.id = message_id
        self.role = role
        self.fields: dict[str, Any] = {}
        self.parts: list[str] | None = None  # streamed string content
        self.length = 0  # characters of streamed content, against max_message_bytes
        self.content: Any = None  # non-streamed content (parts list, activity object, …)
        self.size: int | None = None  # an activity's content: its encoded size, once known
        self.metadata: dict[str, Any] | None = None
        self.calls: list[_Call] | None = None

    def stream(self) -> list[str]:
        """The streamed parts, starting from the whole content a message may hold."""
        if self.parts is None:
            text = self.content if isinstance(self.content, str) else ""
            self.parts = [text] if text else []
            self.length = len(text)
            self.content = None
        return self.parts

    def text(self) -> str | None:
        parts = self.parts
        if parts is None:
            return self.content if isinstance(self.content, str) else None
        if len(parts) > 1:
            joined = "".join(parts)
            parts.clear()
            parts.append(joined)
        return parts[0] if parts else ""

    def to_wire(self) -> JsonObj:
        out: JsonObj = {"id": self.id, "role": self.role}
        if self.parts is not None:
            out["content"] = self.text()
        elif self.content is not None:
            out["content"] = self.content
        out.update(self.fields)
        if self.calls:
            out["toolCalls"] = [c.to_wire() for c in self.calls]
        if self.metadata is not None:
            out["metadata"] = dict(self.metadata)
        return out


def _merge(target: _Message | _Call, event: WireEvent) -> None:
    meta = event.get("metadata")
    if meta:
        if target.metadata is None:
            target.metadata = dict(meta)
        else:
            target.metadata.update(meta)  # key by key, last write wins, no recursion


def _from_wire(msg: Mapping[str, Any]) -> tuple[_Message, list[_Call]]:
    """A complete message (from input history or a snapshot) as a record."""
    record = _Message(msg["id"], msg["role"])
    calls: list[_Call] = []
    for key, value in msg.items():
        if key in ("id", "role"):
            continue
        if key == "content":
            record.content = value
        elif key == "metadata":
            record.metadata = dict(value)
        elif key == "toolCalls":
            record.calls = []
            for wire_call in value:
                call = _Call(
                    wire_call["id"],
                    wire_call["function"]["name"],
                    record,
                    wire_call["function"]["arguments"],
                )
                call.encrypted = wire_call.get("encryptedValue")
                call.encrypted_type = wire_call.get("encryptedValueType")
                if "metadata" in wire_call:
                    call.metadata = dict(wire_call["metadata"])
                record.calls.append(call)
                calls.append(call)
        else:
            record.fields[key] = value
    return record, calls


class ThreadState:
    """A conversation's messages and state, folded from verified events.

    Args:
        messages: the history the run input carried (wire dicts).
        state: the starting state; absent means ``{}`` (INPUT-13).
        on_warning: called with each warning.
        limits: the reducer keeps ``max_depth`` (a deeper patch does not apply, STATE-2),
            ``max_state_bytes`` (state and each activity's content; past it,
            :class:`LimitExceeded`) and ``max_message_bytes``; initial state past them is a
            :class:`UsageError`: it could never be sent again.
        max_depth: overrides ``limits.max_depth``.

    :attr:`state` is patched in place (:mod:`agui_tools.app._patch`): copy it to keep a version.
    """

    def __init__(
        self,
        messages: Iterable[Mapping[str, Any]] = (),
        state: Any = None,
        *,
        on_warning: Callable[[ProtocolWarning], None] | None = None,
        max_depth: int | None = None,
        limits: Limits | None = None,
    ) -> None:
        limits = limits or Limits()
        max_depth = limits.max_depth if max_depth is None else checked_max_depth(max_depth)
        self._value_depth = max_depth - 1  # a state value sits one level inside its event
        self._max_depth = max_depth
        self._max_bytes = limits.max_state_bytes
        self._max_text = limits.max_message_bytes
        initial: Any = {}
        if state is not None:
            too_deep = depth_excess(state, self._value_depth)
            if too_deep is not None:
                raise UsageError(
                    f"the initial state nests deeper than max_depth={max_depth} levels allow, "
                    f"at {too_deep or '/'}: it could not be sent to an agent (LIMIT)"
                )
            try:
                blob = orjson.dumps(state)
            except orjson.JSONEncodeError as exc:
                raise UsageError(f"the initial state is not JSON ({exc})") from None
            if len(blob) > self._max_bytes:
                raise UsageError(
                    f"the initial state is {len(blob)} bytes of JSON, past max_state_bytes="
                    f"{self._max_bytes}: it could not be received back from an agent (LIMIT)"
                )
            # a copy of our own — deepcopy, not a JSON round trip: a NaN the application
            # put there must reach the client's refusal to send it, not turn into null
            initial = copy.deepcopy(state)
        self._list: list[_Message] = []
        # answers recorded since the order was last read, by owner: placed in one pass
        # when it is (placing each on arrival scanned the list — quadratic disposal)
        self._later: dict[int, tuple[_Message, list[_Message]]] = {}
        self._by_id: dict[str, _Message] = {}
        self._touched: set[str] = set()  # message ids an event may have changed (encoded())
        self._calls: dict[str, _Call] = {}
        self._answers: dict[str, str] = {}  # toolCallId → the tool message answering it
        self._state = self._document(initial, None if state is None else len(blob))
        self.warnings: list[ProtocolWarning] = []
        self._warning_sink = on_warning
        for msg in messages:
            self._append_wire(msg)
        self._handlers = handlers(self)

    # -- reading -----------------------------------------------------------------

    @property
    def messages(self) -> list[JsonObj]:
        """The thread's messages as wire dicts (built on each access)."""
        return [m.to_wire() for m in self._order]

    def message(self, message_id: str) -> JsonObj | None:
        """The message as a wire dict — built whole: O(its size), not for every delta."""
        record = self._by_id.get(message_id)
        return record.to_wire() if record is not None else None

    def has_message(self, message_id: str) -> bool:
        return message_id in self._by_id

    def role(self, message_id: str) -> str | None:
        """A message's role, in O(1) (a UI labelling a text delta asks this per delta)."""
        record = self._by_id.get(message_id)
        return record.role if record is not None else None

    @property
    def state(self) -> Any:
        """The current state (live: patched in place by later deltas)."""
        return self._state.value

    @property
    def state_bytes(self) -> int:
        """The state's size as compact JSON, kept up to date by every snapshot and delta."""
        return self._state.size

    def __len__(self) -> int:
        return len(self._order)

    def tool_call(self, call_id: str) -> JsonObj | None:
        """The call as it appears in history (``arguments`` is the raw text)."""
        call = self._calls.get(call_id)
        return call.to_wire() if call is not None else None

    def arguments(self, call_id: str) -> str | None:
        call = self._calls.get(call_id)
        return call.arguments if call is not None else None

    def argument_buffer(self, call_id: str) -> ArgumentBuffer | None:
        """The live argument buffer of a call (for previews while it streams)."""
        call = self._calls.get(call_id)
        return call.buffer if call is not None else None

    def call_name(self, call_id: str) -> str | None:
        call = self._calls.get(call_id)
        return call.name if call is not None else None

    def call_owner(self, call_id: str) -> str | None:
        """The ``subagentRunId`` of the message holding the call (None: the parent agent)."""
        call = self._calls.get(call_id)
        return call.message.fields.get("subagentRunId") if call is not None else None

    def has_result(self, call_id: str) -> bool:
        """Whether a tool message in the thread answers ``call_id``."""
        return call_id in self._answers

    def unanswered_calls(self) -> list[str]:
        """Every tool call in the thread that no tool message answers, in order."""
        return [c.id for m in self._order if m.calls for c in m.calls if c.id not in self._answers]

    def calls(self) -> list[JsonObj]:
        """Every tool call in the thread, in message order."""
        return [c.to_wire() for m in self._order if m.calls for c in m.calls]

    # -- folding -----------------------------------------------------------------

    def apply(self, event: WireEvent, index: int | None = None) -> None:
        """Fold one verified event into the thread."""
        handler = self._handlers.get(event["type"])
        if handler is not None:
            self._note(event)  # the records it names, before (a handler may fail midway) …
            handler(event, index)
            self._note(event)  # … and after (a call's owner exists once it started)

    def _note(self, event: WireEvent) -> None:
        """Remember the messages ``event`` may change, for :meth:`encoded`: every
        message it names, and the message holding every call it names. Generous
        on purpose — a message noted that did not change costs one encoding."""
        touched = self._touched
        for key in ("messageId", "parentMessageId", "entityId"):
            ident = event.get(key)
            if isinstance(ident, str):
                touched.add(ident)
                call = self._calls.get(ident)
                if call is not None:
                    touched.add(call.message.id)
        call_id = event.get("toolCallId")
        if isinstance(call_id, str):
            call = self._calls.get(call_id)
            if call is not None:
                touched.add(call.message.id)

    def encoded(self, previous: Encoded) -> tuple[int, Encoded]:
        """Every message as JSON bytes, and how many leading ones are as ``previous`` had them:
        what a save writes is what changed.

        The unchanged prefix is found by record identity a slice at a time (in C); after it each
        message is re-encoded unless untouched and in place, and compared byte for byte. Raises
        ``TypeError`` for a value JSON cannot carry.
        """
        touched, self._touched = self._touched, set()
        order = self._order
        old_records, old_blobs = previous.records, previous.blobs
        same = _common_prefix(order, old_records)
        for ident in touched:
            record = self._by_id.get(ident)
            if record is None or same == 0:
                continue
            try:
                same = order.index(record, 0, same)  # identity: _Message has no __eq__
            except ValueError:
                continue
        blobs = old_blobs[:same]
        keep: int | None = None
        dumps = orjson.dumps
        for i in range(same, len(order)):
            record = order[i]
            if i < len(old_records) and old_records[i] is record and record.id not in touched:
                blob = old_blobs[i]
            else:
                blob = dumps(record.to_wire())
                if keep is None and (i >= len(old_blobs) or old_blobs[i] != blob):
                    keep = i
            blobs.append(blob)
        if keep is None:
            keep = min(len(order), len(old_blobs))
        return keep, Encoded(list(order), blobs)

    def apply_all(self, events: Iterable[WireEvent]) -> None:
        apply = self.apply
        for ev in events:
            apply(ev)

    # -- messages ------------------------------------------------------------------

    def _append(self, record: _Message) -> None:
        self._order.append(record)
        self._by_id[record.id] = record
        if record.role == "tool":
            self._answers.setdefault(record.fields["toolCallId"], record.id)

    def _append_wire(self, msg: Mapping[str, Any]) -> None:
        record, calls = _from_wire(msg)
        self._append(record)
        for call in calls:
            self._calls[call.id] = call

    def _on_text_message_start(self, ev: WireEvent, index: int | None) -> None:
        self._open_message(ev, index, ev.get("role", "assistant"), ("name",), "; text dropped")

    def _on_reasoning_message_start(self, ev: WireEvent, index: int | None) -> None:
        self._open_message(ev, index, "reasoning", (), "")

    def _open_message(
        self, ev: WireEvent, index: int | None, role: str, kept: tuple[str, ...], dropped: str
    ) -> None:
        """A message (re)opens: a new one takes ``role`` and the ``kept`` fields; a
        known one continues from what it holds; an activity's id takes no text."""
        ident = ev["messageId"]
        record = self._by_id.get(ident)
        if record is None:
            record = _Message(ident, role)
            record.parts = []
            for name in (*kept, "subagentRunId"):
                if name in ev:
                    record.fields[name] = ev[name]
            self._append(record)
        elif record.role == "activity":
            self._warn(
                "EVT-8", f"{ev['type']} names activity message {ident!r}{dropped}.", index, ev
            )
            return
        else:
            # reopening a message that arrived whole (history, snapshot, or a
            # call-only assistant message): continue from its content
            record.stream()
        _merge(record, ev)

    def _on_text_message_content(self, ev: WireEvent, index: int | None) -> None:
        record = self._by_id.get(ev["messageId"])
        if record is None or record.role == "activity":
            # the message is gone (a snapshot dropped it) or the id names an activity:
            # the delta has nowhere to land, and that is said, not swallowed
            self._warn(
                "STATE-1",
                f"{ev['type']} for message {ev['messageId']!r}, which the thread no longer holds "
                "as a text message (a MESSAGES_SNAPSHOT replaced the set); the delta was dropped.",
                index,
                ev,
            )
            return
        # a message restated whole (a snapshot) while it was still streaming:
        # later deltas keep appending to it (STREAM-5)
        parts = record.parts
        if parts is None:
            parts = record.stream()
        delta = ev["delta"]
        record.length += len(delta)
        if record.length > self._max_text:
            raise LimitExceeded(
                "LIMIT",
                f"message {record.id!r} streamed more than max_message_bytes={self._max_text} "
                "characters of text; raise the limit if such messages are expected.",
                index=index,
                event_type=ev["type"],
                ids={"messageId": record.id},
            )
        parts.append(delta)
        if "metadata" in ev:
            _merge(record, ev)

    def _on_text_message_end(self, ev: WireEvent, index: int | None) -> None:
        record = self._by_id.get(ev["messageId"])
        if record is not None and "metadata" in ev:
            _merge(record, ev)

    # a reasoning message folds like a text message once it has started
    _on_reasoning_message_content = _on_text_message_content
    _on_reasoning_message_end = _on_text_message_end

    # -- tool calls ------------------------------------------------------------------

    def _on_tool_call_start(self, ev: WireEvent, index: int | None) -> None:
        call_id = ev["toolCallId"]
        call = self._calls.get(call_id)
        if call is not None:  # a reopen: established values stand (TOOL-8), metadata merges
            _merge(call, ev)
            return
        parent_id = ev.get("parentMessageId")
        parent = self._by_id.get(parent_id) if parent_id is not None else None
        if parent is None or parent.role != "assistant":
            new_id = parent_id if parent_id is not None and parent is None else call_id
            parent = _Message(new_id, "assistant")
            if "subagentRunId" in ev:
                parent.fields["subagentRunId"] = ev["subagentRunId"]
            self._append(parent)
        if parent.calls is None:
            parent.calls = []
        call = _Call(call_id, ev["toolCallName"], parent)
        parent.calls.append(call)
        self._calls[call_id] = call
        _merge(call, ev)

    def _on_tool_call_args(self, ev: WireEvent, index: int | None) -> None:
        call = self._calls.get(ev["toolCallId"])
        if call is None:
            return
        call.buffer.append(ev["delta"])
        if "metadata" in ev:
            _merge(call, ev)

    def _on_tool_call_end(self, ev: WireEvent, index: int | None) -> None:
        call = self._calls.get(ev["toolCallId"])
        if call is not None and "metadata" in ev:
            _merge(call, ev)

    def _on_tool_call_result(self, ev: WireEvent, index: int | None) -> None:
        record = _Message(ev["messageId"], "tool")
        record.content = ev["content"]  # stored as given: data, never instructions (TOOL-23)
        record.fields["toolCallId"] = ev["toolCallId"]
        if "subagentRunId" in ev:
            record.fields["subagentRunId"] = ev["subagentRunId"]
        _merge(record, ev)
        self._insert_result(record)

    def add_message(self, message: Mapping[str, Any]) -> None:
        """Append a complete message the application adds (a user turn, say)."""
        if message["id"] in self._by_id:
            raise ValueError(f"message id {message['id']!r} is already in the thread (EVT-8)")
        self._append_wire(message)

    def withdraw(self, message_ids: Iterable[str]) -> None:
        """Take back messages the application added for a run that never started.

        Only for messages the application itself added (:meth:`add_message`):
        a retry after a failed POST then sends each of them once.
        """
        for ident in message_ids:
            record = self._by_id.pop(ident, None)
            if record is None:
                continue
            self._order.remove(record)
            for call in record.calls or ():
                self._calls.pop(call.id, None)
            if record.role == "tool":
                call_id = record.fields["toolCallId"]
                if self._answers.get(call_id) == ident:
                    del self._answers[call_id]
                    for other in self._order:  # another tool message may answer it too
                        if other.role == "tool" and other.fields.get("toolCallId") == call_id:
                            self._answers[call_id] = other.id
                            break

    def add_tool_message(self, message: Mapping[str, Any]) -> None:
        """Record the application's answer to a call, right after the call's message."""
        if message["id"] in self._by_id:
            raise ValueError(f"message id {message['id']!r} is already in the thread (EVT-8)")
        record, _ = _from_wire(message)
        self._insert_result(record)

    @property
    def _order(self) -> list[_Message]:
        """The messages in order, with the answers recorded since last read placed."""
        if self._later:
            self._place()
        return self._list

    @_order.setter
    def _order(self, order: list[_Message]) -> None:
        self._later.clear()
        self._list = order

    def _insert_result(self, record: _Message) -> None:
        """A tool message goes right after the message holding its call, after the
        results already there — placed when the order is next read (:meth:`_place`),
        so answering n calls costs O(n), not a scan of the thread per answer."""
        call = self._calls.get(record.fields["toolCallId"])
        if call is None:
            self._order.append(record)
        else:
            owner = call.message
            entry = self._later.get(id(owner))
            if entry is None:
                self._later[id(owner)] = (owner, [record])
            else:
                entry[1].append(record)
        self._by_id[record.id] = record
        self._answers.setdefault(record.fields["toolCallId"], record.id)

    def _place(self) -> None:
        later, self._later = self._later, {}
        out: list[_Message] = []
        carry: list[_Message] | None = None
        for m in self._list:
            if carry is not None and m.role != "tool":
                out += carry  # after the owner and the results it already had
                carry = None
            out.append(m)
            entry = later.pop(id(m), None)
            if entry is not None and entry[0] is m:
                carry = entry[1]
        if carry is not None:
            out += carry
        for _, rest in later.values():  # the owner left the thread: at the end
            out += rest
        self._list = out

    def _on_reasoning_encrypted_value(self, ev: WireEvent, index: int | None) -> None:
        target: _Message | _Call | None
        if ev["subtype"] == "tool-call":
            target = self._calls.get(ev["entityId"])
        else:
            message = self._by_id.get(ev["entityId"])
            target = message if message is not None and message.role != "activity" else None
        if target is None:
            self._warn(
                "REAS-2",
                f"REASONING_ENCRYPTED_VALUE names {ev['subtype']} {ev['entityId']!r}, which this thread "
                "does not hold; the value was not stored.",
                index,
                ev,
            )
            return
        value_type = ev.get("encryptedValueType")
        if isinstance(target, _Call):
            target.encrypted = ev["encryptedValue"]
            target.encrypted_type = value_type
        else:
            target.fields["encryptedValue"] = ev["encryptedValue"]
            if value_type is None:
                target.fields.pop(
                    "encryptedValueType", None
                )  # an old type would mislabel new bytes
            else:
                target.fields["encryptedValueType"] = value_type

    # -- snapshots and state ---------------------------------------------------------

    def _on_messages_snapshot(self, ev: WireEvent, index: int | None) -> None:
        incoming = ev["messages"]
        has_activity = any(m["role"] == "activity" for m in incoming)
        has_reasoning = any(m["role"] == "reasoning" for m in incoming)
        by_id = {m["id"]: m for m in incoming}
        order: list[_Message] = []
        calls: dict[str, _Call] = {}
        seen: set[str] = set()
        for record in self._order:
            wire = by_id.get(record.id)
            if wire is not None:
                replaced, new_calls = _from_wire(wire)
                order.append(replaced)
                seen.add(record.id)
                for call in new_calls:
                    calls[call.id] = call
            elif (record.role == "activity" and not has_activity) or (
                record.role == "reasoning" and not has_reasoning
            ):
                order.append(record)  # client-only material the producer cannot know about
        for wire in incoming:
            if wire["id"] not in seen:
                record, new_calls = _from_wire(wire)
                order.append(record)
                seen.add(wire["id"])
                for call in new_calls:
                    calls[call.id] = call
        self._order = order
        self._by_id = {m.id: m for m in order}
        self._calls = calls
        self._answers = {}
        for m in order:
            if m.role == "tool":
                self._answers.setdefault(m.fields["toolCallId"], m.id)

    def _on_run_started(self, ev: WireEvent, index: int | None) -> None:
        run_input = ev.get("input")
        if run_input is None:
            return
        for msg in run_input.get("messages", ()):
            if msg["id"] not in self._by_id:
                self._append_wire(msg)

    def _document(self, value: Any, size: int | None = None) -> Document:
        return Document(
            value,
            size=size,
            max_bytes=self._max_bytes,
            max_depth=self._value_depth,
            max_work=self._max_bytes,
        )

    def _snapshot(self, value: Any, what: str, index: int | None, ev: WireEvent) -> Document:
        """A snapshot's value as a document of our own: measured and copied in one
        encoding (C speed), refused past ``max_state_bytes`` before it is built."""
        blob = orjson.dumps(value)
        if len(blob) > self._max_bytes:
            raise self._too_large(
                f"{what} is {len(blob)} bytes of JSON, past max_state_bytes={self._max_bytes}",
                "",
                index,
                ev,
            )
        return self._document(orjson.loads(blob), len(blob))

    def _patch(
        self, doc: Document, ops: Any, what: str, kept: str, index: int | None, ev: WireEvent
    ) -> bool:
        """Apply a patch in place, all or nothing; False (and a warning) when it does not apply."""
        try:
            doc.apply(ops)
        except PatchTooLarge as exc:
            raise self._too_large(f"{what} was not applied: {exc}", exc.path, index, ev) from None
        except PatchTooDeep:
            self._warn(
                "STATE-2",
                f"{what} would nest the value deeper than max_depth={self._max_depth} levels "
                f"allow (LIMIT); it is not applied and {kept}.",
                index,
                ev,
            )
            return False
        except PatchFailed as exc:
            self._warn("STATE-2", f"{what} did not apply ({exc}); {kept}.", index, ev)
            return False
        return True

    def _too_large(
        self, message: str, path: str, index: int | None, ev: WireEvent
    ) -> LimitExceeded:
        ids = {"messageId": ev["messageId"]} if "messageId" in ev else None
        return LimitExceeded(
            "LIMIT",
            f"{message}; raise max_state_bytes if such values are expected.",
            index=index,
            event_type=ev["type"],
            ids=ids,
        )

    def _on_state_snapshot(self, ev: WireEvent, index: int | None) -> None:
        self._state = self._snapshot(ev["snapshot"], "the snapshot", index, ev)

    def _on_state_delta(self, ev: WireEvent, index: int | None) -> None:
        self._patch(
            self._state,
            ev["delta"],
            "STATE_DELTA",
            "the prior state is kept until the next snapshot",
            index,
            ev,
        )

    def _on_activity_snapshot(self, ev: WireEvent, index: int | None) -> None:
        ident = ev["messageId"]
        record = self._by_id.get(ident)
        replace = ev.get("replace", True)
        if record is not None and record.role == "activity":
            if replace:
                content = self._snapshot(ev["content"], "the activity's content", index, ev)
                record.content, record.size = content.value, content.size
                record.fields["activityType"] = ev["activityType"]
                # a replacing snapshot re-mints ownership, including to absent
                if "subagentRunId" in ev:
                    record.fields["subagentRunId"] = ev["subagentRunId"]
                else:
                    record.fields.pop("subagentRunId", None)
            _merge(record, ev)
            return
        if record is not None and not replace:
            return
        content = self._snapshot(ev["content"], "the activity's content", index, ev)
        new = _Message(ident, "activity")
        new.fields["activityType"] = ev["activityType"]
        new.content, new.size = content.value, content.size
        if "subagentRunId" in ev:
            new.fields["subagentRunId"] = ev["subagentRunId"]
        _merge(new, ev)
        if record is not None:  # replacing a non-activity message with the same id
            self._order[self._order.index(record)] = new
            self._by_id[ident] = new
        else:
            self._append(new)

    def _on_activity_delta(self, ev: WireEvent, index: int | None) -> None:
        ident = ev["messageId"]
        record = self._by_id.get(ident)
        if record is None or record.role != "activity":
            what = "does not exist" if record is None else f"is a {record.role} message"
            self._warn(
                "STATE-2",
                f"ACTIVITY_DELTA for message {ident!r}, which {what}; skipped.",
                index,
                ev,
            )
            return
        _merge(record, ev)
        if record.size is None:  # content that arrived in history: ours once, measured once
            blob = orjson.dumps(record.content)
            record.content, record.size = orjson.loads(blob), len(blob)
        doc = self._document(record.content, record.size)
        if self._patch(
            doc,
            ev["patch"],
            f"ACTIVITY_DELTA for {ident!r}",
            "the activity keeps its prior content",
            index,
            ev,
        ):
            record.content, record.size = doc.value, doc.size
            record.fields["activityType"] = ev["activityType"]

    def _warn(self, rule: str, message: str, index: int | None, ev: WireEvent) -> None:
        warning = ProtocolWarning(rule, message, index, "", ev["type"])
        self.warnings.append(warning)
        if self._warning_sink is not None:
            self._warning_sink(warning)
