"""Work measured without a clock: the Python lines agui_tools executes.

Timing thresholds make flaky tests; a count of executed lines is deterministic.
Doubling an input and comparing the counts tells linear (about 2x) from
quadratic (about 4x) on any machine, however loaded.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any


def lines_executed(fn: Callable[[], Any]) -> int:
    """How many line events ``fn()`` produces inside the agui_tools package."""
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if "agui_tools" in frame.f_code.co_filename:
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(previous)
    return count
