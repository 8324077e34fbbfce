"""Ctrl-C while the command is still being imported: held until it can be answered.

``python -m agui_tools`` imports the whole CLI before ``main`` runs (about a tenth
of a second); a SIGINT in that window would kill the process by the signal, with
a ``KeyboardInterrupt`` traceback, before any command could say "interrupted" or
print its ``--json`` document. :func:`hold` defers it; :func:`release` restores
Python's handler and raises the held interrupt where the command handles it.
Standard library only: it is imported before anything else of the CLI.
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
