"""The binary binding's deep reader: open JSON nested past upb's limit, without recursion.

upb refuses more than 100 protobuf levels (about 32 JSON object levels), and raising it is
process-wide and lets a hostile frame overflow the C stack. So a refused frame is read again:
the envelope shallowly (:func:`shallow_envelope`), each open value peeled a level at a time,
subtrees handed back to upb whole at intervals (:data:`_RETRY`). Values may nest
``max_depth`` levels, so what JSON accepts decodes here; deeper is enforcement's ``LIMIT``.
"""

from __future__ import annotations

import struct
from contextvars import ContextVar
from functools import cache
from math import copysign
from typing import Any, Final

from google.protobuf import message as _pb_message

from . import _proto_events_pb2 as pb
from ._enforce import DEFAULT_MAX_DEPTH, depth_excess, escape_pointer
from ._proto_json import NO_VALUE, SAFE_INTEGER, read_object, read_value

__all__ = [
    "DEEP_CUT",
    "DEEP_DEPTH",
    "TooDeep",
    "deep_object_field",
    "deep_value_field",
    "shallow_envelope",
]

_VALUE: Final = pb.JsonValue.DESCRIPTOR
_OBJECT: Final = pb.JsonObject.DESCRIPTOR
_ENVELOPE: Final = pb.Event.DESCRIPTOR


_RETRY: Final = 8
"""Levels peeled by hand between attempts to hand a subtree to upb whole: a
failed attempt costs the bytes it read, so each byte is re-read by upb at most
``max_depth / _RETRY`` times."""
_UPB_LEVELS: Final = 50
"""The most JSON levels a container upb parses whole can hold (100 protobuf
levels, two per list level); a subtree read whole is measured only when fewer
levels remain."""
DEEP_DEPTH: Final[ContextVar[int]] = ContextVar(
    "agui_tools_proto_max_depth", default=DEFAULT_MAX_DEPTH
)
DEEP_CUT: Final[ContextVar[bool]] = ContextVar("agui_tools_proto_cut", default=False)
"""Set while a frame found too deep is read again for its verdict: a container
past the bound is left empty instead of refused (see :func:`_decode_deep`)."""


class TooDeep(Exception):
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
    """A JSON number as :func:`read_value` gives it."""
    if n.is_integer() and -SAFE_INTEGER <= n <= SAFE_INTEGER and (n or copysign(1.0, n) > 0):
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
    :class:`TooDeep` past them and ``DecodeError`` for bytes that do not decode."""
    root: dict[str, Any] | list[Any] = {} if is_object else []
    stack: list[tuple[bytes, bool, Any, int, tuple[Any, ...], int]] = [
        (data, is_object, root, budget, (), _RETRY)
    ]
    cut = DEEP_CUT.get()
    while stack:
        data, is_object, out, budget, trail, since = stack.pop()
        if budget <= 0:
            if cut:
                continue  # left empty, one level past the bound, unread
            raise TooDeep(trail)
        if since >= _RETRY:
            try:
                whole: Any = (pb.JsonObject if is_object else pb.JsonList).FromString(data)
            except _pb_message.DecodeError:
                since = 0
            else:
                if is_object:
                    out.update(read_object(whole))
                else:
                    out.extend(
                        None if (x := read_value(v)) is NO_VALUE else x for v in whole.values
                    )
                if budget < _UPB_LEVELS and not cut:
                    inner = depth_excess(out, budget)
                    if inner is not None:
                        raise TooDeep(trail, inner)
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


def deep_value_field(parts: Any) -> Any:
    """An open-JSON field of a shallow message, read (see the section comment)."""
    kind, payload = _scan_value(_occurrences(parts))
    if kind == "object" or kind == "list":
        return _deep_container(payload, kind == "object", DEEP_DEPTH.get())
    if kind is None:
        return NO_VALUE
    if kind == "number":
        return _json_number(payload)
    return payload


def deep_object_field(parts: Any) -> Any:
    """A ``JsonObject`` field (metadata) of a shallow message, read."""
    return _deep_container(_occurrences(parts), True, DEEP_DEPTH.get())


@cache
def shallow_envelope() -> Any:
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
