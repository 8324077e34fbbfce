"""What a UI is told as a run streams and its calls are disposed of: :class:`TextDelta`,
:class:`CallUpdate` and :class:`~agui_tools._errors.ProtocolWarning`, plain values from
``receive`` and ``take_updates``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._errors import ProtocolWarning
from ._arguments import ParsedArguments, Preview, parse_arguments
from ._calls import Answer, CallStatus, PendingCall

__all__ = ["CallUpdate", "TextDelta", "Update", "call_update", "shown"]


@dataclass(frozen=True)
class TextDelta:
    """Text (or reasoning) appended to a message."""

    message_id: str
    role: str
    delta: str


_NOT_SET: Any = object()


@dataclass(frozen=True)
class CallUpdate:
    """A tool-call card changed: name, argument preview (a *prefix*), status, answer.

    ``arguments`` replaces the preview once it is what runs or ran (a differing snapshot, the
    disposition, an edit), so what a user sees after the fact is what executed.
    """

    call_id: str
    name: str
    status: CallStatus
    preview: Preview | None = None
    answer: Answer | None = None
    agent_side: bool = False
    arguments: Any = _NOT_SET

    @property
    def has_arguments(self) -> bool:
        """Whether :attr:`arguments` is set (``None`` and ``{}`` are arguments too)."""
        return self.arguments is not _NOT_SET


Update = TextDelta | CallUpdate | ProtocolWarning


def shown(text: str) -> Any:
    """Argument text as a card shows it: its JSON value, or the text when it does not parse."""
    parsed = parse_arguments(text)
    return parsed.value if isinstance(parsed, ParsedArguments) else text


def call_update(call: PendingCall, answer: Answer | None = None) -> CallUpdate:
    """The card of a call in disposition: its status and the arguments that run (edits included)."""
    effective = call.effective_arguments
    return CallUpdate(
        call.call_id,
        call.name,
        call.status,
        answer=answer,
        arguments=effective if effective is not None else shown(call.text),
    )
