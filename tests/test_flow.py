"""The one-way flow of docs/architecture.md: wire/ → app/ → agent/ → transport/, with
check/, ui/ and integrations/ as faces over them and demo/, cli/ outermost — nothing
imports "up" the flow, and no face imports another (a lazy import inside a function
counts as much as one at the top)."""

from __future__ import annotations

import ast
from pathlib import Path

import agui_tools

SRC = Path(agui_tools.__file__).parent

RANK = {
    "wire": 0,
    "app": 1,
    "agent": 2,
    "transport": 3,
    "check": 4,
    "ui": 4,
    "integrations": 4,
    "demo": 5,
    "cli": 6,
}
"""Where each subpackage stands in the flow: a module may import its own subpackage,
the private modules at the top (``_errors``, ``_text``, ``_url`` …) and any subpackage
of a lower rank — never one of its own rank or above."""

KNOWN = {
    ("transport/_proxy.py", "check"): "the proxy tees its bytes to check/_watch.py; "
    "whether _watch.py moves below transport/ is the lead's decision",
}
"""Imports across the flow that are known and waiting on a decision: (module, subpackage)."""


def _imported(path: Path) -> set[str]:
    """The ``agui_tools`` subpackages (or ``(top)``) that ``path`` imports, anywhere in it."""
    here = ["agui_tools", *path.relative_to(SRC).parent.parts]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            names = [[*base, *(node.module or "").split(".")]]
            if node.module is None:  # from . import x, y: each is a module
                names = [[*base, alias.name] for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name.split(".") for alias in node.names]
        else:
            continue
        for name in names:
            parts = [p for p in name if p]
            if parts[:1] == ["agui_tools"]:
                found.add(parts[1] if len(parts) > 1 and parts[1] in RANK else "(top)")
    return found


def test_nothing_imports_up_the_flow_nor_sideways() -> None:
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        where = path.relative_to(SRC)
        if len(where.parts) == 1:
            continue  # the top: __init__ (the lazy surface), testing.py, the shared _*.py
        own = where.parts[0]
        for target in _imported(path) - {own, "(top)"}:
            if RANK[target] >= RANK[own] and (where.as_posix(), target) not in KNOWN:
                wrong.append(f"{where} imports {target}/ (rank {RANK[target]} ≥ {RANK[own]})")
    assert not wrong, "\n".join(wrong)


def test_the_shared_modules_at_the_top_import_no_subpackage() -> None:
    """``_errors``, ``_text``, ``_url`` … sit below every subpackage: each may import
    them because they import none of it."""
    for path in sorted(SRC.glob("_*.py")):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        assert _imported(path) <= {"(top)"}, (path.name, _imported(path))


def test_the_known_exceptions_are_still_there() -> None:
    """An entry of KNOWN that no longer holds is removed, not kept as a licence."""
    for module, target in KNOWN:
        assert target in _imported(SRC / module), f"{module} no longer imports {target}/"
