"""The application session: what a user writes against.

Register frontend tools as plain Python callables — the JSON Schema comes from
their type hints (or a pydantic model), the description from the docstring —
say which have side effects, send a prompt, watch updates arrive, and let the
session carry the thread until the agent leaves nothing pending::

    session = Session(AgentClient("http://127.0.0.1:8000/agent"), ask=ask_the_user)

    @session.tool(side_effects=True)
    def confirm_order(order_id: str, qty: int) -> str:
        "Place the order after the user confirmed it."
        return shop.place(order_id, qty)

    result = await session.send("Order two widgets", on_update=render)

Each turn: the run streams (text deltas, tool-call cards with argument
previews), pending calls go through the consent policy — auto-approved,
``ask``-ed, or denied —, approved ones execute exactly once through the
journal with a timeout, a handler exception becomes an ``error`` tool message
(never a crash), and the next input carries every answer.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, TypeAdapter, create_model

from .._errors import UsageError
from ..app._calls import Answer, CallStatus, PendingCall
from ..app._consent import ConsentPolicy
from ..app._conversation import Conversation, RunResult, Update, call_update
from ..app._journal import Journal
from ..app._tools import ToolSpec
from ._client import AgentClient

__all__ = ["Approval", "RegisteredTool", "Session", "tool_spec_from_function"]


@dataclass(frozen=True)
class Approval:
    """The user's answer to a consent prompt.

    ``approved`` False declines; ``arguments`` approves *edited* arguments
    (which then run instead of the proposal, and are validated first).
    """

    approved: bool
    arguments: Mapping[str, Any] | None = None
    reason: str | None = None

    @classmethod
    def approve(cls, arguments: Mapping[str, Any] | None = None) -> Approval:
        return cls(True, arguments)

    @classmethod
    def decline(cls, reason: str | None = None) -> Approval:
        return cls(False, None, reason)


F = TypeVar("F", bound=Callable[..., Any])

AskUser = Callable[[PendingCall], Approval | bool | Awaitable[Approval | bool]]


@dataclass(frozen=True)
class RegisteredTool:
    spec: ToolSpec
    handler: Callable[[dict[str, Any]], Any]
    timeout: float | None


def tool_spec_from_function(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    side_effects: bool = False,
) -> tuple[ToolSpec, Callable[[dict[str, Any]], Any]]:
    """A :class:`ToolSpec` and an arguments-dict handler for a typed function.

    Parameters become JSON Schema properties (pydantic generates draft
    2020-12); a single parameter annotated with a pydantic model makes that
    model the whole argument object. Unknown arguments are refused by the
    schema (``additionalProperties: false``), so the model cannot smuggle
    parameters the function does not declare.
    """
    sig = inspect.signature(fn)
    try:
        hints = get_type_hints(fn)
    except NameError as exc:
        raise UsageError(
            f"cannot resolve the type hints of tool {fn.__name__!r} ({exc}); define the types "
            "it uses at module level"
        ) from None
    params = [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    desc = description or inspect.getdoc(fn) or ""
    if not desc:
        raise UsageError(f"tool {fn.__name__!r} needs a description (a docstring or description=)")
    model: type[BaseModel]
    single_model = (
        len(params) == 1
        and isinstance(hints.get(params[0].name), type)
        and issubclass(hints[params[0].name], BaseModel)
    )
    if single_model:
        model = hints[params[0].name]
    else:
        fields: dict[str, Any] = {}
        for p in params:
            annotation = hints.get(p.name, Any)
            default = ... if p.default is inspect.Parameter.empty else p.default
            fields[p.name] = (annotation, default)
        model = create_model(
            f"{fn.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields
        )
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    if not single_model:
        schema.setdefault("additionalProperties", False)
    adapter = TypeAdapter(model)

    def handler(arguments: dict[str, Any]) -> Any:
        parsed = adapter.validate_python(arguments)
        if single_model:
            return fn(parsed)
        return fn(**{p.name: getattr(parsed, p.name) for p in params})

    spec = ToolSpec(name or fn.__name__, desc, parameters=schema, side_effects=side_effects)
    return spec, handler


class Session:
    """A conversation with one agent, carried turn by turn.

    Args:
        client: the transport to the agent.
        ask: called for a call that needs the user's consent; returns an
            :class:`Approval` (or a bool). Without it, such calls are declined
            by the policy — a session never runs a side effect nobody approved.
        consent, journal, thread_id: as for :class:`Conversation`.
        timeout: default handler timeout in seconds.
        max_turns: a safety stop for agents that keep calling tools.
    """

    def __init__(
        self,
        client: AgentClient,
        *,
        ask: AskUser | None = None,
        consent: ConsentPolicy | None = None,
        journal: Journal | None = None,
        thread_id: str | None = None,
        timeout: float | None = 60.0,
        max_turns: int = 10,
        tools: Iterable[RegisteredTool] = (),
        conversation: Conversation | None = None,
    ) -> None:
        self.client = client
        self.ask = ask
        self.timeout = timeout
        self.max_turns = max_turns
        self._tools: dict[str, RegisteredTool] = {t.spec.name: t for t in tools}
        self._consent = consent
        self._journal = journal
        self._thread_id = thread_id
        self.conversation = conversation

    # -- registration -------------------------------------------------------------

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        side_effects: bool = False,
        timeout: float | None = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        side_effects: bool = False,
        timeout: float | None = None,
    ) -> Any:
        """Register a frontend tool (usable bare or with arguments, as a decorator)."""

        def register(f: F) -> F:
            spec, handler = tool_spec_from_function(
                f, name=name, description=description, side_effects=side_effects
            )
            self.add_tool(spec, handler, timeout=timeout)
            return f

        return register(fn) if fn is not None else register

    def add_tool(
        self,
        spec: ToolSpec,
        handler: Callable[[dict[str, Any]], Any],
        *,
        timeout: float | None = None,
    ) -> None:
        if self.conversation is not None:
            raise UsageError("register tools before the first send()")
        if spec.name in self._tools:
            raise UsageError(f"a tool named {spec.name!r} is already registered")
        self._tools[spec.name] = RegisteredTool(spec, handler, timeout)

    def _conversation(self) -> Conversation:
        if self.conversation is None:
            self.conversation = Conversation(
                thread_id=self._thread_id,
                tools=[t.spec for t in self._tools.values()],
                consent=self._consent,
                journal=self._journal,
            )
        return self.conversation

    # -- the loop ---------------------------------------------------------------------

    async def send(
        self, text: str | None = None, *, on_update: Callable[[Update], Any] | None = None
    ) -> RunResult:
        """Send a user message and carry the thread until nothing is pending.

        Returns the last run's result: ``success`` with no pending calls when
        the agent is done, or whatever stopped the loop (an interrupt, an
        error, a truncated or rejected stream, ``max_turns``).
        """
        conv = self._conversation()
        emit = on_update or (lambda _u: None)
        if text is not None:
            conv.next_input(user=text)
        else:
            conv.next_input()
        result: RunResult | None = None
        for _ in range(self.max_turns):
            result = await self.client.run(conv, on_update=emit)
            for update in conv.take_updates():
                emit(update)
            # the agent is done when its run left no calls at all; calls the core already
            # answered (refused, invalid, denied) still need the agent to hear the answer
            if result.status != "success" or not result.pending:
                return result
            await self.dispose(emit)
            conv.next_input()
        assert result is not None
        return result

    async def dispose(self, emit: Callable[[Update], Any]) -> None:
        """Answer every pending call: ask, execute, or leave it to the answers already given."""
        conv = self._conversation()
        for call in list(conv.pending):
            if call.status is CallStatus.AWAITING_CONSENT:
                emit(call_update(call))
                if self.ask is None:
                    # nobody to ask: the policy declines — never worded as the user's decision
                    conv.decline(
                        call.call_id, by="policy", reason="no one was available to ask for consent"
                    )
                else:
                    approval = await self._ask(call)
                    if approval.approved:
                        conv.approve(
                            call.call_id,
                            by="user",
                            arguments=approval.arguments,
                            reason=approval.reason,
                        )
                    else:
                        conv.decline(call.call_id, by="user", reason=approval.reason)
            if call.status is CallStatus.APPROVED:
                await self._execute(call)
            for update in conv.take_updates():
                emit(update)

    async def _ask(self, call: PendingCall) -> Approval:
        assert self.ask is not None
        answer = self.ask(call)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, bool):
            return Approval(answer)
        return answer

    async def _execute(self, call: PendingCall) -> Answer:
        conv = self._conversation()
        registered = self._tools.get(call.name)
        if registered is None:  # an unadvertised tool routed elsewhere has no handler here
            return conv.fail(call.call_id, f"no handler is registered for {call.name!r}")
        timeout = registered.timeout if registered.timeout is not None else self.timeout
        handler = registered.handler

        async def run(arguments: dict[str, Any]) -> Any:
            if inspect.iscoroutinefunction(handler):
                coro = handler(arguments)
            else:
                result = await asyncio.to_thread(handler, arguments)
                if not inspect.isawaitable(result):
                    return result
                coro = result
            return await coro

        async def bounded(arguments: dict[str, Any]) -> Any:
            if timeout is None:
                return await run(arguments)
            # only our own deadline is reported as one: a TimeoutError the handler
            # raised itself (a socket timeout, say) is its failure, told as such
            deadline = asyncio.timeout(timeout)
            try:
                async with deadline:
                    return await run(arguments)
            except TimeoutError:
                if not deadline.expired():
                    raise
                raise TimeoutError(
                    f"the handler did not finish within {timeout:g} s; its outcome is unknown"
                ) from None

        return await conv.execute_async(call.call_id, bounded)
