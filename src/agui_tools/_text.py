"""Peer-controlled text made safe to show: on a terminal, in a log, in HTML.

A peer's ``"x\\nCRITICAL forged line"`` must not become a line of ours, nor a ``\\x1b]0;…``
our user's terminal obeys. One escaping, every face:

* :func:`one_line` — a line holding a peer's string: every control escaped, line breaks
  and tabs too;
* :func:`terminal_text` — a block for a terminal: line breaks and tabs kept;
* :func:`terminal_json` — ``--json`` output with C1 controls and bidi overrides ``\\u``-escaped
  (orjson writes them raw);
* :func:`html_text` — HTML text or attribute values, controls shown as on a terminal.

A user's own argument echoed in an error is :func:`shown` (quoted, :func:`cut` past
:data:`SHOWN_CHARS`). Logs get a budget too (:class:`LogGuard`): a peer able to make us log
per request or per failed ``accept()`` could make us write without end.
"""

from __future__ import annotations

import html
import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Final

__all__ = [
    "SHOWN_CHARS",
    "LogGuard",
    "cut",
    "escape_controls",
    "guarded_logger",
    "html_text",
    "one_line",
    "shown",
    "terminal_json",
    "terminal_text",
]

# C0 controls except TAB and LF, DEL, C1 controls, and the Unicode format
# characters that reorder or hide text (bidi embeddings/overrides/isolates,
# zero-width joiners and spaces, the BOM, line/paragraph separators).
_UNSAFE: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
)
_UNSAFE_IN_A_LINE: Final = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
)
_NAMED: Final = {
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
    "\x1b": "\\x1b",
    "\x07": "\\a",
    "\x08": "\\b",
    "\x0b": "\\v",
    "\x0c": "\\f",
}


def _escape(match: re.Match[str]) -> str:
    ch = match.group(0)
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(value: str, *, one_line: bool = False) -> str:
    """``value`` with every control/format character replaced by a visible escape;
    with ``one_line``, line breaks and tabs too (a log record is one line)."""
    return (_UNSAFE_IN_A_LINE if one_line else _UNSAFE).sub(_escape, value)


def one_line(value: object) -> str:
    """``value`` (``str()`` of it) as one line of output: every control or format
    character a visible escape, line breaks and tabs included."""
    return escape_controls(value if isinstance(value, str) else str(value), one_line=True)


def terminal_text(value: object) -> str:
    """``value`` (``str()`` of it) as it may be written to a terminal: line breaks and
    tabs kept, every other control or format character a visible escape (``\\x1b``,
    ``\\r``, ``\\x9b``, ``\\u202e``) — shown, never obeyed, never dropped."""
    return escape_controls(value if isinstance(value, str) else str(value))


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def terminal_json(document: bytes) -> bytes:
    """A JSON document (orjson's output) with every control or format character
    written as a ``\\u`` escape: the same value for a parser, inert on a terminal.
    Outside its strings JSON is ASCII and whitespace, so only strings change."""
    text = document.decode()
    if _UNSAFE.search(text) is None:
        return document
    return _UNSAFE.sub(_json_escape, text).encode()


def html_text(value: object) -> str:
    """``value`` for HTML text or a quoted attribute: markup escaped, and controls
    shown as :func:`terminal_text` shows them."""
    return html.escape(terminal_text(value), quote=True)


SHOWN_CHARS: Final = 200
"""How much of a user's argument (a URL, a path) an error line repeats."""


def cut(value: str, limit: int = SHOWN_CHARS) -> str:
    """``value`` cut in the middle past ``limit`` characters, saying its length.

    A URL of a hundred kilobytes is echoed as its start and end and its length, so the one
    line stays one line a person can read.
    """
    if len(value) <= limit:
        return value
    keep = limit // 2
    return f"{value[:keep]}…{value[-(keep // 2) :]} ({len(value):,} characters)"


def shown(value: str, limit: int = SHOWN_CHARS) -> str:
    """``value`` quoted for an error line (:func:`cut` past ``limit`` characters)."""
    return repr(value) if len(value) <= limit else f"'{cut(value, limit)}'"


class LogGuard(logging.Filter):
    """Escapes each record to one line, and rate-limits records per message template.

    At most ``burst`` per ``period`` seconds pass; the next that passes says how many were
    suppressed. The message is escaped whole and its arguments dropped. A traceback is left to
    the handler unless it is an :class:`OSError` (the machine's condition), said on the line.
    """

    def __init__(
        self, *, burst: int = 20, period: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.burst = burst
        self.period = period
        self._clock = clock
        self._lock = threading.Lock()
        self._windows: dict[tuple[str, str], list[float]] = {}  # [start, passed, suppressed]

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = self._clock()
        with self._lock:
            window = self._windows.get(key)
            if window is None or now - window[0] >= self.period:
                suppressed = int(window[2]) if window is not None else 0
                if len(self._windows) > 1024:  # templates are ours: this is a backstop
                    self._windows.clear()
                self._windows[key] = window = [now, 0, 0]
            else:
                suppressed = 0
            if window[1] >= self.burst:
                window[2] += 1
                return False
            window[1] += 1
        try:
            message = record.getMessage()
        except Exception:  # a bad format string of ours: show it, do not crash the log
            message = f"{record.msg!r} % {record.args!r}"
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, OSError):
            message += f" ({type(error).__name__}: {error})"
            record.exc_info = None
            record.exc_text = None
        if suppressed:
            message += f" [{suppressed} similar line(s) suppressed in the last {self.period:g} s]"
        record.msg = escape_controls(message, one_line=True)
        record.args = None
        return True


def guarded_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` with a :class:`LogGuard` (added once)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, LogGuard) for f in logger.filters):
        logger.addFilter(LogGuard())
    return logger
