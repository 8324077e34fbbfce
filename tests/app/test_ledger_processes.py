"""The ledger's property/fault test: approver replicas in real processes, SIGKILLed.

Four worker processes share one store (SQLite file; PostgreSQL) and make random
moves on 40 threads — approvals by three principals and an unnamed person, edits,
declines, executions — under a ``requires=2, expires=0.8 s`` quorum, while the
test SIGKILLs a random worker every few hundred milliseconds and starts another.
Afterwards:

* 0 executions without a matching unexpired quorum: every side effect that
  happened has ≥ 2 distinct principals' approvals in the ledger of exactly the
  arguments it ran on, decided before its claim and expiring after it was asked;
* each call ran at most once;
* 0 decisions missing from the ledger: every decision row has its entry, and
  every entry its decision (the same transaction, whatever the kill interrupted);
* the ledger verifies, and ``agui-tools ledger verify`` says so.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from agui_tools.app._consent import parse_stamp
from agui_tools.app._ledger import entry_body, verify_ledger
from agui_tools.cli import main

from ..helpers.ledger_worker import Effects, seed, worker
from ..helpers.store_worker import open_store

FORK = multiprocessing.get_context("fork")
WORKERS = 4
THREADS = [f"lt{n}" for n in range(40)]
SECONDS = float(os.environ.get("AGUI_LEDGER_SECONDS", "8"))


def _decision_rows(backend: str, store: Any) -> list[dict[str, Any]]:
    if backend == "sqlite":
        rows = store._db.execute("SELECT decision FROM decisions ORDER BY seq").fetchall()
    else:
        with store._pool.connection() as conn:
            rows = conn.execute("SELECT decision FROM agui_decisions ORDER BY seq").fetchall()
    return [orjson.loads(bytes(r[0])) for r in rows]


def _key(body: dict[str, Any]) -> bytes:
    return orjson.dumps(
        {k: v for k, v in body.items() if k not in ("seq", "prev", "hash")},
        option=orjson.OPT_SORT_KEYS,
    )


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_random_approvals_edits_expiries_and_kills_never_run_without_a_quorum(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, capsys: Any
) -> None:
    target = (
        str(tmp_path / "app.sqlite")
        if backend == "sqlite"
        else request.getfixturevalue("postgres_dsn")
    )
    store = open_store(backend, target)
    seed(store, THREADS)
    effects_target = target + ".effects" if backend == "sqlite" else target
    Effects(backend, effects_target).close()
    rng = random.Random(int(os.environ.get("AGUI_LEDGER_SEED", "39")))
    until = time.time() + SECONDS
    procs = [
        FORK.Process(target=worker, args=(backend, target, THREADS, rng.randrange(2**32), until))
        for _ in range(WORKERS)
    ]
    for p in procs:
        p.start()
    kills = 0
    while time.time() < until - 0.5:
        time.sleep(rng.uniform(0.1, 0.4))
        victim = rng.randrange(WORKERS)
        if procs[victim].is_alive():
            os.kill(procs[victim].pid or 0, signal.SIGKILL)
            procs[victim].join()
            kills += 1
        procs[victim] = FORK.Process(
            target=worker, args=(backend, target, THREADS, rng.randrange(2**32), until)
        )
        procs[victim].start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode in (0, -signal.SIGKILL) for p in procs), [p.exitcode for p in procs]
    assert kills >= 5

    entries = [orjson.loads(raw) for _, raw in store.ledger()]
    decisions = _decision_rows(backend, store)
    effects = Effects(backend, effects_target)
    ran = effects.rows()
    effects.close()

    # 0 decisions missing from the ledger, and no entry without its decision
    assert Counter(_key(entry_body(d, 0, "")) for d in decisions) == Counter(
        _key(e) for e in entries
    )
    assert verify_ledger(store.ledger()).broken is None

    # each call ran at most once, and only under a matching unexpired quorum
    assert len({(t, c) for t, c, _, _ in ran}) == len(ran), ran
    approvals = [e for e in entries if e.get("approved") and e.get("argumentsApproved")]
    for thread, call, arguments, asked in ran:
        record = store.lookup(thread, call)
        assert record is not None and record.started_at is not None
        claimed = datetime.fromtimestamp(record.started_at).astimezone()
        asked_at = datetime.fromtimestamp(asked).astimezone()
        voters = {
            e["principal"]["id"]
            for e in approvals
            if (e["threadId"], e["toolCallId"], e["argumentsApproved"]) == (thread, call, arguments)
            and parse_stamp(e["decidedAt"]) <= claimed
            and parse_stamp(e["expiresAt"]) > asked_at
        }
        assert len(voters) >= 2, (thread, call, voters)
    assert ran, "nothing executed: the campaign proved nothing"
    assert any(not e["approved"] for e in entries) or len(entries) > 20
    store.close()

    assert main(["ledger", "verify", target]) == 0
    assert f"ledger: {len(entries)} entries, every link holds" in capsys.readouterr().out
