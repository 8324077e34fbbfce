"""The terminal UI: streamed text, tool-call cards, consent prompts — as data.

Whatever a model or tool produced is untrusted (TOOL-21, TOOL-23, SEC-2): rich markup and
control sequences (ANSI, OSC, a bare CR, bidi overrides) must not act. :func:`safe_text`
makes a ``rich.text.Text`` shown literally — markup never parsed, every control character a
visible escape (``\\x1b``, ``\\r``, ``\\u202e``), never dropped.
"""

from __future__ import annotations

import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, TypeVar

import orjson
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.panel import Panel
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from .._errors import ProtocolWarning, UsageError
from .._text import one_line, terminal_text
from ..app._calls import CallStatus, PendingCall, describe_errors
from ..app._conversation import CallUpdate, TextDelta, Update
from ..transport._session import Approval, Interrupt, Resolution, interrupt_resolution

__all__ = ["TerminalUI", "interruptible", "safe", "safe_text"]

T = TypeVar("T")


def interruptible(read: Callable[[], T]) -> T:
    """Call a blocking ``read`` (a prompt) so that Ctrl-C interrupts it at once.

    ``asyncio.run`` turns a first Ctrl-C into cancelling its task: a prompt blocking the loop
    would swallow it and die of the second in chained tracebacks. Here it raises
    ``KeyboardInterrupt`` at once; the caller says one line.
    """
    if threading.current_thread() is not threading.main_thread():
        return read()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return read()
    finally:
        signal.signal(signal.SIGINT, previous)


def _wait_readable(stream: Any) -> None:
    """Wait until ``stream`` has a line (or its end) in short, interruptible waits: SIGINT may
    land on another thread, and a main thread blocked in ``read()`` would never run its handler.
    """
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file: read it directly
        return
    while not select.select([fd], [], [], 0.1)[0]:
        pass


def safe(value: str) -> str:
    """``value`` with every control/format character replaced by a visible escape
    (:func:`~agui_tools._text.terminal_text`, what every command writes through)."""
    return terminal_text(value)


def safe_text(value: Any, style: str = "") -> Text:
    """A ``rich`` Text that shows ``value`` literally (never markup, never controls).

    Non-string values are shown as compact JSON.
    """
    if not isinstance(value, str):
        try:
            value = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
        except TypeError:
            value = repr(value)
    return Text(safe(value), style=style)


def line_text(value: object, style: str = "") -> Text:
    """A ``rich`` Text of a peer's string that names or says something in one line (a
    tool's name, an id, an error message): line breaks escaped too, so the peer never
    starts a line of ours (:func:`~agui_tools._text.one_line`)."""
    return Text(one_line(value), style=style)


_STATUS_STYLE: Final = {
    CallStatus.STREAMING: ("streaming…", "cyan"),
    CallStatus.AWAITING_CONSENT: ("awaiting your consent", "yellow"),
    CallStatus.APPROVED: ("approved", "green"),
    CallStatus.EXECUTING: ("executing…", "blue"),
    CallStatus.DONE: ("done", "green"),
    CallStatus.FAILED: ("failed", "red"),
    CallStatus.DECLINED: ("declined", "magenta"),
}


class _Running:
    """A spinner with the seconds a tool has been running, re-rendered at each refresh."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.spinner = Spinner("dots", style="blue")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        elapsed = time.monotonic() - self.started
        self.spinner.update(text=Text(f"running for {elapsed:.0f} s", style="blue"))
        yield self.spinner.render(console.get_time())


def _restates(content: str, error: str) -> bool:
    """A failed answer's content that only repeats its error (``"Error: …"``)."""
    return content.strip() in (error.strip(), f"Error: {error}".strip())


class _Card:
    __slots__ = (
        "agent_side",
        "answer",
        "arguments",
        "call_id",
        "incomplete",
        "name",
        "preview",
        "running",
        "status",
    )

    def __init__(self, call_id: str, name: str) -> None:
        self.call_id = call_id
        self.name = name
        self.status = CallStatus.STREAMING
        self.preview: Any = None
        self.arguments: Any = None
        """Once no longer a preview: what runs (edits included), or the raw text received."""
        self.incomplete = False
        self.answer: Any = None
        self.agent_side = False
        self.running: _Running | None = None

    def render(self) -> Panel:
        label, colour = _STATUS_STYLE[self.status]
        if self.agent_side:
            label = "answered by the agent"
        body = Table.grid(padding=(0, 1))
        body.add_column(style="dim", no_wrap=True)
        body.add_column()
        if self.arguments is not None:
            name = "arguments (as received)" if self.incomplete else "arguments"
            body.add_row(name, safe_text(self.arguments))
        elif self.preview is not None:
            body.add_row("arguments", safe_text(self.preview))
        if self.running is not None and self.status is CallStatus.EXECUTING:
            body.add_row("", self.running)
        if self.answer is not None:
            content = self.answer.content
            if isinstance(content, list):
                content = " ".join(
                    p.get("text", f"<{p.get('type')} part>") if isinstance(p, dict) else str(p)
                    for p in content
                )
            error = self.answer.error
            if not (error and _restates(str(content), error)):
                body.add_row("result", safe_text(content))
            if error:
                body.add_row("error", line_text(error, "red"))
        title = Text.assemble(("🔧 ", ""), line_text(self.name, "bold"), (f"  [{label}]", colour))
        return Panel(body, title=title, title_align="left", border_style=colour, expand=False)


class TerminalUI:
    """Renders a session's updates on a terminal and asks for consent.

    Use :meth:`on_update` as the session's ``on_update`` and :meth:`ask` as its
    ``ask``. Everything model-controlled goes through :func:`safe_text`.
    """

    def __init__(
        self,
        console: Console | None = None,
        *,
        prompt: Callable[[str], str] | None = None,
        live: bool = True,
    ) -> None:
        """``prompt`` reads one answer (the terminal by default)."""
        self.console = console or Console(highlight=False)
        self._prompt = prompt or self._read_terminal
        self._cards: dict[str, _Card] = {}
        self._text: Text | None = None
        self._live: Live | None = None
        self._use_live = live and self.console.is_terminal

    # -- streaming -----------------------------------------------------------------

    def _renderable(self) -> RenderableType:
        parts: list[RenderableType] = []
        if self._text is not None:
            parts.append(self._text)
        parts += [c.render() for c in self._cards.values() if not c.status.answered]
        return Group(*parts)

    def _refresh(self) -> None:
        if self._use_live:
            if self._live is None:
                self._live = Live(
                    self._renderable(), console=self.console, refresh_per_second=12, transient=True
                )
                self._live.start()
            else:
                self._live.update(self._renderable())

    def _flush(self) -> None:
        """Print what the live area showed, permanently."""
        if self._live is not None:
            self._live.stop()
            self._live = None
        if self._text is not None:
            self.console.print(self._text)
            self._text = None

    def on_update(self, update: Update) -> None:
        if isinstance(update, TextDelta):
            if self._text is None:
                self._text = Text()
                self._text.append(safe_text(f"{update.role}: ", "bold"))
            self._text.append(safe_text(update.delta))
            if not self._use_live and update.delta:
                pass  # printed whole at the next flush
            self._refresh()
        elif isinstance(update, CallUpdate):
            card = self._cards.get(update.call_id)
            if card is None:
                card = self._cards[update.call_id] = _Card(update.call_id, update.name)
            card.status = update.status
            card.agent_side = update.agent_side
            if update.has_arguments:
                # what runs (or ran): no longer a preview; text when it never parsed
                card.arguments = update.arguments
                card.incomplete = isinstance(update.arguments, str)
            elif update.preview is not None:
                card.preview = update.preview.value
            if update.answer is not None:
                card.answer = update.answer
            if update.status is CallStatus.EXECUTING and card.running is None:
                card.running = _Running(time.monotonic())
            if update.status.answered:
                self._flush()
                self.console.print(card.render())
            else:
                self._refresh()
        elif isinstance(update, ProtocolWarning):
            self._flush()
            self.console.print(line_text(f"warning {update}", "yellow"))

    def finish_run(self) -> None:
        self._flush()

    # -- reading the terminal ------------------------------------------------------------

    def _read_terminal(self, question: str) -> str:
        def read() -> str:
            # a Text prompt: "[a]pprove" must not be read as rich markup
            self.console.print(Text(question, style="bold yellow"), end="")
            _wait_readable(sys.stdin)
            return input()

        try:
            return interruptible(read)
        except KeyboardInterrupt:
            self.console.print()  # the caller's one line starts on a line of its own
            raise

    def read_line(self, question: str) -> str:
        """One line from the terminal (``EOFError`` at end of input, ``KeyboardInterrupt``
        on Ctrl-C, at once — see :func:`interruptible`)."""
        self._flush()
        return self._prompt(question)

    # -- consent ---------------------------------------------------------------------

    def show_consent(self, call: PendingCall) -> None:
        """The consent card: what would run, with which arguments, and its side effects."""
        self._flush()
        body = Table.grid(padding=(0, 1))
        body.add_column(style="dim")
        body.add_column()
        body.add_row("tool", safe_text(call.name, "bold"))
        if call.tool is not None:
            body.add_row("does", safe_text(call.tool.description))
            if call.tool.side_effects:
                body.add_row("", Text("has side effects", style="bold yellow"))
        body.add_row("arguments", safe_text(call.effective_arguments or call.text))
        self.console.print(
            Panel(body, title="The agent wants to run a tool", border_style="yellow", expand=False)
        )

    def ask(self, call: PendingCall) -> Approval:
        """Show the call and ask: approve, decline, or edit the arguments.

        At the end of input (Ctrl-D, a closed pipe) nobody can answer: the call
        is declined and the answer says so, never that a user decided (TOOL-22).
        """
        self.show_consent(call)
        try:
            return self._ask_until_answered(call)
        except EOFError:
            self.console.print()
            return Approval.decline(NO_ANSWER, by="system")

    def consent(
        self, decide: Callable[[PendingCall], Approval] | None = None
    ) -> Callable[[PendingCall], Approval]:
        """The ``ask`` for a session: the consent card, the answer — asked here, or
        given by ``decide`` (``--yes``, ``--script``) — and "→ approved / declined"."""

        def ask(call: PendingCall) -> Approval:
            if decide is None:
                answer = self.ask(call)
            else:
                self.show_consent(call)
                given = _next_answer(decide, call)
                for _ in range(_MAX_REFUSED_EDITS):
                    refused = given if isinstance(given, str) else edit_problem(call, given)
                    if refused is None:
                        break
                    # a script's edit the schema refuses (or that is no JSON object): said,
                    # and the next line answers
                    self._refuse_edit(refused, "the next answer is used")
                    given = _next_answer(decide, call)
                if isinstance(given, Approval) and edit_problem(call, given) is None:
                    answer = given
                else:
                    answer = Approval.decline(
                        "every edited argument given was refused by the tool's schema",
                        by="system",
                    )
            self.decided(answer)
            return answer

        return ask

    def _refuse_edit(self, problem: str, then: str) -> None:
        self.console.print(
            safe_text(f"→ edit refused [TOOL-21]: {problem} — {then}", "red"), soft_wrap=True
        )

    def decided(self, answer: Approval) -> None:
        """One line after each decision, so the transcript says what was decided."""
        if answer.approved:
            line = "→ approved" + (" (edited arguments)" if answer.arguments is not None else "")
        elif answer.decided_by != "user":
            line = f"→ declined — nobody answered ({answer.reason})"
        else:
            line = "→ declined" + (f": {answer.reason}" if answer.reason else "")
        self.console.print(safe_text(line, "green" if answer.approved else "magenta"))

    def _ask_until_answered(self, call: PendingCall) -> Approval:
        while True:
            answer = self._prompt("[a]pprove / [d]ecline / [e]dit arguments? ").strip().lower()
            if answer in ("a", "approve", "y", "yes"):
                return Approval.approve()
            if answer in ("d", "decline", "n", "no"):
                try:
                    reason = self._prompt("reason (optional): ").strip()
                except EOFError:  # the user declined; the reason is what ended
                    reason = ""
                return Approval.decline(reason or None)
            if answer in ("e", "edit"):
                raw = self._prompt("new arguments (JSON object): ")
                try:
                    edited = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    self.console.print(safe_text(f"not JSON: {exc}", "red"))
                    continue
                if not isinstance(edited, dict):
                    self.console.print(Text("the arguments must be a JSON object", style="red"))
                    continue
                refused = edit_problem(call, Approval.approve(edited))
                if refused is not None:
                    self._refuse_edit(refused, "answer again")
                    continue
                return Approval.approve(edited)
            self.console.print(Text("please answer a, d or e", style="dim"))

    # -- interrupts ------------------------------------------------------------------

    def show_interrupt(self, interrupt: Interrupt) -> None:
        """The interrupt card: why the run stopped, what it asks, the call it names (with
        its arguments), the answer's schema, and when it expires."""
        self._flush()
        body = Table.grid(padding=(0, 1))
        body.add_column(style="dim")
        body.add_column()
        body.add_row("interrupt", line_text(interrupt.id))
        body.add_row("reason", line_text(interrupt.reason or "(none given)", "bold"))
        if interrupt.message:
            body.add_row("message", safe_text(interrupt.message))
        call = interrupt.call
        if call is not None:
            body.add_row("tool", line_text(call.name, "bold"))
            if call.description:
                body.add_row("does", safe_text(call.description))
            shown = call.arguments if call.arguments is not None else call.text
            body.add_row("arguments", safe_text(shown))
        elif interrupt.tool_call_id is not None:
            body.add_row("call", line_text(f"{interrupt.tool_call_id} (not in this thread)"))
        if interrupt.response_schema is not None:
            # indented, wrapped in the card: one line of JSON is cut at the card's edge
            body.add_row("answer schema", safe_text(interrupt.response_schema))
        if interrupt.metadata:
            body.add_row("metadata", safe_text(interrupt.metadata))
        if interrupt.expires_at is not None:
            late = " — expired: it can only be cancelled" if interrupt.expired else ""
            body.add_row("expires", line_text(interrupt.expires_at + late))
        title = "The agent asks for approval" if call is not None else "The agent is waiting"
        self.console.print(Panel(body, title=title, border_style="cyan", expand=False))

    def interrupt_handler(
        self, decide: Callable[[Any], Approval] | None = None
    ) -> Callable[[Interrupt], Resolution]:
        """The ``on_interrupt`` for a session: the card, the answer (asked, or by ``decide``:
        ``--yes``, ``--decline``, ``--script``), then "→ resolved / cancelled".

        A flag's answer: approve (an approval request; any other interrupt is cancelled), decline
        [reason] (cancelled), edit {json} (approved with those arguments, or resolved with that
        validated payload when no call is named)."""

        def handle(interrupt: Interrupt) -> Resolution:
            self.show_interrupt(interrupt)
            if decide is None:
                answer = self._answer_interrupt(interrupt)
            else:
                answer = self._decided_interrupt(interrupt, decide)
            self.resolved(answer)
            return answer

        return handle

    def _decided_interrupt(
        self, interrupt: Interrupt, decide: Callable[[Any], Approval]
    ) -> Resolution:
        for _ in range(_MAX_REFUSED_EDITS):
            # the flags' deciders read a line (or a flag), whatever they are asked about
            approval = interruptible(lambda: decide(interrupt))
            if not approval.approved:
                why = approval.reason or "declined"
                if approval.decided_by != "user":
                    why = f"nobody answered ({why})"
                return Resolution.cancel(why)
            if interrupt.expired:
                return Resolution.cancel("expired before it was answered")
            if interrupt.call is None:
                if approval.arguments is None:
                    return Resolution.cancel("nobody answered (approve gives no payload)")
                answer = Resolution.resolve(dict(approval.arguments))
            else:
                try:
                    answer = interrupt_resolution(interrupt, approval)
                except UsageError as exc:  # edited arguments the tool's schema refuses
                    self._refuse_payload(str(exc), "the next answer is used")
                    continue
            refused = _payload_problem(interrupt, answer)
            if refused is None:
                return answer
            self._refuse_payload(refused, "the next answer is used")
        return Resolution.cancel("nobody answered (every payload given was refused)")

    def _answer_interrupt(self, interrupt: Interrupt) -> Resolution:
        try:
            return self._ask_interrupt(interrupt)
        except EOFError:
            self.console.print()
            return Resolution.cancel(f"nobody answered ({NO_ANSWER})")

    def _ask_interrupt(self, interrupt: Interrupt) -> Resolution:
        if interrupt.expired:
            self.console.print(Text("it has expired: it can only be cancelled", style="dim"))
        if interrupt.call is not None and not interrupt.expired:
            question = "[a]pprove / [r]esolve with JSON / [c]ancel? "
        elif not interrupt.expired:
            question = "[r]esolve with JSON / [c]ancel? "
        else:
            question = "[c]ancel? "
        while True:
            answer = self._prompt(question).strip().lower()
            if answer in ("c", "cancel", "d", "decline", "n", "no"):
                try:
                    reason = self._prompt("reason (optional): ").strip()
                except EOFError:  # the user cancelled; the reason is what ended
                    reason = ""
                return Resolution.cancel(reason or None)
            if interrupt.expired:
                self.console.print(Text("please answer c", style="dim"))
                continue
            if interrupt.call is not None and answer in ("a", "approve", "y", "yes"):
                return interrupt_resolution(interrupt, Approval.approve())
            if answer in ("r", "resolve"):
                raw = self._prompt("payload (JSON): ")
                try:
                    payload = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    self.console.print(safe_text(f"not JSON: {exc}", "red"))
                    continue
                resolution = Resolution.resolve(payload)
                refused = _payload_problem(interrupt, resolution)
                if refused is not None:
                    self._refuse_payload(refused, "answer again")
                    continue
                return resolution
            choices = "a, r or c" if interrupt.call is not None else "r or c"
            self.console.print(Text(f"please answer {choices}", style="dim"))

    def _refuse_payload(self, problem: str, then: str) -> None:
        self.console.print(
            safe_text(f"→ payload refused: {problem} — {then}", "red"), soft_wrap=True
        )

    def resolved(self, answer: Resolution) -> None:
        """One line after each interrupt answered, so the transcript says what was sent."""
        if answer.resolved:
            line = "→ resolved" + (
                f" with {_compact(answer.payload)}" if answer.payload is not None else ""
            )
        else:
            line = "→ cancelled" + (f": {answer.reason}" if answer.reason else "")
        self.console.print(safe_text(line, "green" if answer.resolved else "magenta"))

    # -- summary -----------------------------------------------------------------------

    def summary(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """The thread as a table: each call numbered (``#1``), each tool row saying
        which call it answers, tool rows in the order of the calls they answer."""
        self._flush()
        table = Table(title="The thread", show_lines=True, expand=False)
        table.add_column("role", style="bold")
        table.add_column("content")
        numbers: dict[str, int] = {}
        for msg in messages:
            for c in msg.get("toolCalls") or ():
                numbers.setdefault(str(c.get("id")), len(numbers) + 1)
        for msg in _calls_order(messages, numbers):
            role = str(msg.get("role"))
            if msg.get("toolCalls"):
                calls = ", ".join(
                    f"#{numbers[str(c.get('id'))]} {c['function']['name']}"
                    f"({c['function']['arguments']})"
                    for c in msg["toolCalls"]
                )
                text = f"{msg.get('content') or ''}\n→ calls {calls}".strip()
            elif role == "tool":
                content = msg.get("content")
                text = content if isinstance(content, str) else orjson.dumps(content).decode()
                error = msg.get("error")
                if error and str(error) not in text:  # a failed answer's content often restates it
                    text += f"\n(error: {error})"
            else:
                content = msg.get("content")
                text = content if isinstance(content, str) else orjson.dumps(content).decode()
            if role == "tool":
                number = numbers.get(str(msg.get("toolCallId")))
                role = f"tool #{number}" if number is not None else "tool"
            table.add_row(safe_text(role), safe_text(text))
        self.console.print(table)


NO_ANSWER: Final = "the input ended before an answer was given"


def _compact(value: Any) -> str:
    """A JSON value on one line (a text that is not JSON as it is)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def _payload_problem(interrupt: Interrupt, answer: Resolution) -> str | None:
    """Why ``answer`` cannot be sent for ``interrupt`` (its responseSchema), or ``None``."""
    if not answer.resolved:
        return None
    errors = interrupt.validate(answer.payload)
    return "; ".join(str(e) for e in errors) if errors else None


"""The reason of a decline nobody gave: end of input at the consent prompt."""

_MAX_REFUSED_EDITS: Final = 100


class UnreadableEdit(ValueError):
    """An answer line (a pipe on stdin) that edits with arguments that are no JSON
    object: said like an edit the schema refuses, and the next line answers."""


def _next_answer(decide: Callable[[PendingCall], Approval], call: PendingCall) -> Approval | str:
    """``decide``'s answer — or, for an edit that is no JSON object, why not."""
    try:
        return interruptible(lambda: decide(call))  # it may read a pipe
    except UnreadableEdit as exc:
        return str(exc)


"""Refused edits in a row an unattended ``decide`` may give before the call is declined
(a script advances a line each time; a decider that never does must not loop forever)."""


def edit_problem(call: PendingCall, answer: Approval) -> str | None:
    """Why the schema refuses the edited arguments of ``answer`` (``None``: no edit, or valid).

    Edited arguments are untrusted input like the proposal (TOOL-21): checked
    here, where the person or script that gave them can be asked again, instead
    of failing the approval after "approved" was said.
    """
    if not answer.approved or answer.arguments is None or call.tool is None:
        return None
    errors = call.tool.validator.validate(dict(answer.arguments))
    if not errors:
        return None
    return f"the edited arguments do not match {call.name}'s schema: {describe_errors(errors)}"


def _calls_order(
    messages: Sequence[Mapping[str, Any]], numbers: Mapping[str, int]
) -> Iterator[Mapping[str, Any]]:
    """``messages`` with each run of consecutive tool messages sorted by call number.

    Answers arrive in the order they were given — a declined call before a slow
    one approved earlier —; a reader follows them in the order of the calls.
    """
    block: list[Mapping[str, Any]] = []
    for msg in messages:
        if msg.get("role") == "tool":
            block.append(msg)
            continue
        yield from sorted(block, key=lambda m: numbers.get(str(m.get("toolCallId")), 1 << 30))
        block = []
        yield msg
    yield from sorted(block, key=lambda m: numbers.get(str(m.get("toolCallId")), 1 << 30))
