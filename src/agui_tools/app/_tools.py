"""Frontend tools (FE-1, FE-15): the wire ``Tool`` the application advertises, plus whether
calling it has side effects, which decides the default consent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .._errors import UsageError
from ._validation import ArgumentValidator

__all__ = ["ToolSpec"]


@dataclass(frozen=True)
class ToolSpec:
    """One tool the application advertises and executes.

    Args:
        name: the tool's name, as the agent will call it.
        description: what it does, for the model.
        parameters: a JSON Schema for the arguments (``None`` = no constraints
            beyond "a JSON object", INPUT-17). Validated on every call (TOOL-21).
        side_effects: True when executing it changes anything outside the
            conversation (sends, buys, deletes, writes). Decides the default
            consent: such calls ask the user first (TOOL-22).
        metadata: the wire ``Tool.metadata``, carried as given.
    """

    name: str
    description: str
    parameters: Mapping[str, Any] | None = None
    side_effects: bool = False
    metadata: Mapping[str, Any] | None = field(default=None)

    def __post_init__(self) -> None:
        if not self.name:
            raise UsageError("a tool needs a non-empty name")

    @cached_property
    def validator(self) -> ArgumentValidator:
        """Compiled once; raises InvalidToolSchema if ``parameters`` is not a schema."""
        return ArgumentValidator(self.parameters)

    def to_wire(self) -> dict[str, Any]:
        """The wire ``Tool`` advertised in ``RunAgentInput.tools``."""
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.parameters is not None:
            out["parameters"] = dict(self.parameters)
        if self.metadata is not None:
            out["metadata"] = dict(self.metadata)
        return out
