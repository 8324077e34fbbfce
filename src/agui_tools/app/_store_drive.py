"""The store steps of a conversation, performed: the one place a conversation's
journal or store is called.

:class:`~agui_tools.app._conversation.Conversation` writes what it needs of its
journal or store as steps (:class:`~agui_tools.app._steps.StoreOp`, app/_steps.py)
and never performs them; :func:`drive_store` performs them on a synchronous
journal or store, :func:`adrive_store` without blocking the event loop (awaiting an
async store, or a synchronous one that may wait in a worker thread). Both first ask
the conversation's :class:`~agui_tools.app._link.Link` whether the operation may
go on, and a failed store call moves the link out of step (app/_link.py).
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from .. import _telemetry
from .._errors import StoreError, UsageError
from ._journal import Journal
from ._link import Link, Operation
from ._steps import StoreOp, StoreSteps, adrive, drive
from ._store import AsyncStore, is_async_store

__all__ = ["adrive_store", "drive_store"]

T = TypeVar("T")


def _decided(op: StoreOp, result: Any) -> None:
    """A decision recorded (its ledger entry with it): a span event (app/_ledger.py).
    A settle that found the call answered already recorded nothing."""
    if op.method == "record_decision":
        _telemetry.decided(op.args[0])
    elif (
        op.method == "settle"
        and op.kwargs.get("decision") is not None
        and getattr(result, "answer", None) == dict(op.args[1])
    ):
        _telemetry.decided(op.kwargs["decision"])


def _checked(link: Link, operation: Operation | None, steps: StoreSteps[Any]) -> None:
    """``operation`` checked against the link (``None``: recording an execution's
    answer, which is always right to attempt — the side effect happened)."""
    if operation is not None:
        try:
            link.check(operation)
        except BaseException:
            steps.close()
            raise


def drive_store(
    journal: Journal | AsyncStore, link: Link, operation: Operation | None, steps: StoreSteps[T]
) -> T:
    """Perform ``steps`` on a synchronous journal or store; a store call that fails
    moves ``link`` out of step."""
    if is_async_store(journal):
        steps.close()
        raise UsageError(
            f"this conversation keeps its thread in an async store "
            f"({type(journal).__name__}): drive it from async code with AsyncDriver "
            "(await AsyncDriver(conversation).end_run(), .restore(), .approve(), "
            ".decline(), .fail(), .execute()) — or use Session, which does; synchronous "
            "code (Driver, SyncSession) uses PostgresStore or SQLiteStore"
        )
    _checked(link, operation, steps)

    def perform(op: StoreOp) -> Any:
        try:
            with _telemetry.store_op(op.method, op.writes):  # a span; no I/O here
                result = op.call(journal)
                _decided(op, result)
                return result
        except BaseException as exc:
            link.failed(exc, writes=op.writes)
            raise

    try:
        return drive(steps, perform)
    except StoreError as exc:  # raised by the steps themselves (a thread that is not JSON)
        link.failed(exc)
        raise


async def adrive_store(
    journal: Journal | AsyncStore, link: Link, operation: Operation | None, steps: StoreSteps[T]
) -> T:
    """Perform ``steps`` without blocking the event loop: awaiting an async store's
    coroutines, or driving a synchronous store in a worker thread when it may wait
    (inline when it never does)."""
    if not is_async_store(journal):
        if getattr(journal, "blocking", True):
            return await asyncio.to_thread(drive_store, journal, link, operation, steps)
        return drive_store(journal, link, operation, steps)
    _checked(link, operation, steps)

    async def perform(op: StoreOp) -> Any:
        try:
            with _telemetry.store_op(op.method, op.writes):  # a span; no I/O here
                result = await op.call(journal)
                _decided(op, result)
                return result
        except BaseException as exc:  # a cancellation too: the outcome of a write is unknown
            link.failed(exc, writes=op.writes)
            raise

    try:
        return await adrive(steps, perform)
    except StoreError as exc:
        link.failed(exc)
        raise
