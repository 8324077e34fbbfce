"""Running fixtures in the official AG-UI conformance format
(``tests/conformance/OFFICIAL-README.md``): each stream replayed through pipeline and
reducer, each expectation checked, the first failing one named.

Keys about the official clients' wording are judged by our equivalent: ``errorContains``
matches our violation's text, an official template (``ERROR_TEMPLATES``) with its rule ID,
or the field it points at; ``warnings`` must occur in our warnings' rendering;
``expectOverrides`` is ignored (.NET). ``client.maxProtocolVersion`` sets the peer era
(:func:`~agui_tools.app._downgrade.prepare_run_input`). Official *admitted gaps* are in
``ADMITTED_GAPS`` and reported as ``deviation``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from .._errors import AguiError, ProtocolViolation
from ..wire._pipeline import Middleware
from ._capture import CaptureVerdict, replay
from ._downgrade import peer_at_most, prepare_run_input, subagent_downgrade

__all__ = ["ADMITTED_GAPS", "ERROR_TEMPLATES", "FixtureResult", "run_directory", "run_fixture"]

# The official TypeScript client's error templates → the rule IDs our
# violations carry for the same defect.
ERROR_TEMPLATES: Final[list[tuple[re.Pattern[str], frozenset[str]]]] = [
    (re.compile(p, re.I), frozenset(rules))
    for p, rules in [
        (r"First event must be 'RUN_STARTED'", {"RUN-1"}),
        (r"already (finished with 'RUN_FINISHED'|errored with 'RUN_ERROR')", {"RUN-12"}),
        (r"while a run is still active", {"RUN-13"}),
        (r"is already in progress", {"STREAM-2", "TOOL-20", "REAS-4", "TEXT-8"}),
        (
            r"No active (text message|tool call|reasoning message|reasoning span)",
            {"STREAM-3", "TOOL-20", "REAS-4", "TEXT-8"},
        ),
        (r"while text messages are still active", {"STREAM-4", "TEXT-8"}),
        (r"while tool calls are still active", {"TOOL-20", "STREAM-4"}),
        (r"while (reasoning messages|reasoning spans) are still active", {"REAS-4"}),
        (r"while steps are still active", {"STEP-2"}),
        (r"while subagents are still active", {"SUB-6"}),
        (
            r"Step .* is already active|that was not started|STEP_FINISHED' for step .* attributed",
            {"STEP-1"},
        ),
        (r"opener's subagent|chunk subagentRunId .* does not match", {"SUB-11", "TEXT-4"}),
        (r"does not match its parent message|but its parent message", {"SUB-12"}),
        (r"is already active\. Finish it|has already finished in this run", {"SUB-5"}),
        (r"parentSubagentRunId .* has not been started", {"SUB-14"}),
        (r"no active subagent found", {"SUB-6"}),
        (r"does not match the open stream's", {"CHUNK-10"}),
        (r"^Ambiguous", {"CHUNK-12"}),
        (r"First TEXT_MESSAGE_CHUNK must have a messageId", {"CHUNK-4"}),
        (r"First REASONING_MESSAGE_CHUNK must have a messageId", {"CHUNK-5"}),
        (r"First TOOL_CALL_CHUNK must have a (toolCallId|toolCallName)", {"CHUNK-6"}),
        (r"carry the input's threadId|agree on their runId", {"INPUT-3"}),
        (r"unique within the run|duplicate interrupt", {"INT-3"}),
        (r"expected object, received array", {"RUN-4", "PROC-2"}),
        (r"without a '(subagentRunId|name)'", {"SUB-3"}),
    ]
]

# fixture name → (the rule we follow instead, why)
ADMITTED_GAPS: Final[dict[str, tuple[str, str]]] = {
    "unknown-enum-value-role-fatal": (
        "PROC-5",
        "the processing page says an unrecognised member of a closed string set is stripped "
        "per position; the official client rejects it (its admitted gap). We strip `role` with "
        "a warning and the message stays an assistant message.",
    ),
}

_MISSING: Final = object()


@dataclass
class FixtureResult:
    name: str
    status: str  # "pass" | "fail" | "deviation" | "error"
    mismatch: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "status": self.status}
        if self.mismatch:
            out["mismatch"] = self.mismatch
        if self.notes:
            out["notes"] = self.notes
        return out


def _get(value: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if isinstance(value, list):
            try:
                value = value[int(part)]
            except (ValueError, IndexError):
                return _MISSING
        elif isinstance(value, dict):
            if part not in value:
                return _MISSING
            value = value[part]
        else:
            return _MISSING
    return value


def subset_match(expected: Any, actual: Any, path: str = "") -> str | None:
    """The fixture format's matcher: objects on named keys, arrays by length and position."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{path or '/'}: expected an object, got {orjson.dumps(actual).decode()[:80]}"
        for key, value in expected.items():
            if key not in actual:
                return f"{path}/{key}: missing"
            problem = subset_match(value, actual[key], f"{path}/{key}")
            if problem:
                return problem
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            got = len(actual) if isinstance(actual, list) else type(actual).__name__
            return f"{path or '/'}: expected {len(expected)} items, got {got}"
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            problem = subset_match(e, a, f"{path}/{i}")
            if problem:
                return problem
        return None
    if expected != actual or isinstance(expected, bool) != isinstance(actual, bool):
        return f"{path or '/'}: expected {orjson.dumps(expected).decode()[:80]}, got {orjson.dumps(actual).decode()[:80]}"
    return None


def error_matches(needle: str, error: ProtocolViolation) -> bool:
    text = str(error)
    if needle.lower() in text.lower():
        return True
    for pattern, rules in ERROR_TEMPLATES:
        if pattern.search(needle):
            return error.rule in rules
    tokens = {error.path.rsplit("/", 1)[-1], *error.ids.values(), *error.ids.keys()}
    return needle in tokens


def _build_input(fixture: dict[str, Any]) -> dict[str, Any]:
    stream = fixture.get("stream", [])
    first = next((e for e in stream if isinstance(e, dict) and e.get("type") == "RUN_STARTED"), {})
    base: dict[str, Any] = {
        "threadId": first.get("threadId", f"t-{fixture.get('name', 'fixture')}"),
        "runId": first.get("runId", f"r-{fixture.get('name', 'fixture')}"),
        "messages": [],
    }
    base.update(fixture.get("input") or {})
    return base


def run_fixture(fixture: dict[str, Any]) -> FixtureResult:
    """CaptureVerdict one fixture and check every expectation key it states."""
    name = str(fixture.get("name", "?"))
    expect: dict[str, Any] = fixture.get("expect", {})
    peer = (fixture.get("client") or {}).get("maxProtocolVersion")
    raw_input = _build_input(fixture)
    try:
        request, request_warnings = prepare_run_input(raw_input, peer_version=peer)
    except AguiError as exc:
        return FixtureResult(name, "error", f"the fixture's input was rejected: {exc}")
    middleware: list[Middleware] = [subagent_downgrade()] if peer_at_most(peer, "0.0.57") else []
    outcome = replay(
        fixture.get("stream", []),
        run_input=request,
        middleware=middleware,
        initial_messages=raw_input.get("messages", []),
    )
    mismatch = _first_mismatch(expect, outcome, request, request_warnings)
    gap = ADMITTED_GAPS.get(name)
    if gap is not None:
        return FixtureResult(
            name, "deviation" if mismatch else "pass", mismatch, [f"follows {gap[0]}: {gap[1]}"]
        )
    return FixtureResult(name, "fail" if mismatch else "pass", mismatch)


def _first_mismatch(
    expect: dict[str, Any],
    outcome: CaptureVerdict,
    request: dict[str, Any],
    request_warnings: list[Any],
) -> str | None:
    result = outcome.result
    if "outcome" in expect and result.outcome != expect["outcome"]:
        why = f" ({result.error})" if result.error else ""
        return f"outcome: expected {expect['outcome']}, got {result.outcome}{why}"
    if "errorContains" in expect:
        if result.error is None:
            return f"errorContains: expected a rejection mentioning {expect['errorContains']!r}"
        if not error_matches(expect["errorContains"], result.error):
            return f"errorContains: {expect['errorContains']!r} does not describe our error {result.error}"
    if "runError" in expect:
        errors = [r.error for r in result.runs if r.status == "error" and r.error]
        want = expect["runError"]
        if not errors:
            return "runError: no run reported its own failure"
        if isinstance(want, str) and not any(want in e["message"] for e in errors):
            return f"runError: no run error mentions {want!r} (got {errors})"
    types = [e["type"] for e in outcome.events]
    if "eventTypes" in expect and types != expect["eventTypes"]:
        return f"eventTypes: expected {expect['eventTypes']}, got {types}"
    for absent in expect.get("eventTypesAbsent", []):
        if absent in types:
            return f"eventTypesAbsent: {absent} reached application code"
    for dotted, value in expect.get("eventPaths", {}).items():
        got = _get(outcome.events, dotted)
        if got is _MISSING:
            return f"eventPaths: {dotted} does not exist"
        problem = subset_match(value, got, dotted)
        if problem or got != value:
            return f"eventPaths: {dotted} expected {value!r}, got {got!r}"
    for dotted in expect.get("eventAbsentPaths", []):
        if _get(outcome.events, dotted) is not _MISSING:
            return f"eventAbsentPaths: {dotted} is present"
    all_warnings = [*request_warnings, *result.warnings]
    rendered = [f"{w} {w.event_type or ''}" for w in all_warnings]
    for needle in expect.get("warnings", []):
        if not any(needle in text for text in rendered):
            return f"warnings: none mentions {needle!r} (got {rendered})"
    if expect.get("noWarnings") and all_warnings:
        return f"noWarnings: got {rendered}"
    messages = outcome.thread.messages
    if "messageCount" in expect and len(messages) != expect["messageCount"]:
        return f"messageCount: expected {expect['messageCount']}, got {len(messages)}"
    if "messages" in expect:
        problem = subset_match(expect["messages"], messages)
        if problem:
            return f"messages: {problem}"
    if "state" in expect:
        problem = subset_match(expect["state"], outcome.thread.state)
        if problem:
            return f"state: {problem}"
    if "request" in expect:
        problem = subset_match(expect["request"], request)
        if problem:
            return f"request: {problem}"
    for dotted in expect.get("requestAbsentPaths", []):
        if _get(request, dotted) is not _MISSING:
            return f"requestAbsentPaths: {dotted} is present"
    return None


class FixtureNotJSON(ValueError):
    """A fixture file that is not one JSON document, named: in a folder of fixtures, the
    folder alone does not say which file to open."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path.name} is not JSON ({why})")
        self.path = path


def load_fixtures(directory: Path) -> Iterable[tuple[Path, dict[str, Any]]]:
    files = sorted(directory.glob("*.json")) if directory.is_dir() else [directory]
    for path in files:
        try:
            fixture = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as exc:
            raise FixtureNotJSON(path, str(exc)) from exc
        yield path, fixture


def run_directory(directory: Path) -> list[FixtureResult]:
    results = []
    for path, fixture in load_fixtures(directory):
        if not isinstance(fixture, dict) or "stream" not in fixture:
            results.append(
                FixtureResult(path.stem, "error", "not a conformance fixture (no 'stream')")
            )
            continue
        fixture.setdefault("name", path.stem)
        results.append(run_fixture(fixture))
    return results
