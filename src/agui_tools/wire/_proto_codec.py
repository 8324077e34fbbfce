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
import struct
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from functools import cache
from math import copysign
from typing import Any, Final

from google.protobuf import message as _pb_message

from .._errors import LimitExceeded, ProtocolViolation, ProtocolWarning, UsageError
from . import _proto_events_pb2 as pb
from ._enforce import (
    DEFAULT_MAX_DEPTH,
    MAX_DEPTH_CEILING,
    checked_max_depth,
    depth_excess,
    escape_pointer,
    nests_within,
    shared_enforcer,
)
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


# -- open JSON nested past upb's limit -------------------------------------------------
#
# upb refuses a message nested more than 100 protobuf levels, and a JSON level
# costs two (a list: value, list) or three (an object: value, object, entry):
# alone it would carry 32 object levels of a state the JSON binding takes 127
# of. Raising its limit (``SetAllowOversizeProtos``) is process-wide and lets a
# hostile 30,000-level frame overflow the C stack (a segfault, measured). So a
# frame upb refuses is read again by the deep reader: the envelope through
# shallow messages in which every open-JSON field is its bytes
# (:func:`_shallow_envelope`), each open value then peeled a level at a time
# here — without recursion, each level's fields read as protobuf reads them —
# handing every subtree back to upb whole at intervals (:data:`_RETRY`), which
# reads all of it when it is shallow enough. Every value may nest ``max_depth``
# levels (itself one): more than any position of the JSON binding allows, so
# what the JSON binding accepts decodes here, and enforcement then judges the
# exact position the same way for both; deeper is enforcement's ``LIMIT``
# violation too (:func:`_verdict`), found after at most ``max_depth`` levels of
# work.

_RETRY: Final = 8
"""Levels peeled by hand between attempts to hand a subtree to upb whole: a
failed attempt costs the bytes it read, so each byte is re-read by upb at most
``max_depth / _RETRY`` times."""
_UPB_LEVELS: Final = 50
"""The most JSON levels a container upb parses whole can hold (100 protobuf
levels, two per list level); a subtree read whole is measured only when fewer
levels remain."""
_DEPTH: Final[ContextVar[int]] = ContextVar("agui_tools_proto_max_depth", default=DEFAULT_MAX_DEPTH)
_CUT: Final[ContextVar[bool]] = ContextVar("agui_tools_proto_cut", default=False)
"""Set while a frame found too deep is read again for its verdict: a container
past the bound is left empty instead of refused (see :func:`_decode_deep`)."""


class _TooDeep(Exception):
    """An open value of the frame nests deeper than the deep reader's bound."""

    def __init__(self, trail: tuple[Any, ...], inner: str = "") -> None:
        keys: list[str] = []
        while trail:
            keys.append(escape_pointer(str(trail[0])))
            trail = trail[1]
        self.path = "".join(f"/{k}" for k in reversed(keys)) + inner
        super().__init__(self.path)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise _pb_message.DecodeError("truncated or overlong varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """``data``'s fields as protobuf reads them: (number, wire type, value) — an
    int for a varint, bytes for the rest; groups (no JSON message has one) are
    skipped, as upb skips an unknown field."""
    out: list[tuple[int, int, Any]] = []
    pos, end = 0, len(data)
    while pos < end:
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if number == 0 or number > 0x1FFFFFFF:
            raise _pb_message.DecodeError("field number 0 or out of range")
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, 0, value))
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > end:
                raise _pb_message.DecodeError("a length past the end")
            out.append((number, 2, data[pos : pos + size]))
            pos += size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            if pos + width > end:
                raise _pb_message.DecodeError("a fixed field past the end")
            out.append((number, wire, data[pos : pos + width]))
            pos += width
        elif wire == 3:  # a group: skip to its end, counting nested groups
            open_groups = [number]
            while open_groups:
                tag, pos = _varint(data, pos)
                inner, kind = tag >> 3, tag & 7
                if inner == 0:
                    raise _pb_message.DecodeError("field number 0")
                if kind == 0:
                    _, pos = _varint(data, pos)
                elif kind == 2:
                    size, pos = _varint(data, pos)
                    pos += size
                elif kind in (1, 5):
                    pos += 8 if kind == 1 else 4
                elif kind == 3:
                    open_groups.append(inner)
                elif kind == 4 and inner == open_groups[-1]:
                    open_groups.pop()
                else:
                    raise _pb_message.DecodeError("a malformed group")
                if pos > end:
                    raise _pb_message.DecodeError("a group past the end")
        else:
            raise _pb_message.DecodeError(f"wire type {wire}")
    return out


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _pb_message.DecodeError("a string that is not UTF-8") from None


_DOUBLE: Final = struct.Struct("<d")


def _scan_value(data: bytes | None) -> tuple[str | None, Any]:
    """A ``JsonValue``'s kind and its scalar, or its container's bytes (every
    occurrence since the kind last changed, merged as protobuf merges them)."""
    kind: str | None = None
    payload: Any = None
    for number, wire, value in _fields(data or b""):
        if number == 2 and wire == 1:
            kind, payload = "number", _DOUBLE.unpack(value)[0]
        elif number == 3 and wire == 2:
            kind, payload = "string", _text(value)
        elif number == 4 and wire == 0:
            kind, payload = "bool", bool(value)
        elif number == 1 and wire == 0:
            kind, payload = "null", None
        elif number in (5, 6) and wire == 2:
            arm = "object" if number == 5 else "list"
            if kind == arm:
                payload.append(value)
            else:
                kind, payload = arm, [value]
    if kind == "object" or kind == "list":
        payload = b"".join(payload)
    return kind, payload


def _json_number(n: float) -> float | int:
    """A JSON number as :func:`_read_value` gives it."""
    if n.is_integer() and -_SAFE <= n <= _SAFE and (n or copysign(1.0, n) > 0):
        return int(n)
    return n


def _children(data: bytes, is_object: bool) -> list[tuple[Any, bytes | None]]:
    """A container's members: (key, the value's bytes or None when it has none)."""
    out: list[tuple[Any, bytes | None]] = []
    for number, wire, value in _fields(data):
        if number != 1 or wire != 2:
            continue
        if not is_object:
            out.append((len(out), value))
            continue
        key, parts = "", None
        for n, w, v in _fields(value):
            if n == 1 and w == 2:
                key = _text(v)
            elif n == 2 and w == 2:
                parts = v if parts is None else parts + v
        out.append((key, parts))
    return out


def _deep_container(data: bytes, is_object: bool, budget: int) -> dict[str, Any] | list[Any]:
    """The container encoded in ``data`` (a ``JsonObject``'s or ``JsonList``'s
    bytes), which may nest ``budget`` levels (itself is one); raises
    :class:`_TooDeep` past them and ``DecodeError`` for bytes that do not decode."""
    root: dict[str, Any] | list[Any] = {} if is_object else []
    stack: list[tuple[bytes, bool, Any, int, tuple[Any, ...], int]] = [
        (data, is_object, root, budget, (), _RETRY)
    ]
    cut = _CUT.get()
    while stack:
        data, is_object, out, budget, trail, since = stack.pop()
        if budget <= 0:
            if cut:
                continue  # left empty, one level past the bound, unread
            raise _TooDeep(trail)
        if since >= _RETRY:
            try:
                whole: Any = (pb.JsonObject if is_object else pb.JsonList).FromString(data)
            except _pb_message.DecodeError:
                since = 0
            else:
                if is_object:
                    out.update(_read_object(whole))
                else:
                    out.extend(
                        None if (x := _read_value(v)) is _NO_VALUE else x for v in whole.values
                    )
                if budget < _UPB_LEVELS and not cut:
                    inner = depth_excess(out, budget)
                    if inner is not None:
                        raise _TooDeep(trail, inner)
                continue
        for key, value in _children(data, is_object):
            kind, payload = _scan_value(value)
            if kind == "object" or kind == "list":
                child: Any = {} if kind == "object" else []
                stack.append(
                    (payload, kind == "object", child, budget - 1, (key, trail), since + 1)
                )
            elif kind is None:
                if is_object:
                    continue
                child = None
            elif kind == "number":
                child = _json_number(payload)
            else:
                child = payload
            if is_object:
                out[key] = child
            else:
                out.append(child)
    return root


def _occurrences(parts: Any) -> bytes:
    """A singular field's bytes in a shallow message: its occurrences, merged."""
    return parts if isinstance(parts, bytes) else b"".join(parts)


def _deep_value_field(parts: Any) -> Any:
    """An open-JSON field of a shallow message, read (see the section comment)."""
    kind, payload = _scan_value(_occurrences(parts))
    if kind == "object" or kind == "list":
        return _deep_container(payload, kind == "object", _DEPTH.get())
    if kind is None:
        return _NO_VALUE
    if kind == "number":
        return _json_number(payload)
    return payload


def _deep_object_field(parts: Any) -> Any:
    """A ``JsonObject`` field (metadata) of a shallow message, read."""
    return _deep_container(_occurrences(parts), True, _DEPTH.get())


@cache
def _shallow_envelope() -> Any:
    """The envelope message class in which every open-JSON field (``JsonValue``,
    ``JsonObject``) outside the JSON messages themselves is ``repeated bytes``:
    upb reads the event's structure, never descending into a value — every
    occurrence kept, so that the deep reader merges them as protobuf does."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    file = descriptor_pb2.FileDescriptorProto()
    pb.DESCRIPTOR.CopyToProto(file)
    json_types = {f".{_VALUE.full_name}", f".{_OBJECT.full_name}"}
    json_messages = {"JsonValue", "JsonObject", "JsonList"}
    todo = [m for m in file.message_type if m.name not in json_messages]
    while todo:
        message = todo.pop()
        todo.extend(message.nested_type)
        synthetic: set[int] = set()
        for field in message.field:
            if field.type_name in json_types:
                field.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
                field.label = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
                field.ClearField("type_name")
                if field.proto3_optional:
                    synthetic.add(field.oneof_index)
                    field.ClearField("proto3_optional")
                    field.ClearField("oneof_index")
        if synthetic:  # drop those fields' synthetic oneofs, renumbering the rest
            kept = [i for i in range(len(message.oneof_decl)) if i not in synthetic]
            renumber = {old: new for new, old in enumerate(kept)}
            decls = [message.oneof_decl[i] for i in kept]
            del message.oneof_decl[:]
            message.oneof_decl.extend(decls)
            for field in message.field:
                if field.HasField("oneof_index"):
                    field.oneof_index = renumber[field.oneof_index]
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(_ENVELOPE.full_name))


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


def _compile() -> tuple[
    dict[str, Callable[[Any, Any], None]],
    dict[str, Callable[[Any], Event]],
    dict[str, Callable[[Any], Event]],
]:
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
    deep_sources: list[str] = []
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

    def base_reader(kind: str, deep: bool) -> list[str]:
        # deep: the shallow base (raw_event, metadata: their occurrences' bytes)
        raw, meta = (
            ("b.raw_event", "b.metadata")
            if deep
            else ("b.HasField('raw_event')", "b.HasField('metadata')")
        )
        value, obj = ("deep_value", "deep_object") if deep else ("read_value", "read_object")
        return [
            "    if not m.HasField('base_event'): raise NoBase()",
            "    b = m.base_event",
            f"    if b.type != {_TYPE_NUMBER_OF[kind]}: raise WrongBase(b.type)",
            f"    d = {{'type': {kind!r}}}",
            "    if b.HasField('timestamp'): d['timestamp'] = b.timestamp",
            f"    if {raw}:",
            f"        v = {value}(b.raw_event)",
            "        if v is not NO_VALUE: d['rawEvent'] = v",
            f"    if {meta}: d['metadata'] = {obj}(b.metadata)",
        ]

    def gen(md: Any) -> None:
        if md.full_name in done:
            return
        done.add(md.full_name)
        kind = arms.get(md.full_name)
        w = [f"def {_fname('w_', md)}(m, d):", "    m.SetInParent()", "    get = d.get"]
        r = [f"def {_fname('r_', md)}(m):", "    d = {}"]
        # the same reader over the shallow messages (_shallow_envelope): an open-JSON
        # field there is the bytes of its occurrences, read by the deep reader
        rd = [f"def {_fname('d_', md)}(m):", "    d = {}"]
        if kind is not None:
            r = r[:1] + base_reader(kind, False)
            rd = rd[:1] + base_reader(kind, True)
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
                    rd.append(r[-1])
                elif sub is _VALUE:
                    w.append(f"        add = {acc}.add")
                    w.append("        for x in v: fill_value(add(), x)")
                    r.append(f"    d[{key!r}] = [read_value(x) for x in {acc}]")
                    rd.append(f"    d[{key!r}] = [deep_value(x) for x in {acc}]")
                else:
                    gen(sub)
                    w.append(f"        add = {acc}.add")
                    w.append(f"        for x in v: {_fname('w_', sub)}(add(), x)")
                    r.append(f"    d[{key!r}] = [{_fname('r_', sub)}(x) for x in {acc}]")
                    rd.append(f"    d[{key!r}] = [{_fname('d_', sub)}(x) for x in {acc}]")
                continue
            if sub is _VALUE:
                if f"{md.name}.{name}" in _NULL_IS_A_VALUE:
                    w[-2] = f"    v = get({key!r}, MISSING)"
                    w[-1] = "    if v is not MISSING:"
                w.append(f"        fill_value({acc}, v)")
                r.append(f"    if m.HasField({name!r}):")
                r.append(f"        v = read_value({acc})")
                r.append(f"        if v is not NO_VALUE: d[{key!r}] = v")
                rd.append(f"    if {acc}:")
                rd.append(f"        v = deep_value({acc})")
                rd.append(f"        if v is not NO_VALUE: d[{key!r}] = v")
            elif sub is _OBJECT:
                w.append(f"        o = {acc}; o.SetInParent(); fill_object(o, v)")
                r.append(f"    if m.HasField({name!r}): d[{key!r}] = read_object({acc})")
                rd.append(f"    if {acc}: d[{key!r}] = deep_object({acc})")
            elif sub is not None:
                gen(sub)
                w.append(f"        {_fname('w_', sub)}({acc}, v)")
                r.append(f"    if m.HasField({name!r}): d[{key!r}] = {_fname('r_', sub)}({acc})")
                rd.append(f"    if m.HasField({name!r}): d[{key!r}] = {_fname('d_', sub)}({acc})")
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
                rd.append(r[-1])
        r.append("    return d")
        rd.append("    return d")
        sources.append("\n".join(w))
        sources.append("\n".join(r))
        deep_sources.append("\n".join(rd))

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
        "deep_value": _deep_value_field,
        "deep_object": _deep_object_field,
    }
    exec(compile("\n\n".join(sources), "<agui_tools proto converters>", "exec"), namespace)
    exec(compile("\n\n".join(deep_sources), "<agui_tools deep proto readers>", "exec"), namespace)
    writers = {}
    readers = {}
    deep_readers = {}
    for fd in _ENVELOPE.fields:
        writers[fd.name] = namespace[_fname("w_", fd.message_type)]
        readers[fd.name] = namespace[_fname("r_", fd.message_type)]
        deep_readers[fd.name] = namespace[_fname("d_", fd.message_type)]
    return writers, readers, deep_readers


def _all_messages(file: Any) -> list[Any]:
    """Every message type of a file descriptor, nested ones included."""
    out = []
    todo = list(file.message_types_by_name.values())
    while todo:
        md = todo.pop()
        out.append(md)
        todo.extend(md.nested_types)
    return out


class _NoBase(Exception):
    """An event message without its ``base_event``."""


class _WrongBase(Exception):
    """An event message whose base declares another type than its envelope arm."""

    def __init__(self, declared: int) -> None:
        self.declared = declared


_TYPE_NUMBER_OF: Final = {v.name: v.number for v in pb.EventType.DESCRIPTOR.values}
_WRITERS, _READERS, _DEEP_READERS = _compile()

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
    event: Mapping[str, Any],
    *,
    warnings: list[ProtocolWarning] | None = None,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> bytes:
    """One event (a wire dict) as the bytes of one binary frame's message.

    Byte for byte what ``@ag-ui/proto`` 1.0.0's ``encode`` writes for the same
    event; the 1.1 members it predates (``encryptedValueType``) are written on
    their frozen numbers, which its decoder skips. Members the wire schema does
    not model are not written. A content part with no wire form is dropped and
    said in ``warnings`` (the official encoder warns the same way).

    Raises ``ValueError`` for an event no frame can carry (no type, an unknown
    type, a JSON Patch op that is not one, a value of the wrong type or not JSON),
    and :class:`~agui_tools.UsageError` (rule ``LIMIT``) for one nesting deeper
    than ``max_depth`` levels, the event itself counting as one — the limit
    enforcement applies on either binding, so no frame is written that a
    consumer with the same limit refuses (:func:`decode_proto_event` reads
    every depth within it).
    """
    if _nests(event) and not nests_within(event, max_depth):
        where = depth_excess(event, max_depth)
        if where is not None:
            raise UsageError(
                f"{event.get('type')}: the value at {where} nests deeper than "
                f"max_depth={max_depth} levels (counting the event itself as one; the path "
                "names the first value past the limit): a consumer refuses it on either "
                "binding, so no binary frame is written for it.",
                rule="LIMIT",
            )
    arm, shaped = _shape(event, warnings)
    envelope = _Envelope()
    try:
        _WRITERS[arm](getattr(envelope, arm), shaped)
    except (TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise ValueError(f"{event.get('type')}: {exc}") from None
    data: bytes = envelope.SerializeToString()
    return data


_Envelope: Final = pb.Event


def _nests(event: Mapping[str, Any]) -> bool:
    """Whether any member of ``event`` may be a container (most events have none)."""
    for v in event.values():
        cls = v.__class__
        if cls is str or cls is int or cls is float or cls is bool or v is None:
            continue
        return True
    return False


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


def decode_proto_event(
    data: bytes,
    *,
    warnings: list[ProtocolWarning] | None = None,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Event:
    """One binary frame's message back to the event it carries (a wire dict).

    The same dict ``@ag-ui/proto`` 1.0.0's ``decode`` gives, unvalidated: the
    pipeline's enforcement judges it as it judges a JSON event. Raises
    :class:`UnknownEventArm` for a frame naming only arms this build predates
    (drop it, with its warning) and :class:`ProtocolViolation` (TRANS-7) for
    bytes that are not one known event. A content part naming no known arm is
    dropped and said in ``warnings``.

    Every open value may nest ``max_depth`` levels (itself one) — at least what
    enforcement with the same ``max_depth`` lets through at any position, so a
    value the JSON binding carries decodes here too, however many protobuf
    levels it costs (upb alone reads 100: 32 object levels); a deeper one is
    the :class:`LimitExceeded` (rule ``LIMIT``) enforcement gives the same event
    on SSE, word for word, found without reading past ``max_depth`` levels.
    A ``max_depth`` above :data:`~agui_tools.wire._enforce.MAX_DEPTH_CEILING` is
    a :class:`UsageError`.
    """
    if max_depth > MAX_DEPTH_CEILING or max_depth < 2:
        checked_max_depth(max_depth)
    try:
        envelope = _parse(data)
    except _pb_message.DecodeError as exc:
        # upb's own nesting limit, or bytes that are not a message: the deep
        # reader tells the two apart, value by value
        return _decode_deep(data, warnings, max_depth, f"not a protobuf message ({exc})")
    return _read(data, envelope, _READERS, warnings, "")


def _decode_deep(
    data: bytes,
    warnings: list[ProtocolWarning] | None,
    max_depth: int,
    broken: str = "not a protobuf message (Error parsing message)",
) -> Event:
    """:func:`decode_proto_event` for a frame upb refuses whole: its structure
    through the shallow messages, its open values by the deep reader (see
    "open JSON nested past upb's limit"). ``broken`` is what bytes that do not
    decode are called."""
    try:
        envelope = _shallow_envelope().FromString(data)
    except _pb_message.DecodeError:
        raise _malformed(broken) from None
    token = _DEPTH.set(max_depth)
    try:
        return _read(data, envelope, _DEEP_READERS, warnings, broken)
    except _TooDeep as exc:
        verdict = _verdict(data, envelope, max_depth, exc.path, broken, warnings)
        if isinstance(verdict, ProtocolViolation):
            raise verdict from None
        return verdict
    finally:
        _DEPTH.reset(token)


def _verdict(
    data: bytes,
    envelope: Any,
    max_depth: int,
    inner: str,
    broken: str,
    warnings: list[ProtocolWarning] | None,
) -> ProtocolViolation | Event:
    """The refusal of a frame with a value nested past the deep reader's bound:
    the verdict the JSON binding gives the same event, word for word.

    The frame is read again with each value kept to ``max_depth`` levels and the
    containers past them left empty — still deeper than any position allows —
    and enforcement (with the same ``max_depth``) names the first value past the
    limit exactly as it does on SSE. Enforcement measures every member of an
    event, so when it accepts the cut event no cut container is in it: the too
    deep value was one protobuf itself discards — a map key written twice, the
    first value replaced by the last (``{"a": <deep>, "a": 2}`` is ``{"a": 2}``,
    as orjson and upb read it) — and the cut event *is* the frame's event,
    returned as such. Should the cut reading fail (a frame broken further on),
    the decoder's own ``LIMIT`` stands.
    """
    kind = _TYPE_OF_ARM[envelope.WhichOneof("event")]
    own = LimitExceeded(
        "LIMIT",
        f"a binary frame's {kind} event carries a value nested deeper than "
        f"max_depth={max_depth} levels (the first level past it: {inner} inside the "
        "value); refused while decoding. Raise the limit if such values are expected.",
        event_type=kind,
        where="binary framing",
    )
    cut = _CUT.set(True)
    notes: list[ProtocolWarning] = []
    try:
        event = _read(data, envelope, _DEEP_READERS, notes, broken)
    except (ProtocolViolation, UnknownEventArm):
        return own
    finally:
        _CUT.reset(cut)
    try:
        shared_enforcer(max_depth).event(event)
    except ProtocolViolation as exc:
        return exc
    if warnings is not None:
        warnings.extend(notes)
    return event  # the deep value was overridden: nothing cut is left in the event


def _read(
    data: bytes,
    envelope: Any,
    readers: dict[str, Callable[[Any], Event]],
    warnings: list[ProtocolWarning] | None,
    broken: str,
) -> Event:
    """The event a parsed envelope carries, read by ``readers``."""
    arm = envelope.WhichOneof("event")
    if arm is None:
        future = _unknown_arms(data)
        if future:
            raise UnknownEventArm(future)
        raise _malformed("the envelope names no event")
    if not _one_field(data) and len(_arms_in(data)) > 1:
        raise _malformed("the envelope names more than one event", _TYPE_OF_ARM[arm])
    try:
        event = readers[arm](getattr(envelope, arm))
    except _pb_message.DecodeError:  # an open value's bytes, read by the deep reader
        raise _malformed(broken, _TYPE_OF_ARM[arm]) from None
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
