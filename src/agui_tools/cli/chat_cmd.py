"""``agui-tools chat URL`` — a conversation with any AG-UI agent, turn after turn.

The interactive face of :class:`~agui_tools.transport.Session`: each line a user message on
one thread, cards and consent as in ``run``; lines starting with ``/`` are
:data:`COMMANDS`. The session is built once in :func:`_open_session`.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Final

from .._text import one_line
from ._common import interrupted, sqlite_file
from ._drive import Driver, add_drive_options, prepare

if TYPE_CHECKING:
    from collections.abc import Mapping

COMMANDS: Final = {
    "/save FILE": "write the raw event streams so far to FILE (check it: agui-tools verify FILE)",
    "/state": "show the thread's state",
    "/events": "list the events of the thread so far, one per line",
    "/thread": "show the thread as a table",
    "/help": "list these commands",
    "/quit": "leave (so does Ctrl-D)",
}

HELP = f"""\
Talk to the AG-UI agent at URL: each line you type is sent as a user message
on one thread kept across turns; the answer streams, tool calls show as cards,
side-effectful ones ask for consent ("→ approved / declined" after each), a
spinner shows a tool that is running. Frontend tools, consent flags, the
journal and the HTTP options are those of `agui-tools run`.

Commands (a line starting with "/"):
{chr(10).join(f"  {name:<11} {what}" for name, what in COMMANDS.items())}

--resumable: a dropped connection is rejoined where it left off, and Ctrl-C
during a turn asks the agent to stop the run (docs/resumable.md).

--save FILE writes the raw event streams to FILE as they arrive, like /save at
the end. A run that fails (an error, a cut connection) is reported and the
chat goes on: calls it left are answered as not executed.

An AG-UI interrupt shows as a card and is answered as in `agui-tools run`;
a resumed thread whose last run was interrupted asks at once.

Exit codes: 0 you left (/quit, Ctrl-D), 2 bad usage, 130 interrupted (Ctrl-C).
"""

QUIT: Final = "quit"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "chat",
        help="talk to an AG-UI agent at URL, turn after turn, with local frontend tools",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("url", metavar="URL")
    add_drive_options(p, save_help="also write the raw event streams to FILE as they arrive")
    p.add_argument(
        "--store",
        metavar="FILE",
        type=sqlite_file,
        help="keep the thread in this SQLite thread store, so a later chat can resume it",
    )
    p.add_argument(
        "--thread",
        metavar="ID",
        help="resume thread ID from --store (a new thread is started, and named, without)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from rich.console import Console

    from ..demo.app import ScriptError

    resuming = args.thread is not None  # given, not minted: a thread to show first
    driver = _open_session(args, Console(highlight=False))
    if isinstance(driver, int):
        return driver
    try:
        return asyncio.run(_chat(driver, resuming=resuming))
    except KeyboardInterrupt:
        driver.ui.finish_run()
        return interrupted("chat", journal=args.journal, stop=driver.stop_said)
    except ScriptError as exc:
        print(one_line(f"agui-tools chat: --script {args.script}, {exc}"), file=sys.stderr)
        return 2
    finally:
        driver.close()


def _open_session(args: argparse.Namespace, console: Any) -> Driver | int:
    """The session of this chat: a new thread, or with ``--store`` one kept in (and,
    with ``--thread``, restored from) a thread store."""
    driver = prepare(args, "chat", console)
    if not isinstance(driver, int) and args.store is not None:
        print(
            f"thread {args.thread} is kept in {args.store} "
            f"(resume: --store {args.store} --thread {args.thread})"
        )
    return driver


async def _chat(driver: Driver, *, resuming: bool = False) -> int:
    from rich.text import Text

    from ._common import cut

    ui = driver.ui
    try:
        ui.console.print(
            Text(
                f"chatting with {cut(driver.args.url)} — /help lists the commands, /quit or Ctrl-D "
                "leaves",
                style="dim",
            )
        )
        if resuming:
            await _resume(driver)
        while True:
            try:
                line = ui.read_line("you> ").strip()
            except EOFError:
                ui.console.print()
                return 0
            if not line:
                continue
            if line.startswith("/"):
                if _command(driver, line) == QUIT:
                    return 0
                continue
            await driver.stopping_on_cancel(_turn(driver, line))
    finally:
        await driver.aclose()


async def _resume(driver: Driver) -> None:
    """A resumed thread, shown before the user types: its history, then the calls it left
    pending — asked about (or run) now, and the agent told, as the last process would have."""
    args = driver.args
    conversation = await driver.session.open()
    if not conversation.messages:
        # a typo of an id must not pass for a resumed thread
        _say(
            driver,
            f"no thread {args.thread!r} in {args.store}: starting a new one under that id "
            "(to resume a thread, give the id the chat printed)",
            "yellow",
        )
        return
    runs = len(conversation.runs)
    _say(
        driver,
        f"resumed thread {args.thread} from {args.store}: {len(conversation.messages)} "
        f"message(s)" + (f", {runs} run(s)" if runs else ""),
    )
    driver.ui.summary(conversation.messages)
    interrupts = driver.session.interrupts
    if interrupts:
        ids = ", ".join(i.id for i in interrupts)
        _say(
            driver,
            f"the thread's last run is waiting on {len(interrupts)} interrupt(s): {ids} — "
            "answered now",
        )
        await _turn(driver, None)
        return
    pending = conversation.pending
    if pending:
        names = ", ".join(f"{c.name} ({c.call_id})" for c in pending)
        _say(driver, f"the thread left {len(pending)} call(s) pending: {names} — answered now")
        await _turn(driver, None)


async def _turn(driver: Driver, text: str | None) -> None:
    """One user message and everything it sets off; a failure is said, and the chat goes on.

    Without ``text`` the thread is carried on as it stands (a resumed thread's pending calls)."""
    from .._errors import ProtocolViolation, StaleThread, StoreError, UsageError
    from ..app._runs import describe_run
    from ..transport._client import TransportError
    from ._http import describe_transport_error

    ui, session = driver.ui, driver.session
    problem: str | None = None
    try:
        result = await session.send(text, on_update=ui.on_update)
    except StoreError as exc:
        # another chat (another process) saved a run of this thread first, or the store
        # failed: nothing of this turn was kept; the session reloads the thread as the
        # store has it. Not resent blindly: its tool calls may have run.
        ui.finish_run()
        if isinstance(exc, StaleThread):
            why = "the thread moved on in another process: nothing of this turn was kept"
        else:
            why = f"the store failed: {exc}"
        await _reload(driver, why)
        return
    except TransportError as exc:
        problem = describe_transport_error(exc, driver.args.url)
    except ProtocolViolation as exc:
        problem = f"the agent's stream was rejected: {exc}"
    except UsageError as exc:  # an answer refused before it was sent (an interrupt expired)
        ui.finish_run()
        _say(driver, f"nothing was sent: {exc}", "red")
        return
    else:
        if result.status != "success":
            problem = describe_run(result)
    ui.finish_run()
    if problem is not None:
        _say(driver, problem, "red")
        _answer_leftovers(driver, problem)


async def _reload(driver: Driver, why: str) -> None:
    """After a store failure: the thread reloaded from the store, said in one line."""
    from .._errors import StoreError

    try:
        conversation = await driver.session.open()
    except StoreError as exc:
        _say(driver, f"{why}; reloading the thread failed too: {exc}", "red")
        return
    _say(
        driver,
        f"{why}; reloaded the thread ({len(conversation.messages)} message(s)) — send again",
        "red",
    )


def _answer_leftovers(driver: Driver, why: str) -> None:
    """Calls a failed run left unanswered: answered "not executed", so the thread goes on.

    The next input must answer every call (FE-8); a call of a run that failed
    is not one to execute or to ask about.
    """
    conversation = driver.session.conversation
    if conversation is None:
        return
    from ..app._driver import Driver as ConversationDriver  # the cli imports nothing heavy

    for call in conversation.pending:
        ConversationDriver(conversation).fail(
            call.call_id, f"not executed: the run that made this call failed ({why})"
        )
    for update in conversation.take_updates():
        driver.ui.on_update(update)
    driver.ui.finish_run()


def _say(driver: Driver, text: str, style: str = "dim") -> None:
    """One line of the chat's own (what it carries of the agent's escaped to one line)."""
    from ..ui.terminal import line_text

    driver.ui.console.print(line_text(text, style))


def _command(driver: Driver, line: str) -> str | None:
    name, _, rest = line.partition(" ")
    rest = rest.strip()
    conversation = driver.session.conversation
    if name in ("/quit", "/exit", "/q"):
        return QUIT
    if name == "/help":
        for usage, what in COMMANDS.items():
            _say(driver, f"{usage:<11} {what}")
    elif name == "/save":
        _save(driver, rest)
    elif name == "/state":
        from ..ui.terminal import safe_text

        state = conversation.state if conversation is not None else None
        driver.ui.console.print(safe_text(state if state is not None else "no state yet"))
    elif name == "/events":
        _events(driver)
    elif name == "/thread":
        driver.ui.summary(conversation.messages if conversation is not None else [])
    else:
        _say(driver, f"unknown command {name}; /help lists them", "yellow")
    return None


def _save(driver: Driver, path: str) -> None:
    if not path:
        _say(driver, "/save needs a file name: /save FILE", "yellow")
        return
    try:
        size = driver.recorder.save(path)
    except OSError as exc:
        _say(driver, f"cannot write {path}: {exc.strerror or exc}", "red")
        return
    _say(
        driver,
        f"saved {size} bytes, {driver.recorder.streams} run(s), to {path} — check it with "
        f"agui-tools verify {path}",
    )


_SHOWN: Final = ("runId", "messageId", "toolCallId", "toolCallName", "role", "delta", "message")


def _events(driver: Driver) -> None:
    """The thread's events as this chat received them (judged again, as verify would)."""
    from ..app._capture import read_frames, replay

    data = driver.recorder.data
    if not data:
        conversation = driver.session.conversation
        restored = len(conversation.messages) if conversation is not None else 0
        _say(
            driver,
            "no events received in this chat yet"
            + (
                f"; the thread's {restored} earlier message(s) were restored from the store, "
                "not replayed as events: /thread shows them"
                if restored
                else ""
            ),
        )
        return
    outcome = replay(read_frames(data))
    for index, event in enumerate(outcome.events):
        _say(driver, f"{index:>4} {event.get('type')}{_fields(event)}", "")
    _say(driver, f"{len(outcome.events)} event(s) in {driver.recorder.streams} run(s)")


def _fields(event: Mapping[str, Any]) -> str:
    parts = []
    for key in _SHOWN:
        if key in event:
            value = str(event[key])
            parts.append(f"{key}={value[:40] + '…' if len(value) > 40 else value}")
    return "  " + " ".join(parts) if parts else ""
