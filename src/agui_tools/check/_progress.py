"""What ``agui-tools check`` says while it runs: one stderr line per case as it finishes,
and in a terminal a live bar — so a slow agent is told from a stuck checker.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any, TextIO

from .._text import escape_controls
from ._report import CaseResult, Verdict

__all__ = ["CaseProgress"]

_SAID = 100
"""How much of a non-pass case's headline its progress line carries."""


class CaseProgress:
    """A :data:`~agui_tools.check._runner.OnCase` printing one line per finished case.

    Use as a context manager around the check: in a terminal it shows the live bar
    (``live``: by default, when ``file`` is a terminal) and clears it at the end.
    """

    def __init__(
        self, total: int, url: str, *, file: TextIO | None = None, live: bool | None = None
    ) -> None:
        self.total = total
        self.url = url
        self.file = file if file is not None else sys.stderr
        self.live = self.file.isatty() if live is None else live
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> CaseProgress:
        if self.live:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(file=self.file),
                transient=True,
            )
            self._bar.start()
            from rich.markup import escape

            about = escape(escape_controls(self.url, one_line=True))
            self._task = self._bar.add_task(f"checking {about}", total=self.total)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __call__(self, result: CaseResult, verdict: Verdict, done: int, total: int) -> None:
        width = len(str(total))
        line = f"[{done:>{width}}/{total}] {verdict.value:<13} {result.id} ({result.seconds:.1f} s)"
        if verdict is not Verdict.PASS and result.observed:
            said = escape_controls(result.observed, one_line=True)
            line += f": {said[:_SAID]}{'…' if len(said) > _SAID else ''}"
        if self._bar is not None:
            self._bar.console.print(line, markup=False, highlight=False, soft_wrap=True)
            self._bar.update(self._task, completed=done, total=total)
        else:
            self._say(line)

    def _say(self, line: str) -> None:
        print(line, file=self.file, flush=True)
