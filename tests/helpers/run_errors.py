"""Every agent-body failure counts: a pytest plugin that fails the test instead.

Why this exists: the runner turns an agent's exception into ``RUN_ERROR``
(RUN-10) — rightly, for a server — so an ``assert`` inside a test's agent body
never reaches pytest. It ends the run with ``RUN_ERROR``, and a test that only
judged the stream (``RUN_ERROR`` is a valid ending) passed with its assertion
false. The same holds for a run the agent could not end cleanly (a protocol
rule it broke) and for a bug of ours in the producer or the server.

Every one of those is logged at ERROR by a logger under ``agui_tools``, with
the exception attached when there is one; so is, by ``asyncio``, a task's
exception that nobody retrieved (a background task's failure). This plugin
keeps those records while a test runs and, when the test itself passed, fails
it:

* with the agent's own exception as the cause (so the report shows the agent
  body's line and pytest's assertion introspection), unless
* the test says it wants such an ending — ``@pytest.mark.run_error(...)``
  naming the exception class(es), or a rule ID / text of the logged message or
  of the exception —
  in which case at least one such ending must happen (a stale mark fails too),
  and every ending must match one of the names.

Loaded for every test by tests/conftest.py; proven by tests/test_guards.py.
Agents run in another process (the CLI, the killed e2e server) are not seen
here: their tests judge the stream with :func:`tests.helpers.judging` helpers,
which refuse a ``RUN_ERROR`` the test did not ask for.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Generator, Sequence

import pytest

__all__ = ["AgentFailed", "RunErrorLog", "unexpected_endings"]

# ours (the runner, the server), and asyncio's, where a task's exception nobody retrieved
# is logged. Not uvicorn's: its logging config replaces the handlers of its loggers
# whenever a server starts (an escaped exception is a 500 the tests see anyway).
LOGGERS = ("agui_tools", "asyncio")
MARK = "run_error"


class AgentFailed(AssertionError):
    """A run ended with ``RUN_ERROR`` (an agent body raised, or a bug of ours) and the
    test did not declare it with ``@pytest.mark.run_error``."""


class RunErrorLog(logging.Handler):
    """Keeps every ERROR record of the ``agui_tools`` loggers, from any thread."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def take(self) -> list[logging.LogRecord]:
        with self.lock:  # type: ignore[union-attr]
            taken, self.records = self.records, []
        return taken


_STASH = pytest.StashKey[RunErrorLog]()


def describe(record: logging.LogRecord) -> str:
    """One record as a reader wants it: where, what was logged and the exception, if any."""
    text = f"{record.name} logged: {record.getMessage()}"
    if record.exc_info and record.exc_info[1] is not None:
        exc = record.exc_info[1]
        where = traceback.extract_tb(exc.__traceback__)[-1:]
        at = f" (at {where[0].filename}:{where[0].lineno})" if where else ""
        text += f"\n  {type(exc).__name__}: {exc}{at}"
    return text


def _matches(record: logging.LogRecord, wanted: Sequence[str]) -> bool:
    """A wanted name is the exception's class name, or text of the logged message or of
    the exception (a rule ID, a phrase)."""
    exc = record.exc_info[1] if record.exc_info else None
    kind, said = (type(exc).__name__, str(exc)) if exc is not None else ("", "")
    message = record.getMessage()
    return any(name == kind or name in message or name in said for name in wanted)


def unexpected_endings(
    records: Sequence[logging.LogRecord], wanted: Sequence[str] | None
) -> AgentFailed | None:
    """What to fail a passed test with, given the ERROR records of its runs and its mark.

    ``wanted`` is None without a mark; an empty sequence is a mark naming nothing
    (any ending is wanted, but there must be one).
    """
    if wanted is None:
        stray = list(records)
    else:
        if not records:
            named = ", ".join(wanted) or "any"
            return AgentFailed(
                f"@pytest.mark.{MARK}({named}) is declared, but no run ended with RUN_ERROR"
            )
        stray = [r for r in records if wanted and not _matches(r, wanted)]
    if not stray:
        return None
    first = stray[0]
    more = f" (and {len(stray) - 1} more)" if len(stray) > 1 else ""
    hint = (
        f"a failure this test did not ask for{more} (a run ending with RUN_ERROR, or a "
        "task failing unseen); if a run's RUN_ERROR is the point of the test, say so "
        f"with @pytest.mark.{MARK}(<exception class or rule ID>)"
        if wanted is None
        else f"a RUN_ERROR other than the declared {', '.join(wanted)}{more}"
    )
    failure = AgentFailed(f"{hint}:\n" + "\n".join(describe(r) for r in stray))
    cause = first.exc_info[1] if first.exc_info else None
    if cause is not None:
        failure.__cause__ = cause
    return failure


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARK}(*names): this test means a run to end with RUN_ERROR (an agent or "
        "server failure logged at ERROR): each name is an exception class name, or text "
        "(a rule ID, a phrase) of the logged message or of the exception; at least one "
        "such ending must happen, and every one must match a name",
    )
    handler = RunErrorLog()
    config.stash[_STASH] = handler
    for name in LOGGERS:
        logging.getLogger(name).addHandler(handler)


def pytest_unconfigure(config: pytest.Config) -> None:
    handler = config.stash.get(_STASH, None)
    if handler is not None:
        for name in LOGGERS:
            logging.getLogger(name).removeHandler(handler)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    handler = item.config.stash[_STASH]
    for name in LOGGERS:  # again, in case a logging config replaced the handlers since
        logging.getLogger(name).addHandler(handler)
    handler.take()  # what happened before this test's body is not its doing
    marker = item.get_closest_marker(MARK)
    wanted = None if marker is None else tuple(str(a) for a in marker.args)
    try:
        outcome = yield
    except BaseException as exc:
        # the test failed on its own: keep its failure, and add what its runs hid
        failure = unexpected_endings(handler.take(), wanted)
        if failure is not None and not isinstance(exc, AgentFailed):
            exc.add_note(f"Also: {failure}")
        raise
    failure = unexpected_endings(handler.take(), wanted)
    if failure is not None:
        raise failure
    return outcome
