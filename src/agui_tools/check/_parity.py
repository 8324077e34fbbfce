"""Do two streams answering the same input carry the same events? (binding parity)

The binary binding "differs only in the response" (``basic/transports/http-protobuf``).
Compared: the events the pipeline **delivered** (unknown material is stripped on SSE and
skipped by protobuf, TRANS-7), ignoring timestamps (EVT-3), with identifiers renamed by
order of first appearance (they are minted per run), JSON Patch operations by ``op``,
``path``, ``value`` and ``from``; all else — order, types, deltas as split — must be equal.
A model varies, so the case asks for a second SSE run before blaming the binding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..wire._kinds import WireEvent

__all__ = ["first_difference", "normalize"]

_PATCH_MEMBERS: Final = ("op", "path", "value", "from")
_SHOWN: Final = 80


def normalize(events: Sequence[WireEvent]) -> list[dict[str, Any]]:
    """``events`` as compared: no timestamps, identifiers renamed by first appearance."""
    names: dict[str, str] = {}

    def rename(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        return names.setdefault(value, f"<id {len(names) + 1}>")

    def walk(value: Any) -> Any:
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if key == "id" or key.endswith("Id"):
                    out[key] = rename(item)
                elif key.endswith("Ids") and isinstance(item, list):
                    out[key] = [rename(i) for i in item]
                elif key == "patch" and isinstance(item, list):
                    out[key] = [
                        {k: walk(op[k]) for k in _PATCH_MEMBERS if k in op}
                        if isinstance(op, Mapping)
                        else walk(op)
                        for op in item
                    ]
                else:
                    out[key] = walk(item)
            return out
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return [walk({k: v for k, v in ev.items() if k != "timestamp"}) for ev in events]


def first_difference(
    expected: Sequence[WireEvent], observed: Sequence[WireEvent], *, names: tuple[str, str]
) -> tuple[int, str] | None:
    """Where ``observed`` first departs from ``expected``, or ``None`` when they are the same.

    Returns the delivered event's index and one sentence naming the event, the
    member and both values; ``names`` says what each side is ("SSE", "protobuf").
    """
    a, b = normalize(expected), normalize(observed)
    left, right = names
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x == y:
            continue
        kind = x.get("type", "?")
        if x.get("type") != y.get("type"):
            return i, (
                f"delivered event #{i} is {kind} over {left} but {y.get('type', '?')} over {right}"
            )
        for key in sorted(set(x) | set(y)):
            if x.get(key) != y.get(key):
                return i, (
                    f"delivered event #{i} {kind}: {key} is {_show(x, key)} over {left} but "
                    f"{_show(y, key)} over {right} (identifiers renamed by first appearance)"
                )
    if len(a) != len(b):
        i = min(len(a), len(b))
        longer, kind = (left, a[i].get("type")) if len(a) > len(b) else (right, b[i].get("type"))
        return i, (
            f"{left} delivered {len(a)} event(s), {right} {len(b)}: from delivered event #{i} "
            f"({kind}) on, only {longer} has them"
        )
    return None


def _show(event: Mapping[str, Any], key: str) -> str:
    if key not in event:
        return "absent"
    text = repr(event[key])
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
