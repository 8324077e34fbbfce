"""The inspector page under a long stream, in headless Chromium, side by side with
``agui-inspector`` 0.2.0 (issue 24): the same agent streaming N text deltas, rendered
by each page.

* ours — ``agui-tools inspect`` (the in-process server the UI tests use) driving
  the agent; the page is sent the session by our back end;
* ``agui-inspector`` 0.2.0 from PyPI — its packaged static page served beside the
  agent on one loopback origin (its page talks to the agent itself). It is
  installed on demand into ``.venv-agui-inspector`` (pinned, never into the
  project's venv); when that cannot be done its rows say "peer skipped" and why.

Each page runs once at N = 100 first (a warm-up, not reported). Figures per page
and N: **time to settle** (from the click on Send to the last
word shown, polled every 100 ms — a frozen page answers the poll late, so a freeze
counts), the **longest long task** (Long Tasks API, from the click on), the JS
heap and DOM nodes after (CDP ``Performance.getMetrics``), and for ours the time
of a **filter change** over every frame (input to the next layout). Nothing is
asserted: the tests assert the behaviour (tests/ui/test_inspector_frames.py).
"""

from __future__ import annotations

import asyncio
import json
import mimetypes
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from tests.ui.conftest import CHROMIUM, CHROMIUM_ARGS, inspector_server
from tests.ui.inspector_agents import deltas_agent

from agui_tools.testing import serving
from agui_tools.transport import agent_app
from agui_tools.ui.inspector import Inspector

ROOT = Path(__file__).resolve().parents[1]
PEER_VENV = ROOT / ".venv-agui-inspector"
PEER = "agui-inspector==0.2.0"
SIZES = (1_000, 5_000)
OURS_ONLY = (100_000,)
PEER_BUDGET = 300.0  # seconds a peer run may take before it is given up

OBSERVE = """
window.__long = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.__long.push({start: e.startTime, duration: e.duration});
}).observe({type: "longtask", buffered: true});
"""

FILTER = """(value) => {
  const box = document.getElementById("frame-filter");
  const t0 = performance.now();
  box.value = value;
  box.dispatchEvent(new Event("input"));
  document.body.offsetHeight;  // the layout the change causes
  return performance.now() - t0;
}"""


class PeerUnavailable(Exception):
    """The peer cannot run here; the message says why."""


def peer_static() -> Path:
    """The static page of agui-inspector 0.2.0, installed into its own venv on demand."""
    python = PEER_VENV / "bin" / "python"
    try:
        if not python.exists():
            subprocess.run(
                [sys.executable, "-m", "venv", str(PEER_VENV)], check=True, capture_output=True
            )
        probe = "import agui_inspector, os; print(os.path.dirname(agui_inspector.__file__))"
        found = subprocess.run([str(python), "-c", probe], capture_output=True, text=True)
        if found.returncode != 0:
            subprocess.run(
                [str(python), "-m", "pip", "install", "-q", PEER],
                check=True,
                capture_output=True,
                text=True,
                timeout=300,
            )
            found = subprocess.run(
                [str(python), "-c", probe], capture_output=True, text=True, check=True
            )
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", None) or str(exc)
        raise PeerUnavailable(
            f"peer skipped: cannot install {PEER} ({detail.strip()[-160:]})"
        ) from None
    static = Path(found.stdout.strip()) / "static"
    if not (static / "index.html").is_file():
        raise PeerUnavailable(f"peer skipped: {PEER} has no static/index.html")
    return static


def peer_app(static: Path, n: int) -> Starlette:
    """agui-inspector's page (as its mount helper serves it) beside the agent, one origin."""
    config = json.dumps({"version": 0, "agents": [{"id": "bench", "url": "/agent"}]})

    async def asset(request: Request) -> Response:
        name = request.path_params["asset"] or "index.html"
        if name == "config.json":
            return Response(config, media_type="application/json")
        path = (static / name).resolve()
        if static.resolve() not in path.parents or not path.is_file():
            return Response("not found", status_code=404)
        media = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return Response(path.read_bytes(), media_type=media)

    agent = agent_app(deltas_agent(n), path="/agent")
    return Starlette(routes=[Route("/agui-inspector/{asset:path}", asset), Mount("/", agent)])


@contextmanager
def served_in_thread(app: Any) -> Iterator[str]:
    ready: list[str] = []
    stop = threading.Event()

    async def main() -> None:
        async with serving(app) as base:
            ready.append(base)
            while not stop.is_set():
                await asyncio.sleep(0.05)

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    while not ready:
        time.sleep(0.02)
    try:
        yield ready[0]
    finally:
        stop.set()
        thread.join(10)


def _poll(page: Any, expression: str, budget: float) -> None:
    deadline = time.perf_counter() + budget
    while not page.evaluate(expression):
        if time.perf_counter() > deadline:
            raise TimeoutError(f"not settled within {budget:.0f} s")
        time.sleep(0.1)


def _measure(
    browser: Any, url: str, n: int, prompt: str, send: str, budget: float, ours: bool
) -> dict[str, Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.add_init_script(OBSERVE)
        page.goto(url)
        page.get_by_placeholder(prompt).wait_for()
        time.sleep(0.5)  # let the page finish its start-up work
        page.get_by_placeholder(prompt).fill("stream")
        started = page.evaluate("performance.now()")
        t0 = time.perf_counter()
        if send == "Enter":
            page.get_by_placeholder(prompt).press("Enter")
        else:
            page.get_by_role("button", name=send).click()
        marker = json.dumps(f"word{n - 1}")
        _poll(page, f"document.body.textContent.includes({marker})", budget)
        settle = time.perf_counter() - t0
        if ours:  # and every message applied (the frame list too)
            _poll(page, f"window.__frames().frames >= {n + 4}", budget)
        longest = max(
            (t["duration"] for t in page.evaluate("window.__long") if t["start"] >= started),
            default=0.0,
        )
        cdp = context.new_cdp_session(page)
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        if not metrics:
            cdp.send("Performance.enable")
            metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        out = {
            "settle": settle,
            "longest": longest,
            "heap": metrics.get("JSHeapUsedSize", 0.0) / 1e6,
            "nodes": int(metrics.get("Nodes", 0)),
        }
        if ours:
            out["filter"] = max(page.evaluate(FILTER, "RUN_"), page.evaluate(FILTER, ""))
            out["rows"] = page.evaluate("window.__frames().mounted")
        return out
    finally:
        context.close()


def ours(browser: Any, n: int) -> dict[str, Any]:
    app = agent_app(deltas_agent(n), path="/agent")

    async def setup(stack: AsyncExitStack) -> Inspector:
        base = await stack.enter_async_context(serving(app))
        return Inspector(f"{base}/agent")

    with inspector_server(setup) as served:
        return _measure(
            browser, served.url, n, "Message the agent (Ctrl+Enter sends)", "Send", 600, True
        )


def peer(browser: Any, static: Path, n: int) -> dict[str, Any]:
    with served_in_thread(peer_app(static, n)) as base:
        return _measure(
            browser, f"{base}/agui-inspector/", n, "Message the agent", "Enter", PEER_BUDGET, False
        )


def results(
    sizes: tuple[int, ...] = SIZES, ours_only: tuple[int, ...] = OURS_ONLY
) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    if not os.access(CHROMIUM, os.X_OK):
        return {"skipped": f"Chromium is not installed at {CHROMIUM}"}
    rows: list[dict[str, Any]] = []
    try:
        static: Path | None = peer_static()
        peer_note = f"{PEER} in {PEER_VENV.name}"
    except PeerUnavailable as exc:
        static, peer_note = None, str(exc)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            ours(browser, 100)  # warm-up (the browser's caches, our server's imports)
            if static is not None:
                peer(browser, static, 100)
            for n in (*sizes, *ours_only):
                row: dict[str, Any] = {"n": n, "ours": ours(browser, n)}
                if n in sizes and static is not None:
                    try:
                        row["peer"] = peer(browser, static, n)
                    except TimeoutError as exc:
                        row["peer"] = {"skipped": f"peer not measured: {exc}"}
                else:
                    row["peer"] = {"skipped": peer_note if static is None else "not run"}
                rows.append(row)
        finally:
            browser.close()
    return {"rows": rows, "peer": peer_note}


def _cell(r: dict[str, Any], key: str, fmt: str) -> str:
    return "—" if key not in r else format(r[key], fmt)


def report(res: dict[str, Any] | None = None) -> str:
    res = results() if res is None else res
    if "skipped" in res:
        return f"## Inspector rendering\n\nskipped: {res['skipped']}\n"
    lines = [
        "## Inspector rendering (headless Chromium, N text deltas, one message)",
        "",
        f"Peer: {res['peer']}.",
        "",
        "| N | page | settle (s) | longest long task (ms) | JS heap (MB) | DOM nodes "
        "| filter change (ms) | vs peer |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in res["rows"]:
        o, p = row["ours"], row["peer"]
        ratio = f"{p['settle'] / o['settle']:.1f}× faster" if "settle" in p else "—"
        lines.append(
            f"| {row['n']:,} | ours | {o['settle']:.2f} | {o['longest']:.0f} | {o['heap']:.1f} "
            f"| {o['nodes']:,} | {_cell(o, 'filter', '.1f')} | {ratio} |"
        )
        if "settle" in p:
            lines.append(
                f"| {row['n']:,} | agui-inspector 0.2.0 | {p['settle']:.2f} | {p['longest']:.0f} "
                f"| {p['heap']:.1f} | {p['nodes']:,} | — | |"
            )
        else:
            lines.append(f"| {row['n']:,} | agui-inspector 0.2.0 | {p['skipped']} | | | | | |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sizes = tuple(int(a) for a in sys.argv[1:]) or SIZES
    print(report(results(sizes, () if sys.argv[1:] else OURS_ONLY)))
