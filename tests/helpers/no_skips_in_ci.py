"""In CI no test skips: a skip there is a test that cannot fail.

Locally a test may skip when what it needs is missing (Node for the interop
tests) and say why. Under ``CI`` (any value but empty, ``0``, ``false`` or
``no``) that skip would pass the build without running the test, so it is
reported as an error instead, with the skip's reason: ``make test`` installs
everything the tests need, and a CI run missing it is broken. Expected
failures (``xfail``) are not skips and are left alone.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

__all__ = ["in_ci", "pytest_runtest_makereport"]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.skipped and not hasattr(report, "wasxfail") and in_ci():
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = (
            f"skipped under CI={os.environ['CI']!r}: {reason}\n"
            "In CI every test runs: `make test` installs what the tests need "
            "(tests/helpers/no_skips_in_ci.py)."
        )
    return report
