"""The inspector's back end: one :class:`Session`, driven for a page, told as messages.

The page never talks to the agent: it posts prompts, decisions and mock answers, and this
object drives the thread with our ``Session`` (the same consent, validation and
exactly-once execution as every face), appending what happens to a :class:`Hub` the page
reads over SSE. Every value is data, shown with ``textContent``. Messages by ``kind``:

* ``user``; ``text`` (``messageId``, ``role``, ``delta``);
* ``call`` — a card: ``callId``, ``name``, ``status``, ``preview``, ``arguments``/``errors``
  (with JSON Pointer ``path``), ``answer``;
* ``consent`` / ``consent-done``; ``answer-form`` / ``answer-done`` (mock tools);
* ``run-start`` (``input`` as sent), ``event`` (``index``, ``type``, ``event``, ``raw``),
  ``warning`` / ``violation`` (``rule``, ``index``, ``message``), ``run-end`` (``status``,
  ``pending``, ``error``) — the three with ``t``, milliseconds since the epoch;
* ``thread``; ``busy``; ``failed``; ``tools``; ``interrupt`` / ``interrupt-done``;
* ``agents``; ``new-thread``; ``stopped``; ``restored``; ``verdict`` (``lines`` as ``verify``).

Card statuses beyond the session's: ``called``, ``agent``, ``awaiting_approval``,
``rejected``, ``stopped``. Bounded: a preview is sent only when it changed, at most
:data:`PREVIEW_LIMIT` characters, and each *supersedes* the last in the log.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import secrets
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

from ..._errors import AguiError, ProtocolViolation, ProtocolWarning, UsageError
from ...app._calls import CallStatus, PendingCall
from ...app._consent import Principal
from ...app._conversation import CallUpdate, Conversation, RunResult, TextDelta, Update
from ...app._interrupts import Interrupt, Resolution
from ...app._receipts import Signer
from ...app._runs import describe_run
from ...app._store import Store
from ...app._tools import ToolSpec
from ...app._updates import shown as shown_arguments
from ...transport._client import DEFAULT_TIMEOUT, AgentClient, TransportError
from ...transport._session import Approval, Session
from ._capture import CapturedRun, TeeTransport
from ._cards import OPEN, Cards
from ._hub import Busy, Hub, Refused, bounded, compact, now_ms
from ._mocks import MOCK_TIMEOUT, Mocks, MockTool
from ._replay import input_problems, judged, stream_text

# Refused, Busy, Hub and compact stay importable from here, where the app found them
__all__ = ["Agent", "Busy", "Hub", "Inspector", "Refused", "compact"]

log = logging.getLogger("agui_tools.ui.inspector")
STOP_WAIT = 5.0  # seconds the page's Stop waits for the agent to take the stop request


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


@dataclass
class Agent:
    """A configured agent: its name, endpoint and request headers (values never shown)."""

    name: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)

    def to_page(self) -> dict[str, Any]:
        """What the page may see: the header *names*, never their values (a bearer token
        in the event log would be in every tab's replay and every saved export)."""
        return {
            "name": self.name,
            "url": self.url,
            "headers": sorted(self.headers),
            "bearer": self.headers.get("Authorization", "").startswith("Bearer "),
        }


_HEADER_NAME = frozenset(
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)


def _checked_headers(raw: Any) -> dict[str, str]:
    """Headers the page sent, as a dict — refused (422) when one is no HTTP header."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise Refused(422, "headers must be a JSON object of names to values")
    out: dict[str, str] = {}
    for name, value in raw.items():
        if not name or not set(name) <= _HEADER_NAME:
            raise Refused(422, f"{name[:40]!r} is not an HTTP header name")
        if not isinstance(value, str) or any(c in value for c in "\r\n\0"):
            raise Refused(422, f"the value of header {name!r} must be text on one line")
        out[name] = value.strip()
    return out


class Inspector(Cards, Mocks):
    """Drives a thread with one of its configured agents on behalf of a page.

    Args:
        url: the agent's endpoint (the agent named ``agent``; ``None`` when ``agents`` has all).
        headers: extra request headers (``-H``) for every agent.
        agents: more agents by name (``--agent NAME=URL``), each a URL or an :class:`Agent`.
        register: called with each new session to register real tools (``--tools MODULE``).
        prompt: a prompt to suggest; title: what the page calls the session.
        timeout: the handler timeout for real tools.
        store: where threads are kept (``--store``); a restarted inspector on the same store
            and ``index`` (the file listing its threads) resumes the thread it had open.
        principal: who the page's decisions are recorded as in the approval ledger
            (``inspect --principal``); ``None``: the unauthenticated user.
        signer: signs each decision's receipt (``inspect --signing-key``; docs/receipts.md).
        resumable: opt every run in to the resumable extension (``inspect --resumable``,
            docs/resumable.md): a cut connection is rejoined, and Stop asks the agent to
            stop the run (it ends cancelled) instead of only leaving it.
    """

    session: _InspectorSession

    read_only: str | None = None
    """Why the page may drive nothing (``None``: it drives the thread): the proxy's
    inspector says so in a banner and refuses every action (403)."""

    def __init__(
        self,
        url: str | None,
        *,
        headers: Mapping[str, str] | None = None,
        agents: Mapping[str, str | Agent] | None = None,
        register: Callable[[Session], None] | None = None,
        prompt: str = "",
        title: str = "",
        timeout: float | None = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
        store: Store | None = None,
        index: Path | None = None,
        principal: Principal | None = None,
        signer: Signer | None = None,
        resumable: bool = False,
    ) -> None:
        self.principal = principal
        self.resumable = resumable
        self.signer = signer
        self.agents: dict[str, Agent] = {}
        if url is not None:
            self.agents["agent"] = Agent("agent", url, dict(headers or {}))
        for name, agent in (agents or {}).items():
            self.agents[name] = (
                agent if isinstance(agent, Agent) else Agent(name, agent, dict(headers or {}))
            )
        if not self.agents:
            raise UsageError("an inspector needs an agent: a URL or agents")
        self.agent = next(iter(self.agents))
        self.prompt = prompt
        self._title = title
        self.token = secrets.token_urlsafe(32)
        self.hub = Hub()
        self.captures: list[CapturedRun] = []
        self._current: CapturedRun | None = None
        self._consents: dict[str, tuple[PendingCall, asyncio.Future[Approval]]] = {}
        self._answers: dict[str, asyncio.Future[tuple[bool, Any]]] = {}
        self._interrupts: dict[str, tuple[Interrupt, asyncio.Future[Resolution]]] = {}
        self._mocks: dict[str, MockTool] = {}
        self._previews: dict[str, object] = {}  # callId → the preview its card last showed
        self._cards: dict[str, dict[str, Any]] = {}  # callId → the last card update sent
        self._shown: dict[str, dict[str, Any]] = {}  # callId → its card's status and name
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._asking_stop: asyncio.Task[None] | None = None  # the binding's stop, in flight
        self.loop: asyncio.AbstractEventLoop | None = None
        self._register = register
        self._timeout = timeout
        self.store = store
        self.index = index
        self._http = httpx.AsyncClient(
            transport=TeeTransport(lambda: self._current, self._sent, transport),
            timeout=DEFAULT_TIMEOUT,
        )
        self.threads, self._open = self._read_index()
        # the thread open when the last inspector stopped, on the agent it was running on
        restored = next((t for t in self.threads if t["threadId"] == self._open), None)
        if restored is None and self.threads:
            restored = self.threads[-1]
        if restored is not None and restored["agent"] in self.agents:
            self.agent = restored["agent"]
        self.session = self._new_session(restored["threadId"] if restored else None)

    @property
    def url(self) -> str:
        return self.agents[self.agent].url

    @property
    def title(self) -> str:
        return self._title or self.url

    def _client(self) -> _InspectorClient:
        agent = self.agents[self.agent]
        return _InspectorClient(
            self, agent.url, self._http, headers=agent.headers, resumable=self.resumable
        )

    def _new_session(self, thread_id: str | None = None) -> _InspectorSession:
        """A session on a thread (a new one unless ``thread_id``): the tools registered
        again, the mock tools defined in the page too."""
        session = _InspectorSession(
            self._client(),
            ask=self._ask,
            on_interrupt=self._interrupt,
            timeout=self._timeout,
            store=self.store,
            thread_id=thread_id or f"thread-{uuid.uuid4()}",
            signer=self.signer,
        )
        session.inspector = self
        session.specs = {}
        self.session = session
        if self._register is not None:
            self._register(session)
        for mock in self._mocks.values():
            session.add_tool(mock.spec, self._mock_handler(mock), timeout=MOCK_TIMEOUT)
        return session

    @property
    def thread_id(self) -> str:
        tid = self.session._thread_id
        assert tid is not None  # every session of ours is given one
        return tid

    # -- the thread index (with a store) ---------------------------------------------------

    def _read_index(self) -> tuple[list[dict[str, str]], str | None]:
        """The threads kept (each with the agent its runs went to last) and the one open."""
        if self.store is None or self.index is None or not self.index.exists():
            return [], None
        try:
            data = orjson.loads(self.index.read_bytes())
            threads = data["threads"]
            assert isinstance(threads, list)
            kept = [
                {"threadId": str(t["threadId"]), "agent": str(t.get("agent", ""))} for t in threads
            ]
            current = data.get("current")
            return kept, current if isinstance(current, str) else None
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError, AssertionError) as exc:
            raise UsageError(
                f"cannot read the inspector's thread index {self.index}: {exc}"
            ) from None

    def _remember_thread(self) -> None:
        """Note the thread open now and the agent its runs go to: the thread goes on with
        the agent picked last, and a restart resumes what it left open there, not on the
        agent some other thread used."""
        if self.store is None or self.index is None:
            return
        tid = self.thread_id
        known = next((t for t in self.threads if t["threadId"] == tid), None)
        if known is not None and known["agent"] == self.agent and self._open == tid:
            return
        if known is None:
            self.threads.append({"threadId": tid, "agent": self.agent})
        else:
            known["agent"] = self.agent
        self._open = tid
        self.index.write_bytes(
            orjson.dumps({"threads": self.threads, "current": tid}, option=orjson.OPT_INDENT_2)
        )
        self.push_agents()

    async def start(self) -> None:
        """Show the page what a restored thread holds (with a store, after a restart); a
        thread left with calls pending or interrupts open is carried on at once."""
        self.loop = asyncio.get_running_loop()
        self.push_agents()
        if self.store is None or not self.threads:
            return
        await self._restore()

    async def open_thread(self, thread_id: Any) -> None:
        """Go back to an earlier thread of this inspector (with a store): the page starts
        over on it, its history shown and what it left open asked about again."""
        if self.busy:
            raise Busy()
        known = next((t for t in self.threads if t["threadId"] == thread_id), None)
        if known is None:
            raise Refused(404, f"no thread {str(thread_id)[:80]!r} is kept by this inspector")
        if known.get("agent") in self.agents:
            self.agent = known["agent"]
        self._start_over(known["threadId"])
        self._remember_thread()
        await self._restore()

    async def _restore(self) -> None:
        conv = await self.session.open()
        if not conv.messages:
            return
        self.hub.push("restored", threadId=conv.thread_id, messages=len(conv.messages))
        self._replay(conv)
        self._push_thread()
        if conv.pending or self.session.interrupts:
            self.hub.push("busy", busy=True)
            self._task = asyncio.create_task(self._turn(None))

    def _replay(self, conv: Conversation) -> None:
        """A restored thread's messages, told as the live ones were (bubbles and cards)."""
        for message in conv.messages:
            role = message.get("role")
            content = message.get("content")
            if role == "user":
                text = content if isinstance(content, str) else orjson.dumps(content).decode()
                self.hub.push("user", text=text)
            elif role in ("assistant", "reasoning") and isinstance(content, str) and content:
                self.hub.push("text", messageId=message["id"], role=role, delta=content)
            for call in message.get("toolCalls") or ():
                function = call.get("function") or {}
                self._push_shown(
                    {
                        "callId": call["id"],
                        "name": function.get("name", ""),
                        "status": "done" if conv.thread.has_result(call["id"]) else "streaming",
                        "arguments": shown_arguments(str(function.get("arguments", ""))),
                    }
                )

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

    def push_agents(self) -> None:
        self.hub.push(
            "agents",
            agents=[a.to_page() for a in self.agents.values()],
            current=self.agent,
            threadId=self.thread_id,
            title=self.title,
            threads=[t["threadId"] for t in self.threads] if self.store is not None else None,
        )

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    # -- sessions the page controls ---------------------------------------------------------

    def stop(self) -> None:
        """Cancel the turn in progress: the run ends (the thread records it truncated)
        and every card still open says it was stopped. An opted-in run in flight is
        asked to stop instead (RESUME-6): its stream goes on to the agent's cancelled
        end; Stop pressed again while that is asked cancels here."""
        if not self.busy:
            raise Refused(409, "no turn is in progress: there is nothing to stop")
        assert self._task is not None
        if self.resumable and self._asking_stop is None:
            self._asking_stop = asyncio.create_task(self._ask_stop())
            return
        self._stopping = True
        self._task.cancel()

    def _turn_over(self) -> None:
        """The next Stop is for the next turn."""
        self._stopping = False
        if self._asking_stop is not None:
            self._asking_stop.cancel()
            self._asking_stop = None

    async def _ask_stop(self) -> None:
        """The binding's stop request; when no opted-in run is in flight (a consent
        asked, a standard agent) or the agent does not take it, the turn is cancelled."""
        try:
            async with asyncio.timeout(STOP_WAIT):
                answer = await self.session.stop()
        except (TransportError, TimeoutError) as exc:
            log.info("the stop request was not answered: %s", exc)
            answer = None
        if answer != "stopping" and self.busy:
            assert self._task is not None
            self._stopping = True
            self._task.cancel()

    def new_thread(self) -> None:
        """Start over: a new thread with the current agent (the old one stays in the store)."""
        if self.busy:
            raise Busy()
        self._start_over()

    def _start_over(self, thread_id: str | None = None) -> None:
        """A session on another thread, the page told to start over on it."""
        self._new_session(thread_id)
        self._cards.clear()
        self._shown.clear()
        self._previews.clear()
        self.hub.push("new-thread", threadId=self.thread_id)
        self.push_agents()
        self.push_tools()

    def configure(
        self,
        *,
        agent: Any = None,
        url: Any = None,
        headers: Any = None,
        bearer: Any = None,
    ) -> None:
        """Switch to the agent named ``agent``, and/or change its URL and headers
        (``bearer``: an ``Authorization: Bearer`` token; ``""`` removes it). The thread
        goes on with the agent as configured now."""
        if self.busy:
            raise Busy()
        if agent is not None:
            if not isinstance(agent, str) or agent not in self.agents:
                raise Refused(422, f"no agent named {str(agent)[:60]!r} is configured")
            self.agent = agent
        current = self.agents[self.agent]
        if url is not None:
            from ..._url import check_url

            problem = check_url(url) if isinstance(url, str) else "the URL must be text"
            if problem is not None:
                raise Refused(422, problem)
            current.url = url.strip()
        if headers is not None:
            current.headers = _checked_headers(headers)
        if bearer is not None:
            if not isinstance(bearer, str) or any(c in bearer for c in "\r\n\0 "):
                raise Refused(422, "the bearer token must be one word of text")
            current.headers.pop("Authorization", None)
            if bearer:
                current.headers["Authorization"] = f"Bearer {bearer}"
        self.session.client = self._client()
        self.push_agents()

    # -- the turn -----------------------------------------------------------------------------

    def send(self, text: str) -> None:
        """Start a turn with the user's ``text``; the page follows it on the hub."""
        if self.busy:
            raise Busy()
        if not text.strip():
            raise Refused(422, "the prompt is empty")
        self.loop = asyncio.get_running_loop()
        self._remember_thread()
        self.hub.push("user", text=text)
        self.hub.push("busy", busy=True)
        self._task = asyncio.create_task(self._turn(text))

    async def _turn(self, text: str | None) -> None:
        failed: dict[str, Any] | None = None
        try:
            conv = self.session.conversation
            if conv is not None and conv.pending:
                # a run that ended early (rejected, truncated) left calls unanswered: they
                # are answered first — asked, executed, refused — or no input could be sent (FE-8)
                await self.session.dispose(self._update)
            # text None: a restored thread carried on (its pending calls, its interrupts)
            result = await self.session.send(text, on_update=self._update)
        except ProtocolViolation as exc:  # the run ended rejected; run-end already said so
            failed = {"message": f"the agent's stream was rejected: {exc}", "rule": exc.rule}
        except AguiError as exc:  # transport failures, refused input: said, never a crash
            failed = {"message": str(exc), "rule": getattr(exc, "rule", None)}
        except asyncio.CancelledError:
            if not self._stopping:
                raise
            failed = {"message": "stopped: you stopped the turn", "rule": None, "stopped": True}
            self._stopped()
        except Exception as exc:  # a bug of ours must still end the turn visibly
            log.exception("the inspector's turn failed")
            failed = {"message": f"internal error: {type(exc).__name__}: {exc}", "rule": None}
        else:
            if result.status == "cancelled":  # stopped, neither success nor failure (RUN-8)
                failed = {"message": "stopped: the agent ended the run cancelled", "rule": None}
                failed["stopped"] = True
                self._stopped()
            elif result.status != "success":
                # the agent's own RUN_ERROR message, as run and chat say it
                failed = {"message": describe_run(result), "rule": None}
        finally:
            self._turn_over()
            self._push_thread()
            self.hub.push("busy", busy=False)
        if failed is not None:
            self.hub.push("stopped" if failed.pop("stopped", False) else "failed", **failed)

    def _stopped(self) -> None:
        """Every card the stopped turn left open says so; open questions are withdrawn."""
        for call_id, (_, future) in list(self._consents.items()):
            future.cancel()
            self.hub.push("consent-done", callId=call_id, action="stopped", reason=None)
        for call_id, answer in list(self._answers.items()):
            answer.cancel()
            self.hub.push("answer-done", callId=call_id, action="stopped")
        for iid, (_, ifuture) in list(self._interrupts.items()):
            ifuture.cancel()
            self.hub.push("interrupt-done", id=iid, action="stopped")
        self._interrupts.clear()
        for call_id, shown_card in list(self._shown.items()):
            if shown_card["status"] in OPEN:
                self._push_shown({"callId": call_id, "status": "stopped"})

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
            "run-start",
            run=capture.number,
            **bounded("input", sent),
            url=capture.url,
            t=now_ms(),
            agent=self.agent,
            composed=capture.composed,
        )

    def frame(self, index: int, frame: str) -> None:
        capture = self._current
        run = capture.number if capture is not None else 0
        try:
            event: Any = orjson.loads(frame)
        except orjson.JSONDecodeError:
            event = None
        kind = self.hub.push_event(run, index, event, str(frame))
        if kind == "TOOL_CALL_END" and self.loop is not None:
            call_id = event.get("toolCallId")
            if isinstance(call_id, str):
                # told once the conversation folded the frame (it does so before it reads on)
                self.loop.call_soon(self._closed, call_id)

    def _closed(self, call_id: str) -> None:
        """A call's arguments are complete: its card shows them whole, no longer a preview."""
        shown_card = self._shown.get(call_id)
        if shown_card is None or shown_card["status"] != "streaming":
            return
        conv = self._conversation()
        text = conv.thread.arguments(call_id) if conv is not None else None
        self._push_shown(
            {
                "callId": call_id,
                "status": "called",
                **(bounded("arguments", shown_arguments(text)) if text is not None else {}),
            },
            ends_preview=True,
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
        stopped = run.status == "cancelled" or (self._stopping and run.status == "truncated")
        status = "stopped" if stopped else run.status
        result: dict[str, Any] = {
            "run": number,
            "runId": run.run_id,
            "status": status,
            "pending": [c.call_id for c in run.pending if not c.status.answered],
            "error": run.error,
            "outcome": run.outcome,
        }
        if capture is not None:
            capture.result = result
        self.hub.push("run-end", **result, t=now_ms())
        self._settle_cards(conversation, rejected=run.violation is not None)

    def _settle_cards(self, conv: Conversation, *, rejected: bool) -> None:
        """Cards the run left open show what became of their call: a rejected run's
        calls are never executed; the others wait for consent, run, or were the agent's."""
        pending = {c.call_id: c for c in conv.pending}
        for call_id, shown_card in list(self._shown.items()):
            if shown_card["status"] not in ("streaming", "called"):
                continue
            if rejected:
                self._push_shown(
                    {
                        "callId": call_id,
                        "status": "rejected",
                        "note": "The run was rejected: the next prompt asks about this call first."
                        if call_id in pending
                        else "The run was rejected before this call was complete: it never runs.",
                    }
                )
            elif call_id in pending and pending[call_id].status is CallStatus.AWAITING_CONSENT:
                # queued behind another call's consent: it waits for its own question
                call = pending[call_id]
                self._push_card(CallUpdate(call_id, call.name, call.status))
            elif shown_card["status"] == "streaming":
                self._closed(call_id)

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
        conv.withdraw_unstarted()
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
                    **({"composed": True} if c.composed else {}),
                    **stream_text(bytes(c.body)),
                }
                for c in self.captures
            ],
        }

    # -- compose: a raw RunAgentInput, sent as it is -----------------------------------------

    def compose(self, run_input: Any, *, check: bool = False) -> None:
        """Send ``run_input`` (an earlier run's input, edited) to the current agent as it
        is — checked against the ``RunAgentInput`` schema first (422: each problem at its
        JSON path) — and judge the stream as ``verify`` would. The thread is not touched:
        the run is shown in the timeline and its verdict said, nothing more."""
        problems = input_problems(run_input)
        if problems:
            raise Refused(422, "this is not a RunAgentInput the protocol accepts", errors=problems)
        self.loop = asyncio.get_running_loop()
        self.hub.push("busy", busy=True)
        self._task = asyncio.create_task(self._composed(run_input))

    async def _composed(self, run_input: dict[str, Any]) -> None:
        capture = CapturedRun(number=len(self.captures) + 1, url=self.url, composed=True)
        self.captures.append(capture)
        self._current = capture
        client = self._client()
        failed: str | None = None
        index = -1
        try:
            async for frames in AgentClient.frames(client, run_input):
                for frame in frames:
                    index += 1
                    self.frame(
                        index, frame if isinstance(frame, str) else orjson.dumps(frame).decode()
                    )
        except asyncio.CancelledError:
            if not self._stopping:
                raise
            failed = "stopped: you stopped the run"
        except AguiError as exc:
            failed = str(exc)
        finally:
            self._current = None
            self._turn_over()
        verdict = judged(bytes(capture.body), run_input)
        outcome = verdict["verdict"].get("outcome")
        capture.result = {"run": capture.number, "status": outcome, "composed": True}
        self.hub.push(
            "verdict", run=capture.number, lines=verdict["lines"], verdict=verdict["verdict"]
        )
        self.hub.push("run-end", run=capture.number, status=outcome, pending=[], composed=True)
        self.hub.push("busy", busy=False)
        if failed is not None:
            kind = "stopped" if failed.startswith("stopped") else "failed"
            self.hub.push(kind, message=failed, rule=None)
