"""``agui-tools proxy --inspect``: the inspector's page, showing traffic it does not drive.

A :class:`LiveInspector` is an :class:`~agui_tools.ui.inspector.Inspector` whose hub the
proxy fills (its :class:`~agui_tools.transport._proxy.ProxyObserver`), in the page's messages:
``run-start`` (the input as sent; its user messages and the frontend's answers to shown
cards; ``live-thread`` on a change of thread), ``event`` plus the ``text`` and ``call``
cards a :class:`~agui_tools.app.Conversation` of the exchange folds (the calls *left to the
frontend* at the end), ``violation`` / ``warning`` with their ``side``, and ``run-end`` with
``thread``. Read-only: a banner, no controls (``config.readOnly``), every action 403; the
page's token, checks and CSP are the inspector's. Bounded by :data:`BUDGET`,
:data:`THREADS_KEPT` and :data:`CALLS_KEPT`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, NoReturn

import orjson

from ..._errors import AguiError
from ...app._conversation import CallUpdate, Conversation, TextDelta
from ...app._driver import Driver
from ...app._tools import ToolSpec
from ._backend import Inspector, log
from ._hub import VALUE_LIMIT, Hub, Refused, bounded, now_ms

__all__ = ["BUDGET", "CALLS_KEPT", "READ_ONLY", "THREADS_KEPT", "LiveInspector"]

READ_ONLY = (
    "read-only: this inspector shows the traffic agui-tools proxy forwards; the frontend "
    "drives the thread (and its consent)"
)

BUDGET = 32 * 1024 * 1024
"""The most bytes of JSON messages the live inspector's hub keeps (its recent traffic)."""

THREADS_KEPT = 256
"""Threads whose last input is remembered (to tell the messages a new input adds)."""

CALLS_KEPT = 10_000
"""Calls whose card status is remembered after their exchange (to answer them later)."""


@dataclass
class _Exchange:
    """One request the proxy forwards, as the page is shown it."""

    number: int
    thread_id: str | None
    conversation: Conversation | None
    calls: dict[str, None] = field(default_factory=dict)  # call ids shown, in order
    folding: bool = True  # False once the stream broke a rule: the frames go on, the cards stop
    error: Any = None  # the run's RUN_ERROR, once its cards are settled


class LiveInspector(Inspector):
    """A read-only inspector whose timeline is the proxy's live traffic."""

    read_only = READ_ONLY

    def __init__(self, upstream: str, *, budget: int | None = BUDGET) -> None:
        self._exchanges: dict[int, _Exchange] = {}
        self._threads: OrderedDict[str, frozenset[str]] = OrderedDict()
        self._live: Conversation | None = None
        self._live_thread: str | None = None  # the thread of the card updates being told
        self._left: OrderedDict[tuple[str | None, str], str] = OrderedDict()
        """(thread, call id) → tool name: the calls a run left to the frontend."""
        self._last_thread: str | None = None
        self._tools_shown: list[Any] | None = None
        super().__init__(upstream, title=f"agui-tools proxy → {upstream} (read-only)")
        self.hub = Hub(budget=budget)

    # -- what the page may not do -----------------------------------------------------------

    def _read_only(self) -> NoReturn:
        raise Refused(403, READ_ONLY)

    def send(self, text: str) -> None:
        self._read_only()

    def decide(self, *args: Any, **kwargs: Any) -> None:
        self._read_only()

    def answer(self, *args: Any, **kwargs: Any) -> None:
        self._read_only()

    def add_mock_tool(self, *args: Any, **kwargs: Any) -> None:
        self._read_only()

    def next_input(self, prompt: str | None) -> dict[str, Any]:
        self._read_only()

    def resolve_interrupt(self, *args: Any, **kwargs: Any) -> None:
        self._read_only()

    def compose(self, *args: Any, **kwargs: Any) -> None:
        self._read_only()

    def configure(self, *args: Any, **kwargs: Any) -> None:
        self._read_only()

    def stop(self) -> None:
        self._read_only()

    def new_thread(self) -> None:
        self._read_only()

    async def open_thread(self, thread_id: Any) -> None:
        self._read_only()

    # -- what the page is shown first --------------------------------------------------------

    def push_agents(self) -> None:
        self.hub.push(
            "agents",
            agents=[a.to_page() for a in self.agents.values()],
            current=self.agent,
            threadId=self._last_thread or "",
            title=self.title,
            threads=None,
        )

    def _conversation(self) -> Conversation | None:
        return self._live

    def _card(self, update: CallUpdate) -> dict[str, Any]:
        return {**super()._card(update), "threadId": self._live_thread}

    def _push_shown(self, card: dict[str, Any], *, ends_preview: bool = False) -> None:
        card.setdefault("threadId", self._live_thread)  # the page keys cards by thread too
        super()._push_shown(card, ends_preview=ends_preview)

    # -- what the proxy tells it ----------------------------------------------------------------

    def exchange_started(self, number: int, url: str, body: bytes) -> None:
        try:
            sent: Any = orjson.loads(body)
        except orjson.JSONDecodeError:
            sent = body.decode("utf-8", "replace")
        run_input = sent if isinstance(sent, dict) else None
        thread_id = run_input.get("threadId") if run_input is not None else None
        thread_id = thread_id if isinstance(thread_id, str) else None
        if thread_id is not None:
            # the thread's previous exchange may still wait for its verdict (the proxy
            # tells its end once the judging process answered): the frontend read its
            # stream to the end, so its cards are settled now — before this input's
            # answers to them are shown, and its thread's state is told before this
            # input (the State tab's history of the thread keeps their order)
            for other in self._exchanges.values():
                if other.thread_id == thread_id and other.conversation is not None:
                    self._settle_exchange(other, None)
        self.hub.push(
            "run-start",
            run=number,
            **bounded("input", sent),
            url=url,
            t=now_ms(),
            agent=self.agent,
            threadId=thread_id,
            composed=False,
        )
        messages = _messages(run_input)
        if thread_id is not None and thread_id != self._last_thread:
            self._last_thread = thread_id
            self.hub.push(
                "live-thread",
                threadId=thread_id,
                seen=thread_id in self._threads,
                messages=len(messages),
            )
            self.push_agents()
        if run_input is not None:
            self._show_tools(run_input.get("tools"))
            self._show_input(thread_id, messages)
        self._exchanges[number] = _Exchange(
            number, thread_id, _conversation_for(run_input, thread_id, messages)
        )

    def _show_tools(self, tools: Any) -> None:
        """The Tools tab: the tools this input advertises (when they changed)."""
        shown = [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
        if shown == self._tools_shown:
            return
        self._tools_shown = shown
        self.hub.push(
            "tools",
            tools=[
                {
                    "name": str(t.get("name", "")),
                    "description": str(t.get("description", "")),
                    "parameters": t.get("parameters"),
                    "sideEffects": False,
                    "mock": False,
                }
                for t in shown
            ],
        )

    def _show_input(self, thread_id: str | None, messages: list[dict[str, Any]]) -> None:
        """The messages an input adds to its thread: each new user message as a bubble,
        each new tool message answering a call the page showed as that card's answer."""
        known = self._threads.get(thread_id) if thread_id is not None else None
        if known is None:
            # a thread seen first: its history is in the run-start row; the chat shows
            # the user messages it ends with (what this run answers)
            tail: list[dict[str, Any]] = []
            for message in reversed(messages):
                if message.get("role") != "user":
                    break
                tail.append(message)
            new = tail[::-1]
        else:
            new = [m for m in messages if not (isinstance(m.get("id"), str) and m["id"] in known)]
        for message in new:
            role = message.get("role")
            if role == "user":
                content = message.get("content")
                text = content if isinstance(content, str) else orjson.dumps(content).decode()
                self.hub.push("user", text=text[:VALUE_LIMIT])
            elif role == "tool":
                self._answered(thread_id, message)
        if thread_id is not None:
            self._threads[thread_id] = frozenset(
                m["id"] for m in messages if isinstance(m.get("id"), str)
            )
            self._threads.move_to_end(thread_id)
            while len(self._threads) > THREADS_KEPT:
                self._threads.popitem(last=False)

    def _answered(self, thread_id: str | None, message: dict[str, Any]) -> None:
        call_id = message.get("toolCallId")
        name = self._left.pop((thread_id, call_id), None) if isinstance(call_id, str) else None
        if name is None or not isinstance(call_id, str):
            return  # no call the page showed left to the frontend
        error = message.get("error")
        content = message.get("content")
        self._push_shown(
            {
                "callId": call_id,
                "name": name,
                "threadId": thread_id,
                "status": "answered",
                "answer": {
                    "callId": call_id,
                    "outcome": "failed" if error else "executed",
                    **bounded("content", content),
                    **({"error": str(error)[:VALUE_LIMIT]} if error else {}),
                    "decidedBy": "frontend",
                },
            }
        )
        self._shown.pop(call_id, None)  # answered: nothing more to say of it

    def exchange_event(self, number: int, index: int, frame: Any) -> None:
        if isinstance(frame, bytes):
            frame = frame.decode("utf-8", "replace")
        if isinstance(frame, str):
            raw = frame
            try:
                event: Any = orjson.loads(frame)
            except orjson.JSONDecodeError:
                event = None
        else:  # the protobuf binding: the decoded event
            event = frame
            raw = orjson.dumps(frame, default=repr).decode()
        kind = self.hub.push_event(number, index, event, raw)
        exchange = self._exchanges.get(number)
        if exchange is None or exchange.conversation is None or not exchange.folding:
            return
        conv = exchange.conversation
        self._live, self._live_thread = conv, exchange.thread_id
        try:
            try:
                updates = conv.receive(frame)
            except AguiError:
                # the stream broke a rule (the proxy's judge names it): no card is built
                # from what follows, whose frames are still shown as they come
                exchange.folding = False
                updates = conv.take_updates()
            except Exception:  # a bug of the page's fold must never break the forwarding
                log.exception(
                    "the live inspector could not fold event #%d of run %d", index, number
                )
                exchange.folding = False
                return
            for update in updates:
                if isinstance(update, TextDelta):
                    self.hub.push(
                        "text", messageId=update.message_id, role=update.role, delta=update.delta
                    )
                elif isinstance(update, CallUpdate):
                    exchange.calls[update.call_id] = None
                    self._push_card(update)
            if kind == "TOOL_CALL_END" and exchange.folding:
                call_id = event.get("toolCallId")
                if isinstance(call_id, str):
                    self._closed(call_id)
        finally:
            self._live = self._live_thread = None

    def exchange_finding(self, number: int, finding: Any) -> None:
        self.hub.push(
            "violation" if finding.severity == "error" else "warning",
            run=number,
            index=finding.index,
            rule=finding.rule,
            message=finding.message,
            path="",
            side=finding.side,
            threadId=finding.thread_id,
            runId=finding.run_id,
            toolCallIds=finding.tool_call_ids,
            status=finding.status,
        )

    def exchange_ended(self, number: int, status: int | None, outcome: Any) -> None:
        exchange = self._exchanges.pop(number, None)
        if exchange is not None and exchange.conversation is not None:
            self._settle_exchange(exchange, outcome)
        run_status = getattr(outcome, "status", None)
        self.hub.push(
            "run-end",
            run=number,
            runId=getattr(outcome, "run_id", None),
            status=run_status or (f"HTTP {status}" if status is not None else "no answer"),
            pending=list(getattr(outcome, "pending", ())),
            error=exchange.error if exchange is not None else None,
            outcome=None,
            t=now_ms(),
            threadId=exchange.thread_id if exchange is not None else None,
        )

    def _settle_exchange(self, exchange: _Exchange, outcome: Any) -> None:
        """The exchange's cards show what became of their calls (``outcome``: the proxy's
        judge's, when in); its conversation goes, and its frames are shown, not folded."""
        conv = exchange.conversation
        assert conv is not None
        rejected = getattr(outcome, "status", None) == "rejected" or not exchange.folding
        exchange.conversation, exchange.folding = None, False
        self._live, self._live_thread = conv, exchange.thread_id
        try:
            try:
                run = Driver(conv).end_run()
                exchange.error = run.error
                rejected = rejected or run.violation is not None
            except AguiError:
                rejected = True
            except Exception:  # as in exchange_event: said, never raised into the proxy
                log.exception("the live inspector could not end run %d", exchange.number)
                rejected = True
            for call_id in exchange.calls:
                shown = self._shown.get(call_id)
                if shown is None or shown["status"] not in ("streaming", "called"):
                    continue
                if rejected:
                    self._push_shown(
                        {
                            "callId": call_id,
                            "status": "rejected",
                            "note": "The run broke a rule: a conforming frontend runs none of "
                            "its calls.",
                        }
                    )
                elif (call := self._call(call_id)) is not None:
                    # a frontend call (even one whose arguments break the schema: the
                    # card shows the errors a conforming frontend answers it with, TOOL-21)
                    card = self._card(CallUpdate(call_id, call.name, call.status))
                    card["status"] = "frontend"
                    self._push_shown(card)
                elif shown["status"] == "streaming":
                    self._closed(call_id)
            self._push_thread_of(conv, exchange.number)
        finally:
            self._live = self._live_thread = None
        for call_id in exchange.calls:  # what the cards needed while the stream flowed
            self._cards.pop(call_id, None)
            self._previews.pop(call_id, None)
            self.hub.settle(f"preview:{call_id}")
            shown = self._shown.pop(call_id, None)
            if shown is not None and shown["status"] == "frontend":
                # answered later, by a tool message of the thread's next input
                self._left[(exchange.thread_id, call_id)] = shown["name"]
                self._left.move_to_end((exchange.thread_id, call_id))
        while len(self._left) > CALLS_KEPT:
            self._left.popitem(last=False)

    def _push_thread_of(self, conv: Conversation, number: int) -> None:
        self.hub.push(
            "thread",
            threadId=conv.thread_id,
            run=number,  # the run after which the thread is so (its State tab's step)
            **bounded("messages", conv.messages),
            **bounded("state", conv.state),
            pending=[c.call_id for c in conv.pending],
        )


def _messages(run_input: dict[str, Any] | None) -> list[dict[str, Any]]:
    raw = run_input.get("messages") if run_input is not None else None
    return [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []


def _conversation_for(
    run_input: dict[str, Any] | None, thread_id: str | None, messages: list[dict[str, Any]]
) -> Conversation | None:
    """A conversation to fold the answer to ``run_input`` into, as the frontend that sent
    it folds it: its history, its state, the tools it advertised. ``None`` when the input
    is none the stream could be folded against (the proxy's judge says why)."""
    if run_input is None or thread_id is None:
        return None
    raw_tools = run_input.get("tools")
    try:
        tools = [
            ToolSpec(
                str(t.get("name", "")),
                str(t.get("description", "")),
                parameters=t.get("parameters") if isinstance(t.get("parameters"), dict) else None,
            )
            for t in (raw_tools if isinstance(raw_tools, list) else ())
            if isinstance(t, dict)
        ]
        conv = Conversation(
            thread_id=thread_id, tools=tools, messages=messages, state=run_input.get("state")
        )
    except (AguiError, ValueError, TypeError, KeyError):  # InvalidToolSchema is an AguiError
        return None
    # the input is the one the frontend sent (not one this conversation built): the
    # stream it answers is judged against it, as the consumer's pipeline judges any run
    conv.use_input(run_input)
    return conv
