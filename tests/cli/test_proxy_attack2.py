"""Second-round attacks on ``agui-tools proxy`` as a user runs it (docs/proxy.md,
docs/cli.md, CHANGELOG), after the first round's fixes: a real proxy process, a real
agent on uvicorn, a real client. Each was ``xfail(strict=True)`` until fixed; now each
guards its fix."""

from __future__ import annotations

import signal
from pathlib import Path

import orjson

from agui_tools.wire._framing import sse_frame
from tests.helpers.proxy import ctrl_c, post, proxy_cmd, stream_post
from tests.helpers.proxy_cmd_run import INPUT, ONE_CUT_SHORT, RS
from tests.helpers.scripted_server import Script, app_for, serve

RF = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}


def test_the_frontend_gets_one_date_and_one_server_header() -> None:
    """RFC 9110 §5.3: a sender MUST NOT generate a field twice unless it is a list;
    Date (§6.6.1) and Server (§10.2.4) are not. The proxy forwards the agent's and its
    own server adds its own — two Date values that may differ by a second."""
    script = Script(chunks=[sse_frame(orjson.dumps(e)) for e in [RS, RF]])
    with serve(app_for(script)) as base:
        proc, url = proxy_cmd(f"{base}/agent")
        try:
            answer = post(url, INPUT)
        finally:
            ctrl_c(proc)
    names = [name.lower() for name, _ in answer.headers.raw]
    assert (names.count(b"date"), names.count(b"server")) == (1, 1), answer.headers.raw


def test_sigterm_with_a_frontend_not_reading_prints_only_the_summary(tmp_path: Path) -> None:
    """docs/proxy.md: a stream still open when the proxy stops is ended by it and counted
    as cut short; the CHANGELOG: no more stray server lines on stopping. A frontend that
    holds its socket without reading (a busy tab, a paused debugger) while a long
    recorded stream fills the buffers: stderr gets lines naming nothing — no rule, no
    exchange — from asyncio writing to a transport the proxy already closed.
    (Round 2 fix: this frontend's ``for … break`` closes httpx's iterator, so it did
    leave — a reset the pump wrote on into; the frontend holding the socket is the
    next test.)"""
    err, _ = _sigterm_mid_burst(tmp_path, hold=False)
    assert err.strip().splitlines() == ONE_CUT_SHORT, err
    meta = orjson.loads((tmp_path / "0001.meta.json").read_bytes())
    assert meta.get("clientGone") is True, meta  # its iterator closed: the frontend left


def _sigterm_mid_burst(tmp_path: Path, *, hold: bool) -> tuple[str, int]:
    """A ~12 MB recorded stream, the frontend stops reading 2 MB in — and lets its
    response go (``hold=False``: the iterator dropped, httpx closes the connection) or
    holds it open unread (``hold=True``) — then SIGTERM: the proxy's stderr, exit code."""
    chunks = [sse_frame(orjson.dumps(RS))]
    delta = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "x" * 4000}
    start = {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}
    chunks.append(sse_frame(orjson.dumps(start)))
    chunks += [sse_frame(orjson.dumps(delta))] * 3000  # ~12 MB, far past the socket buffers
    script = Script(chunks=chunks, hang_after=True)
    with serve(app_for(script)) as base:
        proc, url = proxy_cmd(f"{base}/agent", "--record", str(tmp_path))
        got = 0
        with stream_post(url, INPUT) as answer:
            pieces = answer.iter_raw()
            for chunk in pieces:
                got += len(chunk)
                if got > 2_000_000:  # the stream is well under way: stop reading
                    break
            if not hold:
                pieces.close()  # (what a bare `for … break` does: httpx closes the connection)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return err, proc.returncode


def test_sigterm_with_a_frontend_holding_a_stream_unread_prints_only_the_summary(
    tmp_path: Path,
) -> None:
    """The frontend keeps its socket open and reads nothing (a busy tab, a paused
    debugger): the proxy stopping ends the stream — proxyStopped, not clientGone —
    and says nothing but the summary."""
    err, _ = _sigterm_mid_burst(tmp_path, hold=True)
    assert err.strip().splitlines() == ONE_CUT_SHORT, err
    meta = orjson.loads((tmp_path / "0001.meta.json").read_bytes())
    assert meta.get("proxyStopped") is True and "clientGone" not in meta, meta


TS = {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "search"}
TE = {"type": "TOOL_CALL_END", "toolCallId": "c1"}
TA = {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"}
