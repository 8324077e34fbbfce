"""Every Python example in the README and docs/ runs, and prints what its page shows
(issue 26, item 5).

The rule, for every ``*.md`` at the top of the repository and in ``docs/`` (also
stated in tests/README.md, "Doc examples print what their page shows"):

* A ```` ```python ```` block is an **example**: the examples of one page run in
  order, in one fresh interpreter, as a reader pasting them one after another
  would — each block compiled under the page's name and line numbers, so a
  failure points at the page's line. An example that needs a server starts one
  on loopback itself (``agui_tools.testing.serving``).
* What an example **prints** is compared with the page: the ```` ```text ````
  block marked ``<!-- output -->`` (on the line before it) that follows the
  example, before the next one, is what it prints. Blank lines are left out on
  both sides and minted ids are shortened (``msg-3f2a…`` → ``msg-…``, for
  ``msg``, ``call``, ``result``, ``run`` and ``thread`` ids), which the page says
  where it shows them. An example that prints and shows no marked output fails: a
  page never prints something it does not show.
* A block that is not meant to run on its own — a sketch against a service the
  suite does not have — is marked ``<!-- fragment: why -->`` on the line before
  it, and is checked to compile only; the reason is required. Nothing is skipped
  silently: an unmarked block runs.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.doc_pages import (
    PAGES,
    ROOT,
    SHELL_LANGUAGES,
    fenced_blocks,
    normalized,
    pending_marked,
)

SENTINEL = "\x1e--- end of doc example ---\x1e"
PENDING: dict[str, str] = {}
"""Pages known to break the rule, each with why: expected to fail (strict — the day the
page is fixed the test says to remove the entry). Add none without a reason."""


@dataclass
class Example:
    line: int  # the line of the block's first code line, 1-based
    code: str
    fragment: str | None = None  # the reason, when marked a fragment
    shown: list[str] | None = None  # the marked output, when the page shows one
    shown_line: int = 0


def examples(path: Path) -> list[Example]:
    """The page's Python blocks, each with its marker and the output it shows."""
    text = path.read_text()
    found: list[Example] = []
    after_shell = False  # an output after a shell block is test_shell_examples.py's
    for lang, body, start, mark in fenced_blocks(text):
        if lang in SHELL_LANGUAGES or lang == "python":
            after_shell = lang != "python"
        if lang == "python":
            fragment = None
            if mark and mark.group(1) == "fragment":
                fragment = mark.group(2) or ""
                assert fragment, (
                    f"{path.name}:{start}: a fragment marker says why (<!-- fragment: … -->)"
                )
            found.append(Example(start + 1, body, fragment))
        elif mark and mark.group(1) == "output" and not after_shell:
            assert lang == "text", f"{path.name}:{start}: an output block is a ```text block"
            assert found, f"{path.name}:{start}: an output block with no example before it"
            last = found[-1]
            assert last.shown is None, f"{path.name}:{start}: a second output for one example"
            assert last.fragment is None, f"{path.name}:{start}: a fragment prints nothing"
            last.shown, last.shown_line = normalized(body), start
    return found


def program(path: Path, blocks: list[Example]) -> str:
    """One script: each example compiled at its page line, run in one namespace (the
    module's own, so type hints and pickling resolve), a sentinel printed after each."""
    lines = [
        "import sys",
        "_ns = globals()",
    ]
    for ex in blocks:
        source = "\n" * (ex.line - 1) + ex.code
        mode = "compile" if ex.fragment is not None else "run"
        lines.append(f"_code = compile({source!r}, {str(path)!r}, 'exec')")
        if mode == "run":
            lines.append("exec(_code, _ns)")
        lines.append(f"print({SENTINEL!r}, flush=True)")
    return "\n".join(lines) + "\n"


def _pages() -> list[Path]:
    return [p for p in PAGES if examples(p)]


@pytest.mark.parametrize("path", pending_marked(_pages(), PENDING), ids=lambda p: p.name)
def test_the_examples_of_a_page_run_and_print_what_it_shows(path: Path, tmp_path: Path) -> None:
    blocks = examples(path)
    script = tmp_path / f"{path.stem}_examples.py"
    script.write_text(program(path, blocks))
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, timeout=300, cwd=tmp_path
    )
    out = proc.stdout.decode("utf-8")  # protobuf bytes would not even decode as text
    assert proc.returncode == 0, f"{path.name}:\n{out[-2000:]}\n{proc.stderr.decode()[-4000:]}"
    printed = out.split(SENTINEL + "\n")
    assert len(printed) == len(blocks) + 1 and not printed[-1].strip(), printed[-1][-500:]
    for ex, got in zip(blocks, printed, strict=False):
        lines = normalized(got)
        where = f"{path.relative_to(ROOT)}:{ex.line}"
        if ex.shown is None:
            assert not lines, (
                f"{where}: the example prints, and the page shows no output for it — add a "
                "```text block marked <!-- output --> after it, showing:\n" + "\n".join(lines)
            )
        else:
            assert lines == ex.shown, (
                f"{where}: prints something else than the page shows ({path.name}:{ex.shown_line})"
            )


def test_the_markers_are_read_as_the_rule_says(tmp_path: Path) -> None:
    """The reader of the markers: a fragment is not run, an output belongs to the
    example before it, minted ids and blank lines are normalised."""
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nprint('msg-0123456789abcdef0123456789abcdef')\n```\n\ntext\n\n"
        "<!-- output -->\n```text\nmsg-…\n\n```\n\n"
        "<!-- fragment: needs the payment API -->\n```python\npayments.charge(1)\n```\n"
    )
    first, second = examples(page)
    assert first.shown == ["msg-…"] and first.fragment is None and first.line == 2
    assert second.fragment == "needs the payment API" and second.shown is None
    script = tmp_path / "run.py"
    script.write_text(program(page, [first, second]))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True).stdout
    assert [normalized(p) for p in out.split(SENTINEL + "\n")] == [["msg-…"], [], []]
    page.write_text("<!-- fragment -->\n```python\nx\n```\n")
    with pytest.raises(AssertionError, match="says why"):
        examples(page)


def test_every_page_with_examples_is_covered() -> None:
    """The README and the pages the issue names have examples the test runs."""
    covered = {p.name for p in _pages()}
    assert {"README.md", "agent.md", "application.md", "transport.md"} <= covered, covered


def borrowed_imports(blocks: list[Example]) -> list[tuple[int, str]]:
    """``(line, name)`` for each module or name a block uses that only an earlier block
    of the page imported: the page runs in one namespace, so it works there, but a
    reader pasting that block alone gets a ``NameError``. A block may use what an
    earlier one *defines* (the page says "the agent above"); never its imports."""
    imported: set[str] = set()
    found = []
    for ex in blocks:
        tree = ast.parse(ex.code)
        own: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                own |= {(a.asname or a.name).split(".")[0] for a in node.names}
        bound = {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        } | {
            n.name
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        }
        used = {
            (n.lineno, n.id)
            for n in ast.walk(tree)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        seen: set[str] = set()
        for line, name in sorted(used):
            if name in imported and name not in own and name not in bound and name not in seen:
                seen.add(name)
                found.append((ex.line + line - 1, name))
        imported |= own
    return found


@pytest.mark.parametrize("path", _pages(), ids=lambda p: p.name)
def test_every_example_imports_what_it_uses(path: Path) -> None:
    """docs/deployment.md's recovery recipe used ``pathlib`` and ``tempfile`` that only
    the page's first example imported: the page ran, the recipe pasted alone did not."""
    borrowed = borrowed_imports([ex for ex in examples(path) if ex.fragment is None])
    assert borrowed == [], [
        f"{path.name}:{line}: {name} is not imported" for line, name in borrowed
    ]


def test_a_borrowed_import_is_found() -> None:
    first = Example(1, "import pathlib\nimport os as o\nprint(pathlib, o)\n")
    second = Example(10, "app = 1\n\ndef f():\n    return pathlib.Path(o.sep)\n")
    third = Example(20, "import pathlib\nprint(pathlib, app)\n")
    assert borrowed_imports([first, second, third]) == [(13, "o"), (13, "pathlib")]
