"""The README's command-line walkthrough, followed as a newcomer follows it — in order, in
one terminal, on the agent the README serves (issue 36): every server it starts has a port
of its own, and the recording its ``run --save`` makes is one its ``mock --fault`` replays."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

from agui_tools.cli import build_parser
from agui_tools.transport import mock_app
from tests.helpers.terminal import AGUI, ENV, ROOT, serving_in_thread

README = (ROOT / "README.md").read_text()
SERVERS = ("serve", "proxy", "mock", "inspect")  # the commands that keep listening
# the README's tool, from its "Drive one" example, as the module its commands name
MY_TOOLS = '''
def show_forecast(city: str, days: int) -> str:
    """Show a weather forecast card in the UI."""
    return f"a {days}-day forecast for {city} is on screen"

TOOLS = [show_forecast]
'''


def walkthrough() -> list[list[str]]:
    """The ``agui-tools`` command lines of the README's "On the command line" block."""
    section = README.split("## On the command line", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the README's 'On the command line' has no sh block"
    lines = [shlex.split(line, comments=True) for line in block.group(1).splitlines()]
    return [line for line in lines if line[:1] == ["agui-tools"]]


def command(name: str) -> list[str]:
    (line,) = [line for line in walkthrough() if line[1] == name][:1]
    return line


def test_each_server_the_readme_starts_listens_on_a_port_of_its_own() -> None:
    parser = build_parser()
    ports: dict[int, list[str]] = {}
    for line in walkthrough():
        if line[1] in SERVERS:
            port = parser.parse_args(line[1:]).port
            if port:  # 0: a free one
                ports.setdefault(port, []).append(" ".join(line))
    shared = {port: lines for port, lines in ports.items() if len(lines) > 1}
    assert not shared, f"the README starts two servers on one port: {shared}"


def test_the_readme_mocks_the_recording_its_run_saved(tmp_path: Path) -> None:
    namespace: dict[str, object] = {"__name__": "my_agent"}
    exec(re.findall(r"```python\n(.*?)```", README, re.S)[0], namespace)
    (tmp_path / "my_tools.py").write_text(MY_TOOLS)
    run = command("run")
    mock = command("mock")
    saved = run[run.index("--save") + 1]
    with serving_in_thread(namespace["app"]) as base:
        argv = [f"{base}/agent" if arg.startswith("http://") else arg for arg in run[1:]]
        done = subprocess.run(
            [*AGUI, *argv],
            cwd=tmp_path,
            env={**ENV, "PYTHONPATH": f"{tmp_path}:{ENV['PYTHONPATH']}"},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert mock[2] == saved, f"the README mocks {mock[2]}, its run saved {saved}"
    faults = [mock[i + 1] for i, arg in enumerate(mock) if arg == "--fault"]
    assert faults, " ".join(mock)
    # a fault that names no event of the recording is refused here, as `mock` refuses it
    mock_app(tmp_path / saved, faults=faults)
