"""A resume that was sent is not sent twice (issue #22): before a resume run is sent
its record is written to the journal with its claim (entries and run id, exactly once
by the store) and answered when that run's save is durable. A record still open when
the thread is picked up — a crash after sending and before saving, another replica
sending it now — is a resume that may have reached the agent: it is not sent again
unless the application's ``resume_unknown=`` check says so, and then under the same
run id with the same entries.

The agent (tests/helpers/cli_agents.py, ``scripted``) appends every resume entry it
receives to a file: the count is the exactly-once check. Real SQLite files; the
restart tests kill a real separate process (SIGKILL) and start another."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from agui_tools._errors import StaleThread, StoreError, StoreWriteFailed, UsageError
from agui_tools.app import SentResume, SQLiteStore
from agui_tools.transport import (
    Approval,
    ResumeOutcomeUnknown,
    SyncAgentClient,
    SyncSession,
)
from tests.helpers import interrupts
from tests.helpers.faults import KINDS, Fault, FaultyStore, Injector, ProcessDied
from tests.helpers.interrupts import REFUND, call, make

WORKER = Path(__file__).resolve().parents[1] / "helpers" / "resume_worker.py"


# the interrupting agent, the two faces and the agent's resume log: the same fixtures
# as the interrupt tests', shared rather than copied
url = interrupts.url
face = interrupts.face
log = interrupts.log
received = interrupts.resumes


APPROVED = {"status": "resolved", "payload": {"approved": True}}


class _FailsTheResumeSave(SQLiteStore):
    """The save of the run a resume started fails before it is written (a full disk):
    the resume reached the agent, and no run of it is in the store."""

    def save_run(self, thread_id: str, version: int, *args: Any, **kwargs: Any) -> int:
        if version >= 1:
            raise StoreWriteFailed("injected: the disk is full", operation="save_run")
        return super().save_run(thread_id, version, *args, **kwargs)


def test_two_sessions_on_one_store_resume_once(
    url: str, face: str, log: Path, open_durable_store: Any
) -> None:
    """Replica A and replica B both show the interrupt; A resumes it; B's resume is
    refused before anything is sent (the thread moved on: reload), and after the
    reload there is nothing left to resume. SQLite, PostgreSQL, and the async
    PostgreSQL store (seen through tests/helpers/async_view.py)."""
    a = make(url, face, store=open_durable_store(), thread_id="t-two")
    assert call(a, "send", REFUND).status == "interrupt"
    b = make(url, face, store=open_durable_store(), thread_id="t-two")
    call(b, "open")
    (interrupt,) = b.interrupts
    assert call(a, "resume", {interrupt.id: Approval.approve()}).status == "success"
    with pytest.raises(StaleThread):
        call(b, "resume", {interrupt.id: Approval.approve()})
    with pytest.raises(UsageError, match="nothing to resume"):
        call(b, "resume", {interrupt.id: Approval.approve()})
    assert [e["status"] for e in received(log)] == ["resolved"]


def test_a_resume_sent_and_not_saved_is_not_sent_again_blindly(
    url: str, face: str, log: Path, tmp_path: Path
) -> None:
    """The resume run streamed, its save failed: a retry — on the same session, which
    reloads, or on a new one — does not send it again; the check, given, sends the
    recorded entries again under the recorded run id, once."""
    db = tmp_path / "threads.db"
    first = make(url, face, store=_FailsTheResumeSave(db), thread_id="t-lost")
    assert call(first, "send", REFUND).status == "interrupt"
    (interrupt,) = first.interrupts
    with pytest.raises(StoreWriteFailed):
        call(first, "resume", {interrupt.id: Approval.approve()})
    assert len(received(log)) == 1  # it reached the agent
    first.client = type(first.client)(first.client.url)  # a fresh client for the new loop
    with pytest.raises(ResumeOutcomeUnknown, match="INT-7") as lost:
        call(first, "resume", {interrupt.id: Approval.approve()})
    assert lost.value.sent.resume == [{"interruptId": interrupt.id, **APPROVED}]
    assert lost.value.sent.interrupted_run_id is not None
    declined: list[SentResume] = []
    second = make(
        url,
        face,
        store=SQLiteStore(db),
        thread_id="t-lost",
        resume_unknown=lambda s: bool(declined.append(s)),  # "it did reach the agent"
    )
    with pytest.raises(ResumeOutcomeUnknown):
        call(second, "send", "and now?")  # a new message does not slip past it either
    assert len(received(log)) == 1
    assert [d.run_id for d in declined] == [lost.value.sent.run_id]
    seen: list[SentResume] = []
    third = make(
        url,
        face,
        store=SQLiteStore(db),
        thread_id="t-lost",
        resume_unknown=lambda s: bool(seen.append(s)) or True,
    )
    result = call(third, "resume", {interrupt.id: Approval.decline()})  # not asked again
    assert result.status == "success" and result.run_id == lost.value.sent.run_id
    assert received(log) == [{"interruptId": interrupt.id, **APPROVED}] * 2
    fourth = make(url, face, store=SQLiteStore(db), thread_id="t-lost")
    with pytest.raises(UsageError, match="nothing to resume"):
        call(fourth, "resume", {interrupt.id: Approval.approve()})
    assert len(seen) == 1 and len(received(log)) == 2


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The store the processes share: a SQLite file, or a PostgreSQL database."""
    if request.param == "postgres":
        return "postgres:" + str(request.getfixturevalue("postgres_dsn"))
    return f"sqlite:{tmp_path / 'threads.db'}"


def _worker(url: str, where: str, mode: str) -> tuple[int, Mapping[str, Any]]:
    proc = subprocess.run(
        [sys.executable, str(WORKER), url, where, mode],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == -signal.SIGKILL or lines, proc.stderr[-3000:]
    return proc.returncode, (json.loads(lines[-1]) if lines else {})


def test_the_process_dies_while_the_user_decides_and_a_new_one_resumes_once(
    url: str, log: Path, where: str
) -> None:
    """#22's restart acceptance: killed inside the interrupt handler; a new process on
    the same store resumes the interrupt, once; a third has nothing to resume."""
    rc, _ = _worker(url, where, "decide-die")
    assert rc == -signal.SIGKILL and received(log) == []
    rc, out = _worker(url, where, "resume")
    assert rc == 0 and out["status"] == "success", out
    assert "resumed" in out["reply"]
    rc, out = _worker(url, where, "resume")  # carries the thread on: no resume is sent again
    assert rc == 0 and out["status"] == "success", out
    assert [e["status"] for e in received(log)] == ["resolved"]


def test_the_process_dies_after_sending_the_resume_and_it_is_not_sent_twice(
    url: str, log: Path, where: str
) -> None:
    """Killed after the resume run streamed, as its run was about to be saved: a new
    process does not send it again (ResumeOutcomeUnknown, INT-7); one whose check says
    "send it again" sends the recorded resume under the recorded run id, once."""
    rc, _ = _worker(url, where, "send-die")
    assert rc == -signal.SIGKILL and len(received(log)) == 1
    rc, out = _worker(url, where, "resume")
    assert rc == 0 and out.get("error") == "ResumeOutcomeUnknown", out
    assert out["rule"] == "INT-7" and len(received(log)) == 1
    rc, out = _worker(url, where, "resume-again")
    assert rc == 0 and out["status"] == "success", out
    assert out["seen"] == [{"run_id": out["run_id"], "resume": out["seen"][0]["resume"]}]
    rc, out = _worker(url, where, "resume-again")
    assert rc == 0 and out["status"] == "success" and out["seen"] == [], out
    assert len(received(log)) == 2 and received(log)[0] == received(log)[1]


# -- the resume path's fault points: every store operation, failed every way --------------


def _resume_trial(
    url: str, opener: Any, thread: str, log: Path, fault: Fault | None
) -> tuple[Injector, str]:
    """One trial (the fault campaign's habit, tests/helpers/faults.py): a fault-free
    process leaves the thread interrupted; a process whose store operations are
    numbered answers it, with ``fault`` injected; then fresh fault-free processes
    recover as the docs say — send again, and send a lost resume again only when
    the ``resume_unknown`` check says so. Returns the injector and how it ended."""
    first = opener()
    with SyncAgentClient(url) as client:
        assert SyncSession(client, store=first, thread_id=thread).send(REFUND).status == (
            "interrupt"
        )
    first.close()
    injector = Injector(fault)
    faulty = FaultyStore(opener(), injector)
    approve = lambda i: Approval.approve()  # noqa: E731
    how = "clean"
    try:
        with SyncAgentClient(url) as client:
            SyncSession(client, store=faulty, thread_id=thread, on_interrupt=approve).send()
    except (StoreError, ProcessDied, ResumeOutcomeUnknown) as exc:
        how = type(exc).__name__
    faulty.inner.close()
    resent = False
    for _ in range(4):  # the recovery converges within a few sends
        store = opener()
        try:
            with SyncAgentClient(url) as client:
                session = SyncSession(
                    client,
                    store=store,
                    thread_id=thread,
                    on_interrupt=approve,
                    resume_unknown=lambda s, again=resent: again,
                )
                session.send()
                assert session.conversation is not None and not session.interrupts
                break
        except ResumeOutcomeUnknown:
            assert len(received(log)) <= 1, "a resume was sent twice without the check"
            resent = True  # the operator established it: send it again, once
        except StaleThread:
            continue
        finally:
            store.close()
    else:
        raise AssertionError(f"no recovery after {fault}")
    got = received(log)
    if resent:
        assert len(got) in (1, 2), got  # the check said "send it again": at most once more
    else:
        assert len(got) == 1, (fault, how, got)  # exactly once
    assert all(e == {"interruptId": got[0]["interruptId"], **APPROVED} for e in got)
    return injector, how


@pytest.fixture(params=["sqlite", "postgres"])
def durable(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Opens the one store again for each "process": a SQLite file or a PostgreSQL
    database (the campaign's two durable backends)."""
    if request.param == "postgres":
        from agui_tools.app import PostgresStore

        dsn = str(request.getfixturevalue("postgres_dsn"))
        return lambda: PostgresStore(dsn, max_size=2, timeout=10)
    return lambda: SQLiteStore(tmp_path / "threads.db")


def test_every_fault_point_of_the_resume_path_resumes_exactly_once(
    url: str, log: Path, durable: Any
) -> None:
    """Every store operation of a resume — the record lookup, the claim with its record,
    the resume run's save, the record's answer — failed before it reached the store,
    after it committed, and by the process dying before or after it: the interrupt is
    resumed exactly once (twice only when the ``resume_unknown`` check asked for it,
    after a crash that may have sent it), and the thread is never left interrupted."""
    counted, _ = _resume_trial(url, durable, "t-count", log, None)
    points = [op.index for op in counted.ops]
    methods = [op.method for op in counted.ops]
    assert {"lookup", "claim", "save_run", "finish"} <= set(methods), methods
    endings: dict[str, int] = {}
    for index in points:
        for kind in KINDS:
            log.unlink(missing_ok=True)
            injector, how = _resume_trial(
                url, durable, f"t-{index}-{kind}", log, Fault(index, kind)
            )
            assert injector.fired, (index, kind)
            endings[how] = endings.get(how, 0) + 1
    assert sum(endings.values()) == len(points) * len(KINDS) >= 20, endings
    print(f"resume path: {methods} × {KINDS}: {endings}")


def test_on_an_async_store_the_record_is_awaited_on_the_loop_and_a_lost_resume_is_kept(
    url: str, log: Path
) -> None:
    """The async face over an async store (the AsyncPostgresStore path, without a
    server): the claim, with its record, is awaited on the event loop, before the resume
    is sent; a save that fails leaves the record open, and the next session refuses to
    send the resume again until its check says so."""
    from agui_tools.transport import AgentClient, Session
    from tests.helpers.async_store import AsyncMemoryStore

    store = AsyncMemoryStore()

    async def main() -> None:
        async with AgentClient(url) as client:
            first = Session(client, store=store, thread_id="t-async")
            assert (await first.send(REFUND)).status == "interrupt"
            (interrupt,) = first.interrupts
            store.calls.clear()
            store.fail["save_run"] = StoreWriteFailed("injected: the disk is full")
            with pytest.raises(StoreWriteFailed):
                await first.resume({interrupt.id: Approval.approve()})
            methods = store.methods
            assert "record_decision" not in methods  # the record is the claim's own write
            assert methods.index("claim") < methods.index("save_run")  # claimed, then sent
            assert len(received(log)) == 1
            del store.fail["save_run"]
            again = Session(client, store=store, thread_id="t-async")
            with pytest.raises(ResumeOutcomeUnknown):
                await again.resume({interrupt.id: Approval.approve()})
            later = Session(client, store=store, thread_id="t-async", resume_unknown=lambda s: True)
            assert (await later.send()).status == "success"
        assert len(store.threads) == 1  # every store call on the loop's thread

    asyncio.run(main())
    assert len(received(log)) == 2
