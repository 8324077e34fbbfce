"""The resumable binding's fault campaign (issue #38's acceptance), the engine.

One conversation — a run with an agent-side tool and a frontend tool, then its
continuation — is driven by a :class:`~agui_tools.transport._session.Session` on a
resumable :class:`~agui_tools.transport._client.AgentClient`, once uncut (the
baseline), then once per event boundary with the connection cut right after that
boundary (:mod:`tests.helpers.cutting_proxy`). Each trial is held to the baseline:
the events the pipeline read (none lost, none twice, in order), the thread
(messages, the runs' statuses), and the agent-side tool executed exactly once.
Ids derive from the thread (:func:`~tests.helpers.resumable_server.two_tool_agent`)
and run ids are numbered in order of appearance, so two trials compare equal.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from agui_tools.transport._client import AgentClient, RejoinPolicy
from agui_tools.transport._session import Session
from tests.helpers.cutting_proxy import Cutter, cutting_proxy
from tests.helpers.resumable_server import confirm

POLICY = RejoinPolicy(first_delay=0.02, max_delay=0.2, attempts=8, deadline=30)


class RecordingClient(AgentClient):
    """A resumable client that keeps every frame it hands the pipeline."""

    def __init__(self, url: str) -> None:
        super().__init__(url, resumable=True, rejoin=POLICY)
        self.delivered: list[str] = []
        self.rejoins = 0  # over the conversation's runs

    async def frames(self, run_input: Mapping[str, Any]) -> AsyncIterator[list[Any]]:
        try:
            async for frames in super().frames(run_input):
                self.delivered += frames
                yield frames
        finally:
            self.rejoins += self.current.rejoins if self.current is not None else 0


@dataclass
class Outcome:
    events: list[str]
    thread: str
    statuses: list[str]
    rejoins: int


@dataclass
class Trial:
    point: int
    lost: int = 0
    duplicated: int = 0
    executions: int = 0
    rejoins: int = 0
    problems: list[str] = field(default_factory=list)


def _normal(text: str, thread_id: str) -> str:
    """The thread's id as ``T``; run ids (any ``run-…``) numbered by appearance."""
    text = text.replace(thread_id, "T")
    runs: dict[str, str] = {}
    return re.sub(r"run-[0-9a-f-]{36}", lambda m: runs.setdefault(m[0], f"R{len(runs) + 1}"), text)


async def converse(url: str, thread_id: str) -> Outcome:
    client = RecordingClient(url)
    try:
        session = Session(client, thread_id=thread_id)
        session.tool(confirm)
        await session.send("order two", message_id=thread_id + "-u")
        conv = session.conversation
        assert conv is not None
        rejoins = client.rejoins
        thread = orjson.dumps({"messages": conv.messages, "state": conv.state}).decode()
        return Outcome(
            events=[_normal(e, thread_id) for e in client.delivered],
            thread=_normal(thread, thread_id),
            statuses=[r.status for r in conv.runs],
            rejoins=rejoins,
        )
    finally:
        await client.aclose()


def judge(trial: Trial, baseline: Outcome, got: Outcome, executions: int) -> Trial:
    want, have = Counter(baseline.events), Counter(got.events)
    trial.lost = sum((want - have).values())
    trial.duplicated = sum((have - want).values())
    trial.executions = executions
    trial.rejoins = got.rejoins
    if got.events != baseline.events and not (trial.lost or trial.duplicated):
        trial.problems.append("the events came in another order")
    if got.thread != baseline.thread:
        trial.problems.append("the thread differs from the uncut run's")
    if got.statuses != baseline.statuses:
        trial.problems.append(f"runs ended {got.statuses}, not {baseline.statuses}")
    if executions != 1:
        trial.problems.append(f"the agent-side tool ran {executions} times")
    return trial


def campaign(
    port: int,
    executions: dict[str, int],
    *,
    name: str,
    later_port: int | None = None,
    points: int | None = None,
    mid_event: int = 0,
) -> tuple[Outcome, list[Trial]]:
    """The baseline, then one trial per event boundary of it (cut right after it).

    ``later_port``: rejoins (every connection after the first) go to this replica.
    ``points``: how many boundaries to cut at (``None``: all of them).
    ``mid_event``: cut that many bytes into the event after each boundary instead (a
    torn event, which the rejoin must send again whole).
    """
    base_id = f"{name}-base"
    baseline = asyncio.run(converse(f"http://127.0.0.1:{port}/agent", base_id))
    trials = []
    last = len(baseline.events) if points is None else points
    for point in range(1, last + 1):
        thread_id = f"{name}-cut-{point}"
        cutter = Cutter(cut_at=point, mid_event=mid_event)
        with cutting_proxy(port, cutter, later_port) as url:
            got = asyncio.run(converse(f"{url}/agent", thread_id))
        trial = judge(Trial(point), baseline, got, executions.get(thread_id, 0))
        if cutter.cuts != 1:
            trial.problems.append(f"the proxy cut {cutter.cuts} times, not once")
        trials.append(trial)
    return baseline, trials


def flaky(
    port: int, executions: dict[str, int], baseline: Outcome, *, name: str, every: int
) -> tuple[Trial, int]:
    """One conversation over a link that drops every connection after ``every`` events
    of its own (rejoins included): the trial, and how many cuts it took."""
    thread_id = f"{name}-flaky-{every}"
    cutter = Cutter(every=every)
    with cutting_proxy(port, cutter) as url:
        got = asyncio.run(converse(f"{url}/agent", thread_id))
    return judge(Trial(-every), baseline, got, executions.get(thread_id, 0)), cutter.cuts
