"""Every shell example in the README and docs/ runs as written, and prints what its page
shows (issue 36, the docs bullet) — the shell's side of tests/docs/test_doc_output.py,
with the same markers (also stated in tests/README.md, "Doc examples print what their
page shows"):

* A ```` ```sh ````, ```` ```bash ````, ```` ```shell ```` or ```` ```console ````
  block is an **example**. The shell examples of one page run in order, **line by
  line** (a line ending in ``\\`` goes on with the next; blank lines and ``#``
  comments are not commands; in a ``console`` block only the ``$ `` lines are, the
  others are what they print) — fed one at a time to one ``bash`` per page, as a
  reader types them (a variable or ``source`` holds for the lines after it), in a
  fresh temporary directory standing for the reader's clone: the checkout's
  top-level entries (``.venv``, ``tests``, …) are linked into it and whatever a line
  writes lands in it. ``PATH`` starts with the virtualenv's ``bin``, so ``agui-tools`` is
  this checkout's; ``BROWSER=true``, so a command that "opens the browser" opens
  none; stdin is empty. A line must exit 0; a failure names the page's line.
* A line that **serves** — ending in ``&``, or ``agui-tools serve|proxy|mock|inspect``
  or ``agui-tools demo --web`` (they run until Ctrl-C: the page means them in a
  terminal of their own) — is started in the background and waited for: ready when
  it has printed its address (``http://127.0.0.1:PORT``) and that port answers.
  Its port is its ``--port``, else the command's default (``serve`` and ``mock``
  8000, ``proxy`` 8001); if a server this page started holds it, that one is
  stopped first (the reader's Ctrl-C, before starting the next on the same port),
  and a port held by anything else fails the test saying so. Every server of a
  page is stopped by SIGINT (then killed) when the page is done, with anything a
  failed or stuck line left running (a line has a hang bound of 300 s).
* What an example **prints** — its lines' stdout and stderr together, in line
  order, a server's up to the moment it is ready — is compared with the
  ```` ```text ```` block marked ``<!-- output -->`` that follows it (or, in a
  ``console`` block, with its non-``$`` lines) the way the Python rule compares:
  blank lines left out, trailing spaces dropped, minted ids shortened
  (``msg-3f2a…`` → ``msg-…``). Ports are not normalised: the pages use fixed ones,
  and so does the test. An example that shows no output is still run; what it
  prints is not compared (a shell page shows the output that matters, not every
  table a command prints).
* A block that cannot run here — a real model, your own agent or tools, minutes of
  benchmarks — is marked ``<!-- fragment: why -->`` on the line before it and is
  checked by ``bash -n`` only; the reason is required. Nothing is skipped silently:
  an unmarked block runs.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.doc_pages import (
    PAGES,
    ROOT,
    SHELL_LANGUAGES,
    fenced_blocks,
    normalized,
    pending_marked,
)

SERVES = re.compile(r"^agui-tools\s+(?:(serve|proxy|mock|inspect)\b|(demo)\b.*\s--web\b)")
DEFAULT_PORT = {"serve": 8000, "mock": 8000, "proxy": 8001}
ADDRESS = re.compile(r"http://127\.0\.0\.1:(\d+)")
READY_WITHIN = 60.0  # hang bounds, not timing expectations
COMMAND_WITHIN = 300.0
ENV = {
    **os.environ,
    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    "BROWSER": "true",
    "COLUMNS": "120",
}
PENDING: dict[str, str] = {}
"""Pages whose example shows what the code should print and does not (the code is
wrong, not the page), each with why: expected to fail (strict — the day the code is
fixed the test says to remove the entry). Add none without a reason."""


@dataclass
class Command:
    line: int  # the page line the command starts on
    text: str
    serves: bool  # started in the background, stopped when the page is done


@dataclass
class ShellExample:
    line: int  # the block's first code line, 1-based
    code: str
    commands: list[Command]
    fragment: str | None = None
    shown: list[str] | None = None
    shown_line: int = 0


def commands(code: str, first_line: int, console: bool) -> list[Command]:
    """The commands of a block, continuation lines joined, each at its page line."""
    found: list[Command] = []
    pending: list[str] = []
    start = first_line
    for offset, raw in enumerate(code.splitlines()):
        line = raw
        if not pending:
            start = first_line + offset
            if console:
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            if not line.strip() or line.lstrip().startswith("#"):
                continue
        if line.rstrip().endswith("\\"):
            pending.append(line.rstrip()[:-1])
            continue
        text = " ".join(part.strip() for part in [*pending, line]).strip()
        pending = []
        words = text.split("#", 1)[0].rstrip()
        background = words.endswith("&") and not words.endswith("&&")
        found.append(Command(start, text, background or bool(SERVES.match(text))))
    return found


def console_output(code: str) -> list[str]:
    return normalized("\n".join(ln for ln in code.splitlines() if not ln.startswith("$ ")))


def shell_examples(path: Path) -> list[ShellExample]:
    """The page's shell blocks, each with its marker and the output it shows."""
    found: list[ShellExample] = []
    for lang, body, start, mark in fenced_blocks(path.read_text()):
        if lang in SHELL_LANGUAGES:
            fragment = None
            if mark and mark.group(1) == "fragment":
                fragment = mark.group(2) or ""
                assert fragment, (
                    f"{path.name}:{start}: a fragment marker says why (<!-- fragment: … -->)"
                )
            console = lang == "console"
            example = ShellExample(start + 1, body, commands(body, start + 1, console), fragment)
            if console and fragment is None:
                example.shown, example.shown_line = console_output(body), start + 1
            found.append(example)
        elif mark and mark.group(1) == "output" and found and found[-1].line > 0:
            last = found[-1]
            assert lang == "text", f"{path.name}:{start}: an output block is a ```text block"
            assert last.shown is None, f"{path.name}:{start}: a second output for one example"
            assert last.fragment is None, f"{path.name}:{start}: a fragment prints nothing"
            last.shown, last.shown_line = normalized(body), start
        elif lang == "python":
            found.append(ShellExample(0, "", []))  # an output after it is not the shell's
    return [ex for ex in found if ex.line > 0]


def shown_name(page: Path) -> str:
    """The page as a failure names it: its path in the repository."""
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else page.name


def port_answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Server:
    command: Command
    pid: int  # its own process group (the shell runs with job control)
    log: Path
    port: int | None = None

    def printed(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def running(self) -> bool:
        try:
            os.kill(self.pid, 0)
            with open(f"/proc/{self.pid}/stat") as stat:
                return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False


class PageShell:
    """The reader's shell for one page: one ``bash`` fed the page's lines one by one
    (so a variable or ``source`` holds for the lines after it), in a fresh directory,
    and the servers it started. Everything it starts is in its session, killed when
    the page is done."""

    def __init__(self, page: Path, cwd: Path) -> None:
        self.page, self.cwd = page, cwd
        self.servers: list[Server] = []
        self.shell = subprocess.Popen(
            ["bash", "--norc", "--noprofile"], cwd=cwd, env=ENV, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self._pending = b""
        self._send("set -m", "the shell's start")  # job control: a server in its own group

    def _send(self, script: str, where: str) -> tuple[str, int]:
        """Run ``script`` in the shell; what it printed and its exit status."""
        token = uuid.uuid4().hex
        assert self.shell.stdin is not None and self.shell.stdout is not None
        self.shell.stdin.write(f"{script}\nprintf '\\n{token} %s\\n' \"$?\"\n".encode())
        self.shell.stdin.flush()
        end = re.compile(rb"\n" + token.encode() + rb" (\d+)\n")
        fd = self.shell.stdout.fileno()
        deadline = time.monotonic() + COMMAND_WITHIN
        while not (found := end.search(self._pending)):
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"{where}: still running after {COMMAND_WITHIN:.0f} s")
            if select.select([fd], [], [], left)[0]:
                chunk = os.read(fd, 65536)
                if not chunk:
                    text = self._pending.decode(errors="replace")
                    pytest.fail(f"{where}: the shell ended (exit {self.shell.wait()}):\n{text}")
                self._pending += chunk
        out, self._pending = self._pending[: found.start()], self._pending[found.end() :]
        return out.decode(errors="replace"), int(found.group(1))

    def run(self, command: Command) -> str:
        where = f"{shown_name(self.page)}:{command.line}"
        if command.serves:
            return self._start(command, where)
        out, status = self._send(f"{{ {command.text}\n}} < /dev/null", where)
        if status != 0:
            pytest.fail(f"{where}: `{command.text}` exited {status}:\n{out[-3000:]}")
        return out if out.endswith("\n") or not out else out + "\n"

    def _start(self, command: Command, where: str) -> str:
        text = command.text.split("#", 1)[0].rstrip().removesuffix("&").rstrip()
        words = shlex.split(text)
        port = DEFAULT_PORT.get(words[1]) if len(words) > 1 else None
        if "--port" in words[:-1]:
            port = int(words[words.index("--port") + 1])
        if port:
            for server in [s for s in self.servers if s.port == port]:
                self._stop(server)  # the reader's Ctrl-C before reusing the port
                self.servers.remove(server)
            if port_answers(port):
                pytest.fail(
                    f"{where}: port {port}, which the page uses, is taken by another process"
                )
        log = self.cwd.parent / f"{self.cwd.name}-server-{command.line}.log"
        out, _ = self._send(
            f"( exec {text}\n) > {shlex.quote(str(log))} 2>&1 < /dev/null &\necho $!", where
        )
        server = Server(command, int(out.split()[-1]), log)
        self.servers.append(server)
        deadline = time.monotonic() + READY_WITHIN
        while True:
            printed = server.printed()
            address = ADDRESS.search(printed)
            if address and port_answers(int(address.group(1))):
                server.port = port or int(address.group(1))
                return printed
            if not server.running():
                pytest.fail(f"{where}: `{text}` ended before serving:\n{printed[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"{where}: `{text}` did not serve in {READY_WITHIN:.0f} s:\n{printed}")
            time.sleep(0.1)

    def _stop(self, server: Server) -> None:
        """Ctrl-C, as the reader stops a server; killed if it outlives a hang bound."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGINT)
        deadline = time.monotonic() + 15
        while server.running() and time.monotonic() < deadline:
            time.sleep(0.1)

    def close(self) -> None:
        for server in self.servers:
            self._stop(server)
        assert self.shell.stdin is not None and self.shell.stdout is not None
        with contextlib.suppress(OSError):
            self.shell.stdin.close()
        for pid in _in_session(self.shell.pid):  # what a failed or stuck line left
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.shell.wait()
        self.shell.stdout.close()


def _in_session(sid: int) -> list[int]:
    """The processes of a session (Linux's /proc): all a page's shell started."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.getsid(int(entry)) == sid:
                    found.append(int(entry))
    return found


def clone(tmp: Path) -> Path:
    """A fresh directory standing for the reader's clone of the repository."""
    cwd = Path(tempfile.mkdtemp(prefix="clone-", dir=tmp))
    for entry in ROOT.iterdir():
        if entry.name != ".git":
            (cwd / entry.name).symlink_to(entry)
    return cwd


def _pages() -> list[Path]:
    return [p for p in PAGES if shell_examples(p)]


def run_page(path: Path, tmp: Path) -> None:
    """Run the page's shell examples as the rule says; fail naming the page's line."""
    shell = PageShell(path, clone(tmp))
    try:
        for ex in shell_examples(path):
            where = f"{shown_name(path)}:{ex.line}"
            if ex.fragment is not None:
                code = "\n".join(c.text for c in ex.commands)
                proc = subprocess.run(["bash", "-n"], input=code, capture_output=True, text=True)
                if proc.returncode != 0:
                    pytest.fail(f"{where}: does not parse:\n{proc.stderr}")
                continue
            printed = "".join(shell.run(command) for command in ex.commands)
            if ex.shown is not None:
                assert normalized(printed) == ex.shown, (
                    f"{where}: prints something else than the page shows "
                    f"({path.name}:{ex.shown_line})"
                )
    finally:
        shell.close()


@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", pending_marked(_pages(), PENDING), ids=lambda p: p.name)
def test_the_shell_examples_of_a_page_run_and_print_what_it_shows(
    path: Path, tmp_path: Path
) -> None:
    run_page(path, tmp_path)


def test_the_shell_markers_are_read_as_the_rule_says(tmp_path: Path) -> None:
    """Continuations join, comments and blanks are no commands, serving commands and
    ``&`` go to the background, an output belongs to the shell block before it (not to
    a Python block's), a console block's own lines are its output."""
    page = tmp_path / "page.md"
    page.write_text(
        "```sh\n# a comment\necho one \\\n  two   # said\n\nagui-tools serve --port 0\n"
        "sleep 1 &\n```\n\n<!-- output -->\n```text\none two\n```\n\n"
        "```python\nprint(1)\n```\n<!-- output -->\n```text\n1\n```\n\n"
        "<!-- fragment: needs your agent -->\n```bash\nagui-tools serve my_agent:agent\n```\n\n"
        "```console\n$ echo msg-0123456789abcdef0123456789abcdef\nmsg-…\n```\n"
    )
    first, second, third = shell_examples(page)
    assert [(c.line, c.text, c.serves) for c in first.commands] == [
        (3, "echo one two   # said", False),
        (6, "agui-tools serve --port 0", True),
        (7, "sleep 1 &", True),
    ]
    assert first.shown == ["one two"] and first.fragment is None
    assert second.fragment == "needs your agent" and second.shown is None
    assert [c.text for c in third.commands] == ["echo msg-0123456789abcdef0123456789abcdef"]
    assert third.shown == ["msg-…"]
    page.write_text("<!-- fragment -->\n```sh\nx\n```\n")
    with pytest.raises(AssertionError, match="says why"):
        shell_examples(page)


def test_a_page_that_prints_something_else_fails_at_its_line(tmp_path: Path) -> None:
    page = ROOT / "docs" / "page.md"  # named as a page of the repository; never written
    shell = PageShell(page, tmp_path)
    try:
        assert shell.run(Command(3, "echo hello; echo >&2 there", False)) == "hello\nthere\n"
        assert shell.run(Command(4, "X=kept; printf no-newline", False)) == "no-newline\n"
        assert shell.run(Command(5, "echo $X", False)) == "kept\n"
        with pytest.raises(pytest.fail.Exception, match=r"docs/page\.md:6: `false` exited 1"):
            shell.run(Command(6, "false", False))
    finally:
        shell.close()


def test_a_page_is_held_to_its_output_and_its_fragments_to_bash_n(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```sh\nX=two\necho one $X\n```\n<!-- output -->\n```text\none two\n```\n")
    run_page(page, tmp_path)
    page.write_text("```sh\necho one\n```\n<!-- output -->\n```text\none two\n```\n")
    with pytest.raises(AssertionError, match=r"page\.md:2: prints something else .*page\.md:5"):
        run_page(page, tmp_path)
    page.write_text("<!-- fragment: your host -->\n```sh\nssh your-host \\\n  'uptime'\n```\n")
    run_page(page, tmp_path)
    page.write_text("<!-- fragment: your host -->\n```sh\nif then fi (\n```\n")
    with pytest.raises(pytest.fail.Exception, match=r"page\.md:3: does not parse"):
        run_page(page, tmp_path)


def test_a_port_taken_by_another_process_fails_clearly(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        shell = PageShell(ROOT / "docs" / "page.md", tmp_path)
        try:
            with pytest.raises(pytest.fail.Exception, match=f"port {port}, .* is taken"):
                shell.run(Command(9, f"agui-tools serve --port {port} &", True))
            assert shell.servers == []  # nothing was started on a taken port
        finally:
            shell.close()


def test_a_server_is_waited_for_and_stopped(tmp_path: Path) -> None:
    """A serving line returns once its address answers, with what it printed; the
    next server on its port stops it first; closing the page stops the rest."""
    shell = PageShell(ROOT / "docs" / "page.md", tmp_path)
    try:
        printed = shell.run(Command(1, "agui-tools serve --port 0", True))
        first = shell.servers[0]
        assert ADDRESS.search(printed) and first.port and port_answers(first.port)
        again = shell.run(Command(2, f"agui-tools serve --port {first.port} &", True))
        assert f"127.0.0.1:{first.port}" in again and not first.running()
        (second,) = shell.servers
        assert second is not first and second.running() and second.port == first.port
    finally:
        shell.close()
    assert not second.running() and not port_answers(first.port)


def test_every_page_with_shell_examples_is_covered() -> None:
    covered = {p.name for p in _pages()}
    assert {"README.md", "proxy.md", "check.md", "cli.md"} <= covered, covered
