"""Interrupts and their resume (INT-6, INT-7, INT-8): a run ending ``interrupt`` is
continued by a ``resume`` list with one entry per interrupt — none unknown, none left out,
an expired one only ``cancelled``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .._errors import UsageError
from ._runs import RunResult

__all__ = [
    "RESUME_TOOL",
    "SentResume",
    "check_resume",
    "expired",
    "resume_record_id",
    "unknown_resume",
]

RESUME_TOOL = "agui.resume"
"""The ``tool`` of a resume's journal record: a resume is claimed like a call."""


def resume_record_id(interrupted_run_id: str | None) -> str:
    """The journal id of the resume of run ``interrupted_run_id``: one record per
    interrupted run, claimed before its resume is sent (exactly once, like a call)."""
    return f"agui.resume/{interrupted_run_id}"


@dataclass(frozen=True)
class SentResume:
    """A resume that was sent and that no saved run answers: it may have reached the
    agent. What :class:`~agui_tools._errors.ResumeOutcomeUnknown` carries and a
    session's ``resume_unknown=`` check is asked about."""

    thread_id: str
    interrupted_run_id: str | None
    """The run whose interrupts it answers."""
    run_id: str
    """The run id it was sent under: sent again, it is sent under the same id, so an
    agent that keeps its runs by id (EVT-7) sees one run, not two."""
    resume: list[dict[str, Any]]
    """The resume entries that were sent (the user's decisions: not asked again)."""
    sent_at: datetime


def check_resume(
    runs: Sequence[RunResult], resume: Sequence[Mapping[str, Any]] | None, now: datetime
) -> set[str]:
    """Judge a resume list against the last run; return the call ids its interrupts cover."""
    last = runs[-1] if runs else None
    interrupts = last.interrupts if last is not None and last.status == "interrupt" else []
    if not interrupts:
        if resume:
            raise UsageError(
                "a resume list answers the interrupts of the run being continued, and the "
                "last run was not interrupted (INT-6)",
                rule="INT-6",
            )
        return set()
    by_id = {i["id"]: i for i in interrupts}
    entries = {e["interruptId"]: e for e in resume or ()}
    unknown = sorted(set(entries) - set(by_id))
    if unknown:
        raise UsageError(
            f"resume entries {unknown} name no interrupt of the interrupted run "
            f"(its interrupts: {sorted(by_id)}) (INT-6)",
            rule="INT-6",
        )
    missing = sorted(set(by_id) - set(entries))
    if missing:
        raise UsageError(
            f"the resume list leaves interrupt(s) {missing} uncovered; answer each, or abandon "
            "it explicitly with status 'cancelled' — omission is not abandonment (INT-7)",
            rule="INT-7",
        )
    for iid, entry in entries.items():
        if entry.get("status") == "resolved" and expired(by_id[iid], now):
            raise UsageError(
                f"interrupt {iid!r} expired at {by_id[iid]['expiresAt']}: it can no longer be "
                "answered, only abandoned with status 'cancelled' (INT-8)",
                rule="INT-8",
            )
    return {i["toolCallId"] for i in interrupts if "toolCallId" in i}


def expired(interrupt: Mapping[str, Any], now: datetime) -> bool:
    """The reference reading of ``expiresAt``: an ISO 8601 date, now-or-earlier is expired."""
    raw = interrupt.get("expiresAt")
    if not isinstance(raw, str):
        return False
    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return False  # unreadable: cannot judge it expired
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when <= now


def unknown_resume(sent: SentResume) -> str:
    """Why ``sent`` is not sent again on its own: what :class:`~agui_tools._errors.ResumeOutcomeUnknown` says."""
    return (
        f"a resume of interrupted run {sent.interrupted_run_id!r} of thread {sent.thread_id!r} "
        f"was sent at {sent.sent_at.isoformat(timespec='seconds')} as run {sent.run_id!r} and "
        "no run of it was saved (the process stopped, or another replica is sending it): it "
        "may have reached the agent, so it is not sent again blindly and nothing was sent "
        "now; give the session a resume_unknown= check to send it again under the same run id"
    )
