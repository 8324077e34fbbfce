"""The proxy's judging process, found to be stopped, and its findings log read.

:func:`judging_process` finds the spawned child that judges streams (not
multiprocessing's resource tracker) through ``/proc``, so a test can SIGSTOP it and
make its starvation certain; :func:`log_lines` reads the proxy's ``--log`` file.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson


def judging_process(pid: int) -> int:
    """The proxy's judging process (a multiprocessing spawn child, not its resource tracker)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            for child in f.read().split():
                with open(f"/proc/{child}/cmdline", "rb") as cmd:
                    if b"spawn_main" in cmd.read():
                        return int(child)
    raise AssertionError("no judging process")


def log_lines(log: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in log.read_bytes().splitlines()] if log.exists() else []
