"""The command line with --otel, for the trace tests: a command run with a clean
environment (no OTEL_* variable of the machine's), and the spans its console exporter
wrote."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.helpers.terminal import AGUI, ENV, ROOT

AGENT = "tests.helpers.cli_agents:scripted"
PLANTED = "PLANTED-c0ffee"
CLEAN_ENV = {k: v for k, v in ENV.items() if not k.startswith("OTEL_")}


def spans_in(text: str) -> list[dict[str, Any]]:
    """The JSON documents the console exporter wrote, one per span, in order."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (start := text.find("{", at)) != -1:
        document, at = decoder.raw_decode(text, start)
        found.append(document)
    return found


def agui(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGUI, *args], capture_output=True, text=True, timeout=120,
        env=env or CLEAN_ENV, cwd=ROOT, input="",
    )  # fmt: skip
