"""Subagent invocations on the producer side (SUB-*), a mixin of
:class:`~agui_tools.agent._emitter.Emitter`: an invocation's end ends what it holds open
(live items are a bug, abandoned ones closed, nested ones failed with it) and its lane
(CHUNK-14).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..wire._kinds import SUBAGENT, WireEvent
from ._books import LIVE_RULE, ItemState, Opened, Owner, emitter_refusal, json_numbers, open_key

__all__ = ["SubagentScopes"]


class SubagentScopes:
    """``subagent_start`` / ``subagent_finish`` / ``subagent_error`` of the emitter."""

    _open: dict[tuple[str, Owner, str], Opened]
    _subagents_done: set[str]
    _subagent_parent: dict[str, Owner]
    _tags: set[str]
    _require_active: Callable[[], None]
    _send: Callable[[WireEvent], None]
    _drain: Callable[[], list[WireEvent]]
    _close_entry: Callable[[Opened], None]
    _drop: Callable[[Opened, ItemState], None]

    def subagent_start(
        self,
        subagent_run_id: str,
        name: str,
        *,
        description: str | None = None,
        parent: Owner = None,
        parent_tool_call_id: str | None = None,
        parent_message_id: str | None = None,
    ) -> list[WireEvent]:
        """Announce an invocation, before anything attributed to it (SUB-4)."""
        self._require_active()
        sid = subagent_run_id
        if open_key("subagent", sid) in self._open or sid in self._subagents_done:
            raise emitter_refusal(
                f"subagent invocation {sid!r} was already announced in this run; each invocation "
                "gets its own id.",
                rule=SUBAGENT.opened_twice,
            )
        if sid in self._tags:
            raise emitter_refusal(
                f"events were already attributed to {sid!r}; an invocation is announced before "
                "its events.",
                rule="SUB-4",
            )
        if parent is not None and open_key("subagent", parent) not in self._open:
            raise emitter_refusal(
                f"parent invocation {parent!r} is not active in this run.", rule="SUB-14"
            )
        ev: WireEvent = {"type": "SUBAGENT_STARTED", "subagentRunId": sid, "name": name}
        for field, value in (
            ("description", description),
            ("parentSubagentRunId", parent),
            ("parentToolCallId", parent_tool_call_id),
            ("parentMessageId", parent_message_id),
        ):
            if value is not None:
                ev[field] = value
        self._send(ev)
        self._open[open_key("subagent", sid)] = Opened("subagent", sid, sid, parent=parent)
        self._subagent_parent[sid] = parent
        self._tags.add(sid)
        return self._drain()

    def subagent_finish(
        self,
        subagent_run_id: str,
        *,
        result: Any = None,
        suspended: bool = False,
        interrupt_ids: Sequence[str] = (),
    ) -> list[WireEvent]:
        """``SUBAGENT_FINISHED``. Like a run: live items are a bug, abandoned ones are closed."""
        entry = self._subagent(subagent_run_id)
        mine = self._owned_by(subagent_run_id)
        live = [e for e in mine if e.state == "open"]
        if live:
            raise emitter_refusal(
                f"subagent {subagent_run_id!r} cannot finish while {live[0].describe()} is still "
                "open.",
                rule=LIVE_RULE[live[0].kind],
            )
        for item in reversed(mine):
            self._close_entry(item)
        fields: WireEvent = {}
        if result is not None:
            fields["result"] = result
        if suspended:
            outcome: WireEvent = {"type": "suspended"}
            if interrupt_ids:
                outcome["interruptIds"] = list(interrupt_ids)
            fields["outcome"] = outcome
        elif interrupt_ids:
            raise emitter_refusal("a success outcome carries no interrupt ids.", rule="SUB-9")
        self._subagent_terminal(entry, fields, error=False)
        return self._drain()

    def subagent_error(
        self, subagent_run_id: str, message: str, *, code: str | None = None
    ) -> list[WireEvent]:
        """``SUBAGENT_ERROR``: the invocation failed; the run goes on (SUB-8).

        Its steps are closed (they carry its attribution, SUB-13); its items
        are abandoned like the run's would be, and its nested invocations fail
        with it.
        """
        entry = self._subagent(subagent_run_id)
        for item in reversed(self._owned_by(subagent_run_id)):
            if item.kind == "subagent":
                self._subagent_terminal(
                    item,
                    {"message": "its parent invocation failed", "code": "parent_failed"},
                    error=True,
                )
            elif item.kind == "step":
                self._close_entry(item)
            elif item.chunked:
                self._drop(item, "abandoned")
            else:
                item.state = "abandoned"
        fields: WireEvent = {"message": message}
        if code is not None:
            fields["code"] = code
        self._subagent_terminal(entry, fields, error=True)
        return self._drain()

    def _subagent(self, sid: str) -> Opened:
        self._require_active()
        entry = self._open.get(open_key("subagent", sid))
        if entry is None:
            raise emitter_refusal(
                f"subagent invocation {sid!r} is not active.", rule=SUBAGENT.not_open
            )
        return entry

    def _owned_by(self, sid: str) -> list[Opened]:
        """What ``sid`` or its nested invocations hold open, in opening order."""

        def inside(owner: Owner) -> bool:
            while owner is not None:
                if owner == sid:
                    return True
                owner = self._subagent_parent.get(owner)
            return False

        return [
            e
            for e in self._open.values()
            if (e.kind != "subagent" and inside(e.owner))
            or (e.kind == "subagent" and e.ident != sid and inside(e.parent))
        ]

    def _subagent_terminal(self, entry: Opened, fields: WireEvent, *, error: bool) -> None:
        """End an invocation. Its chunked items were dropped or refused by the caller:
        the terminal event closes its lane's stream on the consumer's side (CHUNK-14)."""
        sid = entry.ident
        ev: WireEvent = {
            "type": "SUBAGENT_ERROR" if error else "SUBAGENT_FINISHED",
            "subagentRunId": sid,
        }
        ev.update(fields)
        json_numbers(ev)
        self._send(ev)
        del self._open[entry.key]
        entry.state = "closed"
        self._subagents_done.add(sid)
