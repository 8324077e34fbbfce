"""A tool's blocking handler, run where a deadline can hold while it hangs: a daemon
thread of its own (the async face awaits it; an ``async def`` handler called from
the sync face is run to its end in that thread's own event loop)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import threading
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["complete", "deadline_passed", "in_daemon_thread"]


def deadline_passed(timeout: float) -> TimeoutError:
    return TimeoutError(f"the handler did not finish within {timeout:g} s; its outcome is unknown")


def complete(handler: Callable[[dict[str, Any]], Any], arguments: dict[str, Any]) -> Any:
    """Call a handler; an awaitable it returns (an ``async def`` tool) is run to its end."""
    result = handler(arguments)
    if inspect.isawaitable(result):
        return asyncio.run(_awaited(result))
    return result


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


async def in_daemon_thread(fn: Callable[[dict[str, Any]], Any], arguments: dict[str, Any]) -> Any:
    """Run a blocking handler in a daemon thread of its own and await its result: in the
    loop's executor a handler outliving its timeout would hold the interpreter's exit. The call
    is already answered "outcome unknown", its intent journaled.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(error: BaseException | None, value: Any) -> None:
        if future.done():  # timed out or cancelled meanwhile: nobody waits for it
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def work() -> None:
        try:
            value = fn(arguments)
        except BaseException as exc:  # handed to the awaiting task, which judges it
            outcome: tuple[BaseException | None, Any] = (exc, None)
        else:
            outcome = (None, value)
        with contextlib.suppress(RuntimeError):  # the loop closed while the handler ran
            loop.call_soon_threadsafe(settle, *outcome)

    name = getattr(getattr(fn, "func", fn), "__name__", "handler")  # a partial: its function
    # in a copy of the awaiting task's context: the handler's spans nest under its
    # execute_tool span, its contextvars read as the task's
    runner = contextvars.copy_context().run
    threading.Thread(target=runner, args=(work,), name=f"agui-tool-{name}", daemon=True).start()
    return await future
