"""What one run amounted to (:class:`RunResult`), and how the store keeps it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._errors import ProtocolViolation, ProtocolWarning
from ._calls import PendingCall

__all__ = ["RunResult", "describe_run", "run_from_json", "run_to_json"]


@dataclass
class RunResult:
    """What one run amounted to: ``status`` (``success``, ``interrupt``, ``cancelled``,
    ``error``, ``truncated``, ``rejected``) and ``pending``, derived from the stream when
    ``pendingToolCallIds`` is absent or empty (FE-6, FE-7).
    """

    run_id: str | None
    status: str
    pending: list[PendingCall]
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    violation: ProtocolViolation | None = None
    warnings: list[ProtocolWarning] = field(default_factory=list)
    outcome: dict[str, Any] | None = None


def run_to_json(run: RunResult, calls: Sequence[tuple[str, bool]]) -> dict[str, Any]:
    """A run as the store keeps it: its result, and the calls it left for disposition."""
    out: dict[str, Any] = {
        "runId": run.run_id,
        "status": run.status,
        "calls": [{"id": c, "closed": closed} for c, closed in calls],
        "interrupts": run.interrupts,
        "error": run.error,
        "outcome": run.outcome,
        "warnings": [w.to_json() for w in run.warnings],
    }
    if run.violation is not None:
        out["violation"] = {**run.violation.to_json(), "where": run.violation.where}
    return out


def run_from_json(data: Mapping[str, Any]) -> RunResult:
    """The inverse of :func:`run_to_json`; ``pending`` is filled by the restore."""
    v = data.get("violation")
    violation = (
        ProtocolViolation(
            v["rule"],
            v["message"],
            index=v.get("index"),
            path=v.get("path", ""),
            value=v.get("value"),
            event_type=v.get("eventType"),
            ids=v.get("ids"),
            where=v.get("where"),
        )
        if v is not None
        else None
    )
    return RunResult(
        run_id=data.get("runId"),
        status=data["status"],
        pending=[],
        interrupts=list(data.get("interrupts") or []),
        error=data.get("error"),
        violation=violation,
        warnings=[
            ProtocolWarning(
                w["rule"],
                w["message"],
                w.get("index"),
                w.get("path", ""),
                w.get("eventType"),
                w.get("ids") or {},
            )
            for w in data.get("warnings", ())
        ],
        outcome=data.get("outcome"),
    )


def describe_run(result: RunResult) -> str:
    """How a run that did not succeed ended, in words — the agent's own message included."""
    status = result.status
    if status == "error":
        error = result.error or {}
        message = error.get("message") or "no message"
        code = error.get("code")
        shown = f" (code {code})" if code and str(code) not in message else ""
        return f"the agent ended the run with an error: {message}{shown}"
    if status == "rejected" and result.violation is not None:
        return f"the agent's stream was rejected: {result.violation}"
    if status == "truncated":
        return "the stream ended before the run's terminal event: the run is truncated"
    if status == "interrupt":
        ids = ", ".join(str(i.get("id")) for i in result.interrupts)
        return f"the run ended interrupted ({ids}) and its interrupts are unanswered"
    return f"the run ended {status}"
