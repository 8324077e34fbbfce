"""Attacks on ``agui-tools proxy`` from its docs alone (docs/proxy.md, docs/cli.md).

Each test is a real problem found by an adversarial pass: a real upstream (a
Starlette app on uvicorn, or a raw socket server answering exactly the bytes a
test needs), a real :class:`ProxyApp`, a real client. They are marked
``xfail(strict=True)`` until fixed: each asserts what the docs promise.
"""

from __future__ import annotations

import gzip
import json
import socket
import socketserver
import threading
import time
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

from agui_tools.wire._framing import SSEReader, sse_frame
from tests.helpers.proxy import proxied
from tests.helpers.scripted_server import serve

INPUT: dict[str, Any] = {
    "threadId": "t1",
    "runId": "r1",
    "messages": [{"id": "u1", "role": "user", "content": "hi"}],
}
RS = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
RF = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}
TS = {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "search"}
TA = {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"}
TE = {"type": "TOOL_CALL_END", "toolCallId": "c1"}
GOOD = [RS, TS, TA, TE, RF]
ARGS_AFTER_END = [RS, TS, TE, TA, RF]  # TOOL-20 at event #3


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(sse_frame(orjson.dumps(e)) for e in events)


def post(url: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(
        url,
        content=orjson.dumps(body),
        headers={"content-type": "application/json", **headers},
        timeout=30,
    )


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


@pytest.mark.xfail(
    strict=True,
    reason="attack: the proxy's httpx cookie jar keeps an upstream Set-Cookie and sends it "
    "on every later request, from any frontend",
)
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
    # the proxy forwards end-to-end headers: B sent no Cookie, so the agent must see none
    assert seen == [None]


@pytest.mark.xfail(
    strict=True,
    reason="attack: the proxy adds httpx's default headers the frontend never sent "
    "(accept: */*, accept-encoding: gzip, deflate, user-agent: python-httpx)",
)
def test_the_agent_gets_the_frontends_end_to_end_headers_and_no_others() -> None:
    seen: list[dict[str, str]] = []

    async def agent(request: Request) -> Response:
        await request.body()
        seen.append(dict(request.headers))
        return Response(sse(GOOD), media_type="text/event-stream")

    upstream = Starlette(routes=[Route("/agent", agent, methods=["POST"])])
    with serve(upstream) as base, proxied(f"{base}/agent") as px:
        # a raw socket: exactly these headers — no Accept, no Accept-Encoding, no User-Agent
        port = int(px.url.rsplit(":", 1)[1].strip("/"))
        body = orjson.dumps(INPUT)
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(
                b"POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                b"x-trace: 7\r\nconnection: close\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(body), body)
            )
            while sock.recv(65536):
                pass
    (headers,) = seen
    end_to_end = set(headers) - {"host", "connection", "content-length"}
    assert end_to_end == {"content-type", "x-trace"}, headers


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


@pytest.mark.xfail(
    strict=True,
    reason="attack: a gzip-encoded stream is forwarded unjudged — a broken agent behind "
    "a compressing server is never reported",
)
def test_a_gzipped_broken_stream_is_still_judged() -> None:
    with serve(_gzip_agent(ARGS_AFTER_END)) as base, proxied(f"{base}/agent") as px:
        answer = post(px.url, INPUT, **{"accept-encoding": "gzip"})
        assert answer.status_code == 200
        assert answer.headers["content-encoding"] == "gzip"  # forwarded as sent: fine
    assert [(f.rule, f.index) for f in px.findings] == [("TOOL-20", 3)]


@pytest.mark.xfail(
    strict=True,
    reason="attack: --strict forwards a gzip-encoded broken stream whole, no RUN_ERROR",
)
def test_strict_cuts_a_gzipped_broken_stream() -> None:
    with serve(_gzip_agent(ARGS_AFTER_END)) as base, proxied(f"{base}/agent", strict=True) as px:
        answer = post(px.url, INPUT, **{"accept-encoding": "gzip"})
    # httpx decoded the body: what the frontend's events are
    assert b'"RUN_ERROR"' in answer.content and b"TOOL-20" in answer.content


@pytest.mark.xfail(
    strict=True,
    reason="attack: a gzip-encoded stream is recorded compressed; verify refuses the "
    "recording (exit 2) where the proxy said nothing",
)
def test_a_gzipped_stream_recording_is_readable_by_verify(tmp_path: Path) -> None:
    with serve(_gzip_agent(GOOD)) as base, proxied(f"{base}/agent", record=tmp_path) as px:
        assert post(px.url, INPUT, **{"accept-encoding": "gzip"}).status_code == 200
    assert px.findings == []
    # the contract: "Each stream file is readable by agui-tools verify as is"
    assert (tmp_path / "0001.sse").read_bytes().startswith(b"data:"), (
        tmp_path / "0001.sse"
    ).read_bytes()[:20]


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


@pytest.mark.xfail(
    strict=True,
    reason="attack: an upstream body cut short of its Content-Length makes the proxy's "
    "ASGI app raise (h11 LocalProtocolError traceback in the log)",
)
def test_an_upstream_cut_short_of_its_content_length_raises_nothing(
    capfd: pytest.CaptureFixture[str],
) -> None:
    cut = sse(GOOD)[:60]
    with raw_upstream(_cut_after(cut, chunked=False)) as base, proxied(f"{base}/agent") as px:
        with httpx.stream(
            "POST",
            px.url,
            content=orjson.dumps(INPUT),
            headers={"content-type": "application/json"},
            timeout=30,
        ) as answer:
            got = b""
            try:
                for chunk in answer.iter_raw():
                    got += chunk
            except httpx.HTTPError:
                pass  # the frontend sees the cut: right
    assert got == cut
    assert px.upstream_errors  # the cut is said
    no_traceback(capfd)


@pytest.mark.xfail(
    strict=True,
    reason="attack: an upstream cut short of its Content-Length: TRANS-2 is reported "
    "but missing from the recording's meta.json findings (judging process)",
)
def test_a_cut_short_content_length_body_records_its_finding(tmp_path: Path) -> None:
    # judged in the judging process, as `agui-tools proxy` judges (inline, the meta is right)
    cut = sse(GOOD)[:60]
    with (
        raw_upstream(_cut_after(cut, chunked=False)) as base,
        proxied(f"{base}/agent", record=tmp_path, judge_in_process=True) as px,
    ):
        with httpx.stream(
            "POST",
            px.url,
            content=orjson.dumps(INPUT),
            headers={"content-type": "application/json"},
            timeout=30,
        ) as answer:
            try:
                for _ in answer.iter_raw():
                    pass
            except httpx.HTTPError:
                pass
        deadline = time.monotonic() + 20
        while "TRANS-2" not in px.rules("agent"):  # the verdict is the judge's, maybe later
            assert time.monotonic() < deadline, "the truncation was never reported"
            time.sleep(0.05)
        time.sleep(0.5)
    meta = json.loads((tmp_path / "0001.meta.json").read_text())
    assert [f["rule"] for f in meta["findings"]] == ["TRANS-2"], meta


@pytest.mark.xfail(
    strict=True,
    reason="attack: an upstream that cuts a chunked body is ended cleanly towards the "
    "frontend (the 0-chunk is added): the frontend cannot tell the cut",
)
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


# -- --record into a folder that cannot be written -----------------------------------------------


def test_a_record_folder_that_cannot_be_written_is_no_500(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    rec = tmp_path / "rec"
    rec.mkdir()
    said: list[str] = []
    with (
        serve(_plain_agent(GOOD)) as base,
        proxied(f"{base}/agent", record=rec, on_record_error=said.append) as px,
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
    # by a folder): the frontend still gets the whole stream, the exchange is said lost
    said: list[str] = []
    (tmp_path / "0001.sse").mkdir()
    with (
        serve(_plain_agent(GOOD)) as base,
        proxied(f"{base}/agent", record=tmp_path, on_record_error=said.append) as px,
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
        app = ProxyApp(f"{base}/agent", on_finding=on_finding, judge_in_process=True)
        try:
            with serve(app) as url:
                # the second input waits for the first stream's verdict (its thread's
                # last run): a reader stopped by the callback would never give it
                answers = [post(f"{url}/", INPUT), post(f"{url}/", dangling)]
        finally:
            app.stop_judge()
    assert [(a.status_code, a.content) for a in answers] == [(200, sse(ARGS_AFTER_END))] * 2
    assert sorted(f.rule for f in app.findings) == ["FE-8", "TOOL-20", "TOOL-20"]
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


@pytest.mark.xfail(
    strict=True,
    reason="attack: --strict on a whole (Content-Length) SSE body that breaks a rule sends "
    "the agent's Content-Length with a different body: 0 bytes, a broken connection, a traceback",
)
def test_strict_ends_a_content_length_stream_with_one_run_error(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # an agent that answers the whole stream at once (a buffered / serverless response)
    with serve(_plain_agent(ARGS_AFTER_END)) as base, proxied(f"{base}/agent", strict=True) as px:
        answer = post(px.url, INPUT)
    assert px.rules("agent") == ["TOOL-20"]
    events = [orjson.loads(d) for d in SSEReader().feed(answer.content)]
    assert [e["type"] for e in events] == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_END",
        "RUN_ERROR",
    ], answer.content
    assert events[-1]["code"] == "TOOL-20"
    no_traceback(capfd)


# -- the recording, while the proxy runs ----------------------------------------------------------


def test_a_recorded_stream_is_on_disk_once_the_frontend_has_it(tmp_path: Path) -> None:
    body = sse(GOOD)
    with (
        serve(_plain_agent(GOOD)) as base,
        proxied(f"{base}/agent", record=tmp_path, judge_in_process=True) as px,
    ):
        answer = post(px.url, INPUT)
        assert answer.content == body
        # docs/proxy.md: "the response body, byte for byte as the agent sent it (written
        # as it arrives)" — the frontend has every byte: so has the file
        on_disk = (tmp_path / "0001.sse").read_bytes()
        # docs/proxy.md: the meta carries the verdict, which the judging process gives
        # a moment after the body's end — it follows (30 s: a bound against a hang only)
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


@pytest.mark.xfail(
    strict=True,
    reason="attack: a recorded refusal that is not JSON (401 text/plain, kept as NNNN.body) "
    "is silently dropped by the mock: request 1 gets exchange 2's run",
)
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
    assert (first.status_code, first.content) == (401, b"unauthorized")


@pytest.mark.xfail(
    strict=True,
    reason="attack: one non-stream 200 JSON exchange in a proxy recording (NNNN.json) makes "
    "the mock refuse the whole folder (PROC-2, exit 2)",
)
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


# -- an UPSTREAM with a query ------------------------------------------------------------------


@pytest.mark.xfail(
    strict=True,
    reason="attack: with an UPSTREAM holding a query (?code=KEY), the frontend's path and "
    "query are appended after it: /agent?code=KEY?x=1 — the key is corrupted",
)
def test_an_upstream_query_is_kept_apart_from_the_frontends() -> None:
    seen: list[tuple[str, dict[str, str]]] = []

    async def agent(request: Request) -> Response:
        await request.body()
        seen.append((request.url.path, dict(request.query_params)))
        return Response(sse(GOOD), media_type="text/event-stream")

    upstream = Starlette(routes=[Route("/agent", agent, methods=["POST"])])
    # a hosted agent keyed by its URL (an Azure Functions ?code=, an API key in the query)
    with serve(upstream) as base, proxied(f"{base}/agent?code=KEY") as px:
        assert post(px.url, INPUT).status_code == 200  # the proxy's root: the upstream itself
        post(f"{px.url}?x=1", INPUT)  # a frontend whose URL carries a query of its own
    assert seen[0] == ("/agent", {"code": "KEY"})
    assert seen[1:] == [("/agent", {"code": "KEY", "x": "1"})], seen


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


@pytest.mark.xfail(
    strict=True,
    reason="attack: an upstream status past 599 (LinkedIn's 999; HTTP allows 3 digits) "
    "crashes the proxy's answer (KeyError: 999): the frontend gets no response at all",
)
def test_an_upstream_status_past_599_gets_an_answer(capfd: pytest.CaptureFixture[str]) -> None:
    def answer(request: bytes) -> bytes:
        return b"HTTP/1.1 999 Request denied\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nno"

    with raw_upstream(answer) as base, proxied(f"{base}/agent") as px:
        try:
            status: int | None = post(px.url, INPUT).status_code
        except httpx.RemoteProtocolError:
            status = None  # "Server disconnected without sending a response."
    assert status is not None  # forwarded as 999, or a 502 problem naming the upstream
    no_traceback(capfd)
