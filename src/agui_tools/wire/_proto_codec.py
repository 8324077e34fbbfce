"""The binary binding's event codec: one event (wire dict) ⇄ one protobuf message.

``pages/basic/transports/http-protobuf.mdx`` (TRANS-7). The message definitions
are ``_proto_events.proto`` (numbers from ``spec/proto-freeze.txt``); the bytes
are written and read by the ``protobuf`` library's upb backend through the
generated ``_proto_events_pb2``. This module is only the mapping between the
JSON-shaped event every pipeline stage works on and that message, and it is the
official ``@ag-ui/proto`` 1.0.0 mapping, rule for rule, because the corpus pins
the encoded bytes (an encoder MUST reproduce it byte for byte):

* the fields every event carries ride in ``base_event`` (type, timestamp,
  ``rawEvent``, metadata — metadata only when it is an object);
* an open JSON object is written in JavaScript property order — keys that are
  array indices first, ascending, then the rest as they came — since that is
  the order the official encoder meets them in;
* ``RUN_FINISHED.outcome`` / ``SUBAGENT_FINISHED.outcome`` travel as the
  outcome's type string with its payload beside it (an unrecognised type rides
  as its string and is rebuilt on decode, for enforcement to strip — never
  rejected here);
* a message's ``content`` is a string, a parts array (``content_parts``) or,
  for ``activity``, an object (``activity_content``);
* a JSON Patch ``op`` is an enum: an operation's extension members have no
  field and do not survive (the binding is narrower there, by the spec).

Decoding is the official decoder's shape, too — so that an event read from
either decoder is the same dict: fields without presence come back with their
default (``""``), a known event's structural contradictions (two content forms,
a base type that disagrees with the envelope arm) are fatal, and nothing is
validated beyond that: the pipeline judges what arrives, identically for both
transports (PROC-6).

The converters between messages and dicts are compiled once, at first use,
from the generated descriptors — the ``.proto`` stays the only place a field is
named — into plain functions (attribute reads and writes, no per-field
reflection at run time).
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Mapping
from math import copysign
from typing import Any, Final

from google.protobuf import message as _pb_message

from .._errors import ProtocolViolation, ProtocolWarning
from . import _proto_events_pb2 as pb
from ._framing import PROTO_MEDIA_TYPE

__all__ = [
    "PROTO_MEDIA_TYPE",
    "UnknownEventArm",
    "decode_proto_event",
    "encode_proto_event",
]

_RULE: Final = "TRANS-7"
_SAFE: Final = 9007199254740991  # 2^53 - 1: JSON numbers round-trip up to here

Event = dict[str, Any]


class UnknownEventArm(Exception):
    """The frame names only envelope arms this build predates: an event from a
    later protocol version, not broken bytes. There is no type string to hand
    onward, so the binding drops the frame with :attr:`warning` (TRANS-7) —
    the answer enforcement gives an unknown event on SSE.
    """

    def __init__(self, fields: list[int]) -> None:
        self.fields = fields
        self.warning = ProtocolWarning(
            _RULE,
            "dropped a binary frame naming an event this build does not know (envelope field "
            f"{', '.join(map(str, fields))}): the protocol has an event this build predates.",
        )
        super().__init__(self.warning.message)


def _malformed(explanation: str, event_type: str | None = None) -> ProtocolViolation:
    return ProtocolViolation(
        _RULE,
        f"a binary frame does not decode as an event: {explanation}; the stream is not "
        "trustworthy past it.",
        event_type=event_type,
        where="binary framing",
    )


# -- open JSON ------------------------------------------------------------------------


def _is_array_index(key: str) -> bool:
    """A key JavaScript orders before all others: a canonical integer below 2^32 - 1."""
    return (
        key.isdigit() and key.isascii() and (key == "0" or key[0] != "0") and int(key) < 4294967295
    )


def js_key_order(obj: Mapping[str, Any]) -> list[str]:
    """``obj``'s keys in the order ``Object.keys`` would give them.

    The official encoder writes an open object's entries in that order, and a
    map's entry order is visible in the bytes; a ``dict`` keeps insertion order,
    which equals it unless a key is an array index.
    """
    keys = list(obj)
    if not any(k[:1].isdigit() for k in keys):
        return keys
    index = sorted((k for k in keys if _is_array_index(k)), key=int)
    if not index:
        return keys
    return index + [k for k in keys if not _is_array_index(k)]


def _fill_value(m: Any, v: Any) -> None:
    cls = v.__class__
    if cls is str:
        m.string_value = v
    elif cls is bool:
        m.bool_value = v
    elif cls is int or cls is float:
        m.number_value = v
    elif v is None:
        m.null_value = 0
    elif cls is dict or isinstance(v, Mapping):
        o = m.struct_value
        o.SetInParent()
        _fill_object(o, v)
    elif cls is list or cls is tuple:
        lv = m.list_value
        lv.SetInParent()
        add = lv.values.add
        for x in v:
            _fill_value(add(), x)
    else:
        raise TypeError(f"not a JSON value: {type(v).__name__}")


def _fill_object(m: Any, obj: Mapping[str, Any]) -> None:
    add = m.fields.add
    for k in js_key_order(obj):
        e = add()
        e.key = k
        _fill_value(e.value, obj[k])


_NO_VALUE: Final = object()
"""A JSON value message with no kind set: the official decoder reads it as
``undefined`` — the member is absent."""


def _read_value(m: Any) -> Any:
    kind = m.WhichOneof("kind")
    if kind == "string_value":
        return m.string_value
    if kind == "number_value":
        n = m.number_value
        # JSON has one number type; an integral double is the integer it spells
        # (but -0.0 stays itself: JavaScript keeps the sign, and so must a re-encode)
        if n.is_integer() and -_SAFE <= n <= _SAFE and (n or copysign(1.0, n) > 0):
            return int(n)
        return n
    if kind == "bool_value":
        return m.bool_value
    if kind == "struct_value":
        return _read_object(m.struct_value)
    if kind == "list_value":
        return [None if (x := _read_value(v)) is _NO_VALUE else x for v in m.list_value.values]
    if kind == "null_value":
        return None
    return _NO_VALUE


def _read_object(m: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for e in m.fields:
        v = _read_value(e.value) if e.HasField("value") else _NO_VALUE
        if v is not _NO_VALUE:
            out[e.key] = v
    return out


def _object_or_none(value: Any) -> Mapping[str, Any] | None:
    """Metadata as the wire declares it (an object) or nothing: a non-object
    is dropped, as the official encoder's ``normalizeMetadata`` does."""
    return value if isinstance(value, Mapping) else None


# -- compiled converters -----------------------------------------------------------

_VALUE: Final = pb.JsonValue.DESCRIPTOR
_OBJECT: Final = pb.JsonObject.DESCRIPTOR
_ENVELOPE: Final = pb.Event.DESCRIPTOR


_NULL_IS_A_VALUE: Final = frozenset(
    {
        "JsonPatchOperation.value",
        "StateSnapshotEvent.snapshot",
        "CustomEvent.value",
        "RawEvent.event",
    }
)
"""The JSON-value fields the schema requires, where ``null`` is the value itself.
Everywhere else a ``null`` stands for an absent optional member, which the
official encoder omits (``omitOptionalNulls``) — and so does this one."""
_MISSING: Final = object()


def _fname(prefix: str, md: Any) -> str:
    return prefix + str(md.full_name).replace(".", "_")


def _attr(name: str) -> str:
    return f"getattr(m, {name!r})" if keyword.iskeyword(name) else f"m.{name}"


def _compile() -> tuple[dict[str, Callable[[Any, Any], None]], dict[str, Callable[[Any], Event]]]:
    """Writers (dict → message) and readers (message → dict) for every event
    message, generated from the descriptors.

    A reader mirrors the official (ts-proto) decoder: a field without presence
    is always there with its default, an ``optional`` one only when set, a
    repeated one always a list (the mapping below removes the empty ones the
    official decoder removes). An envelope arm's writer and reader handle its
    ``base_event`` inline — the event's own ``type``, ``timestamp``,
    ``rawEvent`` and ``metadata`` — so an event needs no reshaping to be written
    and comes back flat; the reader refuses a base whose type is not the arm's.
    """
    sources: list[str] = []
    done: set[str] = set()
    envelope: Any = _ENVELOPE
    arms = {fd.message_type.full_name: fd.name.upper() for fd in envelope.fields}

    def base_writer(kind: str) -> list[str]:
        return [
            "    b = m.base_event",
            "    b.SetInParent()",
            f"    b.type = {_TYPE_NUMBER_OF[kind]}",
            "    v = get('timestamp')",
            "    if v is not None: b.timestamp = v",
            "    v = get('rawEvent')",
            "    if v is not None: fill_value(b.raw_event, v)",
            "    v = get('metadata')",
            "    if v is not None and isinstance(v, Mapping):",
            "        o = b.metadata; o.SetInParent(); fill_object(o, v)",
        ]

    def base_reader(kind: str) -> list[str]:
        return [
            "    if not m.HasField('base_event'): raise NoBase()",
            "    b = m.base_event",
            f"    if b.type != {_TYPE_NUMBER_OF[kind]}: raise WrongBase(b.type)",
            f"    d = {{'type': {kind!r}}}",
            "    if b.HasField('timestamp'): d['timestamp'] = b.timestamp",
            "    if b.HasField('raw_event'):",
            "        v = read_value(b.raw_event)",
            "        if v is not NO_VALUE: d['rawEvent'] = v",
            "    if b.HasField('metadata'): d['metadata'] = read_object(b.metadata)",
        ]

    def gen(md: Any) -> None:
        if md.full_name in done:
            return
        done.add(md.full_name)
        kind = arms.get(md.full_name)
        w = [f"def {_fname('w_', md)}(m, d):", "    m.SetInParent()", "    get = d.get"]
        r = [f"def {_fname('r_', md)}(m):", "    d = {}"]
        if kind is not None:
            r = r[:1] + base_reader(kind)
        for fd in sorted(md.fields, key=lambda f: f.number):
            name, key = fd.name, fd.json_name
            sub: Any = fd.message_type
            acc = _attr(name)
            if kind is not None and name == "base_event":
                w += base_writer(kind)
                continue
            w.append(f"    v = get({key!r})")
            w.append("    if v is not None:")
            if fd.is_repeated:
                if sub is None:
                    w.append(f"        {acc}.extend(v)")
                    r.append(f"    d[{key!r}] = list({acc})")
                elif sub is _VALUE:
                    w.append(f"        add = {acc}.add")
                    w.append("        for x in v: fill_value(add(), x)")
                    r.append(f"    d[{key!r}] = [read_value(x) for x in {acc}]")
                else:
                    gen(sub)
                    w.append(f"        add = {acc}.add")
                    w.append(f"        for x in v: {_fname('w_', sub)}(add(), x)")
                    r.append(f"    d[{key!r}] = [{_fname('r_', sub)}(x) for x in {acc}]")
                continue
            if sub is _VALUE and f"{md.name}.{name}" in _NULL_IS_A_VALUE:
                w[-2] = f"    v = get({key!r}, MISSING)"
                w[-1] = "    if v is not MISSING:"
                w.append(f"        fill_value({acc}, v)")
                r.append(f"    if m.HasField({name!r}):")
                r.append(f"        v = read_value({acc})")
                r.append(f"        if v is not NO_VALUE: d[{key!r}] = v")
            elif sub is _VALUE:
                w.append(f"        fill_value({acc}, v)")
                r.append(f"    if m.HasField({name!r}):")
                r.append(f"        v = read_value({acc})")
                r.append(f"        if v is not NO_VALUE: d[{key!r}] = v")
            elif sub is _OBJECT:
                w.append(f"        o = {acc}; o.SetInParent(); fill_object(o, v)")
                r.append(f"    if m.HasField({name!r}): d[{key!r}] = read_object({acc})")
            elif sub is not None:
                gen(sub)
                w.append(f"        {_fname('w_', sub)}({acc}, v)")
                r.append(f"    if m.HasField({name!r}): d[{key!r}] = {_fname('r_', sub)}({acc})")
            else:
                w.append(
                    f"        m.{name} = v"
                    if not keyword.iskeyword(name)
                    else f"        setattr(m, {name!r}, v)"
                )
                if fd.has_presence:
                    r.append(f"    if m.HasField({name!r}): d[{key!r}] = {acc}")
                else:
                    r.append(f"    d[{key!r}] = {acc}")
        r.append("    return d")
        sources.append("\n".join(w))
        sources.append("\n".join(r))

    for fd in _ENVELOPE.fields:
        gen(fd.message_type)
    namespace: dict[str, Any] = {
        "fill_value": _fill_value,
        "fill_object": _fill_object,
        "read_value": _read_value,
        "read_object": _read_object,
        "NO_VALUE": _NO_VALUE,
        "MISSING": _MISSING,
        "Mapping": Mapping,
        "NoBase": _NoBase,
        "WrongBase": _WrongBase,
    }
    exec(compile("\n\n".join(sources), "<agui_tools proto converters>", "exec"), namespace)
    writers = {}
    readers = {}
    for fd in _ENVELOPE.fields:
        writers[fd.name] = namespace[_fname("w_", fd.message_type)]
        readers[fd.name] = namespace[_fname("r_", fd.message_type)]
    return writers, readers


class _NoBase(Exception):
    """An event message without its ``base_event``."""


class _WrongBase(Exception):
    """An event message whose base declares another type than its envelope arm."""

    def __init__(self, declared: int) -> None:
        self.declared = declared


_TYPE_NUMBER_OF: Final = {v.name: v.number for v in pb.EventType.DESCRIPTOR.values}
_WRITERS, _READERS = _compile()

_ARM_OF_TYPE: Final = {fd.name.upper(): fd.name for fd in _ENVELOPE.fields}
_TYPE_OF_ARM: Final = {fd.name: fd.name.upper() for fd in _ENVELOPE.fields}
_ARM_NUMBERS: Final = frozenset(fd.number for fd in _ENVELOPE.fields)
_TYPE_NAME: Final = {v.number: v.name for v in pb.EventType.DESCRIPTOR.values}
_PATCH_OP: Final = {v.name.lower(): v.number for v in pb.JsonPatchOperationType.DESCRIPTOR.values}
_PATCH_NAME: Final = {v.number: v.name.lower() for v in pb.JsonPatchOperationType.DESCRIPTOR.values}

# -- encode ---------------------------------------------------------------------------


def _source_to_wire(source: Any) -> dict[str, Any] | None:
    if not isinstance(source, Mapping):
        return None
    kind = source.get("type")
    if kind == "data":
        return {"data": {"value": source.get("value"), "mimeType": source.get("mimeType")}}
    if kind == "url":
        return {"url": {"value": source.get("value"), "mimeType": source.get("mimeType")}}
    if kind == "file":
        return {
            "file": {
                "value": source.get("value"),
                "provider": source.get("provider"),
                "mimeType": source.get("mimeType"),
            }
        }
    return None


def _part_to_wire(part: Any) -> dict[str, Any] | None:
    if not isinstance(part, Mapping):
        return None
    kind = part.get("type")
    if kind == "text":
        return {
            "text": {
                "id": part.get("id"),
                "text": part.get("text"),
                "metadata": part.get("metadata"),
            }
        }
    if kind in ("image", "audio", "video", "document"):
        return {
            kind: {
                "id": part.get("id"),
                "source": _source_to_wire(part.get("source")),
                "metadata": part.get("metadata"),
            }
        }
    return None


def _parts_to_wire(parts: list[Any], at: str, notes: list[ProtocolWarning] | None) -> list[Any]:
    out = []
    for i, part in enumerate(parts):
        wire = _part_to_wire(part)
        if wire is None:
            if notes is not None:
                notes.append(
                    ProtocolWarning(
                        _RULE,
                        f"dropped {at}/{i}: no wire form for this content part, so it is not encoded.",
                        path=f"{at}/{i}",
                    )
                )
            continue
        out.append(wire)
    return out


def _message_to_wire(message: Any, at: str, notes: list[ProtocolWarning] | None) -> dict[str, Any]:
    msg = dict(message) if isinstance(message, Mapping) else {}
    msg["metadata"] = _object_or_none(msg.get("metadata"))
    calls = msg.get("toolCalls")
    if isinstance(calls, list):
        msg["toolCalls"] = [
            {**c, "metadata": _object_or_none(c.get("metadata"))} if isinstance(c, Mapping) else c
            for c in calls
        ]
    content = msg.get("content")
    if isinstance(content, list):
        msg["contentParts"] = _parts_to_wire(content, f"{at}/content", notes)
        msg["content"] = None
    elif msg.get("role") == "activity":
        msg["activityContent"] = _object_or_none(content) or {}
        msg["content"] = None
    return msg


def _with_metadata(items: Any) -> list[Any]:
    if not isinstance(items, list):
        return []
    return [
        {**x, "metadata": _object_or_none(x.get("metadata"))} if isinstance(x, Mapping) else x
        for x in items
    ]


def _input_to_wire(value: Any, notes: list[ProtocolWarning] | None) -> dict[str, Any] | None:
    if not isinstance(value, Mapping):
        return None
    messages = value.get("messages")
    return {
        "threadId": value.get("threadId"),
        "runId": value.get("runId"),
        "protocolVersion": value.get("protocolVersion"),
        "parentRunId": value.get("parentRunId"),
        "state": value.get("state"),
        "messages": [
            _message_to_wire(m, f"/input/messages/{i}", notes)
            for i, m in enumerate(messages if isinstance(messages, list) else [])
        ],
        "tools": _with_metadata(value.get("tools")),
        "context": value.get("context") if isinstance(value.get("context"), list) else [],
        "forwardedProps": value.get("forwardedProps"),
        "resume": _with_metadata(value.get("resume")),
    }


def _patch_to_wire(ops: Any, at: str) -> Any:
    if not isinstance(ops, list):
        return ops
    out = []
    for i, op in enumerate(ops):
        name = op.get("op") if isinstance(op, Mapping) else None
        number = _PATCH_OP.get(name) if isinstance(name, str) else None
        if number is None:
            raise ValueError(f"{at}/{i}/op: {name!r} is not a JSON Patch operation")
        out.append({**op, "op": number})
    return out


def _reshape(
    kind: str, event: Mapping[str, Any], notes: list[ProtocolWarning] | None
) -> Mapping[str, Any]:
    """The event with the members the wire spells differently respelled (the
    official mapping); most events need none and pass through untouched."""
    if kind not in _RESHAPED:
        return event
    rest = dict(event)
    if kind == "MESSAGES_SNAPSHOT" and isinstance(rest.get("messages"), list):
        rest["messages"] = [
            _message_to_wire(m, f"/messages/{i}", notes) for i, m in enumerate(rest["messages"])
        ]
    elif kind == "RUN_FINISHED":
        outcome = rest.pop("outcome", None)
        rest["outcome"], rest["pendingToolCallIds"], rest["interrupts"] = "", None, None
        if isinstance(outcome, Mapping):
            otype = outcome.get("type")
            rest["outcome"] = otype if isinstance(otype, str) else ""
            if otype == "success":
                rest["pendingToolCallIds"] = outcome.get("pendingToolCallIds")
            elif otype == "interrupt":
                rest["interrupts"] = outcome.get("interrupts")
    elif kind == "SUBAGENT_FINISHED":
        outcome = rest.pop("outcome", None)
        rest["outcome"], rest["interruptIds"] = "", None
        if isinstance(outcome, Mapping):
            otype = outcome.get("type")
            rest["outcome"] = otype if isinstance(otype, str) else ""
            if otype == "suspended":
                rest["interruptIds"] = outcome.get("interruptIds")
    elif kind == "STATE_DELTA":
        rest["delta"] = _patch_to_wire(rest.get("delta"), "/delta")
    elif kind == "ACTIVITY_DELTA":
        rest["patch"] = _patch_to_wire(rest.get("patch"), "/patch")
    elif kind == "TOOL_CALL_RESULT":
        content = rest.get("content")
        if isinstance(content, list):
            rest["contentParts"] = _parts_to_wire(content, "/content", notes)
            rest["content"] = None
    elif kind == "RUN_STARTED" and rest.get("input") is not None:
        rest["input"] = _input_to_wire(rest["input"], notes)
    elif kind == "ACTIVITY_SNAPSHOT":
        rest["content"] = _object_or_none(rest.get("content"))
    return rest


_RESHAPED: Final = frozenset(
    {
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
        "SUBAGENT_FINISHED",
        "STATE_DELTA",
        "ACTIVITY_DELTA",
        "TOOL_CALL_RESULT",
        "RUN_STARTED",
        "ACTIVITY_SNAPSHOT",
    }
)


def _shape(
    event: Mapping[str, Any], notes: list[ProtocolWarning] | None
) -> tuple[str, Mapping[str, Any]]:
    """The envelope arm for ``event`` and the event as its writer takes it."""
    kind = event.get("type")
    if not isinstance(kind, str) or kind not in _ARM_OF_TYPE:
        raise ValueError(f"no binary wire form for an event of type {kind!r}")
    return _ARM_OF_TYPE[kind], _reshape(kind, event, notes)


def encode_proto_event(
    event: Mapping[str, Any], *, warnings: list[ProtocolWarning] | None = None
) -> bytes:
    """One event (a wire dict) as the bytes of one binary frame's message.

    Byte for byte what ``@ag-ui/proto`` 1.0.0's ``encode`` writes for the same
    event; the 1.1 members it predates (``encryptedValueType``) are written on
    their frozen numbers, which its decoder skips. Members the wire schema does
    not model are not written. A content part with no wire form is dropped and
    said in ``warnings`` (the official encoder warns the same way).

    Raises ``ValueError`` for an event no frame can carry (no type, an unknown
    type, a JSON Patch op that is not one, a value of the wrong type or not JSON).
    """
    arm, shaped = _shape(event, warnings)
    envelope = _Envelope()
    try:
        _WRITERS[arm](getattr(envelope, arm), shaped)
    except (TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{event.get('type')}: {exc}") from None
    data: bytes = envelope.SerializeToString()
    return data


_Envelope: Final = pb.Event


# -- decode ---------------------------------------------------------------------------


def _source_from_wire(source: Mapping[str, Any]) -> dict[str, Any] | None:
    for kind in ("data", "url", "file"):
        arm = source.get(kind)
        if arm is not None:
            return {"type": kind, **arm}
    return None


def _part_from_wire(part: Mapping[str, Any]) -> dict[str, Any] | None:
    if "text" in part:
        return {"type": "text", **part["text"]}
    for kind in ("image", "audio", "video", "document"):
        if kind in part:
            body = dict(part[kind])
            if "source" in body:
                source = _source_from_wire(body["source"])
                if source is None:
                    return None  # a source naming no arm this build knows
                body["source"] = source
            return {"type": kind, **body}
    return None


def _parts_from_wire(parts: list[Any], notes: list[ProtocolWarning]) -> list[Any]:
    out = []
    for part in parts:
        read = _part_from_wire(part)
        if read is None:
            notes.append(
                ProtocolWarning(
                    _RULE,
                    "dropped a content part this build does not know: the protocol has a variant "
                    "this build predates.",
                )
            )
            continue
        out.append(read)
    return out


_PARTS_ROLES: Final = frozenset({"user", "tool"})
_KNOWN_ROLES: Final = frozenset(
    {"developer", "system", "assistant", "user", "tool", "activity", "reasoning"}
)


def _message_from_wire(
    wire: dict[str, Any], notes: list[ProtocolWarning], kind: str
) -> dict[str, Any]:
    role = wire.get("role", "")
    parts = wire.pop("contentParts", [])
    activity = wire.pop("activityContent", None)
    has_content = "content" in wire
    known = role in _KNOWN_ROLES
    uses_parts = role in _PARTS_ROLES if known else bool(parts)
    uses_map = role == "activity" if known else (not uses_parts and activity is not None)
    if known:
        if not uses_parts and parts:
            raise _malformed(
                f"a {role!r} message carries content parts, a form its role has not", kind
            )
        if activity is not None and not uses_map:
            raise _malformed("a non-activity message carries activity content", kind)
        if uses_map and has_content:
            raise _malformed("an activity message carries string content", kind)
        if uses_parts and has_content and parts:
            raise _malformed("a message carries both string content and content parts", kind)
    elif has_content + bool(parts) + (activity is not None) > 1:
        raise _malformed("a message carries more than one content form", kind)
    if uses_parts and not has_content:
        wire["content"] = _parts_from_wire(parts, notes)
    if uses_map and activity is not None:
        wire["content"] = activity
    if not wire.get("toolCalls"):
        wire.pop("toolCalls", None)
    return wire


def _patch_from_wire(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for op in ops:
        number = op["op"]
        op["op"] = _PATCH_NAME.get(number, str(number))
    return ops


def _input_from_wire(
    wire: dict[str, Any], notes: list[ProtocolWarning], kind: str
) -> dict[str, Any]:
    out: dict[str, Any] = {
        k: wire[k]
        for k in ("threadId", "runId", "protocolVersion", "parentRunId", "state")
        if k in wire
    }
    out["messages"] = [_message_from_wire(m, notes, kind) for m in wire["messages"]]
    out["tools"] = wire["tools"]
    out["context"] = wire["context"]
    if "forwardedProps" in wire:
        out["forwardedProps"] = wire["forwardedProps"]
    out["resume"] = wire["resume"]
    return out


def _outcome_from_wire(event: dict[str, Any], payload: tuple[str, ...]) -> None:
    outcome = event.pop("outcome", "")
    carried = {k: v for k in payload if (v := event.pop(k, None))}
    if not outcome:
        event.update(carried)  # no outcome: whatever rode beside it stays where it was
        return
    if outcome == "interrupt":
        carried = {"interrupts": carried.get("interrupts", []), **carried}
    event["outcome"] = {"type": outcome, **carried}


def _unknown_arms(data: bytes) -> list[int]:
    """The envelope fields of a frame that names no known arm, when every one is a
    well-formed length-delimited message — an event from a later protocol; else []."""
    from google.protobuf import empty_pb2  # any message type: all of its fields are unknown

    probe = empty_pb2.Empty()
    try:
        probe.ParseFromString(data)
    except _pb_message.DecodeError:
        return []
    found = []
    for f in _unknown(probe):
        if f.field_number in _ARM_NUMBERS or f.wire_type != 2:
            return []
        try:
            empty_pb2.Empty().ParseFromString(f.data)
        except _pb_message.DecodeError:
            return []
        found.append(f.field_number)
    return found


def _unknown(message: Any) -> list[Any]:
    """A message's unknown fields (the typing stubs do not know the set iterates)."""
    from google.protobuf import unknown_fields

    fields: Any = unknown_fields.UnknownFieldSet(message)
    return list(fields)


def _one_field(data: bytes) -> bool:
    """Whether the frame is exactly one length-delimited field, as every frame an
    encoder writes is (the envelope's one arm). Reads only the tag and length."""
    size = len(data)
    if size > 3 and data[0] < 0x80 and data[1] < 0x80:  # arms 1-15, under 128 bytes
        return data[0] & 7 == 2 and data[1] + 2 == size
    if size > 4 and data[1] < 0x80 and data[2] < 0x80:  # arms 16-31, under 128 bytes
        return data[0] & 7 == 2 and data[2] + 3 == size
    pos = 0
    for _ in range(2):  # the tag, then the length
        value = shift = 0
        while True:
            if pos >= len(data) or shift > 28:
                return False
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        if _ == 0 and value & 7 != 2:
            return False
    return pos + value == len(data)


def _arms_in(data: bytes) -> set[int]:
    """The distinct known arms a frame's top level names. Protobuf itself keeps
    the last of several; the official decoder rejects such a frame — and so do
    we, or two readers would hand on different events."""
    from google.protobuf import empty_pb2

    probe = empty_pb2.Empty()
    probe.ParseFromString(data)
    return {f.field_number for f in _unknown(probe)} & _ARM_NUMBERS


def decode_proto_event(data: bytes, *, warnings: list[ProtocolWarning] | None = None) -> Event:
    """One binary frame's message back to the event it carries (a wire dict).

    The same dict ``@ag-ui/proto`` 1.0.0's ``decode`` gives, unvalidated: the
    pipeline's enforcement judges it as it judges a JSON event. Raises
    :class:`UnknownEventArm` for a frame naming only arms this build predates
    (drop it, with its warning) and :class:`ProtocolViolation` (TRANS-7) for
    bytes that are not one known event. A content part naming no known arm is
    dropped and said in ``warnings``.
    """
    try:
        envelope = _parse(data)
    except _pb_message.DecodeError as exc:
        raise _malformed(f"not a protobuf message ({exc})") from None
    arm = envelope.WhichOneof("event")
    if arm is None:
        future = _unknown_arms(data)
        if future:
            raise UnknownEventArm(future)
        raise _malformed("the envelope names no event")
    if not _one_field(data) and len(_arms_in(data)) > 1:
        raise _malformed("the envelope names more than one event", _TYPE_OF_ARM[arm])
    try:
        event = _READERS[arm](getattr(envelope, arm))
    except _NoBase:
        raise _malformed("the event carries no base_event", _TYPE_OF_ARM[arm]) from None
    except _WrongBase as exc:
        kind = _TYPE_OF_ARM[arm]
        declared = _TYPE_NAME.get(exc.declared, str(exc.declared))
        raise _malformed(
            f"the envelope carries {kind} but the base event declares {declared}", kind
        ) from None
    kind = event["type"]
    if kind in _REBUILT:
        notes: list[ProtocolWarning] = []
        _rebuild(kind, event, notes)
        if notes and warnings is not None:
            warnings.extend(ProtocolWarning(w.rule, w.message, event_type=kind) for w in notes)
    return event


_parse: Final = pb.Event.FromString
_REBUILT: Final = frozenset(
    {
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
        "SUBAGENT_FINISHED",
        "STATE_DELTA",
        "ACTIVITY_DELTA",
        "RUN_ERROR",
        "TOOL_CALL_RESULT",
        "RUN_STARTED",
    }
)


def _rebuild(kind: str, event: Event, notes: list[ProtocolWarning]) -> None:
    """The members the wire spells differently, back in their JSON spelling."""
    if kind == "MESSAGES_SNAPSHOT":
        event["messages"] = [_message_from_wire(m, notes, kind) for m in event["messages"]]
    elif kind == "RUN_FINISHED":
        _outcome_from_wire(event, ("pendingToolCallIds", "interrupts"))
        if not event.get("usage"):
            event.pop("usage", None)
    elif kind == "SUBAGENT_FINISHED":
        _outcome_from_wire(event, ("interruptIds",))
    elif kind == "STATE_DELTA":
        _patch_from_wire(event["delta"])
    elif kind == "ACTIVITY_DELTA":
        _patch_from_wire(event["patch"])
    elif kind == "RUN_ERROR":
        if not event.get("usage"):
            event.pop("usage", None)
    elif kind == "TOOL_CALL_RESULT":
        parts = event.pop("contentParts")
        if "content" in event and parts:
            raise _malformed("a result carries both string content and content parts", kind)
        if "content" not in event:
            event["content"] = _parts_from_wire(parts, notes)
    elif kind == "RUN_STARTED" and "input" in event:
        event["input"] = _input_from_wire(event["input"], notes, kind)
