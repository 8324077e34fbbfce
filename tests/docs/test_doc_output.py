"""A doc example that prints a stream prints what its page shows (issue 26): the
first example of docs/agent.md reads the body with plain httpx, whose default
``Accept: */*`` the server answers in protobuf — the page must ask for SSE."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "agent.md"
_ID = re.compile(r"\b(msg|call|result)-[0-9a-f]{32}\b")


def test_the_first_agent_example_prints_the_sse_body_the_page_shows(tmp_path: Path) -> None:
    text = PAGE.read_text()
    example = re.search(r"^```python\n(.*?)^```", text, re.S | re.M)
    shown = re.search(r"^```python\n.*?^```\n.*?^```text\n(.*?)^```", text, re.S | re.M)
    assert example and shown, "docs/agent.md: the first example and the output it prints"
    script = tmp_path / "agent_example.py"
    script.write_text(example.group(1))
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    printed = proc.stdout.decode("utf-8")  # protobuf bytes would not even decode as text
    lines = [_ID.sub(r"\1-…", line) for line in printed.splitlines() if line.strip()]
    assert lines == shown.group(1).splitlines()
