"""Decode and encode single events: JSON text ⇄ enforced wire dict ⇄ typed model.

Three representations of one event, each for its job:

* **JSON bytes** — what travels (``encode_event`` produces compact JSON with
  camelCase keys and optional fields without a value omitted, never ``null``).
* **wire dict** — the parsed, *enforced* JSON object. The pipeline stages work
  on these: they are cheap to inspect and exactly what the schema describes.
* **typed model** — the official ``ag_ui.core`` class for the event, for
  application code (:func:`to_model`, :func:`from_model`).

:func:`decode_event` runs the compatibility boundary and enforcement on one
event and hands back all of it in a :class:`Decoded`.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import TYPE_CHECKING, Any, Final

import orjson

from .._errors import (
    InputRejected,
    LimitExceeded,
    ProtocolViolation,
    ProtocolWarning,
    UsageError,
    describe_value,
)
from ._enforce import DEFAULT_MAX_DEPTH, Enforcer, depth_excess, escape_pointer, shared_enforcer
from ._kinds import WireEvent
from ._upgrade import CompatibilityBoundary, upgrade_run_input

__all__ = [
    "Decoded",
    "DecodedInput",
    "Decoder",
    "check_exact_json",
    "decode_event",
    "decode_run_input",
    "encode_event",
    "encode_json",
    "from_model",
    "non_finite_path",
    "parse_json",
    "refuse_non_finite",
    "to_model",
]

if TYPE_CHECKING:  # the official models are slow to import: built on demand only
    from ag_ui.core import Event, RunAgentInput
    from pydantic import BaseModel, TypeAdapter


class Decoded:
    """One decoded event: its enforced wire form (``None`` when dropped), the typed model, and warnings.

    ``event`` builds the official model on first access: it costs more than decoding and
    enforcing together, so only code that asks for it pays.
    """

    __slots__ = ("_event", "warnings", "wire")

    def __init__(self, wire: WireEvent | None, warnings: tuple[ProtocolWarning, ...]) -> None:
        self.wire = wire
        self.warnings = warnings
        self._event: Event | None = None

    @property
    def event(self) -> Event | None:
        if self._event is None and self.wire is not None:
            self._event = to_model(self.wire)
        return self._event

    @property
    def dropped(self) -> bool:
        return self.wire is None

    def __repr__(self) -> str:
        return f"Decoded(wire={self.wire!r}, warnings={self.warnings!r})"


@dataclass(frozen=True, slots=True)
class DecodedInput:
    """A decoded ``RunAgentInput``: wire form, what was stripped, and the typed model.

    ``input`` builds the official ``ag_ui.core.RunAgentInput`` on access (the
    wire form has been judged already; the model only costs).
    """

    wire: dict[str, Any]
    warnings: tuple[ProtocolWarning, ...]

    @property
    def input(self) -> RunAgentInput:
        from ag_ui.core import RunAgentInput

        return RunAgentInput.model_validate(self.wire)


_PARSER_DEPTH: Final = 1024  # orjson refuses to read deeper


_TOKENS: Final = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
"""A JSON text's strings (skipped whole: a bracket inside one is text) and brackets."""


def cut_json(data: bytes, levels: int) -> bytes:
    """``data`` with every container opened at level ``levels`` (the text itself is
    level 1) left empty — the same brackets, nothing inside: one linear scan, so a
    text nested past what the parser reads can be parsed and judged."""
    out: list[bytes] = []
    depth = 0
    last = 0
    skip_from = -1  # the depth at which a container being emptied opened (-1: none)
    for token in _TOKENS.finditer(data):
        char = data[token.start()]
        if char == 0x22:  # a string
            continue
        if char in b"[{":
            depth += 1
            if depth == levels and skip_from < 0:
                skip_from = depth
                out.append(data[last : token.end()])
        else:
            if depth == skip_from:
                skip_from = -1
                last = token.start()
            depth -= 1
    out.append(data[last:])
    return b"".join(out)


def parse_json(
    data: bytes | bytearray | memoryview | str,
    index: int | None = None,
    *,
    where: str | None = None,
    enforcer: Enforcer | None = None,
) -> Any:
    """Parse one JSON text, turning a syntax error into a violation (TRANS-4).

    A text nested beyond what the parser reads is valid JSON: a :class:`LimitExceeded`, worded
    by the event ``enforcer`` when given (:func:`cut_json`), as the binary binding words it.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        message = str(exc.args[0])
        if "depth limit" in message:
            own = LimitExceeded(
                "LIMIT",
                f"the payload nests more than {_PARSER_DEPTH} levels deep, beyond any nesting "
                "limit (max_depth) this library accepts.",
                index=index,
                where=where,
            )
            if enforcer is not None:
                raise _cut_verdict(data, index, enforcer, own) from None
            raise own from None
        raise ProtocolViolation(
            "TRANS-4",
            f"the payload is not valid JSON ({message}); each frame must carry exactly one event.",
            index=index,
            where=where,
        ) from None


def _cut_verdict(
    data: bytes | bytearray | memoryview | str,
    index: int | None,
    enforcer: Enforcer,
    own: LimitExceeded,
) -> ProtocolViolation:
    """Enforcement's verdict on an event too deep to parse, read cut (see
    :func:`parse_json`); ``own`` when the cut text is no event enforcement refuses."""
    text = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    try:
        event = orjson.loads(cut_json(text, enforcer.max_depth + 1))
    except orjson.JSONDecodeError:
        return own  # broken further on: the parser's verdict stands
    try:
        enforcer.event(event, index)
    except ProtocolViolation as exc:
        return exc
    return own  # never handed on: the real event is deeper than anything accepted


class Decoder:
    """Per-stream decoder: JSON text → compatibility boundary → enforcement.

    Without middleware, an event the enforcer's fast check accepts skips the boundary: it has
    no ``null``, no nesting and no retired type. ``RUN_STARTED`` always visits it (run ids).
    """

    __slots__ = ("_slow", "boundary", "enforcer", "fast_checks")

    def __init__(
        self, enforcer: Enforcer | None = None, *, max_depth: int = DEFAULT_MAX_DEPTH
    ) -> None:
        self.enforcer = enforcer or shared_enforcer(max_depth)
        self.boundary = CompatibilityBoundary()
        self.fast_checks: dict[str, Callable[[dict[str, Any]], bool]] = {
            k: v for k, v in self.enforcer.fast_checks.items() if k != "RUN_STARTED"
        }
        self._slow = self.enforcer.event

    def decode(
        self, data: bytes | str, index: int | None = None
    ) -> tuple[WireEvent | None, list[ProtocolWarning]]:
        """Decode one JSON text; ``(None, warnings)`` when the event was dropped."""
        try:
            obj = _loads(data)
        except orjson.JSONDecodeError:
            obj = parse_json(data, index, enforcer=self.enforcer)  # raises the violation
        if type(obj) is dict:
            tag = obj.get("type")
            if type(tag) is str:
                check = self.fast_checks.get(tag)
                if check is not None and check(obj):
                    return obj, _NO_WARNINGS
        return self.decode_object(obj, index)

    def decode_object(
        self, obj: Any, index: int | None = None
    ) -> tuple[WireEvent | None, list[ProtocolWarning]]:
        """Decode an already-parsed event (boundary, then enforcement)."""
        translated, notes = self.boundary.translate(obj, index)
        wire, warnings = self._slow(translated, index)
        if notes:
            return wire, notes + warnings
        return wire, warnings


_loads: Final = orjson.loads
_NO_WARNINGS: Final[list[ProtocolWarning]] = []


def decode_event(
    data: bytes | str | Mapping[str, Any],
    *,
    index: int | None = None,
    decoder: Decoder | None = None,
) -> Decoded:
    """Decode one event through the compatibility boundary and enforcement.

    A ``decoder`` keeps translation state across one stream's events (ids minted for retired
    ``THINKING_*`` events). Raises :class:`ProtocolViolation` for invalid JSON or a malformed value.
    """
    decoder = decoder or Decoder()
    if isinstance(data, (bytes, str)):
        wire, warnings = decoder.decode(data, index)
    else:
        wire, warnings = decoder.decode_object(data, index)
    return Decoded(wire, tuple(warnings))


def decode_run_input(
    data: bytes | str | Mapping[str, Any],
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_unknown: int | None = None,
) -> DecodedInput:
    """Judge a ``RunAgentInput``: retired shapes upgraded, unknown material stripped.

    ``data`` is JSON text or a parsed object (never a parsed JSON *string*). Raises
    :class:`~agui_tools._errors.InputRejected` for a malformed known field (INPUT-15, INPUT-16)
    and :class:`~agui_tools._errors.LimitExceeded` past ``max_depth`` or ``max_unknown``.
    """
    obj = parse_json(data, where="run input") if isinstance(data, (bytes, str)) else data
    upgraded, notes = upgrade_run_input(obj)
    wire, warnings = shared_enforcer(max_depth).run_input(upgraded, max_unknown=max_unknown)
    return DecodedInput(wire, (*notes, *warnings))


# -- what a parse can lose, and what JSON cannot say ---------------------------------

_INT64_MIN: Final = -(2**63)
_UINT64_MAX: Final = 2**64 - 1
_QUOTE_SPACE: Final = re.compile(rb'"[ \t\r\n]')


class _Duplicate(dict[str, Any]):
    """An object whose text named a member twice (``name`` is the first repeated one)."""

    name: str = ""


class _Wide(int):
    """An integer literal outside the 64-bit range orjson reads exactly."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    seen: set[str] = set()
    marked = _Duplicate(out)
    for name, _ in pairs:
        if name in seen:
            marked.name = name
            break
        seen.add(name)
    return marked


def _integer(text: str) -> int:
    value = int(text)
    return value if _INT64_MIN <= value <= _UINT64_MAX else _Wide(value)


def _survey(obj: Any, max_depth: int) -> tuple[int, bool]:
    """Members in every object of ``obj``, and whether a float could be a widened integer.

    Raises :class:`LimitExceeded` past ``max_depth`` (unknown members included:
    they are still parsed). orjson reads an integer beyond 64 bits as a float,
    whose magnitude is then at least 2**63 — the only floats worth a second look.
    """
    where = depth_excess(obj, max_depth)
    if where is not None:
        raise LimitExceeded(
            "LIMIT",
            f"the run input nests deeper than max_depth={max_depth} levels (the path names the "
            "first value past the limit); raise the limit if such values are expected.",
            path=where,
            where="run input",
        )
    members = 0
    suspect = False
    stack = [obj]
    while stack:
        value = stack.pop()
        children = value.values() if type(value) is dict else value
        if type(value) is dict:
            members += len(value)
        for child in children:
            cls = type(child)
            if cls is dict or cls is list:
                stack.append(child)
            elif cls is float and abs(child) >= 2**63 and child.is_integer():
                suspect = True
    return members, suspect


def _first_loss(value: Any, path: str) -> tuple[str, str, Any] | None:
    """Document order: the first repeated member or wide integer, as (kind, path, detail)."""
    if isinstance(value, _Wide):
        return "wide", path, int(value)
    if isinstance(value, dict):
        if isinstance(value, _Duplicate):
            return "duplicate", f"{path}/{escape_pointer(value.name)}", value.name
        for key, child in value.items():
            found = _first_loss(child, f"{path}/{escape_pointer(key)}")
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found = _first_loss(child, f"{path}/{i}")
            if found is not None:
                return found
    return None


def check_exact_json(data: bytes, parsed: Any, *, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
    """Refuse a run input whose parse (``parsed = orjson.loads(data)``) lost something.

    orjson keeps the *last* of two same-named members and reads a big integer as a float, so
    a proxy or agent could see another input than the one sent (INPUT-14). Raises
    :class:`InputRejected` naming the member, :class:`LimitExceeded` past ``max_depth``. The
    text is re-read only when a cheap count cannot rule a repeat out. Not used on event
    streams (docs/security.md).
    """
    members, suspect = _survey(parsed, max_depth)
    # every member name is a string followed by a colon, possibly after whitespace:
    # when the count of '":' matches the members parsed and no quote is followed by
    # whitespace, no name can have been written twice
    if not suspect and data.count(b'":') == members and _QUOTE_SPACE.search(data) is None:
        return
    try:
        exact = json.loads(data, object_pairs_hook=_pairs, parse_int=_integer)
    except (ValueError, RecursionError):  # pragma: no cover - orjson read it already
        return
    found = _first_loss(exact, "")
    if found is None:
        return
    kind, path, detail = found
    if kind == "duplicate":
        raise InputRejected(
            "TRANS-4",
            f"member {detail!r} appears twice in one object; parsers disagree on which value "
            "wins, so the input would mean different things to different readers. Send each "
            "name once.",
            path=path,
        )
    rule = "INPUT-14" if path.startswith("/forwardedProps") else "PROC-2"
    raise InputRejected(
        rule,
        "this integer does not fit in 64 bits, so it cannot be carried unaltered (it would "
        "arrive rounded, as a float); send it as a string.",
        path=path,
        value=describe_value(detail),
    )


def non_finite_path(value: Any, path: str = "") -> str | None:
    """The JSON Pointer of the first NaN or ±Infinity inside ``value``, or ``None``.

    JSON has no such numbers, and orjson writes them as ``null`` without a
    word — a silent change of the value. Strings are skipped at once, so a
    payload of text costs next to nothing; the walk is iterative (any depth).
    """
    cls = type(value)
    if cls is str or cls is int or cls is bool or value is None:
        return None
    if cls is float:
        return None if math.isfinite(value) else path
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        current, where = stack.pop()
        items: Iterable[tuple[str, Any]]
        if isinstance(current, dict):
            items = ((f"{where}/{escape_pointer(str(k))}", v) for k, v in current.items())
        elif isinstance(current, (list, tuple)):
            items = ((f"{where}/{i}", v) for i, v in enumerate(current))
        else:
            continue
        for child_path, child in items:
            child_cls = type(child)
            if child_cls is str or child_cls is int or child_cls is bool or child is None:
                continue
            if isinstance(child, float):
                if not math.isfinite(child):
                    return child_path
            else:
                stack.append((child, child_path))
    return None


def refuse_non_finite(value: Any, refusing: str, path: str = "") -> None:
    """Raise :class:`UsageError` (TRANS-4) if ``value`` holds NaN or ±Infinity.

    Called where our own side is about to *write* JSON — an agent's payload, a
    client's run input — so the caller learns which value, instead of the peer
    receiving ``null``.
    """
    where = non_finite_path(value, path)
    if where is not None:
        raise UsageError(
            f"{refusing}: the number {f'at {where}' if where else 'itself'} is NaN or infinite, "
            "which JSON cannot represent (it would be written as null). Send a finite number, a "
            "string, or leave the field out.",
            rule="TRANS-4",
        )


@cache
def _event_adapter() -> TypeAdapter[Event]:
    from ag_ui.core import Event
    from pydantic import TypeAdapter

    return TypeAdapter(Event)


def _is_model(value: Any) -> bool:
    """A pydantic model? Without importing pydantic: if nobody has, none exists."""
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(value, pydantic.BaseModel)


def to_model(wire: Mapping[str, Any]) -> Event:
    """Build the official typed model from an *enforced* wire dict.

    The dict has already been judged, so pydantic's lenient validation has
    nothing left to coerce; it only builds the objects.
    """
    return _event_adapter().validate_python(wire)


# -- typed → wire, fast ------------------------------------------------------

_SCALARS: Final = (str, int, float, bool, type(None))


@cache
def _plan(cls: type[BaseModel]) -> tuple[tuple[str, str, bool], ...]:
    """Per model class: (attribute, wire key, omit-when-None) for each field."""
    plan = []
    for name, field in cls.model_fields.items():
        alias = field.serialization_alias or field.alias or name
        omittable = not field.is_required() and field.default is None
        plan.append((name, alias, omittable))
    return tuple(plan)


def _dump(value: Any) -> Any:
    cls = type(value)
    if cls in _SCALARS:
        return value
    if _is_model(value):
        return from_model(value)
    if isinstance(value, Enum):
        return value.value
    if cls is list or cls is tuple:
        return [_dump(v) for v in value]
    if cls is dict:
        return {k: _dump(v) for k, v in value.items()}
    return value


def from_model(model: BaseModel) -> dict[str, Any]:
    """The wire dict of a typed model: camelCase keys, valueless optionals omitted.

    Equivalent to ``model.model_dump(by_alias=True, mode="json")`` for the
    official models, but several times faster because it reads attributes
    directly; the encode benchmark measures the difference.
    """
    attrs = model.__dict__
    out: dict[str, Any] = {}
    for name, alias, omittable in _plan(type(model)):
        v = attrs[name]
        if v is None:
            if omittable:
                continue
            out[alias] = None
        elif type(v) in _SCALARS:
            out[alias] = v
        else:
            out[alias] = _dump(v)
    extra = model.__pydantic_extra__
    if extra:
        for k, v in extra.items():
            out[k] = _dump(v)
    return out


def encode_json(wire: Mapping[str, Any]) -> bytes:
    """Compact JSON of a wire dict (no spaces, UTF-8, keys as given)."""
    return orjson.dumps(wire)


def encode_event(event: BaseModel | Mapping[str, Any]) -> bytes:
    """Compact JSON for one event, typed or already in wire form."""
    if _is_model(event):
        return orjson.dumps(from_model(event))  # type: ignore[arg-type]
    return orjson.dumps(event)
