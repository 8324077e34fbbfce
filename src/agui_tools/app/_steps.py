"""The one step language of agui-tools, and its one pair of drivers.

What waits on the outside (a store call, a query, a pause, a user's answer) is a generator
that yields each step and is sent its result; it does no I/O. :func:`drive` performs steps
with plain calls, :func:`adrive` awaits them — so a sync and an async face differ only in
how they wait (h11's habit, applied to storage). Each reader gives the driver one ``perform``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

__all__ = ["Pause", "Steps", "StoreMethod", "StoreOp", "StoreSteps", "adrive", "ask", "drive"]

S = TypeVar("S")
T = TypeVar("T")

Steps = Generator[S, Any, T]
"""``Steps[StepType, Result]``: a generator that yields steps, is sent each one's
result, and returns ``Result``."""


@dataclass(frozen=True, slots=True)
class Pause:
    """A step that waits ``seconds`` (for another process's answer, for a server that
    is starting): the sync driver sleeps, the async driver ``await``s a sleep."""

    seconds: float


StoreMethod = Literal[
    "claim",
    "finish",
    "settle",
    "lookup",
    "answer_for",
    "record_decision",
    "decisions",
    "load",
    "save_run",
]
"""The methods of the journal/store contract a conversation may ask for — the
names of :class:`~agui_tools.app._store.Store`'s methods (and, awaited, of
:class:`~agui_tools.app._store.AsyncStore`'s), checked by the type checker."""

_WRITES: frozenset[str] = frozenset({"claim", "finish", "settle", "record_decision", "save_run"})


@dataclass(frozen=True, slots=True)
class StoreOp:
    """One thing a conversation needs of its journal or store: a method and its arguments."""

    method: StoreMethod
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def writes(self) -> bool:
        """Whether the operation writes (a failure of it may leave something written)."""
        return self.method in _WRITES

    def call(self, store: Any) -> Any:
        """Perform it on a synchronous store (or obtain the coroutine of an async one)."""
        return getattr(store, self.method)(*self.args, **self.kwargs)


StoreSteps = Generator[StoreOp | Pause, Any, T]
"""``StoreSteps[Result]``: what a conversation asks of its journal or store (and the
pauses between), returning ``Result``; app/_store_drive.py performs them."""


def ask(method: StoreMethod, *args: Any, **kwargs: Any) -> Generator[StoreOp, Any, Any]:
    """``result = yield from ask("claim", key, tool=name)``: one store call."""
    return (yield StoreOp(method, args, kwargs))


def drive(steps: Generator[S | Pause, Any, T], perform: Callable[[S], Any]) -> T:
    """Run ``steps`` to their end, performing each with ``perform`` (a plain call).

    A step's exception — a ``BaseException`` too — is thrown into the steps where
    they asked, so they decide what it means; what they do not catch ends the run.
    """
    reply: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.send(reply) if error is None else steps.throw(error)
        except StopIteration as done:
            result: T = done.value
            return result
        try:
            if isinstance(step, Pause):
                time.sleep(step.seconds)
                reply = None
            else:
                reply = perform(step)
            error = None
        except BaseException as exc:  # thrown in where it was asked: the steps decide
            reply, error = None, exc


async def adrive(steps: Generator[S | Pause, Any, T], perform: Callable[[S], Awaitable[Any]]) -> T:
    """:func:`drive` for async code: each step's ``perform`` is awaited, a
    :class:`Pause` is an ``asyncio.sleep``; a cancellation is thrown in where it
    struck, like any other exception."""
    reply: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.send(reply) if error is None else steps.throw(error)
        except StopIteration as done:
            result: T = done.value
            return result
        try:
            if isinstance(step, Pause):
                await asyncio.sleep(step.seconds)
                reply = None
            else:
                reply = await perform(step)
            error = None
        except BaseException as exc:
            reply, error = None, exc
