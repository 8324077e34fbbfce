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
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Literal

import orjson

from ..wire._canonical import CanonicalError, canonical_hash, canonical_json
from ._tools import ToolSpec

__all__ = [
    "UNAUTHENTICATED_USER",
    "ConsentDecision",
    "ConsentPolicy",
    "DecidedBy",
    "PolicyVerdict",
    "Principal",
    "Quorum",
    "Tally",
    "arguments_hash",
    "fingerprint",
    "tally",
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
        try:
            data = b"json:" + orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
        except TypeError as exc:  # an integer beyond 64 bits, which arguments parse exactly
            try:
                data = b"jcs:" + canonical_json(arguments)
            except CanonicalError:
                raise exc from None
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
class Quorum:
    """How many people must approve one call of a tool, and for how long an approval holds.

    ``requires`` approvals from distinct principals, on the same arguments
    (APPROVE-3); an approval older than ``expires`` (a ``timedelta`` or
    seconds) no longer counts (APPROVE-2). The call waits, pending, until the
    quorum holds — the approvals may come from any process sharing the store.
    """

    requires: int = 1
    expires: timedelta | float | None = None

    def __post_init__(self) -> None:
        if self.requires < 1:
            raise ValueError(f"a quorum requires at least 1 approval, not {self.requires}")
        if self.lifetime is not None and self.lifetime <= timedelta(0):
            raise ValueError(f"an approval must hold for some time, not {self.expires!r}")

    @property
    def lifetime(self) -> timedelta | None:
        if self.expires is None or isinstance(self.expires, timedelta):
            return self.expires
        return timedelta(seconds=self.expires)

    @property
    def plain(self) -> bool:
        """One approval that never expires: what every tool needs unless told otherwise."""
        return self.requires == 1 and self.expires is None

    def rule(self) -> str:
        """The rule a decision under this quorum records (the ledger's ``rule``)."""
        lifetime = self.lifetime
        return f"quorum {self.requires}" + (
            f", expires {lifetime.total_seconds():g}s" if lifetime is not None else ""
        )


_ONE = Quorum()


@dataclass(frozen=True)
class ConsentPolicy:
    """Decides per call: approve, ask the user, or deny.

    The default: read-only tools are approved, side-effectful tools ask the
    user. ``overrides`` maps a tool name to a fixed verdict; ``decide`` (if
    given) is consulted first and may return ``None`` to fall through.
    ``quorums`` maps a tool name to the :class:`Quorum` a user's approval of
    its calls needs (one approval, never expiring, otherwise).
    """

    read_only: PolicyVerdict = PolicyVerdict.APPROVE
    side_effects: PolicyVerdict = PolicyVerdict.ASK
    overrides: Mapping[str, PolicyVerdict] = field(default_factory=dict)
    decide: Callable[[ToolSpec, Mapping[str, Any]], PolicyVerdict | None] | None = None
    quorums: Mapping[str, Quorum] = field(default_factory=dict)

    def quorum(self, tool: str) -> Quorum:
        return self.quorums.get(tool, _ONE)

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
    principal: Principal | None = None
    """Who decided (a person's decision always names one: :data:`UNAUTHENTICATED_USER`
    when the application named nobody); ``None`` for the policy's and the system's."""
    run_id: str | None = None
    interrupt_id: str | None = None
    arguments_shown: str | None = None
    """:func:`~agui_tools.wire._canonical.canonical_hash` of the arguments the agent proposed."""
    arguments_approved: str | None = None
    """The canonical hash of the arguments an approval lets run (edited ones, if edited)."""
    rule: str | None = None
    """The policy or rule that applied (``"consent policy"``, ``"quorum 2, expires 600s"``)."""
    expires_at: str | None = None
    """When an approval stops counting (APPROVE-2); ``None``: it does not expire."""
    receipt: Mapping[str, Any] | None = None
    """A signed receipt of the decision, when the application signs them."""

    @staticmethod
    def now() -> str:
        return stamp(datetime.now(UTC))

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and parse_stamp(self.expires_at) <= now

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
            principal=Principal.from_json(data["principal"]) if "principal" in data else None,
            run_id=data.get("runId"),
            interrupt_id=data.get("interruptId"),
            arguments_shown=data.get("argumentsShown"),
            arguments_approved=data.get("argumentsApproved"),
            rule=data.get("rule"),
            expires_at=data.get("expiresAt"),
            receipt=data.get("receipt"),
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
        if self.principal is not None:
            out["principal"] = self.principal.to_json()
        for key, value in (
            ("runId", self.run_id),
            ("interruptId", self.interrupt_id),
            ("argumentsShown", self.arguments_shown),
            ("argumentsApproved", self.arguments_approved),
            ("rule", self.rule),
            ("expiresAt", self.expires_at),
        ):
            if value is not None:
                out[key] = value
        if self.receipt is not None:
            out["receipt"] = dict(self.receipt)
        return out


def arguments_hash(arguments: Any) -> str | None:
    """The RFC 8785 hash the ledger names arguments by (``None``: JSON has no
    canonical form for them — a number beyond a double, say)."""
    try:
        return canonical_hash(arguments)
    except CanonicalError:
        return None


def stamp(moment: datetime) -> str:
    """A decision's or a receipt's time: UTC, milliseconds, ``Z`` (RFC 3339)."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_stamp(text: str) -> datetime:
    """:func:`stamp` read back; ``ValueError`` for a time that names no time zone."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} names no time zone")
    return moment


@dataclass(frozen=True)
class Tally:
    """The approvals that count for one call's arguments now (APPROVE-1/2/3)."""

    principals: tuple[str, ...]
    """The distinct principals whose unexpired approval covers the arguments."""
    expired: int
    """Approvals of these arguments that expired."""
    requires: int
    receipts: tuple[Mapping[str, Any], ...] = ()
    """The signed receipts of the counted approvals, one per principal (those that have one)."""
    unauthenticated: int = 0
    """Approvals of these arguments by principals nobody authenticated: not counted."""

    @property
    def holds(self) -> bool:
        return len(self.principals) >= self.requires


def tally(
    decisions: Sequence[Mapping[str, Any]], fingerprint: str, quorum: Quorum, now: datetime
) -> Tally:
    """Count the approvals among ``decisions`` (the store's, oldest first) that let
    the arguments fingerprinted ``fingerprint`` run now.

    An approval counts when it binds these exact arguments (APPROVE-1), has not
    expired (APPROVE-2), and its principal has not been counted yet (APPROVE-3:
    one person approving twice is one approval; a principal the application did
    not authenticate is nobody it can count). A decline voids what came before.
    """
    counted: dict[str, tuple[str, Mapping[str, Any] | None]] = {}
    expired = unauthenticated = 0
    for raw in decisions:
        if not raw.get("approved"):
            counted.clear()
            expired = unauthenticated = 0
            continue
        if raw.get("fingerprint") != fingerprint:
            continue
        decision = ConsentDecision.from_json(raw)
        if decision.expired(now):
            expired += 1
            continue
        principal = decision.principal
        key = counted_approver(principal, decision.decided_by)
        if key is None:
            unauthenticated += 1
            continue
        who = principal.id if principal is not None else decision.decided_by
        counted.setdefault(key, (who, decision.receipt))  # named as first seen
    return Tally(
        principals=tuple(name for name, _ in counted.values()),
        expired=expired,
        requires=quorum.requires,
        receipts=tuple(r for _, r in counted.values() if r is not None),
        unauthenticated=unauthenticated,
    )


def counted_approver(principal: Principal | None, decided_by: str = "") -> str | None:
    """Who an approval counts as toward a quorum (APPROVE-3), on the application's
    side and the agent's alike: the :func:`same_person` key of its principal (of
    ``decided_by`` when it names none), or ``None`` — not counted — for a principal
    nobody authenticated (nobody can tell two such people apart, or from one)."""
    if principal is None:
        return same_person(decided_by)
    if not principal.authenticated:
        return None
    return same_person(principal.id)


def same_person(principal_id: str) -> str:
    """The key principals are told apart by in a quorum (APPROVE-3): ids that differ
    only in case, Unicode compatibility form, invisible format characters or spacing
    name one person. Erring this way only merges approvers — a quorum gets harder,
    never easier — where telling ``Alice`` from ``alice`` would let one person
    approve twice."""
    text = unicodedata.normalize("NFKC", principal_id)
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return " ".join(text.casefold().split())
