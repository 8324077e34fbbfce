"""The fault campaign (issue #21, item 5): every store operation of every scenario,
failed in every way, one at a time — then recovered as docs/deployment.md says
and judged.

For each scenario of tests/helpers/fault_campaign.py (one replica; two replicas on one
thread, faults on either; restore after a crash; decline; a failing handler; a
retry with ``message_id``; two calls in one run) a fault-free run counts the
store operations K of the faulty replica; then for every k in 0..K-1 and every
kind (tests/helpers/faults.py: ``before``, ``after``, ``die``, ``die-after``) a
trial injects that one fault at operation k, recovers — ``send(text,
message_id=mid)`` again on the same session or on a new one, a new process after
a death — and checks the invariants (``fault_campaign.check``): each charge at most once,
every call answered exactly once, "executed" iff the card was charged (else the
documented "outcome unknown"), no dangling call, each user message once, the
thread agreeing with the journal, the agent having the last word. A sample of
deaths is a real ``SIGKILL`` of a worker subprocess, as an operation is about to
be sent or right after it committed (the table's ``sigkill`` column counts both).

Bounded (``make test``): memory and SQLite exhaustive over (scenario, k, kind),
the session face and the recovery habit alternating from one fault point to the
next; PostgreSQL (sync and async stores) a deterministic stratified sample.
``CHAOS=full`` (``make chaos``): every fault point with both faces and both habits
on every backend, and a larger SIGKILL sample. ``CHAOS_SEED`` changes the sample;
``CHAOS_REPORT=path`` also writes the table there. A violation names scenario,
backend, face, habit, k, the operation, the fault kind and the invariant.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agui_tools._errors import StoreOutcomeUnknown, StoreReadFailed, StoreWriteFailed
from agui_tools.app._calls import Answer
from agui_tools.app._consent import fingerprint
from agui_tools.app._journal import Claim, JournalKey
from agui_tools.app._store import MemoryStore, encode_snapshot, is_async_store

from ..helpers.async_store import AsyncMemoryStore
from ..helpers.fault_campaign import (
    SCENARIOS,
    AgentServer,
    Backend,
    Face,
    Habit,
    Ledger,
    Scenario,
    Step,
    TrialResult,
    Violation,
    agent_server,
    check,
    run_trial,
    sigkill_trial,
)
from ..helpers.faults import (
    KINDS,
    AsyncFaultyStore,
    Fault,
    FaultKind,
    FaultyStore,
    Injector,
    ProcessDied,
)

FULL = os.environ.get("CHAOS", "").strip().lower() == "full"
SEED = int(os.environ.get("CHAOS_SEED", "21"))
COMBOS: tuple[tuple[Face, Habit], ...] = (
    ("sync", "same"),
    ("async", "new"),
    ("sync", "new"),
    ("async", "same"),
)
"""(session face, recovery habit): ``same`` retries on the session that failed (it
reloads itself), ``new`` on a new session on the same store and thread."""
PG_SAMPLE = 6
"""Bounded: fault points per (scenario, kind) on each PostgreSQL store."""
SIGKILLS = 48 if FULL else 3
"""SIGKILL trials per durable backend (every third one right after the operation
committed, the others as it is about to be sent)."""
SHOWN = 25


@dataclass
class Tally:
    """What the campaign covered and found, for the table printed at the end."""

    points: Counter[tuple[str, str]] = field(default_factory=Counter)
    violated: Counter[tuple[str, str]] = field(default_factory=Counter)
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    by_invariant: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    baselines: Counter[str] = field(default_factory=Counter)
    baselines_violated: Counter[str] = field(default_factory=Counter)
    deaths: int = 0
    carried: int = 0

    def add(self, backend: str, kind: str, result: TrialResult) -> None:
        self.points[backend, kind] += 1
        self.errors.update(result.errors)
        self.deaths += result.deaths
        self.carried += result.carried
        if result.violations:
            self.violated[backend, kind] += 1
        for v in result.violations:
            self.by_invariant[v.scenario, v.habit, kind, v.invariant] += 1

    def baseline(self, backend: str, result: TrialResult) -> None:
        """A fault-free counting run: not a fault point, but its violations count too."""
        self.baselines[backend] += 1
        for v in result.violations:
            self.by_invariant[v.scenario, v.habit, "none", v.invariant] += 1
        if result.violations:
            self.baselines_violated[backend] += 1

    def table(self) -> list[str]:
        kinds = [*KINDS, "sigkill"]
        backends = sorted({b for b, _ in self.points}, key=_backend_order)
        head = f"{'backend':<16}" + "".join(f"{k:>12}" for k in kinds)
        head += f"{'points':>9}{'violated':>10}{'seconds':>9}"
        lines = [
            f"fault campaign ({'full' if FULL else 'bounded'}, seed {SEED}): fault points "
            "covered / trials with a violation",
            head,
        ]
        for b in backends:
            cells = "".join(
                f"{self._cell(b, k):>12}" if self.points[b, k] else f"{'-':>12}" for k in kinds
            )
            total = sum(self.points[b, k] for k in kinds)
            bad = sum(self.violated[b, k] for k in kinds)
            lines.append(f"{b:<16}{cells}{total:>9}{bad:>10}{self.seconds[b]:>9.1f}")
        total = sum(self.points.values())
        bad = sum(self.violated.values())
        lines.append(f"{'all':<16}{'':>{12 * len(kinds)}}{total:>9}{bad:>10}")
        runs = sum(self.baselines.values())
        lines.append(
            f"fault-free counting runs: {runs}, {sum(self.baselines_violated.values())} with a "
            f"violation; store errors recovered from: {dict(self.errors)}; process deaths: "
            f"{self.deaths}; threads carried on by a final send(): {self.carried}"
        )
        if self.by_invariant:
            lines.append("violations by (scenario, habit, kind, invariant):")
            lines += [f"  {n:5d}  {key}" for key, n in sorted(self.by_invariant.items())]
        return lines

    def _cell(self, backend: str, kind: str) -> str:
        return f"{self.points[backend, kind]}/{self.violated[backend, kind]}"


def _backend_order(name: str) -> int:
    order = ["memory", "sqlite", "postgres", "postgres-async", "sqlite-kill", "postgres-kill"]
    return order.index(name) if name in order else len(order)


@pytest.fixture(scope="module")
def agent() -> Iterator[AgentServer]:
    with agent_server() as server:
        yield server


@pytest.fixture(scope="module")
def tally(request: pytest.FixtureRequest) -> Iterator[Tally]:
    found = Tally()
    yield found
    lines = found.table()
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")
        for line in lines:
            reporter.write_line(line)
    path = os.environ.get("CHAOS_REPORT")
    if path:
        Path(path).write_text("\n".join(lines) + "\n")
        Path(path).with_suffix(".json").write_text(
            json.dumps(
                {
                    "full": FULL,
                    "seed": SEED,
                    "points": {f"{b}/{k}": n for (b, k), n in found.points.items()},
                    "violated": {f"{b}/{k}": n for (b, k), n in found.violated.items()},
                    "seconds": dict(found.seconds),
                    "by_invariant": {"/".join(k): n for k, n in found.by_invariant.items()},
                },
                indent=1,
            )
        )


def _backend(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> Backend:
    if name == "memory":
        return Backend("memory")
    if name == "sqlite":
        return Backend("sqlite", str(tmp_path / "chaos.sqlite"))
    backend = Backend(name, request.getfixturevalue("postgres_dsn"))
    backend.prepare()
    return backend


def _combos(backend: Backend) -> tuple[tuple[Face, Habit], ...]:
    """The (face, habit) pairs a backend runs: the async store has only the async face."""
    return tuple(c for c in COMBOS if not backend.is_async or c[0] == "async")


@dataclass(frozen=True)
class Point:
    scenario: Scenario
    face: Face
    habit: Habit
    k: int
    kind: FaultKind
    op: str


def _plan(backend: Backend, url: str, tally: Tally, violations: list[Violation]) -> list[Point]:
    """Count K per scenario and (face, habit) with a fault-free run; return the fault
    points to try: all of them in full mode; in bounded mode each (scenario, k, kind)
    once, its face and habit alternating — every one of them on memory and SQLite, a
    stratified sample of ``PG_SAMPLE`` per (scenario, kind) on PostgreSQL."""
    combos = _combos(backend)
    counted: dict[tuple[str, Face, Habit], TrialResult] = {}
    for scenario in SCENARIOS.values():
        for face, habit in combos:
            base = run_trial(
                scenario, backend, url=url, face=face, habit=habit, fault=None, ledger=Ledger()
            )
            counted[scenario.name, face, habit] = base
            violations += base.violations
            tally.baseline(backend.name, base)
    points: list[Point] = []
    rng = random.Random(f"{SEED}/{backend.name}")
    for scenario in SCENARIOS.values():
        for n, kind in enumerate(KINDS):
            if FULL:
                chosen = [
                    (face, habit, k)
                    for face, habit in combos
                    for k in range(counted[scenario.name, face, habit].ops)
                ]
            else:
                chosen = []
                most = max(b.ops for (s, _, _), b in counted.items() if s == scenario.name)
                for k in range(most):
                    face, habit = combos[(k + n) % len(combos)]
                    if k < counted[scenario.name, face, habit].ops:
                        chosen.append((face, habit, k))
                if backend.name.startswith("postgres") and len(chosen) > PG_SAMPLE:
                    chosen = sorted(rng.sample(chosen, PG_SAMPLE), key=lambda c: c[2])
            for face, habit, k in chosen:
                op = counted[scenario.name, face, habit].op_log[k][1]
                points.append(Point(scenario, face, habit, k, kind, op))
    return points


def _report(violations: list[Violation]) -> str:
    counts = Counter((v.scenario, v.habit, v.kind, v.invariant) for v in violations)
    lines = [f"{len(violations)} violation(s) of the store's recovery contract:"]
    lines += [f"  {n:4d} × {key}" for key, n in sorted(counts.items())]
    lines += ["first ones:"] + [f"  {v}" for v in violations[:SHOWN]]
    return "\n".join(lines)


@pytest.mark.slow
@pytest.mark.timeout(0 if FULL else 300)
@pytest.mark.run_error("the model is overloaded")  # the retry-message-id scenario's agent
@pytest.mark.parametrize("backend_name", ["memory", "sqlite", "postgres", "postgres-async"])
def test_every_store_fault_is_recovered_from_by_the_documented_recipe(
    backend_name: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    agent: AgentServer,
    tally: Tally,
) -> None:
    started = time.monotonic()
    backend = _backend(backend_name, tmp_path, request)
    violations: list[Violation] = []
    points = _plan(backend, agent.url, tally, violations)
    unfired = 0
    for p in points:
        result = run_trial(
            p.scenario,
            backend,
            url=agent.url,
            face=p.face,
            habit=p.habit,
            fault=Fault(p.k, p.kind),
            ledger=Ledger(),
            op_name=p.op,
        )
        unfired += not result.fired
        tally.add(backend.name, p.kind, result)
        violations += result.violations
    tally.seconds[backend.name] += time.monotonic() - started
    if violations:
        pytest.fail(_report(violations), pytrace=False)
    # every fault point was reached: the fault-free count and the trials agree
    assert unfired == 0, f"{unfired} of {len(points)} faults were never reached"


@pytest.mark.slow
@pytest.mark.timeout(0 if FULL else 300)
@pytest.mark.run_error("the model is overloaded")
@pytest.mark.parametrize("backend_name", ["sqlite", "postgres", "postgres-async"])
def test_a_real_sigkill_at_a_store_operation_is_recovered_from(
    backend_name: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    agent: AgentServer,
    tally: Tally,
) -> None:
    """A worker subprocess runs the scenario and SIGKILLs itself as operation k is
    about to be sent (or right after it committed); this process recovers (a new store object, a new session, the
    message in flight again) and judges the thread. A deterministic sample of
    (scenario, k), every scenario represented."""
    started = time.monotonic()
    backend = _backend(backend_name, tmp_path, request)
    faces: tuple[Face, ...] = ("async",) if backend.is_async else ("sync", "async")
    counted = {
        (name, face): run_trial(
            s, backend, url=agent.url, face=face, habit="new", fault=None, ledger=Ledger()
        )
        for name, s in SCENARIOS.items()
        for face in faces
    }
    violations = [v for base in counted.values() for v in base.violations]
    for base in counted.values():
        tally.baseline(backend.name, base)
    rng = random.Random(f"{SEED}/kill/{backend.name}")
    names = list(SCENARIOS)
    rng.shuffle(names)
    sample: list[tuple[str, Face, int, bool]] = []
    seen: set[tuple[str, Face, int, bool]] = set()
    for i in range(SIGKILLS):
        name, face, after = names[i % len(names)], faces[i % len(faces)], i % 3 == 2
        left = [k for k in range(counted[name, face].ops) if (name, face, k, after) not in seen]
        if left:
            point = (name, face, rng.choice(left), after)
            seen.add(point)
            sample.append(point)
    for name, face, k, after in sample:
        result = sigkill_trial(
            SCENARIOS[name],
            backend,
            url=agent.url,
            face=face,
            index=k,
            op_name=counted[name, face].op_log[k][1],
            workdir=tmp_path,
            after=after,
        )
        tally.add(backend.name, "sigkill", result)
        violations += result.violations
    tally.seconds[backend.name] += time.monotonic() - started
    if violations:
        pytest.fail(_report(violations), pytrace=False)


# -- the harness itself: the faults do what they say, and the checker can fail -------------


def test_each_fault_kind_does_what_it_says_to_the_store() -> None:
    """``before`` never reaches the store, ``after`` commits then says it may not have,
    ``die``/``die-after`` leave a wrapper that refuses everything from then on; the
    index counts every call of every wrapper sharing the injector."""
    inner = MemoryStore()
    key = JournalKey("t", "c1", "fp")
    answer = {"callId": "c1", "outcome": "executed", "content": "ok"}

    store = FaultyStore(inner, Injector(Fault(0, "before")))
    with pytest.raises(StoreWriteFailed, match="never reached"):
        store.claim(key, tool="charge")
    assert inner.lookup("t", "c1") is None
    with pytest.raises(StoreReadFailed):
        FaultyStore(inner, Injector(Fault(0, "before"))).load("t")

    store = FaultyStore(inner, Injector(Fault(1, "after")))
    assert store.claim(key, tool="charge").claim is Claim.RUN
    with pytest.raises(StoreOutcomeUnknown, match="committed"):
        store.finish(key, answer)
    assert inner.answer_for("t", "c1") == answer  # it did commit
    assert store.injector.count == 2 and store.injector.fired

    shared = Injector(Fault(1, "die-after"))
    first, second = FaultyStore(inner, shared), FaultyStore(inner, shared)
    first.lookup("t", "c1")
    with pytest.raises(ProcessDied):
        second.record_decision({"threadId": "t", "toolCallId": "c2", "approved": True})
    assert len(inner.decisions("t", "c2")) == 1  # committed, then the process died
    with pytest.raises(ProcessDied, match="dead"):
        second.lookup("t", "c1")  # a dead process reaches nothing …
    assert first.lookup("t", "c1") is not None  # … another process still does
    assert [op.method for op in shared.ops] == ["lookup", "record_decision", "lookup"]

    died = FaultyStore(inner, Injector(Fault(0, "die")))
    with pytest.raises(ProcessDied):
        died.settle(JournalKey("t", "c3", "fp"), {**answer, "callId": "c3"})
    assert inner.lookup("t", "c3") is None


def test_the_async_wrapper_faults_the_same_way() -> None:
    async def scenario() -> None:
        inner = AsyncMemoryStore()
        store = AsyncFaultyStore(inner, Injector(Fault(1, "after")))
        assert is_async_store(store) and store.blocking is False
        assert await store.load("t") is None
        with pytest.raises(StoreOutcomeUnknown):
            await store.claim(JournalKey("t", "c1", "fp"), tool="charge")
        assert inner.inner.lookup("t", "c1") is not None

    asyncio.run(scenario())


def _thread(store: MemoryStore, ledger: Ledger, shape: str) -> None:
    """A finished ``one-replica``-like thread (one message, one charge), bent by ``shape``."""
    t, cid, order = "t", "charge-1", "m1"
    args = {"order": order, "cents": 500, "ref": cid}
    done = Answer.executed(cid, "charged 500 cents for m1")
    key = JournalKey(t, cid, fingerprint(args))
    messages: list[dict[str, Any]] = [
        {"id": "m1", "role": "user", "content": "order one"},
        {
            "id": "a1",
            "role": "assistant",
            "content": "Charging.",
            "toolCalls": [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": "charge", "arguments": json.dumps(args)},
                }
            ],
        },
        done.tool_message("r1"),
        {"id": "a2", "role": "assistant", "content": "Done."},
    ]
    journal = done
    charges = 1
    if shape == "dangling":
        del messages[2]
    elif shape == "answered twice":
        messages.insert(3, done.tool_message("r2"))
    elif shape == "said executed, not charged":
        charges = 0
    elif shape == "charged, said declined":
        messages[2] = Answer.declined(cid, "user").tool_message("r1")
        journal = Answer.declined(cid, "user")
    elif shape == "unknown, journal answered":
        messages[2] = Answer.failed(cid, "outcome unknown: it started").tool_message("r1")
    elif shape == "journal disagrees":
        journal = Answer.executed(cid, "charged 700 cents for m1")
    elif shape == "charged twice":
        charges = 2
    elif shape == "a charge nobody mentions":
        ledger.record(t, "charge-0", order + "/0")
    elif shape == "user message twice":
        messages.append({"id": "m1", "role": "user", "content": "order one"})
        messages.append({"id": "a3", "role": "assistant", "content": "Again?"})
    elif shape == "user message lost":
        messages[0] = {"id": "m9", "role": "user", "content": "order one"}
    elif shape == "unfinished":
        del messages[3]
    for _ in range(charges):
        ledger.record(t, cid, order)
    store.claim(key, tool="charge")
    store.finish(key, journal.to_json())
    store.save_run(t, 0, encode_snapshot(messages, None, [], {"status": "success"}))


@pytest.mark.parametrize(
    ("shape", "invariant"),
    [
        ("sound", None),
        ("dangling", "answered-once"),
        ("answered twice", "answered-once"),
        ("said executed, not charged", "executed-iff-effect"),
        ("charged, said declined", "executed-iff-effect"),
        ("unknown, journal answered", "executed-iff-effect"),
        ("journal disagrees", "journal-agrees"),
        ("charged twice", "at-most-once"),
        ("a charge nobody mentions", "executed-iff-effect"),
        ("user message twice", "user-messages"),
        ("user message lost", "user-messages"),
        ("unfinished", "finished"),
    ],
)
def test_the_checker_catches_each_kind_of_violation(shape: str, invariant: str | None) -> None:
    store, ledger = MemoryStore(), Ledger()
    _thread(store, ledger, shape)
    one = Scenario("checked", (Step("A", "order one", "m1"),))
    found = {name for name, _ in check(one, store, ledger, "t")}
    assert found == ({invariant} if invariant else set())
