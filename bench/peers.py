"""The peers ``make bench`` measures us against, and how rows that compare are printed.

* The official TypeScript client (``@ag-ui/client`` 1.0.0) runs in Node through
  ``interop/ts/pipeline.mjs`` and ``interop/ts/reducer.mjs`` (``--bench N``):
  they load the event file, run their own warm-up and repeats, and print one
  JSON object whose ``bestEventsPerSecond`` (fastest single repetition) we
  take, the same best-of-N rule as :func:`bench.harness.measure`. When Node or
  ``interop/node_modules`` is missing, a :class:`Skipped` row says so and the
  rest of the benchmark runs.
* ``ag-ui-validate`` (PyPI, a dev dependency) runs in process: over the bytes
  of the NDJSON file exactly as its CLI does (``transport.validate_body`` on
  64 KiB chunks read through the event loop's executor), and fed pre-parsed
  dicts (``Validator.feed``).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .harness import Result

ROOT = Path(__file__).resolve().parent.parent
INTEROP = ROOT / "interop"
TS = INTEROP / "ts"


@dataclass
class Skipped(Result):
    """A row that could not be measured; ``reason`` is printed instead of numbers."""

    reason: str = ""

    @property
    def rate(self) -> float:
        return math.nan


def skipped(name: str, reason: str) -> Skipped:
    return Skipped(name, 0, math.inf, reason)


class PeerUnavailable(Exception):
    """The peer cannot run here; the message is the row's reason."""


# -- the official TypeScript client, in Node -------------------------------------


def node() -> str:
    """Path to ``node``, or :class:`PeerUnavailable` with the row text to print."""
    exe = shutil.which("node")
    if exe is None:
        raise PeerUnavailable("peer skipped: node not found")
    if not (INTEROP / "node_modules" / "@ag-ui" / "client").is_dir():
        raise PeerUnavailable(
            "peer skipped: interop/node_modules missing (run `npm ci --prefix interop`)"
        )
    return exe


def run_node(script: str, file: Path, *args: str, timeout: float = 600) -> dict[str, Any]:
    """``node interop/ts/SCRIPT FILE ARGS…`` → its one JSON line of output."""
    env = {k: v for k, v in os.environ.items() if k not in ("NODE_ENV", "VITEST_WORKER_ID")}
    cmd = [node(), str(TS / script), str(file), *args]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        raise PeerUnavailable(f"peer not measured: gave up after {timeout:.0f} s") from None
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise PeerUnavailable(f"peer failed (exit {proc.returncode}): {tail[:160]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def node_version() -> str | None:
    exe = shutil.which("node")
    if exe is None:
        return None
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
    return proc.stdout.strip() or None


# -- ag-ui-validate ---------------------------------------------------------------


async def _file_chunks(path: str) -> AsyncIterator[bytes]:
    """Mirror of the CLI's reader, used if the pinned version ever stops exposing it."""
    loop = asyncio.get_running_loop()
    with open(path, "rb") as f:
        while chunk := await loop.run_in_executor(None, f.read, 65536):
            yield chunk


def validate_file(path: Path) -> Any:
    """The CLI's own path: ``validate_body`` over the file read in chunks; returns the report."""
    from ag_ui_validate import ValidatorOptions
    from ag_ui_validate.transport import TransportOptions, validate_body

    chunks: Callable[[str], AsyncIterator[bytes]]
    try:  # the CLI's reader: 64 KiB reads through the event loop's executor
        from ag_ui_validate.cli import _file_chunks as chunks
    except ImportError:  # pragma: no cover - depends on the pinned version
        chunks = _file_chunks
    opts = TransportOptions(validator=ValidatorOptions(), recorded=True)
    return asyncio.run(validate_body(chunks(str(path)), None, opts)).report


def validate_dicts(events: Sequence[dict[str, Any]]) -> Any:
    """In process, pre-parsed events: ``Validator.feed(dict)`` then ``finalize()``."""
    from ag_ui_validate import Validator, ValidatorOptions

    v = Validator(ValidatorOptions())
    feed = v.feed
    for e in events:
        feed(e)
    v.finalize()
    return v.report()


def summary(report: Any) -> str:
    s = report.summary
    return f"{s.errors} errors, {s.warnings} warnings, {s.info} info"


# -- printing -----------------------------------------------------------------------


def markdown(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> str:
    """A Markdown table; ``align`` has one ``l``/``r`` per column."""
    out = [f"### {title}", "", "| " + " | ".join(header) + " |"]
    out.append("|" + "|".join("---" if a == "l" else "---:" for a in align) + "|")
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def rate(r: Result) -> str:
    return "—" if isinstance(r, Skipped) else f"{r.rate:,.0f}"


def micros(r: Result) -> str:
    if isinstance(r, Skipped):
        return "—"
    us = 1e6 * r.seconds / r.events
    return f"{us:,.2f}" if us < 10 else f"{us:,.0f}"


def ratio(r: Result, base: Result | None) -> str:
    if base is None or isinstance(r, Skipped) or isinstance(base, Skipped):
        return "—"
    return f"{r.rate / base.rate:.2f}×"
