"""An authorization hook in front of an agent endpoint (``agent_app(…, authorize=…)``).

The hook sees the request — method, URL, headers, client address — before
its body is read, so an unauthorised client costs no parsing and never
reaches the agent. It answers ``None`` to let the request through, or a
Starlette ``Response`` to refuse with (a 401 with ``WWW-Authenticate``, say);
raising ``starlette.exceptions.HTTPException`` refuses too, with its status,
detail and headers as a JSON error body like the server's own. A hook that
fails in any other way refuses with 500: a bug never lets a request through.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["Authorize", "Authorized"]

log = logging.getLogger("agui_tools.server")

Authorize = Callable[[Request], Awaitable[Response | None] | Response | None]
"""``authorize(request)``: ``None`` lets the request through; a ``Response`` refuses it."""


class Authorized:
    """The ASGI app ``app`` behind the hook ``authorize``."""

    def __init__(self, app: ASGIApp, authorize: Authorize) -> None:
        self.app = app
        self.authorize = authorize

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = await self._judge(Request(scope))  # no receive: the body stays unread
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def _judge(self, request: Request) -> Response | None:
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
        if verdict is not None and not isinstance(verdict, Response):
            log.error("the authorization hook returned %r, not None or a Response", type(verdict))
            return JSONResponse(
                {"error": {"message": "the request could not be authorised (server error)."}},
                status_code=500,
            )
        return verdict
