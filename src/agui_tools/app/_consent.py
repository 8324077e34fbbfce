"""Consent: who may let a tool call run, and the record of who did.

The specification's two obligations (TOOL-22, SEC-1): an application SHOULD
obtain the user's consent before executing a side-effectful call, and MUST NOT
represent a call as user-approved when it was not. So every decision here
names who made it — the ``user``, the application's ``policy``, or the
``system`` (a crash recovery, a refusal of a malformed call) — and the answer
sent back to the agent is worded from that, never from a guess.

A decision binds the *exact* arguments through their fingerprint: approving
edited arguments approves those, and only those; the call then executes with
the edited arguments, and the approval of the original text is void.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

import orjson

from ._tools import ToolSpec

__all__ = [
    "ConsentDecision",
    "ConsentPolicy",
    "DecidedBy",
    "PolicyVerdict",
    "Principal",
    "fingerprint",
]

DecidedBy = Literal["user", "policy", "system"]


def fingerprint(arguments: Any) -> str:
    """A stable fingerprint of exact arguments: SHA-256 of canonical JSON.

    Canonical (sorted keys, compact) so the same arguments always fingerprint
    the same; a raw ``str`` (arguments that did not parse) is hashed as text.
    """
    if isinstance(arguments, str):
        data = b"text:" + arguments.encode()
    else:
        data = b"json:" + orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(data).hexdigest()


class PolicyVerdict(StrEnum):
    """What a consent policy says about one call before any user is involved."""

    APPROVE = "approve"
    """Run it without asking (decided by the policy, and recorded as such)."""
    ASK = "ask"
    """Ask the user; nothing runs until they decide."""
    DENY = "deny"
    """Do not run it; the answer says the application's policy refused."""


@dataclass(frozen=True)
class ConsentPolicy:
    """Decides per call: approve, ask the user, or deny.

    The default: read-only tools are approved, side-effectful tools ask the
    user. ``overrides`` maps a tool name to a fixed verdict; ``decide`` (if
    given) is consulted first and may return ``None`` to fall through.
    """

    read_only: PolicyVerdict = PolicyVerdict.APPROVE
    side_effects: PolicyVerdict = PolicyVerdict.ASK
    overrides: Mapping[str, PolicyVerdict] = field(default_factory=dict)
    decide: Callable[[ToolSpec, Mapping[str, Any]], PolicyVerdict | None] | None = None

    def verdict(self, tool: ToolSpec, arguments: Mapping[str, Any]) -> PolicyVerdict:
        if self.decide is not None:
            verdict = self.decide(tool, arguments)
            if verdict is not None:
                return verdict
        if tool.name in self.overrides:
            return self.overrides[tool.name]
        return self.side_effects if tool.side_effects else self.read_only

    @classmethod
    def always_ask(cls) -> ConsentPolicy:
        return cls(read_only=PolicyVerdict.ASK, side_effects=PolicyVerdict.ASK)

    @classmethod
    def auto_approve(cls) -> ConsentPolicy:
        """Approve everything without asking — for tests and trusted automation."""
        return cls(read_only=PolicyVerdict.APPROVE, side_effects=PolicyVerdict.APPROVE)


@dataclass(frozen=True)
class Principal:
    """Who decided: an identity the application vouches for, not a role word.

    ``authenticated_by`` says how the application knows it (``"oidc"``,
    ``"session"``, ``"api-key"`` …); ``None`` records the decision as made by
    an unauthenticated person, which stays possible but is never dressed up as
    more.
    """

    id: str
    display_name: str | None = None
    authenticated_by: str | None = None

    @property
    def authenticated(self) -> bool:
        return self.authenticated_by is not None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Principal:
        return cls(
            id=data["id"],
            display_name=data.get("displayName"),
            authenticated_by=data.get("authenticatedBy"),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id}
        if self.display_name is not None:
            out["displayName"] = self.display_name
        if self.authenticated_by is not None:
            out["authenticatedBy"] = self.authenticated_by
        return out


UNAUTHENTICATED_USER = Principal(id="user")
"""The principal of a decision an application made without naming anyone."""


@dataclass(frozen=True)
class ConsentDecision:
    """One recorded decision about one call."""

    thread_id: str
    call_id: str
    tool: str
    fingerprint: str
    approved: bool
    decided_by: DecidedBy
    decided_at: str
    reason: str | None = None
    edited_arguments: Mapping[str, Any] | None = None
    """Set when the user approved different arguments than the agent proposed."""
    supersedes: str | None = None
    """The fingerprint this decision voids (the original arguments, when edited)."""

    @staticmethod
    def now() -> str:
        return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConsentDecision:
        """A decision as the journal recorded it (:meth:`to_json`'s form)."""
        return cls(
            thread_id=data["threadId"],
            call_id=data["toolCallId"],
            tool=data["tool"],
            fingerprint=data["fingerprint"],
            approved=data["approved"],
            decided_by=data["decidedBy"],
            decided_at=data["decidedAt"],
            reason=data.get("reason"),
            edited_arguments=data.get("editedArguments"),
            supersedes=data.get("supersedes"),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "threadId": self.thread_id,
            "toolCallId": self.call_id,
            "tool": self.tool,
            "fingerprint": self.fingerprint,
            "approved": self.approved,
            "decidedBy": self.decided_by,
            "decidedAt": self.decided_at,
        }
        if self.reason is not None:
            out["reason"] = self.reason
        if self.edited_arguments is not None:
            out["editedArguments"] = dict(self.edited_arguments)
        if self.supersedes is not None:
            out["supersedes"] = self.supersedes
        return out
