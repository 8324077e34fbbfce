"""The inspector's web app: the page, its message stream, and the few things it may post.

Updates are Server-Sent Events: a one-way ordered log, resumed by ``Last-Event-ID`` (what a
page missed arrives as one ``batch``), on the wire the agent side speaks. What the page
sends is rare: a ``POST`` with a JSON body and a token header, which a foreign page cannot
send without a CORS preflight this app never answers. Security against other origins:

* loopback unless told otherwise; every ``Host`` must be one this server answers
  (DNS rebinding);
* every ``POST`` same-origin with the session token (``X-Inspector-Token``); the stream and
  exports take it as a same-site HttpOnly cookie, never in a URL (or a header, or ``?token=``);
* ``Sec-Fetch-Site: cross-site`` is refused;
* a Content-Security-Policy allows only the page's own script and style; model output is
  JSON data shown with ``textContent``.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
from collections.abc import AsyncIterator, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Final

import orjson
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Scope

from ..._text import html_text, terminal_json
from ...transport._auth import HostPolicy
from ...transport._front import DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_CONCURRENCY, Front, Refusal
from ._backend import Inspector, Refused, compact
from ._replay import MAX_IMPORT, ImportRefused, imported

__all__ = ["inspector_app"]

CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)
_MODULES: Final = (
    "app.js",
    "core.js",
    "chat.js",
    "markdown.js",
    "frames.js",
    "state.js",
    "controls.js",
    "session.js",
    "live.js",
)
"""The page's ES modules (static/app.js says what each holds)."""
_STATIC: Final = {
    **dict.fromkeys(_MODULES, "text/javascript; charset=utf-8"),
    "style.css": "text/css; charset=utf-8",
    "session.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
_MAX_BODY: Final = 4 * 1024 * 1024
_LIVE_BATCH: Final = 1000
_MAX_IMPORT_BODY: Final = 4 * MAX_IMPORT // 3 + 4096  # base64 of the largest import, and JSON
_RULE_ID: Final = re.compile(r"^[A-Z]+-\d+$")
_NUMBER: Final = re.compile(r"[0-9]{1,18}")
"""An event id or run number this inspector could have given out. ``int()`` alone
raised on 5,000 digits (Python's 4,300-digit limit) and on digits ``isdigit()``
admits but ``int()`` does not (``"²"``): a 500 for what a client sent."""


def _refuse(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def _refused(refusal: Refusal) -> dict[str, str]:
    """The inspector's error body for what its front refuses: ``{"error": "refused: …"}``."""
    return {"error": f"refused: {refusal.error.get('message', '')}"}


class _Guard:
    """The inspector's own head rules, judged by its front after the ``Host`` and
    before any route or body: Origin, Sec-Fetch-Site, the method and the token."""

    def __init__(self, token: str) -> None:
        self.token = token

    def check(self, scope: Scope, _: Headers) -> None:
        problem = self.problem(scope)
        if problem is not None:
            raise Refusal(403, {"message": problem})

    def problem(self, scope: Scope) -> str | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        path: str = scope["path"]
        method: str = scope["method"]
        if headers.get("sec-fetch-site") == "cross-site" and not (
            # following a link to the page is fine: it cannot be framed (CSP), and what it
            # holds — the token — is not readable from the page that linked to it
            method == "GET" and path == "/" and headers.get("sec-fetch-mode") == "navigate"
        ):
            return "a cross-site request"
        if method == "HEAD":  # answered like GET, without the body (curl -I shows the CSP)
            method = "GET"
        if method == "GET" and (path in ("/", "/favicon.ico") or path.startswith("/static/")):
            return None
        if method == "POST":
            origin = headers.get("origin")
            if origin != f"http://{host}":
                return f"a request from origin {origin!r}, not from this inspector's page"
            if headers.get("content-type", "").split(";")[0].strip() != "application/json":
                return "the body must be application/json"
            supplied = headers.get("x-inspector-token", "")
        elif method == "GET":
            # the cookie the page was served with, or the header; ?token= only for a
            # script that was given the URL (the page itself never puts it in one)
            query = scope.get("query_string", b"").decode("latin-1")
            supplied = (
                headers.get("x-inspector-token", "")
                or _cookie(headers.get("cookie", ""), cookie_name(host))
                or next((p[6:] for p in query.split("&") if p.startswith("token=")), "")
            )
        else:
            return f"method {method}"
        if not hmac.compare_digest(supplied.encode(), self.token.encode()):
            return "missing or wrong inspector token"
        return None


def cookie_name(host: str) -> str:
    """The token cookie of the inspector at ``host``: one per port, since a browser keeps
    cookies per host name only (two inspectors on localhost must not share one)."""
    port = host.rpartition(":")[2] if host.rpartition(":")[2].isdigit() else "80"
    return f"agui-inspector-{port}"


def _cookie(header: str, name: str) -> str:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return ""


@cache
def _asset(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


def _rules_file() -> Path | None:
    """``spec/RULES.md`` of the checkout this package runs from, when there is one."""
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "spec" / "RULES.md"
        if candidate.is_file():
            return candidate
    return None


@cache
def _rules() -> dict[str, dict[str, str]]:
    """Rule ID → its text in ``spec/RULES.md`` (the second cell of its table row)."""
    path = _rules_file()
    out: dict[str, dict[str, str]] = {}
    if path is None:
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and _RULE_ID.match(cells[0]):
            out[cells[0]] = {"id": cells[0], "text": cells[1]}
    return out


async def _json_body(request: Request, limit: int = _MAX_BODY) -> dict[str, Any]:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise Refused(413, "the request body is too large")
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise Refused(400, f"the body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise Refused(422, "the body must be a JSON object")
    return data


def _answer(exc: Refused) -> Response:
    return JSONResponse({"error": exc.message, **exc.extra}, status_code=exc.status)


def inspector_app(
    inspector: Inspector,
    *,
    hosts: HostPolicy,
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
    max_concurrency: int | None = DEFAULT_MAX_CONCURRENCY,
) -> ASGIApp:
    """The ASGI app serving ``inspector`` to a page, answering only the ``Host`` names
    ``hosts`` allows (see :func:`~agui_tools.ui.inspector.host_policy`), behind the
    front every face has (:class:`~agui_tools.transport._front.Front`)."""

    async def page(request: Request) -> Response:
        html = _asset("index.html").decode()
        config = orjson.dumps(
            {
                "token": inspector.token,
                "title": inspector.title,
                "prompt": inspector.prompt,
                "threadStart": inspector.hub.thread_start,
                "readOnly": inspector.read_only,
            }
        )
        # JSON in an attribute: its controls as JSON escapes (the same value for the page's
        # parser), then every character that could end the attribute escaped
        html = html.replace("{{CONFIG}}", html_text(terminal_json(config).decode()))
        response = Response(html, media_type="text/html; charset=utf-8", headers=_headers())
        # the event stream and the export links authenticate with this, not a ?token= URL
        response.set_cookie(
            cookie_name(request.headers.get("host", "")),
            inspector.token,
            httponly=True,
            samesite="strict",
            path="/",
        )
        return response

    async def favicon(request: Request) -> Response:
        return Response(_asset("favicon.svg"), media_type="image/svg+xml", headers=_headers())

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return _refuse(404, "not found")
        return Response(_asset(name), media_type=_STATIC[name], headers=_headers())

    async def events(request: Request) -> Response:
        last = request.headers.get("last-event-id", "")
        if last and not _NUMBER.fullmatch(last):
            return _refuse(
                400,
                "Last-Event-ID must be the id of an event this inspector sent (a number of at "
                f"most 18 digits), not {last[:40]!r}" + ("…" if len(last) > 40 else ""),
            )
        start = int(last) + 1 if last else inspector.hub.thread_start

        async def stream() -> AsyncIterator[bytes]:
            yield b": inspector\n\n"
            # what a new or reconnecting page missed goes as ONE "batch" message (its text
            # deltas joined; its id is the last message's seq); later, what piles up while
            # the page reads goes in batches of at most _LIVE_BATCH (each one parse for it)
            first = True
            async for batch in inspector.hub.batches(start):
                size = len(batch) if first else _LIVE_BATCH
                first = False
                for i in range(0, len(batch), size):
                    part = batch[i : i + size]
                    last = part[-1]["seq"]
                    if len(part) == 1:
                        yield b"id: %d\ndata: %s\n\n" % (last, orjson.dumps(part[0]))
                        continue
                    body = {"seq": last, "kind": "batch", "messages": compact(part)}
                    yield b"id: %d\ndata: %s\n\n" % (last, orjson.dumps(body))

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def post(request: Request) -> Response:
        action = request.path_params["action"]
        if inspector.read_only is not None:
            # every action, import and compose too: this page watches traffic it does not drive
            return _refuse(403, inspector.read_only)
        try:
            data = await _json_body(request, _MAX_IMPORT_BODY if action == "import" else _MAX_BODY)
            if action == "prompt":
                text = data.get("text")
                if not isinstance(text, str):
                    raise Refused(422, "the prompt must be text")
                inspector.send(text)
            elif action == "consent":
                inspector.decide(
                    str(data.get("callId")),
                    str(data.get("decision")),
                    reason=data.get("reason"),
                    arguments=data.get("arguments"),
                )
            elif action == "answer":
                error = data.get("error")
                inspector.answer(
                    str(data.get("callId")),
                    value=data.get("value"),
                    error=str(error) if error is not None else None,
                )
            elif action == "tools":
                inspector.add_mock_tool(
                    data.get("name"),
                    data.get("description"),
                    data.get("parameters"),
                    data.get("result"),
                    data.get("sideEffects", False),
                )
            elif action == "stop":
                inspector.stop()
            elif action == "new-thread":
                inspector.new_thread()
            elif action == "thread":
                await inspector.open_thread(data.get("threadId"))
            elif action == "agent":
                inspector.configure(
                    agent=data.get("agent"),
                    url=data.get("url"),
                    headers=data.get("headers"),
                    bearer=data.get("bearer"),
                )
            elif action == "interrupt":
                inspector.resolve_interrupt(
                    str(data.get("id")),
                    str(data.get("action")),
                    payload=data.get("payload"),
                    reason=data.get("reason"),
                )
            elif action == "compose":
                inspector.compose(data.get("input"), check=data.get("check") is True)
            elif action == "import":
                return JSONResponse(_import(data))
            elif action == "next-input":
                prompt = data.get("prompt")
                return JSONResponse(
                    inspector.next_input(prompt if isinstance(prompt, str) else None)
                )
            else:
                return _refuse(404, f"no action {action!r}")
        except Refused as exc:
            return _answer(exc)
        return JSONResponse({"ok": True})

    async def rule(request: Request) -> Response:
        found = _rules().get(request.path_params["rule"])
        if found is None:
            return _refuse(404, "this rule's text is not available (see spec/RULES.md)")
        return JSONResponse(found)

    async def export(request: Request) -> Response:
        what = request.path_params["what"]
        if what == "thread.json":
            body = orjson.dumps(inspector.thread_export(), option=orjson.OPT_INDENT_2)
            return _download(body, "application/json", f"thread-{_slug(inspector)}.json")
        match = re.fullmatch(r"run-([0-9]+)\.(sse|input\.json)", what)
        if match is None:
            return _refuse(404, "not found")
        if not _NUMBER.fullmatch(match.group(1)):
            return _refuse(
                400,
                f"the run number has {len(match.group(1))} digits: it is no run of this inspector",
            )
        number = int(match.group(1))
        if not 1 <= number <= len(inspector.captures):
            return _refuse(404, f"no run {number} was captured")
        capture = inspector.captures[number - 1]
        if match.group(2) == "sse":
            return _download(bytes(capture.body), "text/event-stream", what)
        return _download(capture.request, "application/json", what)

    routes = [
        Route("/", page),
        Route("/favicon.ico", favicon),
        Route("/static/{name}", static),
        Route("/api/events", events),
        Route("/api/rules/{rule}", rule),
        Route("/api/export/{what}", export),
        Route("/api/{action}", post, methods=["POST"]),
    ]
    front = Front(
        hosts=hosts,
        max_body_bytes=_MAX_IMPORT_BODY,
        body_timeout=body_timeout,
        max_concurrency=max_concurrency,
        who="inspector",
        error_body=_refused,
    )
    return front.wrap(Starlette(routes=routes), check=_Guard(inspector.token).check)


def _import(data: Mapping[str, Any]) -> dict[str, Any]:
    """An imported file (``data``: base64 of its bytes, ``name``), judged run by run."""
    name = data.get("name")
    name = name[:200] if isinstance(name, str) and name else "(unnamed)"
    encoded = data.get("data")
    if not isinstance(encoded, str):
        raise Refused(422, "an import carries the file as base64 text in data")
    try:
        raw = base64.b64decode(encoded, validate=True)
    except binascii.Error as exc:
        raise Refused(422, f"the file is not base64 ({exc})") from None
    try:
        return imported(name, raw)
    except ImportRefused as exc:
        raise Refused(422, str(exc)) from None


def _headers() -> Mapping[str, str]:
    return {
        "Content-Security-Policy": CSP,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }


def _download(body: bytes, media_type: str, filename: str) -> Response:
    # an attachment is saved, never rendered: a captured "<script>" stays bytes
    return Response(
        body,
        media_type=media_type,
        headers={
            "Content-Disposition": f'attachment; filename="{filename}"',
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; sandbox",
        },
    )


def _slug(inspector: Inspector) -> str:
    conv = inspector.session.conversation
    return re.sub(r"[^A-Za-z0-9_.-]", "_", conv.thread_id if conv is not None else "empty")[:80]
