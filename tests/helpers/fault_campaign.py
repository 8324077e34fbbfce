"""The fault campaign's scenarios, their driver, and the invariants checked after each trial.

A *scenario* is a short script of user messages sent through real ``Session`` /
``SyncSession`` objects to a real agent on loopback HTTP (:func:`chaos_agent`,
served in a background thread by :class:`AgentServer`). The agent charges the
user once per message — a side-effecting frontend tool, ``charge(order, cents,
ref)`` — and answers in text after the tool's answer. The handler writes each
charge to a :class:`Ledger` that faults never touch: the ground truth.

A *trial* runs one scenario with one fault (tests/helpers/faults.py) injected at
one store operation of replica A, and recovers exactly as docs/deployment.md says:

* a ``StoreError`` out of ``send``: ``send(text, message_id=mid)`` again — on the
  same session (``habit="same"``, it reloads itself) or on a new session on the
  same store and thread (``habit="new"``) — until it returns (at most
  :data:`MAX_RETRIES` retries: faults are injected once per trial);
* the process dying (:class:`~tests.helpers.faults.ProcessDied`, or a real
  ``SIGKILL`` of a worker subprocess): every object of that process is
  abandoned; a new process (a new store object on the same file or database) makes
  a new session and sends the message that was in flight, with its id.

Then :func:`check` judges the thread, as a fresh fault-free store holds it,
against the ledger and the journal (the invariants are listed there).

The worker subprocess of the ``SIGKILL`` sample is this module's ``__main__``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import threading
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx

from agui_tools import AgentClient, Run, Session, SyncAgentClient, SyncSession, agent_app
from agui_tools._errors import StoreError
from agui_tools.app._calls import Answer, PendingCall
from agui_tools.app._conversation import RunResult
from agui_tools.app._journal import Claim
from agui_tools.app._store import MemoryStore
from agui_tools.testing import serving
from agui_tools.transport._session import Approval, tool_spec_from_function

from .faults import AsyncFaultyStore, Fault, FaultKind, FaultyStore, Injector, ProcessDied

__all__ = [
    "SCENARIOS",
    "AgentServer",
    "Backend",
    "Face",
    "Habit",
    "Ledger",
    "Scenario",
    "Step",
    "TrialResult",
    "Violation",
    "agent_server",
    "check",
    "run_trial",
    "sigkill_trial",
]

MAX_RETRIES = 5
"""Retries of one send after ``StoreError`` before that is itself a violation."""
MAX_DEATHS = 3
"""Process deaths one step may see (a scripted crash and an injected one)."""
CENTS = 500
FLAKY = "(flaky)"
"""A user message whose text holds this makes the agent fail its first run of it."""
SPLIT = "(split)"
"""A user message whose text holds this is charged in two calls of one run (orders
``<message id>/1`` and ``/2``); any other is charged once (order ``<message id>``)."""

Face = Literal["sync", "async"]
Habit = Literal["same", "new"]


# -- the agent ----------------------------------------------------------------------


class FlakyAgent:
    """The agent: charges once per user message (twice in parallel for a
    :data:`SPLIT` one), then answers the tool's answer.

    Stateless except for the flaky messages: the first run of a user message whose
    text holds :data:`FLAKY` ends in ``RUN_ERROR`` after some text (the model was
    overloaded); the application retries with the same ``message_id``.
    """

    def __init__(self) -> None:
        self.attempts: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    async def __call__(self, run: Run) -> None:
        messages = run.messages
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        if not users:
            await run.text("Nothing to do.")
            return
        u = users[-1]
        user = messages[u]
        after = messages[u + 1 :]
        called = any(m.get("role") == "assistant" and m.get("toolCalls") for m in after)
        last = messages[-1]
        if not called:
            if FLAKY in str(user.get("content", "")):
                with self._lock:
                    self.attempts[run.thread_id, user["id"]] += 1
                    first = self.attempts[run.thread_id, user["id"]] == 1
                if first:
                    await run.text("Let me")
                    raise RuntimeError("the model is overloaded")
            orders = (
                [f"{user['id']}/1", f"{user['id']}/2"]
                if SPLIT in str(user.get("content", ""))
                else [user["id"]]
            )
            async with run.message() as m:
                await m.delta(f"Charging {CENTS} cents for {', '.join(orders)}.")
            for order in orders:
                ref = f"charge-{uuid.uuid4().hex[:12]}"
                async with run.tool_call("charge", call_id=ref, parent_message_id=m.id) as call:
                    await call.args(json.dumps({"order": order, "cents": CENTS, "ref": ref}))
        elif last.get("role") == "tool":
            await run.text(f"Done: {last.get('content')}")
        else:
            await run.text("Nothing to do.")


class AgentServer:
    """:func:`agui_tools.testing.serving` in a background thread with its own event loop,
    so a blocking ``SyncSession`` (and a worker subprocess) can talk to it too."""

    def __init__(self) -> None:
        self.agent = FlakyAgent()
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="chaos-agent", daemon=True)

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported by start()
            self._error = exc
            self._ready.set()
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        async with serving(agent_app(self.agent, path="/agent")) as base:
            self.url = f"{base}/agent"
            self._ready.set()
            await self._stop.wait()

    def start(self) -> AgentServer:
        self._thread.start()
        if not self._ready.wait(30) or self._error is not None:
            raise RuntimeError(f"the agent server did not start: {self._error!r}")
        return self

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)


# -- the ground truth ---------------------------------------------------------------


class Ledger:
    """Every charge that happened, keyed by (thread, call): what faults never touch.

    In memory for in-process trials; a SQLite file of its own (``path``) when a
    worker subprocess charges and the test reads it after the SIGKILL."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self._rows: list[tuple[str, str, str]] = []
        self._db: sqlite3.Connection | None = None
        if path is not None:
            self._db = sqlite3.connect(path, isolation_level=None, timeout=30)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS charges (thread_id TEXT, call_id TEXT, orders TEXT)"
            )

    def record(self, thread_id: str, call_id: str, order: str) -> None:
        if self._db is not None:
            self._db.execute("INSERT INTO charges VALUES (?, ?, ?)", (thread_id, call_id, order))
        else:
            self._rows.append((thread_id, call_id, order))

    def rows(self, thread_id: str) -> list[tuple[str, str, str]]:
        if self._db is not None:
            return [
                (t, c, o)
                for t, c, o in self._db.execute(
                    "SELECT thread_id, call_id, orders FROM charges WHERE thread_id=?",
                    (thread_id,),
                )
            ]
        return [r for r in self._rows if r[0] == thread_id]

    def happened(self, thread_id: str, call_id: str) -> bool:
        return any(c == call_id for _, c, _ in self.rows(thread_id))

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


# -- the backends ---------------------------------------------------------------------


@dataclass
class Backend:
    """Opens "the" store again for each process: a new connection to one file or
    database, or (memory) the same memory — a store that outlives its processes."""

    name: str
    target: str = ""
    """The SQLite file or the PostgreSQL connection string."""
    memory: MemoryStore = field(default_factory=MemoryStore)

    @property
    def is_async(self) -> bool:
        return self.name == "postgres-async"

    @property
    def durable(self) -> bool:
        return self.name != "memory"

    def open_sync(self) -> Any:
        """A synchronous store on the target (the checker's and the sync faces')."""
        if self.name == "memory":
            return self.memory
        if self.name == "sqlite":
            from agui_tools.app._store_sqlite import SQLiteStore

            return SQLiteStore(self.target, timeout=30)
        from agui_tools.app._store_postgres import PostgresStore

        return PostgresStore(self.target, min_size=1, max_size=2, timeout=30, migrate=False)

    async def open_async(self) -> Any:
        from agui_tools.app._store_postgres import AsyncPostgresStore

        store = AsyncPostgresStore(self.target, min_size=1, max_size=2, timeout=30, migrate=False)
        return await store.open()

    def prepare(self) -> None:
        """Create the schema once (the processes open with ``migrate=False``)."""
        if self.name.startswith("postgres"):
            from agui_tools.app._store_postgres import PostgresStore

            PostgresStore(self.target, min_size=1, max_size=1).close()


# -- scenarios ------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One user message (``text`` None: carry the thread on as it is) sent by a replica."""

    replica: str
    text: str | None
    mid: str | None
    crash: Literal["asking", "in-handler"] | None = None
    """A scripted crash of the sending process, the first time it gets there."""
    nested: Step | None = None
    """A step replica B performs while A's user is being asked (two replicas at once)."""
    retry_on_error: bool = False
    """The application sends again (same ``message_id``) after a failed run."""


@dataclass(frozen=True)
class Scenario:
    name: str
    steps: tuple[Step, ...]
    decline: frozenset[str] = frozenset()
    """Orders whose charge the user declines."""
    failing: frozenset[str] = frozenset()
    """Orders whose charge the handler fails (raises, charging nothing)."""
    reconcile: bool = False
    """``outcome_unknown=`` asks the ledger (the documented reconcile hook)."""
    session_per_step: bool = False
    """A new session for each step (a web replica's per-request session); else one
    long-lived session per replica (a chat window)."""
    faulty: str = "A"
    """The replica whose store operations are numbered and faulted (the other's are not)."""


def _steps(*pairs: tuple[str, str]) -> tuple[Step, ...]:
    return tuple(Step("A", text, mid) for mid, text in pairs)


_TWO_REPLICAS = (
    # B carries the thread on (and disposes of A's pending call) while A's user is
    # asked: A's next save is stale, and A retries as the recipe says
    Step("A", "order one", "m1", nested=Step("B", "order two", "m2")),
    Step("B", "order three", "m3"),
    Step("A", "order four", "m4"),
)

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "one-replica",
            _steps(("m1", "order one"), ("m2", "order two"), ("m3", "order three")),
        ),
        Scenario("two-replicas", _TWO_REPLICAS, session_per_step=True),
        Scenario("two-replicas-b", _TWO_REPLICAS, session_per_step=True, faulty="B"),
        Scenario(
            "restore-after-crash",
            (
                Step("A", "order one", "m1", crash="asking"),
                Step("A", "order two", "m2", crash="in-handler"),
                Step("A", "order three", "m3"),
            ),
            reconcile=True,
            session_per_step=True,
        ),
        Scenario(
            "decline",
            _steps(("m1", "order one"), ("m2", "order two"), ("m3", f"order three {SPLIT}")),
            decline=frozenset({"m1", "m3/2"}),
        ),
        Scenario(
            "failing-handler",
            _steps(("m1", "order one"), ("m2", "order two"), ("m3", f"order three {SPLIT}")),
            failing=frozenset({"m1", "m3/1"}),
        ),
        Scenario(
            "retry-message-id",
            (
                Step("A", f"order one {FLAKY}", "m1", retry_on_error=True),
                Step("A", "order two", "m2"),
                Step("A", f"order three {FLAKY}", "m3", retry_on_error=True),
            ),
        ),
        Scenario(
            "two-calls",
            _steps(("m1", f"order one {SPLIT}"), ("m2", f"order two {SPLIT}")),
        ),
    )
}


# -- a trial ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Violation:
    scenario: str
    backend: str
    face: str
    habit: str
    k: int | None
    kind: str
    op: str
    invariant: str
    detail: str

    def __str__(self) -> str:
        at = "fault-free run" if self.k is None else f"k={self.k} ({self.op}) {self.kind}"
        return (
            f"[{self.invariant}] {self.scenario} on {self.backend} ({self.face} session, "
            f"retry on the {self.habit} session), {at}: {self.detail}"
        )


@dataclass
class TrialResult:
    ops: int
    violations: list[Violation]
    fired: bool
    errors: Counter[str] = field(default_factory=Counter)
    deaths: int = 0
    carried: bool = False
    op_log: list[tuple[int, str, str]] = field(default_factory=list)


class _Broken(Exception):
    """A trial that cannot go on: recovery did not converge."""

    def __init__(self, invariant: str, detail: str) -> None:
        self.invariant = invariant
        super().__init__(detail)


class _Process:
    """One application process of a replica: its store object (always wrapped, so a
    scripted death stops its writes too; only the faulty replica's wrapper shares
    the trial's numbering and fault)."""

    def __init__(self, store: FaultyStore | AsyncFaultyStore) -> None:
        self.store = store
        self.dead = False

    def die(self) -> None:
        self.dead = True
        self.store.kill()


class Trial:
    """One run of one scenario with (at most) one fault, and its recovery."""

    def __init__(
        self,
        scenario: Scenario,
        backend: Backend,
        *,
        url: str,
        face: Face,
        habit: Habit,
        fault: Fault | None,
        thread_id: str,
        ledger: Ledger,
        flags_path: str | None = None,
    ) -> None:
        if backend.is_async and face != "async":
            raise ValueError("AsyncPostgresStore is driven by the async Session only")
        self.scenario = scenario
        self.backend = backend
        self.url = url
        self.face = face
        self.habit = habit
        self.injector = Injector(fault)
        self.thread_id = thread_id
        self.ledger = ledger
        self.processes: dict[str, _Process] = {}
        self.errors: Counter[str] = Counter()
        self.deaths = 0
        self.flags: set[str] = set()
        self.flags_path = flags_path
        if flags_path is not None and os.path.exists(flags_path):
            self.flags = set(Path(flags_path).read_text().split())
        self._sessions: dict[str, Any] = {}
        self._clients: dict[tuple[str, int], Any] = {}
        self.current: Step | None = None
        """The step being sent (a nested step while it runs)."""

    # the flags: what happened once (a crash, a nested step) — kept in a file for a
    # worker whose SIGKILL the test survives

    def flag(self, name: str) -> None:
        self.flags.add(name)
        if self.flags_path is not None:
            with open(self.flags_path, "a") as f:
                f.write(name + "\n")
                f.flush()
                os.fsync(f.fileno())

    # -- processes and sessions -----------------------------------------------------

    async def _open(self, replica: str) -> _Process:
        injector = self.injector if replica == self.scenario.faulty else Injector()
        if self.backend.is_async:
            return _Process(AsyncFaultyStore(await self.backend.open_async(), injector))
        return _Process(FaultyStore(self.backend.open_sync(), injector))

    async def process(self, replica: str) -> _Process:
        proc = self.processes.get(replica)
        if proc is None or proc.dead:
            proc = self.processes[replica] = await self._open(replica)
            self._sessions.pop(replica, None)
        return proc

    async def _close(self, proc: _Process) -> None:
        store = proc.store
        if self.backend.name == "memory":
            return  # the memory outlives its processes: it is the store
        with suppress(Exception):
            if isinstance(store, AsyncFaultyStore):
                await store.aclose()
            else:
                store.close()

    async def bury(self, replica: str) -> None:
        """The replica's process died: every object of it is abandoned (its store's
        connections closed, as the OS closes a dead process's sockets)."""
        proc = self.processes.pop(replica, None)
        self._sessions.pop(replica, None)
        if proc is not None:
            proc.die()
            await self._close(proc)
        self.deaths += 1

    async def session(self, replica: str, *, fresh: bool) -> Any:
        """The replica's session: the long-lived one, or (``fresh``) a new one."""
        if not fresh and replica in self._sessions:
            return self._sessions[replica]
        proc = await self.process(replica)
        session = self._make_session(replica, proc)
        self._sessions[replica] = session
        return session

    # one HTTP client per trial (and per thread: replica B's nested send has its own
    # loop), shared by its sessions: a client per session spent most of a trial
    # loading CA certificates that loopback HTTP never uses

    def _http_sync(self) -> httpx.Client:
        key = ("sync", threading.get_ident())
        if key not in self._clients:
            self._clients[key] = httpx.Client(verify=False, timeout=60)
        client: httpx.Client = self._clients[key]
        return client

    def _http_async(self) -> httpx.AsyncClient:
        key = ("async", threading.get_ident())
        if key not in self._clients:
            self._clients[key] = httpx.AsyncClient(verify=False, timeout=60)
        client: httpx.AsyncClient = self._clients[key]
        return client

    def _make_session(self, replica: str, proc: _Process) -> Any:
        scenario = self.scenario
        trial = self
        store: Any = proc.store  # the Store (or AsyncStore) protocol, method for method

        def charge(order: str, cents: int, ref: str) -> str:
            """Charge the user's card for an order."""
            if order in scenario.failing:
                raise RuntimeError(f"the bank refused the card for {order}")
            trial.ledger.record(trial.thread_id, ref, order)
            step = trial.current
            if step is not None and step.crash == "in-handler":
                name = f"crashed-{step.mid}"
                if name not in trial.flags:
                    trial.flag(name)
                    proc.die()
                    raise ProcessDied(f"the process died in the handler of {ref}, after charging")
            return f"charged {cents} cents for {order}"

        def decide(call: PendingCall) -> Approval:
            order = (call.effective_arguments or {}).get("order")
            if order in scenario.decline:
                return Approval.decline("not this one")
            return Approval.approve()

        def crash_if_scripted() -> None:
            step = trial.current
            if step is not None and step.crash == "asking" and replica == step.replica:
                name = f"crashed-{step.mid}"
                if name not in trial.flags:
                    trial.flag(name)
                    proc.die()
                    raise ProcessDied("the process died while its user was being asked")

        outcome_unknown = None
        if scenario.reconcile:

            def outcome_unknown(call: PendingCall, _started: Any) -> Answer:
                if trial.ledger.happened(trial.thread_id, call.call_id):
                    cents = (call.effective_arguments or {}).get("cents")
                    order = (call.effective_arguments or {}).get("order")
                    return Answer.executed(call.call_id, f"charged {cents} cents for {order}")
                return Answer.failed(call.call_id, "not charged: the payment system has no record")

        ask: Any
        if self.face == "sync":

            def ask_sync(call: PendingCall) -> Approval:
                crash_if_scripted()
                nested = trial.nested_due(replica)
                if nested is not None:
                    trial.run_nested_sync(nested)
                return decide(call)

            ask = ask_sync
            session: Any = SyncSession(
                SyncAgentClient(self.url, http=self._http_sync()),
                store=store,
                thread_id=self.thread_id,
                ask=ask,
                timeout=None,
                outcome_unknown=outcome_unknown,
            )
        else:

            async def ask_async(call: PendingCall) -> Approval:
                crash_if_scripted()
                nested = trial.nested_due(replica)
                if nested is not None:
                    await trial.run_nested(nested)
                return decide(call)

            ask = ask_async
            session = Session(
                AgentClient(self.url, http=self._http_async()),
                store=store,
                thread_id=self.thread_id,
                ask=ask,
                timeout=None,
                outcome_unknown=outcome_unknown,
            )
        session.add_tool(*tool_spec_from_function(charge, side_effects=True))
        return session

    # -- nested steps: replica B while A's user is asked ---------------------------------

    def nested_due(self, replica: str) -> Step | None:
        step = self.current
        if step is None or step.nested is None or replica != step.replica:
            return None
        if f"nested-{step.nested.mid}" in self.flags:
            return None
        return step.nested

    async def run_nested(self, nested: Step) -> None:
        outer = self.current
        self.current = nested
        try:
            await self.perform(nested, fresh=True)
        finally:
            self.current = outer
        self.flag(f"nested-{nested.mid}")

    def run_nested_sync(self, nested: Step) -> None:
        """B's send from inside A's blocking ``ask``: in a thread of its own with its own
        event loop (this thread's loop is blocked in ``ask``), waited for."""
        failure: list[BaseException] = []

        def work() -> None:
            try:
                asyncio.run(self.run_nested(nested))
            except BaseException as exc:  # raised again in the asking thread
                failure.append(exc)

        thread = threading.Thread(target=work, name="replica-B")
        thread.start()
        thread.join()
        if failure:
            raise failure[0]

    # -- sending, and the recovery recipe ------------------------------------------------

    async def _send(self, session: Any, step: Step) -> RunResult:
        if self.face == "sync":
            result: RunResult = session.send(step.text, message_id=step.mid)
        else:
            result = await session.send(step.text, message_id=step.mid)
        return result

    async def perform(self, step: Step, *, fresh: bool) -> None:
        """Send ``step`` until it returns, recovering as docs/deployment.md says."""
        retries = deaths = app_retries = 0
        session = await self.session(step.replica, fresh=fresh)
        while True:
            if step.replica == self.scenario.faulty:
                self.injector.where = f"step {step.mid}"
            try:
                result = await self._send(session, step)
            except ProcessDied:
                await self.bury(step.replica)
                deaths += 1
                if deaths > MAX_DEATHS:
                    raise _Broken(
                        "recovery", f"the process died {deaths} times in one send"
                    ) from None
                session = await self.session(step.replica, fresh=True)  # a new process
                continue
            except StoreError as exc:
                self.errors[type(exc).__name__] += 1
                retries += 1
                if retries > MAX_RETRIES:
                    raise _Broken(
                        "recovery",
                        f"send({step.text!r}, message_id={step.mid!r}) still failed after "
                        f"{MAX_RETRIES} retries: {type(exc).__name__}: {exc}",
                    ) from exc
                if self.habit == "new":
                    session = await self.session(step.replica, fresh=True)
                continue
            if result.status == "error" and step.retry_on_error and app_retries < 3:
                app_retries += 1  # the application's own retry of a failed run
                continue
            return

    async def run(self) -> None:
        done = {f.removeprefix("done-") for f in self.flags if f.startswith("done-")}
        for step in self.scenario.steps:
            if step.mid in done:
                continue
            self.current = step
            await self.perform(step, fresh=self.scenario.session_per_step)
            if step.nested is not None and f"nested-{step.nested.mid}" not in self.flags:
                # B's message was in flight too when the process died, and A's retry
                # did not ask again (B's recorded approval stands): B sends it again
                await self.run_nested(step.nested)
            self.flag(f"done-{step.mid}")
        self.current = None

    async def close(self) -> None:
        for proc in self.processes.values():
            await self._close(proc)
        for client in self._clients.values():
            with suppress(Exception):
                if isinstance(client, httpx.AsyncClient):
                    await client.aclose()
                else:
                    client.close()


# -- the invariants --------------------------------------------------------------------


def _is_unknown(message: dict[str, Any]) -> bool:
    return str(message.get("error") or "").startswith("outcome unknown")


def _says_executed(message: dict[str, Any]) -> bool:
    return message.get("error") is None and str(message.get("content", "")).startswith("charged")


def check(scenario: Scenario, store: Any, ledger: Ledger, thread_id: str) -> list[tuple[str, str]]:
    """The invariants, on the thread as a fresh fault-free store holds it:

    at-most-once        each charge (thread, call) happened at most once, and each
                        user message was charged at most once;
    answered-once       every tool call in the thread has exactly one tool message
                        (none: a dangling call), and every tool message answers a call;
    executed-iff-effect a tool message saying the call executed ⇔ the charge
                        happened; the documented "outcome unknown" answer is allowed
                        only where the journal holds an intent without an answer; a
                        charge the thread never mentions is lost;
    user-messages       each scripted user message id present exactly once, with its
                        text, and no other user message;
    journal-agrees      for every call, the journal's answer is the thread's;
    finished            the thread ends with the agent's reply.
    """
    out: list[tuple[str, str]] = []
    record = store.load(thread_id)
    messages: list[dict[str, Any]] = record.messages if record is not None else []
    rows = ledger.rows(thread_id)

    per_call = Counter(c for _, c, _ in rows)
    per_order = Counter(o for _, _, o in rows)
    out += [("at-most-once", f"call {c} charged {n} times") for c, n in per_call.items() if n > 1]
    out += [("at-most-once", f"order {o} charged {n} times") for o, n in per_order.items() if n > 1]

    calls: dict[str, dict[str, Any]] = {}
    for m in messages:
        if m.get("role") == "assistant":
            for tc in m.get("toolCalls") or ():
                calls[tc["id"]] = tc
    answers: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for m in messages:
        if m.get("role") == "tool":
            answers[m.get("toolCallId", "")].append(m)
    for cid in calls:
        n = len(answers.get(cid, ()))
        if n == 0:
            out.append(("answered-once", f"call {cid} is dangling: no tool message answers it"))
        elif n > 1:
            texts = [a.get("content") for a in answers[cid]]
            out.append(("answered-once", f"call {cid} is answered {n} times: {texts}"))
    out += [
        ("answered-once", f"tool message for {cid} answers no call of the thread")
        for cid in answers
        if cid not in calls
    ]

    charged = set(per_call)
    for cid in calls:
        if not answers.get(cid):
            continue
        message = answers[cid][0]
        found = store.lookup(thread_id, cid)
        journal = found.answer if found is not None else None
        if _is_unknown(message):
            if found is None or found.claim is not Claim.UNKNOWN:
                out.append(
                    (
                        "executed-iff-effect",
                        f"call {cid} is answered 'outcome unknown' but the journal holds "
                        f"{found.claim.value if found else 'nothing'} for it "
                        f"({'charged' if cid in charged else 'not charged'})",
                    )
                )
            continue
        if _says_executed(message) != (cid in charged):
            out.append(
                (
                    "executed-iff-effect",
                    f"call {cid}: the thread says {message.get('content')!r} "
                    f"(error {message.get('error')!r}) and the card was "
                    f"{'charged' if cid in charged else 'not charged'}",
                )
            )
        if journal is None:
            state = found.claim.value if found is not None else "no record"
            out.append(
                (
                    "journal-agrees",
                    f"call {cid}: the thread says {message.get('content')!r}, the journal "
                    f"holds no answer ({state})",
                )
            )
        else:
            expected = Answer.from_json(journal).tool_message(message["id"])
            if (expected.get("content"), expected.get("error")) != (
                message.get("content"),
                message.get("error"),
            ):
                out.append(
                    (
                        "journal-agrees",
                        f"call {cid}: the thread says {message.get('content')!r}, the journal "
                        f"{journal.get('content')!r}",
                    )
                )
    out += [
        ("executed-iff-effect", f"call {cid} was charged and the thread never mentions it")
        for cid in charged
        if cid not in calls
    ]

    scripted = {}
    for step in scenario.steps:
        for s in (step, step.nested):
            if s is not None and s.mid is not None:
                scripted[s.mid] = s.text
    users = Counter(m.get("id") for m in messages if m.get("role") == "user")
    for mid in scripted:
        if users.get(mid, 0) != 1:
            out.append(("user-messages", f"user message {mid} is there {users.get(mid, 0)} times"))
    for m in messages:
        if m.get("role") == "user":
            if m.get("id") not in scripted:
                out.append(("user-messages", f"a user message nobody sent: {m.get('id')}"))
            elif m.get("content") != scripted[m["id"]]:
                out.append(("user-messages", f"user message {m['id']} reads {m.get('content')!r}"))

    if not messages or messages[-1].get("role") != "assistant":
        last = messages[-1].get("role") if messages else "nothing"
        out.append(("finished", f"the thread ends with {last}, not the agent's reply"))
    return out


def _needs_carry(store: Any, thread_id: str) -> bool:
    record = store.load(thread_id)
    if record is None:
        return False
    messages = record.messages
    answered = {m.get("toolCallId") for m in messages if m.get("role") == "tool"}
    dangling = any(
        tc["id"] not in answered
        for m in messages
        if m.get("role") == "assistant"
        for tc in m.get("toolCalls") or ()
    )
    return dangling or (bool(messages) and messages[-1].get("role") in ("user", "tool"))


# -- running a trial ---------------------------------------------------------------------


async def _trial(trial: Trial) -> tuple[list[tuple[str, str]], bool]:
    """The scenario, then (if the thread is not finished) a fresh fault-free session's
    ``send()`` to carry it to its end, then the invariants."""
    broken: list[tuple[str, str]] = []
    try:
        await trial.run()
    except _Broken as exc:
        broken.append((exc.invariant, str(exc)))
    except Exception as exc:  # not a StoreError: the recipe has no answer to it
        broken.append(("unexpected-error", f"{type(exc).__name__}: {exc}"))
    carried = False
    checker = trial.backend.open_sync()
    try:
        if not broken and _needs_carry(checker, trial.thread_id):
            carried = True
            trial.injector.fault = None
            trial.injector.where = "carry"
            try:
                await trial.perform(Step("A", None, None), fresh=True)
            except Exception as exc:
                broken.append(("unexpected-error", f"carrying on: {type(exc).__name__}: {exc}"))
        problems = broken + check(trial.scenario, checker, trial.ledger, trial.thread_id)
    finally:
        if trial.backend.durable:
            checker.close()
        await trial.close()
    return problems, carried


def run_trial(
    scenario: Scenario,
    backend: Backend,
    *,
    url: str,
    face: Face,
    habit: Habit,
    fault: Fault | None,
    ledger: Ledger,
    op_name: str = "",
) -> TrialResult:
    """One trial, in this process; its violations named by scenario, backend, k, kind."""
    thread_id = f"{scenario.name}-{uuid.uuid4().hex[:12]}"
    trial = Trial(
        scenario,
        backend,
        url=url,
        face=face,
        habit=habit,
        fault=fault,
        thread_id=thread_id,
        ledger=ledger,
    )
    problems, carried = asyncio.run(_trial(trial))
    return _result(trial, problems, carried, fault, op_name)


def _result(
    trial: Trial,
    problems: list[tuple[str, str]],
    carried: bool,
    fault: Fault | None,
    op_name: str,
) -> TrialResult:
    violations = [
        Violation(
            trial.scenario.name,
            trial.backend.name,
            trial.face,
            trial.habit,
            fault.index if fault is not None else None,
            fault.kind if fault is not None else "none",
            op_name,
            invariant,
            detail,
        )
        for invariant, detail in problems
    ]
    return TrialResult(
        ops=trial.injector.count,
        violations=violations,
        fired=trial.injector.fired,
        errors=trial.errors,
        deaths=trial.deaths,
        carried=carried,
        op_log=[(op.index, op.method, op.where) for op in trial.injector.ops],
    )


# -- the SIGKILL sample: a worker subprocess ---------------------------------------------


def sigkill_trial(
    scenario: Scenario,
    backend: Backend,
    *,
    url: str,
    face: Face,
    index: int,
    op_name: str,
    workdir: Path,
    after: bool = False,
) -> TrialResult:
    """A real ``SIGKILL``: a worker subprocess runs the scenario and kills itself as
    store operation ``index`` is about to be sent (``after``: right after it
    committed); this process then recovers —
    a new store object, a new session, the message in flight sent again — and
    checks the invariants. The ledger is a SQLite file both processes write."""
    import subprocess

    thread_id = f"{scenario.name}-kill-{uuid.uuid4().hex[:12]}"
    ledger_path = str(workdir / "ledger.sqlite")
    flags_path = str(workdir / f"{thread_id}.flags")
    spec = {
        "scenario": scenario.name,
        "backend": backend.name,
        "target": backend.target,
        "url": url,
        "face": face,
        "index": index,
        "kind": "sigkill-after" if after else "sigkill",
        "thread_id": thread_id,
        "ledger": ledger_path,
        "flags": flags_path,
    }
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "tests.helpers.fault_campaign", json.dumps(spec)],
        cwd=root,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    ledger = Ledger(ledger_path)
    trial = Trial(
        scenario,
        backend,
        url=url,
        face=face,
        habit="new",
        fault=None,
        thread_id=thread_id,
        ledger=ledger,
        flags_path=flags_path,
    )
    problems: list[tuple[str, str]] = []
    if done.returncode != -9:
        problems.append(
            (
                "sigkill",
                f"the worker was to die at op {index}, and exited {done.returncode}: "
                f"{done.stderr[-800:]}",
            )
        )
    else:
        trial.deaths = 1
    # the recovery: the step in flight, then the rest, in a new process (this one)
    problems_after, carried = asyncio.run(_trial(trial))
    ledger.close()
    kind: FaultKind = "sigkill-after" if after else "sigkill"
    result = _result(trial, problems + problems_after, carried, Fault(index, kind), op_name)
    result.fired = done.returncode == -9
    return result


def _worker(spec: dict[str, Any]) -> None:
    backend = Backend(spec["backend"], spec["target"])
    ledger = Ledger(spec["ledger"])
    trial = Trial(
        SCENARIOS[spec["scenario"]],
        backend,
        url=spec["url"],
        face=spec["face"],
        habit="new",
        fault=Fault(spec["index"], spec["kind"]),
        thread_id=spec["thread_id"],
        ledger=ledger,
        flags_path=spec["flags"],
    )

    async def main() -> None:
        try:
            await trial.run()
        finally:
            await trial.close()

    asyncio.run(main())


@contextmanager
def agent_server() -> Iterator[AgentServer]:
    server = AgentServer().start()
    try:
        yield server
    finally:
        server.stop()


if __name__ == "__main__":
    _worker(json.loads(sys.argv[1]))
