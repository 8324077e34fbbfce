"""``agui-tools proxy --record DIR``: each POST exchange as numbered files (the contract:
docs/proxy.md, "Recording"), what ``mock`` and ``verify`` read. A file that cannot be
written stops the recording, never the exchange."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import orjson

from .._text import guarded_logger
from ..app._watch import binding_of

__all__ = ["RecordedExchange", "Recording"]

log = guarded_logger("agui_tools.proxy")

_EXTENSIONS: Final = {"sse": "sse", "proto": "pb", "ndjson": "ndjson"}
_NUMBERED: Final = re.compile(r"^(\d{4,})\.")
"""Any file of a recorded exchange (``NNNN.input.json``, ``NNNN.sse``, ``NNNN.body``…)."""


class Recording:
    """``--record DIR``: each POST exchange as numbered files (docs/proxy.md).

    Numbering goes on after the highest ``NNNN.*`` already there (read once); each number
    is claimed by one exclusive create, never a look at the folder, so two proxies share it."""

    def __init__(self, directory: str | Path, on_error: Callable[[str], Any] | None = None):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        taken = [
            int(m.group(1))
            for p in self.directory.iterdir()
            if (m := _NUMBERED.match(p.name)) is not None
        ]
        self._next = max(taken, default=0) + 1
        self.on_error = on_error
        self.problem: str | None = None
        """Why the recording stopped (the folder cannot be written), once it has."""
        self.missed = 0
        """Exchanges not recorded (or left partial) since it stopped."""

    def start(self, body: bytes) -> RecordedExchange | None:
        """The exchange's files, its input written; ``None`` once the recording has
        stopped (the folder cannot be written: forwarding goes on, unrecorded)."""
        if self.problem is not None:
            self.missed += 1
            return None
        while True:  # claimed by an exclusive create: a second proxy takes the next
            number = self._next
            self._next += 1
            prefix = self.directory / f"{number:04d}"
            try:
                with Path(f"{prefix}.input.json").open("xb") as claimed:
                    claimed.write(body)
            except FileExistsError:
                continue
            except OSError as exc:
                self.failed(exc)
                return None
            return RecordedExchange(prefix, self)

    def failed(self, exc: OSError) -> None:
        """A file of the recording cannot be written: the exchange is not recorded,
        and the recording stops — said once (``on_error``), never raised."""
        self.missed += 1
        if self.problem is not None:
            return
        where = f" ({exc.filename})" if exc.filename else ""
        self.problem = (
            f"cannot record in {self.directory}: {exc.strerror or exc}{where}; recording "
            "stopped, forwarding goes on"
        )
        if self.on_error is not None:
            self.on_error(self.problem)
        else:
            log.error("%s", self.problem)


class RecordedExchange:
    """One exchange's files, written as the exchange goes. A file that cannot be
    written stops the recording (:meth:`Recording.failed`), never the exchange."""

    def __init__(self, prefix: Path, recording: Recording | None = None) -> None:
        self.prefix = prefix
        self.recording = recording
        self._file: Any = None
        self._lost = False
        self.stream_path: Path | None = None

    def _failed(self, exc: OSError) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
        if not self._lost:
            self._lost = True
            if self.recording is not None:
                self.recording.failed(exc)

    def open(self, content_type: str | None) -> None:
        if self._lost:
            return
        binding = binding_of(content_type)
        media = (content_type or "").split(";", 1)[0].strip().lower()
        ext = _EXTENSIONS.get(binding or "") or ("json" if media.endswith("json") else "body")
        self.stream_path = Path(f"{self.prefix}.{ext}")
        # unbuffered: each chunk is in the file before it is forwarded (a reader of the
        # recording never sees less than the frontend has)
        try:
            self._file = self.stream_path.open("wb", buffering=0)
        except OSError as exc:
            self._failed(exc)

    def write(self, chunk: bytes) -> None:
        if self._file is not None:
            view = memoryview(chunk)
            try:
                while view:  # a raw write may take part of the chunk
                    view = view[self._file.write(view) :]
            except OSError as exc:
                self._failed(exc)

    def finish(self, meta: Mapping[str, Any]) -> None:
        try:
            if self._file is not None:
                file, self._file = self._file, None
                file.close()
            if not self._lost:
                # whole or not at all: a reader (verify DIR, the mock, a test) that sees
                # the meta sees all of it — written aside, then renamed into place
                final = Path(f"{self.prefix}.meta.json")
                aside = final.with_name(final.name + ".partial")
                aside.write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2) + b"\n")
                os.replace(aside, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                Path(f"{self.prefix}.meta.json.partial").unlink()
            self._failed(exc)
