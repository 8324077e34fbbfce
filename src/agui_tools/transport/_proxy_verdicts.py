"""The proxy's verdicts: inputs judged, findings kept within bounds and told.

Per exchange the first :data:`FINDINGS_KEPT` of each rule are told and the rest
counted (:class:`ExchangeFindings`); the session keeps a count per rule (:class:`Tally`):
an agent earning a warning per event costs nothing that grows with its stream.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

import orjson
from starlette.concurrency import run_in_threadpool

from .._text import guarded_logger
from ..app._watch import InputJudged, ThreadLedger, WatchFinding
from ._server import INLINE_JUDGE_BYTES, AgentEndpoint

__all__ = ["FINDINGS_KEPT", "META_FINDINGS_BYTES", "ExchangeFindings", "ProxyObserver", "Tally"]

log = guarded_logger("agui_tools.proxy")

FINDINGS_KEPT: Final = 20
"""Per exchange, how many findings of one rule are told and kept; the rest are counted."""

META_FINDINGS_BYTES: Final = 256 * 1024
"""The most a recording's ``NNNN.meta.json`` spends on findings (the rest counted)."""


class ProxyObserver(Protocol):
    """What watches the traffic besides the judges (``--inspect``: a read-only inspector)."""

    def exchange_started(self, number: int, url: str, body: bytes) -> None: ...
    def exchange_event(self, number: int, index: int, frame: Any) -> None: ...
    def exchange_finding(self, number: int, finding: WatchFinding) -> None: ...
    def exchange_ended(self, number: int, status: int | None, outcome: Any) -> None: ...


class Tally:
    """The session's findings as the summary tells them: a count per side, severity and
    rule, and the first of each — bounded by the rules, never by the traffic."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str, str]] = Counter()
        self.first: dict[tuple[str, str, str], WatchFinding] = {}

    def add(self, finding: WatchFinding) -> None:
        key = (finding.side, finding.severity, finding.rule)
        self.counts[key] += 1
        self.first.setdefault(key, finding)

    @property
    def errors(self) -> int:
        return sum(n for (_, severity, _), n in self.counts.items() if severity == "error")

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class ExchangeFindings:
    """One exchange's findings: the first :data:`FINDINGS_KEPT` of each rule kept (and
    told), every one counted."""

    def __init__(self) -> None:
        self.kept: list[WatchFinding] = []
        self.counts: Counter[str] = Counter()

    def add(self, finding: WatchFinding) -> bool:
        """Count ``finding``; ``True`` when it is kept (and so told)."""
        self.counts[finding.rule] += 1
        if self.counts[finding.rule] > FINDINGS_KEPT:
            return False
        self.kept.append(finding)
        return True

    def not_kept(self) -> dict[str, int]:
        """Per rule, the findings counted and not kept."""
        return {r: n - FINDINGS_KEPT for r, n in sorted(self.counts.items()) if n > FINDINGS_KEPT}

    def to_meta(self, meta: dict[str, Any]) -> None:
        """The kept findings into a recording's meta, within :data:`META_FINDINGS_BYTES`."""
        shown: list[dict[str, Any]] = []
        spent = 0
        for finding in self.kept:
            document = finding.to_json()
            spent += len(orjson.dumps(document))
            if spent > META_FINDINGS_BYTES:
                break
            shown.append(document)
        meta["findings"] = shown
        left = self.not_kept()
        for finding in self.kept[len(shown) :]:
            left[finding.rule] = left.get(finding.rule, 0) + 1
        if left:
            meta["findingsNotKept"] = dict(sorted(left.items()))


class VerdictBook:
    """The verdicts of :class:`~._proxy.ProxyApp`'s exchanges, and the findings they tell."""

    ledger: ThreadLedger
    tally: Tally
    on_finding: Callable[[WatchFinding], None] | None
    on_notice: Callable[[str], None] | None
    observer: ProxyObserver | None
    _endpoint: AgentEndpoint
    _outcomes: dict[int, Any]

    async def _judge_input(self, body: bytes) -> InputJudged:
        if len(body) > INLINE_JUDGE_BYTES:  # a large body is parsed off the event loop
            verdict = await run_in_threadpool(self._endpoint.judge_body, body)
        else:
            verdict = self._endpoint.judge_body(body)
        return self.ledger.judge(body, verdict)

    def _tell(self, finding: WatchFinding) -> None:
        if self.on_finding is not None:
            # the callback's failure is its own: never the exchange's (a 500)
            try:
                self.on_finding(finding)
            except Exception as exc:
                log.error(
                    "on_finding failed on [%s]: %s: %s", finding.rule, type(exc).__name__, exc
                )

    def _notice(self, message: str) -> None:
        """A line the proxy says of itself (not a finding): ``on_notice``, or its log."""
        if self.on_notice is not None:
            self.on_notice(message)
        else:
            log.warning("%s", message)

    def _remember(self, run_input: Mapping[str, Any] | None, outcome: Any, number: int) -> None:
        if run_input is not None:
            self.ledger.remember(run_input, outcome)
        if self.observer is not None and number:
            self._outcomes[number] = outcome
