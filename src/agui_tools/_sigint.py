"""Ctrl-C while the command is still being imported: held until it can be answered.

A SIGINT before ``main`` runs would die in a traceback before any command could say
"interrupted"; :func:`hold` defers it and :func:`release` raises it where the command handles
it. Standard library only: imported before anything else of the CLI.
"""

from __future__ import annotations

import signal
from types import FrameType

_held: list[int] = []
_holding = False


def _defer(signum: int, frame: FrameType | None) -> None:
    _held.append(signum)


def hold() -> None:
    """Defer SIGINT (only where Python's own handler is in place: an ignored SIGINT stays so)."""
    global _holding
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _defer)
        _holding = True


def release() -> None:
    """Python's SIGINT handler back; a SIGINT held meanwhile is raised now."""
    global _holding
    if not _holding:
        return
    _holding = False
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if _held:
        _held.clear()
        raise KeyboardInterrupt
