"""The emitter's books: the records of what a run opened and the calls it knows, their
nouns and rules, and the wording of a refusal (a misuse, a non-finite number, an event that
would close a chunk stream being written, CHUNK-11).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from .. import _telemetry
from .._errors import UsageError
from ..wire._codec import refuse_non_finite
from ..wire._expand import RUN_LEVEL, SUBAGENT_TERMINAL
from ..wire._kinds import (
    CHUNK_TYPES,
    FAMILY,
    SCOPES,
    STREAMED,
    Scope,
    StreamedKind,
    WireEvent,
)

__all__ = [
    "LIVE_RULE",
    "NOUN",
    "OPENED",
    "ItemState",
    "KnownCall",
    "Opened",
    "Owner",
    "as_list",
    "emitter_refusal",
    "json_numbers",
    "lane_error",
    "open_key",
]

Owner = str | None  # a subagent invocation id, or None for the parent agent


# everything the run can open, items and scopes: what an error calls it, and the
# rule broken by finishing the run with one open
OPENED: Final[Mapping[str, StreamedKind | Scope]] = {**STREAMED, **SCOPES}
NOUN: Final = {k: v.noun for k, v in OPENED.items()}
LIVE_RULE: Final = {k: v.left_open for k, v in OPENED.items()}
ItemState = Literal["open", "abandoned", "closed"]


@dataclass(slots=True, eq=False)
class Opened:
    """Something the run opened: an item, a span, a step or a subagent invocation."""

    kind: str  # text / tool / reasoning / span / step / subagent
    ident: str  # id, or the step's name
    owner: Owner  # the lane and tag it was opened under
    chunked: bool = False
    state: ItemState = "open"
    parent: Owner = None  # subagents: parentSubagentRunId

    @property
    def key(self) -> tuple[str, Owner, str]:
        return open_key(self.kind, self.ident, self.owner)

    def describe(self) -> str:
        owner = f" of subagent {self.owner!r}" if self.owner and self.kind != "subagent" else ""
        return f"{NOUN[self.kind]} {self.ident!r}{owner}"


def open_key(kind: str, ident: str, owner: Owner = None) -> tuple[str, Owner, str]:
    # steps are per owner (SUB-13); everything else is keyed by id alone
    return (kind, owner if kind == "step" else None, ident)


@dataclass(frozen=True, slots=True)
class KnownCall:
    name: str
    parent: str | None
    owner: Owner  # effective: a call inherits its message's owner (SUB-12)


def as_list(value: Any) -> Any:
    """A tuple becomes the JSON array it means; anything else is judged as given."""
    return list(value) if isinstance(value, tuple) else value


def json_numbers(ev: WireEvent) -> None:
    """Refuse NaN and ±Infinity in an event's payload (TRANS-4): orjson writes them as
    ``null`` silently. Only agent-supplied JSON (state, payloads, results, usage) is walked.
    """
    refuse_non_finite(ev, f"refusing to emit {ev['type']}")


def emitter_refusal(message: str, *, rule: str | None = None) -> UsageError:
    """A refusal of the emitter: the :class:`UsageError` it raises, recorded (on the
    agent's run span, in ``agui.agent.refusals``) as it is made — so a refusal the
    agent catches and goes on from is in the trace too (docs/observability.md)."""
    error = UsageError(message, rule=rule)
    _telemetry.refused(error)
    return error


def lane_error(ev: WireEvent, held: Opened) -> UsageError:
    """The refusal of an event that would close ``held``'s live chunk stream: how it
    would, in the words of ``expand.py``'s closing rules (CHUNK-11; CHUNK-3 when it
    names the item in the other spelling)."""
    kind, rule = ev["type"], "CHUNK-11"
    if kind in CHUNK_TYPES:
        how = "opens another chunked item in the same lane"
    elif kind in RUN_LEVEL:
        how = "closes every chunk lane"
    elif kind in SUBAGENT_TERMINAL:
        how = "ends the lane's owner"
    elif FAMILY.get(kind) == held.kind and ev.get(STREAMED[held.kind].id_field) == held.ident:
        how, rule = "names it explicitly (the two spellings do not mix)", "CHUNK-3"
    else:
        how = "arrives in its lane"
    lane = f"subagent {held.owner!r}'s lane" if held.owner else "the parent agent's lane"
    return emitter_refusal(
        f"{kind} {how}, which would make a consumer close the chunk stream of "
        f"{held.describe()} in {lane} while it is still being written. Finish the chunked item "
        "first, spell one of them explicitly, or emit from a subagent scope (its own lane).",
        rule=rule,
    )
