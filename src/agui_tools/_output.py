"""The one output channel of every command: stdout and stderr through a writer thread.

A command printing from an event loop must not stop when its reader does (an undrained
stderr, Ctrl-S, a stopped ``--log`` pipe would block the loop and every run). :func:`channel`
puts a :class:`QueuedStream` in place of ``sys.stdout``/``sys.stderr`` for the command:
writes are queued in order and one thread writes them; from a running loop a write never
waits (past :data:`QUEUE_BYTES` it is dropped and counted), elsewhere it waits for room. At
the end a reader idle for :data:`STALL_SECONDS` is given up, and the lost lines are said in
one line. A stream's write error is raised to the next write or flush outside a loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import IO, Any, Final

__all__ = [
    "QUEUE_BYTES",
    "STALL_SECONDS",
    "OutputQueue",
    "QueuedFile",
    "QueuedStream",
    "channel",
    "sink_of",
]

QUEUE_BYTES: Final = 4 * 1024 * 1024
"""How much output may wait for a slow reader before writes from a loop are dropped."""

STALL_SECONDS: Final = 2.0
"""How long the end of a command waits for a reader that reads nothing."""

CLOSE_JOIN_SECONDS: Final = 1.0
"""How long a closed queue waits for its writer thread to end (one still blocked in a
write to a reader that reads nothing is left to the interpreter's exit)."""


def _in_event_loop() -> bool:
    return asyncio._get_running_loop() is not None


class OutputQueue:
    """Chunks for several sinks, written in order by one thread (started on first use)."""

    def __init__(
        self, *, limit: int = QUEUE_BYTES, on_error: Callable[[OSError], None] | None = None
    ) -> None:
        self.limit = limit
        self.on_error = on_error
        """Called (on the writer thread) the first time a sink's write fails."""
        self._dropped_breaks = 0
        self._dropped_bytes = 0
        self._chunks: deque[tuple[Callable[[bytes], None], bytes]] = deque()
        self._queued = 0
        self._writing = False
        self._held: bytes | None = None
        self._progress = time.monotonic()
        self._errors: dict[Callable[[bytes], None], OSError] = {}
        self._reported: set[Callable[[bytes], None]] = set()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        """The command has ended: writes go straight to their sink. Read without the lock,
        as every late writer must (at interpreter exit a daemon thread may have died
        holding it)."""
        return self._closed

    def put(self, sink: Callable[[bytes], None], data: bytes, *, wait: bool) -> None:
        """Queue ``data`` for ``sink``; past the limit, wait for room (``wait``) or drop it."""
        if not data:
            return
        if self._closed or not self._queued_for(
            sink, data, wait
        ):  # the command has ended: written directly
            with contextlib.suppress(OSError):
                sink(data)

    def _queued_for(self, sink: Callable[[bytes], None], data: bytes, wait: bool) -> bool:
        """:meth:`put`'s work under the lock; ``False`` when the queue is closed."""
        with self._cond:
            if self._closed:
                return False
            if sink in self._errors:  # said as the error it is (once), not counted as unread
                error = self._unreported(sink) if wait else None
                if error is not None:
                    raise error
                return True
            while self._queued and self._queued + len(data) > self.limit:
                if not wait:
                    self._drop(data)
                    return True
                self._cond.wait(0.1)
            if not self._chunks and not self._writing:  # the stall clock starts now
                self._progress = time.monotonic()
            self._chunks.append((sink, data))
            self._queued += len(data)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="agui-output", daemon=True)
                self._thread.start()
            self._cond.notify_all()
            return True

    @property
    def dropped_lines(self) -> int:
        """How many lines were not written because their reader was not reading (a part
        of a line counts as one); a sink's write error is its own news."""
        return self._dropped_breaks or (1 if self._dropped_bytes else 0)

    def _drop(self, data: bytes) -> None:
        self._dropped_breaks += data.count(b"\n")
        self._dropped_bytes += len(data)

    def raise_error(self, sink: Callable[[bytes], None]) -> None:
        """Raise the error ``sink``'s write met (a reader gone, a full disk), the first
        time it is asked: once answered, the sink swallows what is written to it."""
        with self._cond:
            error = self._unreported(sink)
        if error is not None:
            raise error

    def _unreported(self, sink: Callable[[bytes], None]) -> OSError | None:
        if sink in self._reported:
            return None
        error = self._errors.get(sink)
        if error is not None:
            self._reported.add(sink)
        return error

    def drain(self, stall: float = STALL_SECONDS) -> bool:
        """Wait until everything queued is written, or until ``stall`` seconds pass with
        nothing written; then count what is left as not written. ``True``: all written."""
        with self._cond:
            while self._chunks or self._writing:
                if time.monotonic() - self._progress >= stall:
                    for _, data in self._chunks:
                        self._drop(data)
                    if self._held is not None:  # the write the reader holds, counted once
                        self._drop(self._held)
                        self._held = None
                    self._chunks.clear()
                    self._queued = 0
                    return False
                self._cond.wait(0.05)
            return True

    def close(self) -> None:
        """Let the writer thread end once nothing is queued (a command run in a process
        that goes on, a test, leaves no thread behind); a write made later (a logger
        still holding the stream) is made directly."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        # the writer ends now, not at interpreter exit: a daemon thread that takes the lock
        # as the interpreter finalizes dies holding it, and a late flush would wait for ever
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(CLOSE_JOIN_SECONDS)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._chunks:
                    if self._closed:
                        return
                    self._cond.wait()
                sink, data = self._chunks.popleft()
                self._writing = True
                self._held = data
                self._progress = time.monotonic()
            try:
                if sink not in self._errors:
                    sink(data)
            except OSError as exc:
                with self._cond:
                    first = sink not in self._errors
                    self._errors.setdefault(sink, exc)
                if first and self.on_error is not None:
                    self.on_error(exc)
            except Exception:  # a sink's own bug must not end the thread
                with self._cond:
                    self._drop(data)
            finally:
                with self._cond:
                    self._queued = max(0, self._queued - len(data))  # (0 if given up)
                    self._writing = False
                    self._held = None
                    self._progress = time.monotonic()
                    self._cond.notify_all()


def sink_of(stream: IO[str] | IO[bytes]) -> Callable[[bytes], None]:
    """How bytes reach ``stream``: its file descriptor when it has one (a writer thread
    blocked in a buffered file's lock would stop the interpreter's exit), else its
    ``write`` (a test's capture)."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        fd = -1
    if fd >= 0:
        with contextlib.suppress(OSError, ValueError):
            stream.flush()

        def write_fd(data: bytes) -> None:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]

        return write_fd
    if not isinstance(stream, io.TextIOBase):

        def write_bytes(data: bytes) -> None:
            stream.write(data)  # type: ignore[arg-type]
            stream.flush()

        return write_bytes
    encoding = getattr(stream, "encoding", None) or "utf-8"

    def write_text(data: bytes) -> None:
        stream.write(data.decode(encoding, "replace"))
        stream.flush()

    return write_text


class QueuedFile:
    """A file of the command's own (``proxy --log FILE``) written through a queue and a
    thread of its own, as stdout and stderr are: a reader that stops reading it (a
    FIFO, a full pipe) never stops the event loop, nor the command's other output."""

    def __init__(
        self, file: IO[bytes], *, on_error: Callable[[OSError], None] | None = None
    ) -> None:
        self.file = file
        self.queue = OutputQueue(on_error=on_error)
        self.sink = sink_of(file)

    def write(self, data: bytes) -> int:
        self.queue.put(self.sink, data, wait=not _in_event_loop())
        return len(data)

    def flush(self) -> None:
        """As :meth:`QueuedStream.flush`: outside a loop, out, or the write's error."""
        if _in_event_loop():
            return
        self.queue.drain()
        self.queue.raise_error(self.sink)

    def close(self, stall: float = STALL_SECONDS) -> int:
        """Write out what is queued (a reader that reads nothing for ``stall`` seconds is
        given up), close the file; how many lines could not be written."""
        self.queue.drain(stall)
        self.queue.close()
        with contextlib.suppress(OSError):
            self.file.close()
        return self.queue.dropped_lines


class _QueuedBytes(io.RawIOBase):
    """``stream.buffer``: bytes onto the same queue as the text."""

    def __init__(self, owner: QueuedStream) -> None:
        super().__init__()
        self._owner = owner

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._owner.put(bytes(data))
        return len(data)

    def flush(self) -> None:
        self._owner.flush()

    def fileno(self) -> int:
        return self._owner.fileno()


class QueuedStream(io.TextIOBase):
    """A text stream in place of ``sys.stdout``/``sys.stderr``: every write is queued on
    an :class:`OutputQueue` (what the original answers — ``isatty``, ``fileno``,
    ``encoding`` — is the original's)."""

    def __init__(self, original: IO[str], queue: OutputQueue) -> None:
        super().__init__()
        self.original = original
        self._queue = queue
        self.sink = sink_of(original)
        self._encoding = getattr(original, "encoding", None) or "utf-8"
        self.buffer = _QueuedBytes(self)

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return "backslashreplace"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        try:
            return bool(self.original.isatty())
        except (AttributeError, OSError, ValueError):
            return False

    def fileno(self) -> int:
        return self.original.fileno()

    def put(self, data: bytes) -> None:
        self._queue.put(self.sink, data, wait=not _in_event_loop())

    def write(self, text: str) -> int:
        self.put(text.encode(self._encoding, "backslashreplace"))
        return len(text)

    def flush(self) -> None:
        """Outside an event loop: wait until what was written is out (a prompt before the
        answer is read), and raise what the stream met. In a loop: nothing to wait for."""
        if _in_event_loop() or self._queue.closed:
            return
        self._queue.drain()
        self._queue.raise_error(self.sink)

    def close(self) -> None:  # the original stays open: it is not ours
        pass


@contextlib.contextmanager
def channel(command: str, *, stall: float = STALL_SECONDS) -> Iterator[OutputQueue]:
    """``sys.stdout`` and ``sys.stderr`` through one :class:`OutputQueue` while the block
    runs; at its end the queue written out (a reader that reads nothing for ``stall``
    seconds given up) and the lines that could not be written said on stderr."""
    who = f"agui-tools {command}" if command.isidentifier() else "agui-tools"
    queue = OutputQueue()
    out, err = sys.stdout, sys.stderr
    if isinstance(out, QueuedStream) or isinstance(err, QueuedStream):  # nested: one channel
        yield queue
        return
    sys.stdout, sys.stderr = QueuedStream(out, queue), QueuedStream(err, queue)
    stderr = sys.stderr
    try:
        yield queue
        queue.drain(stall)
        queue.raise_error(sys.stdout.sink)  # stdout's write error: the command's (main's)
    finally:
        sys.stdout, sys.stderr = out, err
        queue.drain(stall)
        queue.close()
        if queue.dropped_lines:
            # on a thread of its own: the queue's may still be held by the stalled reader
            line = (
                f"{who}: {queue.dropped_lines} line(s) could not be written "
                "(their reader was not reading)\n"
            )
            last = threading.Thread(target=_try, args=(stderr.sink, line.encode()), daemon=True)
            last.start()
            last.join(stall)


def _try(sink: Callable[[bytes], None], data: bytes) -> None:
    with contextlib.suppress(OSError):  # stderr itself gone: nowhere left to say it
        sink(data)
