"""A multi-process chaos run of the exactly-once promise (issue #21): the engine.

Used by ``bench/chaos_processes.py`` (``make chaos``: the full run) and by
``tests/app/test_chaos_processes.py`` (a bounded run in the suite).

What runs, all on loopback:

* **a PostgreSQL server** of its own (``PostgresServer(crash_safe=True)``: an
  acknowledged commit survives ``pg_ctl stop -m immediate``);
* **an agent server** in its own process: a ``Run`` agent that, for each user
  message, asks the application to run the side-effecting frontend tool
  ``charge(cents)`` once (a fresh random call id, as a model would make) and then
  answers in text;
* **N worker processes** (forked): the even slots a ``Session`` on
  ``AsyncPostgresStore``, the odd slots a ``SyncSession`` on ``PostgresStore``.
  Each works through its own endless list of tasks (thread, user message id,
  text) over a small shared set of threads — so replicas collide on threads —
  and follows docs/deployment.md's recovery recipe to the letter: any
  ``StoreError`` → ``send(text, message_id=mid)`` again, on the same session
  (which reloads itself) or on a new one on the same store (the habit is drawn
  per process), bounded and backing off. A process that was killed is replaced
  by a new one (a new store object, new sessions) that sends its in-flight
  message again with its id — or first ``send()`` with no text to carry the
  thread on (drawn per process);
* **the tool's side effect** is a row in a *ground-truth* table (a SQLite file
  the store never touches, out of reach of the PostgreSQL faults) with the
  ``(thread_id, call_id)`` key, written in its own transaction before the
  handler returns;
* **a chaos driver** (this process) that, on a seeded schedule, SIGKILLs
  workers (and starts their replacements; now and then two at once),
  ``pg_terminate_backend``s the store's backends (mostly ones in the middle of a
  query or transaction; now and then all of one replica's) and once restarts the
  server with ``-m immediate`` (down longer than the store's timeout).

How a process settles a call another replica started is drawn per process too,
among the documented ways: answer "outcome unknown" at once (the default), wait
for the other's answer (``in_flight_wait``), and ask the payment system with the
``outcome_unknown=`` hook once that wait is over. ``reconcile_eagerly`` adds the
docs' hook example as written (no ``in_flight_wait``): ``make chaos``'s second
phase, which finds the hook answering "not charged" for a call a live replica is
charging (tests/app/test_chaos_processes.py reproduces it deterministically).

Then the workers finish their in-flight task without faults and stop, a
fault-free pass carries every thread to its end, and :func:`judge` checks the
promise against the ground truth (see its docstring).

Every worker writes what it does — each attempt, each error by class, each
execution — as JSON lines to a file of its slot; the driver keeps its own log of
kills, terminations and the restart. A violation is reported with the seed, the
thread, the call and the timeline of everything that touched that thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import multiprocessing
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import tempfile
import time
import traceback
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FORK = multiprocessing.get_context("fork")

STORE_APP = "chaos-store"
"""``application_name`` of every store connection (``chaos-store-<slot>``): the
backends the driver terminates. The driver's own connections are named apart."""


# -- the run's shape ------------------------------------------------------------------------


@dataclass
class ChaosConfig:
    seed: int = 21
    workers: int = 6
    threads: int = 16
    seconds: float = 330.0
    """How long the faults go on; the schedule spreads them over that time."""
    kills: int = 115
    terminations: int = 680
    restarts: int = 1
    restart_down: float = 6.0
    """How long the server stays down (killed with ``-m immediate``, crash recovery
    on start): longer than ``store_timeout``, so calls in flight fail with a
    ``StoreError`` rather than waiting the restart out."""
    drain_seconds: float = 120.0
    hang_seconds: float = 90.0
    """A worker that logs nothing for that long is hung: a finding (then killed)."""
    max_attempts: int = 40
    send_timeout: float = 90.0
    store_timeout: float = 5.0
    workdir: str | None = None
    in_flight_wait: float = 3.0
    """The ``in_flight_wait`` of the processes that wait (about half of them)."""
    reconcile_eagerly: bool = False
    hook_share: float = 0.5
    """The share of the processes that may use the hook which do."""
    """Let processes that do not wait use the ``outcome_unknown=`` hook too (the
    docs' example passes it without ``in_flight_wait``)."""
    sloppy: bool = False
    """Break the recipe on purpose (a retry sends the text under a new message id):
    the judge's own test — such a run must be found out."""


@dataclass
class Task:
    slot: int
    index: int
    thread: str
    mid: str
    cents: int

    @property
    def text(self) -> str:
        return f"please charge {self.cents} cents (order {self.mid})"


def thread_names(cfg: ChaosConfig) -> list[str]:
    return [f"chaos-{cfg.seed}-t{i:02d}" for i in range(cfg.threads)]


def task_of(cfg: ChaosConfig, slot: int, index: int) -> Task:
    """The ``index``-th task of ``slot``: the same in every process, from the seed."""
    rng = random.Random(f"{cfg.seed}/task/{slot}/{index}")
    thread = rng.choice(thread_names(cfg))
    return Task(slot, index, thread, f"m-{cfg.seed}-s{slot}-{index:05d}", 100 * slot + index + 1)


def worker_kind(slot: int) -> str:
    return "async" if slot % 2 == 0 else "sync"


# -- the agent -------------------------------------------------------------------------------

CENTS = re.compile(r"charge (\d+) cents")
CENTS_MID = re.compile(r"\(order ([^)]+)\)")


async def charging_agent(r: Any) -> None:
    """For the last user message: one ``charge`` call, then (once answered) a text reply."""
    messages = list(r.messages)
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if not users:
        await r.text("Nothing to do yet.")
        return
    after = messages[users[-1] + 1 :]
    answered = [m for m in after if m["role"] == "tool"]
    if answered:
        await r.text(f"Done: {answered[-1]['content']}")
        return
    found = CENTS.search(str(messages[users[-1]].get("content")))
    cents = int(found.group(1)) if found else 0
    async with r.tool_call(
        "charge",
        call_id=f"call-{uuid.uuid4().hex[:12]}",
        parent_message_id=f"a-{uuid.uuid4().hex[:12]}",
    ) as call:
        await call.args(json.dumps({"cents": cents}))


def serve_agent(port: int) -> None:
    import uvicorn

    from agui_tools import agent_app

    uvicorn.run(
        agent_app(charging_agent, path="/agent"), host="127.0.0.1", port=port, log_level="warning"
    )


def wait_listening(port: int, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("the agent server did not start")


# -- the ground truth ------------------------------------------------------------------------


class Effects:
    """The side-effect table: one row per charge that happened (SQLite, WAL,
    ``synchronous=FULL``; one connection and one transaction per charge)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def create(self) -> None:
        with contextlib.closing(sqlite3.connect(self.path, isolation_level=None)) as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS effects (thread_id TEXT NOT NULL, "
                "call_id TEXT NOT NULL, cents INTEGER, slot TEXT, incarnation INTEGER, "
                "pid INTEGER, at REAL)"
            )

    def record(self, thread_id: str, call_id: str, cents: int, slot: str, inc: int) -> None:
        with contextlib.closing(sqlite3.connect(self.path, isolation_level=None, timeout=60)) as db:
            db.execute("PRAGMA synchronous=FULL")
            db.execute(
                "INSERT INTO effects VALUES (?, ?, ?, ?, ?, ?, ?)",
                (thread_id, call_id, cents, slot, inc, os.getpid(), time.time()),
            )

    def happened(self, thread_id: str, call_id: str) -> bool:
        with contextlib.closing(sqlite3.connect(self.path, isolation_level=None, timeout=60)) as db:
            row = db.execute(
                "SELECT count(*) FROM effects WHERE thread_id = ? AND call_id = ?",
                (thread_id, call_id),
            ).fetchone()
            return bool(row[0])

    def rows(self) -> list[dict[str, Any]]:
        with contextlib.closing(sqlite3.connect(self.path, isolation_level=None)) as db:
            cur = db.execute(
                "SELECT thread_id, call_id, cents, slot, incarnation, pid, at FROM effects"
            )
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


# -- event logs ------------------------------------------------------------------------------


class Log:
    """JSON lines appended to one file (one ``write`` per line, ``O_APPEND``)."""

    def __init__(self, path: Path, **stamp: Any) -> None:
        self.path = path
        self.stamp = stamp
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def __call__(self, ev: str, **fields: Any) -> None:
        line = json.dumps({"ev": ev, "at": time.time(), **self.stamp, **fields}, default=str)
        os.write(self._fd, (line + "\n").encode())

    def close(self) -> None:
        os.close(self._fd)


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


# -- a worker --------------------------------------------------------------------------------


@dataclass
class WorkerArgs:
    cfg: ChaosConfig
    slot: int
    incarnation: int
    url: str
    dsn: str
    effects: str
    logdir: str


def slot_log(logdir: str | Path, slot: int) -> Path:
    return Path(logdir) / f"slot-{slot}.jsonl"


def stop_file(logdir: str | Path) -> Path:
    return Path(logdir) / "stop"


def _where_am_i(events: list[dict[str, Any]]) -> tuple[int, Task | None]:
    """From a slot's log: the next task index, and the task in flight (begun, not ended)."""
    begun: dict[int, dict[str, Any]] = {}
    ended: set[int] = set()
    for e in events:
        if e["ev"] == "begin":
            begun[e["task"]] = e
        elif e["ev"] in ("done", "gave-up"):
            ended.add(e["task"])
    nxt = max(begun, default=-1) + 1
    open_ = sorted(set(begun) - ended)
    return nxt, (None if not open_ else Task(**begun[open_[-1]]["t"]))


def _error_fields(exc: BaseException) -> dict[str, Any]:
    return {
        "cls": type(exc).__name__,
        "written": getattr(exc, "written", None),
        "op": getattr(exc, "operation", None),
        "msg": str(exc)[:300],
    }


def _is_store_error(exc: BaseException) -> bool:
    from agui_tools import StoreError

    return isinstance(exc, StoreError)


class _Card:
    """A session with its tool: the handler charges the call its session is executing."""

    def __init__(self, session: Any, thread: str, log: Log | None = None) -> None:
        self.session = session
        self.thread = thread
        self.log = log
        self.executing: str | None = None

    def on_update(self, update: Any) -> None:
        from agui_tools.app._calls import CallStatus
        from agui_tools.app._conversation import CallUpdate

        if isinstance(update, CallUpdate) and update.status is CallStatus.EXECUTING:
            self.executing = update.call_id


def _make_card(
    session_cls: Any,
    client: Any,
    store: Any,
    thread: str,
    effects: Effects,
    log: Log,
    who: str,
    options: dict[str, Any] | None = None,
) -> _Card:
    from agui_tools.transport._session import tool_spec_from_function

    options = dict(options or {})
    if options.pop("reconcile", False):
        options["outcome_unknown"] = _reconcile(effects, log)
        if not options.get("in_flight_wait"):
            # the docs' example as written: no in_flight_wait — the Session's default,
            # which with a hook is the longest handler timeout
            options.pop("in_flight_wait", None)
    session = session_cls(client, store=store, thread_id=thread, ask=lambda _c: True, **options)
    card = _Card(session, thread, log)
    inc = int(log.stamp.get("inc", 0))

    def charge(cents: int) -> str:
        """Charge the user's card."""
        call_id = card.executing or "?"
        log("exec", thread=thread, call=call_id, cents=cents)
        effects.record(thread, call_id, cents, who, inc)
        log("charged", thread=thread, call=call_id, cents=cents)
        return f"charged {cents} cents"

    session.add_tool(*tool_spec_from_function(charge, side_effects=True))
    return card


def _reconcile(effects: Effects, log: Log) -> Callable[[Any, Any], Any]:
    """docs/deployment.md's ``outcome_unknown=`` hook: ask the system the handler acts
    on (here the side-effect table) what became of a call whose outcome is unknown."""
    from agui_tools.app._calls import Answer

    def reconcile(call: Any, _started: Any) -> Any:
        cents = (call.effective_arguments or {}).get("cents")
        happened = effects.happened(call.thread_id, call.call_id)
        log("reconcile", thread=call.thread_id, call=call.call_id, happened=happened)
        if happened:
            return Answer.executed(call.call_id, f"charged {cents} cents")
        return Answer.failed(call.call_id, "not charged: the payment system has no record of it")

    return reconcile


def worker_main(args: WorkerArgs) -> None:
    """One replica process (forked): tasks until the stop file appears."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for name in ("psycopg", "psycopg.pool"):  # reconnect and rollback chatter
        logging.getLogger(name).setLevel(logging.CRITICAL)
    cfg, slot = args.cfg, args.slot
    path = slot_log(args.logdir, slot)
    before = read_log(path)
    rng = random.Random(f"{cfg.seed}/worker/{slot}/{args.incarnation}")
    habit = rng.choice(["same-session", "new-session"])
    resume = rng.choice(["resend", "carry-on"])
    # the documented ways to settle a call another replica started: answer "outcome
    # unknown" at once (the default), wait for its answer (in_flight_wait), and ask
    # the payment system (outcome_unknown=) once that wait is over
    wait = rng.choice([0.0, cfg.in_flight_wait])
    options: dict[str, Any] = {"in_flight_wait": wait}
    if (wait or cfg.reconcile_eagerly) and rng.random() < cfg.hook_share:
        options["reconcile"] = True
    log = Log(path, slot=slot, inc=args.incarnation)
    log("start", pid=os.getpid(), kind=worker_kind(slot), habit=habit, resume=resume, **options)
    nxt, in_flight = _where_am_i(before)
    plan = _Plan(cfg, slot, nxt, in_flight, Path(args.logdir))
    plan.options = options
    effects = Effects(args.effects)
    try:
        if worker_kind(slot) == "async":
            asyncio.run(_async_worker(args, plan, habit, resume, rng, log, effects))
        else:
            _sync_worker(args, plan, habit, resume, rng, log, effects)
        log("exit")
    except BaseException as exc:
        log(
            "finding",
            kind="worker crashed",
            tb=traceback.format_exc()[-3000:],
            **_error_fields(exc),
        )
        raise
    finally:
        log.close()


class _Plan:
    """The tasks a process works through: its predecessor's in-flight one first."""

    def __init__(
        self, cfg: ChaosConfig, slot: int, nxt: int, in_flight: Task | None, logdir: Path
    ) -> None:
        self.cfg, self.slot, self.nxt, self.in_flight = cfg, slot, nxt, in_flight
        self.logdir = logdir
        self.options: dict[str, Any] = {}

    def __iter__(self) -> Iterator[tuple[Task, bool]]:
        if self.in_flight is not None:
            yield self.in_flight, True
        while not stop_file(self.logdir).exists():
            yield task_of(self.cfg, self.slot, self.nxt), False
            self.nxt += 1


def _backoff(rng: random.Random, attempt: int) -> float:
    return min(1.5, 0.02 * 2 ** min(attempt, 7)) * rng.uniform(0.5, 1.5)


async def _async_worker(
    args: WorkerArgs,
    plan: _Plan,
    habit: str,
    resume: str,
    rng: random.Random,
    log: Log,
    effects: Effects,
) -> None:
    """:func:`_sync_worker`'s loop, awaited: ``Session`` + ``AsyncPostgresStore``; a send
    that outlives ``send_timeout`` is a finding ("send hung")."""
    from agui_tools import AgentClient, Session
    from agui_tools.app._store_postgres import AsyncPostgresStore

    cfg = args.cfg
    store: Any = None
    for attempt in range(60):
        try:
            store = await AsyncPostgresStore(
                args.dsn, min_size=1, max_size=4, timeout=cfg.store_timeout
            ).open()
            break
        except Exception as exc:
            _open_failed(log, exc)
            await asyncio.sleep(_backoff(rng, attempt))
    if store is None:
        raise RuntimeError("the store never opened")
    client = AgentClient(args.url, timeout=30)
    cards = _Cards(Session, client, store, effects, log, f"s{args.slot}", plan.options)
    for task, resumed in plan:
        how = _begin(log, task, resume, resumed)
        attempts, started = 0, time.monotonic()
        while True:
            card = cards.get(task.thread, fresh=habit == "new-session" and attempts > 0)
            result = None
            try:
                if attempts == 0 and how == "carry-on":
                    await asyncio.wait_for(
                        card.session.send(on_update=card.on_update), cfg.send_timeout
                    )
                result = await asyncio.wait_for(
                    card.session.send(
                        task.text, message_id=_mid(cfg, task, attempts), on_update=card.on_update
                    ),
                    cfg.send_timeout,
                )
            except TimeoutError:
                log("finding", task=task.index, kind="send hung", thread=task.thread)
                cards.drop(task.thread)
            except Exception as exc:
                cards.failed(task, exc, habit)
            attempts += 1
            if _settled(log, cfg, task, result, attempts, started, habit):
                break
            await asyncio.sleep(_backoff(rng, attempts))
    await client.aclose()
    await store.aclose()


def _sync_worker(
    args: WorkerArgs,
    plan: _Plan,
    habit: str,
    resume: str,
    rng: random.Random,
    log: Log,
    effects: Effects,
) -> None:
    """A worker's loop: open the store (retrying), then each task of the plan sent until
    it is done or given up — ``SyncSession`` + ``PostgresStore``."""
    from agui_tools import SyncAgentClient, SyncSession
    from agui_tools.app._store_postgres import PostgresStore

    cfg = args.cfg
    store: Any = None
    for attempt in range(60):
        try:
            store = PostgresStore(args.dsn, min_size=1, max_size=2, timeout=cfg.store_timeout)
            break
        except Exception as exc:
            _open_failed(log, exc)
            time.sleep(_backoff(rng, attempt))
    if store is None:
        raise RuntimeError("the store never opened")
    client = SyncAgentClient(args.url, timeout=30)
    cards = _Cards(SyncSession, client, store, effects, log, f"s{args.slot}", plan.options)
    for task, resumed in plan:
        how = _begin(log, task, resume, resumed)
        attempts, started = 0, time.monotonic()
        while True:
            card = cards.get(task.thread, fresh=habit == "new-session" and attempts > 0)
            result = None
            try:
                if attempts == 0 and how == "carry-on":
                    card.session.send(on_update=card.on_update)
                result = card.session.send(
                    task.text, message_id=_mid(cfg, task, attempts), on_update=card.on_update
                )
            except Exception as exc:
                cards.failed(task, exc, habit)
            attempts += 1
            if _settled(log, cfg, task, result, attempts, started, habit):
                break
            time.sleep(_backoff(rng, attempts))
    client.close()
    store.close()


# -- what both workers' loops share: everything but the sends and the waits ------------------


def _open_failed(log: Log, exc: Exception) -> None:
    log("open-failed", store_error=_is_store_error(exc), **_error_fields(exc))
    if not _is_store_error(exc):
        log("finding", kind="open raised a non-StoreError", tb=traceback.format_exc()[-3000:])


class _Cards:
    """A worker's sessions, one per thread: made on first use, and anew when the habit
    wants a new session per retry or the last one raised what is not a ``StoreError``."""

    def __init__(
        self,
        session_cls: Any,
        client: Any,
        store: Any,
        effects: Effects,
        log: Log,
        who: str,
        options: dict[str, Any] | None,
    ) -> None:
        self._make: Callable[[str], _Card] = lambda thread: _make_card(
            session_cls, client, store, thread, effects, log, who, options
        )
        self._log = log
        self._cards: dict[str, _Card] = {}

    def get(self, thread: str, *, fresh: bool) -> _Card:
        if fresh or thread not in self._cards:
            self._cards[thread] = self._make(thread)
        return self._cards[thread]

    def drop(self, thread: str) -> None:
        self._cards.pop(thread, None)

    def failed(self, task: Task, exc: Exception, habit: str) -> None:
        """A send raised ``exc``: logged; a session that raised what is not a
        ``StoreError`` is not used again."""
        _log_error(self._log, task, exc, habit)
        if not _is_store_error(exc):
            self.drop(task.thread)


def _begin(log: Log, task: Task, resume: str, resumed: bool) -> str:
    """Log the task's start; how its first send goes: ``send``, or for the task a killed
    predecessor left in flight, ``resend`` / ``carry-on`` (the resume habit)."""
    how = ("carry-on" if resume == "carry-on" else "resend") if resumed else "send"
    log("begin", task=task.index, thread=task.thread, mid=task.mid, how=how, t=asdict(task))
    return how


def _settled(
    log: Log,
    cfg: ChaosConfig,
    task: Task,
    result: Any,
    attempts: int,
    started: float,
    habit: str,
) -> bool:
    """After an attempt: ``True`` when the task is done or given up (logged); else the
    retry is logged and ``False``."""
    if result is not None:
        if result.status == "success" and not result.pending:
            log("done", task=task.index, attempts=attempts, status=result.status)
            return True
        log("finding", task=task.index, kind="send returned unfinished",
            status=result.status, pending=[c.call_id for c in result.pending])  # fmt: skip
    if attempts >= cfg.max_attempts or time.monotonic() - started > 3 * cfg.send_timeout:
        log("gave-up", task=task.index, attempts=attempts)
        return True
    log("retry", task=task.index, habit=habit, attempt=attempts)
    return False


def _mid(cfg: ChaosConfig, task: Task, attempt: int) -> str:
    """The message id a send uses: always the task's — unless the run is sloppy."""
    return f"{task.mid}-retry{attempt}" if cfg.sloppy and attempt else task.mid


def _log_error(log: Log, task: Task, exc: BaseException, habit: str) -> None:
    if _is_store_error(exc):
        log("error", task=task.index, thread=task.thread, habit=habit, **_error_fields(exc))
        return
    log(
        "finding",
        task=task.index,
        thread=task.thread,
        kind="send raised a non-StoreError",
        tb=traceback.format_exc()[-3000:],
        **_error_fields(exc),
    )


# -- the driver ------------------------------------------------------------------------------


@dataclass
class Slot:
    slot: int
    proc: Any = None
    incarnation: int = 0
    started: float = 0.0


@dataclass
class ChaosResult:
    cfg: ChaosConfig
    counts: dict[str, Any] = field(default_factory=dict)
    violations: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    workdir: str = ""

    @property
    def ok(self) -> bool:
        return not self.violations and not self.findings


class Driver:
    def __init__(self, cfg: ChaosConfig, say: Callable[[str], None] = print) -> None:
        from .postgres import PostgresServer

        self.cfg = cfg
        self.say = say
        self.rng = random.Random(f"{cfg.seed}/driver")
        self.workdir = Path(cfg.workdir or tempfile.mkdtemp(prefix="agui-chaos-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.logdir = self.workdir / "logs"
        self.logdir.mkdir(exist_ok=True)
        self.effects = Effects(str(self.workdir / "effects.sqlite"))
        self.server = PostgresServer(crash_safe=True)
        self.log = Log(self.logdir / "driver.jsonl", slot="driver")
        self.slots = [Slot(i) for i in range(cfg.workers)]
        self.agent: Any = None
        self.url = ""
        self.counts: Counter[str] = Counter()

    # -- plumbing

    def dsn(self, who: str) -> str:
        return f"{self.server.conninfo} application_name={who}"

    def _admin(self) -> Any:
        import psycopg

        return psycopg.connect(self.dsn("chaos-driver"), autocommit=True, connect_timeout=3)

    def _spawn(self, s: Slot) -> None:
        s.incarnation += 1
        args = WorkerArgs(
            self.cfg, s.slot, s.incarnation, self.url, self.dsn(f"{STORE_APP}-{s.slot}"),
            self.effects.path, str(self.logdir),
        )  # fmt: skip
        s.proc = FORK.Process(target=worker_main, args=(args,), daemon=True)
        s.proc.start()
        s.started = time.monotonic()

    def _kill(self, s: Slot, why: str) -> None:
        assert s.proc is not None
        os.kill(s.proc.pid, signal.SIGKILL)
        s.proc.join(10)
        last = read_log(slot_log(self.logdir, s.slot))[-1:]
        self.log(why, target=s.slot, inc=s.incarnation, pid=s.proc.pid, last=last)
        if why == "kill":
            where = last[0]["ev"] if last else "nothing logged"
            self.counts[f"killed after '{where}'"] += 1

    # -- the run

    def run(self) -> ChaosResult:
        t0 = time.monotonic()
        result = ChaosResult(self.cfg, workdir=str(self.workdir))
        try:
            self.server.start()
            from agui_tools.app._store_postgres import PostgresStore

            PostgresStore(self.dsn("chaos-setup"), max_size=1).close()  # the schema, once
            self.effects.create()
            from agui_tools.testing import free_port

            port = free_port()
            self.agent = FORK.Process(target=serve_agent, args=(port,), daemon=True)
            self.agent.start()
            wait_listening(port)
            self.url = f"http://127.0.0.1:{port}/agent"
            result.seconds["setup"] = time.monotonic() - t0
            t1 = time.monotonic()
            for s in self.slots:
                self._spawn(s)
            self._chaos()
            result.seconds["chaos"] = time.monotonic() - t1
            t2 = time.monotonic()
            self._drain()
            result.seconds["drain"] = time.monotonic() - t2
            t3 = time.monotonic()
            final_findings = final_pass(
                self.cfg, self.dsn("chaos-final"), self.url, self.effects, self.logdir
            )
            result.seconds["final pass"] = time.monotonic() - t3
            t4 = time.monotonic()
            judge(self, result, final_findings)
            result.seconds["checks"] = time.monotonic() - t4
        finally:
            self._teardown()
        result.seconds["total"] = time.monotonic() - t0
        if result.ok and self.cfg.workdir is None:  # the logs are kept for a failed run only
            shutil.rmtree(self.workdir, ignore_errors=True)
            result.workdir = "(removed: nothing to look at)"
        return result

    def _chaos(self) -> None:
        cfg, rng = self.cfg, self.rng
        schedule: list[tuple[float, str]] = [
            (rng.uniform(0.5, cfg.seconds), "kill") for _ in range(cfg.kills)
        ]
        schedule += [(rng.uniform(0.2, cfg.seconds), "terminate") for _ in range(cfg.terminations)]
        schedule += [(rng.uniform(0.3, 0.7) * cfg.seconds, "restart") for _ in range(cfg.restarts)]
        schedule.sort()
        start = time.monotonic()
        last_report = start
        for due, what in schedule:
            while (now := time.monotonic() - start) < due:
                self._watch()
                time.sleep(min(0.02, due - now))
            self._watch()
            if what == "kill":
                live = [s for s in self.slots if s.proc is not None and s.proc.is_alive()]
                # now and then two replicas die at once (a host going down)
                victims = rng.sample(live, min(len(live), 2 if rng.random() < 0.1 else 1))
                for victim in victims:
                    self._kill(victim, "kill")
                    self.counts["kills"] += 1
                if len(victims) > 1:
                    self.counts["double kills"] += 1
                for victim in victims:
                    self._spawn(victim)
            elif what == "terminate":
                self._terminate()
            else:
                self._restart()
            if time.monotonic() - last_report > 30:
                last_report = time.monotonic()
                self.say(f"  chaos {time.monotonic() - start:5.0f}s: {dict(self.counts)}")

    def _terminate(self) -> None:
        """Terminate one store backend: mostly one in the middle of something (a
        query, a transaction), looked for a few times; else an idle pooled one. Now
        and then every backend of one replica at once (its network cut)."""
        if self.rng.random() < 0.08:
            self._terminate_replica()
            return
        want_busy = self.rng.random() < 0.75
        try:
            with self._admin() as admin:
                for _ in range(20 if want_busy else 1):
                    rows = admin.execute(
                        "SELECT pid, state, left(query, 50) FROM pg_stat_activity "
                        "WHERE application_name LIKE %s AND pid <> pg_backend_pid()",
                        (f"{STORE_APP}-%",),
                    ).fetchall()
                    busy = [r for r in rows if r[1] != "idle"]
                    if busy or not want_busy:
                        break
                    time.sleep(0.003)
                if not rows:
                    self.counts["terminate: no backend"] += 1
                    return
                pid, state, query = self.rng.choice(busy if busy and want_busy else rows)
                done = admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()
        except Exception as exc:
            self.counts["terminate: server unreachable"] += 1
            self.log("terminate-failed", err=str(exc)[:200])
            return
        if done and done[0]:
            self.counts["terminated backends"] += 1
            self.counts[f"terminated while {state}"] += 1
            self.log("terminate", pid=pid, state=state, query=query)

    def _terminate_replica(self) -> None:
        slot = self.rng.randrange(self.cfg.workers)
        try:
            with self._admin() as admin:
                rows = admin.execute(
                    "SELECT pid, state, pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = %s",
                    (f"{STORE_APP}-{slot}",),
                ).fetchall()
        except Exception as exc:
            self.counts["terminate: server unreachable"] += 1
            self.log("terminate-failed", err=str(exc)[:200])
            return
        done = [r for r in rows if r[2]]
        self.counts["terminated backends"] += len(done)
        self.counts["replicas cut off (all their backends)"] += 1
        for _pid, state, _ in done:
            self.counts[f"terminated while {state}"] += 1
        self.log("terminate-replica", target=slot, pids=[r[0] for r in done])

    def _restart(self) -> None:
        t = time.monotonic()
        self.log("restart-begin")
        self.server.stop(mode="immediate")  # every server process killed: crash recovery
        time.sleep(self.cfg.restart_down)
        self.server.start()
        self.counts["server restarts (immediate)"] += 1
        self.log("restart-end", seconds=time.monotonic() - t)
        self.say(f"  server restarted (-m immediate) in {time.monotonic() - t:.1f}s")

    def _watch(self) -> None:
        """Replace a worker that died on its own (a finding); kill one that hangs."""
        for s in self.slots:
            if s.proc is None:
                continue
            if not s.proc.is_alive():
                code = s.proc.exitcode
                s.proc.join()
                stopping = stop_file(self.logdir).exists()
                if code == 0 and stopping:
                    s.proc = None
                    continue
                self.log(
                    "finding", kind="worker exited", target=s.slot, inc=s.incarnation, code=code
                )
                self.counts["workers exited on their own"] += 1
                self._spawn(s)
                continue
            path = slot_log(self.logdir, s.slot)
            quiet = time.time() - (path.stat().st_mtime if path.exists() else 0)
            if (
                quiet > self.cfg.hang_seconds
                and time.monotonic() - s.started > self.cfg.hang_seconds
            ):
                self.log(
                    "finding", kind="worker hung", target=s.slot, inc=s.incarnation, quiet=quiet
                )
                self.counts["hung workers killed"] += 1
                self._kill(s, "kill-hung")
                self._spawn(s)

    def _drain(self) -> None:
        stop_file(self.logdir).touch()
        deadline = time.monotonic() + self.cfg.drain_seconds
        while any(s.proc is not None for s in self.slots):
            if time.monotonic() > deadline:
                for s in self.slots:
                    if s.proc is not None and s.proc.is_alive():
                        self.log("finding", kind="worker did not stop", target=s.slot)
                        self._kill(s, "kill-at-drain")
                        s.proc = None
                break
            self._watch()
            time.sleep(0.05)

    def _teardown(self) -> None:
        for s in self.slots:
            if s.proc is not None and s.proc.is_alive():
                os.kill(s.proc.pid, signal.SIGKILL)
                s.proc.join(5)
        if self.agent is not None and self.agent.is_alive():
            os.kill(self.agent.pid, signal.SIGTERM)
            self.agent.join(10)
            if self.agent.is_alive():
                os.kill(self.agent.pid, signal.SIGKILL)
                self.agent.join(5)
        self.log.close()
        self.server.destroy()


# -- the fault-free pass ---------------------------------------------------------------------


def final_pass(
    cfg: ChaosConfig, dsn: str, url: str, effects: Effects, logdir: Path
) -> list[dict[str, Any]]:
    """Carry every thread to its end: no call pending, the agent's reply given."""
    from agui_tools import SyncAgentClient, SyncSession
    from agui_tools.app._store_postgres import PostgresStore

    findings: list[dict[str, Any]] = []
    log = Log(logdir / "final.jsonl", slot="final", inc=0)
    with (
        PostgresStore(dsn, max_size=2, timeout=10) as store,
        SyncAgentClient(url, timeout=30) as client,
    ):
        for thread in thread_names(cfg):
            for attempt in range(3):
                card = _make_card(SyncSession, client, store, thread, effects, log, "final")
                try:
                    conv = card.session.open()
                    owes = bool(conv.pending) or (
                        bool(conv.messages)
                        and (
                            conv.messages[-1]["role"] in ("user", "tool")
                            or (bool(conv.runs) and conv.runs[-1].status != "success")
                        )
                    )
                    if not owes:
                        break
                    log("carry", thread=thread, pending=[c.call_id for c in conv.pending])
                    result = card.session.send(on_update=card.on_update)
                    if result.status == "success" and not result.pending:
                        break
                    findings.append(
                        {
                            "kind": "final pass: unfinished",
                            "thread": thread,
                            "status": result.status,
                        }
                    )
                except Exception as exc:
                    findings.append(
                        {
                            "kind": "final pass: error",
                            "thread": thread,
                            "attempt": attempt,
                            "tb": traceback.format_exc()[-2000:],
                            **_error_fields(exc),
                        }
                    )
    log.close()
    return findings


# -- the judgement ---------------------------------------------------------------------------


def _order(text: str) -> str | None:
    """The task's message id, from a user message's text."""
    found = CENTS_MID.search(text)
    return found.group(1) if found else None


def _is_unknown(message: dict[str, Any]) -> bool:
    return str(message.get("error") or "").startswith("outcome unknown")


def judge(driver: Driver, result: ChaosResult, final_findings: list[dict[str, Any]]) -> None:
    """The promise, checked against the ground truth (every row a violation when not 0):

    * a side effect per (thread, call) at most once;
    * every tool call of every saved thread answered exactly once (no call pending);
    * an ``executed`` answer ⇔ the side effect happened; otherwise only the
      documented "outcome unknown" failure, and only when the journal holds an
      intent (a failure that says "not executed" for a call that ran is a lie);
    * the journal's answer equals the thread's tool message (a thread saying
      "outcome unknown" where the journal holds the answer of a replica that was
      still executing is the documented two-replicas case: counted, not a
      violation);
    * every user message id exactly once in its thread, every task's message
      present, at most one charge per user message;
    * every side effect belongs to a call of some saved thread.
    """
    from agui_tools.app._journal import Claim
    from agui_tools.app._store_postgres import PostgresStore

    cfg = result.cfg
    v = result.violations
    counts = result.counts

    # what the workers did
    events: list[dict[str, Any]] = []
    for s in range(cfg.workers):
        events += read_log(slot_log(driver.logdir, s))
    driver_events = read_log(driver.logdir / "driver.jsonl")
    events += read_log(driver.logdir / "final.jsonl")
    by_class: Counter[str] = Counter()
    retries: Counter[str] = Counter()
    resumes: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    settles: Counter[str] = Counter()
    tasks: dict[str, dict[str, Any]] = {}
    for e in events:
        if e["ev"] == "error":
            by_class[e["cls"]] += 1
        elif e["ev"] == "open-failed":
            by_class[f"{e['cls']} (opening the store)"] += 1
        elif e["ev"] == "retry":
            retries[e["habit"]] += 1
        elif e["ev"] == "start":
            kinds[
                f"{e['kind']} ({'Session+AsyncPostgresStore' if e['kind'] == 'async' else 'SyncSession+PostgresStore'})"
            ] += 1
            settles[
                f"in_flight_wait={e.get('in_flight_wait', 0):g}"
                + (" + outcome_unknown hook" if e.get("reconcile") else "")
            ] += 1
        elif e["ev"] == "reconcile":
            settles["hook asked: charged" if e["happened"] else "hook asked: not charged"] += 1
        elif e["ev"] == "begin":
            tasks.setdefault(
                e["mid"],
                {
                    "thread": e["thread"],
                    "slot": e["slot"],
                    "done": False,
                    "gave_up": False,
                    "cents": e["t"]["cents"],
                },
            )
            if e["how"] != "send":
                resumes[e["how"]] += 1
        elif e["ev"] == "finding":
            result.findings.append(e)
    by_task = {(e["slot"], e["task"]): e for e in events if e["ev"] in ("done", "gave-up")}
    for mid, t in tasks.items():
        index = int(mid.rsplit("-", 1)[1])
        ended = by_task.get((t["slot"], index))
        t["done"] = ended is not None and ended["ev"] == "done"
        t["gave_up"] = ended is not None and ended["ev"] == "gave-up"
    result.findings += final_findings

    counts["worker processes"] = cfg.workers
    counts["worker incarnations"] = dict(kinds)
    counts.update(driver.counts)
    counts["store errors by class"] = dict(by_class)
    counts["retries by habit"] = dict(retries)
    counts["settling others' calls: processes by habit, hook answers"] = dict(settles)
    counts["resumed after a kill, by habit"] = dict(resumes)
    counts["tasks begun"] = len(tasks)
    counts["tasks done"] = sum(t["done"] for t in tasks.values())
    counts["tasks given up"] = sum(t["gave_up"] for t in tasks.values())

    # the ground truth and the store
    effect_rows = driver.effects.rows()
    fx: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in effect_rows:
        fx[(row["thread_id"], row["call_id"])].append(row)
    counts["side effects"] = len(effect_rows)

    def context(thread: str, call: str | None = None, mid: str | None = None) -> dict[str, Any]:
        """What touched this call: the minimal story of a violation — every event of the
        call (or message), and around them the thread's store errors, the retries and
        the chaos (kills, terminations, the restart)."""
        rows = fx.get((thread, call or ""), [])
        own = [
            e for e in events
            if (call and e.get("call") == call) or (mid and (e.get("mid") == mid or e.get("t", {}).get("mid") == mid))
        ]  # fmt: skip
        moments = [e["at"] for e in own] + [r["at"] for r in rows]
        lo, hi = (min(moments) - 1.0, max(moments) + 1.0) if moments else (0.0, 0.0)
        near = [
            e for e in events
            if e not in own and e.get("thread") == thread and lo <= e["at"] <= hi
            and e["ev"] in ("error", "finding", "begin", "start", "gave-up")
        ]  # fmt: skip
        timeline = sorted(own + near, key=lambda e: e["at"])[:120]
        chaos = [e for e in driver_events if lo <= e["at"] <= hi][:40]
        procs = {(e["slot"], e.get("inc")) for e in own} | {
            (int(r["slot"][1:]), r["incarnation"]) for r in rows if r["slot"].startswith("s")
        }
        return {
            "seed": cfg.seed, "thread": thread, "call": call, "message_id": mid,
            "side effects": rows, "timeline": timeline, "chaos around": chaos,
            "processes": {f"s{k[0]}#{k[1]}": starts[k] for k in sorted(procs, key=str) if k in starts},
        }  # fmt: skip

    starts = {
        (e["slot"], e["inc"]): {
            k: e.get(k) for k in ("kind", "habit", "resume", "in_flight_wait", "reconcile", "pid")
        }
        for e in events
        if e["ev"] == "start"
    }
    saved_calls: set[tuple[str, str]] = set()
    unknown_answered_in_journal = 0
    unknown_total = 0
    executed_total = 0
    with PostgresStore(driver.dsn("chaos-judge"), max_size=2, timeout=10) as store:
        for thread in thread_names(cfg):
            record = store.load(thread)
            messages = record.messages if record is not None else []
            users = Counter(m["id"] for m in messages if m["role"] == "user")
            texts = Counter(str(m["content"]) for m in messages if m["role"] == "user")
            text_of = {m["id"]: str(m["content"]) for m in messages if m["role"] == "user"}
            for mid, n in users.items():
                if n != 1:
                    v.append(
                        {"violation": "user message twice", **context(thread, mid=mid), "times": n}
                    )
            for text, n in texts.items():
                ids = [i for i, t in text_of.items() if t == text]
                if n != 1 and len(ids) > 1:
                    v.append(
                        {
                            "violation": "user message twice (under another id)",
                            **context(thread, mid=ids[0]),
                            "ids": ids,
                        }
                    )
            calls: dict[str, dict[str, Any]] = {}
            owner: dict[str, str] = {}
            current_user: str | None = None
            per_user: dict[str, list[str]] = defaultdict(list)
            answers: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for m in messages:
                if m["role"] == "user":
                    current_user = m["id"]
                for tc in m.get("toolCalls") or []:
                    if tc["id"] in calls:
                        v.append(
                            {
                                "violation": "tool call twice in the thread",
                                **context(thread, tc["id"]),
                            }
                        )
                    calls[tc["id"]] = tc
                    if current_user is not None:
                        owner[tc["id"]] = current_user
                        per_user[current_user].append(tc["id"])
                if m["role"] == "tool":
                    answers[m["toolCallId"]].append(m)
            for cid in answers:
                if cid not in calls:
                    v.append({"violation": "answer to no call", **context(thread, cid)})
            for cid, tc in calls.items():
                saved_calls.add((thread, cid))
                n_fx = len(fx.get((thread, cid), []))
                given = answers.get(cid, [])
                if n_fx > 1:
                    v.append(
                        {
                            "violation": "side effect duplicated",
                            **context(thread, cid),
                            "times": n_fx,
                        }
                    )
                if len(given) != 1:
                    v.append({"violation": "call not answered exactly once" if given else "answer lost",
                              **context(thread, cid), "answers": given})  # fmt: skip
                    continue
                msg = given[0]
                found = store.lookup(thread, cid)
                executed = msg.get("error") is None
                if executed:
                    executed_total += 1
                    if n_fx == 0:
                        v.append(
                            {
                                "violation": "answered executed, nothing happened",
                                **context(thread, cid),
                                "answer": msg,
                            }
                        )
                    want = f"charged {json.loads(tc['function']['arguments'])['cents']} cents"
                    if msg["content"] != want:
                        v.append(
                            {
                                "violation": "answer is not the handler's",
                                **context(thread, cid),
                                "answer": msg,
                            }
                        )
                elif _is_unknown(msg):
                    unknown_total += 1
                    if found is None:
                        v.append(
                            {
                                "violation": "outcome unknown without an intent",
                                **context(thread, cid),
                                "answer": msg,
                            }
                        )
                elif n_fx > 0:
                    v.append(
                        {
                            "violation": "answered not executed, but it happened",
                            **context(thread, cid),
                            "answer": msg,
                        }
                    )
                if found is None:
                    if executed or n_fx:
                        v.append(
                            {
                                "violation": "journal has no record",
                                **context(thread, cid),
                                "answer": msg,
                            }
                        )
                    continue
                if found.claim is Claim.ANSWERED:
                    assert found.answer is not None
                    same = found.answer.get("content") == msg["content"] and found.answer.get(
                        "error"
                    ) == msg.get("error")
                    if not same:
                        if _is_unknown(msg):
                            unknown_answered_in_journal += 1  # the documented two-replicas case
                        else:
                            v.append({"violation": "answer contradicts the journal", **context(thread, cid),
                                      "thread says": msg, "journal says": found.answer})  # fmt: skip
                    if found.answer.get("error") is None and n_fx == 0:
                        v.append(
                            {
                                "violation": "journal says executed, nothing happened",
                                **context(thread, cid),
                            }
                        )
                    if (
                        found.answer.get("error") is not None
                        and not str(found.answer.get("error")).startswith("outcome unknown")
                        and n_fx
                    ):
                        v.append(
                            {
                                "violation": "journal says not executed, but it happened",
                                **context(thread, cid),
                            }
                        )
                elif executed:
                    # the thread says executed; the journal holds only the intent
                    v.append(
                        {
                            "violation": "answer contradicts the journal (intent only)",
                            **context(thread, cid),
                            "answer": msg,
                        }
                    )
            by_text: dict[str, list[str]] = defaultdict(list)
            for mid, cids in per_user.items():
                by_text[text_of[mid]] += cids
            for text, cids in by_text.items():
                charged = sum(len(fx.get((thread, c), [])) for c in cids)
                if charged > 1:
                    v.append(
                        {
                            "violation": "one user message charged twice",
                            **context(thread, cids[0], mid=_order(text)),
                            "calls": cids,
                            "side effects of every call": [fx.get((thread, c)) for c in cids],
                        }
                    )
            for mid in users:
                if not per_user.get(mid):
                    v.append(
                        {"violation": "user message never acted on", **context(thread, mid=mid)}
                    )
            if messages and (messages[-1]["role"] != "assistant" or messages[-1].get("toolCalls")):
                v.append({"violation": "thread not carried to its end", "seed": cfg.seed, "thread": thread,
                          "last": messages[-1]})  # fmt: skip
            for mid, t in tasks.items():
                if t["thread"] != thread:
                    continue
                text = task_of(cfg, t["slot"], int(mid.rsplit("-", 1)[1])).text
                if mid not in users and text in texts:
                    v.append({"violation": "message under another id", **context(thread, mid=mid)})
                elif mid not in users and t["done"]:
                    v.append({"violation": "message lost", **context(thread, mid=mid)})
                elif mid not in users:
                    counts["messages of given-up tasks absent"] = (
                        counts.get("messages of given-up tasks absent", 0) + 1
                    )
            counts.setdefault("messages in threads", 0)
            counts["messages in threads"] += len(messages)
    for key in fx:
        if key not in saved_calls:
            v.append({"violation": "side effect of no saved call", **context(key[0], key[1])})
    counts["calls in saved threads"] = len(saved_calls)
    counts["answers executed"] = executed_total
    counts["answers 'outcome unknown'"] = unknown_total
    counts["thread says unknown, journal has the answer (documented)"] = unknown_answered_in_journal
    counts["violations"] = len(v)
    counts["findings"] = len(result.findings)


# -- the summary -----------------------------------------------------------------------------


def summary(result: ChaosResult) -> str:
    lines = [
        f"chaos run, seed {result.cfg.seed} (workdir {result.workdir})",
        "",
        "| figure | value |",
        "|---|---|",
    ]
    for key, value in result.counts.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}: {n}" for k, n in sorted(value.items())) or "none"
        lines.append(f"| {key} | {value} |")
    lines.append(
        "| run time | " + ", ".join(f"{k} {s:.0f}s" for k, s in result.seconds.items()) + " |"
    )
    kinds = Counter(x["violation"] for x in result.violations)
    lines += ["", "violations: " + (", ".join(f"{k}: {n}" for k, n in kinds.items()) or "0")]
    fk = Counter(x.get("kind", "?") for x in result.findings)
    lines += ["findings: " + (", ".join(f"{k}: {n}" for k, n in fk.items()) or "0")]
    return "\n".join(lines)


def story(v: dict[str, Any]) -> str:
    """A violation as a person reads it: what, where, who did what when."""
    head = (
        f"VIOLATION {v['violation']!r}: seed {v.get('seed')}, thread {v.get('thread')}, "
        f"call {v.get('call')}, message {v.get('message_id')}"
    )
    lines = [head]
    rows = v.get("side effects") or []
    t0 = min((r["at"] for r in rows), default=None)
    for r in rows:
        lines.append(
            f"  side effect: {r['slot']}#{r['incarnation']} (pid {r['pid']}) charged "
            f"{r['cents']} cents"
        )
    for key in (
        "answer",
        "answers",
        "thread says",
        "journal says",
        "calls",
        "ids",
        "last",
        "times",
    ):
        if key in v:
            lines.append(f"  {key}: {json.dumps(v[key], default=str)[:400]}")
    for name, p in (v.get("processes") or {}).items():
        lines.append(f"  process {name}: {json.dumps(p)}")
    timeline = v.get("timeline") or []
    if t0 is None and timeline:
        t0 = timeline[-1]["at"]
    if t0 is not None:
        lines.append("  timeline (seconds from the first side effect):")
        merged = [("w", e) for e in timeline] + [("d", e) for e in v.get("chaos around") or []]
        for src, e in sorted(merged, key=lambda x: x[1]["at"]):
            who = "driver" if src == "d" else f"s{e['slot']}#{e.get('inc')}"
            what = {k: e[k] for k in ("task", "mid", "call", "how", "cls", "op", "happened",
                                      "target", "state", "habit") if k in e}  # fmt: skip
            lines.append(
                f"    {e['at'] - t0:+8.3f} {who:>8} {e['ev']:<10} {json.dumps(what)[:220]}"
            )
    return "\n".join(lines)


def details(result: ChaosResult, limit: int = 3) -> str:
    """The first violations (as stories) and findings in full: enough to reproduce and read."""
    out = []
    for x in result.violations[:limit]:
        out.append(story(x))
    for x in result.findings[:limit]:
        out.append(json.dumps(x, indent=1, default=str)[:4000])
    return "\n\n".join(out)


def run(cfg: ChaosConfig, say: Callable[[str], None] = print) -> ChaosResult:
    return Driver(cfg, say).run()
