"""Enforcement: strip what is unrecognised, reject what is malformed.

The processing model's one asymmetry (``basic/processing``): material the
protocol does not describe survives — an unknown event is dropped, an unknown
property or union member is stripped, each with a warning naming it — while a
field the protocol *does* describe carrying a value the schema rejects is
fatal, never coerced, defaulted or ignored.

Stripping follows the position of the unrecognised value (PROC-5):

* in an **optional** property, the property is removed;
* in a **required** property, the value *containing* it is removed, and the
  rule applies again one level up (an image part whose ``source`` is of an
  unknown kind disappears whole, not as a part with no source);
* in a **list**, the element is dropped and the list survives.

Open objects (metadata, JSON Patch operations, ``responseSchema``, activity
content, ``state``) are data: nothing inside them is judged (PROC-4, META-2).

Everything here works on plain JSON values (``dict``/``list``/``str``…) and
returns new values copy-on-write, never mutating the caller's objects. A fast
path per event type accepts the overwhelmingly common clean event with a few
type checks and no copying; anything it is unsure of goes to the full walker,
which is the reference and produces the exact warnings and errors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Final

import orjson

from .._errors import (
    InputRejected,
    LimitExceeded,
    ProtocolViolation,
    ProtocolWarning,
    UsageError,
    describe_value,
    json_type_name,
)
from ._schema import (
    AnyNode,
    ArrayNode,
    BoolNode,
    CompiledSchema,
    ConstNode,
    EnumNode,
    IntNode,
    Node,
    ObjectNode,
    StringNode,
    TypeSwitchNode,
    UnionNode,
    compiled,
)

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "MAX_DEPTH_CEILING",
    "MAX_ID_BYTES",
    "ORJSON_WRITE_DEPTH",
    "Enforcer",
    "checked_max_depth",
    "depth_excess",
    "escape_pointer",
    "id_problem",
    "nests_within",
]

DEFAULT_MAX_DEPTH: Final = 128

MAX_ID_BYTES: Final = 1024
"""The longest identifier (any ``id`` / ``…Id`` field), in UTF-8 bytes, accepted — and no NUL.

Ids are opaque (EVT-10) with no spec'd length; this limit (rule ``LIMIT``) is what every
store can hold (PostgreSQL refuses NUL and bounds B-tree keys), checked where ids enter
and at each store (:func:`id_problem`), so an id is refused the same everywhere."""


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot be an identifier here (:data:`MAX_ID_BYTES`), or ``None``."""
    if "\x00" in value:
        return (
            f"contains a NUL character (U+0000), which no store can hold (at {value.index(chr(0))})"
        )
    if (
        len(value) > MAX_ID_BYTES // 4
        and len(value.encode("utf-8", "surrogatepass")) > MAX_ID_BYTES
    ):
        return (
            f"is {len(value.encode('utf-8', 'surrogatepass')):,} bytes of UTF-8, over the "
            f"{MAX_ID_BYTES:,}-byte limit of an identifier"
        )
    return None


def _is_id_field(name: str) -> bool:
    return name == "id" or name.endswith("Id")


"""How deeply one JSON document (an event, a run input) may nest, itself level 1.

Open values are whatever a peer sends and later stages recurse (``deepcopy``; orjson writes
at most 254 levels); 128 keeps an accepted value writable after it is re-nested into the
next run input."""

_CONTAINERS: Final = (dict, list, tuple)


def escape_pointer(token: str) -> str:
    """Escape one JSON Pointer reference token (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def _too_deep(value: Any, budget: int) -> bool:
    """Whether container ``value`` nests more than ``budget`` levels (itself is one).

    The fast checks' test: no path is built. Recursion stops at ``budget``, so a
    hostile value thousands of levels deep costs ``budget`` frames, not thousands.
    """
    if budget <= 0:
        return True
    for child in value.values() if isinstance(value, dict) else value:
        if isinstance(child, _CONTAINERS) and _too_deep(child, budget - 1):
            return True
    return False


def depth_excess(value: Any, budget: int, path: str = "") -> str | None:
    """The JSON Pointer of a container nested more than ``budget`` levels inside
    ``value`` (``value`` itself is level 1), or ``None`` when it fits.

    Iterative, so a value of any depth is measured without recursion; the walk
    stops below ``budget`` levels, so its cost is bounded by what fits.
    """
    if not isinstance(value, _CONTAINERS):
        return None
    # (container, level, trail): the trail is a linked list of keys, joined only on failure
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(value, 1, ())]
    while stack:
        container, level, trail = stack.pop()
        if level > budget:
            keys: list[str] = []
            while trail:
                keys.append(escape_pointer(str(trail[0])))
                trail = trail[1]
            return path + "".join(f"/{k}" for k in reversed(keys))
        items = container.items() if isinstance(container, dict) else enumerate(container)
        for key, child in items:
            if isinstance(child, _CONTAINERS):
                stack.append((child, level + 1, (key, trail)))
    return None


def _orjson_max_depth() -> int:
    """How many levels of containers orjson writes (254 in every release so far)."""
    value: Any = 0
    depth = 0
    while depth < 4096:
        try:
            orjson.dumps([value])
        except orjson.JSONEncodeError:
            return depth
        value = [value]
        depth += 1
    raise RuntimeError("orjson writes any depth: a depth check cannot ride on it")


ORJSON_WRITE_DEPTH: Final = _orjson_max_depth()
"""How many levels of containers orjson writes: a value wrapped in
``ORJSON_WRITE_DEPTH - room`` lists encodes only when it nests at most ``room``
levels, which measures nesting in C instead of a Python walk."""


RENEST_LEVELS: Final = 2
"""How many levels deeper than in its event this library writes an accepted value
again: an activity's ``content`` (level 2 of ``ACTIVITY_SNAPSHOT``) sits at level 4
of the next run input (``messages[i].content``) and of ``verify --json``'s document,
and every event sits at level 3 of the latter (``events[i]``). A state stays at
level 2 (``RunAgentInput.state``)."""

_WRAP_ROOM: Final = 2
"""Two levels more of room, for a document that wraps those once more (a journal
record, a report holding a verdict) without its author counting levels."""

MAX_DEPTH_CEILING: Final = ORJSON_WRITE_DEPTH - RENEST_LEVELS - _WRAP_ROOM
"""The highest ``max_depth`` accepted (``Limits``, ``ProtoReader``, ``--limit``…).

An accepted value must stay writable where it is sent or shown again: orjson writes
:data:`ORJSON_WRITE_DEPTH` levels and a value is re-nested up to :data:`RENEST_LEVELS`
deeper. Higher is a :class:`UsageError` at construction."""


def checked_max_depth(max_depth: int, where: str = "max_depth") -> int:
    """``max_depth`` when this library can carry it (2 to :data:`MAX_DEPTH_CEILING`);
    otherwise :class:`UsageError` (rule ``LIMIT``) naming the ceiling and why."""
    if isinstance(max_depth, bool) or not isinstance(max_depth, int):
        raise UsageError(
            f"{where} must be an integer, not {describe_value(max_depth)}", rule="LIMIT"
        )
    if max_depth > MAX_DEPTH_CEILING:
        raise UsageError(
            f"{where}={max_depth} is above the ceiling of {MAX_DEPTH_CEILING} levels this "
            f"library carries: orjson writes at most {ORJSON_WRITE_DEPTH} levels, and an "
            f"accepted value is written again up to {RENEST_LEVELS} levels deeper (an "
            "activity in the next run input, an event in verify --json), with "
            f"{_WRAP_ROOM} more kept for a document wrapping those, so a deeper one could be "
            f'received but never re-sent (docs/security.md, "Resource limits"). Use at most '
            f"{MAX_DEPTH_CEILING}.",
            rule="LIMIT",
        )
    if max_depth < 2:
        raise UsageError(
            f"{where}={max_depth} is below 2: an event and one level inside it", rule="LIMIT"
        )
    return max_depth


def nests_within(value: Any, levels: int) -> bool:
    """Whether ``value`` nests at most ``levels`` levels of containers (itself is one).

    Measured by orjson in C inside a chain of lists built once per ``levels``; what orjson
    cannot write, or a limit past what it writes, is measured by a bounded walk.
    """
    if not isinstance(value, _CONTAINERS):
        return True
    if levels <= 0:
        return False
    if levels < ORJSON_WRITE_DEPTH:
        with _WRAP_LOCK:  # one chain per limit, shared: its innermost list holds one value
            wrap = _WRAPS.get(levels)
            if wrap is None:
                holder: list[Any] = []
                chain = holder
                for _ in range(ORJSON_WRITE_DEPTH - levels - 1):
                    chain = [chain]
                wrap = _WRAPS[levels] = (chain, holder)
            chain, holder = wrap
            holder.append(value)
            try:
                orjson.dumps(chain)
            except orjson.JSONEncodeError:
                pass
            else:
                return True
            finally:
                holder.clear()
    return not _too_deep(value, levels)


_WRAPS: dict[int, tuple[list[Any], list[Any]]] = {}
_WRAP_LOCK: Final = threading.Lock()


class _Unrecognised:
    """Returned by the walker in place of a value that must be removed.

    ``path`` and ``why`` describe the innermost unrecognised member, so the
    warning emitted where something is finally removed can name both what was
    removed and why.
    """

    __slots__ = ("path", "why")

    def __init__(self, path: str, why: str) -> None:
        self.path = path
        self.why = why


# Rules more specific than PROC-2 for particular malformed positions. Keyed by
# (event type or "*", top-level field); the first match wins.
_RULE_BY_FIELD: Final[dict[tuple[str, str], str]] = {
    ("RUN_FINISHED", "outcome"): "RUN-4",
    ("SUBAGENT_FINISHED", "outcome"): "SUB-9",
    ("SUBAGENT_STARTED", "subagentRunId"): "SUB-3",
    ("SUBAGENT_STARTED", "name"): "SUB-3",
    ("SUBAGENT_FINISHED", "subagentRunId"): "SUB-3",
    ("SUBAGENT_ERROR", "subagentRunId"): "SUB-3",
    ("TOOL_CALL_START", "toolCallName"): "TOOL-2",
    ("TOOL_CALL_START", "toolCallId"): "TOOL-2",
    ("TOOL_CALL_RESULT", "content"): "TOOL-12",
    ("TOOL_CALL_RESULT", "messageId"): "TOOL-10",
    ("TOOL_CALL_RESULT", "toolCallId"): "TOOL-10",
    ("REASONING_MESSAGE_START", "role"): "REAS-4",
    ("*", "timestamp"): "PROC-2",
}


_ABSENT: Final = object()


class _Walker:
    """One walk over one event or input; collects warnings, raises on malformed."""

    __slots__ = ("event_type", "index", "input_mode", "max_depth", "max_warnings", "warnings")

    def __init__(
        self,
        index: int | None,
        event_type: str | None,
        input_mode: bool,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_warnings: int | None = None,
    ) -> None:
        self.index = index
        self.event_type = event_type
        self.input_mode = input_mode
        self.max_depth = max_depth
        self.max_warnings = max_warnings
        self.warnings: list[ProtocolWarning] = []

    # -- reporting ---------------------------------------------------------

    def malformed(self, path: str, explanation: str, value: Any, rule: str | None = None) -> None:
        if rule is None:
            rule = self._rule_for(path)
        cls = InputRejected if self.input_mode else ProtocolViolation
        raise cls(
            rule,
            explanation,
            index=self.index,
            path=path,
            value=None if value is _ABSENT else describe_value(value),
            event_type=self.event_type,
        )

    def open_value(self, v: Any, path: str) -> None:
        """An open value enters here (``state``, a payload, metadata): bound its nesting.

        The value at ``path`` sits at level ``segments + 1`` of the document, so
        it may itself nest ``max_depth - segments`` levels.
        """
        if not isinstance(v, _CONTAINERS):
            return
        where = depth_excess(v, self.max_depth - path.count("/"), path)
        if where is not None:
            what = "run input" if self.input_mode else "event"
            raise LimitExceeded(
                "LIMIT",
                f"the value at {path} nests deeper than max_depth={self.max_depth} levels "
                f"(counting the {what} itself as one; the path names the first value past the "
                "limit); raise the limit if such values are expected.",
                index=self.index,
                path=where,
                event_type=self.event_type,
                where="run input" if self.input_mode else None,
            )

    def _rule_for(self, path: str) -> str:
        if self.input_mode:
            top = path.split("/")[1] if path.count("/") >= 1 and path else ""
            if top in ("threadId", "runId") and path.count("/") == 1:
                return "INPUT-2"
            return "PROC-2"
        parts = path.split("/")
        top = parts[1] if len(parts) > 1 else ""
        for key in ((self.event_type or "", top), ("*", top)):
            rule = _RULE_BY_FIELD.get(key)
            if rule:
                return rule
        return "PROC-2"

    def warn(self, rule: str, path: str, message: str) -> None:
        if self.max_warnings is not None and len(self.warnings) >= self.max_warnings:
            # every unknown member costs a warning (and a log line): a body of very
            # many of them would cost CPU and log without bound — judging stops here
            raise LimitExceeded(
                "LIMIT",
                f"more than {self.max_warnings} unrecognised members (the last at {path}); "
                "raise the limit if such inputs are expected.",
                index=self.index,
                path=path,
                event_type=self.event_type,
                where="run input" if self.input_mode else None,
            )
        self.warnings.append(
            ProtocolWarning(
                rule, message, self.index, path, self.event_type if not self.input_mode else None
            )
        )

    def removed(self, path: str, reason: _Unrecognised) -> None:
        if reason.path == path:
            self.warn("PROC-5", path, f"stripped {path}: {reason.why}")
        else:
            self.warn(
                "PROC-5",
                path,
                f"stripped {path} because {reason.path} is unrecognised ({reason.why})",
            )

    # -- the walk ----------------------------------------------------------

    def value(self, node: Node, v: Any, path: str) -> Any:
        """Return ``v`` (same object when unchanged), a cleaned copy, or ``_Unrecognised``."""
        cls = type(v)
        if isinstance(node, StringNode):
            if cls is not str:
                self._wrong(node, v, path)
            if node.pattern is not None and not node.pattern.match(v):
                self.malformed(path, f"expected {node.expected()} (RFC 6901).", v)
            if _is_id_field(path.rpartition("/")[2]):
                problem = id_problem(v)
                if problem is not None:
                    raise LimitExceeded(
                        "LIMIT",
                        f"the identifier at {path} {problem}: ids are opaque (EVT-10), but "
                        f"this implementation accepts at most {MAX_ID_BYTES} bytes and no NUL "
                        "(MAX_ID_BYTES), the same in every store.",
                        index=self.index,
                        path=path,
                        event_type=self.event_type,
                        where="run input" if self.input_mode else None,
                    )
            return v
        if isinstance(node, ObjectNode):
            return self.object(node, v, path)
        if isinstance(node, UnionNode):
            return self.union(node, v, path)
        if isinstance(node, AnyNode):
            if v is None and not node.nullable:
                self._null(path)
            self.open_value(v, path)
            return v
        if isinstance(node, IntNode):
            if cls is float and v.is_integer():
                v = int(v)  # JSON has one number type; 5.0 *is* the integer 5
            elif cls is not int:
                self._wrong(node, v, path)
            if (node.minimum is not None and v < node.minimum) or (
                node.maximum is not None and v > node.maximum
            ):
                self.malformed(path, f"expected {node.expected()} within the schema's bounds.", v)
            return v
        if isinstance(node, BoolNode):
            if cls is not bool:
                self._wrong(node, v, path)
            return v
        if isinstance(node, ConstNode):
            if v != node.value or cls is not type(node.value):
                if v is None:
                    self._null(path)
                self.malformed(path, f"expected {node.expected()}.", v)
            return v
        if isinstance(node, EnumNode):
            if cls is not str:
                self._wrong(node, v, path)
            if v not in node.values:
                return _Unrecognised(
                    path, f"{v!r} is not a value this implementation recognises ({node.expected()})"
                )
            return v
        if isinstance(node, ArrayNode):
            return self.array(node, v, path)
        if isinstance(node, TypeSwitchNode):
            sub = node.by_type.get(cls)
            if sub is None:
                self._wrong(node, v, path)
                raise AssertionError  # pragma: no cover - _wrong raises
            return self.value(sub, v, path)
        raise AssertionError(f"unknown node {node!r}")  # pragma: no cover

    def _wrong(self, node: Node, v: Any, path: str) -> None:
        if v is None:
            self._null(path)
        name = path.rsplit("/", 1)[-1] or "the value"
        if name == "metadata" and not isinstance(v, dict):
            self.malformed(path, "metadata must be an object when present.", v, rule="META-1")
        self.malformed(path, f"{name} must be {node.expected()}, not {json_type_name(v)}.", v)

    def _null(self, path: str, optional: bool = False) -> None:
        name = path.rsplit("/", 1)[-1]
        if name == "metadata":
            self.malformed(
                path, "metadata must be absent or an object, never null.", None, rule="META-1"
            )
        if optional:
            self.malformed(
                path,
                f"{name} is an optional field set to null: a field without a value must be omitted.",
                None,
                rule="SUB-1" if name == "subagentRunId" else "EVT-5",
            )
        self.malformed(path, f"{name or 'the value'} must carry a value, not null.", None)

    def object(self, node: ObjectNode, v: Any, path: str) -> Any:
        if type(v) is not dict:
            self._wrong(node, v, path)
        missing = node.required - v.keys()
        if missing:
            field = sorted(missing)[0]
            self.malformed(
                f"{path}/{escape_pointer(field)}", f"required field {field!r} is missing.", _ABSENT
            )
        if not node.props and not node.closed:
            self.open_value(v, path)
            return v  # an open map (metadata, responseSchema): data, not judged
        out: dict[str, Any] | None = None
        props = node.props
        for key, item in v.items():
            sub = props.get(key)
            if sub is None:
                # a member nothing judges (passed on, or stripped) still nests within
                # max_depth: what is delivered stays writable, and the binary binding,
                # which reads no value past the limit, gives the same verdict
                if item.__class__ in _CONTAINERS:
                    self.open_value(item, f"{path}/{escape_pointer(key)}")
                if node.closed:
                    if out is None:
                        out = dict(v)
                    del out[key]
                    p = f"{path}/{escape_pointer(key)}"
                    self.warn("PROC-3", p, f"stripped unknown property {p}")
                continue
            p = f"{path}/{escape_pointer(key)}"
            if item is None and not (isinstance(sub, AnyNode) and sub.nullable):
                self._null(p, optional=key not in node.required)
            new = self.value(sub, item, p)
            if new is item:
                continue
            if isinstance(new, _Unrecognised):
                if key in node.required:
                    self.open_value(v, path)  # the members after it go unwalked
                    return new
                if out is None:
                    out = dict(v)
                del out[key]
                self.removed(p, new)
                continue
            if out is None:
                out = dict(v)
            out[key] = new
        return v if out is None else out

    def union(self, node: UnionNode, v: Any, path: str) -> Any:
        if type(v) is not dict:
            self._wrong(node, v, path)
        disc = node.discriminator
        if disc not in v:
            self.malformed(
                f"{path}/{disc}", f"required discriminator {disc!r} is missing.", _ABSENT
            )
        tag = v[disc]
        if type(tag) is not str:
            self.malformed(f"{path}/{disc}", f"{disc} must be a string.", tag)
        variant = node.variants.get(tag)
        if variant is None:
            self.open_value(v, path)  # stripped unwalked: bounded all the same
            return _Unrecognised(
                path, f"{disc} {tag!r} is not a member this implementation recognises"
            )
        return self.object(variant, v, path)

    def array(self, node: ArrayNode, v: Any, path: str) -> Any:
        if type(v) is not list:
            self._wrong(node, v, path)
        if len(v) < node.min_items:
            rule = "INT-1" if path.endswith("/interrupts") else None
            self.malformed(path, f"expected {node.expected()} item(s).", v, rule=rule)
        out: list[Any] | None = None
        items = node.items
        for i, item in enumerate(v):
            p = f"{path}/{i}"
            if item is None and not (isinstance(items, AnyNode) and items.nullable):
                self._null(p)
            new = self.value(items, item, p)
            if new is item:
                if out is not None:
                    out.append(item)
                continue
            if out is None:
                out = list(v[:i])
            if isinstance(new, _Unrecognised):
                self.removed(p, new)
                continue
            out.append(new)
        if out is None:
            return v
        if len(out) < node.min_items:
            return _Unrecognised(path, "nothing recognisable was left in it")
        return out


_MISSING: Final = object()


def _test_for(node: Node, key: str) -> str:
    """A one-line Python expression true when ``v`` is *not* surely clean.

    An open value is clean as a scalar or a container within ``BUDGET`` levels; a deeper one
    goes to the walker, which names it.
    """
    if isinstance(node, StringNode) and node.pattern is None:
        if _is_id_field(key):  # a long id, or one with a NUL, goes to the walker
            return f'(v.__class__ is not str or len(v) > {MAX_ID_BYTES // 4} or "\\x00" in v)'
        return "v.__class__ is not str"
    if isinstance(node, IntNode):
        lo = node.minimum if node.minimum is not None else -(2**63)
        hi = node.maximum if node.maximum is not None else 2**63
        return f"(v.__class__ is not int or not ({lo} <= v <= {hi}))"
    if isinstance(node, BoolNode):
        return "v.__class__ is not bool"
    if isinstance(node, EnumNode):
        return f"(v.__class__ is not str or v not in ENUM_{escape_ident(key)})"
    if isinstance(node, AnyNode):
        deep = "(v.__class__ in CONTAINERS and DEEP(v, BUDGET))"
        return deep if node.nullable else f"(v is None or {deep})"
    if isinstance(node, ObjectNode) and not node.props and not node.closed:
        return "(v.__class__ is not dict or DEEP(v, BUDGET))"
    if isinstance(node, TypeSwitchNode) and str in node.by_type:
        return "v.__class__ is not str"
    return "True"  # complex: let the walker judge it


def _fast_check_source(name: str, variant: ObjectNode) -> str:
    """Python source of a function that returns True when an event is surely clean.

    It never raises or decides: False sends the event to the walker. An event with exactly its
    required fields is recognised by its length; otherwise its present keys are walked once
    against an if-chain of the known ones — both cheaper than set arithmetic on the keys.
    """
    props = variant.props
    required = [k for k in props if k in variant.required and k != "type"]
    lines = [f"def check_{name}(d):", f"    if len(d) == {len(required) + 1}:"]
    for key in required:
        test = _test_for(props[key], key)
        if test == "False":  # any JSON value, null included: only presence matters
            lines.append(f"        if {key!r} not in d: return False")
            continue
        lines.append(f"        v = d.get({key!r})")
        lines.append(f"        if v is None or {test}: return False")
    lines.append("        return True")
    lines.append("    seen = 0")
    lines.append("    for k, v in d.items():")
    lines.append("        if k == 'type': continue")
    # hot, frequent keys first
    order = sorted(
        props,
        key=lambda k: (k not in ("delta", "messageId", "toolCallId"), k not in variant.required, k),
    )
    first = True
    for key in order:
        if key == "type":
            continue
        test = _test_for(props[key], key)
        kw = "if" if first else "elif"
        first = False
        lines.append(f"        {kw} k == {key!r}:")
        if test != "False":
            lines.append(f"            if {test}: return False")
        if key in variant.required:
            lines.append("            seen += 1")
        elif test == "False":
            lines.append("            pass")
    if first:
        lines.append("        return False")
    else:
        lines.append("        else: return False")
    lines.append(f"    return seen == {len(required)}")
    return "\n".join(lines)


def escape_ident(key: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in key)


def _compile_fast_checks(
    schema: CompiledSchema, max_depth: int
) -> dict[str, Callable[[dict[str, Any]], bool]]:
    checks: dict[str, Callable[[dict[str, Any]], bool]] = {}
    for tag, variant in schema.event.variants.items():
        source = _fast_check_source(tag, variant)
        namespace: dict[str, Any] = {
            "ALLOWED": variant.known,
            "REQUIRED": variant.required,
            "MISSING": _MISSING,
            "DEEP": _too_deep,
            "CONTAINERS": _CONTAINERS,
            "BUDGET": max_depth - 1,
        }
        for key, node in variant.props.items():
            if isinstance(node, EnumNode):
                namespace[f"ENUM_{escape_ident(key)}"] = node.values
        exec(source, namespace)  # generated from the schema, not from input
        checks[tag] = namespace[f"check_{tag}"]
    return checks


class Enforcer:
    """Judges single events and run inputs against the compiled schema; stateless, shared.

    Enforcement is where open JSON enters (stream, run input, emit), so ``max_depth``
    (:data:`DEFAULT_MAX_DEPTH`) is kept here: deeper is a :class:`LimitExceeded` naming its path.
    """

    def __init__(
        self, schema: CompiledSchema | None = None, *, max_depth: int = DEFAULT_MAX_DEPTH
    ) -> None:
        checked_max_depth(max_depth)
        self.schema = schema or compiled()
        self.max_depth = max_depth
        self._variants = self.schema.event.variants
        self._fast = _compile_fast_checks(self.schema, max_depth)
        self.fast_checks: Mapping[str, Callable[[dict[str, Any]], bool]] = self._fast

    def event(
        self, obj: Any, index: int | None = None
    ) -> tuple[dict[str, Any] | None, list[ProtocolWarning]]:
        """Enforce one parsed event: ``(clean, warnings)``, ``clean`` ``None`` when dropped.

        ``clean`` is the same object when nothing was removed. Raises :class:`ProtocolViolation`
        when a known value is malformed.
        """
        if type(obj) is dict:
            tag = obj.get("type")
            check = self._fast.get(tag) if type(tag) is str else None
            if check is not None and check(obj):
                return obj, []
        return self._slow_event(obj, index)

    def _slow_event(
        self, obj: Any, index: int | None
    ) -> tuple[dict[str, Any] | None, list[ProtocolWarning]]:
        tag = obj.get("type") if type(obj) is dict else None
        walker = _Walker(
            index, tag if type(tag) is str else None, input_mode=False, max_depth=self.max_depth
        )
        if type(obj) is not dict:
            walker.malformed("", "an event must be a JSON object.", obj, rule="TRANS-4")
        if "type" not in obj:
            walker.malformed("/type", "an event must carry a string 'type'.", obj)
        if type(tag) is not str:
            walker.malformed("/type", "type must be a string.", tag)
        assert isinstance(tag, str)
        variant = self._variants.get(tag)
        if variant is None:
            walker.warn("PROC-3", "", f"dropped event of unknown type {tag!r}")
            return None, walker.warnings
        clean = walker.object(variant, obj, "")
        if isinstance(clean, _Unrecognised):
            walker.warn(
                "PROC-5",
                "",
                f"dropped the whole {tag} event because {clean.path} is unrecognised ({clean.why})",
            )
            return None, walker.warnings
        return clean, walker.warnings

    def run_input(
        self, obj: Any, *, max_unknown: int | None = None
    ) -> tuple[dict[str, Any], list[ProtocolWarning]]:
        """Enforce a ``RunAgentInput``; :class:`InputRejected` when malformed.

        An input cannot be dropped, so an unrecognised required member is malformed here; past
        ``max_unknown`` unrecognised members is a :class:`LimitExceeded`.
        """
        walker = _Walker(
            None, None, input_mode=True, max_depth=self.max_depth, max_warnings=max_unknown
        )
        clean = walker.object(self.schema.run_input, obj, "")
        if isinstance(clean, _Unrecognised):  # pragma: no cover - no required union at top
            walker.malformed(clean.path, clean.why, obj)
        return clean, walker.warnings

    def definition(self, name: str, obj: Any, path: str = "") -> tuple[Any, list[ProtocolWarning]]:
        """Enforce any named schema definition (``Message``, ``Tool``…).

        Used where a single value crosses a boundary on its own — a message
        list being assembled into input, say.
        """
        walker = _Walker(None, None, input_mode=True, max_depth=self.max_depth)
        clean = walker.value(self.schema.definition(name), obj, path)
        if isinstance(clean, _Unrecognised):
            walker.warn("PROC-5", clean.path, f"dropped {clean.path or 'the value'}: {clean.why}")
            return None, walker.warnings
        return clean, walker.warnings


@cache
def shared_enforcer(max_depth: int = DEFAULT_MAX_DEPTH) -> Enforcer:
    """One enforcer per nesting limit, shared by every decoder and emitter of the
    process (its fast checks are compiled with it, once)."""
    return Enforcer(max_depth=max_depth)
