"""A typed Python function as a frontend tool: its JSON Schema from its type hints
(or a pydantic model), its description from its docstring, and an arguments-dict
handler that validates before it calls — what ``Session.tool`` registers."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, TypeAdapter, create_model

from .._errors import UsageError
from ..app._calls import PendingCall, ToolContext
from ..app._tools import ToolSpec

__all__ = ["RegisteredTool", "tool_spec_from_function", "wants_context"]


@dataclass(frozen=True)
class RegisteredTool:
    spec: ToolSpec
    handler: Callable[[dict[str, Any]], Any]
    timeout: float | None
    trace_payloads: bool = False
    """Record this tool's arguments and results in its ``execute_tool`` spans (off:
    their sizes only, docs/observability.md)."""
    context: bool = False
    """The handler takes the call's :class:`ToolContext` too: ``handler(arguments, context=…)``."""

    def bound(self, call: PendingCall) -> Callable[[dict[str, Any]], Any]:
        """The handler of one execution of ``call``: given its context when it asks."""
        if not self.context:
            return self.handler
        takes_context: Callable[..., Any] = self.handler
        return functools.partial(takes_context, context=call.context())


def tool_spec_from_function(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    side_effects: bool = False,
) -> tuple[ToolSpec, Callable[[dict[str, Any]], Any]]:
    """A :class:`ToolSpec` and an arguments-dict handler for a typed function.

    Parameters become a draft 2020-12 schema (one pydantic-model parameter is the whole
    object), with unknown members refused. A :class:`ToolContext` parameter is no argument: the
    handler passes the call's context (:func:`wants_context`).
    """
    sig = inspect.signature(fn)
    try:
        # include_extras: Annotated[int, Field(ge=1, description=…)] keeps its constraints
        hints = get_type_hints(fn, include_extras=True)
    except NameError as exc:
        raise UsageError(
            f"cannot resolve the type hints of tool {fn.__name__!r} ({exc}); define the types "
            "it uses at module level"
        ) from None
    except TypeError:  # a functools.partial, a callable object: no annotations of its own
        raise UsageError(
            f"tool {fn!r} is a {type(fn).__name__}, not a function: the schema is made from a "
            "function's annotated parameters — wrap it in a `def` that takes the model's "
            "arguments, annotated, and calls it"
        ) from None
    params = [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    contextual = [p.name for p in params if _is_context(hints.get(p.name))]
    if len(contextual) > 1:
        raise UsageError(
            f"tool {fn.__name__!r} has {len(contextual)} ToolContext parameters "
            f"({', '.join(contextual)}); a handler is given its call's context once"
        )
    context_param = contextual[0] if contextual else None
    context_optional = (
        context_param is not None
        and sig.parameters[context_param].default is not inspect.Parameter.empty
    )
    params = [p for p in params if p.name != context_param]
    desc = description or inspect.getdoc(fn) or ""
    if not desc:
        raise UsageError(f"tool {fn.__name__!r} needs a description (a docstring or description=)")
    model: type[BaseModel]
    single_model = (
        len(params) == 1
        and isinstance(hints.get(params[0].name), type)
        and issubclass(hints[params[0].name], BaseModel)
    )
    if single_model:
        model = hints[params[0].name]
    else:
        fields: dict[str, Any] = {}
        for p in params:
            annotation = hints.get(p.name, Any)
            default = ... if p.default is inspect.Parameter.empty else p.default
            fields[p.name] = (annotation, default)
        model = create_model(
            f"{fn.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields
        )
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    _refuse_unknown_members(schema)
    adapter = TypeAdapter(model)
    closed = schema.get("additionalProperties") is False
    declared = frozenset(schema.get("properties", ()))

    def handler(arguments: dict[str, Any], context: ToolContext | None = None) -> Any:
        unknown = sorted(set(arguments) - declared) if closed else []
        if unknown:  # the schema refuses them; a direct call must not slip them past
            raise ValueError(
                f"unknown argument(s) {unknown}: {fn.__name__!r} does not declare them"
            )
        parsed = adapter.validate_python(arguments)
        extra: dict[str, Any] = {}
        if context_param is not None:
            if context is None and context_optional:
                pass  # an optional context, and none given: the function's default
            elif context is None:
                raise UsageError(
                    f"tool {fn.__name__!r} takes its call's ToolContext "
                    f"({context_param!r}): call the handler as handler(arguments, context=…)"
                )
            else:
                extra[context_param] = context
        if single_model:
            return fn(parsed, **extra)
        return fn(**{p.name: getattr(parsed, p.name) for p in params}, **extra)

    spec = ToolSpec(name or fn.__name__, desc, parameters=schema, side_effects=side_effects)
    return spec, handler


def wants_context(fn: Callable[..., Any]) -> bool:
    """Whether a typed tool function asks for its call's :class:`ToolContext` (a
    parameter annotated with it)."""
    try:
        hints = get_type_hints(fn, include_extras=True)
    except NameError:
        return False  # tool_spec_from_function says why
    return any(_is_context(h) for name, h in hints.items() if name != "return")


def _is_context(hint: Any) -> bool:
    """``ToolContext``, ``Annotated[ToolContext, …]``, or either made optional
    (``ToolContext | None``, ``Optional[ToolContext]``) — never a model argument."""
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    if hint is ToolContext:
        return True
    if get_origin(hint) in (Union, UnionType):
        kinds = [a for a in get_args(hint) if a is not type(None)]
        return len(kinds) < len(get_args(hint)) and all(_is_context(a) for a in kinds)
    return False


def _refuse_unknown_members(schema: dict[str, Any]) -> None:
    """``additionalProperties: false`` on the argument object and every model it uses
    (pydantic ignores unknown members by default), unless a model states its own policy.
    """
    objects = [schema, *schema.get("$defs", {}).values()]
    for node in objects:
        if isinstance(node, dict) and node.get("type") == "object" and "properties" in node:
            node.setdefault("additionalProperties", False)
