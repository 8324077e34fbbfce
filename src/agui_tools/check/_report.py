"""What a check found: verdicts, findings, the wire transcript, the report.

Every case ends in one :class:`Verdict`, its worst :class:`Finding`; every finding names its
rule and, where there is one, the exchange and event.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

__all__ = [
    "LEVELS",
    "CaseResult",
    "CheckReport",
    "Exchange",
    "Finding",
    "Tier",
    "Verdict",
    "counts_at",
]


class Verdict(enum.Enum):
    """A case's verdict, from best to worst (the order :func:`worst` uses)."""

    PASS = "pass"
    """Every rule the case checks held."""
    INFO = "info"
    """Nothing broken; the case reports what it saw (a choice the spec leaves open)."""
    NOT_EXERCISED = "not exercised"
    """The agent never did what the case needs (the observation says what it did)."""
    WARN = "warn"
    """A SHOULD was not followed, or the model (not the protocol) erred."""
    FAIL = "fail"
    """A MUST (or MUST NOT) was broken."""

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {v: i for i, v in enumerate(Verdict)}


def worst(verdicts: Iterable[Verdict], default: Verdict = Verdict.PASS) -> Verdict:
    out = default
    for v in verdicts:
        if v.rank > out.rank:
            out = v
    return out


class Tier(enum.Enum):
    """How strong the requirement a case judges is, strongest first."""

    MUST = "MUST"
    SHOULD = "SHOULD"
    MAY = "MAY"
    INFORMATIONAL = "informational"

    @property
    def strength(self) -> int:
        return {"MUST": 3, "SHOULD": 2, "MAY": 1, "informational": 0}[self.value]


LEVELS: Final = ("must", "should", "may")
"""``--level``: which tiers' warnings fail the check (a ``fail`` always does)."""


def counts_at(level: str, verdict: Verdict, tier: Tier) -> bool:
    """Whether a case of ``tier`` ending ``verdict`` fails the check at ``level``: ``must`` a
    ``fail`` only; ``should`` also a MUST or SHOULD case's ``warn``; ``may`` (``--strict``)
    every ``warn``. Informational cases, ``info``, ``pass`` and ``not exercised`` never fail.
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; the levels are {', '.join(LEVELS)}")
    if verdict is Verdict.FAIL:
        return True
    if verdict is not Verdict.WARN or tier is Tier.INFORMATIONAL:
        return False
    floor = {"must": 4, "should": Tier.SHOULD.strength, "may": Tier.MAY.strength}[level]
    return tier.strength >= floor


@dataclass(frozen=True)
class Finding:
    """One observation a case made, with the rule that decides it.

    ``exchange`` indexes the case's :attr:`CaseResult.exchanges`; ``event`` the
    offending event of that exchange's stream (both ``None`` when the finding
    concerns no event, an HTTP status say).
    """

    verdict: Verdict
    rule: str
    message: str
    exchange: int | None = None
    event: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "rule": self.rule,
            "message": self.message,
            "exchange": self.exchange,
            "event": self.event,
        }


SHOWN_HEAD = 200
"""A report shows a stream's first this many events…"""
SHOWN_TAIL = 50
"""…and its last this many (and every event a finding points at); the rest are counted."""
SHOWN_FRAME = 4000
"""A report shows at most this many characters of one event."""


def _cut(frame: str) -> str:
    if len(frame) <= SHOWN_FRAME:
        return frame
    return f"{frame[:SHOWN_FRAME]}… ({len(frame):,} characters in all)"


@dataclass
class Exchange:
    """One HTTP request to the agent and everything that came back.

    ``frames`` are the SSE ``data`` payloads in arrival order — the event
    indexes findings point at; ``body`` the response body as received (capped
    at :data:`BODY_CAP` bytes for the transcript) when it was not an event stream.
    """

    label: str
    request: dict[str, Any] | None
    """The JSON body sent, or ``None`` when the body was not JSON (see ``raw_request``)."""
    raw_request: str = ""
    """The body as sent when it was not a JSON object, shortened for display."""
    status: int | None = None
    content_type: str = ""
    frames: list[str] = field(default_factory=list)
    comments: int = 0
    body: str = ""
    error: str = ""
    """Why the exchange ended abnormally (connection refused, timed out, disconnected)."""
    seconds: float = 0.0

    def shown(self, pinned: Iterable[int] = ()) -> list[tuple[int, str]]:
        """The events a report shows, as ``(index, text)``: all, or the first :data:`SHOWN_HEAD`,
        last :data:`SHOWN_TAIL` and those a finding points at (``pinned``), each cut at
        :data:`SHOWN_FRAME` characters — an endless stream must not make ``--html`` endless.
        """
        n = len(self.frames)
        if n <= SHOWN_HEAD + SHOWN_TAIL:
            picked: Iterable[int] = range(n)
        else:
            keep = set(range(SHOWN_HEAD)) | set(range(n - SHOWN_TAIL, n))
            keep |= {i for i in pinned if 0 <= i < n}
            picked = sorted(keep)
        return [(i, _cut(self.frames[i])) for i in picked]

    def to_json(self, pinned: Iterable[int] = ()) -> dict[str, Any]:
        shown = self.shown(pinned)
        out: dict[str, Any] = {
            "label": self.label,
            "request": self.request if self.request is not None else self.raw_request,
            "status": self.status,
            "contentType": self.content_type,
            "events": [text for _, text in shown],
            "comments": self.comments,
            "seconds": round(self.seconds, 3),
        }
        if len(shown) < len(self.frames):
            out["eventCount"] = len(self.frames)
            out["eventIndexes"] = [i for i, _ in shown]
        if self.body:
            out["body"] = self.body
        if self.error:
            out["error"] = self.error
        return out


@dataclass
class CaseResult:
    """One case of the catalogue, run against the agent."""

    id: str
    section: str
    title: str
    rules: tuple[str, ...]
    page: str
    expected: str
    verdict: Verdict = Verdict.PASS
    observed: str = ""
    findings: list[Finding] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)
    seconds: float = 0.0
    tier: Tier = Tier.MUST
    """How strong the requirement the case judges is (``check._tiers`` derives it)."""
    capability: str | None = None
    """What the agent must declare or exercise for the case to judge anything."""

    @property
    def offending(self) -> set[tuple[int, int]]:
        """(exchange, event) pairs a failing or warning finding points at."""
        return {
            (f.exchange, f.event)
            for f in self.findings
            if f.exchange is not None
            and f.event is not None
            and f.verdict in (Verdict.FAIL, Verdict.WARN)
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "section": self.section,
            "title": self.title,
            "verdict": self.verdict.value,
            "tier": self.tier.value,
            "capability": self.capability,
            "rules": list(self.rules),
            "page": self.page,
            "expected": self.expected,
            "observed": self.observed,
            "findings": [f.to_json() for f in self.findings],
            "exchanges": [
                e.to_json(f.event for f in self.findings if f.exchange == i and f.event is not None)
                for i, e in enumerate(self.exchanges)
            ],
            "seconds": round(self.seconds, 3),
        }


@dataclass
class CheckReport:
    """Everything ``agui-tools check`` found about one agent endpoint."""

    url: str
    cases: list[CaseResult]
    strict: bool = False
    seconds: float = 0.0
    started: str = ""
    version: str = ""
    level: str = "must"
    """Which tiers' warnings fail the check (``--level``); ``strict`` means ``may``."""
    capabilities: dict[str, str] = field(default_factory=dict)
    """The capabilities the agent declared or exercised during the check: name → evidence."""
    agent_log: list[str] = field(default_factory=list)
    """What an agent served in this process logged below ERROR during the check (its
    warnings about the checker's deliberate inputs), kept off the user's stderr; not
    part of the JSON document."""
    stopped: str = ""
    """Why the check stopped before every case ran (Ctrl-C, its deadline); empty when it
    ran to the end. A stopped check is not ``ok``: what did not run was not judged."""

    def counts(self) -> dict[str, int]:
        out = {v.value: 0 for v in Verdict}
        for case in self.cases:
            out[case.verdict.value] += 1
        return out

    @property
    def effective_level(self) -> str:
        """The level the exit code is judged at: ``strict`` is ``may`` (every warning)."""
        return "may" if self.strict else self.level

    def failed(self) -> list[CaseResult]:
        """The cases that make the check fail: every ``fail``, and a ``warn`` of a case
        whose tier the level admits (:func:`counts_at`)."""
        level = self.effective_level
        return [c for c in self.cases if counts_at(level, c.verdict, c.tier)]

    @property
    def ok(self) -> bool:
        return not self.failed() and not self.stopped

    @property
    def exit_code(self) -> int:
        """0 when no case failed (at the level: with ``strict``, none warned either), else 1."""
        return 0 if self.ok else 1

    def sections(self) -> list[tuple[str, list[CaseResult]]]:
        order: dict[str, list[CaseResult]] = {}
        for case in self.cases:
            order.setdefault(case.section, []).append(case)
        return list(order.items())

    def case(self, case_id: str) -> CaseResult:
        for case in self.cases:
            if case.id == case_id:
                return case
        raise KeyError(case_id)

    def to_json(self) -> dict[str, Any]:
        """The ``agui-tools check --json`` document (docs/cli.md describes it)."""
        return {
            "url": self.url,
            "agui_tools": self.version,
            "started": self.started,
            "seconds": round(self.seconds, 3),
            "strict": self.strict,
            "level": self.effective_level,
            "ok": self.ok,
            "stopped": self.stopped or None,
            "capabilities": dict(self.capabilities),
            "counts": self.counts(),
            "cases": [c.to_json() for c in self.cases],
        }

    def dumps(self) -> bytes:
        return orjson.dumps(self.to_json(), option=orjson.OPT_INDENT_2)


def summary_line(cases: Sequence[CaseResult]) -> str:
    counts: dict[str, int] = {}
    for case in cases:
        counts[case.verdict.value] = counts.get(case.verdict.value, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in counts.items())
