"""Attacks on ``agui-tools proxy`` from its docs alone (docs/proxy.md, docs/cli.md).

Each test is a real problem found by an adversarial pass: a real upstream (a
Starlette app on uvicorn, or a raw socket server answering exactly the bytes a
test needs), a real :class:`ProxyApp`, a real client. Each was
``xfail(strict=True)`` until fixed and now guards its fix: it asserts what the docs promise.
"""

from __future__ import annotations

import gzip
import json
import socket
import socketserver
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.helpers.proxy import post, proxied, raw_post, sse_events, stream_post, wait_until
from tests.helpers.proxy_attack import (
    GOOD,
    INPUT,
    RF,
    RS,
    TA,
    TE,
    TS,
    encoded_agent,
    raw_request,
    sse,
)
from tests.helpers.scripted_server import serve

ARGS_AFTER_END = [RS, TS, TE, TA, RF]  # TOOL-20 at event #3
# what --strict sends of it: the events before the broken one, then the RUN_ERROR naming it
STRICT_ARGS_AFTER_END = ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_END", "RUN_ERROR"]


@contextmanager
def raw_upstream(answer: Callable[[bytes], bytes]) -> Iterator[str]:
    """A socket server: reads one request (head + Content-Length body), writes
    ``answer(request)`` as is, then closes the connection."""

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            sock: socket.socket = self.request
            data = b""
            while b"\r\n\r\n" not in data:
                piece = sock.recv(65536)
                if not piece:
                    return
                data += piece
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            while len(body) < length:
                piece = sock.recv(65536)
                if not piece:
                    break
                body += piece
            sock.sendall(answer(head + b"\r\n\r\n" + body))
            sock.shutdown(socket.SHUT_RDWR)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def no_traceback(capfd: pytest.CaptureFixture[str]) -> None:
    """What the servers printed (uvicorn logs an exception its ASGI app let escape)."""
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception in ASGI application" not in err, err


# -- the proxy's HTTP client is shared by every frontend ------------------------------------------


def test_a_cookie_the_agent_set_for_one_frontend_is_not_sent_for_another() -> None:
    seen: list[str | None] = []

    async def login(request: Request) -> Response:
        answer = JSONResponse({"ok": True})
        answer.set_cookie("session", "alice-secret")
        return answer

    async def agent(request: Request) -> Response:
        await request.body()
        seen.append(request.headers.get("cookie"))
        return Response(sse(GOOD), media_type="text/event-stream")

    upstream = Starlette(
        routes=[Route("/login", login, methods=["GET"]), Route("/agent", agent, methods=["POST"])]
    )
    with serve(upstream) as base, proxied(f"{base}/") as px:
        # frontend A logs in: the cookie is A's (its browser keeps it)
        assert httpx.get(f"{px.url}login", timeout=30).headers["set-cookie"].startswith("session=")
        # frontend B, with no cookie of its own, starts a run
        assert post(f"{px.url}agent", INPUT).status_code == 200
        # frontend A sends its own cookie: an end-to-end header, forwarded as sent
        assert post(f"{px.url}agent", INPUT, cookie="session=alice-secret").status_code == 200
    # the proxy forwards end-to-end headers: B sent no Cookie, so the agent must see none
    assert seen == [None, "session=alice-secret"]


def test_the_agent_gets_the_frontends_end_to_end_headers_and_no_others() -> None:
    seen: list[dict[str, str]] = []

    async def agent(request: Request) -> Response:
        await request.body()
        seen.append(dict(request.headers))
        return Response(sse(GOOD), media_type="text/event-stream")

    upstream = Starlette(routes=[Route("/agent", agent, methods=["POST"])])
    with serve(upstream) as base, proxied(f"{base}/agent") as px:
        # a raw socket: exactly these headers — no Accept, no Accept-Encoding, no User-Agent
        extra = b"x-trace: 7\r\nconnection: close\r\n"
        with raw_post(px.url, orjson.dumps(INPUT), extra=extra) as sock:
            while sock.recv(65536):
                pass
    (headers,) = seen
    end_to_end = set(headers) - {"host", "connection", "content-length"}
    # and one header of the proxy's own: its Via (RFC 9110 §7.6.3), how it sees a loop
    assert end_to_end == {"content-type", "x-trace", "via"}, headers
    assert headers["via"] == f"1.1 {px.app.via}", headers


def test_the_frontends_via_goes_on_and_the_proxys_follows() -> None:
    seen: list[list[str]] = []

    async def agent(request: Request) -> Response:
        await request.body()
        seen.append(request.headers.getlist("via"))
        return Response(sse(GOOD), media_type="text/event-stream")

    upstream = Starlette(routes=[Route("/agent", agent, methods=["POST"])])
    with serve(upstream) as base, proxied(f"{base}/agent") as px:
        assert post(px.url, INPUT, via="1.0 corp-gateway").status_code == 200
    assert seen == [["1.0 corp-gateway", f"1.1 {px.app.via}"]], seen
    assert px.upstream_errors == []


def test_two_proxies_pointed_at_each_other_answer_once_naming_the_loop() -> None:
    """A → B → A: the request comes back to A with A's own Via — answered 508 there,
    once, and that answer goes back the way it came; the agent is never asked."""
    asked: list[str] = []

    async def agent(request: Request) -> Response:
        asked.append(request.url.path)
        return Response(sse(GOOD), media_type="text/event-stream")

    upstream = Starlette(routes=[Route("/agent", agent, methods=["POST"])])
    with serve(upstream) as base, proxied(f"{base}/agent") as a, proxied(a.url) as b:
        a.app.upstream = b.url  # A now forwards to B, which forwards to A
        answer = post(a.url, INPUT)
    assert answer.status_code == 508, answer.text
    message = answer.json()["error"]["message"]
    assert a.app.via in message and "a loop" in message, message
    assert [m for _, m in a.upstream_errors] == [message.removeprefix("agui-tools proxy: ")]
    assert b.upstream_errors == [] and asked == []
    assert (a.app.exchanges, b.app.exchanges) == (1, 1)  # the looped request is no exchange


# -- a compressed stream ----------------------------------------------------------------------


def _plain_agent(events: list[dict[str, Any]]) -> Starlette:
    async def agent(request: Request) -> Response:
        await request.body()
        return Response(sse(events), media_type="text/event-stream")

    return Starlette(routes=[Route("/agent", agent, methods=["POST"])])


def _gzip_agent(events: list[dict[str, Any]]) -> Starlette:
    async def agent(request: Request) -> Response:
        await request.body()
        return Response(
            gzip.compress(sse(events)),
            media_type="text/event-stream",
            headers={"content-encoding": "gzip"},
        )

    return Starlette(routes=[Route("/agent", agent, methods=["POST"])])


def test_a_gzipped_broken_stream_is_still_judged() -> None:
    with serve(_gzip_agent(ARGS_AFTER_END)) as base, proxied(f"{base}/agent") as px:
        with stream_post(px.url, INPUT, **{"accept-encoding": "gzip"}) as answer:
            raw = b"".join(answer.iter_raw())
        assert answer.status_code == 200
        assert answer.headers["content-encoding"] == "gzip"  # forwarded as sent: fine
        # byte for byte: the agent's gzip body, not one the proxy decoded or re-encoded
        assert raw[:2] == b"\x1f\x8b" and gzip.decompress(raw) == sse(ARGS_AFTER_END)
        wait_until(lambda: px.findings, "the gzipped stream was never judged", 20)
    assert [(f.rule, f.index) for f in px.findings] == [("TOOL-20", 3)]


def test_strict_cuts_a_gzipped_broken_stream() -> None:
    with serve(_gzip_agent(ARGS_AFTER_END)) as base, proxied(f"{base}/agent", strict=True) as px:
        answer = post(px.url, INPUT, **{"accept-encoding": "gzip"})
    # httpx decoded the body: what the frontend's events are
    assert b'"RUN_ERROR"' in answer.content and b"TOOL-20" in answer.content
    # strict forwards what it judged: the decoded events, Content-Encoding removed
    assert "content-encoding" not in answer.headers, answer.headers
    events = sse_events(answer.content)
    assert [e["type"] for e in events] == STRICT_ARGS_AFTER_END
    assert px.rules("agent") == ["TOOL-20"]


def test_a_gzipped_stream_recording_is_readable_by_verify(tmp_path: Path) -> None:
    with serve(_gzip_agent(GOOD)) as base, proxied(f"{base}/agent", record=tmp_path) as px:
        assert post(px.url, INPUT, **{"accept-encoding": "gzip"}).status_code == 200
    assert px.findings == []
    # the contract: "Each stream file is readable by agui-tools verify as is"
    assert (tmp_path / "0001.sse").read_bytes().startswith(b"data:"), (
        tmp_path / "0001.sse"
    ).read_bytes()[:20]
    # the decoded body whole; the meta says how it travelled
    assert (tmp_path / "0001.sse").read_bytes() == sse(GOOD)
    meta = json.loads((tmp_path / "0001.meta.json").read_text())
    assert meta["contentEncoding"] == "gzip" and meta["findings"] == []
    # and verify reads it, as the contract says: a completed run
    from agui_tools.cli import main

    rec = tmp_path / "0001"
    assert main(["verify", f"{rec}.sse", "--input", f"{rec}.input.json"]) == 0


@pytest.mark.parametrize("strict", [False, True], ids=["watching", "strict"])
def test_a_gzipped_stream_that_does_not_decode_is_said_not_truncated(strict: bool) -> None:
    # two chunks: the run's first events, decodable (flushed); then deflate data that
    # is not (0xff: a block of the reserved type) — the run is mid-way when it breaks
    packer = zlib.compressobj(wbits=31)
    first = packer.compress(sse(GOOD[:2])) + packer.flush(zlib.Z_SYNC_FLUSH)
    rest = b"\xff" * 16

    def answer(request: bytes) -> bytes:
        return (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\n"
            b"transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n"
            % (len(first), first, len(rest), rest)
        )

    with raw_upstream(answer) as base, proxied(f"{base}/agent", strict=strict) as px:
        with stream_post(px.url, INPUT) as streamed:
            raw = b"".join(streamed.iter_raw())
    # the rule a consumer would break on (TRANS-4: the stream is not an event stream it
    # can read), said once — not a truncation (TRANS-2) of the agent's run after it
    assert px.rules("agent") == ["TRANS-4"], [f.message for f in px.findings]
    assert "'gzip' does not decode" in px.findings[0].message
    if not strict:
        assert raw == first + rest  # forwarded as it came
    else:  # what decoded and was judged, then the RUN_ERROR naming the rule
        events = sse_events(raw)
        assert [e["type"] for e in events] == ["RUN_STARTED", "TOOL_CALL_START", "RUN_ERROR"]
        assert events[-1]["code"] == "TRANS-4"


def test_a_gzip_bomb_is_forwarded_as_it_came_and_judged_within_bounds() -> None:
    bomb = gzip.compress(b"\n" * (64 * 1024 * 1024), compresslevel=9)  # 64 MiB in ~64 KiB
    with serve(encoded_agent(bomb, "gzip")) as base, proxied(f"{base}/agent") as px:
        with stream_post(px.url, INPUT, timeout=60) as answer:
            raw = b"".join(answer.iter_raw())
    assert raw == bomb  # the frontend's to decode, or not
    # the judge inflated a bounded amount, then said why it stopped (the client's limit)
    assert px.rules("agent") == ["LIMIT"], [f.message for f in px.findings]
    assert "inflated to" in px.findings[0].message


@pytest.mark.parametrize("strict", [False, True], ids=["watching", "strict"])
def test_a_content_encoding_the_proxy_cannot_decode_is_said_not_judged(strict: bool) -> None:
    body = b"\x8b\x02\x80" + sse(ARGS_AFTER_END) + b"\x03"  # as brotli frames stored data
    with serve(encoded_agent(body, "br")) as base, proxied(f"{base}/agent", strict=strict) as px:
        with stream_post(px.url, INPUT) as answer:
            raw = b"".join(answer.iter_raw())
    assert raw == body and answer.headers["content-encoding"] == "br"  # forwarded as is
    # never silently: one warning saying the stream was not judged, and why
    ((rule, severity, message),) = [(f.rule, f.severity, f.message) for f in px.findings]
    assert (rule, severity) == ("TRANS-4", "warning")
    assert message.startswith("not judged: the answer's Content-Encoding 'br'"), message


# -- an upstream that closes mid-body -----------------------------------------------------------


def _cut_after(prefix: bytes, *, chunked: bool) -> Callable[[bytes], bytes]:
    def answer(request: bytes) -> bytes:
        if chunked:
            return (
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n" + b"%x\r\n%s\r\n" % (len(prefix), prefix)
            )  # no terminating 0-chunk: the body is cut
        return (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(sse(GOOD)), prefix)
        )  # fewer bytes than declared: the body is cut

    return answer


def test_an_upstream_cut_short_of_its_content_length_raises_nothing(
    capfd: pytest.CaptureFixture[str],
) -> None:
    cut = sse(GOOD)[:60]
    with raw_upstream(_cut_after(cut, chunked=False)) as base, proxied(f"{base}/agent") as px:
        with stream_post(px.url, INPUT) as answer:
            got = b""
            try:
                for chunk in answer.iter_raw():
                    got += chunk
            except httpx.HTTPError:
                pass  # the frontend sees the cut: right
    assert got == cut
    assert px.upstream_errors  # the cut is said
    no_traceback(capfd)


def test_a_cut_short_content_length_body_records_its_finding(tmp_path: Path) -> None:
    # judged in the judging process, as `agui-tools proxy` judges (inline, the meta is right)
    cut = sse(GOOD)[:60]
    with (
        raw_upstream(_cut_after(cut, chunked=False)) as base,
        proxied(f"{base}/agent", record=tmp_path) as px,
    ):
        with stream_post(px.url, INPUT) as answer:
            try:
                for _ in answer.iter_raw():
                    pass
            except httpx.HTTPError:
                pass
        # the verdict is the judge's, maybe later
        wait_until(lambda: "TRANS-2" in px.rules("agent"), "the truncation was never reported", 20)
        time.sleep(0.5)
    meta = json.loads((tmp_path / "0001.meta.json").read_text())
    assert [f["rule"] for f in meta["findings"]] == ["TRANS-2"], meta


def test_an_upstream_cut_of_a_chunked_body_reaches_the_frontend_as_a_cut() -> None:
    frames = sse(GOOD)
    cut = frames[: frames.index(b"\n\n") + 2 + 15]  # the first event, then half of the next
    with raw_upstream(_cut_after(cut, chunked=True)) as base:
        # direct: the client sees a broken body
        with pytest.raises(httpx.RemoteProtocolError):
            post(f"{base}/agent", INPUT)
        with proxied(f"{base}/agent") as px:
            # through the proxy: the same bytes, and the same broken body ("byte for byte")
            with pytest.raises(httpx.RemoteProtocolError):
                post(px.url, INPUT)
    assert "TRANS-2" in px.rules("agent")


def test_an_upstream_sending_content_length_and_transfer_encoding_is_forwarded_whole(
    capfd: pytest.CaptureFixture[str],
) -> None:
    body = sse(GOOD)

    def answer(request: bytes) -> bytes:
        # both framings: Transfer-Encoding wins (RFC 9112 §6.3), the length is a lie
        return (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 5\r\n"
            b"transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        )

    with raw_upstream(answer) as base, proxied(f"{base}/agent") as px:
        got = post(px.url, INPUT)
    # an intermediary removes the received Content-Length: the body goes whole, chunked
    assert got.status_code == 200 and got.content == body
    assert "content-length" not in got.headers, got.headers
    assert px.findings == [] and px.upstream_errors == []
    no_traceback(capfd)


# -- --record into a folder that cannot be written -----------------------------------------------


def test_a_record_folder_that_cannot_be_written_is_no_500(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    rec = tmp_path / "rec"
    rec.mkdir()
    said: list[str] = []
    with (
        serve(_plain_agent(GOOD)) as base,
        proxied(f"{base}/agent", record=rec, on_notice=said.append) as px,
    ):
        rec.rmdir()
        rec.write_text("")  # the folder is gone (a full disk, a read-only mount: the same OSError)
        answers = [post(px.url, INPUT), post(px.url, {**INPUT, "runId": "r2"})]
    # forwarding goes on: the agent's answer is the frontend's, each time
    assert [(a.status_code, a.content) for a in answers] == [(200, sse(GOOD))] * 2
    assert px.app.recording is not None and px.app.recording.missed == 2
    assert len(said) == 1 and said[0].startswith(f"cannot record in {rec}: "), said
    assert said[0].endswith("; recording stopped, forwarding goes on"), said
    no_traceback(capfd)


def test_a_record_folder_failing_mid_stream_keeps_the_stream_going(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # the input is recorded, then the stream file cannot be opened (its name is taken
    # by a folder, made once the request is forwarded: a folder there beforehand would
    # take the number 0001 — round 2, finding 4): the frontend still gets the whole
    # stream, the exchange is said lost
    said: list[str] = []

    async def agent(request: Request) -> Response:
        await request.body()
        assert (tmp_path / "0001.input.json").exists()
        (tmp_path / "0001.sse").mkdir()
        return Response(sse(GOOD), media_type="text/event-stream")

    with (
        serve(Starlette(routes=[Route("/agent", agent, methods=["POST"])])) as base,
        proxied(f"{base}/agent", record=tmp_path, on_notice=said.append) as px,
    ):
        answer = post(px.url, INPUT)
    assert (answer.status_code, answer.content) == (200, sse(GOOD))
    assert px.app.recording is not None and px.app.recording.missed == 1
    assert len(said) == 1 and "0001.sse" in said[0], said
    assert not (tmp_path / "0001.meta.json").exists()  # no meta for a stream not kept
    no_traceback(capfd)


@pytest.mark.run_error("on_finding failed")  # said, at ERROR, once per finding
def test_an_on_finding_that_raises_breaks_no_exchange_and_stops_no_verdict(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # a callback that fails (a --log on a full disk did): on a frontend finding, told
    # inside the exchange, and on an agent finding, told by the judging process's reader
    from agui_tools.app._watch import WatchFinding
    from agui_tools.transport._proxy import ProxyApp

    def on_finding(finding: WatchFinding) -> None:
        raise OSError(28, "No space left on device")

    dangling = {
        **INPUT,
        "runId": "r2",
        "messages": [
            {"id": "a1", "role": "assistant", "toolCalls": [
                {"id": "c7", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ]},
        ],
    }  # fmt: skip
    with serve(_plain_agent(ARGS_AFTER_END)) as base:
        app = ProxyApp(f"{base}/agent", on_finding=on_finding)
        with serve(app) as url:
            answers = [post(f"{url}/", INPUT), post(f"{url}/", dangling)]
    assert [(a.status_code, a.content) for a in answers] == [(200, sse(ARGS_AFTER_END))] * 2
    assert sorted(rule for _, _, rule in app.tally.counts.elements()) == [
        "FE-8",
        "TOOL-20",
        "TOOL-20",
    ]
    errors = [r for r in caplog.records if r.levelno >= 40]
    assert all(r.name == "agui_tools.proxy" and r.exc_info is None for r in errors), [
        (r.name, r.getMessage()) for r in errors
    ]
    said = sorted(r.getMessage() for r in errors)
    assert said == [
        f"on_finding failed on [{rule}]: OSError: [Errno 28] No space left on device"
        for rule in ("FE-8", "TOOL-20", "TOOL-20")
    ], said


# -- --strict and an answer with a Content-Length -------------------------------------------------


def test_strict_ends_a_content_length_stream_with_one_run_error(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # an agent that answers the whole stream at once (a buffered / serverless response)
    with serve(_plain_agent(ARGS_AFTER_END)) as base, proxied(f"{base}/agent", strict=True) as px:
        answer = post(px.url, INPUT)
    assert px.rules("agent") == ["TOOL-20"]
    events = sse_events(answer.content)
    assert [e["type"] for e in events] == STRICT_ARGS_AFTER_END, answer.content
    assert events[-1]["code"] == "TOOL-20"
    no_traceback(capfd)


# -- the recording, while the proxy runs ----------------------------------------------------------


def test_a_recorded_stream_is_on_disk_once_the_frontend_has_it(tmp_path: Path) -> None:
    body = sse(GOOD)
    with (
        serve(_plain_agent(GOOD)) as base,
        proxied(f"{base}/agent", record=tmp_path) as px,
    ):
        answer = post(px.url, INPUT)
        assert answer.content == body
        # docs/proxy.md: "the response body, byte for byte as the agent sent it (written
        # as it arrives)" — the frontend has every byte: so has the file
        on_disk = (tmp_path / "0001.sse").read_bytes()
        # docs/proxy.md: the meta carries the verdict, written whole once the exchange
        # ends — a moment after the body's last byte (30 s: a bound against a hang only)
        meta_path = tmp_path / "0001.meta.json"
        deadline = time.monotonic() + 30
        while not meta_path.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        meta = orjson.loads(meta_path.read_bytes())
    assert on_disk == body
    assert (meta["status"], meta["threadId"], meta["findings"]) == (200, "t1", [])


# -- the recording, read by the mock ---------------------------------------------------------------


def _refusing_then_streaming(first: Response) -> Starlette:
    """The first POST is answered ``first``; every other one streams GOOD."""
    answered: list[int] = []

    async def agent(request: Request) -> Response:
        await request.body()
        answered.append(1)
        if len(answered) == 1:
            return first
        return Response(sse(GOOD), media_type="text/event-stream")

    return Starlette(routes=[Route("/agent", agent, methods=["POST"])])


def test_mock_replays_a_recorded_plain_text_refusal(tmp_path: Path) -> None:
    from agui_tools.transport._mock import mock_app

    refusal = Response(b"unauthorized", status_code=401, media_type="text/plain")
    with (
        serve(_refusing_then_streaming(refusal)) as base,
        proxied(f"{base}/agent", record=tmp_path) as px,
    ):
        assert post(px.url, INPUT).status_code == 401
        assert post(px.url, {**INPUT, "runId": "r2"}).status_code == 200
    assert sorted(p.name for p in tmp_path.iterdir() if ".meta" not in p.name) == [
        "0001.body",
        "0001.input.json",
        "0002.input.json",
        "0002.sse",
    ]  # the recording contract: "anything else .body"
    # docs/proxy.md: "a recorded refusal (status other than 200) is replayed as that
    # status and body"
    with serve(mock_app(tmp_path, path="/agent", timing="fast")) as mock:
        first = post(f"{mock}/agent", INPUT)
        second = post(f"{mock}/agent", {**INPUT, "runId": "r2"}, accept="text/event-stream")
    assert (first.status_code, first.content) == (401, b"unauthorized")
    assert first.headers["content-type"].startswith("text/plain")
    assert second.status_code == 200 and b"RUN_FINISHED" in second.content  # exchange 2's run


def test_mock_reads_a_recording_holding_a_json_answer(tmp_path: Path) -> None:
    from agui_tools._errors import UsageError
    from agui_tools.transport._mock import mock_app

    with (
        serve(_refusing_then_streaming(JSONResponse({"ok": True}))) as base,
        proxied(f"{base}/agent", record=tmp_path) as px,
    ):
        assert post(px.url, INPUT).status_code == 200
        assert post(px.url, {**INPUT, "runId": "r2"}).status_code == 200
    assert (tmp_path / "0001.json").exists() and (tmp_path / "0002.sse").exists()
    try:
        app = mock_app(tmp_path, path="/agent", timing="fast")
    except UsageError as refused:  # what `agui-tools mock DIR` says, exit 2
        pytest.fail(f"the mock refuses the proxy's recording: {refused}")
    # replayed as recorded, or left out and said: either way the recorded run is served
    with serve(app) as mock:
        replies = [
            post(f"{mock}/agent", {**INPUT, "runId": f"q{n}"}, accept="text/event-stream")
            for n in (1, 2)
        ]
    assert any(b"RUN_FINISHED" in r.content for r in replies), replies
    # docs/proxy.md: a 200 answer that is no event stream is replayed as recorded
    assert (replies[0].status_code, replies[0].json()) == (200, {"ok": True})
    assert replies[0].headers["content-type"] == "application/json"
    assert b"RUN_FINISHED" in replies[1].content


# -- an UPSTREAM with a query ------------------------------------------------------------------


def test_an_upstream_query_is_kept_apart_from_the_frontends() -> None:
    seen: list[tuple[str, bytes]] = []

    async def agent(request: Request) -> Response:
        await request.body()
        seen.append((request.url.path, request.scope["query_string"]))
        return Response(sse(GOOD), media_type="text/event-stream")

    upstream = Starlette(
        routes=[
            Route("/agent", agent, methods=["POST"]),
            Route("/agent/{rest:path}", agent, methods=["POST"]),
        ]
    )
    # a hosted agent keyed by its URL (an Azure Functions ?code=, an API key in the query)
    with serve(upstream) as base, proxied(f"{base}/agent?code=KEY") as px:
        assert post(px.url, INPUT).status_code == 200  # the proxy's root: the upstream itself
        post(f"{px.url}?x=1", INPUT)  # a frontend whose URL carries a query of its own
        post(f"{px.url}runs/7?x=1&y=2", INPUT)  # a path below the root, and a query
    # the upstream's path, then the frontend's; the upstream's query, then the frontend's
    assert seen == [
        ("/agent", b"code=KEY"),
        ("/agent", b"code=KEY&x=1"),
        ("/agent/runs/7", b"code=KEY&x=1&y=2"),
    ], seen


def test_the_frontends_path_goes_upstream_as_it_was_sent() -> None:
    """A percent-escape in the path is forwarded as the frontend wrote it, not decoded
    and re-read (``%2541`` — a literal ``%41`` — must not become ``%41``, an ``A``)."""
    seen: list[bytes] = []

    async def agent(request: Request) -> Response:
        await request.body()
        seen.append(request.scope["raw_path"])
        return Response(sse(GOOD), media_type="text/event-stream")

    upstream = Starlette(routes=[Route("/agent/{rest:path}", agent, methods=["POST"])])
    with serve(upstream) as base, proxied(f"{base}/agent") as px:
        assert post(f"{px.url}files/a%2541%2Fb", INPUT).status_code == 200
    assert seen == [b"/agent/files/a%2541%2Fb"], seen


@pytest.mark.parametrize(
    ("method", "target", "named"),
    [
        ("POST", b"/../admin", "'/../admin'"),
        ("POST", b"/%2e%2e/admin", "'/../admin'"),
        ("POST", b"/runs/..%2Fadmin", "'/runs/../admin'"),
        ("GET", b"/./health/../../admin?x=1", "'/./health/../../admin'"),
        ("POST", b"/runs/..\\admin", "'/runs/..\\\\admin'"),
        ("POST", b"http://other.example/agent", "'http://other.example/agent'"),
    ],
    ids=["dotdot", "encoded", "encoded-slash", "dot-get", "backslash", "absolute-form"],
)
def test_a_path_that_would_leave_the_upstreams_prefix_is_refused_naming_it(
    method: str, target: bytes, named: str
) -> None:
    """Only paths below UPSTREAM's are forwarded: a dot segment (which the upstream, or
    httpx on the way, would resolve to /admin) is a 400 naming the path — not
    normalised, not forwarded; nor is a target that is no path at all."""
    seen: list[str] = []

    async def anything(request: Request) -> Response:
        seen.append(request.url.path)
        return Response(sse(GOOD), media_type="text/event-stream")

    upstream = Starlette(routes=[Route("/{rest:path}", anything, methods=["GET", "POST"])])
    with serve(upstream) as base, proxied(f"{base}/agent") as px:
        status, payload = raw_request(px.url, method, target)
        # the proxy still serves the paths below the prefix
        assert post(f"{px.url}runs/7", INPUT).status_code == 200
    assert status == 400, payload
    message = orjson.loads(payload)["error"]["message"]
    assert named in message and "'/agent'" in message, message
    assert seen == ["/agent/runs/7"]  # the refused request never reached the agent
    assert px.app.exchanges == 1


# -- one --record folder, two proxies --------------------------------------------------------------


def test_two_proxies_recording_in_one_folder_overwrite_nothing(tmp_path: Path) -> None:
    with (
        serve(_plain_agent(GOOD)) as base,
        proxied(f"{base}/agent", record=tmp_path) as one,
        proxied(f"{base}/agent", record=tmp_path) as two,  # a second CI job, the same folder
    ):
        post(one.url, INPUT)
        post(two.url, {**INPUT, "threadId": "t2"})
        post(one.url, {**INPUT, "runId": "r3"})
    inputs = sorted(tmp_path.glob("*.input.json"))
    kept = [orjson.loads(p.read_bytes()) for p in inputs]
    # docs/proxy.md: "a folder that already holds a recording is continued after its
    # highest number, never overwritten" — three exchanges, three recordings
    assert sorted((k["threadId"], k["runId"]) for k in kept) == [
        ("t1", "r1"),
        ("t1", "r3"),
        ("t2", "r1"),
    ], [p.name for p in inputs]
    for path in inputs:  # each number's other files are its own exchange's, not the other's
        number = path.name.split(".", 1)[0]
        meta = orjson.loads((tmp_path / f"{number}.meta.json").read_bytes())
        mine = orjson.loads(path.read_bytes())
        assert (meta["threadId"], meta["runId"]) == (mine["threadId"], mine["runId"]), number
        assert (tmp_path / f"{number}.sse").read_bytes() == sse(GOOD), number


# -- an upstream status past 599 ------------------------------------------------------------------


def test_an_upstream_status_past_599_gets_an_answer(
    capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def answer(request: bytes) -> bytes:
        return b"HTTP/1.1 999 Request denied\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nno"

    with raw_upstream(answer) as base, proxied(f"{base}/agent", record=tmp_path) as px:
        try:
            got: httpx.Response | None = post(px.url, INPUT)
        except httpx.RemoteProtocolError:
            got = None  # "Server disconnected without sending a response."
    assert got is not None  # forwarded as 999, or a 502 problem naming the upstream
    # the ASGI servers answer 100-599 only: a 502 problem naming the upstream and its status
    assert got.status_code == 502, got.text
    problem = got.json()["error"]
    assert problem["upstream"] == f"{base}/agent" and "status 999" in problem["message"]
    assert px.upstream_errors and "status 999" in px.upstream_errors[0][1]
    meta = json.loads((tmp_path / "0001.meta.json").read_text())
    assert (meta["status"], meta["upstreamStatus"]) == (502, 999)
    no_traceback(capfd)
