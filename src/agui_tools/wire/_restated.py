"""What a ``MESSAGES_SNAPSHOT`` restates otherwise than the stream said.

Beyond the official client (our rules: AGT-*). A snapshot may restate what the
stream already said; where it says something *else* about a call the stream
closed, the user was shown one thing and the application will act on another
(an adapter drops a call's first argument chunk and the snapshot restates the
whole), or the thread's tool message moves to another id. The verifier reports
each slip found here as a warning, or a violation in strict mode.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from .._errors import describe_value

__all__ = ["Slip", "beside_its_call", "restated_slips"]

_MISSING: Final = object()


@dataclass(frozen=True, slots=True)
class Slip:
    """One thing a snapshot restates otherwise, and the rule that names it."""

    rule: str
    text: str
    ids: dict[str, str]


def restated_slips(
    messages: Iterable[Mapping[str, Any]],
    closed_arguments: Callable[[str], str | None],
    results: Mapping[str, str],
    result_origin: Mapping[str, str],
) -> Iterator[Slip]:
    """The slips of a snapshot's ``messages``, in the order they appear.

    ``closed_arguments(call_id)``: the argument text the stream closed a call
    with (``None``: not streamed here, or not closed — the snapshot is the first
    word). ``results``: call id → the message id its result had so far;
    ``result_origin``: where that id was said (named in the slip).
    """
    listed = messages if isinstance(messages, Sequence) else list(messages)
    for msg in listed:
        role = msg["role"]
        if role == "assistant":
            for call in msg.get("toolCalls", ()):
                slip = _arguments_slip(call, closed_arguments(call["id"]))
                if slip is not None:
                    yield slip
        elif role == "tool":
            call_id, message_id = msg["toolCallId"], msg["id"]
            streamed = results.get(call_id)
            if streamed is not None and streamed != message_id:
                origin = result_origin.get(call_id, "the thread")
                head = (
                    f"MESSAGES_SNAPSHOT restates the result of tool call {call_id!r} as "
                    f"message {message_id!r}, but {origin} had it as message {streamed!r}; "
                    f"reconciled by id, {streamed!r} is dropped and {message_id!r} takes "
                    "its place"
                )
                if beside_its_call(listed, call_id):
                    text = (
                        f"{head} beside its call, where the snapshot lists it (it re-mints "
                        "the messages around it too): the thread keeps its shape, and only "
                        f"what an application keyed to {streamed!r} loses its message."
                    )
                else:
                    text = (
                        f"{head} after the messages the snapshot lists before it, away "
                        "from its call."
                    )
                ids = {"toolCallId": call_id, "messageId": message_id, "resultMessageId": streamed}
                yield Slip("AGT-SNAP-2", text, ids)


def _arguments_slip(call: Mapping[str, Any], streamed: str | None) -> Slip | None:
    if streamed is None:
        return None
    call_id = call["id"]
    restated = call["function"]["arguments"]
    if streamed == restated:
        return None
    streamed_value, restated_value = _json_or_missing(streamed), _json_or_missing(restated)
    if streamed_value is not _MISSING and streamed_value == restated_value:
        return None  # the same arguments, spelled differently
    ids = {"toolCallId": call_id}
    if streamed_value is _MISSING and restated_value is not _MISSING:
        return Slip(
            "AGT-ARGS-1",
            f"tool call {call_id!r} closed with arguments that do not parse "
            f"({describe_value(streamed)}), and MESSAGES_SNAPSHOT restates them as "
            f"{describe_value(restated)}: the stream lost part of the arguments (the "
            "dropped-first-chunk signature); the snapshot's are what will run.",
            ids,
        )
    return Slip(
        "AGT-SNAP-1",
        f"MESSAGES_SNAPSHOT rewrites the arguments of tool call {call_id!r}, which the stream "
        f"already closed: the stream had {describe_value(streamed)}, the snapshot says "
        f"{describe_value(restated)}; the snapshot's are what will run.",
        ids,
    )


def _json_or_missing(text: str) -> Any:
    """The JSON value of an argument text, or ``_MISSING`` when it does not parse."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return _MISSING


def beside_its_call(messages: Sequence[Mapping[str, Any]], call_id: str) -> bool:
    """In ``messages`` (a snapshot's list, a thread), the tool message answering
    ``call_id`` follows the message holding the call, with only tool messages between."""
    holder = next(
        (
            i
            for i, m in enumerate(messages)
            if any(c.get("id") == call_id for c in m.get("toolCalls") or ())
        ),
        None,
    )
    answer = next(
        (
            i
            for i, m in enumerate(messages)
            if m.get("role") == "tool" and m.get("toolCallId") == call_id
        ),
        None,
    )
    if holder is None or answer is None or answer < holder:
        return False
    return all(m.get("role") == "tool" for m in messages[holder + 1 : answer])
