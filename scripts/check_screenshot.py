"""Regenerate docs/images/check-report.png: the HTML report of `agui-tools check` against
an agent that answers its own frontend call (the FE-2 fault of tests/check/agents.py),
photographed by headless Chromium.

    python scripts/check_screenshot.py

A docs asset, not a test: without Chromium this script says so and exits 1.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.check.agents import raw_agent  # noqa: E402

from agui_tools.check import acheck_agent  # noqa: E402
from agui_tools.check.reports import html_report  # noqa: E402
from agui_tools.testing import serving  # noqa: E402

TARGET = ROOT / "docs" / "images" / "check-report.png"


async def report_html() -> str:
    async with serving(raw_agent("self-answer")) as base:
        report = await acheck_agent(base + "/", sections=["frontend"])
    return html_report(report)


def main() -> int:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("no chromium on PATH: the screenshot is not regenerated", file=sys.stderr)
        return 1
    page = asyncio.run(report_html())
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "report.html"
        html.write_text(page, encoding="utf-8")
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--hide-scrollbars",
                f"--user-data-dir={tmp}/profile",
                "--window-size=1200,1500",
                f"--screenshot={TARGET}",
                html.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
