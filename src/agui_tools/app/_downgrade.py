"""Talking to an older peer: outgoing run input, and version-gated downgrades.

``prepare_run_input`` is the client's last word before sending (INPUT-4, INPUT-7): declare
``protocolVersion``, strip activity messages, upgrade legacy ``binary`` parts, strip the
unrecognised with a warning and refuse the malformed (:class:`InputRejected`). A party that
knows its peer is older MAY downgrade, warning when content is lost (VER-3, VER-6): ≤ 0.0.39
flattens content to text and drops ``parentRunId``; ≤ 0.0.57 strips ``subagentRunId`` and
drops ``SUBAGENT_*`` events on the way back (:func:`subagent_downgrade`); < 1.0 declares no
version.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from .._errors import ProtocolWarning
from .._version import PROTOCOL_VERSION
from ..wire._enforce import Enforcer, shared_enforcer
from ..wire._upgrade import upgrade_run_input

__all__ = ["peer_at_most", "prepare_run_input", "subagent_downgrade"]

JsonObj = dict[str, Any]
_SUBAGENT_EVENTS: Final = frozenset({"SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR"})


def _version_tuple(version: str) -> tuple[int, ...] | None:
    try:
        return tuple(int(p) for p in version.split("."))
    except ValueError:
        return None


def peer_at_most(peer_version: str | None, gate: str) -> bool:
    """True when the peer is *known* to be at or below ``gate``.

    An unknown or uninterpretable peer version is treated as current (VER-5):
    guessing downward would degrade streams for no reason.
    """
    if peer_version is None:
        return False
    peer, limit = _version_tuple(peer_version), _version_tuple(gate)
    if peer is None or limit is None:
        return False
    width = max(len(peer), len(limit))
    return peer + (0,) * (width - len(peer)) <= limit + (0,) * (width - len(limit))


def _flatten_content(message: JsonObj, warnings: list[ProtocolWarning], index: int) -> JsonObj:
    content = message.get("content")
    if isinstance(content, list):
        texts = [p for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if any(not isinstance(p.get("text"), str) for p in texts):
            return message  # malformed: leave it for enforcement to report, never repair
        dropped = [
            str(p.get("type")) if isinstance(p, dict) else type(p).__name__
            for p in content
            if p not in texts
        ]
        if dropped:
            warnings.append(
                ProtocolWarning(
                    "VER-3",
                    f"flattening message content for a <=0.0.39 peer DROPS non-text parts "
                    f"({', '.join(dropped)}); upgrade the peer to keep media content.",
                    None,
                    f"/messages/{index}/content",
                )
            )
        return {**message, "content": "".join(p["text"] for p in texts)}
    if content is None and message.get("role") in ("user", "assistant"):
        return {**message, "content": ""}  # an empty value the older schema requires (VER-2)
    return message


def prepare_run_input(
    run_input: Mapping[str, Any],
    *,
    peer_version: str | None = None,
    enforcer: Enforcer | None = None,
) -> tuple[JsonObj, list[ProtocolWarning]]:
    """The ``RunAgentInput`` exactly as it will be sent, plus what was stripped.

    Raises :class:`~agui_tools._errors.InputRejected` when a known field is
    malformed: nothing is sent (INPUT-16, processing "Outgoing material").
    """
    warnings: list[ProtocolWarning] = []
    data: JsonObj = dict(run_input)
    if peer_at_most(peer_version, "0.9999"):
        data.pop("protocolVersion", None)
    else:
        data["protocolVersion"] = PROTOCOL_VERSION
    messages = [
        m
        for m in data.get("messages", ())
        if not (isinstance(m, dict) and m.get("role") == "activity")
    ]
    if peer_at_most(peer_version, "0.0.57"):
        messages = [
            {k: v for k, v in m.items() if k != "subagentRunId"} if isinstance(m, dict) else m
            for m in messages
        ]
    if peer_at_most(peer_version, "0.0.39"):
        data.pop("parentRunId", None)
        messages = [
            _flatten_content(m, warnings, i) if isinstance(m, dict) else m
            for i, m in enumerate(messages)
        ]
    data["messages"] = messages
    upgraded, _ = upgrade_run_input(data, warn=False)
    # the shared enforcer: compiling one (its fast checks) per input is costly
    clean, stripped = (enforcer or shared_enforcer()).run_input(upgraded)
    return clean, warnings + stripped


def _strip_tag(obj: Any) -> Any:
    if isinstance(obj, dict) and "subagentRunId" in obj:
        return {k: v for k, v in obj.items() if k != "subagentRunId"}
    return obj


class subagent_downgrade:
    """Middleware for a peer that predates subagents (≤ 0.0.57).

    Drops ``SUBAGENT_*`` lifecycle events with a warning (a lossy downgrade,
    VER-3, SUB-19) and strips attribution everywhere else (lossless, silent).
    """

    def __call__(self, event: JsonObj) -> Iterable[JsonObj | ProtocolWarning]:
        kind = event.get("type")
        if kind in _SUBAGENT_EVENTS:
            return (
                ProtocolWarning(
                    "VER-3",
                    f"dropping {kind} because the peer predates subagent support; upgrade the "
                    "peer's AG-UI integration to keep the subagent lifecycle.",
                    None,
                    "",
                    str(kind),
                ),
            )
        out = _strip_tag(event)
        if kind == "MESSAGES_SNAPSHOT" and isinstance(out.get("messages"), list):
            out = {**out, "messages": [_strip_tag(m) for m in out["messages"]]}
        elif kind == "RUN_FINISHED" and isinstance(out.get("outcome"), dict):
            outcome = out["outcome"]
            if isinstance(outcome.get("interrupts"), list):
                out = {
                    **out,
                    "outcome": {
                        **outcome,
                        "interrupts": [_strip_tag(i) for i in outcome["interrupts"]],
                    },
                }
        elif kind == "RUN_STARTED" and isinstance(out.get("input"), dict):
            run_input = out["input"]
            if isinstance(run_input.get("messages"), list):
                out = {
                    **out,
                    "input": {
                        **run_input,
                        "messages": [_strip_tag(m) for m in run_input["messages"]],
                    },
                }
        return (out,)
