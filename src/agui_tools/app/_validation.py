"""Validate a closed call's arguments against the tool's ``parameters`` schema (TOOL-21).

The schema is opaque to the protocol (INPUT-17), so a broken one is the tool's
misconfiguration: :class:`InvalidToolSchema`. Engine: ``jsonschema-rs`` (drafts 4 to
2020-12, instance paths, failing keywords; faster, see ``bench/arguments.py``). Dialect: the
``$schema``'s, else 2020-12; an unknown one is refused, not guessed (``dialect=`` chooses).
Nothing is fetched: a remote ``$ref`` fails compilation. ``format`` follows the dialect's
default unless ``validate_formats`` says otherwise.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final
from urllib.parse import unquote, urljoin

import jsonschema_rs
import orjson

from .._errors import AguiError, UsageError, json_type_name
from ._arguments import ParsedArguments, Preview, UnparseableArguments

__all__ = [
    "ArgumentError",
    "ArgumentValidator",
    "Dialect",
    "InvalidToolSchema",
]


class Dialect(Enum):
    """The JSON Schema drafts a tool schema may declare."""

    DRAFT_04 = "http://json-schema.org/draft-04/schema"
    DRAFT_06 = "http://json-schema.org/draft-06/schema"
    DRAFT_07 = "http://json-schema.org/draft-07/schema"
    DRAFT_2019_09 = "https://json-schema.org/draft/2019-09/schema"
    DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

    @classmethod
    def from_uri(cls, uri: str) -> Dialect | None:
        """The dialect a ``$schema`` URI names, tolerating the usual spellings.

        Authors write these with and without the empty fragment (``#``) and
        with either scheme; all name the same meta-schema.
        """
        key = _normalise_uri(uri)
        for dialect in cls:
            if _normalise_uri(dialect.value) == key:
                return dialect
        return None


def _normalise_uri(uri: str) -> str:
    uri = uri.strip()
    uri = uri.removesuffix("#")
    for scheme in ("https://", "http://"):
        if uri.startswith(scheme):
            return uri[len(scheme) :]
    return uri


_VALIDATOR_CLASS: Final[dict[Dialect, type[jsonschema_rs.Validator]]] = {
    Dialect.DRAFT_04: jsonschema_rs.Draft4Validator,
    Dialect.DRAFT_06: jsonschema_rs.Draft6Validator,
    Dialect.DRAFT_07: jsonschema_rs.Draft7Validator,
    Dialect.DRAFT_2019_09: jsonschema_rs.Draft201909Validator,
    Dialect.DRAFT_2020_12: jsonschema_rs.Draft202012Validator,
}

_DIALECT_NAMES: Final = {
    "draft-04": Dialect.DRAFT_04,
    "draft-06": Dialect.DRAFT_06,
    "draft-07": Dialect.DRAFT_07,
    "2019-09": Dialect.DRAFT_2019_09,
    "2020-12": Dialect.DRAFT_2020_12,
}

DEFAULT_DIALECT: Final = Dialect.DRAFT_2020_12

# A rejected long string would otherwise be quoted whole in the message.
_MESSAGE_LIMIT: Final = 240


@dataclass(frozen=True, slots=True)
class ArgumentError:
    """One way the arguments fail the tool's schema.

    Attributes:
        path: JSON Pointer into the *arguments* (``"/items/0/qty"``; ``""``
            for the arguments object itself — where ``required`` failures
            land, the missing name being in the message).
        keyword: the schema keyword that failed (``"required"``, ``"type"``,
            ``"maximum"``, ``"additionalProperties"``…), or ``"falseSchema"``
            when a ``false`` subschema rejected the value.
        message: one sentence for a person or a model; long values are
            elided in the middle.
        schema_path: JSON Pointer to the failing keyword inside the *schema*
            (after ``$ref`` resolution), for whoever maintains the tool.
    """

    path: str
    keyword: str
    message: str
    schema_path: str = ""

    def __str__(self) -> str:
        return f"{self.path or '/'}: {self.message} [{self.keyword}]"


class InvalidToolSchema(AguiError):
    """A tool's ``parameters`` is not a usable JSON Schema: the tool is misconfigured, and its
    calls should be declined, not executed (not a violation, INPUT-17).

    Attributes:
        reason: what is wrong.
        schema_path: JSON Pointer into the schema where it is wrong, when known.
    """

    def __init__(self, reason: str, *, schema_path: str = "") -> None:
        self.reason = reason
        self.schema_path = schema_path
        where = f" at {schema_path}" if schema_path else ""
        super().__init__(f"invalid tool parameters schema{where}: {reason}")


class ArgumentValidator:
    """Checks closed-call arguments against one tool's ``parameters`` schema.

    Compilation is cached process-wide by the schema's text; :class:`InvalidToolSchema` at
    construction. No schema or ``{}`` constrains nothing (INPUT-17) but an object.
    """

    __slots__ = ("_compiled", "_dialect")

    def __init__(
        self,
        schema: Mapping[str, Any] | bool | None,
        *,
        dialect: Dialect | str | None = None,
        validate_formats: bool | None = None,
    ) -> None:
        document: dict[str, Any] | bool
        if schema is None:
            document = True
        elif isinstance(schema, Mapping):
            document = dict(schema) if schema else True
        elif isinstance(schema, bool):
            document = schema
        else:
            raise InvalidToolSchema(
                f"a schema is a JSON object or boolean, not {json_type_name(schema)}"
            )
        self._dialect = _resolve_dialect(document, dialect)
        if document is True:
            self._compiled: jsonschema_rs.Validator | None = None
        else:
            self._compiled = _compiled_for(document, self._dialect, validate_formats)

    @property
    def dialect(self) -> Dialect:
        """The dialect the schema is validated under."""
        return self._dialect

    @property
    def constrained(self) -> bool:
        """Whether the schema says anything beyond "a JSON object"."""
        return self._compiled is not None

    def validate(
        self, arguments: ParsedArguments | Mapping[str, Any], *, max_errors: int | None = None
    ) -> list[ArgumentError]:
        """Every way ``arguments`` fails the schema; empty means valid.

        Takes :class:`~agui_tools.app._arguments.ParsedArguments` or a mapping; refuses a
        :class:`~agui_tools.app._arguments.Preview` (TOOL-5) and
        :class:`~agui_tools.app._arguments.UnparseableArguments`. ``max_errors`` bounds the answer.
        """
        if max_errors is not None and max_errors < 1:
            raise UsageError(f"max_errors must be at least 1, not {max_errors}")
        value = _instance(arguments)
        if not isinstance(value, dict):
            return [
                ArgumentError(
                    "",
                    "type",
                    f"the arguments must be a JSON object, got {json_type_name(value)}",
                )
            ]
        return self.validate_value(value, max_errors=max_errors)

    def validate_value(self, value: Any, *, max_errors: int | None = None) -> list[ArgumentError]:
        """Every way any JSON ``value`` fails the schema (not only an object): for a
        payload answering an interrupt's ``responseSchema``; paths as for arguments."""
        if max_errors is not None and max_errors < 1:
            raise UsageError(f"max_errors must be at least 1, not {max_errors}")
        if self._compiled is None or self._compiled.is_valid(value):
            return []  # the common case, and is_valid skips building any error
        out: list[ArgumentError] = []
        for error in self._compiled.iter_errors(value):
            out.append(
                ArgumentError(
                    _pointer(error.instance_path),
                    _keyword(error),
                    _shorten(error.message),
                    _pointer(error.schema_path),
                )
            )
            if max_errors is not None and len(out) >= max_errors:
                break
        return out

    def is_valid(self, arguments: ParsedArguments | Mapping[str, Any]) -> bool:
        """Whether ``arguments`` satisfies the schema (stops at the first failure)."""
        value = _instance(arguments)
        if not isinstance(value, dict):
            return False
        return self._compiled is None or self._compiled.is_valid(value)

    def __repr__(self) -> str:
        kind = "constrained" if self._compiled is not None else "unconstrained"
        return f"ArgumentValidator({kind}, dialect={self._dialect.name})"


def _instance(arguments: object) -> object:
    if isinstance(arguments, Preview):
        raise UsageError(
            "a Preview is a prefix of a call still streaming and must not be validated "
            "or acted on; wait for TOOL_CALL_END and validate ArgumentBuffer.final()",
            rule="TOOL-5",
        )
    if isinstance(arguments, UnparseableArguments):
        raise UsageError(
            "unparseable arguments have no value to validate; answer the call with "
            f"their reason instead ({arguments.reason})"
        )
    if isinstance(arguments, ParsedArguments):
        return arguments.value
    if isinstance(arguments, Mapping) and not isinstance(arguments, dict):
        return dict(arguments)
    return arguments


def _resolve_dialect(schema: Mapping[str, Any] | bool, dialect: Dialect | str | None) -> Dialect:
    if isinstance(dialect, Dialect):
        return dialect
    if isinstance(dialect, str):
        named = _DIALECT_NAMES.get(dialect) or Dialect.from_uri(dialect)
        if named is None:
            raise UsageError(
                f"unknown dialect {dialect!r}; use a Dialect or one of {sorted(_DIALECT_NAMES)}"
            )
        return named
    declared = schema.get("$schema") if isinstance(schema, Mapping) else None
    if declared is None:
        return DEFAULT_DIALECT
    if not isinstance(declared, str):
        raise InvalidToolSchema(
            f"$schema must be a URI string, got {json_type_name(declared)}", schema_path="/$schema"
        )
    found = Dialect.from_uri(declared)
    if found is None:
        supported = ", ".join(d.value for d in Dialect)
        raise InvalidToolSchema(
            f"unsupported dialect {declared!r}; supported: {supported} "
            "(or pass dialect= to validate under one of them)",
            schema_path="/$schema",
        )
    return found


def _schema_key(schema: Mapping[str, Any] | bool) -> str:
    """The schema's JSON text: the compile cache's key.

    Key order is kept (not sorted) so errors come out in the author's order.
    """
    try:
        return orjson.dumps(schema).decode()
    except TypeError:
        pass  # orjson refuses integers beyond 64 bits; the stdlib does not
    try:
        return json.dumps(schema, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidToolSchema(f"the schema is not JSON: {exc}") from None


def _compiled_for(
    schema: dict[str, Any] | bool, dialect: Dialect, validate_formats: bool | None
) -> jsonschema_rs.Validator:
    """The compiled validator, from the process-wide cache when this schema was seen."""
    key = (_schema_key(schema), dialect, validate_formats)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    compiled = _compile(schema, dialect, validate_formats)
    with _CACHE_LOCK:
        _CACHE[key] = compiled
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return compiled


_CACHE_SIZE: Final = 512
_CACHE: Final[OrderedDict[tuple[str, Dialect, bool | None], jsonschema_rs.Validator]] = (
    OrderedDict()
)
_CACHE_LOCK: Final = threading.Lock()


# Applicators whose subschemas apply to the *same* instance: a cycle through these
# (and the references) never reaches a smaller value, so it decides nothing —
# jsonschema-rs accepted ``{"$ref": "#"}`` and then validated any arguments as valid.
_IN_PLACE_ONE: Final = ("not", "if", "then", "else")
_IN_PLACE_MANY: Final = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP: Final = ("dependentSchemas", "dependencies")
_REFERENCES: Final = ("$ref", "$dynamicRef", "$recursiveRef")
# Every keyword whose value is a subschema (or a list or name map of them), in any
# draft: where the walk looks for schemas — and so for $id, anchors and cycles. A
# value under any other keyword (``const``, ``enum``, ``default``…) is data.
_SUB_ONE: Final = (
    *_IN_PLACE_ONE,
    "items",
    "additionalItems",
    "contains",
    "propertyNames",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
_SUB_MANY: Final = (*_IN_PLACE_MANY, "prefixItems", "items")
_SUB_MAP: Final = (*_IN_PLACE_MAP, "properties", "patternProperties", "$defs", "definitions")
_ROOT_URI: Final = "https://agui-tools.invalid/tool-parameters.json"
"""The base URI of a schema without an absolute ``$id`` (never fetched: a name)."""
_INDEX: Final = re.compile(r"0|[1-9][0-9]{0,8}")


def _join(base: str, ref: str) -> str:
    if ref.startswith("#"):
        return base.partition("#")[0] + ref
    return urljoin(base, ref)


def _token(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def _ref_cycle(schema: Any, *, draft4: bool = False) -> str | None:
    """The schema path of a reference that loops back to the same instance, or None.

    Nodes are every subschema; edges the in-place applicators and references, resolved within
    the document as a validator does (``$id``, pointers, anchors; a ``$dynamicRef`` or
    ``$recursiveRef`` to every matching anchor through one shared node per name). Recursion
    through ``properties``, ``items`` and the like consumes a level, so it is fine.
    """
    id_key = "id" if draft4 else "$id"
    nodes: dict[str, tuple[Any, str]] = {}  # path -> (subschema, its base URI)
    resources: dict[str, str] = {_ROOT_URI: ""}  # absolute URI (no fragment) -> path
    anchors: dict[str, str] = {}  # "uri#name" -> path
    dynamic: dict[str, list[str]] = {}  # virtual node "dynamic:name" -> anchor paths

    def register(top: Any, top_path: str, top_base: str) -> None:
        todo = [(top, top_path, top_base)]
        while todo:
            node, path, base = todo.pop()
            if path in nodes:
                continue
            if isinstance(node, dict):
                ident = node.get(id_key)
                if isinstance(ident, str) and ident.startswith("#"):
                    anchors[base.partition("#")[0] + ident] = path  # a draft-6/7 anchor
                elif isinstance(ident, str):
                    base = _join(base, ident).partition("#")[0]
                    resources.setdefault(base, path)
                for key in ("$anchor", "$dynamicAnchor"):
                    name = node.get(key)
                    if isinstance(name, str):
                        anchors.setdefault(f"{base}#{name}", path)
                name = node.get("$dynamicAnchor")
                if isinstance(name, str):
                    dynamic.setdefault(f"dynamic:{name}", []).append(path)
                if node.get("$recursiveAnchor") is True:
                    dynamic.setdefault("dynamic:", []).append(path)
            nodes[path] = (node, base)
            if not isinstance(node, dict):
                continue
            for key in _SUB_ONE:
                if isinstance(node.get(key), dict):
                    todo.append((node[key], f"{path}/{_token(key)}", base))
            for key in _SUB_MANY:
                if isinstance(node.get(key), list):
                    todo += [(sub, f"{path}/{key}/{i}", base) for i, sub in enumerate(node[key])]
            for key in _SUB_MAP:
                if isinstance(node.get(key), dict):
                    todo += [
                        (sub, f"{path}/{_token(key)}/{_token(name)}", base)
                        for name, sub in node[key].items()
                        if isinstance(sub, dict)
                    ]

    def resolve(ref: str, base: str) -> str | None:
        document, _, fragment = _join(base, ref).partition("#")
        fragment = unquote(fragment)
        at = resources.get(document)
        if at is None:
            return None
        if not fragment.startswith("/"):
            return at if not fragment else anchors.get(f"{document}#{fragment}")
        node, path = nodes[at][0], at
        for raw in fragment[1:].split("/"):
            token = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and _INDEX.fullmatch(token) and int(token) < len(node):
                node = node[int(token)]
            else:
                return None
            path += f"/{_token(token)}"
        if path not in nodes:  # a subschema somewhere the walk does not look: walk it too
            register(node, path, nodes[at][1])
        return path

    def edges(path: str) -> list[str]:
        if path.startswith("dynamic:"):
            return list(dynamic.get(path, ()))
        node, base = nodes[path]
        if not isinstance(node, dict):
            return []
        out: list[str] = []
        for key in _REFERENCES:
            ref = node.get(key)
            if not isinstance(ref, str):
                continue
            target = resolve(ref, base)
            if target is not None:
                out.append(target)
            if key == "$dynamicRef" and not ref.partition("#")[2].startswith("/"):
                out.append(f"dynamic:{unquote(ref.partition('#')[2])}")
            elif key == "$recursiveRef":
                out.append("dynamic:")
        for key in _IN_PLACE_ONE:
            if key in node:
                out.append(f"{path}/{key}")
        for key in _IN_PLACE_MANY:
            if isinstance(node.get(key), list):
                out += [f"{path}/{key}/{i}" for i in range(len(node[key]))]
        for key in _IN_PLACE_MAP:
            if isinstance(node.get(key), dict):
                out += [
                    f"{path}/{key}/{_token(name)}"
                    for name, sub in node[key].items()
                    if isinstance(sub, dict)
                ]
        return [e for e in out if e in nodes or e in dynamic]

    register(schema, "", _ROOT_URI)
    # iterative DFS from every node, colouring by path: a back edge is a schema still
    # being applied to the same value
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    for start in list(nodes):
        if start in state:
            continue
        state[start] = 1
        stack: list[tuple[str, list[str]]] = [(start, edges(start))]
        while stack:
            path, pending = stack[-1]
            if not pending:
                state[path] = 2
                stack.pop()
                continue
            child = pending.pop()
            seen = state.get(child)
            if seen == 1:  # the nearest real schema on the way (not a "dynamic:" name)
                return next(p for p, _ in reversed(stack) if not p.startswith("dynamic:"))
            if seen is None:
                state[child] = 1
                stack.append((child, edges(child)))
    return None


def _compile(
    schema: dict[str, Any] | bool, dialect: Dialect, validate_formats: bool | None
) -> jsonschema_rs.Validator:
    loop = _ref_cycle(schema, draft4=dialect is Dialect.DRAFT_04)
    if loop is not None:
        raise InvalidToolSchema(
            "a $ref cycle ($ref, $dynamicRef or $recursiveRef, through in-place applicators) "
            "applies the schema to the same value forever, so it constrains nothing (every "
            "argument would pass); refer through properties or items instead",
            schema_path=loop,
        )
    # From the Python object, not the JSON text: jsonschema-rs parses text with
    # serde_json's 128-level nesting limit, which its object path does not have.
    try:
        return _VALIDATOR_CLASS[dialect](schema, validate_formats=validate_formats, offline=True)
    except jsonschema_rs.ValidationError as exc:
        # Meta-schema failures locate the problem in the schema (their
        # "instance" is the schema); unresolvable $refs carry no path.
        raise InvalidToolSchema(
            _shorten(exc.message), schema_path=_pointer(exc.instance_path)
        ) from None
    except (ValueError, jsonschema_rs.ReferencingError) as exc:  # e.g. nesting too deep
        raise InvalidToolSchema(_shorten(str(exc))) from None


# Keywords whose value maps names to subschemas: the segment after one is a
# name the author chose (a property called "type"), not a keyword.
_NAME_MAPS: Final = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)


def _keyword(error: jsonschema_rs.ValidationError) -> str:
    """The schema keyword that failed: the schema path's last segment, else jsonschema-rs's
    ``kind.name`` (a path ending at a subschema, e.g. a ``false`` schema).
    """
    path = error.schema_path
    if path and isinstance(path[-1], str) and not (len(path) > 1 and path[-2] in _NAME_MAPS):
        return path[-1]
    return error.kind.name


def _pointer(parts: list[str | int]) -> str:
    """RFC 6901: ``~`` and ``/`` inside a name are escaped, in that order."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _shorten(message: str) -> str:
    """Elide the middle of an over-long message, keeping how it ends (the rule broken)."""
    if len(message) <= _MESSAGE_LIMIT:
        return message
    head, tail = _MESSAGE_LIMIT * 2 // 3, _MESSAGE_LIMIT // 3
    return f"{message[:head]} … {message[-tail:]}"
