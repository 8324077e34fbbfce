"""The approval ledger: every consent decision, append-only and hash-chained.

Each decision a store records (``record_decision``, ``settle`` with a decision)
also appends one ledger entry, in the same transaction (LEDGER-1): who
decided, when, about which thread, run, call and interrupt, the canonical
hashes of the arguments shown and approved, the rule that applied, the
expiry — ids and hashes, never argument values. An entry is numbered
(``seq``, 1, 2, … without a gap: LEDGER-4), names the previous entry's
``hash`` in ``prev`` (the first names :data:`GENESIS`: LEDGER-2), and is
stored as the RFC 8785 canonical JSON of its body plus its own ``hash``, the
canonical hash of that body (LEDGER-3). So a rewritten entry, a removed one
or a reordering shows in :func:`verify_ledger` at the first link it breaks — and,
the canonical form being unique, so does any changed byte.

What the chain cannot show is a cut of its newest entries: an auditor keeps
the head hash :func:`verify_ledger` reports somewhere the store's writers cannot
write, and compares it next time (docs/approvals.md).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .._errors import StoreError
from ..wire._canonical import CanonicalError, canonical_hash, canonical_json
from ._receipts import RECEIPT_KEY

__all__ = [
    "GENESIS",
    "LEDGER_SQLITE",
    "Broken",
    "LedgerReport",
    "chained",
    "entry_body",
    "head_of",
    "sqlite_append",
    "sqlite_audit",
    "sqlite_entries",
    "verify_ledger",
]

GENESIS = "sha256:" + "0" * 64
"""What the first entry names as its previous entry's hash."""

LEDGER_SQLITE = """
CREATE TABLE IF NOT EXISTS ledger (
    seq   INTEGER PRIMARY KEY,
    entry BLOB NOT NULL
);
"""

_VALUES = frozenset({"editedArguments"})
"""Decision fields that hold argument values: the ledger keeps their hash instead."""


def _resumed(entry: Any) -> dict[str, Any]:
    """One interrupt's answer as the ledger keeps it: ids, status, who, the payload's
    hash, and its signed receipt when the application signs (docs/receipts.md)."""
    if not isinstance(entry, Mapping):
        return {}
    out = {k: entry[k] for k in ("interruptId", "status") if k in entry}
    if "payload" in entry:
        try:
            out["payload"] = canonical_hash(entry["payload"])
        except CanonicalError:
            out["payload"] = None
    metadata = entry.get("metadata")
    if isinstance(metadata, Mapping):
        for key, kept in (("principal", "principal"), (RECEIPT_KEY, "receipt")):
            if key in metadata:
                out[kept] = metadata[key]
    return out


def entry_body(decision: Mapping[str, Any], seq: int, prev: str) -> dict[str, Any]:
    """The entry a decision becomes: its ids, hashes and words, numbered and linked.
    A resume's record (the interrupts' answers) keeps each answer's ids, status and
    principal, and its payload's canonical hash."""
    body = {k: v for k, v in decision.items() if k not in _VALUES}
    if decision.get("kind") == "resume" and isinstance(decision.get("resume"), list):
        body["resume"] = [_resumed(e) for e in decision["resume"]]
    body["seq"] = seq
    body["prev"] = prev
    return body


def chained(decision: Mapping[str, Any], seq: int, prev: str) -> tuple[bytes, str]:
    """The stored bytes of the entry recording ``decision`` after ``prev``, and its hash."""
    body = entry_body(decision, seq, prev)
    digest = canonical_hash(body)
    body["hash"] = digest
    return canonical_json(body), digest


def head_of(last: tuple[int, bytes] | None) -> tuple[int, str]:
    """The next entry's number and ``prev``, from the last stored entry (or none)."""
    if last is None:
        return 1, GENESIS
    seq, raw = last
    try:
        found = orjson.loads(raw).get("hash")
    except (orjson.JSONDecodeError, AttributeError):
        found = None
    # a damaged head is chained to as it stands: verify reports the damage, and the
    # decision being recorded is not lost to it
    return seq + 1, found if isinstance(found, str) else canonical_hash(raw.hex())


# -- SQLite (the journal's file): in the caller's transaction --------------------------


def sqlite_append(db: sqlite3.Connection, decision: Mapping[str, Any]) -> None:
    """Append the entry of ``decision`` inside the open write transaction (``BEGIN
    IMMEDIATE`` holds the file's write lock: no other writer reads the same head)."""
    last = db.execute(
        "SELECT seq, CAST(entry AS BLOB) FROM ledger ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    seq, prev = head_of(last)
    entry, _ = chained(decision, seq, prev)
    db.execute("INSERT INTO ledger (seq, entry) VALUES (?, ?)", (seq, entry))


def sqlite_audit(path: str | Path, *, timeout: float = 10.0) -> list[tuple[int, bytes]]:
    """The ledger of the SQLite store at ``path``, read as an auditor reads it: the file
    opened read-only (no WAL switch, no write lock, no table created — a copy on
    read-only media reads too), and a file without a ledger refused, never read as an
    empty chain that holds."""
    if not Path(path).is_file():
        raise StoreError(f"there is no SQLite store at {path}", written="no")
    try:
        db = sqlite3.connect(f"{Path(path).absolute().as_uri()}?mode=ro", uri=True, timeout=timeout)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path}: {exc}", written="no") from exc
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "ledger" not in tables:
            if "journal_identity" in tables or "calls" in tables:
                raise StoreError(
                    f"{path} is an agui-tools store from before the approval ledger: it has "
                    "no ledger to verify (opening it with this version adds one)",
                    written="no",
                )
            held = f"it holds {', '.join(sorted(tables))}" if tables else "it holds no table"
            raise StoreError(f"{path} is not an agui-tools store ({held})", written="no")
        return list(sqlite_entries(db))
    except sqlite3.Error as exc:
        raise StoreError(
            f"{path} is not a readable SQLite store ({type(exc).__name__}: {exc})", written="no"
        ) from exc
    finally:
        db.close()


def sqlite_entries(db: sqlite3.Connection) -> Iterator[tuple[int, bytes]]:
    # SQLite keeps whatever type a hand edit stored: TEXT is judged by its UTF-8 bytes,
    # an INTEGER, REAL or NULL by its SQL text — never handed on as a non-bytes value
    for seq, entry in db.execute("SELECT seq, CAST(entry AS BLOB) FROM ledger ORDER BY seq"):
        yield seq, entry if entry is not None else b"NULL"


# -- verifying ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Broken:
    """The first link of the chain that does not hold."""

    index: int
    """The entry's position, from 1 (its stored ``seq``)."""
    rule: str
    problem: str
    expected: str | None = None
    found: str | None = None
    ids: Mapping[str, str] | None = None

    def describe(self) -> str:
        names = ", ".join(f"{k} {v!r}" for k, v in (self.ids or {}).items())
        text = f"[{self.rule}] entry {self.index}" + (f" ({names})" if names else "")
        text += f": {self.problem}"
        if self.expected is not None or self.found is not None:
            text += f"; expected {self.expected}, found {self.found}"
        return text


@dataclass(frozen=True)
class LedgerReport:
    """What :func:`verify_ledger` found: how many entries held, the head hash, the first break."""

    entries: int
    head: str
    broken: Broken | None


def _ids(body: Mapping[str, Any]) -> dict[str, str]:
    keys = ("threadId", "runId", "toolCallId", "interruptId")
    return {k: v for k in keys if isinstance(v := body.get(k), str)}


def _judged(number: int, seq: int, raw: bytes, prev: str) -> Broken | str:
    """Entry ``number`` (stored as ``seq``) after ``prev``: its hash, or how it breaks."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return Broken(seq, "LEDGER-3", f"the stored entry is not JSON ({exc})")
    if not isinstance(body, dict):
        return Broken(seq, "LEDGER-3", "the stored entry is not a JSON object")
    ids = _ids(body)
    if seq != number or body.get("seq") != number:
        stored = f"{seq} (stored), {body.get('seq')!r} (in the entry)"
        return Broken(seq, "LEDGER-4", "entries are not numbered 1, 2, … without a gap",
                      str(number), stored, ids)  # fmt: skip
    if body.get("prev") != prev:
        problem = "it does not name the previous entry's hash"
        return Broken(seq, "LEDGER-2", problem, prev, str(body.get("prev")), ids)
    stated = body.pop("hash", None)
    try:
        digest = canonical_hash(body)
        body["hash"] = stated
        canonical = canonical_json(body)
    except CanonicalError as exc:
        return Broken(seq, "LEDGER-3", f"not canonical JSON: {exc}", ids=ids)
    if stated != digest:
        problem = "its hash is not the hash of its contents"
        return Broken(seq, "LEDGER-3", problem, digest, str(stated), ids)
    if canonical != bytes(raw):
        problem = "the stored bytes are not the entry's canonical JSON (RFC 8785)"
        return Broken(seq, "LEDGER-3", problem, ids=ids)
    return digest


def verify_ledger(
    rows: Iterable[tuple[int, bytes]], *, anchor: tuple[int, str] | None = None
) -> LedgerReport:
    """Recompute the chain over ``rows`` (``seq``, stored bytes), oldest first, and
    report the first entry that breaks it — or that every link holds.

    ``anchor``: an entry number and the hash an earlier verify reported as its head,
    kept where the store's writers cannot write. A chain has no secret: a writer can
    rewrite an entry and recompute every hash after it, or cut the newest ones, and
    it holds again — but it no longer passes through the anchor (LEDGER-5)."""
    prev = GENESIS
    held = 0
    for number, (seq, raw) in enumerate(rows, 1):
        judged = _judged(number, seq, raw, prev)
        if isinstance(judged, Broken):
            return LedgerReport(held, prev, judged)
        if anchor is not None and number == anchor[0] and judged != anchor[1]:
            problem = "it is not the entry the kept head names: the chain up to it was rewritten"
            ids = _ids(orjson.loads(raw))
            broken = Broken(seq, "LEDGER-5", problem, anchor[1], judged, ids)
            return LedgerReport(held, prev, broken)
        prev, held = judged, number
    if anchor is not None and held < anchor[0]:
        problem = f"the ledger ends at entry {held}: the entries up to the kept head were cut"
        return LedgerReport(held, prev, Broken(anchor[0], "LEDGER-5", problem, anchor[1], None))
    return LedgerReport(held, prev, None)
