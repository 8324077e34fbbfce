"""``agui-tools ledger verify|export STORE`` — audit the approval ledger of a thread store."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from .._text import one_line
from ._common import describe_exception, is_postgres

HELP = """\
Audit the approval ledger a thread store keeps: one entry per consent decision
(who decided, when, on which call, the RFC 8785 hashes of the arguments shown
and approved, the rule that applied, the expiry), each naming the previous
entry's hash (docs/approvals.md).

STORE is a SQLite store (or --journal) file, or a PostgreSQL connection string
(postgresql://… or "host=… dbname=…"). Nothing is written to it.

  verify   recompute the chain; print how many entries hold and the head hash,
           or the first broken link — its entry number, its ids, the rule
           (LEDGER-n), expected vs found. A chain has no secret: whoever can
           write the store can rewrite it consistently or cut its newest
           entries. Keep N and the head where they cannot write, and pass
           them next time as --anchor N:HASH: the chain must pass through it.
           With --receipt-keys FILE (an agent's keys document), each signed
           receipt an entry holds is checked too: signed by a trusted key, about
           that entry's call or interrupt, naming its principal and decision
           (RCPT-n, docs/receipts.md); expiry is not judged.
  export   write every entry as JSON Lines to standard output, byte for byte
           as stored (each line the entry's canonical JSON, its hash included),
           so an auditor can recompute the chain without agui-tools. To a
           terminal, control and format characters (bidi, C1) are shown
           escaped, for reading only: redirect to a file to audit.

Exit codes: 0 the chain holds (export: written), 1 a link or a receipt is
broken, 2 bad usage or a store that cannot be read.
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "ledger",
        help="verify or export the approval ledger of a thread store",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", choices=("verify", "export"), help="what to do with the ledger")
    p.add_argument("store", metavar="STORE", help="a SQLite store file or a PostgreSQL DSN")
    p.add_argument(
        "--receipt-keys",
        metavar="FILE",
        help="verify: check every signed receipt against this keys document too",
    )
    p.add_argument(
        "--anchor",
        metavar="N:HASH",
        type=_anchor,
        help="verify: the entry number and head hash an earlier verify printed, kept where "
        "the store's writers cannot write; the chain must pass through it (LEDGER-5)",
    )
    p.set_defaults(func=run)


def _anchor(text: str) -> tuple[int, str]:
    number, _, digest = text.partition(":")
    if not (number.isdigit() and int(number) > 0 and re.fullmatch(r"sha256:[0-9a-f]{64}", digest)):
        raise argparse.ArgumentTypeError(
            f"{one_line(text)} is not N:sha256:<64 hex digits> (the entry count and head "
            "an earlier verify printed)"
        )
    return int(number), digest


def _entries(store: str) -> list[tuple[int, bytes]]:
    """The ledger's entries, read without creating or migrating anything."""
    if is_postgres(store):
        from ..app._store_postgres import PostgresStore

        pg = PostgresStore(store, min_size=1, max_size=1, migrate=False)
        try:
            return pg.ledger()
        finally:
            pg.close()
    from ..app._ledger import sqlite_audit

    return sqlite_audit(store)  # a store's file, or a bare journal's: read-only


def _export(entries: list[tuple[int, bytes]]) -> int:
    """Each entry as stored, one a line, to a file or a pipe: the chain's hashes are
    over these bytes, which JSON leaves unescaped beyond ASCII. To a terminal, bidi
    and C1 controls would be obeyed, so an entry holding a control or format
    character is shown with it escaped, and a note says that view is not the export."""
    to_terminal = sys.stdout.isatty()
    shown_escaped = 0
    for _, entry in entries:
        line = entry.decode("utf-8", "surrogateescape")
        if to_terminal:
            safe = one_line(line)
            shown_escaped += safe != line
            line = safe
        print(line)
    if shown_escaped:
        print(
            f"agui-tools ledger: {shown_escaped} entr{'y' if shown_escaped == 1 else 'ies'} "
            "shown with control characters escaped, for reading on a terminal — not for "
            "audit; redirect to a file (> ledger.jsonl) for the entries byte for byte",
            file=sys.stderr,
        )
    return 0


def run(args: argparse.Namespace) -> int:
    from .._errors import AguiError, UsageError

    keys = None
    if args.receipt_keys is not None:
        from ..app._receipts import Keyring

        try:
            keys = Keyring.load(args.receipt_keys)
        except UsageError as exc:
            print(f"agui-tools ledger: --receipt-keys: {one_line(str(exc))}", file=sys.stderr)
            return 2
    try:
        entries = _entries(args.store)
    except (AguiError, OSError) as exc:
        print(
            f"agui-tools ledger: cannot read the ledger of {one_line(args.store)}: "
            f"{describe_exception(exc)}",
            file=sys.stderr,
        )
        return 2
    if args.action == "export":
        return _export(entries)
    from ..app._ledger import verify_ledger

    report = verify_ledger(entries, anchor=args.anchor)
    if report.broken is not None:
        print(f"ledger: {one_line(report.broken.describe())}")
        print(
            f"ledger: broken — {report.entries} of {len(entries)} entries hold before it "
            f"(their head {report.head})"
        )
        return 1
    through = f"; it passes through entry {args.anchor[0]}" if args.anchor else ""
    counted = f"{report.entries} entr{'y' if report.entries == 1 else 'ies'}"
    print(f"ledger: {counted}, every link holds; head {report.head}{through}")
    if keys is None:
        return 0
    from ..agent._receipts import audit_receipts

    held, broken = audit_receipts(entries, keys)
    if broken is not None:
        print(f"ledger: {one_line(broken.describe())}")
        print(f"ledger: a receipt is refused — {held} receipt(s) verified before it")
        return 1
    print(f"ledger: {held} receipt(s), each signed by a trusted key and about its entry")
    return 0
