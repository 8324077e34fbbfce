"""``agui-tools ledger verify|export STORE``: the audit of the approval ledger.

verify exits 0 with the head hash when every link holds, 1 naming the first broken
link (entry, ids, rule, expected vs found), 2 when the store cannot be read — and
writes nothing; export prints each entry byte for byte as stored.
"""

from __future__ import annotations

import json
import os
import pty
import sqlite3
import subprocess
import sys
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

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}


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


def test_a_store_from_before_the_ledger_is_exit_2_not_an_empty_chain_and_stays_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # dropping the ledger table is the whole chain cut: "0 entries, every link holds"
    # hid it, and the open added an empty table to a store verify promises not to write
    path = _store(tmp_path)
    db = sqlite3.connect(path)
    db.execute("DROP TABLE ledger")
    db.commit()
    db.close()
    assert main(["ledger", "verify", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "from before the approval ledger: it has no ledger to verify" in captured.err
    db = sqlite3.connect(path)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    db.close()
    assert "ledger" not in tables and "decisions" in tables


def test_a_sqlite_file_of_another_application_is_exit_2_naming_its_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "other.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE invoices (id INTEGER)")
    db.commit()
    db.close()
    assert main(["ledger", "export", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "is not an agui-tools store (it holds invoices)" in captured.err


def test_verify_reads_while_a_writer_holds_the_write_lock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # an auditor verifying a busy store: verify once took the write lock itself and
    # waited out the writer (30 s) to fail with exit 2
    import time

    path = _store(tmp_path)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO ledger (seq, entry) VALUES (99, x'00')")
    try:
        started = time.monotonic()
        assert main(["ledger", "verify", str(path)]) == 0
        assert time.monotonic() - started < 20  # a hang bound, not a timing claim
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert "ledger: 3 entries, every link holds" in capsys.readouterr().out


def test_a_corrupt_file_is_exit_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _store(tmp_path)
    with path.open("r+b") as damaged:
        damaged.seek(100)
        damaged.write(b"\xff" * 4000)
    assert main(["ledger", "verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert "is not a readable SQLite store (DatabaseError: " in err
    assert err.count("\n") == 1


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


def test_a_postgres_store_from_before_the_ledger_is_exit_2_and_stays_so(
    postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    from agui_tools.app._store_postgres import PostgresStore

    store = PostgresStore(postgres_dsn, max_size=1)
    fill(store, 1)
    store.close()
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE agui_ledger")
    assert main(["ledger", "verify", postgres_dsn]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "does not exist" in captured.err
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        found = conn.execute("SELECT to_regclass('agui_ledger')").fetchone()
    assert found == (None,)


def _rewrite_consistently(path: Path, seq: int, change: tuple[bytes, bytes]) -> None:
    """What a writer without any secret does: edit entry ``seq``, recompute every hash."""
    from agui_tools.app._ledger import chained

    db = sqlite3.connect(path)
    rows = db.execute("SELECT seq, entry FROM ledger ORDER BY seq").fetchall()
    prev = orjson.loads(rows[seq - 2][1])["hash"] if seq > 1 else "sha256:" + "0" * 64
    for number, raw in rows[seq - 1 :]:
        body = orjson.loads(raw.replace(*change) if number == seq else raw)
        for field in ("hash", "seq", "prev"):
            body.pop(field)
        entry, prev = chained(body, number, prev)
        db.execute("UPDATE ledger SET entry = ? WHERE seq = ?", (entry, number))
    db.commit()
    db.close()


def test_a_consistent_rewrite_holds_alone_but_not_through_a_kept_anchor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _store(tmp_path)
    assert main(["ledger", "verify", str(path)]) == 0
    head = capsys.readouterr().out.split("head ")[1].strip()
    _rewrite_consistently(path, 2, (b"alice@", b"mallory@"))
    assert main(["ledger", "verify", str(path)]) == 0  # what a chain alone cannot see
    capsys.readouterr()
    assert main(["ledger", "verify", "--anchor", f"3:{head}", str(path)]) == 1
    first, _ = capsys.readouterr().out.splitlines()
    assert first.startswith("ledger: [LEDGER-5] entry 3 (threadId 't2', ")
    assert f"the chain up to it was rewritten; expected {head}, found sha256:" in first


def test_a_cut_behind_a_kept_anchor_is_found_and_the_anchor_is_passed_when_intact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _store(tmp_path, count=4)
    store = SQLiteStore(path)
    report = verify_ledger(store.ledger()[:3])
    store.close()
    anchor = f"3:{report.head}"
    assert main(["ledger", "verify", "--anchor", anchor, str(path)]) == 0
    assert capsys.readouterr().out.endswith("; it passes through entry 3\n")
    db = sqlite3.connect(path)
    db.execute("DELETE FROM ledger WHERE seq >= 3")
    db.commit()
    db.close()
    assert main(["ledger", "verify", str(path)]) == 0  # a cut of the newest: no broken link
    capsys.readouterr()
    assert main(["ledger", "verify", "--anchor", anchor, str(path)]) == 1
    first, _ = capsys.readouterr().out.splitlines()
    assert first.startswith("ledger: [LEDGER-5] entry 3: the ledger ends at entry 2: ")


@pytest.mark.parametrize("bad", ["3", "0:sha256:" + "0" * 64, "3:sha256:abc", "x:\x1b[2J"])
def test_an_anchor_that_is_not_n_colon_hash_is_exit_2_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    path = _store(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["ledger", "verify", "--anchor", bad, str(path)])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "is not N:sha256:<64 hex digits>" in err and "\x1b" not in err


@pytest.mark.parametrize("stored", ["5", "2.5"])
def test_an_entry_edited_into_a_number_is_exported_judged_and_chained_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stored: str
) -> None:
    # SQLite keeps the type an edit stores: export once died on int.decode, and the
    # next decision's append on int.hex — the decision refused with a traceback
    from ..helpers.ledger import decision

    path = _store(tmp_path)
    db = sqlite3.connect(path)
    db.execute(f"UPDATE ledger SET entry = {stored} WHERE seq = 3")
    db.commit()
    db.close()
    assert main(["ledger", "export", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[2] == stored
    store = SQLiteStore(path)
    store.record_decision(decision("t9", "c1"))
    store.close()
    assert main(["ledger", "verify", str(path)]) == 1
    first, _ = capsys.readouterr().out.splitlines()
    assert first == "ledger: [LEDGER-3] entry 3: the stored entry is not a JSON object"


def _hostile_store(tmp_path: Path) -> Path:
    """A store whose second entry names a principal holding a bidi override and a C1
    control: valid JSON, which canonical JSON leaves unescaped."""
    from agui_tools.app._consent import ConsentDecision, fingerprint
    from agui_tools.wire._canonical import canonical_hash

    path = _store(tmp_path, 1)
    store = SQLiteStore(path)
    store.record_decision(
        ConsentDecision(
            thread_id="t9",
            call_id="c1",
            tool="transfer",
            fingerprint=fingerprint({"n": 9}),
            approved=True,
            decided_by="user",
            decided_at=ConsentDecision.now(),
            principal=Principal("mallory", "Mallory\u202etxt.exe\x9b2J", authenticated_by="oidc"),
            arguments_shown=canonical_hash({"n": 9}),
            arguments_approved=canonical_hash({"n": 9}),
        ).to_json()
    )
    store.close()
    return path


def _export_to(path: Path, stdout: int) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "agui_tools", "ledger", "export", str(path)],
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=ENV,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def test_export_to_a_pipe_is_byte_for_byte_even_with_bidi_and_c1(tmp_path: Path) -> None:
    path = _hostile_store(tmp_path)
    done = _export_to(path, subprocess.PIPE)
    assert done.returncode == 0, done.stderr
    store = SQLiteStore(path)
    stored = [raw for _, raw in store.ledger()]
    store.close()
    assert "\u202e".encode() in stored[1] and "\x9b".encode() in stored[1]
    assert done.stdout == b"".join(raw + b"\n" for raw in stored)
    assert done.stderr == b""


def test_export_to_a_terminal_shows_controls_escaped_and_says_it_is_not_the_export(
    tmp_path: Path,
) -> None:
    path = _hostile_store(tmp_path)
    leader, follower = pty.openpty()
    try:
        done = _export_to(path, follower)
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end is closed
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0, done.stderr
    text = shown.decode()
    assert "\u202e" not in text and "\x9b" not in text, text
    assert "Mallory\\u202etxt.exe\\x9b2J" in text, text
    assert text.count('"seq":') == 2  # every entry shown, the clean one as stored
    err = done.stderr.decode()
    assert "1 entry shown with control characters escaped" in err, err
    assert "not for audit; redirect to a file" in err, err


def test_one_entry_is_said_in_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _store(tmp_path, count=1)
    assert main(["ledger", "verify", str(path)]) == 0
    assert capsys.readouterr().out.startswith("ledger: 1 entry, every link holds; head ")
