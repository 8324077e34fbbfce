"""Real agent frameworks' AG-UI adapters, each in its own pinned virtualenv, served for a test.

``interop/frameworks/<framework>_agent.py`` is a harness: the framework's own AG-UI
adapter (installed from PyPI) serving an agent on a scripted model of the
framework's own testing kind — no network, no API key. Its dependency tree is the
framework's, never the project's: it lives in ``.venv-<framework>`` at the
repository root, built from ``interop/frameworks/<framework>-requirements.txt``
(the whole resolved set, pinned).

* :func:`ensure_venv` builds that virtualenv on demand and rebuilds it when the
  requirements file changes (a stamp in the venv holds the file's hash and the
  interpreter's version). Two pytest processes building the same venv at once
  take turns on a file lock (``.venv-<framework>.lock``). :func:`ensure_venvs`
  builds several in parallel (``make interop``:
  ``python -m tests.helpers.frameworks build``).
* :func:`serving_framework` serves the harness on a free loopback port with the
  venv's interpreter, waits until it answers HTTP, yields its base URL and kills
  it afterwards; the harness's output is captured, and attached to any exception
  that leaves the block (and to the error when it never answers).
* :func:`framework_agent` is the same as a pytest fixture factory. A venv that
  cannot be built fails the test under ``CI`` (``tests/helpers/no_skips_in_ci``'s
  reading); elsewhere the test skips, saying why.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_tools.testing import free_port

from .no_skips_in_ci import in_ci

__all__ = [
    "FRAMEWORKS",
    "INTERRUPTING",
    "ROOT",
    "FrameworkUnavailable",
    "Served",
    "baseline_path",
    "ensure_venv",
    "ensure_venvs",
    "framework_agent",
    "harness",
    "require_venv",
    "requirements",
    "serving_framework",
    "venv_dir",
]

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "interop" / "frameworks"
STAMP = ".agui-requirements.sha256"

FRAMEWORKS: tuple[str, ...] = tuple(
    sorted(p.name.removesuffix("-requirements.txt") for p in HERE.glob("*-requirements.txt"))
)
"""Every framework with a pinned requirements file in interop/frameworks/."""

INTERRUPTING: tuple[str, ...] = ("langgraph", "strands")
"""The harnesses with an ``--interrupt`` mode: their agent-side tool waits on an approval."""

BASELINES = HERE / "baselines"

MATRIX = BASELINES / "matrix.json"
"""Every recorded check's verdict per case — the compatibility matrix docs/conformance.md
shows (``python -m tests.helpers.frameworks matrix`` prints it; tests/docs checks the page
shows the current one). Written by ``baseline``, a column per harness and mode."""

LABELS: dict[str, str] = {
    "pydantic-ai": "Pydantic AI",
    "langgraph": "LangGraph",
    "langgraph-interrupt": "LangGraph `--interrupt`",
    "strands": "Strands",
    "strands-interrupt": "Strands `--interrupt`",
    "microsoft-agent-framework": "MAF",
    "google-adk": "ADK",
    "llamaindex": "LlamaIndex",
    "crewai": "CrewAI",
}
"""The matrix's columns, in order, and their headings."""

VENV_ARGS: tuple[str, ...] = ()
"""Extra ``python -m venv`` arguments (the helper's own tests make pip-less venvs: faster)."""

INSTALL_TIMEOUT = float(os.environ.get("FRAMEWORK_INSTALL_TIMEOUT", "900"))
START_TIMEOUT = float(os.environ.get("FRAMEWORK_START_TIMEOUT", "120"))
"""A framework's import can be slow on a busy 2-core machine (CrewAI's takes seconds)."""


class FrameworkUnavailable(RuntimeError):
    """A framework's venv could not be built; the message says why (pip's output tail)."""


def requirements(framework: str) -> Path:
    return HERE / f"{framework}-requirements.txt"


def harness(framework: str) -> Path:
    return HERE / f"{framework.replace('-', '_')}_agent.py"


def venv_dir(framework: str) -> Path:
    return ROOT / f".venv-{framework}"


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _wanted_stamp(framework: str) -> str:
    digest = hashlib.sha256(requirements(framework).read_bytes())
    digest.update(f"\npython {sys.version_info[0]}.{sys.version_info[1]}".encode())
    return digest.hexdigest()


def _current(venv: Path, wanted: str) -> bool:
    stamp = venv / STAMP
    return _python(venv).exists() and stamp.exists() and stamp.read_text().strip() == wanted


def _base_python() -> str:
    """The interpreter to make venvs from: the one under the project's venv, if any."""
    return getattr(sys, "_base_executable", None) or sys.executable


def baseline_path(framework: str, mode: str | None = None) -> Path:
    """The committed ``check`` baseline of a harness (``mode``: ``"interrupt"``, or the default)."""
    return BASELINES / (f"{framework}-{mode}.json" if mode else f"{framework}.json")


def ensure_venv(framework: str, *, log: Callable[[str], None] | None = None) -> Path:
    """The framework's venv, built or rebuilt as needed; returns its interpreter.

    Raises :class:`FrameworkUnavailable` (with pip's output) when the build fails."""
    reqs = requirements(framework)
    if not reqs.exists() or not harness(framework).exists():
        raise FrameworkUnavailable(f"no harness for {framework!r} in {HERE}")
    venv = venv_dir(framework)
    wanted = _wanted_stamp(framework)
    if _current(venv, wanted):
        return _python(venv)
    lock_path = ROOT / f".venv-{framework}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it right now
        try:
            if _current(venv, wanted):
                return _python(venv)
            started = time.monotonic()
            if log:
                log(f"{framework}: building {venv.name} from {reqs.relative_to(ROOT)}")
            shutil.rmtree(venv, ignore_errors=True)
            steps = [
                [_base_python(), "-m", "venv", *VENV_ARGS, str(venv)],
                # the project's pip installs into the venv (`--python`): the same pip
                # for every framework, and a venv made without one still installs
                [sys.executable, "-m", "pip", "--python", str(_python(venv)), "install",
                 "--quiet", "--disable-pip-version-check", "-r", str(reqs)],
            ]  # fmt: skip
            for step in steps:
                try:
                    done = subprocess.run(
                        step, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, cwd=ROOT
                    )
                except subprocess.TimeoutExpired:
                    shutil.rmtree(venv, ignore_errors=True)
                    raise FrameworkUnavailable(
                        f"{framework}: `{' '.join(step[-3:])}` took over {INSTALL_TIMEOUT:.0f} s"
                    ) from None
                if done.returncode != 0:
                    shutil.rmtree(venv, ignore_errors=True)
                    lines = (done.stdout + done.stderr).strip().splitlines()
                    # a pip config naming absent local indexes warns once per package: noise
                    said = [ln for ln in lines if not ln.startswith("WARNING: Location '")]
                    tail = "\n".join(said[-25:])
                    raise FrameworkUnavailable(
                        f"{framework}: building {venv.name} failed (exit {done.returncode}) "
                        f"at `{' '.join(step)}`:\n{tail}"
                    )
            (venv / STAMP).write_text(wanted + "\n")
            if log:
                log(f"{framework}: {venv.name} built in {time.monotonic() - started:.0f} s")
            return _python(venv)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure_venvs(
    frameworks: Sequence[str] = FRAMEWORKS,
    *,
    jobs: int = 4,
    log: Callable[[str], None] | None = None,
) -> dict[str, FrameworkUnavailable | None]:
    """Build several venvs in parallel (pip mostly waits on downloads and unpacking)."""

    def one(name: str) -> FrameworkUnavailable | None:
        try:
            ensure_venv(name, log=log)
        except FrameworkUnavailable as exc:
            return exc
        return None

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return dict(zip(frameworks, pool.map(one, frameworks), strict=True))


def require_venv(framework: str) -> Path:
    """:func:`ensure_venv` for a test: a failed build fails under CI, skips (saying why) elsewhere."""
    try:
        return ensure_venv(framework)
    except FrameworkUnavailable as exc:
        if in_ci():
            pytest.fail(f"CI is set and the {framework} adapter cannot be installed: {exc}")
        pytest.skip(f"the {framework} adapter cannot be installed here: {exc}")


@dataclass
class Served:
    """A harness being served: its base URL, and what it has printed so far."""

    framework: str
    url: str
    log_path: Path
    process: subprocess.Popen[bytes]

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def _answers(url: str) -> bool:
    try:
        httpx.get(url, timeout=1.0)
    except httpx.HTTPError:
        return False
    return True  # any HTTP answer at all (a 405 for GET included): the server is up


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@contextlib.contextmanager
def serving_framework(
    framework: str,
    *,
    python: Path | None = None,
    env: dict[str, str] | None = None,
    args: Sequence[str] = (),
) -> Iterator[Served]:
    """Serve ``interop/frameworks/<framework>_agent.py`` on a free loopback port.

    Yields a :class:`Served` whose ``url`` ends in ``/`` once the server answers
    HTTP; kills it afterwards. The harness's stdout and stderr go to one log,
    added as a note to any exception leaving the block."""
    interpreter = python or ensure_venv(framework)
    tries = 3  # the free port may be taken between choosing and binding it
    with tempfile.TemporaryDirectory(prefix=f"agui-{framework}-") as tmp:
        for attempt in range(tries):
            port = free_port()
            log_path = Path(tmp) / f"agent-{attempt}.log"
            out = open(log_path, "wb")  # noqa: SIM115 - closed in the finally below
            process = subprocess.Popen(
                [str(interpreter), str(harness(framework)), "--port", str(port), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=ROOT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            )
            served = Served(framework, f"http://127.0.0.1:{port}/", log_path, process)
            try:
                deadline = time.monotonic() + START_TIMEOUT
                while not _answers(served.url):
                    if process.poll() is not None:
                        break
                    if time.monotonic() > deadline:
                        raise RuntimeError(
                            f"the {framework} agent did not answer at {served.url} within "
                            f"{START_TIMEOUT:.0f} s; its output:\n{served.output()}"
                        )
                    time.sleep(0.1)
                if process.poll() is not None:
                    text = served.output()
                    if "address already in use" in text.lower() and attempt + 1 < tries:
                        continue
                    raise RuntimeError(
                        f"the {framework} agent exited with {process.returncode} before it "
                        f"answered; its output:\n{text}"
                    )
                try:
                    yield served
                except BaseException as exc:
                    exc.add_note(f"--- the {framework} agent's output ---\n{served.output()}")
                    raise
                return
            finally:
                _stop(process)
                out.close()


def framework_agent(framework: str, **kwargs: Any) -> Any:
    """A pytest fixture serving ``framework``'s harness; it yields the base URL.

        langgraph_url = framework_agent("langgraph")

        def test_it(langgraph_url: str) -> None: ...

    A venv that cannot be built fails the test under CI and skips it elsewhere."""

    @pytest.fixture
    def fixture() -> Iterator[str]:
        python = require_venv(framework)
        with serving_framework(framework, python=python, **kwargs) as served:
            yield served.url

    return fixture


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.helpers.frameworks",
        description="Build the frameworks' pinned venvs (.venv-<framework>), in parallel.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build (or bring up to date) the named venvs, or all")
    build.add_argument("frameworks", nargs="*", default=list(FRAMEWORKS))
    build.add_argument("--jobs", type=int, default=len(FRAMEWORKS))
    build.add_argument(
        "--soft",
        action="store_true",
        help="a failed build is a warning (exit 0) unless CI is set — `make test`'s mode",
    )
    record = sub.add_parser(
        "baseline",
        help="serve a harness, run `check` against it and write its baseline "
        "(interop/frameworks/baselines/) — every fail it records must be written up in "
        "docs/conformance.md",
    )
    record.add_argument("frameworks", nargs="*", default=list(FRAMEWORKS))
    record.add_argument("--interrupt", action="store_true", help="the harness's --interrupt mode")
    sub.add_parser(
        "matrix", help="print the compatibility matrix (Markdown) the baselines recorded"
    )
    options = parser.parse_args(argv)
    if options.command == "baseline":
        return _record(options.frameworks, interrupt=options.interrupt)
    if options.command == "matrix":
        print(matrix_table(), end="")
        return 0
    unknown = sorted(set(options.frameworks) - set(FRAMEWORKS))
    if unknown:
        parser.error(f"no harness for {', '.join(unknown)} (known: {', '.join(FRAMEWORKS)})")
    started = time.monotonic()
    failures = ensure_venvs(
        options.frameworks, jobs=options.jobs, log=lambda line: print(line, flush=True)
    )
    for failure in failures.values():
        if failure is not None:
            print(f"error: {failure}", file=sys.stderr)
    print(f"frameworks: {len(failures)} venvs ready in {time.monotonic() - started:.0f} s"
          if not any(failures.values()) else "frameworks: some venvs could not be built")  # fmt: skip
    if not any(failures.values()):
        return 0
    if options.soft and not in_ci():
        print("warning: the matrix tests of these frameworks will skip (CI is not set)")
        return 0
    return 1


def _record(frameworks: Sequence[str], *, interrupt: bool) -> int:
    from agui_tools.check import Baseline, check_agent

    BASELINES.mkdir(exist_ok=True)
    for framework in frameworks:
        if interrupt and framework not in INTERRUPTING:
            print(f"{framework}: no --interrupt mode", file=sys.stderr)
            return 2
        args = ["--interrupt"] if interrupt else []
        with serving_framework(framework, args=args) as served:
            report = check_agent(served.url, timeout=60)
        path = baseline_path(framework, "interrupt" if interrupt else None)
        baseline = Baseline.of(report)
        baseline.write(path)
        _record_column(framework + ("-interrupt" if interrupt else ""), report)
        counts = ", ".join(f"{n} {v}" for v, n in report.counts().items())
        print(f"{framework}: {path.relative_to(ROOT)} — {len(baseline.known)} known; {counts}")
        for known in baseline.known:
            print(f"  {known.line()}")
    return 0


def _cell(case: Any) -> str:
    """One case's verdict as the matrix shows it: ``pass``, ``info``, ``–`` (not
    exercised), or ``warn``/``**fail**`` with the rules of the findings at that verdict."""
    verdict = case.verdict.value
    if verdict == "not exercised":
        return "–"
    if verdict in ("pass", "info"):
        return verdict
    rules = sorted({f.rule for f in case.findings if f.verdict is case.verdict})
    shown = "**fail**" if verdict == "fail" else verdict
    return f"{shown} {', '.join(rules)}".strip()


def _record_column(column: str, report: Any) -> None:
    matrix = json.loads(MATRIX.read_text()) if MATRIX.exists() else {}
    matrix[column] = {case.id: _cell(case) for case in report.cases}
    ordered = {k: matrix[k] for k in LABELS if k in matrix}
    MATRIX.write_text(json.dumps(ordered, indent=2, ensure_ascii=False) + "\n")


def matrix_table() -> str:
    """The Markdown table of :data:`MATRIX`: a row per case, a column per harness, and a
    closing row of pass/fail/warn counts."""
    matrix: dict[str, dict[str, str]] = json.loads(MATRIX.read_text())
    columns = [k for k in LABELS if k in matrix]
    cases: list[str] = []
    for column in columns:
        cases += [c for c in matrix[column] if c not in cases]
    lines = [
        "| case | " + " | ".join(LABELS[c] for c in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for case in cases:
        cells = [matrix[c].get(case, "") for c in columns]
        lines.append(f"| `{case}` | " + " | ".join(cells) + " |")

    def tally(column: str) -> str:
        cells = list(matrix[column].values())
        counted = [
            sum(1 for v in cells if v.split(" ")[0].strip("*") == k)
            for k in ("pass", "fail", "warn")
        ]
        return "/".join(map(str, counted))

    lines.append("| pass/fail/warn | " + " | ".join(tally(c) for c in columns) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
