"""``mock DIR`` with a hostile recording folder (issue #37): the mock opens a
recording's files without following links and reads regular files only, caps their
sizes, and validates every meta field it replays at start-up — each exchange it
cannot trust is left out and said (one line, escaped), the others are served."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_tools import UsageError
from agui_tools.testing import serving
from agui_tools.transport import mock_app
from agui_tools.transport._captures import MAX_META_BYTES, load_captures
from tests.helpers.hostile_folder import INPUT, SECRET, exchange, good, loaded, served


def test_a_body_linked_to_a_file_outside_is_left_out_and_never_served(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET)
    folder = tmp_path / "rec"
    folder.mkdir()
    exchange(folder, 1, {"status": 500, "contentType": "text/plain"}, b"", "body")
    (folder / "0001.body").unlink()
    (folder / "0001.body").symlink_to(outside)
    good(folder, 2)
    runs, skipped = loaded(folder)
    assert runs == 1
    assert [line for line in skipped if "0001.body" in line and "symbolic link" in line], skipped
    for _status, body in served(folder):
        assert SECRET.encode() not in body


@pytest.mark.parametrize("name", ["0001.sse", "0001.meta.json", "0001.input.json"])
def test_any_file_of_an_exchange_linked_elsewhere_leaves_it_out(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "rec"
    folder.mkdir()
    good(folder, 1)
    good(folder, 2)
    target = tmp_path / "elsewhere"
    target.write_bytes((folder / name).read_bytes())
    (folder / name).unlink()
    (folder / name).symlink_to(target)
    runs, skipped = loaded(folder)
    assert runs == 1 and len(skipped) == 1 and "symbolic link" in skipped[0], skipped


def test_a_body_linked_to_dev_zero_is_left_out_without_reading_it(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    folder.mkdir()
    good(folder, 1)
    (folder / "0001.sse").unlink()
    (folder / "0001.sse").symlink_to("/dev/zero")
    good(folder, 2)
    runs, skipped = loaded(folder)  # a MemoryError at 1.9 GB, before
    assert runs == 1 and "0001.sse" in skipped[0] and "symbolic link" in skipped[0], skipped


def test_a_fifo_is_left_out_and_the_mock_starts(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    folder.mkdir()
    good(folder, 1)
    (folder / "0001.sse").unlink()
    os.mkfifo(folder / "0001.sse")
    good(folder, 2)
    result: list[Any] = []
    loader = threading.Thread(target=lambda: result.append(loaded(folder)), daemon=True)
    loader.start()
    loader.join(timeout=30)  # a hang bound: opening a FIFO used to block for ever
    assert result, "loading a folder holding a FIFO did not return"
    runs, skipped = result[0]
    assert runs == 1 and "0001.sse" in skipped[0] and "not a regular file" in skipped[0], skipped


def test_a_named_capture_that_is_a_device_is_refused_in_one_line() -> None:
    with pytest.raises(UsageError, match="not a regular file"):
        load_captures(["/dev/zero"])


def test_a_file_past_its_cap_is_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "rec"
    folder.mkdir()
    good(folder, 1)
    good(folder, 2)
    (folder / "0001.meta.json").write_text(
        json.dumps({"status": 200, "contentType": "text/event-stream", "pad": "x" * MAX_META_BYTES})
    )
    runs, skipped = loaded(folder)
    assert runs == 1 and "0001.meta.json" in skipped[0] and f"{MAX_META_BYTES:,}" in skipped[0]
    monkeypatch.setattr("agui_tools.transport._captures.MAX_CAPTURE_BYTES", 400)
    (folder / "0002.sse").write_bytes(b": pad\n" * 100 + (folder / "0002.sse").read_bytes())
    with pytest.raises(UsageError, match=r"0002\.sse.*larger than"):
        loaded(folder)  # nothing left to replay: said, naming why


@pytest.mark.parametrize(
    ("meta", "says"),
    [
        ({"status": 302, "location": "/a\r\nSet-Cookie: x=1"}, "location"),
        ({"status": 302, "location": "/a\x00b"}, "location"),
        ({"status": 302, "location": 7}, "location"),
        ({"status": 500, "contentType": "text/plain\r\nX-Evil: 1"}, "contentType"),
        ({"status": 500, "contentType": "text/plain\u2028"}, "contentType"),
        ({"status": 500, "contentType": ["text/plain"]}, "contentType"),
        ({"status": "500"}, "status"),
        ({"status": 200.5}, "status"),
        ({"status": 700}, "status"),
    ],
)
def test_a_meta_field_that_cannot_be_replayed_leaves_its_exchange_out(
    tmp_path: Path, meta: dict[str, Any], says: str
) -> None:
    folder = tmp_path / "rec"
    folder.mkdir()
    exchange(folder, 1, meta, b"recorded", "body")
    good(folder, 2)
    runs, skipped = loaded(folder)
    assert runs == 1 and len(skipped) == 1, skipped
    line = skipped[0]
    assert "0001" in line and says in line, line
    assert "\r" not in line and "\n" not in line and "\x00" not in line  # escaped, one line
    # the rest is served (an h11 error on every request gave 0 bytes)
    assert [status for status, _ in served(folder, 1)] == [200]


def test_a_valid_redirect_is_still_replayed_with_its_location(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    folder.mkdir()
    exchange(folder, 1, {"status": 302, "location": "/elsewhere?a=1"}, b"", "body")

    async def main() -> httpx.Response:
        async with serving(mock_app(folder)) as base, httpx.AsyncClient(timeout=30) as client:
            return await client.post(f"{base}/", json=INPUT)

    answer = asyncio.run(main())
    assert answer.status_code == 302 and answer.headers["location"] == "/elsewhere?a=1"
