"""What a UI is told as a run streams and its calls are disposed of.

:class:`TextDelta` and :class:`CallUpdate` (and the protocol's own
:class:`~agui_tools._errors.ProtocolWarning`) are the ``Update`` values a
:class:`~agui_tools.app._conversation.Conversation` hands out through
``receive`` and ``take_updates``: plain values, so a terminal, a page or a test
renders them without knowing the core.
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

    ``arguments`` is set once the arguments are no longer a preview: a
    ``MESSAGES_SNAPSHOT`` restated the call differently from what streamed, or
    the call reached disposition (the user's edit included) or its answer. It
    is what runs — or ran — (the parsed JSON value; the raw text when it does
    not parse); a UI shows it in place of the streamed preview, so what a user
    is shown after the fact is what executed.
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
