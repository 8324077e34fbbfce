"""One version, said the same way everywhere: ``agui_tools.__version__`` (which the
build reads for the package metadata), ``agui-tools --version`` and docs/install.md."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import agui_tools

ROOT = Path(__file__).resolve().parents[1]
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")


def test_the_version_is_semver_and_the_build_reads_it_from_the_package() -> None:
    assert SEMVER.fullmatch(agui_tools.__version__), agui_tools.__version__
    assert int(agui_tools.__version__.split(".")[0]) >= 1  # the public API is promised
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject
    assert 'version = { attr = "agui_tools._version.__version__" }' in pyproject


def test_the_command_says_the_package_and_protocol_versions() -> None:
    said = subprocess.run(
        [sys.executable, "-m", "agui_tools", "--version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert said == f"agui-tools {agui_tools.__version__} (AG-UI {agui_tools.PROTOCOL_VERSION})"


def test_the_install_page_shows_what_the_command_says() -> None:
    page = (ROOT / "docs" / "install.md").read_text()
    shown = re.search(r"agui-tools --version +# (.*)", page)
    assert shown, "docs/install.md shows `agui-tools --version` and what it prints"
    assert shown.group(1) == (
        f"agui-tools {agui_tools.__version__} (AG-UI {agui_tools.PROTOCOL_VERSION})"
    )
