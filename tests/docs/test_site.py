"""The documentation site (mkdocs.yml) covers the package: every page is in the nav,
every public name and every subpackage surface has an API reference, every command
its section of docs/cli.md.

``make docs-build`` (``mkdocs build --strict``, in ``make test``) judges the links,
anchors and references; these tests judge coverage, which no build warning would.
"""

from __future__ import annotations

import html
import importlib
import os
import re
import subprocess
from pathlib import Path

import pytest

import agui_tools
from agui_tools.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
NAV_PAGE = re.compile(r"^\s*- (?:[^:\n]+: )?([\w./-]+\.md)\s*$", re.M)
SURFACES = [
    "agui_tools.agent",
    "agui_tools.app",
    "agui_tools.transport",
    "agui_tools.wire",
    "agui_tools.check",
    "agui_tools.ui.inspector",
    "agui_tools.integrations.openai",
    "agui_tools.testing",
]


MKDOCS = ROOT / ".venv-release" / "bin" / "mkdocs"
SPHINX_ROLE = re.compile(r":(?:class|func|meth|attr|data|exc|mod|obj|const):`")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as ``make docs-build`` builds it (the release venv's MkDocs)."""
    if not MKDOCS.exists():
        pytest.skip("the release venv is not built: make .venv-release/.installed")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def nav_pages() -> list[str]:
    return NAV_PAGE.findall((ROOT / "mkdocs.yml").read_text())


def test_every_page_of_docs_is_in_the_nav() -> None:
    listed = set(nav_pages())
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")} | {"index.md"}
    assert not pages - listed, f"add to mkdocs.yml's nav: {sorted(pages - listed)}"


def test_every_nav_entry_is_a_page() -> None:
    outside = {"index.md", "changelog.md", "spec/RULES.md", "spec/DEPRECATIONS.md"}
    missing = {p for p in nav_pages() if p not in outside and not (DOCS / p).exists()}
    assert not missing, f"mkdocs.yml's nav names pages that are not there: {sorted(missing)}"
    assert outside <= set(nav_pages())


def test_the_top_level_reference_lists_every_public_name() -> None:
    page = (DOCS / "reference" / "agui_tools.md").read_text()
    members = re.findall(r"^\s+- (\S+)$", page, re.M)
    assert sorted(members) == sorted(agui_tools.__all__)


@pytest.mark.parametrize("surface", SURFACES)
def test_every_surface_has_a_reference_page(surface: str) -> None:
    module = importlib.import_module(surface)
    directives = {
        line.removeprefix("::: ").strip()
        for page in (DOCS / "reference").glob("*.md")
        for line in page.read_text().splitlines()
        if line.startswith("::: ")
    }
    assert surface in directives, f"docs/reference/ has no `::: {surface}` page"
    assert getattr(module, "__all__", None), f"{surface} has no __all__ for its reference"


def test_every_command_has_its_section_in_cli_md() -> None:
    parser = build_parser()
    commands = next(a.choices for a in parser._subparsers._group_actions)
    headings = re.findall(r"^## `agui-tools ([a-z-]+)", (DOCS / "cli.md").read_text(), re.M)
    assert len(commands) >= 10
    assert sorted(commands) == sorted(headings)


@pytest.mark.parametrize("surface", ["agui_tools", *SURFACES])
def test_every_public_name_is_rendered_on_its_reference_page(site: Path, surface: str) -> None:
    """A name without a docstring is still a public name: the page shows it."""
    module = importlib.import_module(surface)
    pages = "".join(p.read_text() for p in (site / "reference").rglob("index.html"))
    missing = [n for n in module.__all__ if f'id="{surface}.{n}"' not in pages]
    assert not missing, f"{surface}: not rendered on the site: {missing}"


def test_no_sphinx_role_is_shown_raw(site: Path) -> None:
    """Docstrings cross-reference with Sphinx roles (``:class:`~x.Y```); a reader of the
    site sees the name, never the role's markup."""
    shown = {}
    for page in (site / "reference").rglob("index.html"):
        text = html.unescape(re.sub(r"<[^>]+>", "`", page.read_text()))
        found = SPHINX_ROLE.findall(text)
        if found:
            shown[page.parent.name] = len(found)
    assert not shown, f"raw Sphinx roles on the site's reference pages: {shown}"
