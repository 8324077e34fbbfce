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
