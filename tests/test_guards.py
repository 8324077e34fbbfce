"""The suite's own guards. :mod:`tests.helpers.run_errors`: an agent body's failed
assertion fails its test — in process, behind a server, and with a ``run_error``
mark naming something else — and a mark that nothing honours fails too.
:mod:`tests.helpers.no_skips_in_ci`: under ``CI`` a skip is an error. And no test
file imports another: what two files share lives in :mod:`tests.helpers`, so a
test file can be renamed, split or deleted without breaking a stranger.

Run as a real pytest session in a subprocess (``pytester``), so the outcomes are
pytest's own and the inner agents' failures stay out of this session's log.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

INNER = """
import asyncio

import httpx
import pytest

from agui_tools.agent import Run, collect
from agui_tools.testing import serving
from agui_tools.transport import agent_app
from tests.helpers.judging import judge

INPUT = {"threadId": "t", "runId": "r", "messages": []}


async def asserts_falsely(run: Run) -> None:
    await run.text("hello")
    assert run.thread_id == "not-t"


async def says_hello(run: Run) -> None:
    await run.text("hello")


def test_in_process_agent_assertion():
    asyncio.run(collect(asserts_falsely, INPUT))  # ends RUN_ERROR; nothing raised here


def test_served_agent_assertion():
    async def main() -> int:
        async with serving(agent_app(asserts_falsely)) as base:
            async with httpx.AsyncClient() as client:
                return (await client.post(base + "/", json=INPUT)).status_code

    assert asyncio.run(main()) == 200


def test_a_task_failing_unseen():
    async def orphan() -> None:
        raise ValueError("nobody awaited me")

    async def main() -> None:
        asyncio.get_running_loop().create_task(orphan())
        await asyncio.sleep(0.01)

    asyncio.run(main())


@pytest.mark.run_error("AssertionError")
def test_declared_and_happening():
    asyncio.run(collect(asserts_falsely, INPUT))


@pytest.mark.run_error("KeyError")
def test_declared_something_else():
    asyncio.run(collect(asserts_falsely, INPUT))


@pytest.mark.run_error("AssertionError")
def test_declared_but_nothing_failed():
    asyncio.run(collect(says_hello, INPUT))


@pytest.mark.run_error("AssertionError")
def test_judge_refuses_an_error_ending_it_was_not_told_of():
    events = asyncio.run(collect(asserts_falsely, INPUT))
    try:
        judge(events, INPUT)
    except AssertionError as exc:
        assert "RUN_ERROR the test did not ask for" in str(exc)
    else:
        raise AssertionError("judge accepted RUN_ERROR")
    judge(events, INPUT, run_error=True)
"""


def test_an_agent_bodys_failure_fails_the_test_that_did_not_ask_for_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    pytester.makeconftest(
        "from tests.helpers.run_errors import "
        "pytest_configure, pytest_runtest_call, pytest_unconfigure  # noqa: F401\n"
    )
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rfE")
    result.assert_outcomes(passed=2, failed=5)
    result.stdout.fnmatch_lines_random(
        [
            "FAILED test_inner.py::test_in_process_agent_assertion - *",
            "FAILED test_inner.py::test_served_agent_assertion - *",
            "FAILED test_inner.py::test_a_task_failing_unseen - *",
            "FAILED test_inner.py::test_declared_something_else - *",
            "FAILED test_inner.py::test_declared_but_nothing_failed - *",
        ]
    )
    text = result.stdout.str()
    # the agent's own line is shown, with pytest's introspection of its assertion
    assert 'assert run.thread_id == "not-t"' in text and "- not-t" in text
    assert "a RUN_ERROR other than the declared KeyError" in text
    assert "asyncio logged: Task exception was never retrieved" in text
    assert "@pytest.mark.run_error(AssertionError) is declared, but no run ended" in text


SKIPS = """
import pytest


def test_skips():
    pytest.skip("node not found")


@pytest.mark.skipif(True, reason="needs something missing")
def test_skipped_by_mark():
    pass


@pytest.mark.xfail(reason="a known gap", strict=True)
def test_expected_to_fail():
    assert False
"""


@pytest.mark.parametrize(("ci", "skipped", "errors"), [("true", 0, 2), ("", 2, 0), ("0", 2, 0)])
def test_a_skip_under_ci_is_an_error_naming_its_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str, skipped: int, errors: int
) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("CI", ci)
    pytester.makeconftest(
        "from tests.helpers.no_skips_in_ci import pytest_runtest_makereport  # noqa: F401\n"
    )
    pytester.makepyfile(test_inner=SKIPS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rE")
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped", 0) == skipped
    assert outcomes.get("errors", 0) + outcomes.get("failed", 0) == errors
    assert outcomes.get("xfailed") == 1  # an expected failure is not a skip
    if errors:
        assert "skipped under CI='true': node not found" in result.stdout.str()


def _imported_test_modules(source: str, package: tuple[str, ...]) -> list[tuple[int, str]]:
    """The ``test_*`` modules ``source`` (a file of ``package``) imports, with lines.

    A relative import is resolved against ``package``, so ``from . import test_x``
    is caught like ``from tests.app.test_x import y``.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = [*base, *(node.module.split(".") if node.module else [])]
            names = [".".join(module)] + [".".join([*module, a.name]) for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "tests" and any(part.startswith("test_") for part in parts[1:]):
                found.append((node.lineno, name))
                break
    return found


def test_no_test_file_imports_another_test_file() -> None:
    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        where = path.relative_to(ROOT)
        if "helpers" in where.parts:
            continue
        for line, name in _imported_test_modules(path.read_text(), where.parent.parts):
            offenders.append(f"{where}:{line} imports {name}")
    assert not offenders, (
        "a test file imports another; move what they share into tests/helpers/<topic>.py:\n"
        + "\n".join(offenders)
    )


@pytest.mark.parametrize(
    ("source", "caught"),
    [
        ("from tests.app.test_conversation import run", True),
        ("import tests.transport.test_session as t", True),
        ("from . import test_session_interrupts as interrupts", True),
        ("from tests.app import test_conversation", True),
        ("def f():\n    from ..ui.test_inspector_http import running", True),
        ("from tests.helpers.proxy import sse", False),
        ("from . import conftest", False),
        ("from agui_tools.testing import serving", False),
    ],
)
def test_the_import_guard_sees_every_spelling(source: str, caught: bool) -> None:
    assert bool(_imported_test_modules(source, ("tests", "transport"))) == caught
