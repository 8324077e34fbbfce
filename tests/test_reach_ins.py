"""The application core is reached through its public names only, and no module
imports itself round a circle (docs/architecture.md).

A *reach-in* is a module in ``transport/``, ``ui/``, ``cli/`` or ``check/`` that
uses a ``_``-name of an ``app`` object: imports a ``_``-name from ``app``, or
reads or writes an attribute starting with ``_`` on an object from ``app``. An
object is "from ``app``" when the module names it with an ``app`` type
(``conv: Conversation``, a parameter, an attribute) or when the attribute is
one only ``app`` defines (``conv._restore_steps``). Each reach-in is a second
copy of the core's protocol; the core changing its insides breaks the faces.

The import graph counts every import, lazy or under ``TYPE_CHECKING``: a cycle
there is two modules that cannot be read (or split) one without the other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "agui_tools"
FACES = ("transport", "ui", "cli", "check")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_of(path: Path) -> tuple[str, str]:
    """(module, the package its relative imports start from), of a path under ``SRC``."""
    parts = (SRC.name, *path.relative_to(SRC).with_suffix("").parts)
    module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return module, module if path.name == "__init__.py" else module.rsplit(".", 1)[0]


def _imported(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _private_names_defined(paths: Iterator[Path]) -> set[str]:
    """The ``_``-names classes define on themselves (methods, ``self._x``)."""
    names: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _private(node.name):
                names.add(node.name)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and _private(node.attr)
            ):
                names.add(node.attr)
    return names


APP_ONLY = _private_names_defined((SRC / "app").rglob("*.py")) - _private_names_defined(
    p for p in SRC.rglob("*.py") if "app" not in p.relative_to(SRC).parts[:1]
)
"""``_``-names only ``app`` defines: whoever reaches one reaches into ``app``."""


def _leaf(node: ast.expr) -> str | None:
    """The name an expression ends in: ``conv`` → conv, ``step.conversation`` → conversation."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _app_typed(tree: ast.Module, app_types: set[str]) -> set[str]:
    """Names (variables, parameters, attributes) annotated with an ``app`` type."""
    typed: set[str] = set()
    for node in ast.walk(tree):
        target: ast.expr | None = None
        annotation: ast.expr | None = None
        if isinstance(node, ast.AnnAssign):
            target, annotation = node.target, node.annotation
        elif isinstance(node, ast.arg) and node.annotation is not None:
            annotation = node.annotation
            typed_name = node.arg
        if annotation is None:
            continue
        mentioned = {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)}
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            mentioned = set(annotation.value.replace("|", " ").replace("[", " ").split())
        if mentioned & app_types:
            name = _leaf(target) if target is not None else typed_name
            if name is not None:
                typed.add(name)
    return typed


def reach_ins(path: Path, source: str | None = None) -> list[str]:
    """Every use of a ``_``-name of an ``app`` object in the module at ``path`` (its
    text, or ``source`` as if it were), as ``file:line what``."""
    _, package = _module_of(path)
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source)
    where = path.relative_to(SRC)
    found: list[str] = []
    app_types: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _imported(node, package)
            if source == "agui_tools.app" or source.startswith("agui_tools.app."):
                for alias in node.names:
                    if _private(alias.name):
                        found.append(f"{where}:{node.lineno} imports {source}.{alias.name}")
                    app_types.add(alias.asname or alias.name)
    typed = _app_typed(tree, app_types)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not _private(node.attr):
            continue
        receiver = _leaf(node.value)
        if receiver in ("self", "cls"):
            continue
        if node.attr in APP_ONLY or receiver in typed:
            found.append(f"{where}:{node.lineno} {ast.unparse(node)}")
    return found


def _faces() -> list[Path]:
    return sorted(p for face in FACES for p in (SRC / face).rglob("*.py"))


def test_no_face_reaches_into_the_application_core() -> None:
    found = [hit for path in _faces() for hit in reach_ins(path)]
    assert found == [], f"{len(found)} reach-in(s) into app/:\n" + "\n".join(found)


def test_a_reach_in_is_seen() -> None:
    # the counter itself: each shape of reach-in is found, a public use is not
    source = (
        "from ..app._conversation import Conversation, _hidden\n"
        "def f(conv: Conversation, other: object) -> None:\n"
        "    conv._anything = 1\n"
        f"    other.{sorted(APP_ONLY)[0]}()\n"
        "    conv.pending\n"
        "    other._not_an_app_name_at_all\n"
    )
    hits = reach_ins(SRC / "transport" / "_example.py", source)
    assert [hit.split(" ", 1)[0] for hit in hits] == [
        "transport/_example.py:1",
        "transport/_example.py:3",
        "transport/_example.py:4",
    ]


def import_graph() -> dict[str, set[str]]:
    """Module → the modules of ``agui_tools`` it imports (any import, anywhere in it)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        module, package = _module_of(path)
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                source = _imported(node, package)
                named = {f"{source}.{alias.name}" for alias in node.names}
                # ``from .. import _telemetry`` names modules; ``from ._x import y``, a module
                deps |= named if node.module is None else {source} | named
            elif isinstance(node, ast.Import):
                deps |= {alias.name for alias in node.names}
        graph[module] = deps
    return {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_has_no_cycle() -> None:
    assert cycles(import_graph()) == []


def test_a_cycle_is_seen() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
