"""The README has its example, and the generated rule table in docs/conformance.md
is current. (Every Python block runs, and prints what its page shows:
tests/docs/test_doc_output.py.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks(path: Path) -> list[str]:
    return BLOCK.findall(path.read_text())


def test_every_doc_with_examples_is_covered() -> None:
    assert blocks(ROOT / "README.md"), "the README's example must be a python block"


def test_rule_table_is_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "rules_table.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def test_the_compatibility_matrix_is_the_recorded_one() -> None:
    """docs/conformance.md shows the matrix the frameworks' recorded checks gave
    (interop/frameworks/baselines/matrix.json, written by ``python -m
    tests.helpers.frameworks baseline``) — a re-recording that changes a verdict
    cannot leave the page behind."""
    from tests.helpers.frameworks import matrix_table

    table = matrix_table()
    assert table.count("\n") > 20
    assert table in (ROOT / "docs" / "conformance.md").read_text(), (
        "docs/conformance.md's matrix is not the recorded one; paste the output of "
        "`python -m tests.helpers.frameworks matrix`"
    )
