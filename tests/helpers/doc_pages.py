"""Reading the fenced blocks of the README and docs/ and the markers before them, for
the tests that run a page's examples (tests/docs/test_doc_output.py for Python,
tests/docs/test_shell_examples.py for the shell): one reading, so a marker means the
same thing to both."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [*sorted(ROOT.glob("*.md")), *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([\w+-]*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
SHELL_LANGUAGES = {"sh", "bash", "shell", "console"}
MARK = re.compile(r"<!--\s*(output|fragment)\s*(?::\s*(.*?))?\s*-->\s*$")
MINTED = re.compile(
    r"\b(msg|call|result|run|thread)-"
    r"(?:[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b"
)


def fenced_blocks(text: str) -> Iterator[tuple[str, str, int, re.Match[str] | None]]:
    """``(language, body, fence line, marker)`` for each fenced block of a page, the
    marker being the ``<!-- output -->`` or ``<!-- fragment: why -->`` comment on the
    line before the fence, if any."""
    for m in FENCE.finditer(text):
        start = text.count("\n", 0, m.start()) + 1  # the fence's line
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        yield m.group(1), m.group(2), start, MARK.search(before)


def normalized(printed: str) -> list[str]:
    """Printed lines as a page shows them: blank lines left out, trailing spaces
    dropped, minted ids shortened (``msg-3f2a…`` → ``msg-…``)."""
    return [MINTED.sub(r"\1-…", line.rstrip()) for line in printed.splitlines() if line.strip()]


def pending_marked(pages: list[Path], pending: dict[str, str]) -> list[object]:
    """The pages as test cases, a page of ``pending`` an expected failure (strict: the
    day it passes the test says to remove the entry)."""
    return [
        pytest.param(p, marks=pytest.mark.xfail(reason=pending[p.name], strict=True))
        if p.name in pending
        else p
        for p in pages
    ]
