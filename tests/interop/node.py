"""Running the official TypeScript client's harness (``interop/ts/*.mjs``) from tests.

``make test`` installs ``interop/node_modules`` from the committed lockfile
(``npm ci --prefix interop``); without Node, or without that install, the
interop tests skip with :func:`skip_reason` saying which.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
INTEROP = ROOT / "interop"
TS = INTEROP / "ts"


def skip_reason() -> str | None:
    """Why the TypeScript harness cannot run here, or ``None`` when it can."""
    if shutil.which("node") is None:
        return "node not found: the official TypeScript client cannot run"
    if not (INTEROP / "node_modules" / "@ag-ui" / "client").is_dir():
        return "interop/node_modules missing: run `npm ci --prefix interop` (make test does)"
    return None


def run_node(script: str, *args: str, timeout: float = 120) -> dict[str, Any]:
    """Run ``interop/ts/<script>`` and parse the one JSON document it prints."""
    proc = node_process(script, *args, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"node {script} exited {proc.returncode}:\n{proc.stderr}")
    document: dict[str, Any] = json.loads(proc.stdout)
    return document


def node_process(script: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``interop/ts/<script>``; its exit code and output, whatever they are (a
    fault injected on purpose may kill the process)."""
    node = shutil.which("node")
    assert node is not None, skip_reason()
    # NODE_ENV=development|test makes the official reducer deep-freeze (slow); the
    # harness is meant to run the client as an application in production runs it.
    env = {k: v for k, v in os.environ.items() if k not in ("NODE_ENV", "VITEST_WORKER_ID")}
    return subprocess.run(
        [node, str(TS / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
        check=False,
    )
