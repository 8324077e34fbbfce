"""``mock`` reading a ``proxy --record`` folder's answers that are no event stream (#25).

A real upstream (Starlette on uvicorn) answers a redirect, a 204, a 200 JSON
answer and a stream through a real :class:`ProxyApp` recording them; the mock
replays each as recorded — status, content type, body, ``Location`` — in the
recorded order. An exchange that cannot be replayed is left out and said at
start-up, naming the file and why (never dropped in silence).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from agui_tools._errors import UsageError
from agui_tools.transport._mock import mock_app
from tests.helpers.proxy import proxied
from tests.helpers.recorded_folder import INPUT, SSE, write_exchange
from tests.helpers.scripted_server import serve


def post(url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        url,
        content=orjson.dumps(body),
        headers={"content-type": "application/json", "accept": "text/event-stream"},
        timeout=30,
    )


def _answering(*answers: Response) -> Starlette:
    """The n-th POST is answered ``answers[n]``."""
    left = list(answers)

    async def agent(request: Request) -> Response:
        await request.body()
        return left.pop(0)

    return Starlette(routes=[Route("/agent", agent, methods=["POST"])])


def test_a_recorded_redirect_204_and_json_answer_are_replayed_as_recorded(
    tmp_path: Path,
) -> None:
    upstream = _answering(
        RedirectResponse("/elsewhere", status_code=307),
        Response(status_code=204),
        JSONResponse({"ok": True}),
        Response(SSE, media_type="text/event-stream"),
    )
    with serve(upstream) as base, proxied(f"{base}/agent", record=tmp_path) as px:
        statuses = [post(px.url, {**INPUT, "runId": f"r{n}"}).status_code for n in range(4)]
    assert statuses == [307, 204, 200, 200]
    meta = json.loads((tmp_path / "0001.meta.json").read_text())
    assert meta["location"] == "/elsewhere"  # the proxy keeps what a redirect needs
    assert "location" not in json.loads((tmp_path / "0004.meta.json").read_text())

    app = mock_app(tmp_path, path="/agent", timing="fast")
    assert app.state.mock.skipped == []
    with serve(app) as mock:
        moved, empty, answer, stream = (
            post(f"{mock}/agent", {**INPUT, "runId": f"q{n}"}) for n in range(4)
        )
    assert (moved.status_code, moved.headers["location"]) == (307, "/elsewhere")
    assert (empty.status_code, empty.content) == (204, b"")
    assert "content-length" not in empty.headers and "content-type" not in empty.headers
    assert (answer.status_code, answer.json()) == (200, {"ok": True})
    assert answer.headers["content-type"] == "application/json"
    assert stream.status_code == 200 and b'"runId":"q3"' in stream.content


def _unreplayable(folder: Path) -> None:
    write_exchange(folder, "0001", None, None)  # the body never written
    write_exchange(folder, "0002", ("body", b"unauthorized"), None)  # no meta: what status?
    write_exchange(folder, "0003", ("json", b"{}"), {"status": None, "contentType": None})
    write_exchange(folder, "0005", ("body", b"x"), {"status": 999, "contentType": "text/plain"})


def test_an_exchange_that_cannot_be_replayed_is_left_out_and_said(tmp_path: Path) -> None:
    _unreplayable(tmp_path)
    write_exchange(
        tmp_path, "0004", ("sse", SSE), {"status": 200, "contentType": "text/event-stream"}
    )
    app = mock_app(tmp_path, path="/agent", timing="fast")
    skipped = app.state.mock.skipped
    assert len(skipped) == 4, skipped
    assert skipped[0].startswith(f"{tmp_path / '0001.input.json'}: not replayed: no response body")
    assert skipped[1].startswith(f"{tmp_path / '0002.body'}: not replayed: no 0002.meta.json")
    assert skipped[2].startswith(f"{tmp_path / '0003.json'}: not replayed: 0003.meta.json records")
    assert "status None" in skipped[2]
    assert skipped[3] == (
        f"{tmp_path / '0005.body'}: not replayed: 0005.meta.json records status 999; "
        "the mock replays 200-599"
    )
    with serve(app) as mock:
        first = post(f"{mock}/agent", INPUT)
    assert first.status_code == 200 and b"RUN_FINISHED" in first.content  # exchange 4's run


def test_a_meta_without_content_type_beside_a_stream_file_replays_its_events(
    tmp_path: Path,
) -> None:
    write_exchange(tmp_path, "0001", ("sse", SSE), {"status": 200})  # a hand-written meta
    with serve(mock_app(tmp_path, path="/agent", timing="fast")) as mock:
        first = post(f"{mock}/agent", INPUT)
    assert first.headers["content-type"].startswith("text/event-stream")
    assert b"RUN_FINISHED" in first.content


def test_a_fault_meant_for_a_recorded_answer_is_said_not_applied(tmp_path: Path) -> None:
    write_exchange(tmp_path, "0001", ("body", b"no"), {"status": 401, "contentType": "text/plain"})
    write_exchange(
        tmp_path, "0002", ("sse", SSE), {"status": 200, "contentType": "text/event-stream"}
    )
    said: list[tuple[int, int, str]] = []
    app = mock_app(
        tmp_path,
        path="/agent",
        timing="fast",
        faults=["cut:1@1"],
        on_request=lambda *line: said.append(line),
    )
    with serve(app) as mock:
        first = post(f"{mock}/agent", INPUT)
    assert (first.status_code, first.content) == (401, b"no")
    assert said == [
        (
            1,
            401,
            f"the recorded answer of {tmp_path / '0001.body'} (faults cut:1@1 not applied: "
            "it has no events)",
        )
    ]


def test_a_folder_of_exchanges_none_replayable_is_refused_naming_them(tmp_path: Path) -> None:
    _unreplayable(tmp_path)
    with pytest.raises(UsageError) as refused:
        mock_app(tmp_path, path="/agent")
    said = str(refused.value)
    assert "no recorded exchange can be replayed" in said
    assert "0002.body" in said and "0003.json" in said
