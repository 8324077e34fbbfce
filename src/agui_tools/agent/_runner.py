"""Driving a run: an agent function, run to exactly one terminal event.

:func:`drive` starts the run, hands the agent its :class:`~agui_tools.agent._run.Run`
and decides how the run ends; :func:`collect` does the same with no transport
and returns the events (tests, and transports that want the whole run).

How a run can end (``events/lifecycle``):

=====================  ==================================  ===============================
what happened          what is emitted                     what is open is…
=====================  ==================================  ===============================
the agent returned     ``RUN_FINISHED`` (success)          refused if still live (a bug);
                                                           abandoned items are closed
``RunCancelled``       ``RUN_FINISHED`` cancelled (RUN-5)  closed, in reverse order (RUN-6)
``RunInterrupted``     ``RUN_FINISHED`` interrupt          closed; subagents ``suspended``
an exception           ``RUN_ERROR`` (RUN-10)              abandoned — no closes (RUN-15)
client disconnected    nothing: nobody is listening        the agent task is cancelled
=====================  ==================================  ===============================
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson

from .. import _telemetry
from .._errors import UsageError
from ..wire._kinds import WireEvent
from ._channel import EventChannel
from ._emitter import Emitter
from ._run import Run, RunCancelled, RunInterrupted, RunStop, stop_in

__all__ = ["Agent", "collect", "drive", "start"]

# the producer side logs as one, whichever of its modules speaks
log = logging.getLogger("agui_tools.agent")


Agent = Callable[[Run], Awaitable[object]]
"""An agent: an async function handed the :class:`Run`. Its return value is ignored
(use :meth:`Run.set_result`), so ``return await run.text(...)`` cannot leak an id."""


def start(
    run_input: Mapping[str, Any], channel: EventChannel, *, verify: bool = True
) -> Emitter | None:
    """Push ``RUN_STARTED`` now, in the caller's task, and return the run's emitter for
    :func:`drive` (``started=``) — ``None`` if it cannot be made, and ``drive`` then
    reports why as it always does.

    A server calls it before it starts the agent's task, so a run's first event is
    written right after its headers, without waiting for that task's first turn and
    the writer's next one behind every other stream's events.
    """
    try:
        emitter = Emitter(run_input, verify=verify)
        channel.push(emitter.start())
    except Exception:
        return None
    return emitter


async def drive(
    agent: Agent,
    run_input: Mapping[str, Any],
    channel: EventChannel,
    *,
    verify: bool = True,
    expose_errors: bool = False,
    started: Emitter | None = None,
) -> None:
    """Run ``agent`` for ``run_input`` and push its events, ending with one terminal event.

    Returning is success; ``RunCancelled`` (or a cancelled awaited task) cancelled;
    ``RunInterrupted`` interrupt; any other exception ``RUN_ERROR`` with the class name as
    ``code`` and its text only with ``expose_errors``. If *this* task is cancelled (the client
    left), nothing more is pushed. The channel is always closed.
    ``started``: the emitter :func:`start` returned (its ``RUN_STARTED`` already pushed).
    """
    with _telemetry.agent_run(run_input) as span:
        try:
            await _drive(
                agent,
                run_input,
                channel,
                verify=verify,
                expose_errors=expose_errors,
                started=started,
            )
        finally:
            _telemetry.agent_ended(span, channel)


async def _drive(
    agent: Agent,
    run_input: Mapping[str, Any],
    channel: EventChannel,
    *,
    verify: bool,
    expose_errors: bool,
    started: Emitter | None,
) -> None:
    try:
        emitter = started
        if emitter is None:
            emitter = Emitter(run_input, verify=verify)
            channel.push(emitter.start())
        run = Run(emitter, channel)
        try:
            await agent(run)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            log.info(
                "run %s: a task the agent awaited was cancelled; ending the run cancelled",
                run.run_id,
            )
            channel.push(_end(emitter, run, RunCancelled("a task the agent awaited was cancelled")))
        except BaseException as exc:
            stop = stop_in(exc)  # a refusal was recorded by the emitter as it was made
            if stop is not None:
                channel.push(_end(emitter, run, stop))
            else:
                log.error("run %s: the agent failed", run.run_id, exc_info=exc)
                detail = f": {exc}" if expose_errors else ""
                message = f"the agent failed ({type(exc).__name__}){detail}"
                channel.push(_fail(emitter, run, message, type(exc).__name__))
                if not isinstance(exc, Exception | BaseExceptionGroup):
                    raise  # KeyboardInterrupt, SystemExit: reported, and still not ours to swallow
        else:
            channel.push(_end(emitter, run, None))
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("run %s: internal error in the producer", run_input.get("runId"))
        if channel.ended_with != "RUN_ERROR":
            channel.push([_internal_error()])
    finally:
        channel.close()


def _end(emitter: Emitter, run: Run, stop: RunStop | None) -> list[WireEvent]:
    """The clean ending for ``stop`` — or ``RUN_ERROR`` if the run cannot end cleanly."""
    try:
        if isinstance(stop, RunCancelled):
            log.info("run %s cancelled: %s", run.run_id, stop.reason or "no reason given")
            return emitter.cancel(usage=run._usage)
        if isinstance(stop, RunInterrupted):
            return emitter.interrupt(stop.interrupts, usage=run._usage)
        return emitter.finish(result=run._result, usage=run._usage)
    except UsageError as exc:  # recorded by the emitter as it was made
        log.error("run %s cannot end cleanly: %s", run.run_id, exc)
        return _fail(emitter, run, f"the agent broke a protocol rule ({exc.rule})", "UsageError")


def _fail(emitter: Emitter, run: Run, message: str, code: str) -> list[WireEvent]:
    try:
        return emitter.error(message, code=code, usage=run._usage)
    except UsageError:
        return emitter.error(message, code=code)  # e.g. malformed usage entries


def _internal_error() -> WireEvent:
    return {
        "type": "RUN_ERROR",
        "message": "internal error in the agent server",
        "code": "InternalError",
    }


async def collect(
    agent: Agent,
    run_input: Mapping[str, Any],
    *,
    verify: bool = True,
    expose_errors: bool = False,
) -> list[WireEvent]:
    """Run ``agent`` with no transport and return every event it emitted.

    For tests and for transports that want the whole run at once.
    """
    channel = EventChannel(high_water=None)
    await drive(agent, run_input, channel, verify=verify, expose_errors=expose_errors)
    return [orjson.loads(payload) for payload in channel.take()]
