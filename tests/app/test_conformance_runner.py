"""The conformance runner over the official fixtures, and proof it can fail."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agui_tools._errors import ProtocolViolation
from agui_tools.app._conformance import ADMITTED_GAPS, error_matches, run_fixture, subset_match
from agui_tools.cli import main
from tests.helpers.conformance import STREAMS, load, names


@pytest.mark.parametrize("name", names())
def test_fixture(name: str) -> None:
    result = run_fixture(load(name))
    if name in ADMITTED_GAPS:
        assert result.status == "deviation", result
        assert result.notes and ADMITTED_GAPS[name][0] in result.notes[0]
    else:
        assert result.status == "pass", result.mismatch


def _perturbations(fx: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Each expectation key, changed so a correct runner must report a mismatch."""
    expect = fx["expect"]
    out = []

    def variant(key: str, value: Any) -> None:
        fx2 = copy.deepcopy(fx)
        fx2["expect"][key] = value
        out.append((key, fx2))

    variant("outcome", "completed" if expect["outcome"] == "failed" else "failed")
    if "messageCount" in expect:
        variant("messageCount", expect["messageCount"] + 1)
    if expect.get("messages"):
        msgs = copy.deepcopy(expect["messages"])
        first = msgs[0]
        key = "content" if isinstance(first.get("content"), str) else "role"
        first[key] = str(first.get(key)) + "-not-what-was-delivered"
        variant("messages", msgs)
    if "eventTypes" in expect:
        variant("eventTypes", [*expect["eventTypes"], "CUSTOM"])
    if isinstance(expect.get("state"), dict) and expect["state"]:
        variant("state", {**expect["state"], "not-in-the-state": 1})
    if expect.get("warnings"):
        variant("warnings", ["a warning nobody emitted"])
    if "errorContains" in expect:
        variant("errorContains", "words that appear in no error at all")
    if expect.get("request"):
        variant("request", {**expect["request"], "threadId": "another-thread"})
    return out


@pytest.mark.parametrize("name", [n for n in names() if n not in ADMITTED_GAPS])
def test_runner_reports_every_broken_expectation(name: str) -> None:
    """A fixture that cannot fail proves nothing: change each expectation and
    the runner must notice."""
    for key, broken in _perturbations(load(name)):
        result = run_fixture(broken)
        assert result.status == "fail", f"{name}: perturbing {key!r} went unnoticed"
        assert result.mismatch


def test_subset_match_semantics() -> None:
    assert subset_match({"a": 1}, {"a": 1, "b": 2}) is None
    assert subset_match([{"a": 1}], [{"a": 1}, {"a": 2}]) is not None  # arrays: same length
    assert subset_match({"x": ["one"]}, {"x": ["one", "two"]}) is not None
    assert subset_match(["only-this"], {"count": 1}) is not None
    assert subset_match({"a": True}, {"a": 1}) is not None  # no bool/int confusion


def test_error_matching_maps_official_templates_to_rules() -> None:
    exc = ProtocolViolation("STREAM-3", "x", index=1, ids={"messageId": "m9"})
    assert error_matches("No active text message found with ID 'zzz'", exc)
    assert not error_matches("First event must be 'RUN_STARTED'", exc)
    assert error_matches("m9", exc)


def test_cli_conformance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", str(STREAMS)]) == 0
    out = capsys.readouterr().out
    assert "0 failed" in out and "deviation" in out
    broken = load("triad-assembles-message")
    broken["expect"]["messageCount"] = 7
    (tmp_path / "triad-assembles-message.json").write_text(json.dumps(broken))
    assert main(["conformance", str(tmp_path), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["fail"] == 1 and "messageCount" in doc["fixtures"][0]["mismatch"]
    assert main(["conformance", str(tmp_path / "nope")]) == 2


def test_cli_conformance_with_no_fixtures_is_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Zero fixtures is not "every fixture passed": most likely the wrong directory."""
    (tmp_path / "notes.txt").write_text("not a fixture")
    assert main(["conformance", str(tmp_path)]) == 2
    assert f"no fixtures found in {tmp_path}" in capsys.readouterr().err


def test_cli_conformance_names_the_fixture_that_is_not_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pointed at a folder holding one file that is not JSON, the one line names that file,
    not only the folder a newcomer then has to search."""
    (tmp_path / "triad-assembles-message.json").write_text(
        json.dumps(load("triad-assembles-message"))
    )
    (tmp_path / "notes.json").write_text('{"stream": []}\n{"second": "document"}\n')
    assert main(["conformance", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "notes.json is not JSON" in err and "line 2" in err, err
