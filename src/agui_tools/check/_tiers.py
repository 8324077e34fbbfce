"""Verdict tiers and capabilities: how much a case's verdict matters, and what it needs.

**Tiers**: the strongest RFC 2119 keyword of the case's rules
(:data:`~agui_tools.check._rules.RULES`; "is fatal" counts as MUST), unless
:data:`TIER_OVERRIDES` names it with a reason. ``--level`` (:func:`counts_at`) picks which
tiers' warnings fail; a ``fail`` always does.

**Capabilities**: no binding carries a capability declaration, and undeclared is not
unsupported (CAP-1), so a capability counts once the agent showed it on the wire (called a
tool, answered its own, interrupted, answered protobuf, confirmed the resumable extension).
A case needing one never shown is ``not exercised``, never ``fail`` (:func:`gate`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from ._report import LEVELS, CaseResult, Finding, Tier, Verdict, counts_at, worst
from ._rules import RULES

if TYPE_CHECKING:
    from ._context import Stream

__all__ = [
    "CAPABILITIES",
    "LEVELS",
    "TIER_OVERRIDES",
    "Tier",
    "counts_at",
    "exercised",
    "gate",
    "rule_tier",
    "tier_of",
]


_KEYWORDS: Final = (
    # RULES.md's conventions: "is fatal", "is a violation", "is rejected" wording binds as a MUST
    (Tier.MUST, re.compile(r"\b(MUST|REQUIRED|SHALL)\b|\bis (fatal|a violation|rejected)\b")),
    (Tier.SHOULD, re.compile(r"\b(SHOULD|RECOMMENDED)\b")),
    (Tier.MAY, re.compile(r"\b(MAY|OPTIONAL)\b")),
)


def rule_tier(rule: str) -> Tier:
    """The strongest RFC 2119 keyword in the rule's text (informational: none)."""
    text = RULES.get(rule, "")
    for tier, pattern in _KEYWORDS:
        if pattern.search(text):
            return tier
    return Tier.INFORMATIONAL


TIER_OVERRIDES: Final[Mapping[str, tuple[Tier, str]]] = {
    "frontend.arguments": (
        Tier.SHOULD,
        "TOOL-21's MUST binds the application that validates arguments, and TOOL-6 makes text "
        "that does not parse no protocol violation: a model's malformed arguments are a "
        "warning about the agent, never a broken MUST",
    ),
    "transport.keep-alive": (
        Tier.INFORMATIONAL,
        "TRANS-5's MUSTs are judged by transport.framing; keep-alive comments MAY come at "
        "any cadence, and the case only counts them",
    ),
    "transport.protobuf": (
        Tier.MAY,
        "the binary binding is OPTIONAL (TRANS-3); once the agent answers with it, its "
        "framing and events are MUSTs — those findings are fails, which count at every level",
    ),
}
"""Cases whose tier is not the strongest keyword of the rules they cite, and why."""


def tier_of(case_id: str, rules: Sequence[str]) -> Tier:
    """The tier of a case citing ``rules``: its override, else the strongest keyword."""
    if case_id in TIER_OVERRIDES:
        return TIER_OVERRIDES[case_id][0]
    tiers = [rule_tier(r) for r in rules]
    return max(tiers, key=lambda t: t.strength, default=Tier.INFORMATIONAL)


# -- capabilities ---------------------------------------------------------------------

CAPABILITIES: Final[Mapping[str, str]] = {
    "frontend-tools": "calls a tool the input advertised and leaves it to the application "
    "(FE-1, FE-15)",
    "agent-tools": "runs a tool of its own and answers it itself (TOOL_CALL_RESULT, FE-12)",
    "interrupts": "ends a run with the interrupt outcome (INT-1)",
    "errored-runs": "ends a run with RUN_ERROR or the cancelled outcome (RUN-10, RUN-5)",
    "state": "streams state (STATE_SNAPSHOT, STATE_DELTA)",
    "snapshots": "restates the conversation (MESSAGES_SNAPSHOT)",
    "binary": "answers the binary binding, HTTP + protobuf (TRANS-7)",
    "resumable": "confirms the resumable extension on a run that opts in (RESUME-1, "
    "docs/resumable.md)",
}
"""Every capability a case may need, and what showing it means."""


def exercised(streams: Iterable[Stream]) -> dict[str, str]:
    """The capabilities the agent showed in ``streams``: name → the first evidence."""
    out: dict[str, str] = {}

    def saw(name: str, evidence: str) -> None:
        out.setdefault(name, evidence)

    for stream in streams:
        where = repr(stream.exchange.label)
        if stream.resumable:  # its events are the resumable case's own, not judged here
            saw("resumable", f"confirmed the resumable extension on {where}")
        judged = stream.judged
        if judged is None:
            continue
        if stream.binary:
            saw("binary", f"answered {where} with protobuf frames")
        advertised = {
            t.get("name") for t in stream.input.get("tools") or () if isinstance(t, Mapping)
        }
        # a resumed run answers a call its interrupted run started: the input's history
        # names it
        started: dict[str, str] = _calls_in_history(stream.input)
        for ev in judged.events:
            kind = ev.get("type")
            cid, name = ev.get("toolCallId"), ev.get("toolCallName")
            if kind in ("TOOL_CALL_START", "TOOL_CALL_CHUNK") and isinstance(name, str):
                started.setdefault(str(cid), name)
                if name in advertised:
                    saw("frontend-tools", f"called the advertised {name!r} in {where}")
            elif kind == "TOOL_CALL_RESULT" and str(cid) in started:
                if started[str(cid)] not in advertised:
                    saw("agent-tools", f"answered its own {started[str(cid)]!r} in {where}")
            elif kind in ("STATE_SNAPSHOT", "STATE_DELTA"):
                saw("state", f"sent {kind} in {where}")
            elif kind == "MESSAGES_SNAPSHOT":
                saw("snapshots", f"sent MESSAGES_SNAPSHOT in {where}")
            elif kind == "RUN_FINISHED" and _interrupt_outcome(ev):
                # an ill-formed interrupt outcome (INT-1, INT-3) rejects the run, yet the
                # agent did interrupt: the case judging that outcome is exercised
                saw("interrupts", f"ended {where} with an interrupt outcome")
        for run in judged.runs:
            if run.status == "interrupt":
                saw(
                    "interrupts",
                    f"ended {where} with {len(run.interrupts or ())} interrupt(s)",
                )
            elif run.status in ("error", "cancelled"):
                saw("errored-runs", f"ended a run of {where} {run.status}")
    return out


def _calls_in_history(run_input: Mapping[str, Any]) -> dict[str, str]:
    """The tool calls the input's assistant messages made: call id → tool name."""
    out: dict[str, str] = {}
    for message in run_input.get("messages") or ():
        if not isinstance(message, Mapping):
            continue
        for tool_call in message.get("toolCalls") or ():
            function = tool_call.get("function") if isinstance(tool_call, Mapping) else None
            name = function.get("name") if isinstance(function, Mapping) else None
            if isinstance(name, str):
                out[str(tool_call.get("id"))] = name
    return out


def _interrupt_outcome(event: Mapping[str, Any]) -> bool:
    outcome = event.get("outcome")
    return isinstance(outcome, Mapping) and outcome.get("type") == "interrupt"


def gate(res: CaseResult, capability: str | None, shown: Mapping[str, str]) -> None:
    """A case needing a capability the agent never showed is ``not exercised``, never a
    ``fail`` or ``warn``: what it found is kept, graded ``info``, after the reason."""
    if capability is None or capability in shown:
        return
    if res.verdict not in (Verdict.FAIL, Verdict.WARN):
        return
    kept = [
        Finding(Verdict.INFO, f.rule, f.message, f.exchange, f.event)
        if f.verdict in (Verdict.FAIL, Verdict.WARN)
        else f
        for f in res.findings
    ]
    reason = Finding(
        Verdict.NOT_EXERCISED,
        "CAP-1",
        f"the case needs the {capability!r} capability ({CAPABILITIES[capability]}), which the "
        "agent never declared or exercised during the check; what the case saw is kept as "
        "info, not judged.",
    )
    res.findings = [reason, *kept]
    res.verdict = worst(f.verdict for f in res.findings)
    res.observed = reason.message
