"""The inspector's back end: one :class:`Session`, driven for a page, told as messages.

The page never talks to the agent. It posts a prompt, a consent decision or a
mock tool's answer; this object drives the thread with our ``Session`` (the
same consent, validation and exactly-once execution as every other face) and
appends what happens to a :class:`Hub` — an ordered, replayable log of plain
JSON messages the page reads over Server-Sent Events. Every value in a message
is data: the page shows it with ``textContent``, never as markup.

Messages (``kind`` and its fields):

* ``user`` — the prompt sent; ``text`` — a text delta (``messageId``, ``role``,
  ``delta``);
* ``call`` — a tool-call card changed: ``callId``, ``name``, ``status``,
  ``preview`` (a parsed prefix while streaming), ``arguments``/``errors``
  (the closed call, validated: errors carry their JSON Pointer ``path``),
  ``answer``;
* ``consent`` / ``consent-done`` — a call awaits the user's decision;
  ``answer-form`` / ``answer-done`` — a mock tool awaits the user's answer;
* ``run-start`` (``input``: the RunAgentInput exactly as sent), ``event``
  (``index``, ``type``, ``event``: each frame as received), ``warning`` /
  ``violation`` (``rule``, ``index``, ``message``), ``run-end`` (``status``,
  ``pending``, ``error``);
* ``thread`` — messages and state after a run; ``busy``; ``failed``; ``tools``.

``event``, ``run-start`` and ``run-end`` carry ``t``, the time the back end
received them (milliseconds since the epoch); ``event`` carries ``raw``, the
frame's data exactly as received.

Bounded (issue 28, item 3): a card's argument preview is sent only when it
changed (the preview re-parses geometrically, see
:class:`~agui_tools.app._arguments.PreviewPolicy`), at most
:data:`PREVIEW_LIMIT` characters of it (``previewText``, a head, past that), and
each new preview of a call *supersedes* the previous one in the log: a page
that catches up gets the latest, not every intermediate preview.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from ..._errors import AguiError, ProtocolViolation, ProtocolWarning, UsageError
from ...app._calls import CallStatus, PendingCall
from ...app._conversation import CallUpdate, Conversation, RunResult, TextDelta, Update
from ...app._tools import ToolSpec
from ...app._validation import ArgumentValidator, InvalidToolSchema
from ...transport._client import DEFAULT_TIMEOUT, AgentClient
from ...transport._session import Approval, Session
from ._capture import CapturedRun, TeeTransport

__all__ = ["Busy", "Hub", "Inspector", "Refused"]

log = logging.getLogger("agui_tools.ui.inspector")

MOCK_TIMEOUT = 24 * 3600.0
"""A mock tool waits for a person: the session's handler timeout would answer
it "outcome unknown" while they are still typing."""


class Refused(Exception):
    """A request the inspector turns down, with the HTTP status and why (shown to the user)."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra


class Busy(Refused):
    def __init__(self) -> None:
        super().__init__(409, "a turn is in progress: wait for it to end")


def _jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (anything orjson cannot write becomes its repr)."""
    return orjson.loads(orjson.dumps(value, default=repr, option=orjson.OPT_NON_STR_KEYS))


PREVIEW_LIMIT = 16_384
"""The most characters of a streaming argument's preview a card update carries."""

VALUE_LIMIT = 262_144
"""The most characters of a value (a call's arguments, a run's input, the thread's
messages or state) one message carries whole; past it, a head (``…Head``) and the
size (``…Chars``) — the exports have the whole."""


def bounded(name: str, value: Any, limit: int = VALUE_LIMIT) -> dict[str, Any]:
    """``{name: value}`` when its JSON has at most ``limit`` characters, else
    ``{name + "Head": the first limit characters, name + "Chars": its length}``."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
        except TypeError:
            return {name: value}  # not JSON at all: _jsonable writes its repr
    if len(text) <= limit:
        return {name: value}
    return {f"{name}Head": text[:limit], f"{name}Chars": len(text)}


def now_ms() -> float:
    """The time a message is stamped with: milliseconds since the epoch."""
    return round(time.time() * 1000, 3)


class Hub:
    """An ordered, replayable log of messages for the page.

    A page that reconnects (``Last-Event-ID``) resumes where it was; a second
    tab catches up with the whole session. A message pushed with a
    ``supersedes`` key replaces the previous message with that key: the old
    one leaves the log (its sequence number is never reused), so what is kept
    and replayed for a streamed argument is its latest preview, not each one.
    Nothing else is dropped.
    """

    def __init__(self) -> None:
        self._log: list[dict[str, Any] | None] = []
        self._latest: dict[str, int] = {}
        self._changed = asyncio.Event()
        self.closed = False
        self.superseded = 0

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The messages kept, in order (superseded ones left out)."""
        return [m for m in self._log if m is not None]

    @property
    def next_seq(self) -> int:
        return len(self._log)

    def close(self) -> None:
        """End every follower (the server is stopping)."""
        self.closed = True
        self._changed.set()

    def push(self, kind: str, *, supersedes: str | None = None, **fields: Any) -> dict[str, Any]:
        seq = len(self._log)
        message: dict[str, Any] = _jsonable({"seq": seq, "kind": kind, **fields})
        if supersedes is not None:
            previous = self._latest.get(supersedes)
            if previous is not None and self._log[previous] is not None:
                self._log[previous] = None
                self.superseded += 1
            self._latest[supersedes] = seq
        self._log.append(message)
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
        return message

    def settle(self, key: str) -> None:
        """Messages pushed with ``key`` from now on supersede nothing before this point."""
        self._latest.pop(key, None)

    def since(self, start: int) -> list[dict[str, Any]]:
        """The messages kept from sequence number ``start`` on."""
        return [m for m in self._log[max(0, start) :] if m is not None]

    async def follow(self, start: int = 0) -> AsyncIterator[dict[str, Any]]:
        """Every message from ``start`` on, waiting for new ones forever."""
        async for batch in self.batches(start):
            for message in batch:
                yield message

    async def batches(self, start: int = 0) -> AsyncIterator[list[dict[str, Any]]]:
        """What is new from ``start`` on, as a list each time: everything that piled up
        while the reader was away comes at once (a page catches up in one batch)."""
        i = max(0, start)
        while not self.closed:
            changed = self._changed
            if i < len(self._log):
                batch = [m for m in self._log[i:] if m is not None]
                i = len(self._log)
                if batch:
                    yield batch
                continue
            await changed.wait()


def compact(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with each run of text deltas of one message joined into one.

    Only ``event`` and ``warning`` messages (the frame list's) may stand between
    two deltas that are joined: anything the chat shows in between keeps them
    apart, so the page builds the same chat as from the deltas one by one.
    """
    out: list[dict[str, Any]] = []
    open_text: dict[str, Any] | None = None
    parts: list[str] = []
    for message in messages:
        kind = message["kind"]
        if kind == "text":
            if open_text is not None and open_text["messageId"] == message["messageId"]:
                parts.append(message["delta"])
                open_text["seq"] = message["seq"]
                continue
            if open_text is not None:
                open_text["delta"] = "".join(parts)
            open_text = dict(message)
            parts = [message["delta"]]
            out.append(open_text)
        else:
            if kind not in ("event", "warning") and open_text is not None:
                open_text["delta"] = "".join(parts)
                open_text = None
            out.append(message)
    if open_text is not None:
        open_text["delta"] = "".join(parts)
    return out


@dataclass(frozen=True)
class MockTool:
    """A frontend tool defined in the page: the user answers each call with a form."""

    spec: ToolSpec
    result: Mapping[str, Any]


class _InspectorClient(AgentClient):
    """Our client, reporting each run's frames and boundaries as it reads them."""

    def __init__(self, inspector: Inspector, url: str, http: httpx.AsyncClient, **kw: Any) -> None:
        super().__init__(url, http=http, **kw)
        self._inspector = inspector

    async def frames(self, run_input: Mapping[str, Any]) -> AsyncIterator[list[str]]:
        index = -1
        async for frames in super().frames(run_input):
            for frame in frames:
                index += 1
                self._inspector.frame(index, frame)
            yield frames

    async def run(
        self, conversation: Conversation, *, on_update: Callable[[Update], Any] | None = None
    ) -> RunResult:
        before = len(conversation.runs)
        self._inspector.begin_run()
        try:
            return await super().run(conversation, on_update=on_update)
        finally:
            self._inspector.end_run(conversation, before)


class _InspectorSession(Session):
    """A Session whose tool handlers tell the page when they start running.

    The session reports ``executing`` only once a handler returned (its
    updates are taken after the call is answered); a person watching wants to
    see the call *running* while it runs.
    """

    inspector: Inspector
    specs: dict[str, ToolSpec]

    def add_tool(
        self,
        spec: ToolSpec,
        handler: Callable[[dict[str, Any]], Any],
        *,
        timeout: float | None = None,
        trace_payloads: bool = False,
        context: bool = False,
    ) -> None:
        inspector = self.inspector
        name = spec.name
        running: Callable[[dict[str, Any]], Any]
        if inspect.iscoroutinefunction(handler):

            async def running(arguments: dict[str, Any], **context_kw: Any) -> Any:
                inspector.executing(name)
                return await handler(arguments, **context_kw)

        else:  # the session runs it in a worker thread: tell the page from the loop

            def running(arguments: dict[str, Any], **context_kw: Any) -> Any:
                loop = inspector.loop
                assert loop is not None  # handlers run only inside a turn send() started
                loop.call_soon_threadsafe(inspector.executing, name)
                return handler(arguments, **context_kw)  # context=…, when it takes one

        super().add_tool(
            spec, running, timeout=timeout, trace_payloads=trace_payloads, context=context
        )
        self.specs[spec.name] = spec
        inspector.push_tools()


class Inspector:
    """Drives one thread with the agent at ``url`` on behalf of a page.

    Args:
        url: the agent's endpoint.
        headers: extra request headers (``-H``).
        register: called with the session to register real frontend tools
            (``--tools MODULE``, the demo's tools).
        prompt: a prompt to suggest in the page.
        title: what the page calls this session.
        timeout: the handler timeout for real tools.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        register: Callable[[Session], None] | None = None,
        prompt: str = "",
        title: str = "",
        timeout: float | None = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url
        self.prompt = prompt
        self.title = title or url
        self.token = secrets.token_urlsafe(32)
        self.hub = Hub()
        self.captures: list[CapturedRun] = []
        self._current: CapturedRun | None = None
        self._consents: dict[str, tuple[PendingCall, asyncio.Future[Approval]]] = {}
        self._answers: dict[str, asyncio.Future[tuple[bool, Any]]] = {}
        self._mocks: dict[str, MockTool] = {}
        self._previews: dict[str, object] = {}  # callId → the preview its card last showed
        self._cards: dict[str, dict[str, Any]] = {}  # callId → the last card update sent
        self._task: asyncio.Task[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._http = httpx.AsyncClient(
            transport=TeeTransport(lambda: self._current, self._sent, transport),
            timeout=DEFAULT_TIMEOUT,
        )
        self.session = _InspectorSession(
            _InspectorClient(self, url, self._http, headers=headers), ask=self._ask, timeout=timeout
        )
        self.session.inspector = self
        self.session.specs = {}
        if register is not None:
            register(self.session)

    async def aclose(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._http.aclose()

    # -- what the page sees first -------------------------------------------------------

    def tools(self) -> list[dict[str, Any]]:
        out = []
        for name, spec in self.session.specs.items():
            mock = self._mocks.get(name)
            out.append(
                {
                    **spec.to_wire(),
                    "sideEffects": spec.side_effects,
                    "mock": mock is not None,
                    **({"result": dict(mock.result)} if mock is not None else {}),
                }
            )
        return out

    def push_tools(self) -> None:
        self.hub.push("tools", tools=self.tools())

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    # -- the turn -----------------------------------------------------------------------------

    def send(self, text: str) -> None:
        """Start a turn with the user's ``text``; the page follows it on the hub."""
        if self.busy:
            raise Busy()
        if not text.strip():
            raise Refused(422, "the prompt is empty")
        self.loop = asyncio.get_running_loop()
        self.hub.push("user", text=text)
        self.hub.push("busy", busy=True)
        self._task = asyncio.create_task(self._turn(text))

    async def _turn(self, text: str) -> None:
        failed: dict[str, Any] | None = None
        try:
            conv = self.session.conversation
            if conv is not None and conv.pending:
                # a run that ended early (rejected, truncated) left calls unanswered: they
                # are answered first — asked, executed, refused — or no input could be sent (FE-8)
                await self.session.dispose(self._update)
            result = await self.session.send(text, on_update=self._update)
        except ProtocolViolation as exc:  # the run ended rejected; run-end already said so
            failed = {"message": f"the agent's stream was rejected: {exc}", "rule": exc.rule}
        except AguiError as exc:  # transport failures, refused input: said, never a crash
            failed = {"message": str(exc), "rule": getattr(exc, "rule", None)}
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug of ours must still end the turn visibly
            log.exception("the inspector's turn failed")
            failed = {"message": f"internal error: {type(exc).__name__}: {exc}", "rule": None}
        else:
            if result.status != "success":
                failed = {"message": f"the run ended {result.status}", "rule": None}
        finally:
            self._push_thread()
            self.hub.push("busy", busy=False)
        if failed is not None:
            self.hub.push("failed", **failed)

    def _push_thread(self) -> None:
        conv = self.session.conversation
        if conv is None:
            return
        self.hub.push(
            "thread",
            threadId=conv.thread_id,
            **bounded("messages", conv.messages),
            **bounded("state", conv.state),
            pending=[c.call_id for c in conv.pending],
        )

    # -- runs, as the client reads them -------------------------------------------------------

    def begin_run(self) -> None:
        self._current = CapturedRun(number=len(self.captures) + 1, url=self.url)
        self.captures.append(self._current)

    def _sent(self, capture: CapturedRun) -> None:
        try:
            sent: Any = orjson.loads(capture.request)
        except orjson.JSONDecodeError:
            sent = capture.request.decode("utf-8", "replace")
        self.hub.push(
            "run-start", run=capture.number, **bounded("input", sent), url=capture.url, t=now_ms()
        )

    def frame(self, index: int, frame: str) -> None:
        capture = self._current
        run = capture.number if capture is not None else 0
        try:
            event: Any = orjson.loads(frame)
        except orjson.JSONDecodeError:
            event = None
        kind = event.get("type") if isinstance(event, dict) else None
        self.hub.push(
            "event",
            run=run,
            index=index,
            type=kind if isinstance(kind, str) else "(not an event)",
            event=event,
            raw=str(frame),
            t=now_ms(),
        )

    def end_run(self, conversation: Conversation, before: int) -> None:
        capture, self._current = self._current, None
        number = capture.number if capture is not None else 0
        if len(conversation.runs) <= before:  # nothing arrived: the run never started
            self.hub.push("run-end", run=number, status="not started", pending=[], t=now_ms())
            return
        run = conversation.runs[-1]
        if run.violation is not None:
            v = run.violation
            self.hub.push(
                "violation", run=number, index=v.index, rule=v.rule, message=str(v), path=v.path
            )
        result: dict[str, Any] = {
            "run": number,
            "runId": run.run_id,
            "status": run.status,
            "pending": [c.call_id for c in run.pending if not c.status.answered],
            "error": run.error,
            "outcome": run.outcome,
        }
        if capture is not None:
            capture.result = result
        self.hub.push("run-end", **result, t=now_ms())

    # -- updates from the session ---------------------------------------------------------

    def _update(self, update: Update) -> None:
        if isinstance(update, TextDelta):
            self.hub.push("text", messageId=update.message_id, role=update.role, delta=update.delta)
        elif isinstance(update, CallUpdate):
            self._push_card(update)
        elif isinstance(update, ProtocolWarning):
            run = self._current.number if self._current is not None else len(self.captures)
            self.hub.push(
                "warning", run=run, index=update.index, rule=update.rule, message=str(update)
            )

    def _push_card(self, update: CallUpdate) -> None:
        """A card update, coalesced: a preview-only update is sent when the preview
        changed (not once per delta — most deltas of a long argument leave the cached
        preview as it was) and supersedes the previous preview of that call."""
        key = f"preview:{update.call_id}"
        preview = update.preview
        only_preview = (
            preview is not None
            and update.status is CallStatus.STREAMING
            and update.answer is None
            and not update.has_arguments
        )
        if not only_preview:
            self._previews.pop(update.call_id, None)
            card = self._card(update)
            if self._cards.get(update.call_id) == card:
                return  # told already (a handler's start and the session both say "executing")
            self._cards[update.call_id] = card
            self.hub.settle(key)  # a status change is history: later previews keep it
            self.hub.push("call", **card)
            return
        assert preview is not None
        if self._previews.get(update.call_id) is preview:
            return  # the same cached preview: nothing on the card would change
        self._previews[update.call_id] = preview
        self.hub.push("call", supersedes=key, **self._card(update))

    def _card(self, update: CallUpdate) -> dict[str, Any]:
        card: dict[str, Any] = {
            "callId": update.call_id,
            "name": update.name,
            "status": update.status.value,
            "agentSide": update.agent_side,
        }
        if update.preview is not None:
            card["previewChars"] = update.preview.chars
            card["previewError"] = update.preview.error
            if update.preview.chars <= PREVIEW_LIMIT:
                card["preview"] = update.preview.value
            else:  # a head of it: the page shows so much, and a long argument stays bounded
                shown = orjson.dumps(update.preview.value, default=repr, option=orjson.OPT_INDENT_2)
                card["previewText"] = shown[:PREVIEW_LIMIT].decode("utf-8", "ignore")
        answer = update.answer
        if answer is not None:
            card["answer"] = answer.to_json()
            if answer.error is not None and answer.error.startswith("outcome unknown"):
                card["status"] = "outcome_unknown"
        conv = self.session.conversation
        tool = conv.tools.get(update.name) if conv is not None else None
        call = self._call(update.call_id)
        if call is not None:
            tool = call.tool
            card.update(bounded("arguments", call.effective_arguments))
            if call.effective_arguments is None:  # unparseable: the text is what there is
                card.update(bounded("text", call.text))
            card["edited"] = call.edited is not None
            card["errors"] = [
                {"path": e.path, "keyword": e.keyword, "message": e.message} for e in call.errors
            ]
            card["advertised"] = call.advertised
        elif update.has_arguments:  # a snapshot restated the call: what runs, not the preview
            card.update(bounded("arguments", update.arguments))
        if tool is not None:
            card["description"] = tool.description
            card["sideEffects"] = tool.side_effects
        return card

    def _call(self, call_id: str) -> PendingCall | None:
        conv = self.session.conversation
        if conv is None:
            return None
        try:
            return conv.call(call_id)
        except UsageError:
            return None

    def executing(self, name: str) -> None:
        """A handler is about to run: show its card as running."""
        conv = self.session.conversation
        for call in conv.pending if conv is not None else ():
            if call.status is CallStatus.EXECUTING and call.name == name:
                self._push_card(CallUpdate(call.call_id, name, call.status))

    # -- consent -------------------------------------------------------------------------

    async def _ask(self, call: PendingCall) -> Approval:
        future: asyncio.Future[Approval] = asyncio.get_running_loop().create_future()
        self._consents[call.call_id] = (call, future)
        tool = call.tool
        self._cards.pop(call.call_id, None)  # the page changed the card: a repeat is news again
        self.hub.push(
            "consent",
            callId=call.call_id,
            name=call.name,
            description=tool.description if tool is not None else "",
            sideEffects=tool.side_effects if tool is not None else False,
            arguments=call.effective_arguments,
            schema=tool.parameters if tool is not None else None,
        )
        try:
            return await future
        finally:
            self._consents.pop(call.call_id, None)

    def decide(
        self,
        call_id: str,
        action: str,
        *,
        reason: str | None = None,
        arguments: Any = None,
    ) -> None:
        """The user's decision on a call awaiting consent (approve, decline, edit)."""
        waiting = self._consents.get(call_id)
        if waiting is None:
            raise Refused(409, f"call {call_id!r} is not awaiting consent")
        call, future = waiting
        reason = reason.strip() if isinstance(reason, str) and reason.strip() else None
        if action == "approve":
            approval = Approval.approve()
        elif action == "decline":
            approval = Approval.decline(reason)
        elif action == "edit":
            if not isinstance(arguments, dict):
                raise Refused(
                    422,
                    "edited arguments must be a JSON object",
                    errors=[{"path": "", "keyword": "type", "message": "not a JSON object"}],
                )
            assert call.tool is not None  # only an advertised tool reaches consent
            errors = call.tool.validator.validate(arguments)
            if errors:  # refused here, so the session never sees arguments it would refuse
                raise Refused(
                    422,
                    "the edited arguments do not match the tool's schema (TOOL-21)",
                    errors=[
                        {"path": e.path, "keyword": e.keyword, "message": e.message} for e in errors
                    ],
                )
            approval = Approval(True, arguments, reason)
        else:
            raise Refused(422, f"unknown decision {action!r}: approve, decline or edit")
        if not future.done():
            future.set_result(approval)
        self._cards.pop(call_id, None)
        self.hub.push("consent-done", callId=call_id, action=action, reason=reason)

    # -- mock tools -------------------------------------------------------------------------

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

        async def answer(arguments: dict[str, Any]) -> Any:
            return await self._mock_answer(mock, arguments)

        try:
            self._mocks[spec.name] = mock
            self.session.add_tool(spec, answer, timeout=MOCK_TIMEOUT)
        except UsageError as exc:
            self._mocks.pop(spec.name, None)
            raise Refused(409, str(exc)) from None

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
            errors = ArgumentValidator(mock.result).validate(value)
            if errors:
                raise Refused(
                    422,
                    "the answer does not match the tool's result schema",
                    errors=[
                        {"path": e.path, "keyword": e.keyword, "message": e.message} for e in errors
                    ],
                )
            outcome = (True, value)
        if not future.done():
            future.set_result(outcome)
        self._cards.pop(call_id, None)
        self.hub.push("answer-done", callId=call_id)

    # -- views ------------------------------------------------------------------------------

    def next_input(self, prompt: str | None) -> dict[str, Any]:
        """The RunAgentInput the next prompt would send, built by the conversation itself.

        Built and then withdrawn (nothing is sent, the thread is left as it was);
        ``runId`` and the user message's id are minted afresh at sending.
        """
        conv = self.session.conversation
        if conv is None:
            return {"note": "the first input is built when you send the first prompt"}
        if conv.run_in_progress or self.busy:
            return {"note": "a turn is in progress: the next input is built when it ends"}
        try:
            built = conv.next_input(user=prompt) if prompt else conv.next_input()
        except AguiError as exc:
            return {"note": str(exc)}
        conv.abandon_run()
        return {"input": built}

    def thread_export(self) -> dict[str, Any]:
        conv = self.session.conversation
        return {
            "agent": self.url,
            "threadId": conv.thread_id if conv is not None else None,
            "tools": self.tools(),
            "messages": conv.messages if conv is not None else [],
            "state": conv.state if conv is not None else None,
            "runs": [
                {
                    "run": c.number,
                    "input": orjson.loads(c.request) if c.request else None,
                    "httpStatus": c.status,
                    **(c.result or {}),
                }
                for c in self.captures
            ],
        }


class MockToolFailed(Exception):
    """The person answering a mock tool chose to fail the call (their reason is the message)."""
