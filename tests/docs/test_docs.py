"""Every Python code block in the README and docs/ runs, and the generated
rule table in docs/conformance.md is current."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks(path: Path) -> list[str]:
    return BLOCK.findall(path.read_text())


@pytest.mark.parametrize("path", [p for p in DOCS if blocks(p)], ids=lambda p: p.name)
def test_python_blocks_run(path: Path, tmp_path: Path) -> None:
    """The blocks of one file run in order, in one fresh interpreter, as a reader would."""
    program = "\n\n".join(blocks(path))
    script = tmp_path / f"{path.stem}.py"
    script.write_text(program)
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, f"{path.name}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"


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
