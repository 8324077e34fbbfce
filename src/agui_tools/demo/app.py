"""The demo application: the terminal UI, a session, and the demo agent on loopback.

``run_demo`` starts the scripted agent on a free loopback port (a real uvicorn
server, a real HTTP client, real SSE), drives one conversation through the
whole loop, prints the thread, and stops the server — offline, in one call.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.rule import Rule

from .._errors import UsageError
from ..app._calls import PendingCall
from ..app._conversation import Conversation, RunResult
from ..app._journal import Journal
from ..app._store_sqlite import SQLiteStore
from ..transport._client import AgentClient, Transport
from ..transport._server import agent_app
from ..transport._serving import serving
from ..transport._session import Approval, Session
from ..ui.terminal import TerminalUI, UnreadableEdit
from .agent import demo_agent
from .tools import register

__all__ = [
    "PROMPT",
    "Decider",
    "ScriptError",
    "load_script",
    "parse_answer",
    "run_demo",
    "scripted",
    "web_demo",
]

PROMPT = "Order two widgets for me."

Decider = Callable[[PendingCall], Approval]


class ScriptError(ValueError):
    """A consent script line that is not ``approve``, ``decline [reason]`` or ``edit {json}``.

    Its message names the line (``line 3: …``) so a person can fix the file.
    """


def parse_answer(line: str) -> Approval:
    """One script line → the answer it gives; :class:`ValueError` saying why not."""
    verb, _, rest = line.strip().partition(" ")
    rest = rest.strip()
    if verb == "approve" and not rest:
        return Approval.approve()
    if verb == "decline":
        return Approval.decline(rest or None)
    if verb == "edit":
        try:
            arguments = orjson.loads(rest)
        except orjson.JSONDecodeError as exc:
            raise ValueError(
                f"edit needs JSON arguments, and {rest!r} is not JSON ({exc})"
            ) from None
        if not isinstance(arguments, dict):
            raise ValueError(f"edit needs a JSON object of arguments, not {rest!r}")
        return Approval.approve(arguments)
    raise ValueError(
        f"unknown script answer {line.strip()!r}: use approve, decline [reason] or edit {{json}}"
    )


def load_script(lines: Iterable[str]) -> list[str]:
    """Every answer line of a script (blank lines and ``#`` comments skipped), validated.

    A script read from a file is judged whole before the demo starts: a typo on
    line 3 is reported as such, not as a crash after two prompts were answered.
    """
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            parse_answer(line)
        except ValueError as exc:
            raise ScriptError(f"line {number}: {exc}") from None
        out.append(line)
    return out


def scripted(
    answers: Iterator[str], *, exhausted: str = "the script had no answer for this call"
) -> Decider:
    """Consent decisions from a script: ``approve``, ``decline [reason]``, ``edit {json}``,
    read as prompts come (a pipe may never end); a bad line raises :class:`ScriptError` then
    (:func:`load_script` checks a file up front). Run out, a call is declined ``exhausted``.
    """
    used = 0

    def decide(call: PendingCall) -> Approval:
        nonlocal used
        try:
            line = next(answers)
        except StopIteration:  # nobody decided: never worded as the user's decline (TOOL-22)
            return Approval.decline(exhausted, by="system")
        used += 1
        try:
            return parse_answer(line)
        except ValueError as exc:
            if line.strip().partition(" ")[0] == "edit":  # said, and the next line answers
                raise UnreadableEdit(f"answer {used}: {exc}") from None
            raise ScriptError(f"answer {used}: {exc}") from None

    return decide


async def run_demo(
    *,
    console: Console | None = None,
    decide: Decider | None = None,
    prompt: Callable[[str], str] | None = None,
    fast: bool = False,
    journal: Journal | None = None,
    transport: Transport = "sse",
    store: Path | None = None,
    refund: bool = True,
) -> tuple[Conversation, RunResult]:
    """Run the whole demo once; ``decide`` answers consent (else the terminal asks).

    The thread is kept in a SQLite store (``store`` names the file, else a temporary one); with
    ``journal``, only the calls are. ``transport="proto"``: the binary binding (TRANS-7).
    ``refund=False`` leaves out step 5's interrupt.
    """
    if journal is not None and store is not None:
        raise UsageError("give the demo a store or a journal, not both")
    if journal is None and store is None:
        with tempfile.TemporaryDirectory() as tmp:
            return await run_demo(
                console=console,
                decide=decide,
                prompt=prompt,
                fast=fast,
                transport=transport,
                store=Path(tmp) / "t.db",
                refund=refund,
            )
    console = console or Console(highlight=False)
    ui = TerminalUI(console, prompt=prompt)
    app = agent_app(demo_agent(delay=0.0 if fast else 0.04, refund=refund), path="/agent")
    async with serving(app) as base:
        url = f"{base}/agent"
        binding = " (binary binding)" if transport != "sse" else ""
        console.print(Rule(f"AG-UI demo — agent at {url}{binding}"))
        console.print(f"[bold]you:[/bold] {PROMPT}")

        threads = SQLiteStore(store) if store is not None else None
        session = Session(
            AgentClient(url, transport=transport),
            ask=ui.consent(decide),
            # the refund's approval is an interrupt: its card, and the same answers
            on_interrupt=ui.interrupt_handler(decide),
            store=threads if threads is not None else journal,
            thread_id=f"demo-{uuid.uuid4().hex[:12]}",
        )
        register(session)
        try:
            result = await session.send(PROMPT, on_update=ui.on_update)
        finally:  # interrupted too: the live area is printed and stopped
            ui.finish_run()
            await session.client.aclose()
            if threads is not None:
                threads.close()
    conversation = session.conversation
    assert conversation is not None
    console.print(Rule("the thread"))
    ui.summary(conversation.messages)
    console.print(
        f"[bold]{len(conversation.runs)} runs[/bold], last status [bold]{result.status}[/bold]; "
        f"{sum(1 for m in conversation.messages if m['role'] == 'tool')} tool results in the thread."
    )
    return conversation, result


def web_demo(*, fast: bool = False) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """The web demo's two halves: a context serving the demo agent, and the inspector for it.

    ``agent()`` serves the scripted agent on a free loopback port; ``make()``,
    called inside it, builds the inspector driving it with the demo's tools —
    the same agent, tools and consent rules as :func:`run_demo`, in a page.
    """
    from ..ui.inspector import Inspector

    app = agent_app(demo_agent(delay=0.0 if fast else 0.04), path="/agent")
    url: list[str] = []

    @asynccontextmanager
    async def agent() -> AsyncIterator[None]:
        async with serving(app) as base:
            url.append(f"{base}/agent")
            yield

    def make() -> Inspector:
        return Inspector(
            url[-1], register=register, prompt=PROMPT, title=f"the demo agent at {url[-1]}"
        )

    return agent, make
