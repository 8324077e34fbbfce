"""The demo application: the terminal UI, a session, and the demo agent on loopback.

``run_demo`` starts the scripted agent on a free loopback port (a real uvicorn
server, a real HTTP client, real SSE), drives one conversation through the
whole loop, prints the thread, and stops the server — offline, in one call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from rich.console import Console
from rich.rule import Rule

from ..client import AgentClient
from ..conversation import Conversation, RunResult
from ..dispose import PendingCall
from ..server import agent_app
from ..session import Approval, Session
from ..terminal import TerminalUI
from ..testing import serving
from .agent import demo_agent
from .tools import register

__all__ = ["PROMPT", "Decider", "run_demo", "scripted"]

PROMPT = "Order two widgets for me."

Decider = Callable[[PendingCall], Approval]


def scripted(answers: Iterator[str]) -> Decider:
    """Consent decisions from a script: ``approve``, ``decline [reason]``, ``edit {json}``."""
    import orjson

    def decide(call: PendingCall) -> Approval:
        try:
            line = next(answers).strip()
        except StopIteration:
            return Approval.decline("the script had no answer for this call")
        verb, _, rest = line.partition(" ")
        if verb == "approve":
            return Approval.approve()
        if verb == "decline":
            return Approval.decline(rest or None)
        if verb == "edit":
            return Approval.approve(orjson.loads(rest))
        raise ValueError(
            f"unknown script answer {line!r}: use approve, decline [reason] or edit {{json}}"
        )

    return decide


async def run_demo(
    *,
    console: Console | None = None,
    decide: Decider | None = None,
    prompt: Callable[[str], str] | None = None,
    fast: bool = False,
) -> tuple[Conversation, RunResult]:
    """Run the whole demo once; ``decide`` answers consent (else the terminal asks)."""
    console = console or Console(highlight=False)
    ui = TerminalUI(console, prompt=prompt)
    app = agent_app(demo_agent(delay=0.0 if fast else 0.04), path="/agent")
    async with serving(app) as base:
        url = f"{base}/agent"
        console.print(Rule(f"AG-UI demo — agent at {url}"))
        console.print(f"[bold]you:[/bold] {PROMPT}")

        def ask(call: PendingCall) -> Approval:
            answer = decide(call) if decide is not None else ui.ask(call)
            verdict = "approved" if answer.approved else "declined"
            console.print(
                f"[dim]→ {verdict}{' (edited arguments)' if answer.arguments else ''}[/dim]"
            )
            return answer

        session = Session(AgentClient(url), ask=ask)
        register(session)
        try:
            result = await session.send(PROMPT, on_update=ui.on_update)
        finally:
            await session.client.aclose()
        ui.finish_run()
    conversation = session.conversation
    assert conversation is not None
    console.print(Rule("the thread"))
    ui.summary(conversation.messages)
    console.print(
        f"[bold]{len(conversation.runs)} runs[/bold], last status [bold]{result.status}[/bold]; "
        f"{sum(1 for m in conversation.messages if m['role'] == 'tool')} tool results in the thread."
    )
    return conversation, result
