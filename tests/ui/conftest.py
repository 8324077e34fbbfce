"""Fixtures for the inspector's tests: a real inspector server in a thread, real Chromium.

The browser is Debian's ``chromium`` driven by the pinned ``playwright``
package (never Playwright's own download). ``make test`` installs it
(scripts/browser_setup.sh); when it is missing anyway, the browser tests fail
under ``CI=true`` and skip, saying why, elsewhere — never a quiet skip in CI.
"""

from __future__ import annotations

import asyncio
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agui_tools.ui.inspector import Inspector, serve_inspector

CHROMIUM = os.environ.get("AGUI_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "docs" / "img"

# Records every state a card's argument box went through, so a test can see it fill in.
WATCH_ARGUMENTS = """
window.__args = {};
new MutationObserver(() => {
  for (const card of document.querySelectorAll("article.card")) {
    const text = card.querySelector("pre.args").textContent;
    const seen = (window.__args[card.dataset.callId] ||= []);
    if (seen[seen.length - 1] !== text) seen.push(text);
  }
}).observe(document, { subtree: true, childList: true, characterData: true });
"""

Setup = Callable[[AsyncExitStack], Awaitable[Inspector]]


@dataclass
class Served:
    """An inspector serving in its own thread and event loop."""

    url: str
    inspector: Inspector
    loop: asyncio.AbstractEventLoop

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the inspector's loop (its state is that loop's) and return its result."""

        async def run() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(10)


@contextmanager
def inspector_server(setup: Setup) -> Iterator[Served]:
    """Serve the inspector ``setup`` builds (agents it needs entered into the stack)."""
    handoff: queue.Queue[Any] = queue.Queue()

    async def main() -> None:
        stop = asyncio.Event()
        try:
            async with AsyncExitStack() as stack:
                inspector = await setup(stack)
                loop = asyncio.get_running_loop()
                server = asyncio.create_task(
                    serve_inspector(
                        inspector, ready=lambda url: handoff.put((url, inspector, loop, stop))
                    )
                )
                waiter = asyncio.create_task(stop.wait())
                await asyncio.wait({server, waiter}, return_when=asyncio.FIRST_COMPLETED)
                for task in (server, waiter):
                    task.cancel()
                await asyncio.gather(server, waiter, return_exceptions=True)
                if server.done() and not server.cancelled() and server.exception():
                    raise server.exception()  # type: ignore[misc]
        except BaseException as exc:
            handoff.put(exc)
            raise

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    item = handoff.get(timeout=30)
    if isinstance(item, BaseException):
        raise item
    url, inspector, loop, stop = item
    try:
        yield Served(url, inspector, loop)
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(15)
        assert not thread.is_alive(), "the inspector server did not stop"


def unavailable(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why} — CI must run the browser tests (scripts/browser_setup.sh)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium for one test module (a module, so asyncio tests elsewhere
    never share a thread with Playwright's loop)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        unavailable(f"the playwright package is not installed ({exc})")
    if not os.access(CHROMIUM, os.X_OK):
        unavailable(f"Chromium is not installed at {CHROMIUM}")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@contextmanager
def cli_inspector(argv: list[str], *, cwd: Path | None = None) -> Iterator[str]:
    """Run ``agui-tools ARGV`` (an inspector), yield the URL it prints; on leaving,
    Ctrl-C must stop it with exit 0 and one line on stderr."""
    cli = Path(sys.executable).with_name("agui-tools")
    proc = subprocess.Popen(
        [str(cli), *argv], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        found = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert found is not None, line
        yield found.group(0)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0
        assert proc.stderr.read().strip() == f"agui-tools {argv[0]}: stopped"  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@contextmanager
def open_page(browser: Any, url: str, *, scheme: str = "light") -> Iterator[Any]:
    """A 1280×800 page on ``url``; a script error on the page fails the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme=scheme)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.add_init_script(WATCH_ARGUMENTS)
    page.set_default_timeout(15_000)
    page.goto(url)
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"script errors on the page: {errors}"


def screenshot(page: Any, name: str, tmp_path: Path) -> Path:
    """Take a screenshot; with AGUI_UPDATE_SCREENSHOTS=1 it also refreshes docs/img/NAME."""
    path = tmp_path / name
    page.screenshot(path=str(path))
    assert path.stat().st_size > 10_000, "an empty screenshot"
    if os.environ.get("AGUI_UPDATE_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        (SHOTS / name).write_bytes(path.read_bytes())
    return path
