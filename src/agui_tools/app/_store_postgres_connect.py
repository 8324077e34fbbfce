"""The PostgreSQL stores' connections: opening, checking, and what a failure says.

Opening makes one direct attempt before any pool opens, so a wrong connection
string says why at once; a pool's connection is checked before it is handed
out; and every psycopg failure is mapped to one :class:`~agui_tools.StoreError`
subclass with a message naming the server (never its password) and advice —
the same words for the sync and the async store.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from .._errors import (
    StoreError,
    StoreOutcomeUnknown,
    StoreReadFailed,
    StoreWriteFailed,
    UsageError,
)
from ._steps import Pause, adrive, drive

_POOL_NAME = "agui-tools-store"


# -- opening: one direct attempt first, so a wrong connection string says why, at once -----


@dataclass(frozen=True, slots=True)
class Attempt:
    """Connect once, directly (not through the pool), giving up after ``connect_timeout`` s."""

    connect_timeout: int


Opening = Generator[Attempt | Pause, "BaseException | None", None]
"""Yields attempts and pauses; sent each attempt's error (``None``: it connected)."""

_NEVER_RETRY = re.compile(
    r"does not exist|authentication failed|no pg_hba\.conf entry|no password supplied"
    r"|permission denied for database|invalid .*(option|value)",
    re.IGNORECASE,
)
"""What libpq says when the connection string itself is wrong: retrying cannot fix it
(libpq reports connection failures without an SQLSTATE, so the text is all there is)."""


def opening_plan(conninfo: str, timeout: float) -> Opening:
    """Before a pool opens: the connection string must parse, and one direct connection
    must succeed — a pool retries silently until its timeout, then says only
    ``PoolTimeout``. A wrong database, role, password or option fails at once with
    libpq's reason; a server not (yet) accepting connections is retried until
    ``timeout`` and then named with its last reason."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(conninfo)
        for port in str(parts.get("port") or "5432").split(","):
            if port and not port.strip().isdigit():  # else psycopg retries a "host" lookup
                raise psycopg.ProgrammingError(
                    f'invalid integer value "{port}" for connection option "port"'
                )
    except Exception as exc:
        raise _unreachable(conninfo, exc, permanent=True) from None
    deadline = time.monotonic() + timeout
    pause = 0.1
    while True:
        left = deadline - time.monotonic()
        error = yield Attempt(max(2, math.ceil(left)))  # libpq's minimum is 2 s
        if error is None:
            return
        if _never_retry(error):
            raise _unreachable(conninfo, error, permanent=True) from None
        left = deadline - time.monotonic()
        if left <= 0:
            raise _unreachable(conninfo, error, permanent=False) from None
        yield Pause(min(pause, left))
        pause = min(pause * 2, 1.0)


def _never_retry(exc: BaseException) -> bool:
    import psycopg

    return isinstance(exc, psycopg.ProgrammingError) or bool(_NEVER_RETRY.search(str(exc)))


def _probe(conninfo: str, timeout: float) -> None:
    """Run :func:`opening_plan` with blocking connections and sleeps."""
    import psycopg

    def attempt(step: Attempt) -> BaseException | None:
        try:
            psycopg.connect(conninfo, connect_timeout=step.connect_timeout).close()
        except psycopg.Error as exc:
            return exc  # sent to the plan, which decides whether to try again
        return None

    drive(opening_plan(conninfo, timeout), attempt)


async def _aprobe(conninfo: str, timeout: float) -> None:
    """Run :func:`opening_plan` awaiting, never blocking the event loop."""
    import psycopg

    async def attempt(step: Attempt) -> BaseException | None:
        try:
            conn = await psycopg.AsyncConnection.connect(
                conninfo, connect_timeout=step.connect_timeout
            )
            await conn.close()
        except psycopg.Error as exc:
            return exc
        return None

    await adrive(opening_plan(conninfo, timeout), attempt)


# -- what a failure says, for both stores ---------------------------------------------------


def _unreachable(conninfo: str, exc: BaseException, *, permanent: bool = False) -> StoreError:
    import psycopg

    reason = _reason(exc, conninfo)
    if isinstance(exc, psycopg.ProgrammingError) or _where(conninfo) == _UNREADABLE:
        advice = (
            "the connection string does not parse: write `key=value` pairs "
            "(host=… dbname=… user=…) or a postgresql://user@host/dbname URL"
        )
    elif permanent:
        advice = "check the connection string (database, user, password): retrying cannot fix this"
    else:
        advice = (
            "is the server running? Check that it runs and accepts connections there, "
            "and that the connection string is right"
        )
    return StoreError(
        f"cannot connect to the PostgreSQL store ({_where(conninfo)}): {reason}; {advice}"
    )


def _require_driver(store: str) -> None:
    """psycopg and psycopg_pool are an extra: without them, say how to get them."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise UsageError(
            f"{store} needs psycopg 3 and psycopg_pool ({exc}): install them with "
            "pip install 'agui-tools[postgres]'"
        ) from None


def _failed(conninfo: str, what: str, exc: Exception, *, writes: bool) -> StoreError | None:
    """A database or pool failure during ``what`` as the StoreError a user reads;
    ``None`` for anything else (the operation's own errors pass through).

    The pool's errors first: ``PoolTimeout`` is a ``psycopg.OperationalError`` too,
    but nothing was sent — no connection was had, so nothing was lost."""
    import psycopg
    from psycopg_pool import PoolClosed, PoolTimeout

    where = f"the PostgreSQL store ({_where(conninfo)}) could not {what}"
    nothing: type[StoreError] = StoreWriteFailed if writes else StoreReadFailed
    if isinstance(exc, PoolTimeout | PoolClosed):
        return nothing(
            f"{where}: {_reason(exc, conninfo)} — no connection could be had within the "
            "store's timeout (is the server up? is max_size large enough for this "
            "process's concurrency?); nothing of this operation was sent",
            operation=what,
        )
    if isinstance(exc, psycopg.Error):
        from psycopg.errors import LockNotAvailable, QueryCanceled

        lost = isinstance(exc, psycopg.OperationalError) and not isinstance(
            exc, LockNotAvailable | QueryCanceled
        )
        kind = StoreOutcomeUnknown if writes and lost else nothing
        return kind(
            f"{where}: {_reason(exc, conninfo)}{_advice(exc, writes=writes)}", operation=what
        )
    return None


def _heard_from_server(conn: Any) -> bool:
    """Whether an idle pooled connection has something to read — or is closed.

    An idle connection of ours is sent nothing (no LISTEN, no query in flight):
    if its socket is readable, the server spoke while we were away — it closed
    it (a restart, ``pg_terminate_backend``, an idle timeout) or sent the notice
    that precedes closing. One non-blocking ``select`` answers, with no round
    trip to the server.
    """
    import select

    if conn.closed:
        return True
    try:
        fd = conn.pgconn.socket
    except Exception:  # no socket: a broken connection
        return True
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


def _check(conn: Any) -> None:
    """The pool's check before it hands a connection out: a round trip to the server
    (psycopg_pool's ``check_connection``) only when the connection heard from the
    server while idle — the liveness check a pooled checkout cost on every store
    call, now paid where it can find something. A server restart still costs the
    calls in flight, not the pool: the restart closes every socket, which reads."""
    from psycopg_pool import ConnectionPool

    if _heard_from_server(conn):
        ConnectionPool.check_connection(conn)  # raises for a dead one: the pool discards it


async def _acheck(conn: Any) -> None:
    """:func:`_check` for the async pool."""
    from psycopg_pool import AsyncConnectionPool

    if _heard_from_server(conn):
        await AsyncConnectionPool.check_connection(conn)


def _pool_options(min_size: int, max_size: int, timeout: float) -> dict[str, Any]:
    """What both pools are built with (each adds its own ``check_connection``, so a
    connection is checked before it is handed out): autocommit, opened explicitly."""
    return {
        "min_size": min_size,
        "max_size": max_size,
        "timeout": timeout,
        "kwargs": {"autocommit": True},
        "open": False,
        "name": _POOL_NAME,
    }


_UNREADABLE = "connection string unreadable"


def _where(conninfo: str) -> str:
    """The server a connection string names, without its password."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(conninfo)
    except Exception:
        return _UNREADABLE
    host = parts.get("host") or "localhost"
    port = parts.get("port") or "5432"
    db = parts.get("dbname") or parts.get("user") or ""
    return f"{host}:{port}/{db}"


_SECRETS = (
    re.compile(r"password\W*('(?:[^'\\]|\\.)*'|[^\s']+)", re.IGNORECASE),  # key=value
    re.compile(r"://[^:/@\s]*:([^@\s]+)@"),  # postgresql://user:password@host
)


def _scrub(text: str, conninfo: str) -> str:
    """``text`` without any password ``conninfo`` may hold (even one that does not parse)."""
    secrets: set[str] = set()
    try:
        from psycopg.conninfo import conninfo_to_dict

        password = conninfo_to_dict(conninfo).get("password")
        if password:
            secrets.add(str(password))
    except Exception:
        pass
    for pattern in _SECRETS:
        secrets.update(m.group(1).strip("'") for m in pattern.finditer(conninfo))
    for secret in sorted(secrets - {""}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def _reason(exc: BaseException, conninfo: str) -> str:
    text = str(exc).strip().splitlines()
    return _scrub(f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": "), conninfo)


def _advice(exc: BaseException, *, writes: bool) -> str:
    from psycopg import OperationalError
    from psycopg.errors import LockNotAvailable, QueryCanceled, UndefinedTable

    if isinstance(exc, LockNotAvailable | QueryCanceled):
        return (
            " — it waited longer than the server allows (lock_timeout or statement_timeout) "
            "for another transaction; nothing of this operation was written: retry"
        )
    if isinstance(exc, UndefinedTable):
        return (
            " — the store's tables are not in this database (or not on the connection's "
            "search_path): run `store.migrate()` from the deploy step, or open the store "
            "with migrate=True (the default)"
        )
    if isinstance(exc, OperationalError) and writes:
        return (
            " — the connection to the server was lost or refused; whether the last write "
            "committed is unknown to this process, so a call it was claiming reads as "
            "'outcome unknown' and is never run twice"
        )
    if isinstance(exc, OperationalError):
        return (
            " — the connection to the server was lost during this read; nothing was "
            "written: retry (the pool replaces the connection)"
        )
    return ""
