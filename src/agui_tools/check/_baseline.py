"""A baseline: the faults an agent is known to have, so a check fails on new ones only.

``--write-baseline FILE`` records each finding that fails the report (case id, rule,
verdict; message, tier and capability for the reader); ``--baseline FILE`` then calls a
finding *known* or *new* (new fails), and an entry the report no longer shows at any level
*fixed*. Messages are not compared: they carry minted ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .._errors import UsageError
from ._report import CheckReport, counts_at

__all__ = ["Baseline", "BaselineDiff", "Known"]

_FORMAT = 1


@dataclass(frozen=True)
class Known:
    """One failing finding, as a baseline keys it."""

    case: str
    rule: str
    verdict: str
    message: str = field(default="", compare=False)
    tier: str = field(default="", compare=False)
    capability: str | None = field(default=None, compare=False)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.case, self.rule, self.verdict)

    def line(self) -> str:
        return f"{self.case} [{self.rule}] {self.verdict}: {self.message}"


def _failing(report: CheckReport) -> list[Known]:
    level = report.effective_level
    out: dict[tuple[str, str, str], Known] = {}
    for case in report.cases:
        for f in case.findings:
            if counts_at(level, f.verdict, case.tier):
                known = Known(
                    case.id, f.rule, f.verdict.value, f.message, case.tier.value, case.capability
                )
                out.setdefault(known.key, known)
    return list(out.values())


@dataclass
class BaselineDiff:
    """A report judged against a baseline."""

    known: list[Known]
    new: list[Known]
    fixed: list[Known]

    @property
    def ok(self) -> bool:
        return not self.new

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def lines(self, name: str = "baseline") -> list[str]:
        verdict = "OK: no new failure" if self.ok else "FAILED: a new failure"
        out = [
            f"{name}: {len(self.known)} known, {len(self.new)} new, {len(self.fixed)} fixed "
            f"— {verdict} (the exit code says so)"
        ]
        out += [f"  new: {k.line()}" for k in self.new]
        out += [
            f"  fixed: {k.case} [{k.rule}] {k.verdict} — in the baseline, no longer found; "
            "rewrite it with --write-baseline"
            for k in self.fixed
        ]
        return out


@dataclass
class Baseline:
    """The failing findings of one report, to judge later reports against."""

    known: list[Known]
    url: str = ""
    version: str = ""
    level: str = "must"
    not_exercised: list[str] = field(default_factory=list)
    """The cases the report could not judge (for the reader; not compared)."""

    @classmethod
    def of(cls, report: CheckReport) -> Baseline:
        return cls(
            _failing(report),
            report.url,
            report.version,
            report.effective_level,
            [c.id for c in report.cases if c.verdict.value == "not exercised"],
        )

    def compare(self, report: CheckReport) -> BaselineDiff:
        held = {k.key for k in self.known}
        found = _failing(report)
        # fixed: the report no longer shows the finding at all, whatever level it is
        # judged at — a `warn` recorded at --level should is still there at `must`
        seen = {(c.id, f.rule, f.verdict.value) for c in report.cases for f in c.findings}
        return BaselineDiff(
            known=[k for k in found if k.key in held],
            new=[k for k in found if k.key not in held],
            fixed=[k for k in self.known if k.key not in seen],
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": _FORMAT,
            "url": self.url,
            "agui_tools": self.version,
            "level": self.level,
            "known": [
                {
                    "case": k.case,
                    "rule": k.rule,
                    "verdict": k.verdict,
                    "tier": k.tier,
                    "capability": k.capability,
                    "message": k.message,
                }
                for k in self.known
            ],
            "notExercised": list(self.not_exercised),
        }

    def write(self, path: str | Path) -> None:
        Path(path).write_bytes(orjson.dumps(self.to_json(), option=orjson.OPT_INDENT_2) + b"\n")

    @classmethod
    def load(cls, path: str | Path) -> Baseline:
        """Read a baseline file; :class:`UsageError` when it cannot be read or is not one."""
        try:
            data = orjson.loads(Path(path).read_bytes())
        except OSError as exc:
            raise UsageError(f"cannot read the baseline {str(path)!r}: {exc.strerror}") from None
        except orjson.JSONDecodeError as exc:
            raise UsageError(f"{str(path)!r} is not a baseline (not JSON: {exc})") from None
        entries = data.get("known") if isinstance(data, dict) else None
        if not isinstance(entries, list) or not all(
            isinstance(e, dict)
            and all(isinstance(e.get(k), str) for k in ("case", "rule", "verdict"))
            for e in entries
        ):
            raise UsageError(
                f'{str(path)!r} is not a baseline: expected {{"known": [{{"case", "rule", '
                '"verdict"}, …]} as --write-baseline writes it'
            )
        skipped = data.get("notExercised")
        return cls(
            [
                Known(
                    e["case"],
                    e["rule"],
                    e["verdict"],
                    str(e.get("message", "")),
                    str(e.get("tier", "")),
                    e["capability"] if isinstance(e.get("capability"), str) else None,
                )
                for e in entries
            ],
            str(data.get("url", "")),
            str(data.get("agui_tools", "")),
            str(data.get("level", "must")),
            [str(c) for c in skipped] if isinstance(skipped, list) else [],
        )
