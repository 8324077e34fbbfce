"""The built wheel, installed on its own, works: the smoke suite of `make wheel-smoke`.

The test suite runs from an editable checkout, which hides a package-data file the
wheel forgot or an import of a package only the dev install has. Here the wheel in
dist/ is installed — never the checkout — into a fresh virtualenv per Python
(3.11, 3.12, 3.13; the base install on each, every extra on the first, which keeps
`make test` in its budget — ``--every-python`` runs each extra on each), with the
pinned constraints, and driven from a directory outside the checkout:

* base install: the version agrees three ways (metadata, ``__version__``,
  ``--version``); ``--help`` of every command; the README's Python examples print
  what the README shows; ``serve`` + ``run`` round trip over loopback with the
  README's agent and tool; the inspector serves every static file byte for byte;
  ``PostgresStore`` without the extra says which extra to install;
* ``postgres``: psycopg is there and the store gets past its driver check;
* ``otel``: the library's spans find the OpenTelemetry API.
* ``receipts``: a receipt signer is made (without it, the error names the extra).

Usage: ``python scripts/wheel_smoke.py WHEEL [--python 3.11 ...] [--extras base,...]``,
run by the development venv (it reads the README with tests/helpers/doc_pages.py).
Each failure prints what was run and what it said; the exit status is the number of
failed checks (0: all passed). The line it ends with, ``smoke: N passed, N failed``, is the
count of checks.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.helpers.doc_pages import fenced_blocks, normalized  # noqa: E402

CONSTRAINTS = ROOT / "constraints.txt"
STATIC = ROOT / "src" / "agui_tools" / "ui" / "inspector" / "static"
PYTHONS = ("3.11", "3.12", "3.13")
EXTRAS = ("base", "postgres", "otel", "receipts")
STARTUP = 60.0  # seconds a server gets to print its address: a hang bound, not a timing
TOOLS_MODULE = '''\
def show_forecast(city: str, days: int) -> str:
    """Show a weather forecast card in the UI."""
    return f"a {days}-day forecast for {city} is on screen"


TOOLS = [show_forecast]
'''


class Failed(Exception):
    """One check failed; the message says what was run and what came back."""


def find_python(version: str) -> str:
    """The interpreter for ``version``: on PATH as pythonX.Y, else under pyenv's root."""
    found = shutil.which(f"python{version}")
    candidates = [found] if found else []
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates += sorted(str(p) for p in pyenv.glob(f"{version}.*/bin/python{version}"))
    for exe in candidates:  # a pyenv shim on PATH may refuse a version not selected
        probe = subprocess.run(
            [exe, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True
        )
        if probe.returncode == 0 and probe.stdout.strip() == str(
            tuple(map(int, version.split(".")))
        ):
            return exe
    raise Failed(f"no Python {version} found (PATH or {pyenv})")


def run(cmd: list[str], *, cwd: Path, timeout: float = 300, ok: bool = True) -> str:
    proc = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    if ok and proc.returncode != 0:
        raise Failed(
            f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-2000:]}"
            f"\n{proc.stderr[-3000:]}"
        )
    return proc.stdout


def make_venv(python: str, wheel: Path, extra: str, where: Path) -> Path:
    """A fresh venv holding the wheel (with ``extra``) and its pinned dependencies only."""
    # no pip of its own (the caller's pip installs into it, by --python) and no .pyc
    # written ahead: the two slowest parts of a venv that lives for one check
    subprocess.run([python, "-m", "venv", "--without-pip", str(where)], check=True)
    target = f"{wheel}[{extra}]" if extra != "base" else str(wheel)
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(where / "bin" / "python"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-compile",
            "-c",
            str(CONSTRAINTS),
            target,
        ],
        cwd=where,
    )
    return where / "bin"


@contextmanager
def server(cmd: list[str], cwd: Path, ready: re.Pattern[str]) -> Iterator[str]:
    """Start a long-running command, yield the URL its first matching line prints,
    then stop it with Ctrl-C (SIGINT) and require a clean exit."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    found: list[str] = []
    seen: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            m = ready.search(line)
            if m and not found:
                found.append(m.group(1))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + STARTUP
    while not found and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        if not found:
            raise Failed(f"{' '.join(cmd)} printed no address: {''.join(seen)[-1000:]}")
        yield found[0]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        stderr = proc.stderr.read() if proc.stderr else ""
    if code != 0:
        raise Failed(f"{' '.join(cmd)} exited {code} on Ctrl-C: {stderr[-2000:]}")


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:  # loopback only
        if response.status != 200:
            raise Failed(f"GET {url}: {response.status}")
        body: bytes = response.read()
        return body


# -- the checks: each takes the venv's bin/ and a scratch directory outside the checkout


def check_installed_not_checkout(bin_: Path, cwd: Path) -> None:
    where = run(
        [str(bin_ / "python"), "-c", "import agui_tools; print(agui_tools.__file__)"], cwd=cwd
    ).strip()
    if not where.startswith(str(bin_.parent)):
        raise Failed(f"agui_tools imported from {where}, not from the venv {bin_.parent}")


def check_version(bin_: Path, cwd: Path) -> None:
    code = (
        "import importlib.metadata as m, agui_tools;"
        "print(m.version('agui-tools'), agui_tools.__version__, agui_tools.PROTOCOL_VERSION)"
    )
    meta, attr, protocol = run([str(bin_ / "python"), "-c", code], cwd=cwd).split()
    said = run([str(bin_ / "agui-tools"), "--version"], cwd=cwd).strip()
    expected = f"agui-tools {attr} (AG-UI {protocol})"
    if meta != attr or said != expected:
        raise Failed(f"metadata {meta}, __version__ {attr}, --version {said!r}")


def check_license(bin_: Path, cwd: Path) -> None:
    code = (
        "import importlib.metadata as m;d=m.distribution('agui-tools');"
        "print(d.metadata['License-Expression']);"
        "print(*[d.locate_file(f) for f in d.files if f.name == 'LICENSE'])"
    )
    expression, *files = run([str(bin_ / "python"), "-c", code], cwd=cwd).split()
    text = Path(files[0]).read_text() if files else ""
    if expression != "MIT" or "MIT License" not in text:
        raise Failed(f"License-Expression {expression!r}, LICENSE files {files}")


def check_every_help(bin_: Path, cwd: Path) -> None:
    code = "from agui_tools.cli import build_parser as b;print(*b()._subparsers._group_actions[0].choices)"
    commands = run([str(bin_ / "python"), "-c", code], cwd=cwd).split()
    top = run([str(bin_ / "agui-tools"), "--help"], cwd=cwd)
    if len(commands) < 10:
        raise Failed(f"only {len(commands)} commands: {commands}")
    for command in commands:
        if command not in top:
            raise Failed(f"`agui-tools --help` does not list {command}")
        if "usage: agui-tools " + command not in run(
            [str(bin_ / "agui-tools"), command, "--help"], cwd=cwd
        ):
            raise Failed(f"`agui-tools {command} --help` prints no usage")


def readme_examples() -> tuple[list[str], list[str]]:
    """The README's runnable Python blocks and the output lines it shows for them."""
    code, shown = [], []
    for lang, body, _line, mark in fenced_blocks((ROOT / "README.md").read_text()):
        if lang == "python" and not (mark and mark.group(1) == "fragment"):
            code.append(body)
        elif lang == "text" and mark and mark.group(1) == "output":
            shown += normalized(body)
    return code, shown


def check_readme(bin_: Path, cwd: Path) -> None:
    code, shown = readme_examples()
    if not code or not shown:
        raise Failed("the README has no runnable example with its output")
    script = cwd / "readme_examples.py"
    script.write_text("\n\n".join(code))
    printed = normalized(run([str(bin_ / "python"), str(script)], cwd=cwd))
    if printed != shown:
        raise Failed(f"the README shows {shown}, its examples printed {printed}")


def check_serve_and_run(bin_: Path, cwd: Path) -> None:
    code, _ = readme_examples()
    (cwd / "my_agent.py").write_text(code[0])  # the README's "Serve an agent"
    (cwd / "my_tools.py").write_text(TOOLS_MODULE)
    ready = re.compile(r"Serving AG-UI agent at (\S+)")
    serve = [str(bin_ / "agui-tools"), "serve", "my_agent:agent", "--port", "0", "--path", "/agent"]
    with server(serve, cwd, ready) as url:
        said = run(
            [
                str(bin_ / "agui-tools"),
                "run",
                url,
                "What's the weather like?",
                "--tools",
                "my_tools",
                "--json",
            ],
            cwd=cwd,
            timeout=120,
        )
    if json.loads(said).get("status") != "success" or "a 3-day forecast for Lisbon" not in said:
        raise Failed(f"`agui-tools run` against `serve` said: {said[-2000:]}")


def check_inspector_static(bin_: Path, cwd: Path) -> None:
    ready = re.compile(r"AG-UI inspector: (\S+)")
    inspect = [
        str(bin_ / "agui-tools"),
        "inspect",
        "http://127.0.0.1:9/agent",
        "--port",
        "0",
        "--no-browser",
    ]
    with server(inspect, cwd, ready) as url:
        base = url.split("?")[0].split("#")[0].rstrip("/")
        page = get(base + "/")  # index.html, its {{CONFIG}} filled in
        if not all(
            part in page for part in (STATIC / "index.html").read_bytes().split(b"{{CONFIG}}")
        ):
            raise Failed(f"GET {base}/ is not the packaged index.html")
        if get(base + "/favicon.ico") != (STATIC / "favicon.svg").read_bytes():
            raise Failed(f"GET {base}/favicon.ico is not the packaged favicon.svg")
        for path in sorted(STATIC.iterdir()):
            if path.name != "index.html" and get(f"{base}/static/{path.name}") != path.read_bytes():
                raise Failed(f"GET {base}/static/{path.name} differs from {path}")


POSTGRES_PROBE = """
from agui_tools import PostgresStore, StoreError, UsageError
try:
    PostgresStore("postgresql://127.0.0.1:notaport/x")
except (StoreError, UsageError) as exc:
    print(type(exc).__name__, exc)
"""


def check_postgres_says_extra(bin_: Path, cwd: Path) -> None:
    said = run([str(bin_ / "python"), "-c", POSTGRES_PROBE], cwd=cwd)
    if not said.startswith("UsageError") or "agui-tools[postgres]" not in said:
        raise Failed(f"PostgresStore without the extra said: {said}")


def check_postgres_extra(bin_: Path, cwd: Path) -> None:
    said = run([str(bin_ / "python"), "-c", POSTGRES_PROBE], cwd=cwd)
    if not said.startswith("StoreError") or "notaport" not in said:  # psycopg parsed it
        raise Failed(f"PostgresStore with the postgres extra said: {said}")


RECEIPTS_PROBE = """
from agui_tools import UsageError
from agui_tools.app import Signer
try:
    print(type(Signer.from_bytes(bytes(32))).__name__)
except UsageError as exc:
    print("UsageError", exc)
"""


def check_receipts_says_extra(bin_: Path, cwd: Path) -> None:
    said = run([str(bin_ / "python"), "-c", RECEIPTS_PROBE], cwd=cwd)
    if not said.startswith("UsageError") or "agui-tools[receipts]" not in said:
        raise Failed(f"Signer without the receipts extra said: {said}")


def check_receipts_extra(bin_: Path, cwd: Path) -> None:
    said = run([str(bin_ / "python"), "-c", RECEIPTS_PROBE], cwd=cwd)
    if said.strip() != "Signer":
        raise Failed(f"Signer with the receipts extra said: {said}")


def check_otel_extra(bin_: Path, cwd: Path) -> None:
    code = "from agui_tools import _telemetry; print(_telemetry._load() is not None)"
    if run([str(bin_ / "python"), "-c", code], cwd=cwd).strip() != "True":
        raise Failed("the otel extra is installed and the library's spans do not find the API")


CHECKS: dict[str, list[Callable[[Path, Path], None]]] = {
    "base": [
        check_installed_not_checkout,
        check_version,
        check_license,
        check_every_help,
        check_readme,
        check_serve_and_run,
        check_inspector_static,
        check_postgres_says_extra,
        check_receipts_says_extra,
    ],
    "postgres": [check_installed_not_checkout, check_postgres_extra],
    "otel": [check_installed_not_checkout, check_otel_extra],
    "receipts": [check_installed_not_checkout, check_receipts_extra],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--python", action="append", help="3.11, 3.12, 3.13 (default: all)")
    parser.add_argument("--extras", default=",".join(EXTRAS), help="default: %(default)s")
    parser.add_argument(
        "--every-python", action="store_true", help="each extra on each Python, not the first"
    )
    args = parser.parse_args()
    passed = failed = 0
    versions = args.python or list(PYTHONS)
    for version in versions:
        for extra in args.extras.split(","):
            if extra != "base" and version != versions[0] and not args.every_python:
                continue
            started = time.monotonic()
            with tempfile.TemporaryDirectory(prefix=f"wheel-smoke-{version}-{extra}-") as tmp:
                scratch = Path(tmp) / "work"
                scratch.mkdir()
                try:
                    bin_ = make_venv(
                        find_python(version), args.wheel.resolve(), extra, Path(tmp) / "venv"
                    )
                except (Failed, subprocess.CalledProcessError) as exc:
                    print(f"FAILED python {version} [{extra}] install: {exc}", flush=True)
                    failed += 1
                    continue
                for check in CHECKS[extra]:
                    try:
                        check(bin_, scratch)
                    except (Failed, subprocess.TimeoutExpired, OSError) as exc:
                        print(
                            f"FAILED python {version} [{extra}] {check.__name__}: {exc}", flush=True
                        )
                        failed += 1
                    else:
                        passed += 1
            print(f"python {version} [{extra}]: {time.monotonic() - started:.0f} s", flush=True)
    print(f"smoke: {passed} passed, {failed} failed")
    return min(failed, 100)


if __name__ == "__main__":
    sys.exit(main())
