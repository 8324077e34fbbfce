"""Hostile inputs shared by the tests, the fuzz campaign's oracle check and bench/."""

from __future__ import annotations

from typing import Any


def patch_bomb(groups: int) -> list[dict[str, Any]]:
    """Issue 11, item 1: add/copy/copy/move groups, each doubling /a and nesting it one
    level deeper — 156 bytes a group, a 3 KB patch for 19 of them."""
    ops: list[dict[str, Any]] = []
    for _ in range(groups):
        ops += [
            {"op": "add", "path": "/t", "value": {}},
            {"op": "copy", "from": "/a", "path": "/t/x"},
            {"op": "copy", "from": "/a", "path": "/t/y"},
            {"op": "move", "from": "/t", "path": "/a"},
        ]
    return ops


# -- issue 28, item 9a: protobuf nested past upb's limit ----------------------------------


def deep(levels: int, kinds: list[bool] | None = None, sibling: Any = 1) -> Any:
    """A value nesting exactly ``levels`` levels of containers (itself one): objects
    and lists alternating (or as ``kinds`` says, True for an object), a sibling
    scalar beside each child, an object at the top."""
    kinds = kinds or [k % 2 == 0 for k in range(levels)]
    value: Any = {"leaf": sibling} if kinds[-1] else [sibling]
    for level in range(levels - 2, -1, -1):
        value = {"k": value, "s": level} if kinds[level] else [level, value]
    return value


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | 0x80 if n else byte)
        if not n:
            return bytes(out)


def nested_lists(levels: int, bottom: bytes = b"") -> bytes:
    """A ``JsonValue``'s bytes: ``levels`` lists, each holding the next (linear to build)."""
    prefixes, size = [], len(bottom)
    for _ in range(levels):
        inner = 1 + len(varint(size)) + size  # JsonList.values
        prefixes.append(b"\x32" + varint(inner) + b"\x0a" + varint(size))
        size = 1 + len(varint(inner)) + inner  # JsonValue.list_value
    return b"".join(reversed(prefixes)) + bottom


def snapshot_frame(value: bytes) -> bytes:
    """A STATE_SNAPSHOT message whose snapshot is ``value`` (a JsonValue's bytes)."""
    from agui_tools.wire import _proto_events_pb2 as pb

    base = pb.BaseEvent(type=pb.EventType.Value("STATE_SNAPSHOT")).SerializeToString()
    body = b"\x0a" + varint(len(base)) + base + b"\x12" + varint(len(value)) + value
    number = pb.Event.DESCRIPTOR.fields_by_name["state_snapshot"].number
    return varint(number << 3 | 2) + varint(len(body)) + body
