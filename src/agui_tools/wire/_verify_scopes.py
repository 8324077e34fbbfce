"""The scopes' sequence rules: reasoning spans, steps, subagent invocations, activities.

A scope is opened and closed by a pair of events and holds no content
(:data:`~agui_tools.wire._kinds.SCOPES`); an activity is an item a snapshot
(re-)opens and deltas continue. Their rules are the verifier's, kept here by
job: :class:`ScopeRules` is the part of :class:`~agui_tools.wire._verify.Verifier`
that handles these events, reading and writing the verifier's run-scoped sets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .._errors import ProtocolViolation
from ._kinds import SPAN, STEP, SUBAGENT, WireEvent

__all__ = ["ScopeRules"]


class ScopeRules:
    """The ``_on_*`` handlers of spans, steps, subagents and activities (a mixin of
    the verifier, which owns the state below and resets it with every run)."""

    _spans: set[str]
    _steps: set[tuple[str | None, str]]
    _subagents: set[str]
    _subagents_done: set[str]
    _tags_seen: set[str]
    _activities: dict[str, str | None]  # activity id → owner (this run)
    _violation: Callable[..., ProtocolViolation]
    _beyond: Callable[[str, str, int | None, str, Mapping[str, str]], None]

    def _on_reasoning_start(self, ev: WireEvent, index: int | None) -> None:
        span = ev["messageId"]
        if span in self._spans:
            raise self._violation(
                SPAN.opened_twice,
                f"REASONING_START reopens {SPAN.noun} {span!r}, which is still open.",
                ev,
                index,
                ids={"messageId": span},
            )
        self._spans.add(span)

    def _on_reasoning_end(self, ev: WireEvent, index: int | None) -> None:
        span = ev["messageId"]
        if span not in self._spans:
            raise self._violation(
                SPAN.not_open,
                f"REASONING_END names {SPAN.noun} {span!r}, but no active span has that id.",
                ev,
                index,
                ids={"messageId": span},
            )
        self._spans.discard(span)

    def _on_step_started(self, ev: WireEvent, index: int | None) -> None:
        key = (ev.get("subagentRunId"), ev["stepName"])
        if key in self._steps:
            raise self._violation(
                STEP.opened_twice,
                f"STEP_STARTED opens step {key[1]!r}, which its owner already has open.",
                ev,
                index,
                ids={"stepName": key[1]},
            )
        self._steps.add(key)

    def _on_step_finished(self, ev: WireEvent, index: int | None) -> None:
        key = (ev.get("subagentRunId"), ev["stepName"])
        if key not in self._steps:
            owner = f" by {key[0]!r}" if key[0] else ""
            raise self._violation(
                STEP.not_open,
                f"STEP_FINISHED closes step {key[1]!r}{owner}, that was not started (steps are "
                "per owner: a STEP_FINISHED carries its STEP_STARTED's attribution).",
                ev,
                index,
                ids={"stepName": key[1]},
            )
        self._steps.discard(key)

    def _on_subagent_started(self, ev: WireEvent, index: int | None) -> None:
        sub = ev["subagentRunId"]
        if sub in self._subagents or sub in self._subagents_done:
            state = (
                "is already active" if sub in self._subagents else "already finished in this run"
            )
            raise self._violation(
                SUBAGENT.opened_twice,
                f"SUBAGENT_STARTED announces invocation {sub!r}, which {state}; each invocation "
                "gets its own id.",
                ev,
                index,
                ids={"subagentRunId": sub},
            )
        parent = ev.get("parentSubagentRunId")
        if (
            parent is not None
            and parent not in self._subagents
            and parent not in self._subagents_done
        ):
            self._beyond(
                "SUB-14",
                f"SUBAGENT_STARTED names parent invocation {parent!r}, which was not announced in "
                "this run.",
                index,
                ev["type"],
                {"subagentRunId": sub},
            )
        if sub in self._tags_seen:
            self._beyond(
                "SUB-4",
                f"invocation {sub!r} is announced after events already attributed to it; a "
                "producer announces an invocation before its events.",
                index,
                ev["type"],
                {"subagentRunId": sub},
            )
        self._subagents.add(sub)

    def _on_subagent_finished(self, ev: WireEvent, index: int | None) -> None:
        """``SUBAGENT_FINISHED`` and ``SUBAGENT_ERROR`` alike close an invocation."""
        sub = ev["subagentRunId"]
        if sub not in self._subagents:
            raise self._violation(
                SUBAGENT.not_open,
                f"{ev['type']} closes invocation {sub!r}, which was never announced (or already "
                "ended) in this run; there is nothing to close.",
                ev,
                index,
                ids={"subagentRunId": sub},
            )
        self._subagents.discard(sub)
        self._subagents_done.add(sub)

    _on_subagent_error = _on_subagent_finished

    def _on_activity_snapshot(self, ev: WireEvent, index: int | None) -> None:
        """A snapshot that creates or replaces an activity (re-)mints its owner."""
        ident, tag = ev["messageId"], ev.get("subagentRunId")
        if ev.get("replace", True) or ident not in self._activities:
            self._activities[ident] = tag
        if tag is not None:
            self._tags_seen.add(tag)

    def _on_activity_delta(self, ev: WireEvent, index: int | None) -> None:
        """A delta continues the activity its snapshot opened: a disagreeing tag is fatal."""
        ident, tag = ev["messageId"], ev.get("subagentRunId")
        if tag is None:
            return
        self._tags_seen.add(tag)
        if ident in self._activities and self._activities[ident] != tag:
            owner = self._activities[ident]
            raise self._violation(
                "SUB-11",
                f"ACTIVITY_DELTA is attributed to {tag!r} but activity {ident!r} was opened by "
                f"{owner or 'the parent agent'!r}; a continuation must agree with its opener.",
                ev,
                index,
                path="/subagentRunId",
                ids={"messageId": ident},
            )
