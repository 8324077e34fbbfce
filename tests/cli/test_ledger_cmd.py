"""``agui-tools ledger verify|export STORE``: the audit of the approval ledger.

verify exits 0 with the head hash when every link holds, 1 naming the first broken
link (entry, ids, rule, expected vs found), 2 when the store cannot be read — and
writes nothing; export prints each entry byte for byte as stored.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from agui_tools.app import Driver, Signer
from agui_tools.app._consent import Principal
from agui_tools.app._conversation import Conversation
from agui_tools.app._ledger import GENESIS, chained, verify_ledger
from agui_tools.app._store_sqlite import SQLiteStore
from agui_tools.cli import main
from tests.helpers.conversation import CONFIRM, call, run

from ..helpers.ledger import fill


def _store(tmp_path: Path, count: int = 3) -> Path:
    path = tmp_path / "app.sqlite"
    store = SQLiteStore(path)
    fill(store, count)
    store.close()
    return path


def test_verify_says_every_link_holds_and_the_head(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _store(tmp_path)
    store = SQLiteStore(path)
    head = verify_ledger(store.ledger()).head
    store.close()
    assert main(["ledger", "verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert out == f"ledger: 3 entries, every link holds; head {head}\n"


def test_a_changed_byte_is_the_first_broken_link_with_its_ids_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _store(tmp_path)
    db = sqlite3.connect(path)
    (entry,) = db.execute("SELECT entry FROM ledger WHERE seq = 2").fetchone()
    db.execute("UPDATE ledger SET entry = ? WHERE seq = 2", (entry.replace(b"alice@", b"alicf@"),))
    db.commit()
    db.close()
    assert main(["ledger", "verify", str(path)]) == 1
    first, second = capsys.readouterr().out.splitlines()
    assert first.startswith("ledger: [LEDGER-3] entry 2 (threadId 't1', runId 'run-t1', ")
    assert "its hash is not the hash of its contents; expected sha256:" in first
    assert second.startswith("ledger: broken — 1 of 3 entries hold before it")


def test_export_writes_each_entry_as_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _store(tmp_path)
    assert main(["ledger", "export", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    store = SQLiteStore(path)
    assert [line.encode() for line in lines] == [raw for _, raw in store.ledger()]
    store.close()
    assert [orjson.loads(line)["seq"] for line in lines] == [1, 2, 3]


def test_a_store_that_is_not_there_is_exit_2_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nothing.sqlite"
    assert main(["ledger", "verify", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"agui-tools ledger: cannot read the ledger of {missing}: ")
    assert "\n" not in err.rstrip("\n") and not missing.exists()


def test_a_store_peer_text_is_escaped_on_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "app.sqlite"
    store = SQLiteStore(path)
    from ..helpers.ledger import decision

    store.record_decision(decision("t\x1b[2Jx", "c1"))
    store.close()
    db = sqlite3.connect(path)
    db.execute("UPDATE ledger SET entry = entry || x'20'")
    db.commit()
    db.close()
    assert main(["ledger", "verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[2Jx" in out


def test_postgres_verify_and_a_rewritten_entry(
    postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    from agui_tools.app._store_postgres import PostgresStore

    store = PostgresStore(postgres_dsn, max_size=1)
    fill(store, 2)
    store.close()
    assert main(["ledger", "verify", postgres_dsn]) == 0
    assert "2 entries, every link holds" in capsys.readouterr().out
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM agui_ledger WHERE seq = 1")
    assert main(["ledger", "verify", postgres_dsn]) == 1
    assert "[LEDGER-4] entry 2" in capsys.readouterr().out


# -- --receipt-keys: the receipts an entry holds are checked against it -------------------


def _signed_store(tmp_path: Path, signer: Any) -> Path:
    """A store whose ledger holds signed decisions: two calls approved, one declined."""
    path = tmp_path / "signed.sqlite"
    store = SQLiteStore(path)
    conv = Conversation(thread_id="t1", tools=[CONFIRM], store=store, signer=signer)
    conv.next_input(user="order")
    run(
        conv,
        *(e for n in range(3) for e in call(f"c{n}", "confirm_order", '{"orderId":"A7","qty":2}')),
    )
    Driver(conv).end_run()
    Driver(conv).approve("c0", principal=Principal("alice", authenticated_by="oidc"))
    Driver(conv).approve("c1", principal=Principal("bob", authenticated_by="oidc"))
    Driver(conv).decline("c2", principal=Principal("bob", authenticated_by="oidc"))
    store.close()
    return path


def _keys(tmp_path: Path, signer: Any, name: str = "keys.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"keys": [signer.keyring_entry()]}))
    return path


def test_receipt_keys_checks_each_receipt_against_its_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    signer = Signer.generate(key_id="app-1")
    path = _signed_store(tmp_path, signer)
    assert (
        main(["ledger", "verify", str(path), "--receipt-keys", str(_keys(tmp_path, signer))]) == 0
    )
    out = capsys.readouterr().out
    assert "3 entries, every link holds" in out
    assert "ledger: 3 receipt(s), each signed by a trusted key and about its entry" in out
    other = _keys(tmp_path, Signer.generate(key_id="app-1"), "other.json")
    assert main(["ledger", "verify", str(path), "--receipt-keys", str(other)]) == 1
    out = capsys.readouterr().out
    assert "[RCPT-3] entry 1 (threadId 't1', toolCallId 'c0')" in out
    assert "0 receipt(s) verified before it" in out


def test_a_receipt_moved_to_another_entry_and_rechained_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A writer who can recompute the chain swaps two approvals' receipts: the chain
    holds, the receipts no longer vouch for their entries."""
    signer = Signer.generate(key_id="app-1")
    path = _signed_store(tmp_path, signer)
    db = sqlite3.connect(path)
    bodies = [orjson.loads(raw) for _, raw in db.execute("SELECT seq, entry FROM ledger")]
    bodies[0]["receipt"], bodies[1]["receipt"] = bodies[1]["receipt"], bodies[0]["receipt"]
    prev = GENESIS
    for seq, body in enumerate(bodies, 1):
        decision = {k: v for k, v in body.items() if k not in ("seq", "prev", "hash")}
        raw, prev = chained(decision, seq, prev)
        db.execute("UPDATE ledger SET entry = ? WHERE seq = ?", (raw, seq))
    db.commit()
    db.close()
    keys = _keys(tmp_path, signer)
    assert main(["ledger", "verify", str(path)]) == 0  # the chain alone cannot tell
    capsys.readouterr()
    assert main(["ledger", "verify", str(path), "--receipt-keys", str(keys)]) == 1
    out = capsys.readouterr().out
    assert "[RCPT-4] entry 1 (threadId 't1', toolCallId 'c0')" in out
    assert "toolCallId 'c1', not 'c0'" in out


def test_an_unreadable_keys_file_is_bad_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _store(tmp_path)
    bad = tmp_path / "keys.json"
    bad.write_text('{"keys": "none"}')
    assert main(["ledger", "verify", str(path), "--receipt-keys", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agui-tools ledger: --receipt-keys: ") and err.count("\n") == 1
