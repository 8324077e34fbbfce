"""The suite's own pytest hooks (the helpers themselves live in tests/helpers/)."""

from tests.helpers.run_errors import (  # the hooks pytest finds here, by name
    pytest_configure,
    pytest_runtest_call,
    pytest_unconfigure,
)

pytest_plugins = ["pytester"]  # tests/helpers/test_run_errors.py runs pytest on a test file

__all__ = ["pytest_configure", "pytest_runtest_call", "pytest_unconfigure"]
