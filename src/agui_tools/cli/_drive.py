"""The set-up ``run`` and ``chat`` share: every argument judged before anything is sent
(one line, exit 2), then :class:`Driver`: the session with its UI, consent, tools, journal
and recorder, and the words for how a run ended.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import logging
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final, TypeVar

from .._url import check_url
from ._answers import add_answer_flags
from ._common import add_journal_option, describe_exception, open_journal
from ._http import Recorder, add_http_options, positive_seconds

if TYPE_CHECKING:
    import httpx
    from rich.console import Console

    from ..app._journal import Journal
    from ..app._receipts import Signer
    from ..transport._session import Session
    from ..ui.terminal import TerminalUI

log = logging.getLogger("agui_tools.cli")
T = TypeVar("T")
_STOP_WAIT: Final = 5.0  # seconds Ctrl-C waits for the agent to take the stop request

__all__ = [
    "Driver",
    "add_drive_options",
    "add_signing_option",
    "load_tools",
    "prepare",
    "signer_from",
]


def add_drive_options(parser: argparse.ArgumentParser, *, save_help: str) -> None:
    """``--tools``, the consent flags, ``--timeout``, ``--journal``, ``--save`` and HTTP."""
    parser.add_argument(
        "--tools", metavar="MODULE", help="offer the frontend tools this module defines"
    )
    add_answer_flags(parser)
    parser.add_argument(
        "--principal",
        metavar="ID",
        help="record the consent answers given here as ID's (unauthenticated: the command "
        "cannot vouch for who types) in the store's approval ledger",
    )
    add_signing_option(parser)
    parser.add_argument(
        "--timeout",
        metavar="S",
        type=positive_seconds,
        default=60.0,
        help="seconds a tool handler may run before its call is answered as timed out (default 60)",
    )
    add_journal_option(parser)
    parser.add_argument("--save", metavar="FILE", help=save_help)
    parser.add_argument(
        "--proto",
        action="store_true",
        help="ask for the binary binding (HTTP + protobuf); SSE is still read if the agent "
        "answers with it",
    )
    parser.add_argument(
        "--resumable",
        action="store_true",
        help="opt in to resumable runs (docs/resumable.md): a cut connection is rejoined "
        "where it left off, Ctrl-C asks the agent to stop the run; an agent without the "
        "extension is read as usual",
    )
    add_http_options(parser)


def add_signing_option(parser: argparse.ArgumentParser) -> None:
    """``--signing-key PEM``: the decisions made here travel with signed receipts."""
    parser.add_argument(
        "--signing-key",
        metavar="PEM",
        help="sign each decision with this Ed25519 private key (PKCS 8 PEM): the answer "
        "carries a receipt the agent can verify (docs/receipts.md)",
    )


def signer_from(path: str | None) -> Signer | None:
    """The ``--signing-key`` file's signer (``None``: not given); ``UsageError`` saying
    why the file is no usable key — unreadable, not PEM, not Ed25519, no cryptography."""
    if path is None:
        return None
    from .._errors import UsageError
    from ..app._receipts import Signer

    try:
        return Signer.from_pem_file(path)
    except OSError as exc:
        raise UsageError(f"cannot read --signing-key {path}: {exc.strerror or exc}") from None
    except UsageError as exc:
        raise UsageError(f"--signing-key {path}: {exc}") from None


def load_tools(session: Any, module_name: str) -> None:
    """Register the tools of ``module_name``: its ``register(session)`` or its ``TOOLS``."""
    from ..transport._session import tool_spec_from_function

    if "" not in sys.path:
        sys.path.insert(0, "")
    module = importlib.import_module(module_name)
    if callable(getattr(module, "register", None)):
        module.register(session)
        return
    if not hasattr(module, "TOOLS"):
        raise ValueError(f"{module_name!r} defines neither register(session) nor a TOOLS list")
    tools = module.TOOLS
    if not isinstance(tools, (list, tuple)):
        raise ValueError(
            f"{module_name!r}.TOOLS is not a list (its type is {type(tools).__name__}): give a "
            "list of typed functions, or (function, options) pairs"
        )
    for entry in tools:
        fn, options = entry if isinstance(entry, tuple) else (entry, {})
        spec, handler = tool_spec_from_function(fn, **options)
        session.add_tool(spec, handler)


def _module_hint(name: str) -> str:
    """What to type instead, when ``--tools`` was given a file name."""
    path = Path(name)
    if name.endswith(".py") or "/" in name:
        stem = path.stem if path.suffix == ".py" else path.name
        where = "" if path.parent == Path() else f" from {path.parent} (or add it to PYTHONPATH)"
        return f" — --tools takes a module name, not a file: run --tools {stem}{where}"
    return ""


@dataclass
class Driver:
    """A session ready to send, with what the command needs around it."""

    command: str
    args: argparse.Namespace
    console: Console
    ui: TerminalUI
    session: Session
    http: httpx.AsyncClient
    recorder: Recorder
    journal: Journal | None
    sink: IO[bytes] | None
    resumed: list[dict[str, Any]] = field(default_factory=list)
    """The resume entries sent so far (``run --json`` reports them)."""
    stop_said: str = ""
    """What became of Ctrl-C's stop request, for the command's last line ("" when none
    was sent): whether the run goes on on the agent is what the user must know."""

    async def aclose(self) -> None:
        await self.http.aclose()

    async def stop_run(self) -> None:
        """Ask the agent to stop the resumable run in flight (Ctrl-C: RESUME-6), within
        a few seconds; a failure is only logged — the command is ending anyway."""
        import asyncio

        from ..transport._client import TransportError

        current = self.session.client.current
        run = f"run {current.run_id!r}" if current is not None else "the run"
        try:
            async with asyncio.timeout(_STOP_WAIT):
                answer = await self.session.stop()
        except (TransportError, TimeoutError) as exc:
            log.info("the stop request was not answered: %s", exc)
            why = str(exc) or f"no answer within {_STOP_WAIT:g} s"
            self.stop_said = f"the agent did not take the stop, {run} may go on ({why})"
            return
        if answer == "stopping":
            self.stop_said = f"the agent was asked to stop {run}: it ends cancelled"
        elif answer == "finished":
            self.stop_said = f"{run} had already ended on the agent"

    async def stopping_on_cancel(self, work: Awaitable[T]) -> T:
        """``work``, and the stop request when it is cancelled (Ctrl-C in asyncio.run)."""
        import asyncio

        try:
            return await work
        except asyncio.CancelledError:
            await self.stop_run()
            raise

    def close(self) -> None:
        """Release the files (the journal, the ``--save`` capture): all recorded is kept."""
        from ._common import WriteFailed

        failed: OSError | None = None
        if self.sink is not None:
            try:
                self.sink.close()
            except OSError as exc:  # a full disk: the last buffered bytes did not fit
                failed = exc
        close = getattr(self.journal, "close", None)
        if close is not None:
            close()
        if failed is not None:
            raise WriteFailed(
                f"cannot write --save {self.args.save}: {failed.strerror or failed}; the "
                "capture is incomplete"
            ) from None


def named(answer: Callable[[Any], Any], principal_id: str | None) -> Callable[[Any], Any]:
    """``answer`` (the consent or interrupt answer), each person's answer it gives named
    ``--principal`` ID — unauthenticated: whoever types at this terminal says who they are.
    An answer nobody gave (``by="system"``) stays nobody's."""
    if principal_id is None:
        return answer
    from ..app._consent import Principal
    from ..app._interrupts import Resolution
    from ..transport._approvals import Approval

    principal = Principal(principal_id)

    def given(subject: Any) -> Any:
        reply = answer(subject)
        if isinstance(reply, Approval) and reply.decided_by == "user" and reply.principal is None:
            return dataclasses.replace(reply, principal=principal)
        if isinstance(reply, Resolution) and reply.resolved and reply.principal is None:
            return dataclasses.replace(reply, principal=principal)
        return reply

    return given


def prepare(args: argparse.Namespace, command: str, console: Console) -> Driver | int:
    """The :class:`Driver` for ``args`` — or an exit code, after saying in one line why not."""
    import httpx

    from .._text import one_line
    from ..transport._client import AgentClient
    from ..transport._session import Session
    from ..ui.terminal import TerminalUI
    from ._answers import flag_answers

    def usage(message: str) -> int:
        print(one_line(f"agui-tools {command}: {message}"), file=sys.stderr)
        return 2

    problem = check_url(args.url)
    if problem is not None:
        return usage(problem)
    ok, decide = flag_answers(args, command)
    if not ok:
        return 2
    from .._errors import UsageError

    try:
        signer = signer_from(args.signing_key)
    except UsageError as exc:
        return usage(str(exc))
    store_path = getattr(args, "store", None)  # chat only: the thread kept between runs
    thread_id = getattr(args, "thread", None)
    if thread_id is not None and store_path is None:
        return usage("--thread ID needs --store FILE: the thread is restored from it")
    if store_path is not None and args.journal:
        return usage("give --store FILE (the whole thread) or --journal FILE, not both")
    ok, journal = open_journal(args, command)
    if not ok:
        return 2
    store = None
    if store_path is not None:
        from .._errors import JournalError
        from ..app._store_sqlite import SQLiteStore

        try:
            store = SQLiteStore(store_path)
        except JournalError as exc:
            return usage(f"cannot open --store {store_path}: {exc}")
        if thread_id is None:
            import uuid

            thread_id = f"{command}-{uuid.uuid4().hex[:12]}"
        args.thread = thread_id
    sink: IO[bytes] | None = None
    if args.save:
        try:
            sink = open(args.save, "wb")  # noqa: SIM115 - closed by Driver.close()
        except OSError as exc:
            return usage(f"cannot write --save {args.save}: {exc.strerror or exc}")
    ui = TerminalUI(console)
    recorder = Recorder(sink)
    timeout = httpx.Timeout(
        connect=args.connect_timeout, read=args.read_timeout, write=30.0, pool=10.0
    )
    http = httpx.AsyncClient(timeout=timeout, transport=recorder.transport())
    client = AgentClient(
        args.url,
        http=http,
        headers=dict(args.headers),
        transport="proto" if args.proto else "sse",
        resumable=args.resumable,
    )
    session = Session(
        client,
        ask=named(ui.consent(decide), args.principal),
        on_interrupt=named(ui.interrupt_handler(decide), args.principal),
        timeout=args.timeout,
        store=store if store is not None else journal,
        thread_id=thread_id,
        signer=signer,
    )
    driver = Driver(command, args, console, ui, session, http, recorder, store or journal, sink)
    if args.tools:
        try:
            load_tools(session, args.tools)
        except Exception as exc:  # the module's own code runs here: any failure is bad usage
            driver.close()
            return usage(
                f"cannot load --tools {args.tools}: {describe_exception(exc)}"
                + _module_hint(args.tools)
            )
    return driver
