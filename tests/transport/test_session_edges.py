"""Session edges found trying the command line as a new user would (issue 13):
constraints written with ``Annotated`` are kept, a pydantic-model tool refuses
arguments it does not declare, a declined call says who declined, and a sync
handler that outlives its timeout does not hold the process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import BaseModel, ConfigDict, Field

from agui_tools.app._calls import CallStatus
from agui_tools.transport._session import Approval, Session, tool_spec_from_function
from tests.helpers.session import pending_call

ROOT = Path(__file__).resolve().parents[2]


def test_annotated_constraints_and_descriptions_reach_the_schema() -> None:
    ran: list[int] = []

    def repeat(n: Annotated[int, Field(ge=1, description="how many times")]) -> str:
        """Repeat something."""
        ran.append(n)
        return "ok"

    spec, _ = tool_spec_from_function(repeat)
    prop = dict(spec.parameters or {})["properties"]["n"]
    assert prop["minimum"] == 1 and prop["description"] == "how many times"
    assert [e.keyword for e in spec.validator.validate({"n": 0})] == ["minimum"]

    session = Session(client=None)  # type: ignore[arg-type]
    session.tool(repeat)
    conv = pending_call(session, "repeat", '{"n": 0}')
    asyncio.run(session.dispose(lambda u: None))
    call = conv.call("c1")
    assert call.status is CallStatus.FAILED and "/n" in (call.answer.error or "")  # type: ignore[union-attr]
    assert ran == []  # refused before the handler


class Where(BaseModel):
    precision: str


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")
    precision: str


class Outer(BaseModel):
    where: Where


def test_a_pydantic_model_tool_refuses_arguments_it_does_not_declare() -> None:
    ran: list[Where] = []

    def locate(where: Where) -> str:
        """Locate the user."""
        ran.append(where)
        return where.precision

    spec, handler = tool_spec_from_function(locate)
    assert dict(spec.parameters or {})["additionalProperties"] is False
    errors = spec.validator.validate({"precision": "city", "smuggled": "x"})
    assert [e.keyword for e in errors] == ["additionalProperties"]
    with pytest.raises(ValueError, match="smuggled"):  # nor past a direct call
        handler({"precision": "city", "smuggled": "x"})

    session = Session(client=None)  # type: ignore[arg-type]
    session.tool(locate)
    conv = pending_call(session, "locate", '{"precision": "city", "smuggled": "x"}')
    asyncio.run(session.dispose(lambda u: None))
    assert conv.call("c1").status is CallStatus.FAILED and ran == []


def test_nested_models_are_closed_and_a_model_that_allows_extras_keeps_its_word() -> None:
    def nested(outer: Outer) -> str:
        """Nested."""
        return outer.where.precision

    spec, _ = tool_spec_from_function(nested)
    assert spec.validator.validate({"where": {"precision": "city", "x": 1}})

    def open_model(where: Open) -> str:
        """Open."""
        return where.precision

    spec, handler = tool_spec_from_function(open_model)
    assert dict(spec.parameters or {})["additionalProperties"] is True
    assert spec.validator.validate({"precision": "city", "extra": 1}) == []
    assert handler({"precision": "city", "extra": 1}) == "city"


def test_a_decline_nobody_gave_is_not_worded_as_the_users() -> None:
    def act() -> str:
        """Act (side effect)."""
        return "done"

    session = Session(
        client=None,  # type: ignore[arg-type]
        ask=lambda call: Approval.decline("standard input ended", by="system"),
    )
    session.tool(side_effects=True)(act)
    conv = pending_call(session, "act", "{}")
    asyncio.run(session.dispose(lambda u: None))
    answer = conv.call("c1").answer
    assert answer is not None and answer.outcome == "declined"
    assert "The user" not in str(answer.content) and "standard input ended" in str(answer.content)
    assert conv.call("c1").decision.decided_by == "system"  # type: ignore[union-attr]


def test_a_sync_handler_past_its_timeout_does_not_hold_the_process(tmp_path: Path) -> None:
    """The handler blocks for ever: the conversation answers it "outcome unknown"
    at its timeout and the process then exits — it does not wait for the thread."""
    program = tmp_path / "prog.py"
    program.write_text(
        textwrap.dedent(
            """
            import asyncio, threading
            from agui_tools.app._calls import CallStatus
            from agui_tools.transport._session import Session
            from tests.helpers.session import pending_call

            session = Session(client=None, timeout=0.2)

            @session.tool
            def stuck() -> str:
                "Block for ever."
                threading.Event().wait()
                return "never"

            conv = pending_call(session, "stuck", "{}")
            asyncio.run(session.dispose(lambda u: None))
            print(conv.call("c1").answer.error)
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, str(program)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "did not finish within 0.2 s" in proc.stdout
