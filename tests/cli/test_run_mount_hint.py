"""``run`` against an agent mounted in FastAPI (issue #36, item 10): the README's
``fastapi_app.mount("/agui", app)`` of ``agent_app(agent, path="/agent")`` serves the
agent at ``/agui/agent``; ``run``'s 307 hint names the URL that answers, and following
it works — for the README's app and for one on ``agent_app``'s default path."""

from __future__ import annotations

import re
import subprocess

import pytest
from fastapi import FastAPI

from agui_tools import Run, agent_app
from tests.helpers.terminal import AGUI, ENV, ROOT, serving_in_thread


async def agent(run: Run) -> None:
    await run.text("hello from the mount")


def agui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGUI, *args], capture_output=True, text=True, timeout=120, env=ENV, cwd=ROOT, input=""
    )


@pytest.mark.parametrize(("path", "served_at"), [("/agent", "/agui/agent"), ("/", "/agui/")])
def test_the_redirect_hint_names_the_url_that_answers(path: str, served_at: str) -> None:
    fastapi_app = FastAPI()
    fastapi_app.mount("/agui", agent_app(agent, path=path))
    with serving_in_thread(fastapi_app) as base:
        redirected = agui("run", f"{base}/agui", "hi")
        assert redirected.returncode == 2
        assert "HTTP 307" in redirected.stderr and "Traceback" not in redirected.stderr
        tried = re.findall(r"http://\S+?(?=[,;)\s]|$)", redirected.stderr.split("307", 1)[1])
        assert f"{base}{served_at}" in tried, redirected.stderr
        followed = agui("run", f"{base}{served_at}", "hi")
        assert followed.returncode == 0, followed.stderr
        assert "hello from the mount" in followed.stdout


def test_the_readme_says_where_a_mounted_agent_answers() -> None:
    readme = (ROOT / "README.md").read_text()
    assert 'fastapi_app.mount("/agui", app)' in readme
    assert "/agui/agent" in readme
