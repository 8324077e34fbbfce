"""The proxy's verdicts when its judging process gives none (issue #25): it runs at idle
priority, so on cores kept busy by other work it may be starved for as long as they are.
A verdict overdue (``VERDICT_OVERDUE``) is judged in the proxy's own process from the
stream's kept chunks — on the way out too: the summary counts every stream forwarded.

The judging process is stopped with SIGSTOP here — starvation made certain — and the real
``agui-tools proxy`` command is stopped with SIGTERM, as a CI job stops its services."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agui_tools.wire._framing import sse_frame
from tests.helpers.judging_process import judging_process, log_lines
from tests.helpers.proxy import proxy_cmd, wait_until
from tests.helpers.scripted_server import serve

TOOLS = [{"name": "confirm_order", "description": "Ask the user to confirm an order."}]


async def _fabricating(request: Request) -> Response:
    """An agent answering the frontend's own tool itself (FE-2), on the input's ids."""
    ids = {
        k: v for k, v in orjson.loads(await request.body()).items() if k in ("threadId", "runId")
    }
    events = [
        {"type": "RUN_STARTED", **ids},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "confirm_order"},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "m9", "content": "ok"},
        {"type": "RUN_FINISHED", **ids},
    ]
    body = b"".join(sse_frame(orjson.dumps(e)) for e in events)
    return Response(body, media_type="text/event-stream")


def _post(url: str, thread: str) -> httpx.Response:
    body = {"threadId": thread, "runId": "r1", "messages": [], "tools": TOOLS}
    return httpx.post(
        url, content=orjson.dumps(body), headers={"content-type": "application/json"}, timeout=30
    )


def test_sigterm_with_the_judge_stopped_gives_every_streams_verdict(tmp_path: Path) -> None:
    # each stream fabricates the frontend's result (FE-2): the first judged by the judging
    # process, the next two owed when it is stopped — the stop judges them itself
    log = tmp_path / "findings.jsonl"
    agent = Starlette(routes=[Route("/agent", _fabricating, methods=["POST"])])
    with serve(agent) as base:
        proc, url = proxy_cmd(f"{base}/agent", "--log", str(log))
        try:
            assert _post(url, "t1").status_code == 200
            # the first verdict is in: the judging process is up
            wait_until(lambda: log_lines(log), "the first stream was never judged")
            os.kill(judging_process(proc.pid), signal.SIGSTOP)
            assert _post(url, "t2").status_code == 200
            assert _post(url, "t3").status_code == 200
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 1, err
    assert "3 run request(s), 3 error(s)" in err, err
    assert sorted((f["rule"], f["threadId"]) for f in log_lines(log)) == [
        ("FE-2", "t1"),
        ("FE-2", "t2"),
        ("FE-2", "t3"),
    ]
