"""A hand-written protobuf codec for the binary binding — measured, not shipped.

The alternative the wire codec was chosen against (``bench/proto.py``, "why the
library"): varints, tags and lengths in pure Python, driven by tables built
from the same generated descriptors ``agui_tools.wire._proto_codec`` uses, on
the same shaped messages (camelCase dicts in the envelope arm's shape). Its
decoder returns only the fields present, which flatters it a little.
"""

from __future__ import annotations

import struct
from typing import Any

from google.protobuf.descriptor import FieldDescriptor as FD

from agui_tools.wire import _proto_events_pb2 as pb
from agui_tools.wire._proto_codec import js_key_order

_VALUE = pb.JsonValue.DESCRIPTOR
_OBJECT = pb.JsonObject.DESCRIPTOR
S, I64, ENUM, BOOL, MSG, JV, JO = range(7)


def _varint_slow(n: int) -> bytes:
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL = [_varint_slow(i) for i in range(1 << 14)]


def varint(n: int) -> bytes:
    return _SMALL[n] if 0 <= n < 16384 else _varint_slow(n)


def _kind(fd: Any) -> int:
    if fd.type == FD.TYPE_STRING:
        return S
    if fd.type == FD.TYPE_INT64:
        return I64
    if fd.type == FD.TYPE_ENUM:
        return ENUM
    if fd.type == FD.TYPE_BOOL:
        return BOOL
    if fd.message_type is _VALUE:
        return JV
    if fd.message_type is _OBJECT:
        return JO
    return MSG


_ENC: dict[str, list[Any]] = {}
_DEC: dict[str, dict[int, Any]] = {}


def _enc_table(md: Any) -> list[Any]:
    t = _ENC.get(md.full_name)
    if t is None:
        t = _ENC[md.full_name] = []
        for fd in sorted(md.fields, key=lambda f: f.number):
            k = _kind(fd)
            wt = 2 if k in (S, MSG, JV, JO) else 0
            sub = _enc_table(fd.message_type) if k == MSG else None
            t.append(
                (fd.json_name, varint(fd.number << 3 | wt), k, fd.has_presence, fd.is_repeated, sub)
            )
    return t


def _dec_table(md: Any) -> dict[int, Any]:
    d = _DEC.get(md.full_name)
    if d is None:
        d = _DEC[md.full_name] = {}
        for fd in md.fields:
            k = _kind(fd)
            d[fd.number] = (
                fd.json_name,
                k,
                fd.is_repeated,
                _dec_table(fd.message_type) if k == MSG else None,
            )
    return d


_D = struct.Struct("<d").pack
_UD = struct.Struct("<d").unpack_from


def _enc_value(v: Any) -> bytes:
    c = v.__class__
    if c is str:
        b = v.encode()
        return b"\x1a" + varint(len(b)) + b
    if c is bool:
        return b"\x20\x01" if v else b"\x20\x00"
    if c is int or c is float:
        return b"\x11" + _D(v)
    if v is None:
        return b"\x08\x00"
    if c is list:
        body = b"".join(b"\x0a" + varint(len(x)) + x for x in map(_enc_value, v))
        return b"\x32" + varint(len(body)) + body
    body = _enc_object(v)
    return b"\x2a" + varint(len(body)) + body


def _enc_object(d: dict[str, Any]) -> bytes:
    parts = []
    for k in js_key_order(d):
        kb, vb = k.encode(), _enc_value(d[k])
        entry = (b"\x0a" + varint(len(kb)) + kb if kb else b"") + b"\x12" + varint(len(vb)) + vb
        parts.append(b"\x0a" + varint(len(entry)) + entry)
    return b"".join(parts)


def _enc_msg(t: list[Any], obj: dict[str, Any]) -> bytes:
    out = []
    get = obj.get
    for key, tag, k, pres, rep, sub in t:
        v = get(key)
        if v is None:
            continue
        if rep:
            for x in v:
                b = x.encode() if k == S else _enc_msg(sub, x) if k == MSG else _enc_value(x)
                out += (tag, varint(len(b)), b)
            continue
        if k == S:
            if not pres and v == "":
                continue
            b = v.encode()
        elif k == MSG:
            b = _enc_msg(sub, v)
        elif k == JV:
            b = _enc_value(v)
        elif k == JO:
            b = _enc_object(v)
        elif k == BOOL:
            out += (tag, b"\x01" if v else b"\x00")
            continue
        else:
            if not pres and v == 0:
                continue
            out += (tag, varint(v))
            continue
        out += (tag, varint(len(b)), b)
    return b"".join(out)


_ARMS = {
    fd.name: (varint(fd.number << 3 | 2), _enc_table(fd.message_type))
    for fd in pb.Event.DESCRIPTOR.fields
}
_DARMS = {fd.number: (fd.name, _dec_table(fd.message_type)) for fd in pb.Event.DESCRIPTOR.fields}


_TYPE = {v.name: v.number for v in pb.EventType.DESCRIPTOR.values}


def encode(arm: str, event: Any) -> bytes:
    """``event`` as ``_proto_codec._shape`` leaves it: flat, the base members beside the rest."""
    base = {"type": _TYPE[event["type"]]}
    for key in ("timestamp", "rawEvent", "metadata"):
        if key in event:
            base[key] = event[key]
    tag, t = _ARMS[arm]
    b = _enc_msg(t, {**event, "baseEvent": base})
    return tag + varint(len(b)) + b


def _rvarint(buf: bytes, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    r, shift = b & 0x7F, 7
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        r |= (b & 0x7F) << shift
        if b < 0x80:
            return r, pos
        shift += 7


def _dec_value(buf: bytes, pos: int, end: int) -> Any:
    r: Any = None
    while pos < end:
        tag = buf[pos]
        pos += 1
        if tag == 0x11:
            r = _UD(buf, pos)[0]
            pos += 8
            continue
        n, pos = _rvarint(buf, pos)
        if tag == 0x1A:
            r = buf[pos : pos + n].decode()
            pos += n
        elif tag == 0x20:
            r = bool(n)
        elif tag == 0x08:
            r = None
        elif tag == 0x2A:
            r = _dec_object(buf, pos, pos + n)
            pos += n
        elif tag == 0x32:
            r, e = [], pos + n
            while pos < e:
                pos += 1
                m, pos = _rvarint(buf, pos)
                r.append(_dec_value(buf, pos, pos + m))
                pos += m
    return r


def _dec_object(buf: bytes, pos: int, end: int) -> dict[str, Any]:
    d = {}
    while pos < end:
        pos += 1
        n, pos = _rvarint(buf, pos)
        e, key, val = pos + n, "", None
        while pos < e:
            t = buf[pos]
            pos += 1
            m, pos = _rvarint(buf, pos)
            if t == 0x0A:
                key = buf[pos : pos + m].decode()
            else:
                val = _dec_value(buf, pos, pos + m)
            pos += m
        d[key] = val
    return d


def _dec_msg(d: dict[int, Any], buf: bytes, pos: int, end: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    while pos < end:
        tag, pos = _rvarint(buf, pos)
        f = d.get(tag >> 3)
        if tag & 7 == 2:
            n, pos = _rvarint(buf, pos)
            e = pos + n
            if f is not None:
                key, k, rep, sub = f
                v = (
                    buf[pos:e].decode()
                    if k == S
                    else _dec_msg(sub, buf, pos, e)
                    if k == MSG
                    else _dec_value(buf, pos, e)
                    if k == JV
                    else _dec_object(buf, pos, e)
                )
                if rep:
                    out.setdefault(key, []).append(v)
                else:
                    out[key] = v
            pos = e
        else:
            n, pos = _rvarint(buf, pos)
            if f is not None:
                out[f[0]] = bool(n) if f[1] == BOOL else n
    return out


def decode(buf: bytes) -> tuple[str, dict[str, Any]]:
    tag, pos = _rvarint(buf, 0)
    n, pos = _rvarint(buf, pos)
    name, d = _DARMS[tag >> 3]
    return name, _dec_msg(d, buf, pos, pos + n)
