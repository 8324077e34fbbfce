"""Who may talk to a server: the ``Host`` names it answers, and an authorization hook.

**Host names.** A rebound DNS name makes a hostile page same-origin to a loopback server,
but it cannot choose the ``Host`` the browser sends. :class:`HostPolicy` answers only
``localhost`` (and ``*.localhost``), IP literals, the bound name and the operator's names
(``"*"``: any).

**The hook** (``agent_app(…, authorize=…)``) sees the request before its body is read and
answers ``None`` to pass, a :class:`~agui_tools.app.Principal` to pass as that identity, or a
``Response`` to refuse; an ``HTTPException`` refuses with its status; any other failure is a
500 — a bug never lets a request through. The identity is kept in the request's scope
(:func:`principal_of`): a resumable run is bound to who started it (docs/resumable.md).
"""

from __future__ import annotations

import inspect
import ipaddress
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Final

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ..app import Principal

__all__ = ["LOOPBACK_NAMES", "Authorize", "Authorized", "HostPolicy", "principal_of"]

log = logging.getLogger("agui_tools.server")

LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "::1")
WILDCARD_ADDRESSES: Final = ("0.0.0.0", "::", "")


def host_name(header: str) -> str | None:
    """The name in a ``Host`` header — lower case, without port, brackets or a
    final dot — or ``None`` when it is not ``name[:port]`` / ``[v6]:port``."""
    value = header.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        name, rest = value[1:end], value[end + 1 :]
        if end < 0 or (rest and not (rest[0] == ":" and rest[1:].isdigit())):
            return None
        try:
            ipaddress.IPv6Address(name)
        except ValueError:
            return None
        return name
    name, colon, port = value.partition(":")
    if not name or (colon and not port.isdigit()) or any(c in name for c in "/\\@ \t"):
        return None
    return name.rstrip(".")


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostPolicy:
    """The ``Host`` names a server answers.

    Args:
        allowed: extra names: ``"agent.example"``, ``".corp.example"`` (and below), ``"*"``.
        bound: the listening address; a name (not a wildcard or address) is allowed too.
    """

    def __init__(self, allowed: Iterable[str] = (), *, bound: str | None = None) -> None:
        names = {n.strip().lower().rstrip(".") for n in allowed}
        if bound is not None and bound not in WILDCARD_ADDRESSES:
            names.add(bound.strip("[]").lower().rstrip("."))
        self.any = "*" in names
        self.names = frozenset(n for n in names if n and not n.startswith("."))
        self.suffixes = tuple(n for n in names if n.startswith(".") and len(n) > 1)

    def allows(self, header: str | None) -> bool:
        """Whether a request with this ``Host`` header is answered. No header (HTTP/1.0)
        is no browser: browsers always send one."""
        if self.any or header is None:
            return True
        name = host_name(header)
        if name is None:
            return False
        return (
            name == "localhost"
            or name.endswith(".localhost")
            or _is_address(name)
            or name in self.names
            or any(name.endswith(s) or name == s[1:] for s in self.suffixes)
        )

    def problem(self, header: str | None) -> str | None:
        """Why a request with this ``Host`` is refused (``None``: it is not)."""
        if self.allows(header):
            return None
        shown = repr(header[:200]) if header is not None else "(none)"
        return (
            f"Host {shown} is not a name this server answers (a DNS-rebinding page sends its "
            "own): list the names it is reached by in allowed_hosts (--allow-host)"
        )


Authorize = Callable[
    [Request], Awaitable[Response | Principal | None] | Response | Principal | None
]
"""``authorize(request)``: ``None`` lets the request through, a ``Principal`` lets it
through as that identity; a ``Response`` refuses it."""

_PRINCIPAL = "agui.principal"
"""The scope key the hook's identity is kept under, for the app behind it."""


def principal_of(scope: Scope) -> Principal | None:
    """The identity the authorization hook named for this request (``None``: no hook,
    or one that only said yes)."""
    principal = scope.get(_PRINCIPAL)
    return principal if isinstance(principal, Principal) else None


class Authorized:
    """The ASGI app ``app`` behind the hook ``authorize``."""

    def __init__(self, app: ASGIApp, authorize: Authorize) -> None:
        self.app = app
        self.authorize = authorize

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            verdict = await self._judge(Request(scope))  # no receive: the body stays unread
            if isinstance(verdict, Response):
                await verdict(scope, receive, send)
                return
            scope[_PRINCIPAL] = verdict  # never one a client sent: set or cleared here
        await self.app(scope, receive, send)

    async def _judge(self, request: Request) -> Response | Principal | None:
        try:
            verdict = self.authorize(request)
            if inspect.isawaitable(verdict):
                verdict = await verdict
        except HTTPException as exc:
            return JSONResponse(
                {"error": {"message": exc.detail}}, status_code=exc.status_code, headers=exc.headers
            )
        except Exception:
            log.exception("the authorization hook failed; the request is refused")
            return JSONResponse(
                {"error": {"message": "the request could not be authorised (server error)."}},
                status_code=500,
            )
        if verdict is not None and not isinstance(verdict, (Response, Principal)):
            log.error(
                "the authorization hook returned %r, not None, a Principal or a Response",
                type(verdict),
            )
            return JSONResponse(
                {"error": {"message": "the request could not be authorised (server error)."}},
                status_code=500,
            )
        return verdict
