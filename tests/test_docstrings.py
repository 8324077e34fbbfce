"""Docstrings and comments say what the code does and why — not its history or its figures.

An issue number or a measured figure goes stale with the next issue or the next bench
run; both belong in docs/ (docs/performance.md, docs/security.md) and in bench output,
where they are dated and re-measured. What stays here: a rule ID, a default the code
sets, a bound the code proves.
"""

from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "agui_tools"

HISTORY = re.compile(
    r"(?<!ag-ui )(?<!``)#\d+"  # our tracker's #25 (an upstream ag-ui #1745 is a citation;
    #                             ``#1`` is how output numbers things)
    r"|\bissues? \d+"
    r"|\(D\d+\)|\bD\d{2,}\b"  # a decision log's D150
)
"""An issue reference: what a change was for, which the commit and CHANGELOG keep."""

FIGURE = re.compile(
    r"\d[\d.,]*\s?(?:µs|ns|ms)\b"  # a timing
    r"|\d[\d.,]*\s?%"  # a share
    r"|\d[\d.,]*\s?×"  # a ratio
    r"|\d+\.\d+\s?(?:s|kB|KB|MB|GB)\b"  # a measured decimal
    r"|\d[\d.,]*\s?(?:kB|KB|MB|GB)\b"  # a measured size (limits are set in KiB/MiB)
    r"|\b(?:took|cost|costs)\s~?\d"  # "took 52 s", "cost 30 ms"
    r"|\d+\s?[–-]\s?\d+\s?(?:s|ms|MB|GB|%)(?!\w)"  # a measured range
    r"|\bseen: \d"
)
"""A benchmark figure: a number with a unit that a run measured."""


def _notes(path: Path) -> Iterator[tuple[int, str]]:
    """Each line of a docstring (any string statement: module, class, function,
    attribute) and each comment of one source file, with its line number."""
    source = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            for offset, line in enumerate(node.value.value.splitlines()):
                yield node.lineno + offset, line
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def _sources() -> list[Path]:
    return [p for p in sorted(SRC.rglob("*.py")) if not p.name.endswith("_pb2.py")]


def _offences(pattern: re.Pattern[str]) -> list[str]:
    return [
        f"{path.relative_to(SRC.parent)}:{line}: {match.group(0)!r} in {text.strip()[:100]!r}"
        for path in _sources()
        for line, text in _notes(path)
        for match in pattern.finditer(text)
    ]


def test_no_docstring_or_comment_carries_issue_history() -> None:
    found = _offences(HISTORY)
    assert not found, "issue history belongs in the CHANGELOG:\n" + "\n".join(found)


def test_no_docstring_or_comment_carries_a_benchmark_figure() -> None:
    found = _offences(FIGURE)
    assert not found, "figures belong in docs/ and bench output:\n" + "\n".join(found)


PATH = re.compile(
    r"(?<![\w/.])((?:docs|tests|bench|spec|scripts|interop)/[\w/.-]*\w"
    r"|(?:app|wire|agent|transport|check|cli|ui|integrations|demo)/[\w/]*\.py)"
)
"""A repository path (``docs/x.md``) or a package path (``app/_steps.py``) a note names."""

QUALIFIED = re.compile(r":(?:meth|func|class|data|attr|mod|exc):`~?(agui_tools(?:\.\w+)+)`")
"""A Sphinx reference by its full name, which must resolve."""


def test_every_path_a_docstring_or_comment_names_exists() -> None:
    missing = [
        f"{path.relative_to(SRC.parent)}:{line}: {named}"
        for path in _sources()
        for line, text in _notes(path)
        for named in (m.group(1).rstrip(".") for m in PATH.finditer(text))
        if not (ROOT / named).exists() and not (SRC / named).exists()
    ]
    assert not missing, "\n".join(missing)


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            declared = isinstance(obj, type) and any(
                attribute in getattr(c, "__annotations__", {}) for c in obj.__mro__
            )
            if declared:  # a dataclass field or a slot: there, though not a class attribute
                return True
            if not hasattr(obj, attribute):
                return False
            obj = getattr(obj, attribute)
        return True
    return False


def test_every_name_a_docstring_refers_to_in_full_exists() -> None:
    missing = [
        f"{path.relative_to(SRC.parent)}:{line}: {m.group(1)}"
        for path in _sources()
        for line, text in _notes(path)
        for m in QUALIFIED.finditer(text)
        if not _resolves(m.group(1))
    ]
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("judged in-process (#25)", HISTORY),
        ("the throughput attack (issue 28, item 2)", HISTORY),
        ("as decided (D150)", HISTORY),
        ("a 2 MB state cost 175 ms", FIGURE),
        ("about 0.5 µs per byte", FIGURE),
        ("86–99 % in the best of 15 runs", FIGURE),
        ("about 100× faster", FIGURE),
        ("an input waited 3-11 s", FIGURE),
        ("64 of them took serve to 4.0 GB", FIGURE),
    ],
)
def test_the_patterns_catch_what_they_are_for(text: str, pattern: re.Pattern[str]) -> None:
    assert pattern.search(text), text


def test_a_name_or_path_that_is_not_there_is_found() -> None:
    assert not _resolves("agui_tools.app.Conversation.no_such_method")
    assert not _resolves("agui_tools.app._no_such_module.Thing")
    assert _resolves("agui_tools.app.Conversation.restore_steps")
    named = PATH.search("see tests/app/test_store_contract.py for the suite")
    assert named is not None and not (ROOT / named.group(1)).exists()


@pytest.mark.parametrize(
    "text",
    [
        "each call numbered (``#1``)",
        "an adapter restates it (upstream ag-ui #1745)",
        "``header_timeout`` (10 s), then 408",
        "16 KiB (``h11_max_incomplete_event_size``)",
        "the rule TOOL-20 and INT-7",
        "retired 0.x shapes",
    ],
)
def test_the_patterns_leave_rules_defaults_and_citations_alone(text: str) -> None:
    assert not HISTORY.search(text) and not FIGURE.search(text), text
