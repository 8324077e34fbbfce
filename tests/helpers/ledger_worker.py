"""Approver replicas on one store, for the ledger's property/fault test.

Each worker plays a replica of an application whose ``transfer`` tool needs two
approvals that expire after :data:`EXPIRES` seconds: for a random thread it
restores the conversation and, at random, approves as one of three principals
(or an unnamed person; sometimes editing the amount), declines, or executes the
call when its quorum holds. The handler's side effect is a row in an ``effects``
table — with the hash of the arguments it ran on and the time before ``execute``
was asked — so the test judges what really ran against the ledger.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import time
from collections.abc import Iterable
from typing import Any

from agui_tools._errors import AguiError
from agui_tools.app import Driver
from agui_tools.app._calls import CallStatus
from agui_tools.app._consent import ConsentPolicy, Principal, Quorum
from agui_tools.app._conversation import Conversation
from agui_tools.app._store import Store
from agui_tools.app._tools import ToolSpec
from agui_tools.wire._canonical import canonical_hash

from .store_worker import open_store

EXPIRES = 0.8
TRANSFER = ToolSpec(
    "transfer",
    "Move money.",
    parameters={"type": "object", "properties": {"amount": {"type": "integer"}}},
    side_effects=True,
)
POLICY = ConsentPolicy(quorums={"transfer": Quorum(requires=2, expires=EXPIRES)})
PRINCIPALS = (
    Principal("alice", "Alice", authenticated_by="oidc"),
    Principal("bob", "Bob", authenticated_by="oidc"),
    Principal("carol", "Carol", authenticated_by="session"),
    None,  # a person the application did not name: the unauthenticated "user"
)


class Effects:
    """What ran: one row per execution, the arguments' hash, and when it was asked."""

    def __init__(self, backend: str, target: str) -> None:
        schema = (
            "CREATE TABLE IF NOT EXISTS ledger_effects (thread_id TEXT, call_id TEXT, "
            "arguments TEXT, asked DOUBLE PRECISION, pid INTEGER)"
        )
        if backend == "sqlite":
            self._db: Any = sqlite3.connect(target, isolation_level=None, timeout=60)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._mark = "?"
        else:
            import psycopg

            self._db = psycopg.connect(target, autocommit=True)
            self._mark = "%s"
        self._db.execute(schema)

    def record(self, thread_id: str, call_id: str, arguments: str, asked: float) -> None:
        m = self._mark
        self._db.execute(
            f"INSERT INTO ledger_effects VALUES ({m}, {m}, {m}, {m}, {m})",
            (thread_id, call_id, arguments, asked, os.getpid()),
        )

    def rows(self) -> list[tuple[str, str, str, float]]:
        return [
            tuple(r)
            for r in self._db.execute(
                "SELECT thread_id, call_id, arguments, asked FROM ledger_effects"
            ).fetchall()
        ]

    def close(self) -> None:
        self._db.close()


def seed(store: Store, threads: Iterable[str]) -> None:
    """Each thread: one run saved, leaving call ``c1`` (``transfer``) awaiting consent."""
    for n, thread in enumerate(threads):
        conv = Conversation(thread_id=thread, tools=[TRANSFER], store=store, consent=POLICY)
        run = conv.next_input(user="pay", run_id=f"{thread}-r1")
        ids = {"threadId": run["threadId"], "runId": run["runId"]}
        conv.receive_many(
            [
                {"type": "RUN_STARTED", **ids},
                {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "transfer"},
                {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": f'{{"amount": {n}}}'},
                {"type": "TOOL_CALL_END", "toolCallId": "c1"},
                {"type": "RUN_FINISHED", **ids},
            ]
        )
        Driver(conv).end_run()


def step(store: Store, effects: Effects, thread: str, rng: random.Random) -> None:
    """One random move on ``thread``'s call, as a replica that just restored it."""
    conv = Conversation(thread_id=thread, tools=[TRANSFER], store=store, consent=POLICY)
    driver = Driver(conv)
    driver.restore()
    pending = {c.call_id: c for c in conv.pending}
    call = pending.get("c1")
    if call is None:
        return
    roll = rng.random()
    if call.status is CallStatus.APPROVED and roll < 0.9:
        if rng.random() < 0.7:
            time.sleep(rng.uniform(0, 2 * EXPIRES))  # a replica slow to act: approvals lapse
        asked = time.time()

        def handler(args: dict[str, Any]) -> str:
            effects.record(thread, "c1", canonical_hash(args), asked)
            time.sleep(rng.random() * 0.003)  # a SIGKILL here: ran, answer not recorded
            return "moved"

        driver.execute("c1", handler)
    elif roll < 0.97 and call.status in (CallStatus.AWAITING_CONSENT, CallStatus.APPROVED):
        # (an approved call is approved again only now and then: its approvals may lapse)
        edited = None
        if rng.random() < 0.1 and call.proposed is not None:
            edited = {"amount": int(call.proposed.get("amount", 0)) + 1}
        driver.approve("c1", principal=rng.choice(PRINCIPALS), arguments=edited)
    elif call.status is CallStatus.AWAITING_CONSENT:
        driver.decline("c1", principal=rng.choice(PRINCIPALS), reason="no")


def worker(backend: str, target: str, threads: list[str], seed_: int, until: float) -> None:
    """A replica making random moves until ``until`` (or until it is killed)."""
    rng = random.Random(seed_)
    store = open_store(backend, target)
    effects = Effects(backend, target + ".effects" if backend == "sqlite" else target)
    while time.time() < until:
        # a refused approval (expired, short of the quorum), a stale thread: go on
        with contextlib.suppress(AguiError):
            step(store, effects, rng.choice(threads), rng)
    effects.close()
    store.close()
