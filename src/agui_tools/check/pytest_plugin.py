"""A pytest fixture that puts ``agui-tools check`` in an agent's own test suite::

    pytest_plugins = ["agui_tools.check.pytest_plugin"]

    def test_my_agent_conforms(agui_check):
        agui_check(agent_app(my_agent))  # or a URL: agui_check("http://127.0.0.1:8000/agent")

``agui_check(target, **options)`` serves an ASGI ``target`` on a loopback port (or uses a
URL), runs :func:`~agui_tools.check.check_agent`, fails the test with one line per failing
case, and returns the :class:`~agui_tools.check.CheckReport` otherwise (``docs/check.md``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from ._report import CheckReport, counts_at
from ._runner import check_agent

__all__ = ["agui_check", "failure_text", "serving_in_thread"]


@contextmanager
def serving_in_thread(app: Any, *, path: str = "/") -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a thread; yield its URL."""
    from ..transport._serving import serving

    ready: dict[str, Any] = {}
    started = threading.Event()
    stop: asyncio.Event | None = None
    loop = asyncio.new_event_loop()

    async def main() -> None:
        nonlocal stop
        stop = asyncio.Event()
        try:
            async with serving(app) as base:
                ready["url"] = base + path
                started.set()
                await stop.wait()
        except BaseException as exc:  # reported to the caller, not lost in the thread
            ready["error"] = exc
            started.set()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    started.wait(30)
    try:
        if "error" in ready:
            raise RuntimeError(f"cannot serve the agent: {ready['error']!r}")
        if "url" not in ready:
            raise RuntimeError("the agent's server did not start within 30 s")
        yield ready["url"]
    finally:
        if stop is not None:
            loop.call_soon_threadsafe(stop.set)
        thread.join(30)
        loop.close()


def failure_text(report: CheckReport) -> str:
    """One line per failing case: what broke, by rule, and where to look."""
    lines = [f"agui-tools check: {len(report.failed())} case(s) failed against {report.url}"]
    for case in report.failed():
        for finding in case.findings:
            if counts_at(report.effective_level, finding.verdict, case.tier):
                lines.append(
                    f"  {case.id} {finding.verdict.value} [{finding.rule}] {finding.message}"
                )
    return "\n".join(lines)


@pytest.fixture
def agui_check() -> Callable[..., CheckReport]:
    """Check an agent (an ASGI app or a URL); fail the test unless it conforms."""

    def run(target: Any, *, path: str = "/", **options: Any) -> CheckReport:
        if isinstance(target, str):
            report = check_agent(target, **options)
        else:
            with serving_in_thread(target, path=path) as url:
                report = check_agent(url, **options)
        if not report.ok:
            pytest.fail(failure_text(report), pytrace=False)
        return report

    return run
