"""``agui-tools serve --resumable`` (docs/resumable.md): the flags, their errors, and a
SQLite run log that outlives the process serving it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx

from tests.helpers.proxy import serve_cmd
from tests.helpers.resumable import OPT_IN, SSE, ids_and_events
from tests.helpers.terminal import AGUI, ENV, ROOT

INPUT = {"threadId": "t1", "runId": "r1", "messages": []}


def serve_fails(*args: str) -> tuple[int, str]:
    done = subprocess.run(
        [*AGUI, "serve", "--port", "0", *args],
        capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=60, check=False,
    )  # fmt: skip
    return done.returncode, done.stderr


def test_the_log_flags_need_resumable() -> None:
    flags = (
        ["--retention", "5"],
        ["--run-log", "x.db"],
        ["--lease", "3"],
        ["--max-run-bytes", "9"],
    )
    for flag in flags:
        code, err = serve_fails(*flag)
        assert code == 2
        assert err == f"agui-tools serve: {flag[0]} needs --resumable\n"


def test_a_run_log_that_cannot_open_is_one_line(tmp_path: Path) -> None:
    where = str(tmp_path / "missing" / "runs.db")
    code, err = serve_fails("--resumable", "--run-log", where)
    assert code == 2
    assert err.startswith(f"agui-tools serve: cannot open the run log '{where}': ")
    assert err.count("\n") == 1


def test_a_password_in_the_connection_string_is_never_repeated() -> None:
    code, err = serve_fails(
        "--resumable", "--run-log", "postgresql://u:s3cret@127.0.0.1:1/db?connect_timeout=1"
    )
    assert code == 2 and "s3cret" not in err
    assert err.startswith("agui-tools serve: cannot open the run log in PostgreSQL: ")
    assert err.count("\n") == 1, "libpq's reason comes on two lines: one is printed"
    assert "Connection refused" in err


def test_a_sqlite_run_log_outlives_its_server(tmp_path: Path) -> None:
    log = str(tmp_path / "runs.db")
    first, url = serve_cmd("--path", "/", "--resumable", "--run-log", log, "--retention", "60")
    try:
        answer = httpx.post(url, json=INPUT, headers=OPT_IN, timeout=30)
        assert answer.headers["agui-resumable"] == "1"
        served = ids_and_events(answer.content)
        assert served[0][0] == "r1:1" and served[-1][1]["type"] == "RUN_FINISHED"
    finally:
        first.terminate()
        first.communicate(timeout=30)
    second, url = serve_cmd("--path", "/", "--resumable", "--run-log", log)
    try:
        rejoin = httpx.get(url + "threads/t1/runs/r1/events?after=1", headers=SSE, timeout=30)
        assert rejoin.status_code == 200
        assert ids_and_events(rejoin.content) == served[1:]
        again = httpx.post(url, json=INPUT, headers=OPT_IN, timeout=30)
        assert again.status_code == 409 and again.json()["rule"] == "RESUME-4"
    finally:
        second.terminate()
        second.communicate(timeout=30)


def test_a_lease_below_the_minimum_is_a_usage_error() -> None:
    """A tiny lease would spin the keeper that renews it four times a lease."""
    code, err = serve_fails("--resumable", "--lease", "0.01")
    assert code == 2
    assert "argument --lease: 0.01 is shorter than the shortest lease, 0.1 seconds" in err
    assert "Traceback" not in err


def test_max_run_bytes_caps_a_run_and_the_stream_ends_run_log_limit() -> None:
    served, url = serve_cmd("--path", "/", "--resumable", "--max-run-bytes", "300")
    try:
        answer = httpx.post(url, json=INPUT, headers=OPT_IN, timeout=30)
    finally:
        served.terminate()
        served.communicate(timeout=30)
    events = [event for _, event in ids_and_events(answer.content)]
    assert events[0]["type"] == "RUN_STARTED"
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "RUN_LOG_LIMIT"
    assert "max_run_bytes=300" in events[-1]["message"]


def test_a_byte_count_takes_units_and_refuses_what_is_not_one() -> None:
    from agui_tools.cli._common import positive_bytes

    assert positive_bytes("2048") == 2048
    assert positive_bytes("8MiB") == 8 * 1024 * 1024
    assert positive_bytes("3 kib") == 3 * 1024
    for bad in ("1.5MiB", "-1", "0", "8MB", "", "MiB"):
        code, err = serve_fails("--resumable", "--max-run-bytes", bad)
        assert code == 2 and "argument --max-run-bytes:" in err and "Traceback" not in err, err
