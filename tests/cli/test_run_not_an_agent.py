"""``run`` pointed at a web page, not an agent (issue 36, item 12): one line saying so,
as ``check`` says it — never the page's HTML dumped on the terminal."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from tests.helpers.scripted_server import serve
from tests.helpers.terminal import AGUI, ENV, ROOT

PAGE = """<!DOCTYPE html>
<html lang="en">
  <head><meta charset="utf-8"><title>Acme   Shop</title></head>
  <body><h1>Welcome</h1><p>Nothing to see here.</p></body>
</html>
"""


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(PAGE, status_code=200 if request.url.path == "/ok" else 404)

    routes = [Route(p, page, methods=["GET", "POST"]) for p in ("/ok", "/missing")]
    with serve(Starlette(routes=routes)) as base:
        yield base


@pytest.mark.parametrize("path", ["/ok", "/missing"], ids=["200-html", "404-html"])
def test_run_against_a_web_page_says_so_in_one_line(site: str, path: str) -> None:
    proc = subprocess.run(
        [*AGUI, "run", f"{site}{path}", "hi", "--yes"],
        capture_output=True, text=True, timeout=120, env=ENV, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("agui-tools run: this is not an AG-UI endpoint: "), line
    assert "give the URL of the agent's POST endpoint" in line
    assert "<" not in line and "Welcome" not in line, line  # no HTML, no page text
    if path == "/missing":
        assert "answered HTTP 404 with an HTML page titled 'Acme Shop'" in line, line
