"""Traces from the command line (issue #36, item 14): ``--otel`` on run, chat, serve,
proxy, check and inspect — the spans as JSON on stderr (the console exporter), or to
the exporter ``OTEL_TRACES_EXPORTER`` names; one trace across ``run`` and ``serve``;
no user content in any span."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from agui_tools.cli import build_parser
from agui_tools.cli._otel import OTEL_COMMANDS
from tests.helpers.otel_cli import AGENT, CLEAN_ENV, PLANTED, agui, spans_in
from tests.helpers.terminal import AGUI, ROOT


def test_run_and_serve_with_otel_print_one_trace_and_no_user_content() -> None:
    server = subprocess.Popen(
        [*AGUI, "serve", AGENT, "--port", "0", "--otel"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=CLEAN_ENV, cwd=ROOT,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        url = re.match(r"Serving AG-UI agent at (\S+)", server.stdout.readline()).group(1)  # type: ignore[union-attr]
        ran = agui("run", url, f"my secret is {PLANTED}", "--otel")
    finally:
        server.terminate()
        _, served_err = server.communicate(timeout=20)
    assert ran.returncode == 0, ran.stderr
    assert PLANTED in ran.stdout  # the agent's answer quotes it: the command shows it
    assert "agui.run" not in ran.stdout  # spans go to stderr; stdout is the command's
    client = spans_in(ran.stderr)
    assert [s["name"] for s in client] == ["agui.run", "agui.send"], ran.stderr
    assert {s["resource"]["attributes"]["service.name"] for s in client} == {"agui-tools run"}
    agent = [s for s in spans_in(served_err) if s["name"] == "agui.agent.run"]
    assert len(agent) == 1, served_err
    # the agent's run span is the child of the client's, across the wire (traceparent)
    assert agent[0]["context"]["trace_id"] == client[0]["context"]["trace_id"]
    assert agent[0]["parent_id"] == client[0]["context"]["span_id"]
    assert PLANTED not in ran.stderr and PLANTED not in served_err


def test_the_standard_variable_alone_turns_traces_on() -> None:
    env = {**CLEAN_ENV, "OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "my-cli"}
    proc = agui("run", "http://127.0.0.1:9/agent", "hi", env=env)  # nothing listens there
    assert proc.returncode == 2
    spans = spans_in(proc.stderr)
    assert [s["name"] for s in spans] == ["agui.run", "agui.send"], proc.stderr
    for span in spans:
        assert span["status"] == {"status_code": "ERROR"}  # no description: it may hold data
        assert span["resource"]["attributes"]["service.name"] == "my-cli"
        assert [e["attributes"] for e in span["events"]] == [{"exception.type": "TransportError"}]
    assert proc.stderr.rstrip().endswith("(ConnectError: All connection attempts failed)")


def test_without_the_flag_or_the_variable_nothing_is_traced() -> None:
    proc = agui("run", "http://127.0.0.1:9/agent", "hi")
    assert proc.returncode == 2 and "{" not in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER='zipkin': use one of"),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, "needs opentelemetry-exporter-otlp-proto-http"),
    ],
)
def test_an_exporter_that_cannot_be_set_up_is_one_line(env: dict[str, str], says: str) -> None:
    proc = agui("run", "http://127.0.0.1:9/agent", "hi", "--otel", env={**CLEAN_ENV, **env})
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"agui-tools run: --otel: {says}" or says in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_every_command_of_the_issue_takes_otel() -> None:
    parser = build_parser()
    assert set(OTEL_COMMANDS) == {"run", "chat", "serve", "proxy", "check", "inspect"}
    for command in OTEL_COMMANDS:
        help_text = parser._subparsers._group_actions[0].choices[command].format_help()  # type: ignore[union-attr]
        assert "--otel" in help_text, command
    assert "--otel" not in parser._subparsers._group_actions[0].choices["verify"].format_help()  # type: ignore[union-attr]
    assert os.environ.get("OTEL_SDK_DISABLED") != "true"
