"""Resource limits of one consumer: what a hostile or broken producer cannot grow.

One object, read where each limit is kept: the verifier (open items, tracked
ids, argument text), the expander (chunk lanes), the reducer (message text,
state), enforcement (depth) and the framers (event size).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._enforce import DEFAULT_MAX_DEPTH, checked_max_depth

__all__ = ["Limits"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of one consumer. Exceeding one raises :class:`LimitExceeded`.

    The defaults are generous for real traffic and keep a hostile or broken
    producer from growing memory without bound.
    """

    max_event_bytes: int = 16 * 1024 * 1024
    """Largest single event (one SSE ``data`` payload / NDJSON line)."""
    max_argument_bytes: int = 8 * 1024 * 1024
    """Largest argument text of one tool call, across all its deltas and reopens
    (counted in characters)."""
    max_message_bytes: int = 8 * 1024 * 1024
    """Largest text one message (text or reasoning) may stream, across all its
    deltas and reopens (counted in characters). Kept by the reducer."""
    max_state_bytes: int = 8 * 1024 * 1024
    """Largest the state — and each activity message's content — may be, as
    compact JSON. Kept by the reducer *while* a patch applies, so a small patch
    cannot build a large value (``copy`` doubles what it copies); the existing
    values one patch may copy or discard are bounded by it too (see
    :mod:`agui_tools.app._patch`). 8 MiB: the state travels back in the
    next run input, and a server's default body limit is 8 MiB."""
    max_open_items: int = 10_000
    """Items open at once in one run: messages, calls, reasoning, steps, subagents."""
    max_lanes: int = 1_000
    """Chunk streams open at once (one per owner lane)."""
    max_tracked_ids: int = 1_000_000
    """Message and tool-call ids remembered for one thread."""
    max_depth: int = DEFAULT_MAX_DEPTH
    """How deeply one event may nest (itself level 1), enforced where open values enter;
    128 by default (see :data:`~agui_tools.wire._enforce.DEFAULT_MAX_DEPTH`), above
    :data:`~agui_tools.wire._enforce.MAX_DEPTH_CEILING` a :class:`UsageError`."""

    def __post_init__(self) -> None:
        if self.max_depth != DEFAULT_MAX_DEPTH:
            checked_max_depth(self.max_depth, "Limits.max_depth")
