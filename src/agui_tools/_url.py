"""An agent's URL judged before anything is sent (:func:`check_url`), one line when bad:
httpx parses it only at sending, with an ``InvalidURL`` that is no transport error. Here,
below every face, so none imports another to ask.
"""

from __future__ import annotations

from ._text import shown

__all__ = ["check_url", "url_problem"]


def check_url(url: str) -> str | None:
    """Why ``url`` cannot be an agent endpoint (``None`` when it can): the URL,
    :func:`~agui_tools._text.shown`, then :func:`url_problem`'s reason."""
    problem = url_problem(url)
    return None if problem is None else f"{shown(url)} {problem}"


def url_problem(url: str) -> str | None:
    """:func:`check_url`'s reason, without the URL: "is not a valid URL (…)", "is not an
    http:// or https:// URL", "names no host", "has port N: out of range (1-65535)"."""
    import httpx

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        return f"is not a valid URL ({exc})"
    if parsed.scheme not in ("http", "https"):
        return "is not an http:// or https:// URL with a host"
    if not parsed.host:
        return "is not an http:// or https:// URL with a host: it names no host"
    if parsed.port is not None and not 0 < parsed.port < 65536:
        return f"has port {parsed.port}: out of range (1-65535)"
    return None
