"""Driving a command in a real terminal (a pty) and a served agent, for the CLI tests."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AGUI = [sys.executable, "-m", "agui_tools"]
ENV = {
    **os.environ,
    "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}",
    "COLUMNS": "120",
    "TERM": "xterm-256color",
}
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def plain(text: str) -> str:
    """Terminal output without its control sequences."""
    return _ANSI.sub("", text)


class Terminal:
    """One command running on a pty: read until a pattern, type, wait for its exit."""

    def __init__(self, args: Sequence[str], *, cwd: Path = ROOT, env: dict[str, str] | None = None):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the command, on a real terminal
            os.chdir(cwd)
            os.execvpe(sys.executable, [*AGUI, *args], env or ENV)
        self.output = ""
        self._pos = 0
        self.status: int | None = None

    def expect(self, pattern: str, timeout: float = 60.0) -> str:
        """Read until ``pattern`` matches the output (ANSI stripped) past the last match."""
        deadline = time.monotonic() + timeout
        while True:
            text = plain(self.output)
            match = re.compile(pattern).search(text, self._pos)
            if match:
                self._pos = match.end()
                return text
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"did not see {pattern!r}; got:\n{text[-3000:]}"
            if not self._read(min(remaining, 0.5)):
                text = plain(self.output)
                assert re.compile(pattern).search(text, self._pos), (
                    f"EOF before {pattern!r}:\n{text[-3000:]}"
                )
                return text

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:
            return False
        if not data:
            return False
        self.output += data.decode(errors="replace")
        return True

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def interrupt(self) -> None:
        """Ctrl-C, as typed: the terminal sends SIGINT to the foreground process."""
        os.write(self.fd, b"\x03")

    def wait(self, timeout: float = 60.0) -> int:
        """The exit code; the rest of the output is read. Killed (and failed) past ``timeout``."""
        deadline = time.monotonic() + timeout
        while self.status is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.status = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                raise AssertionError(f"still running after {timeout} s:\n{self.text[-3000:]}")
            self._read(0.1)
        while self._read(0.05):
            if not select.select([self.fd], [], [], 0)[0]:
                break
        return self.status

    @property
    def text(self) -> str:
        return plain(self.output)

    def close(self) -> None:
        if self.status is None:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.status = -9
        os.close(self.fd)


@contextmanager
def terminal(args: Sequence[str], **kwargs: object) -> Iterator[Terminal]:
    term = Terminal(args, **kwargs)  # type: ignore[arg-type]
    try:
        yield term
    finally:
        term.close()


@contextmanager
def served(agent: str = "tests.helpers.cli_agents:scripted", *extra: str) -> Iterator[str]:
    """``agui-tools serve AGENT --port 0`` in a subprocess; yields the printed URL."""
    server = subprocess.Popen(
        [*AGUI, "serve", agent, "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=ROOT,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        match = re.match(r"Serving AG-UI agent at (\S+)", line)
        assert match, (line, server.stderr.read() if server.stderr else "")
        yield match.group(1)
    finally:
        server.terminate()
        server.wait(timeout=20)


def one_line_interrupt(text: str, command: str) -> None:
    """The command ended on Ctrl-C as promised: one line, no traceback."""
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text[-3000:]
    assert "CancelledError" not in text, text[-3000:]
    lines = [line.rsplit("\r", 1)[-1] for line in text.splitlines() if line.strip()]
    assert lines and lines[-1].strip().startswith(f"agui-tools {command}: interrupted"), text[
        -2000:
    ]
    assert text.count(f"agui-tools {command}: interrupted") == 1


@contextmanager
def serving_in_thread(app: object) -> Iterator[str]:
    """An ASGI app on a real uvicorn server in a thread of this process; yields its base URL."""
    import asyncio
    import threading

    from agui_tools.testing import serving

    ready: list[str] = []
    stop = threading.Event()
    started = threading.Event()

    async def main() -> None:
        async with serving(app) as base:
            ready.append(base)
            started.set()
            while not stop.is_set():
                await asyncio.sleep(0.05)

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    try:
        assert started.wait(30), "the server did not start"
        yield ready[0]
    finally:
        stop.set()
        thread.join(30)
