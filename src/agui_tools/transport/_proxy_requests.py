"""The proxy's checks of a request's target: where it goes upstream, and why it cannot
(a path leaving ``upstream``'s, a query naming its parameters, a loop) — read in one
place against the one URL it would be sent to. A mixin of ProxyApp."""

from __future__ import annotations

import contextlib
import re
from typing import Final
from urllib.parse import unquote_plus, urlsplit, urlunsplit

from starlette.datastructures import Headers
from starlette.types import Scope

from .._text import shown
from ._front import Refusal

__all__ = ["REDACTED", "TargetChecks", "redacted_url"]

REDACTED: Final = "***"
"""What the proxy shows in place of a secret: a URL's query value, a header's value."""


def redacted_url(url: str) -> str:
    """``url`` as the proxy shows it anywhere — the inspector's page, the log, a
    recording's meta, a peer's answer: no userinfo, and every query value (a bare
    ``?KEY`` too) :data:`REDACTED`, so an agent's ``?code=KEY`` never leaves the proxy."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    with contextlib.suppress(ValueError):  # (a port that is not one: refused before)
        netloc += f":{parts.port}" if parts.port is not None else ""
    pairs = [p for p in re.split("[&;]", parts.query) if p]
    query = "&".join(f"{p.split('=', 1)[0]}={REDACTED}" if "=" in p else REDACTED for p in pairs)
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


class TargetChecks:
    """A request's target judged against ``upstream`` (:class:`~._proxy.ProxyApp`'s)."""

    upstream: str
    via: str

    def _check_path(self, scope: Scope, headers: Headers) -> None:
        """What the front asks of a head before the body is read: a target that stays
        under ``upstream``, naming no parameter of its query again."""
        wrong = self._path_problem(scope) or self._query_problem(scope)
        if wrong is not None:
            raise Refusal(400, {"path": "", "message": wrong}, close=True)

    def _loop_problem(self, headers: Headers) -> str | None:
        """Why the request has come round a loop — its ``Via`` names this proxy
        (``None``: it has not)."""
        for value in headers.getlist("via"):
            for entry in value.split(","):
                received = entry.split()
                if len(received) >= 2 and received[1] == self.via:
                    return (
                        f"a request came back to this proxy (Via: {shown(value)}): UPSTREAM "
                        f"{shown(redacted_url(self.upstream))} leads back to the proxy itself — a loop; "
                        "answered 508 Loop Detected, not forwarded again."
                    )
        return None

    def _path_problem(self, scope: Scope) -> str | None:
        """Why the request's path cannot go upstream (``None``: it can): a ``.`` or ``..``
        segment (percent-encoded too, or ``..;``) would leave ``upstream``'s path — refused,
        never normalised; so is a target that is not a path, or holds a ``#``."""
        path: str = scope.get("path", "/")
        prefix = shown(urlsplit(self.upstream).path or "/")
        if path and not path.startswith("/"):
            return (
                f"agui-tools proxy: the request target {shown(path)} is not a path "
                f"(origin-form, starting with '/'): only paths below UPSTREAM's {prefix} "
                "are forwarded."
            )
        raw: bytes = scope.get("raw_path") or b""
        if b"#" in raw or b"#" in scope.get("query_string", b""):
            # RFC 9112 §3.2: a request-target has no fragment — forwarding it would cut
            # the query at the '#' (the URL's fragment), silently
            return (
                f"agui-tools proxy: the request target {shown(_with_query(raw, scope))} holds "
                "a '#': a request-target carries no fragment (RFC 9112 §3.2), and what "
                "follows it would not reach UPSTREAM — refused, not cut (send it "
                "percent-encoded, %23)."
            )
        segments = path.replace("\\", "/").split("/")
        # a ';' starts a segment's parameters, which servlet containers (Tomcat, Jetty)
        # strip before resolving: '..;x' is a '..' there
        dots = next((seg for seg in segments if seg.split(";", 1)[0] in (".", "..")), None)
        if dots is None:
            return None
        return (
            f"agui-tools proxy: the request path {shown(path)} has a {dots!r} segment: it "
            f"would leave UPSTREAM's path {prefix}, and only paths below it are forwarded "
            "— refused, not normalised (send the path without '.' or '..' segments)."
        )

    def _query_problem(self, scope: Scope) -> str | None:
        """Why the query cannot go upstream: it names a parameter of ``upstream``'s own
        (``?code=KEY``) — a duplicate a last-wins parser would read as the frontend's."""
        own = _query_names(urlsplit(self.upstream).query)
        if not own:
            return None
        asked = _query_names(scope.get("query_string", b"").decode("latin-1"))
        clash = sorted(own.keys() & asked.keys())
        if not clash:
            return None
        names = ", ".join(shown(asked[c]) for c in clash)
        return (
            f"agui-tools proxy: the request's query sets {names}, a parameter of UPSTREAM's "
            f"own query ({', '.join(shown(own[c]) for c in clash)}): a frontend cannot "
            "override or duplicate it — refused, not forwarded (drop it from the request)."
        )

    def _target(self, scope: Scope) -> str:
        """The upstream URL of a request: ``upstream``'s path then the request's (``/`` is
        ``upstream`` itself), ``upstream``'s query then the request's."""
        base = urlsplit(self.upstream)
        raw: bytes = scope.get("raw_path") or scope.get("path", "/").encode("utf-8")
        sub = raw.decode("latin-1")
        path = base.path if sub in ("", "/") else base.path.rstrip("/") + sub
        query = "&".join(
            q for q in (base.query, scope.get("query_string", b"").decode("latin-1")) if q
        )
        return urlunsplit((base.scheme, base.netloc, path, query, ""))


def _query_names(query: str) -> dict[str, str]:
    """A query's parameter names, each as the most lenient parsers read it → as written
    (percent- and ``+``-decoded, cut at a NUL or ``[``, case-folded, ``.`` and spaces
    read as ``_``, brackets dropped as Rack does): every reading kept."""
    names: dict[str, str] = {}
    for pair in re.split("[&;]", query):
        name = pair.split("=", 1)[0]
        if pair:
            read = unquote_plus(name, encoding="latin-1").split("\0", 1)[0].strip().casefold()
            rack = re.match(r"[\[\]]*([^\[\]]*)", read)
            readings = {read.split("[", 1)[0], rack.group(1) if rack else read}
            if "[" in read and "]" not in read.split("[", 1)[1]:
                readings.add(read.replace("[", "_", 1))
            for reading in readings:
                names.setdefault(re.sub(r"[. ]", "_", reading), name)
    return names


def _with_query(raw_path: bytes, scope: Scope) -> str:
    query: bytes = scope.get("query_string", b"")
    return (raw_path + (b"?" + query if query else b"")).decode("latin-1")
