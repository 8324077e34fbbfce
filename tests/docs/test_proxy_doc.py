"""docs/proxy.md's recipe 1 shows the output the user will see: its agent, run through the
real command, prints exactly the page's lines (only the ports differ)."""

from __future__ import annotations

import importlib.util
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import orjson

from tests.helpers.scripted_server import serve
from tests.helpers.terminal import AGUI, ENV

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "proxy.md").read_text()
RECIPE = PAGE.split("## Recipe 1", 1)[1].split("\n## ", 1)[0]
TEXT = re.findall(r"^```text\n(.*?)^```", RECIPE, re.S | re.M)
JSON = re.findall(r"^```json\n(.*?)^```", RECIPE, re.S | re.M)
AGENT = re.search(r"^```python\n(.*?)^```", RECIPE, re.S | re.M)
PORT = re.compile(r"127\.0\.0\.1:\d+")

TOOLS = [{"name": "confirm_order", "description": "Ask the user to confirm an order."}]
FIRST = {
    "threadId": "thread-1",
    "runId": "6033e397-8eca-45dc-ac82-6ecfe2f8ea96",
    "messages": [{"id": "u-1", "role": "user", "content": "Order 2 widgets"}],
    "tools": TOOLS,
}
DANGLING = {
    "threadId": "thread-2",
    "runId": "run-2",
    "tools": [],
    "messages": [
        {"id": "u1", "role": "user", "content": "Order 2 widgets"},
        {
            "id": "a1",
            "role": "assistant",
            "toolCalls": [
                {
                    "id": "c7",
                    "type": "function",
                    "function": {"name": "confirm_order", "arguments": "{}"},
                }
            ],
        },
        {"id": "u2", "role": "user", "content": "Make it 3"},
    ],
}


def _agent_app(tmp: Path) -> Any:
    assert AGENT is not None, "docs/proxy.md: recipe 1's agent"
    path = tmp / "my_agent.py"
    path.write_text(AGENT.group(1))
    spec = importlib.util.spec_from_file_location("my_agent_doc", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.app


def _proxy(upstream: str, *args: str, cwd: Path) -> tuple[subprocess.Popen[str], str, str]:
    proc = subprocess.Popen(
        [*AGUI, "proxy", upstream, "--port", "0", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=cwd,
    )  # fmt: skip
    assert proc.stdout is not None
    banner = proc.stdout.readline()
    url = re.match(r"Proxying AG-UI at (\S+) ", banner)
    assert url is not None, banner
    return proc, url.group(1), banner


def _post(url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        url, content=orjson.dumps(body), headers={"content-type": "application/json"}, timeout=30
    )


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    return err


def test_recipe_1_prints_what_the_page_shows(tmp_path: Path) -> None:
    assert len(TEXT) == 7 and len(JSON) == 1, "the recipe's output blocks"
    banner_shown, fe2_shown, fe8_shown, summary_shown, verify_shown, strict_shown, refused = TEXT
    with serve(_agent_app(tmp_path)) as base:
        upstream = f"{base}/"
        # -- steps 2, 4, 5: the proxy, two exchanges, Ctrl-C ----------------------------------
        proc, url, banner = _proxy(
            upstream, "--record", "rec", "--log", "findings.jsonl", cwd=tmp_path
        )
        try:
            assert _post(url, FIRST).status_code == 200
            assert _post(url, DANGLING).status_code == 200  # watched, forwarded
        finally:
            err = _stop(proc)
        assert PORT.sub("P", banner) == PORT.sub("P", banner_shown)
        shown = [fe2_shown, fe8_shown, summary_shown]
        assert err.splitlines() == [line for block in shown for line in block.splitlines()]
        logged = (tmp_path / "findings.jsonl").read_text().splitlines()
        assert [orjson.loads(x) for x in logged] == [orjson.loads(x) for x in JSON[0].splitlines()]
        # -- step 6: verify says the same of the recording ----------------------------------------
        said = subprocess.run(
            [*AGUI, "verify", "rec/0001.sse", "--input", "rec/0001.input.json"],
            capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=60,
        )  # fmt: skip
        assert said.stdout == verify_shown
        # -- step 7: --strict ----------------------------------------------------------------------
        proc, url, _ = _proxy(upstream, "--strict", cwd=tmp_path)
        try:
            cut = _post(
                url, {"threadId": "thread-3", "runId": "run-3", "messages": [], "tools": TOOLS}
            )
            no = _post(url, DANGLING)
        finally:
            _stop(proc)
    assert cut.text == strict_shown + "\n"  # the page's block ends one blank line short
    status, body = refused.splitlines()
    assert status == f"HTTP/1.1 {no.status_code} Conflict"
    assert orjson.loads(body) == no.json()
