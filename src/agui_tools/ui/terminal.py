"""The terminal UI: streamed text, tool-call cards, consent prompts — as data.

Everything a model or a tool produced — tool names, arguments, text, results —
is untrusted (TOOL-21, TOOL-23, SEC-2). On a terminal that means two attacks:
rich markup (``[bold red]…[/]``, ``[link=…]``) that a careless renderer would
interpret, and control sequences (ANSI CSI colours and cursor moves, OSC
hyperlinks and title changes, a bare carriage return that overwrites the line
before it, bidi overrides that reorder what is shown). :func:`safe_text` turns
any such string into a ``rich.text.Text`` that is *shown* literally: markup is
never parsed (``Text`` objects are not markup), and every control character is
replaced by a visible escape (``\\x1b``, ``\\r``, ``\\u202e``) — neutralised,
never interpreted, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import orjson
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .._errors import ProtocolWarning
from .._text import escape_controls
from ..app._calls import CallStatus, PendingCall
from ..app._conversation import CallUpdate, TextDelta, Update
from ..transport._session import Approval

__all__ = ["TerminalUI", "safe", "safe_text"]


def safe(value: str) -> str:
    """``value`` with every control/format character replaced by a visible escape."""
    return escape_controls(value)


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


_STATUS_STYLE: Final = {
    CallStatus.STREAMING: ("streaming…", "cyan"),
    CallStatus.AWAITING_CONSENT: ("awaiting your consent", "yellow"),
    CallStatus.APPROVED: ("approved", "green"),
    CallStatus.EXECUTING: ("executing…", "blue"),
    CallStatus.DONE: ("done", "green"),
    CallStatus.FAILED: ("failed", "red"),
    CallStatus.DECLINED: ("declined", "magenta"),
}


class _Card:
    __slots__ = ("agent_side", "answer", "call_id", "name", "preview", "status")

    def __init__(self, call_id: str, name: str) -> None:
        self.call_id = call_id
        self.name = name
        self.status = CallStatus.STREAMING
        self.preview: Any = None
        self.answer: Any = None
        self.agent_side = False

    def render(self) -> Panel:
        label, colour = _STATUS_STYLE[self.status]
        if self.agent_side:
            label = "answered by the agent"
        body = Table.grid(padding=(0, 1))
        body.add_column(style="dim", no_wrap=True)
        body.add_column()
        if self.preview is not None:
            body.add_row("arguments", safe_text(self.preview))
        if self.answer is not None:
            content = self.answer.content
            if isinstance(content, list):
                content = " ".join(
                    p.get("text", f"<{p.get('type')} part>") if isinstance(p, dict) else str(p)
                    for p in content
                )
            body.add_row("result", safe_text(content))
            if self.answer.error:
                body.add_row("error", safe_text(self.answer.error, "red"))
        title = Text.assemble(("🔧 ", ""), safe_text(self.name, "bold"), (f"  [{label}]", colour))
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
        self.console = console or Console(highlight=False)
        # a Text prompt: "[a]pprove" must not be read as rich markup
        self._prompt = prompt or (lambda q: self.console.input(Text(q, style="bold yellow")))
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
                card.preview = update.arguments  # what runs (or ran): no longer a preview
            elif update.preview is not None:
                card.preview = update.preview.value
            if update.answer is not None:
                card.answer = update.answer
            if update.status.answered:
                self._flush()
                self.console.print(card.render())
            else:
                self._refresh()
        elif isinstance(update, ProtocolWarning):
            self._flush()
            self.console.print(safe_text(f"warning {update}", "yellow"))

    def finish_run(self) -> None:
        self._flush()

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
        """Show the call and ask: approve, decline, or edit the arguments."""
        self.show_consent(call)
        while True:
            answer = self._prompt("[a]pprove / [d]ecline / [e]dit arguments? ").strip().lower()
            if answer in ("a", "approve", "y", "yes"):
                return Approval.approve()
            if answer in ("d", "decline", "n", "no"):
                reason = self._prompt("reason (optional): ").strip()
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
                return Approval.approve(edited)
            self.console.print(Text("please answer a, d or e", style="dim"))

    # -- summary -----------------------------------------------------------------------

    def summary(self, messages: Sequence[Mapping[str, Any]]) -> None:
        self._flush()
        table = Table(title="The thread", show_lines=True, expand=False)
        table.add_column("role", style="bold")
        table.add_column("content")
        for msg in messages:
            role = str(msg.get("role"))
            if msg.get("toolCalls"):
                calls = ", ".join(
                    f"{c['function']['name']}({c['function']['arguments']})"
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
            table.add_row(safe_text(role), safe_text(text))
        self.console.print(table)
