"""Receipts: a signed statement of one decision, which the agent can check itself.

The agent executes its own interrupt-gated tools on the strength of a resume
entry, and reads a frontend call's result from a tool message; neither says who
decided, nor proves it. A receipt does: a statement — who decided what, about
which call or interrupt of which thread, over which exact arguments (their RFC
8785 canonical hash), until when — signed with Ed25519 over the statement's
canonical bytes. It rides under :data:`RECEIPT_KEY` in the resume entry's or the
tool message's ``metadata`` (META-3: an application key, namespaced), so a peer
that knows nothing of receipts passes it along untouched (META-2).

The format, the verification steps and their rule IDs (RCPT-1 … RCPT-8) are
docs/receipts.md; the verifier is :func:`agui_tools.agent.verify_receipt`.
``cryptography`` (the ``receipts`` extra) is imported on the first key made,
so the package imports without it.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._errors import ReceiptRejected, UsageError
from ..wire._canonical import CanonicalError, canonical_hash, canonical_json
from ._arguments import ParsedArguments, parse_arguments
from ._consent import UNAUTHENTICATED_USER, Principal, arguments_hash, parse_stamp, stamp

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

    from ._calls import PendingCall
    from ._consent import ConsentDecision
    from ._reducer import ThreadState

__all__ = [
    "QUORUM_KEY",
    "RECEIPT_KEY",
    "Keyring",
    "ReceiptDecision",
    "Signer",
    "Statement",
    "decision_receipt",
    "sign_resume",
]

RECEIPT_KEY = "agui-tools/receipt"
"""The metadata key a receipt travels under (a resume entry's, a tool message's)."""

QUORUM_KEY = "agui-tools/receipts"
"""The tool message's metadata key for a quorum's receipts: one per approver counted."""

VERSION = 1
ALGORITHM = "Ed25519"

ReceiptDecision = Literal["approved", "declined", "resolved"]
_DECISIONS: tuple[str, ...] = ("approved", "declined", "resolved")


def _ed25519() -> Any:
    """The Ed25519 module of ``cryptography``, or a usage error naming the extra."""
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise UsageError(
            "signing or verifying receipts needs the 'cryptography' package: "
            "pip install 'agui-tools[receipts]'"
        ) from None
    return ed25519


def b64url(data: bytes) -> str:
    """Base64url without padding (RFC 4648 §5), as JOSE spells keys and signatures."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    """:func:`b64url` read back; ``ValueError`` when it is not base64url."""
    if not isinstance(text, str) or not text.isascii() or "=" in text:
        raise ValueError("not unpadded base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def key_id_of(public_key: bytes) -> str:
    """A key's default id: ``ed25519:`` and the first 16 hex digits of its SHA-256."""
    return "ed25519:" + hashlib.sha256(public_key).hexdigest()[:16]


# -- the statement ------------------------------------------------------------------

_REQUIRED = ("decision", "threadId", "issuedAt", "expiresAt", "keyId")
_OPTIONAL = (
    "runId",
    "toolCallId",
    "interruptId",
    "tool",
    "argumentsHash",
    "argumentsShown",
    "payloadHash",
)


@dataclass(frozen=True)
class Statement:
    """What a receipt states (docs/receipts.md, "Fields"); its JSON is what is signed."""

    decision: ReceiptDecision
    principal: Principal
    thread_id: str
    issued_at: str
    expires_at: str
    key_id: str
    run_id: str | None = None
    tool_call_id: str | None = None
    interrupt_id: str | None = None
    tool: str | None = None
    arguments_hash: str | None = None
    """:func:`~agui_tools.wire._canonical.canonical_hash` of the arguments decided on."""
    arguments_shown: str | None = None
    """The hash of the arguments the agent proposed, when the approver edited them
    (``arguments_hash`` is then the edited ones')."""
    payload_hash: str | None = None
    """The canonical hash of a resume entry's payload (``null`` when it has none)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": VERSION,
            "alg": ALGORITHM,
            "decision": self.decision,
            "principal": self.principal.to_json(),
            "threadId": self.thread_id,
            "issuedAt": self.issued_at,
            "expiresAt": self.expires_at,
            "keyId": self.key_id,
        }
        for key, value in (
            ("runId", self.run_id),
            ("toolCallId", self.tool_call_id),
            ("interruptId", self.interrupt_id),
            ("tool", self.tool),
            ("argumentsHash", self.arguments_hash),
            ("argumentsShown", self.arguments_shown),
            ("payloadHash", self.payload_hash),
        ):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_json(cls, data: Any) -> Statement:
        """A statement as received, or :class:`ReceiptRejected` (RCPT-1) saying what is wrong."""
        if not isinstance(data, Mapping):
            raise ReceiptRejected("RCPT-1", "the receipt's statement is not an object")
        if data.get("version") != VERSION or data.get("alg") != ALGORITHM:
            raise ReceiptRejected(
                "RCPT-1",
                f"the statement is version {data.get('version')!r} with algorithm "
                f"{data.get('alg')!r}; this verifier reads version {VERSION}, {ALGORITHM}",
            )
        for key in _REQUIRED:
            if not isinstance(data.get(key), str):
                raise ReceiptRejected("RCPT-1", f"the statement's {key!r} is missing or not text")
        for key in _OPTIONAL:
            if key in data and not isinstance(data[key], str):
                raise ReceiptRejected("RCPT-1", f"the statement's {key!r} is not text")
        if data["decision"] not in _DECISIONS:
            raise ReceiptRejected(
                "RCPT-1", f"the statement's decision {data['decision']!r} is none of {_DECISIONS}"
            )
        principal = data.get("principal")
        if not isinstance(principal, Mapping) or not isinstance(principal.get("id"), str):
            raise ReceiptRejected("RCPT-1", "the statement names no principal with an 'id'")
        for key in ("issuedAt", "expiresAt"):
            try:
                parse_stamp(data[key])
            except ValueError:
                raise ReceiptRejected(
                    "RCPT-1", f"the statement's {key} {data[key]!r} is not an RFC 3339 time"
                ) from None
        return cls(
            decision=data["decision"],
            principal=Principal.from_json(principal),
            thread_id=data["threadId"],
            issued_at=data["issuedAt"],
            expires_at=data["expiresAt"],
            key_id=data["keyId"],
            run_id=data.get("runId"),
            tool_call_id=data.get("toolCallId"),
            interrupt_id=data.get("interruptId"),
            tool=data.get("tool"),
            arguments_hash=data.get("argumentsHash"),
            arguments_shown=data.get("argumentsShown"),
            payload_hash=data.get("payloadHash"),
        )


# -- signing --------------------------------------------------------------------------


class Signer:
    """The application's signing key: it turns a decision into a receipt.

    ``lifetime`` (a ``timedelta`` or seconds) is how long a receipt it issues
    holds — an agent refuses one expiring past its key's ``notAfter``, so retire
    a key at least ``lifetime`` after it stops signing. A receipt names the
    decision's own principal, never one the key stands for: the key vouches for
    the application. ``key_id`` defaults to one derived from the public key
    (:func:`key_id_of`); rotate keys by giving the new one a new id
    (docs/receipts.md, "Keys and rotation").
    """

    def __init__(
        self,
        private_key: Ed25519PrivateKey,
        *,
        key_id: str | None = None,
        lifetime: timedelta | float = timedelta(hours=1),
    ) -> None:
        self._key = private_key
        self.public_key: bytes = private_key.public_key().public_bytes_raw()
        self.key_id = key_id or key_id_of(self.public_key)
        self.lifetime = lifetime if isinstance(lifetime, timedelta) else timedelta(seconds=lifetime)
        if self.lifetime <= timedelta(0):
            raise UsageError(f"a receipt must hold for some time, not {lifetime!r}")

    @classmethod
    def from_bytes(cls, seed: bytes, **options: Any) -> Signer:
        """A signer from the 32 raw bytes of an Ed25519 private key (RFC 8032's seed)."""
        if len(seed) != 32:
            raise UsageError(f"an Ed25519 private key is 32 bytes, not {len(seed)}")
        return cls(_ed25519().Ed25519PrivateKey.from_private_bytes(seed), **options)

    @classmethod
    def from_pem(cls, data: bytes, *, password: bytes | None = None, **options: Any) -> Signer:
        """A signer from a PKCS 8 PEM private key (``openssl genpkey -algorithm ed25519``)."""
        ed25519 = _ed25519()
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        try:
            key = load_pem_private_key(data, password=password)
        except (ValueError, TypeError) as exc:
            raise UsageError(f"the PEM data is not a usable private key: {exc}") from None
        if not isinstance(key, ed25519.Ed25519PrivateKey):
            raise UsageError(f"receipts are signed with Ed25519 keys, not {type(key).__name__}")
        return cls(key, **options)

    @classmethod
    def from_pem_file(cls, path: str | Path, **options: Any) -> Signer:
        return cls.from_pem(Path(path).read_bytes(), **options)

    @classmethod
    def generate(cls, **options: Any) -> Signer:
        """A signer with a fresh random key (tests, demos; keep a real key in a file)."""
        return cls(_ed25519().Ed25519PrivateKey.generate(), **options)

    def keyring_entry(self) -> dict[str, Any]:
        """This key as an agent's keys file lists it (:class:`Keyring`)."""
        return {"kid": self.key_id, "alg": ALGORITHM, "publicKey": b64url(self.public_key)}

    def statement(
        self,
        decision: ReceiptDecision,
        *,
        thread_id: str,
        principal: Principal,
        now: datetime | None = None,
        **subject: str | None,
    ) -> Statement:
        """A statement issued now, expiring after :attr:`lifetime`; ``subject`` is the
        rest of :class:`Statement`'s fields (``tool_call_id=``, ``arguments_hash=`` …)."""
        issued = now or datetime.now(UTC)
        return Statement(
            decision=decision,
            principal=principal,
            thread_id=thread_id,
            issued_at=stamp(issued),
            expires_at=stamp(issued + self.lifetime),
            key_id=self.key_id,
            **subject,
        )

    def sign(self, statement: Statement) -> dict[str, Any]:
        """The receipt: the statement and the Ed25519 signature of its canonical bytes."""
        body = statement.to_json()
        return {"statement": body, "signature": b64url(self._key.sign(canonical_json(body)))}


# -- keys an agent trusts ---------------------------------------------------------------


@dataclass(frozen=True)
class _TrustedKey:
    key: Ed25519PublicKey
    not_before: datetime | None
    not_after: datetime | None


class Keyring:
    """The public keys an agent accepts receipts from, by key id.

    Read from a keys document (:meth:`from_json`, :meth:`load`)::

        {"keys": [{"kid": "…", "alg": "Ed25519", "publicKey": "<base64url, 32 bytes>",
                   "notBefore": "…", "notAfter": "…"}]}

    ``notBefore`` / ``notAfter`` (optional) bound a key's life: it vouches for
    receipts issued inside it, expiring by ``notAfter``, and for nothing once
    ``notAfter`` has passed.
    """

    def __init__(self, keys: Mapping[str, _TrustedKey]) -> None:
        self._keys = dict(keys)

    @classmethod
    def of(cls, *signers: Signer) -> Keyring:
        """The keyring trusting these signers' public keys (tests, one process)."""
        return cls.from_json({"keys": [s.keyring_entry() for s in signers]})

    @classmethod
    def from_json(cls, document: Any) -> Keyring:
        """A keyring from its JSON document; :class:`UsageError` naming the bad entry."""
        ed25519 = _ed25519()
        entries = document.get("keys") if isinstance(document, Mapping) else None
        if not isinstance(entries, list):
            raise UsageError('a keys document is an object with a "keys" list')
        keys: dict[str, _TrustedKey] = {}
        for index, entry in enumerate(entries):
            where = f"keys[{index}]"
            if not isinstance(entry, Mapping) or not isinstance(entry.get("kid"), str):
                raise UsageError(f'{where} is not an object with a "kid"')
            if entry.get("alg", ALGORITHM) != ALGORITHM:
                raise UsageError(f"{where}: alg {entry.get('alg')!r} is not {ALGORITHM}")
            try:
                raw = unb64url(entry["publicKey"])
                if len(raw) != 32:
                    raise ValueError(f"{len(raw)} bytes, not 32")
                bounds = [
                    parse_stamp(entry[k]) if entry.get(k) is not None else None
                    for k in ("notBefore", "notAfter")
                ]
            except (ValueError, TypeError, KeyError) as exc:
                raise UsageError(f"{where} ({entry['kid']!r}): {exc}") from None
            if entry["kid"] in keys:
                raise UsageError(f"{where}: key id {entry['kid']!r} is listed twice")
            keys[entry["kid"]] = _TrustedKey(
                ed25519.Ed25519PublicKey.from_public_bytes(raw), bounds[0], bounds[1]
            )
        return cls(keys)

    @classmethod
    def load(cls, path: str | Path) -> Keyring:
        try:
            document = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read the keys file {str(path)!r}: {exc}") from None
        return cls.from_json(document)

    def __contains__(self, key_id: object) -> bool:
        return key_id in self._keys

    def key_for(self, statement: Statement, now: datetime) -> Ed25519PublicKey:
        """The key that may have signed ``statement``, judged at ``now``, or RCPT-2.

        ``issuedAt`` and ``expiresAt`` are signed by the key's own holder, so they
        alone cannot bound a key: a retired key is refused at ``now`` too, and a
        receipt may not claim to live past its key's ``notAfter``.
        """
        trusted = self._keys.get(statement.key_id)
        if trusted is None:
            raise ReceiptRejected(
                "RCPT-2",
                f"key {statement.key_id!r} is not one this agent trusts "
                f"(trusted: {', '.join(map(repr, sorted(self._keys))) or 'none'})",
                statement=statement,
            )
        window = f"it signs from {_or_open(trusted.not_before)} to {_or_open(trusted.not_after)}"
        issued = parse_stamp(statement.issued_at)
        if (trusted.not_before is not None and issued < trusted.not_before) or (
            trusted.not_after is not None and issued > trusted.not_after
        ):
            raise ReceiptRejected(
                "RCPT-2",
                f"key {statement.key_id!r} was not current at the receipt's issuedAt "
                f"{statement.issued_at} ({window})",
                statement=statement,
            )
        if trusted.not_after is not None and now > trusted.not_after:
            raise ReceiptRejected(
                "RCPT-2",
                f"key {statement.key_id!r} is retired: now ({stamp(now)}) is past its "
                f"notAfter ({window})",
                statement=statement,
            )
        if trusted.not_after is not None and parse_stamp(statement.expires_at) > trusted.not_after:
            raise ReceiptRejected(
                "RCPT-2",
                f"the receipt's expiresAt {statement.expires_at} is past key "
                f"{statement.key_id!r}'s notAfter ({window}): a receipt cannot outlive its key",
                statement=statement,
            )
        return trusted.key


def _or_open(moment: datetime | None) -> str:
    return stamp(moment) if moment is not None else "—"


# -- the hooks: where decisions become receipts ------------------------------------------


def decision_receipt(
    signer: Signer, call: PendingCall, decision: ConsentDecision, *, now: datetime | None = None
) -> dict[str, Any]:
    """The receipt of ``decision`` about ``call``, signed as it is recorded (it lands in
    the decision's ledger entry and, later, on the call's tool message).

    It names the decision's principal (the policy and the system as themselves)
    and binds the arguments decided on; an edit also names the proposal's hash
    (``argumentsShown``), so the agent can tie the receipt to the call it made.
    """
    principal = decision.principal or Principal(id=decision.decided_by)
    decided = arguments_hash(call.executable)
    shown = decision.arguments_shown
    return signer.sign(
        signer.statement(
            "approved" if decision.approved else "declined",
            thread_id=call.thread_id,
            principal=principal,
            now=now,
            run_id=call.run_id,
            tool_call_id=call.call_id,
            tool=call.name,
            arguments_hash=decided,
            arguments_shown=shown if shown != decided else None,
        )
    )


def sign_resume(
    signer: Signer,
    entries: Sequence[MutableMapping[str, Any]],
    interrupts: Sequence[Mapping[str, Any]],
    thread: ThreadState,
    *,
    thread_id: str,
    run_id: str | None,
    now: datetime | None = None,
) -> None:
    """Put a receipt into each resolved entry's ``metadata``, in place.

    ``interrupts`` are the interrupted run's (``run_id``'s) wire interrupts: an
    interrupt that names a call the thread holds binds the call's tool and
    arguments too. The receipt names who resolved it (the ``principal`` a
    :class:`~agui_tools.app._interrupts.Resolution` put in the entry's ``metadata``; the
    unauthenticated ``user`` when none). A cancelled entry decides nothing to
    execute: it gets none.
    """
    by_id = {str(i.get("id")): i for i in interrupts}
    for entry in entries:
        if entry.get("status") != "resolved":
            continue
        interrupt = by_id.get(str(entry.get("interruptId")), {})
        call_id = interrupt.get("toolCallId")
        tool: str | None = None
        arguments_hash: str | None = None
        if isinstance(call_id, str) and (wire := thread.tool_call(call_id)) is not None:
            function = wire.get("function") or {}
            tool = str(function.get("name", ""))
            text = str(function.get("arguments", ""))
            arguments_hash = canonical_hash(arguments_value(text))
        try:
            payload_hash = canonical_hash(entry.get("payload"))
        except CanonicalError as exc:
            raise UsageError(f"interrupt {entry.get('interruptId')!r}: {exc}") from None
        metadata = dict(entry.get("metadata") or {})
        named = metadata.get("principal")
        try:
            principal = (
                Principal.from_json(named) if isinstance(named, Mapping) else UNAUTHENTICATED_USER
            )
        except (KeyError, TypeError):
            raise UsageError(
                f"interrupt {entry.get('interruptId')!r}: metadata.principal {named!r} names no id"
            ) from None
        receipt = signer.sign(
            signer.statement(
                "resolved",
                thread_id=thread_id,
                principal=principal,
                now=now,
                run_id=run_id,
                interrupt_id=str(entry.get("interruptId")),
                tool_call_id=call_id if isinstance(call_id, str) else None,
                tool=tool,
                arguments_hash=arguments_hash,
                payload_hash=payload_hash,
            )
        )
        metadata[RECEIPT_KEY] = receipt
        entry["metadata"] = metadata


def arguments_value(text: str) -> Any:
    """A call's argument text as the value a receipt hashes: parsed as the application
    parses it (``{}`` when blank); the text itself when it does not parse — such a
    call is never approved, but a receipt of its decline still binds it."""
    parsed = parse_arguments(text)
    return parsed.value if isinstance(parsed, ParsedArguments) else text
