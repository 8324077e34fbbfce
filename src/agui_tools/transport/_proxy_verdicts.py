"""The proxy's verdict bookkeeping: inputs judged in order, findings told in order.

Apart from the forwarding because it is the one part that knows the judging process's
verdicts arrive late: an input waits for its thread's verdicts still to come, a
finding of a later exchange is held until the earlier verdicts are in, an overdue
stream is judged here instead. A mixin of :class:`~._proxy.ProxyApp`; what watches
the traffic besides the judges is a :class:`ProxyObserver`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from starlette.concurrency import run_in_threadpool

from .._text import guarded_logger
from ..app._watch import InputJudged, ThreadLedger, WatchFinding
from ._judge_pool import VERDICT_OVERDUE, _RemoteWatch
from ._server import INLINE_JUDGE_BYTES, AgentEndpoint

__all__ = ["ProxyObserver", "VerdictBook"]

log = guarded_logger("agui_tools.proxy")


class ProxyObserver(Protocol):
    """What watches the traffic besides the judges (``--inspect``: a read-only inspector)."""

    def exchange_started(self, number: int, url: str, body: bytes) -> None: ...
    def exchange_event(self, number: int, index: int, frame: Any) -> None: ...
    def exchange_finding(self, number: int, finding: WatchFinding) -> None: ...
    def exchange_ended(self, number: int, status: int | None, outcome: Any) -> None: ...


class VerdictBook:
    """The verdicts of :class:`~._proxy.ProxyApp`'s exchanges, and the findings they tell."""

    ledger: ThreadLedger
    findings: list[WatchFinding]
    on_finding: Callable[[WatchFinding], None] | None
    observer: ProxyObserver | None
    _endpoint: AgentEndpoint
    _judging: asyncio.Semaphore
    _outcomes: dict[int, Any]
    _settling: set[int]
    _held: dict[int, list[WatchFinding]]
    _taking: set[asyncio.Future[bool]]
    _owed: dict[asyncio.Future[None], _RemoteWatch]
    _unsettled: dict[str | None, set[asyncio.Future[None]]]

    async def _judge_input(self, body: bytes) -> InputJudged:
        if len(body) > INLINE_JUDGE_BYTES:
            async with self._judging:
                verdict = await run_in_threadpool(self._endpoint.judge_body, body)
        else:
            verdict = self._endpoint.judge_body(body)
        run_input = verdict[0]
        pending = self._unsettled.get(run_input["threadId"] if run_input is not None else None)
        if pending:
            # the thread's verdicts still to come first: an input is judged against its
            # thread's last run, and a thread's findings are told in the order of its
            # exchanges
            await self._settled(set(pending))
        return self.ledger.judge(body, verdict)

    async def _settled(
        self,
        pending: set[asyncio.Future[Any]],
        timeout: float | None = None,
        owed: Mapping[asyncio.Future[None], _RemoteWatch] | None = None,
    ) -> None:
        """Wait for these verdicts of the judging process (``timeout`` at most) — the
        streams of those not in after :data:`VERDICT_OVERDUE` seconds judged here
        instead (or, with ``owed``, of every verdict still to come: the tasks waited
        for wait on them): the judging process runs at idle priority, and on cores kept
        busy by other work it can be starved for as long as they are — seconds, for an
        input waiting for its thread's verdict or for a stop."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        first = VERDICT_OVERDUE if timeout is None else min(VERDICT_OVERDUE, timeout)
        _, late = await asyncio.wait(pending, timeout=first)
        if not late:
            return
        streams = owed if owed is not None else self._owed
        for task in list(streams if owed is not None else late):
            remote = streams.get(task)
            if remote is not None:
                await remote.take_over(deadline)
        left = None if deadline is None else max(0.0, deadline - loop.time())
        await asyncio.wait(late, timeout=left)

    def _found(self, finding: WatchFinding, number: int = 0) -> None:
        """Tell a finding of exchange ``number`` — or hold it while an earlier exchange's
        verdict is still to come, so that the log tells findings in the order of the
        exchanges (a thread's input does not wait for another thread's verdict; its
        findings do)."""
        if number and any(m < number for m in self._settling):
            self._held.setdefault(number, []).append(finding)
            return
        self._tell(finding)

    def _tell(self, finding: WatchFinding) -> None:
        self.findings.append(finding)
        if self.on_finding is not None:
            # the callback's failure is its own: never the exchange's (a 500), nor the
            # judging process's reader's (which would stop telling verdicts: a hang)
            try:
                self.on_finding(finding)
            except Exception as exc:
                log.error(
                    "on_finding failed on [%s]: %s: %s", finding.rule, type(exc).__name__, exc
                )

    def _release(self) -> None:
        """Tell the held findings no earlier verdict is still holding, in exchange order."""
        for number in sorted(self._held):
            if any(m < number for m in self._settling):
                return
            for finding in self._held.pop(number):
                self._tell(finding)

    def _remember(self, run_input: Mapping[str, Any] | None, outcome: Any, number: int) -> None:
        if run_input is not None:
            self.ledger.remember(run_input, outcome)
        if self.observer is not None and number:
            self._outcomes[number] = outcome

    def _settle(
        self,
        remote: _RemoteWatch,
        cut_short: bool,
        run_input: Mapping[str, Any] | None,
        number: int,
    ) -> asyncio.Future[None]:
        """The judging process's verdict on a stream, awaited apart from the body: the
        frontend has its answer's end at once (no wait for the judge), and the next
        input (:meth:`_judge_input`) waits for this instead."""

        async def settle() -> None:
            try:
                self._remember(run_input, await remote.outcome(cut_short), number)
            finally:
                self._settling.discard(number)
                self._release()

        if number:
            self._settling.add(number)

        thread_id = run_input.get("threadId") if run_input is not None else None
        task = asyncio.ensure_future(settle())
        pending = self._unsettled.setdefault(thread_id, set())
        pending.add(task)
        self._owed[task] = remote

        def settled(task: asyncio.Future[None]) -> None:
            pending.discard(task)
            self._owed.pop(task, None)
            if not pending and self._unsettled.get(thread_id) is pending:
                del self._unsettled[thread_id]

        task.add_done_callback(settled)
        # nobody may wait for it (no next input on the thread yet) — but later
        # exchanges' findings are held until it is in: overdue, it is judged here
        asyncio.get_running_loop().call_later(VERDICT_OVERDUE, self._overdue, task)
        return task

    def _overdue(self, task: asyncio.Future[None]) -> None:
        remote = self._owed.get(task)
        if remote is not None and not task.done():
            taking = asyncio.ensure_future(remote.take_over())
            self._taking.add(taking)
            taking.add_done_callback(self._taking.discard)
