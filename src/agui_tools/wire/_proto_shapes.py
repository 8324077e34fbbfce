"""Messages, content parts, run inputs and JSON Patches between their wire and proto shapes.

The binary binding's messages are narrower or shaped otherwise than the wire's
JSON: a message's ``content`` is a string, a parts array (``content_parts``)
or, for ``activity``, an object (``activity_content``); metadata is kept only
when it is an object, as the official encoder's ``normalizeMetadata`` keeps it;
a patch ``op`` is an enum. The codec reshapes each event's members through
these, both ways, as ``@ag-ui/proto`` 1.0.0 does; a frame they cannot read is
refused as :func:`malformed_frame` says (TRANS-7).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._errors import ProtocolViolation, ProtocolWarning
from . import _proto_events_pb2 as pb
from ._proto_json import object_or_none

__all__ = [
    "RULE",
    "input_from_wire",
    "input_to_wire",
    "malformed_frame",
    "message_from_wire",
    "message_to_wire",
    "parts_from_wire",
    "parts_to_wire",
    "patch_from_wire",
    "patch_to_wire",
]

RULE: Final = "TRANS-7"
_PATCH_OP: Final = {v.name.lower(): v.number for v in pb.JsonPatchOperationType.DESCRIPTOR.values}
_PATCH_NAME: Final = {v.number: v.name.lower() for v in pb.JsonPatchOperationType.DESCRIPTOR.values}


def malformed_frame(explanation: str, event_type: str | None = None) -> ProtocolViolation:
    return ProtocolViolation(
        RULE,
        f"a binary frame does not decode as an event: {explanation}; the stream is not "
        "trustworthy past it.",
        event_type=event_type,
        where="binary framing",
    )


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


def parts_to_wire(parts: list[Any], at: str, notes: list[ProtocolWarning] | None) -> list[Any]:
    out = []
    for i, part in enumerate(parts):
        wire = _part_to_wire(part)
        if wire is None:
            if notes is not None:
                notes.append(
                    ProtocolWarning(
                        RULE,
                        f"dropped {at}/{i}: no wire form for this content part, so it is not encoded.",
                        path=f"{at}/{i}",
                    )
                )
            continue
        out.append(wire)
    return out


def message_to_wire(message: Any, at: str, notes: list[ProtocolWarning] | None) -> dict[str, Any]:
    msg = dict(message) if isinstance(message, Mapping) else {}
    msg["metadata"] = object_or_none(msg.get("metadata"))
    calls = msg.get("toolCalls")
    if isinstance(calls, list):
        msg["toolCalls"] = [
            {**c, "metadata": object_or_none(c.get("metadata"))} if isinstance(c, Mapping) else c
            for c in calls
        ]
    content = msg.get("content")
    if isinstance(content, list):
        msg["contentParts"] = parts_to_wire(content, f"{at}/content", notes)
        msg["content"] = None
    elif msg.get("role") == "activity":
        msg["activityContent"] = object_or_none(content) or {}
        msg["content"] = None
    return msg


def _with_metadata(items: Any) -> list[Any]:
    if not isinstance(items, list):
        return []
    return [
        {**x, "metadata": object_or_none(x.get("metadata"))} if isinstance(x, Mapping) else x
        for x in items
    ]


def input_to_wire(value: Any, notes: list[ProtocolWarning] | None) -> dict[str, Any] | None:
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
            message_to_wire(m, f"/input/messages/{i}", notes)
            for i, m in enumerate(messages if isinstance(messages, list) else [])
        ],
        "tools": _with_metadata(value.get("tools")),
        "context": value.get("context") if isinstance(value.get("context"), list) else [],
        "forwardedProps": value.get("forwardedProps"),
        "resume": _with_metadata(value.get("resume")),
    }


def patch_to_wire(ops: Any, at: str) -> Any:
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


def parts_from_wire(parts: list[Any], notes: list[ProtocolWarning]) -> list[Any]:
    out = []
    for part in parts:
        read = _part_from_wire(part)
        if read is None:
            notes.append(
                ProtocolWarning(
                    RULE,
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


def message_from_wire(
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
            raise malformed_frame(
                f"a {role!r} message carries content parts, a form its role has not", kind
            )
        if activity is not None and not uses_map:
            raise malformed_frame("a non-activity message carries activity content", kind)
        if uses_map and has_content:
            raise malformed_frame("an activity message carries string content", kind)
        if uses_parts and has_content and parts:
            raise malformed_frame("a message carries both string content and content parts", kind)
    elif has_content + bool(parts) + (activity is not None) > 1:
        raise malformed_frame("a message carries more than one content form", kind)
    if uses_parts and not has_content:
        wire["content"] = parts_from_wire(parts, notes)
    if uses_map and activity is not None:
        wire["content"] = activity
    if not wire.get("toolCalls"):
        wire.pop("toolCalls", None)
    return wire


def patch_from_wire(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for op in ops:
        number = op["op"]
        op["op"] = _PATCH_NAME.get(number, str(number))
    return ops


def input_from_wire(
    wire: dict[str, Any], notes: list[ProtocolWarning], kind: str
) -> dict[str, Any]:
    out: dict[str, Any] = {
        k: wire[k]
        for k in ("threadId", "runId", "protocolVersion", "parentRunId", "state")
        if k in wire
    }
    out["messages"] = [message_from_wire(m, notes, kind) for m in wire["messages"]]
    out["tools"] = wire["tools"]
    out["context"] = wire["context"]
    if "forwardedProps" in wire:
        out["forwardedProps"] = wire["forwardedProps"]
    out["resume"] = wire["resume"]
    return out
