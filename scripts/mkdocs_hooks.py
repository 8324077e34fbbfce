"""MkDocs hooks (mkdocs.yml ``hooks:``): the site is the repository's own pages.

The README is the repository's front page and the site's (``index.md``); the CHANGELOG
and the spec's rule index are pages of the site too. Each is read where it lives — no
copy to keep in step — and a link between pages, written for the repository (the
README's ``docs/cli.md``, a doc's ``../spec/RULES.md``), is rewritten to the page's
path on the site; a link to anything else is left alone, for ``--strict`` to judge.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]

OUTSIDE_DOCS = {  # repository path → the page's path on the site
    "README.md": "index.md",
    "CHANGELOG.md": "changelog.md",
    "spec/RULES.md": "spec/RULES.md",
    "spec/DEPRECATIONS.md": "spec/DEPRECATIONS.md",
}
FOLDERS = {"spec/": "spec/RULES.md"}  # a link to a folder: the page that indexes it

# the rule index names each rule's tests in brackets ("[metadata-merges-last-write-wins]"):
# text, not the shortcut references mkdocstrings' cross-referencing would look up
BRACKETED_NAME = re.compile(r"(?<![\\\]])\[([a-z0-9_-]+)\](?![(\[:])")
# a Sphinx cross-reference role in a docstring, as mkdocstrings renders it: the role's
# name, then the target in <code> ("~" shows only its last part, as Sphinx does)
SPHINX_ROLE = re.compile(
    r":(?:class|func|meth|attr|data|exc|mod|obj|const):<code>(~?)([^<]*)</code>"
)
# an inline link's target: a relative path to a Markdown page or a folder, with an anchor
LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:|#|/)([^)\s#]*(?:\.md|/))(#[^)\s]*)?\)")


def _repo_path(site_path: str) -> str:
    """Where the page at ``site_path`` lives in the repository."""
    for repo, site in OUTSIDE_DOCS.items():
        if site == site_path:
            return repo
    return f"docs/{site_path}"


def _site_path(repo_path: str) -> str | None:
    """Where the repository's ``repo_path`` is on the site (``None``: not a page)."""
    repo_path = FOLDERS.get(repo_path, repo_path)
    if repo_path in OUTSIDE_DOCS:
        return OUTSIDE_DOCS[repo_path]
    if repo_path.startswith("docs/"):
        return repo_path.removeprefix("docs/")
    return None


def site_link(page: str, target: str) -> str:
    """``target``, a link on the site's page ``page`` written for the repository, as
    a link on the site (unchanged when it names no page of the site)."""
    here = posixpath.dirname(_repo_path(page))
    repo_target = posixpath.normpath(posixpath.join(here, target))
    if target.endswith("/"):
        repo_target += "/"
    found = _site_path(repo_target)
    if found is None:
        return target
    return posixpath.relpath(found, posixpath.dirname(page) or ".")


def on_files(files: Files, config: Any) -> Files:
    for repo, site in OUTSIDE_DOCS.items():
        files.append(File.generated(config, site, abs_src_path=str(ROOT / repo)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    path = page.file.src_uri

    def rewrite(m: re.Match[str]) -> str:
        return f"]({site_link(path, m.group(1))}{m.group(2) or ''})"

    markdown = LINK.sub(rewrite, markdown)
    if path.startswith("spec/"):
        markdown = BRACKETED_NAME.sub(r"\\[\1\\]", markdown)
    return markdown


def _role_shown(m: re.Match[str]) -> str:
    target = m.group(2)
    return f"<code>{target.rsplit('.', 1)[-1] if m.group(1) else target}</code>"


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    """The docstrings' Sphinx roles shown as their names (the API reference pages)."""
    return SPHINX_ROLE.sub(_role_shown, html)
