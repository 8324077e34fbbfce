"""Mock tools: frontend tools defined in the page and answered there, by a person.

:class:`Mocks` is a part of :class:`~agui_tools.ui.inspector._backend.Inspector`
(a mixin, its state the inspector's): the tool is registered with the session, and
each call waits for the page's answer (checked against the tool's result schema).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..._errors import UsageError
from ...app._calls import CallStatus
from ...app._tools import ToolSpec
from ...app._validation import ArgumentValidator, InvalidToolSchema
from ...transport._session import Session
from ._hub import Hub, Refused, schema_errors

__all__ = ["MOCK_TIMEOUT", "MockTool", "MockToolFailed", "Mocks"]

MOCK_TIMEOUT = 24 * 3600.0
"""A mock tool waits for a person: the session's handler timeout would answer
it "outcome unknown" while they are still typing."""


@dataclass(frozen=True)
class MockTool:
    """A frontend tool defined in the page: the user answers each call with a form."""

    spec: ToolSpec
    result: Mapping[str, Any]


class Mocks:
    """The mock tools' part of the inspector (see the module)."""

    hub: Hub
    session: Session
    _mocks: dict[str, MockTool]
    _answers: dict[str, asyncio.Future[tuple[bool, Any]]]
    _cards: dict[str, dict[str, Any]]

    def add_mock_tool(
        self,
        name: Any,
        description: Any,
        parameters: Any,
        result: Any = None,
        side_effects: Any = False,
    ) -> None:
        """A frontend tool the page answers by hand (a form generated from ``result``)."""
        if self.session.conversation is not None:
            raise Refused(409, "tools are fixed once the thread started: define them first")
        if not isinstance(name, str) or not name.strip():
            raise Refused(422, "a tool needs a name")
        if not isinstance(description, str) or not description.strip():
            raise Refused(422, f"tool {name!r} needs a description")
        if parameters is None:
            parameters = {"type": "object"}
        result = {"type": "string"} if result is None else result
        for label, schema in (("parameters", parameters), ("result", result)):
            if not isinstance(schema, dict):
                raise Refused(422, f"the {label} schema of {name!r} must be a JSON object")
            try:
                ArgumentValidator(schema)
            except InvalidToolSchema as exc:
                raise Refused(
                    422, f"the {label} schema of {name!r} is not a schema: {exc}"
                ) from None
        spec = ToolSpec(
            name.strip(),
            description.strip(),
            parameters=parameters,
            side_effects=bool(side_effects),
        )
        mock = MockTool(spec, result)
        if spec.name in self._mocks:
            raise Refused(409, f"a tool named {spec.name!r} is already registered")
        try:
            self._mocks[spec.name] = mock
            self.session.add_tool(spec, self._mock_handler(mock), timeout=MOCK_TIMEOUT)
        except UsageError as exc:
            self._mocks.pop(spec.name, None)
            raise Refused(409, str(exc)) from None

    def _mock_handler(self, mock: MockTool) -> Callable[[dict[str, Any]], Any]:
        async def answer(arguments: dict[str, Any]) -> Any:
            return await self._mock_answer(mock, arguments)

        return answer

    async def _mock_answer(self, mock: MockTool, arguments: dict[str, Any]) -> Any:
        conv = self.session.conversation
        assert conv is not None
        call = next(
            c for c in conv.pending if c.status is CallStatus.EXECUTING and c.name == mock.spec.name
        )
        future: asyncio.Future[tuple[bool, Any]] = asyncio.get_running_loop().create_future()
        self._answers[call.call_id] = future
        self._cards.pop(call.call_id, None)
        self.hub.push(
            "answer-form",
            callId=call.call_id,
            name=mock.spec.name,
            arguments=arguments,
            schema=mock.result,
        )
        try:
            ok, value = await future
        finally:
            self._answers.pop(call.call_id, None)
        if not ok:
            raise MockToolFailed(str(value))
        return value

    def answer(self, call_id: str, *, value: Any = None, error: str | None = None) -> None:
        """The user's answer to a mock tool's call: a value (checked) or a failure."""
        future = self._answers.get(call_id)
        if future is None:
            raise Refused(409, f"call {call_id!r} is not waiting for an answer")
        conv = self.session.conversation
        assert conv is not None
        mock = self._mocks[conv.call(call_id).name]
        if error is not None:
            outcome: tuple[bool, Any] = (False, error or "failed")
        else:
            # a result is any JSON value its schema admits — a string, a number, an object
            # (the argument validator wants an object: a string result was refused)
            errors = ArgumentValidator(mock.result).validate_value(value)
            if errors:
                raise Refused(
                    422,
                    "the answer does not match the tool's result schema",
                    errors=schema_errors(errors),
                )
            outcome = (True, value)
        if not future.done():
            future.set_result(outcome)
        self._cards.pop(call_id, None)
        self.hub.push("answer-done", callId=call_id)


class MockToolFailed(Exception):
    """The person answering a mock tool chose to fail the call (their reason is the message)."""
