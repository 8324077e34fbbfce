"""The suite's own pytest hooks (the helpers themselves live in tests/helpers/)."""

from tests.helpers.no_skips_in_ci import pytest_runtest_makereport
from tests.helpers.run_errors import (  # the hooks pytest finds here, by name
    pytest_configure,
    pytest_runtest_call,
    pytest_unconfigure,
)

pytest_plugins = ["pytester"]  # tests/test_guards.py runs pytest on test files it writes

__all__ = [
    "pytest_configure",
    "pytest_runtest_call",
    "pytest_runtest_makereport",
    "pytest_unconfigure",
]
