"""An independent attempt at issue #37's promises, with only the docs in hand: each
test is an attack that got through, kept as its regression test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.hostile_folder import exchange, good, loaded, served
from tests.helpers.proxy import post, proxied
from tests.helpers.proxy_query import INPUT, upstream
from tests.helpers.scripted_server import serve


@pytest.mark.parametrize(
    "meta",
    [
        {"status": 500, "contentType": " text/plain"},
        {"status": 500, "contentType": "text/plain\t"},
        {"status": 302, "location": "/elsewhere "},
    ],
)
def test_a_meta_value_with_edge_whitespace_is_left_out_not_an_h11_error(
    tmp_path: Path, meta: dict[str, Any]
) -> None:
    """RFC 9110 §5.5: a field value has no leading or trailing whitespace, and h11
    refuses one that has — a `LocalProtocolError` traceback on each request, 0 bytes
    to the client, as CR/LF gave before the round."""
    folder = tmp_path / "rec"
    folder.mkdir()
    exchange(folder, 1, meta, b"recorded", "body")
    good(folder, 2)
    runs, skipped = loaded(folder)
    assert runs == 1 and len(skipped) == 1, skipped
    assert "0001" in skipped[0] and "whitespace" in skipped[0], skipped
    assert [status for status, _ in served(folder, 1)] == [200]


@pytest.mark.parametrize(
    "query",
    [
        "api[key=EVIL",  # PHP reads an unmatched '[' as '_': $_GET['api_key']
        "api%5Bkey=EVIL",  # the same, percent-encoded
        "api_key%00=EVIL",  # PHP's names are C strings: cut at the NUL, 'api_key'
        "api_key]=EVIL",  # Rack 2 (Rails 6, 7.0): `\A[\[\]]*([^\[\]]+)\]*` reads 'api_key'
        "[api_key]=EVIL",  # leading brackets dropped too
        "%5Dapi_key=EVIL",  # the same, percent-encoded
    ],
)
def test_php_s_and_rack_s_readings_of_a_name_are_refused_too(query: str) -> None:
    seen: list[bytes] = []
    with serve(upstream(seen)) as base, proxied(f"{base}/agent?api_key=KEY") as px:
        answer = post(f"{px.url}?{query}", INPUT)
    assert answer.status_code == 400 and "'api_key'" in answer.text, answer.text
    assert seen == []  # nothing went upstream


def test_a_matched_bracket_still_goes_through_when_it_names_another_parameter() -> None:
    seen: list[bytes] = []
    with serve(upstream(seen)) as base, proxied(f"{base}/agent?api_key=KEY") as px:
        assert post(f"{px.url}?api[x]=1&apikey=2", INPUT).status_code == 200
    assert seen == [b"api_key=KEY&api[x]=1&apikey=2"]


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("0001.meta.json", b'{"status": 200, "conte', "not valid JSON"),  # cut short
        ("0001.input.json", b'{"threadId": "t", "runId":', "not valid JSON"),
        ("0001.sse", b"garbage\x00 no event here", "no event found"),
        (
            "0001.sse",
            b'data: {"type": "RUN_STARTED", "x": ' + b"[" * 2000 + b"]" * 2000 + b"}\n\n",
            "nests",
        ),
    ],
)
def test_one_unreadable_exchange_leaves_itself_out_not_the_whole_folder(
    tmp_path: Path, name: str, content: bytes, says: str
) -> None:
    """The docs: an exchange that cannot be replayed is left out and said, one line;
    a folder is refused only when none can be. One meta cut short (a proxy stopped
    mid-write, a full disk) refused the whole folder, exit 2, nothing served."""
    folder = tmp_path / "rec"
    folder.mkdir()
    good(folder, 1)
    (folder / name).write_bytes(content)
    good(folder, 2)
    runs, skipped = loaded(folder)
    assert runs == 1 and len(skipped) == 1, skipped
    assert name in skipped[0] and says in skipped[0], skipped
    assert "\n" not in skipped[0] and "\x00" not in skipped[0]
    assert [status for status, _ in served(folder, 1)] == [200]


def test_a_folder_s_total_is_capped_not_only_each_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/security.md: 256 MiB of capture is some 1.4 GB parsed, "the cap bounds it" —
    but only per file: ten files just under the cap are ten times that."""
    folder = tmp_path / "rec"
    folder.mkdir()
    for number in range(1, 11):
        good(folder, number)
    each = (folder / "0001.sse").stat().st_size + (folder / "0001.input.json").stat().st_size
    monkeypatch.setattr("agui_tools.transport._captures.MAX_CAPTURE_BYTES", each * 3)
    runs, skipped = loaded(folder)
    assert runs <= 3 and skipped, (runs, skipped)


def test_an_exchange_left_out_costs_nothing_of_the_folder_s_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What is left out is not kept: it must not use up the cap the exchanges after it
    are loaded under (a refused status, a meta-less body)."""
    folder = tmp_path / "rec"
    folder.mkdir()
    good(folder, 2)
    each = (folder / "0002.sse").stat().st_size + (folder / "0002.input.json").stat().st_size
    exchange(folder, 1, {"status": 99}, b"x" * each, "body")  # no replayable status
    good(folder, 3)
    monkeypatch.setattr("agui_tools.transport._captures.MAX_CAPTURE_BYTES", each * 2 + 10)
    runs, skipped = loaded(folder)
    assert runs == 2 and len(skipped) == 1 and "0001" in skipped[0], skipped


def test_a_run_input_past_the_request_body_limit_is_left_out_unread(tmp_path: Path) -> None:
    """A run input is parsed whole and kept: `{}` by the million cost many times its
    size in memory, so 256 MiB of it was gigabytes — for an input no face would have
    taken as a request (`DEFAULT_MAX_BODY_BYTES`)."""
    from agui_tools.transport._front import DEFAULT_MAX_BODY_BYTES

    folder = tmp_path / "rec"
    folder.mkdir()
    good(folder, 1)
    padded = (
        b'{"threadId": "t", "runId": "r", "messages": []' + b" " * DEFAULT_MAX_BODY_BYTES + b"}"
    )
    (folder / "0001.input.json").write_bytes(padded)
    good(folder, 2)
    runs, skipped = loaded(folder)
    assert runs == 1 and len(skipped) == 1, skipped
    assert "0001.input.json" in skipped[0] and f"{DEFAULT_MAX_BODY_BYTES:,}" in skipped[0]
    assert [status for status, _ in served(folder, 1)] == [200]


def test_check_with_otel_records_the_client_s_spans_of_its_runs() -> None:
    """docs/observability.md: "`check` and `inspect` record the client's spans of the
    runs they send". Against a served agent, `check --otel` wrote none."""
    import re
    import subprocess

    from tests.helpers.otel_cli import AGENT, CLEAN_ENV, agui, spans_in
    from tests.helpers.terminal import AGUI, ROOT

    server = subprocess.Popen(
        [*AGUI, "serve", AGENT, "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=CLEAN_ENV, cwd=ROOT,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        url = re.match(r"Serving AG-UI agent at (\S+)", server.stdout.readline()).group(1)  # type: ignore[union-attr]
        checked = agui("check", url, "--timeout", "5", "-q", "--otel")
    finally:
        server.terminate()
        server.communicate(timeout=20)
    assert "agui.run" in {span["name"] for span in spans_in(checked.stderr)}, checked.stderr[-2000:]
