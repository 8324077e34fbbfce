"""The compatibility boundary: retired 0.x shapes translated before anything else.

Real producers built on 0.x SDKs still send shapes the 1.x protocol retired
(``spec/DEPRECATIONS.md``): the five ``THINKING_*`` events, whole optional
fields spelled ``null``, the ``binary`` content part. The processing model
puts the translator first (``basic/processing`` "Where middleware sits";
VER-4): enforcement judges against the current protocol, in which these shapes
are simply unrecognised — or, for the ``null`` spellings, malformed.

Only what the registry lists is translated. A ``null`` the registry does not
name (``metadata: null`` on an event, ``parentRunId: null``…) is left alone so
that enforcement rejects it, as the registry says it must.

Every inbound conversion warns (rule VER-4) once, naming the retired shape and
what replaced it. The outgoing upgrade of a legacy binary part in a client's
own run input is lossless and silent by default (the conformance corpus's
``era-current-peer-keeps-modern-content`` pins that).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from .._errors import ProtocolWarning

__all__ = ["CompatibilityBoundary", "upgrade_binary_part", "upgrade_run_input"]

JsonObj = dict[str, Any]

_THINKING: Final = {
    "THINKING_START": "REASONING_START",
    "THINKING_END": "REASONING_END",
    "THINKING_TEXT_MESSAGE_START": "REASONING_MESSAGE_START",
    "THINKING_TEXT_MESSAGE_CONTENT": "REASONING_MESSAGE_CONTENT",
    "THINKING_TEXT_MESSAGE_END": "REASONING_MESSAGE_END",
}
_EXPIRES_THINKING: Final = "2027-08-24"
_MEDIA_PARTS: Final = frozenset({"image", "audio", "video", "document"})
_BASE_FIELDS: Final = ("timestamp", "rawEvent", "metadata")


def upgrade_binary_part(part: JsonObj) -> tuple[JsonObj | None, str | None]:
    """Turn a 0.x ``{"type": "binary", …}`` part into the matching media part.

    Returns ``(part, lost)``: the upgraded part (``None`` when the legacy part
    carries nothing to upgrade, which enforcement will then strip as an
    unrecognised member), and a note of anything that could not be carried.
    """
    mime = part.get("mimeType")
    if not isinstance(mime, str):
        return None, None
    kind = mime.split("/", 1)[0]
    part_type = kind if kind in ("image", "audio", "video") else "document"
    source: JsonObj
    carried: str
    if isinstance(part.get("data"), str):
        source, carried = {"type": "data", "value": part["data"], "mimeType": mime}, "data"
    elif isinstance(part.get("url"), str):
        source, carried = {"type": "url", "value": part["url"], "mimeType": mime}, "url"
    elif isinstance(part.get("id"), str):
        source, carried = {"type": "file", "value": part["id"], "mimeType": mime}, "id"
    else:
        return None, None
    lost = [k for k in ("data", "url", "id", "filename") if k != carried and k in part]
    return {"type": part_type, "source": source}, (", ".join(lost) if lost else None)


class _Notes:
    """Collects the boundary's warnings for one event."""

    __slots__ = ("event_type", "index", "items")

    def __init__(self, index: int | None, event_type: str | None) -> None:
        self.index = index
        self.event_type = event_type
        self.items: list[ProtocolWarning] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(ProtocolWarning("VER-4", message, self.index, path, self.event_type))


def _omit_null(obj: JsonObj, key: str, path: str, notes: _Notes | None, what: str) -> JsonObj:
    if key in obj and obj[key] is None:
        obj = dict(obj)
        del obj[key]
        if notes is not None:
            notes.add(
                f"{path}/{key}", f"omitted {what}: null (a retired 0.x spelling; omit the field)"
            )
    return obj


def _upgrade_parts(parts: list[Any], path: str, notes: _Notes | None) -> list[Any]:
    upgraded: list[Any] = _upgrade_list(parts, path, lambda p, at: _upgrade_part(p, at, notes))
    return upgraded


def _upgrade_part(part: Any, path: str, notes: _Notes | None) -> Any:
    if not isinstance(part, dict):
        return part
    kind = part.get("type")
    if kind == "binary":
        upgraded, lost = upgrade_binary_part(part)
        if upgraded is None:
            return part
        if notes is not None:
            msg = f"upgraded a retired binary content part to an {upgraded['type']} part"
            if lost:
                msg += f" (could not carry: {lost})"
            notes.add(path, msg)
        return upgraded
    if kind in _MEDIA_PARTS:
        return _omit_null(part, "metadata", path, notes, f"{kind} part metadata")
    return part


def _upgrade_message(msg: Any, path: str, notes: _Notes | None) -> Any:
    if not isinstance(msg, dict):
        return msg
    content = msg.get("content")
    if msg.get("role") in ("user", "tool") and isinstance(content, list):
        new = _upgrade_parts(content, f"{path}/content", notes)
        if new is not content:
            msg = dict(msg)
            msg["content"] = new
    return msg


def _upgrade_list(items: Any, path: str, fn: Callable[[Any, str], Any]) -> Any:
    if not isinstance(items, list):
        return items
    out: list[Any] | None = None
    for i, item in enumerate(items):
        new = fn(item, f"{path}/{i}")
        if new is not item:
            if out is None:
                out = list(items)
            out[i] = new
    return items if out is None else out


def _upgrade_input(data: Any, path: str, notes: _Notes | None) -> Any:
    if not isinstance(data, dict):
        return data
    out = data
    for key in ("forwardedProps", "state"):
        out = _omit_null(out, key, path, notes, key)
    for key, fn in (
        ("messages", lambda m, p: _upgrade_message(m, p, notes)),
        (
            "tools",
            lambda t, p: (
                _omit_null(t, "parameters", p, notes, "tool parameters")
                if isinstance(t, dict)
                else t
            ),
        ),
        (
            "resume",
            lambda r, p: (
                _omit_null(r, "payload", p, notes, "resume entry payload")
                if isinstance(r, dict)
                else r
            ),
        ),
    ):
        if key in out:
            new = _upgrade_list(out[key], f"{path}/{key}", fn)
            if new is not out[key]:
                if out is data:
                    out = dict(data)
                out[key] = new
    return out


def upgrade_run_input(data: Any, *, warn: bool = True) -> tuple[Any, list[ProtocolWarning]]:
    """Apply the registry's input-side shims to a ``RunAgentInput``.

    ``warn=False`` is for a client's own outgoing input, where the upgrade is
    lossless and the application is the author.
    """
    notes = _Notes(None, None)
    out = _upgrade_input(data, "", notes if warn else None)
    return out, notes.items


class CompatibilityBoundary:
    """Per-stream translator of retired shapes; stateful only for ``THINKING_*`` ids.

    The retired thinking events carried no ``messageId``; their replacements
    require one, so the boundary mints ids scoped to the current run
    (``thinking:<runId>:<n>``) and remembers which span and message are open.
    """

    def __init__(self) -> None:
        self._run_id = ""
        self._counter = 0
        self._span: str | None = None
        self._message: str | None = None

    def translate(self, obj: Any, index: int | None = None) -> tuple[Any, list[ProtocolWarning]]:
        """Return ``(event, warnings)``; the same object when nothing applied."""
        if type(obj) is not dict:
            return obj, []
        kind = obj.get("type")
        handler = _HANDLERS.get(kind) if type(kind) is str else None
        if handler is None and "rawEvent" not in obj:
            return obj, []
        notes = _Notes(index, kind if type(kind) is str else None)
        out = obj
        if "rawEvent" in out:
            out = _omit_null(out, "rawEvent", "", notes, "rawEvent")
        if handler is not None:
            out = handler(self, out, notes)
        return out, notes.items

    # -- handlers ------------------------------------------------------------

    def _thinking(self, obj: JsonObj, notes: _Notes) -> JsonObj:
        old = obj["type"]
        new_type = _THINKING[old]
        out: JsonObj = {"type": new_type}
        for key in _BASE_FIELDS:
            if key in obj:
                out[key] = obj[key]
        if old == "THINKING_START":
            self._counter += 1
            self._span = f"thinking:{self._run_id}:{self._counter}"
            out["messageId"] = self._span
        elif old == "THINKING_END":
            out["messageId"] = self._span or f"thinking:{self._run_id}:unopened"
            self._span = None
        elif old == "THINKING_TEXT_MESSAGE_START":
            self._counter += 1
            self._message = f"thinking:{self._run_id}:{self._counter}"
            out["messageId"] = self._message
            out["role"] = "reasoning"
        else:
            out["messageId"] = self._message or f"thinking:{self._run_id}:unopened"
            if old == "THINKING_TEXT_MESSAGE_CONTENT":
                if "delta" in obj:
                    out["delta"] = obj["delta"]
            else:
                self._message = None
        lost = sorted(set(obj) - {"type", "delta", *_BASE_FIELDS})
        msg = f"translated retired {old} into {new_type} (retired in 1.0; translation expires {_EXPIRES_THINKING})"
        if lost:
            msg += f"; could not carry: {', '.join(lost)}"
        notes.add("", msg)
        return out

    def _tool_call(self, obj: JsonObj, notes: _Notes) -> JsonObj:
        return _omit_null(obj, "parentMessageId", "", notes, "parentMessageId")

    def _run_started(self, obj: JsonObj, notes: _Notes) -> JsonObj:
        run_id = obj.get("runId")
        self._run_id = run_id if isinstance(run_id, str) else ""
        self._counter = 0
        self._span = self._message = None
        if "input" in obj:
            new = _upgrade_input(obj["input"], "/input", notes)
            if new is not obj["input"]:
                obj = dict(obj)
                obj["input"] = new
        return obj

    def _run_finished(self, obj: JsonObj, notes: _Notes) -> JsonObj:
        obj = _omit_null(obj, "outcome", "", notes, "outcome")
        return _omit_null(obj, "result", "", notes, "result")

    def _subagent_finished(self, obj: JsonObj, notes: _Notes) -> JsonObj:
        return _omit_null(obj, "result", "", notes, "result")

    def _messages_snapshot(self, obj: JsonObj, notes: _Notes) -> JsonObj:
        messages = obj.get("messages")
        new = _upgrade_list(messages, "/messages", lambda m, p: _upgrade_message(m, p, notes))
        if new is not messages:
            obj = dict(obj)
            obj["messages"] = new
        return obj


_HANDLERS: Final[dict[str, Callable[[CompatibilityBoundary, JsonObj, _Notes], JsonObj]]] = {
    **{old: CompatibilityBoundary._thinking for old in _THINKING},
    "TOOL_CALL_START": CompatibilityBoundary._tool_call,
    "TOOL_CALL_CHUNK": CompatibilityBoundary._tool_call,
    "RUN_STARTED": CompatibilityBoundary._run_started,
    "RUN_FINISHED": CompatibilityBoundary._run_finished,
    "SUBAGENT_FINISHED": CompatibilityBoundary._subagent_finished,
    "MESSAGES_SNAPSHOT": CompatibilityBoundary._messages_snapshot,
}
