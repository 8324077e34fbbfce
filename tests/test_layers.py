"""The folder tree is the flow (docs/architecture.md): nothing imports up it, and the
faces do not import each other sideways.

``wire/`` → ``app/`` → ``agent/`` → ``transport/`` → the faces (``check/``, ``ui/``,
``integrations/``) → what assembles them (``testing``, ``demo/``) → ``cli/``. A
module may import its own subpackage, the shared base modules (``_errors``,
``_text``, ``_version`` …) and any part *earlier* in that list — lazily or not: an
import inside a function is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "agui_tools"

RANK = {
    "wire": 1,
    "app": 2,
    "agent": 3,
    "transport": 4,
    "check": 5,
    "ui": 5,
    "integrations": 5,
    "testing": 6,
    "demo": 6,
    "cli": 7,
    "__main__": 8,
    "": 8,  # the package's __init__: the public surface, over everything
}
"""Each part's place in the flow; a base module (``_errors`` …) is 0."""

ALLOWED: dict[tuple[str, str], str] = {}
"""(importer, imported) pairs that cross the flow, each with its reason."""


def _part(module: str) -> str:
    bits = module.split(".")
    return bits[1] if len(bits) > 1 else ""


def _rank(part: str) -> int:
    return RANK.get(part, 0 if part.startswith("_") else 99)


def _imports() -> list[tuple[str, str, int]]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                if node.module is None:  # from .. import _telemetry: each name is a module
                    targets = [".".join([*base, alias.name]) for alias in node.names]
                else:
                    targets = [".".join([*base, node.module]) if node.level else node.module]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            found += [(module, t, node.lineno) for t in targets if t.startswith("agui_tools")]
    return found


def test_every_part_has_a_place_in_the_flow() -> None:
    parts = {p.stem if p.is_file() else p.name for p in SRC.iterdir()}
    parts = {p for p in parts if not p.startswith(("_", ".")) and p != "py"}
    assert parts - set(RANK) == set(), "a new part: give it its place in RANK"


def test_nothing_imports_up_the_flow_or_sideways() -> None:
    crossings = []
    for module, target, line in _imports():
        mine, theirs = _part(module), _part(target)
        if mine == theirs or (module, target) in ALLOWED:
            continue
        if _rank(theirs) >= _rank(mine) and _rank(mine) != 0:
            crossings.append(f"{module}:{line} imports {target}")
        elif _rank(mine) == 0 and _rank(theirs) != 0:
            crossings.append(f"{module}:{line} (a base module) imports {target}")
    assert crossings == []


def test_every_allowed_crossing_still_exists() -> None:
    # an exception outliving its import would let the next one in unseen
    seen = {(module, target) for module, target, _ in _imports()}
    assert set(ALLOWED) <= seen


@pytest.mark.parametrize(
    ("module", "target", "up"),
    [
        ("agui_tools.wire._codec", "agui_tools.app._reducer", True),
        ("agui_tools.transport._proxy", "agui_tools.check._judge", True),
        ("agui_tools.ui.inspector._backend", "agui_tools.check._runner", True),
        ("agui_tools.cli.run_cmd", "agui_tools.ui.terminal", False),
        ("agui_tools.check._judge", "agui_tools.wire._verify", False),
    ],
)
def test_the_rule_itself(module: str, target: str, up: bool) -> None:
    mine, theirs = _part(module), _part(target)
    assert (_rank(theirs) >= _rank(mine) and mine != theirs) is up
