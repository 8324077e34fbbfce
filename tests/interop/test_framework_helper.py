"""tests/helpers/frameworks.py on a tiny stand-in framework (no dependencies, a stdlib
harness): the venv is built once and rebuilt when its requirements change, a failed build
fails under CI and skips elsewhere, and a harness is served, answered and stopped — its
output shown when it dies or the block fails."""

from __future__ import annotations

import textwrap
from pathlib import Path

import httpx
import pytest

from tests.helpers import frameworks

HARNESS = textwrap.dedent(
    """
    import argparse, http.server, sys
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    parser.add_argument("--die", action="store_true")
    args = parser.parse_args()
    print("tiny harness starting", flush=True)
    if args.die:
        print("tiny harness: cannot start", file=sys.stderr, flush=True)
        sys.exit(3)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"tiny")

    http.server.HTTPServer(("127.0.0.1", args.port), Handler).serve_forever()
    """
)


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    here = tmp_path / "interop" / "frameworks"
    here.mkdir(parents=True)
    (here / "tiny-requirements.txt").write_text("# nothing to install\n")
    (here / "tiny_agent.py").write_text(HARNESS)
    monkeypatch.setattr(frameworks, "ROOT", tmp_path)
    monkeypatch.setattr(frameworks, "HERE", here)
    monkeypatch.setattr(frameworks, "VENV_ARGS", ("--without-pip",))  # ensurepip is the slow part
    return here


def test_the_venv_is_built_once_and_rebuilt_when_its_requirements_change(tiny: Path) -> None:
    python = frameworks.ensure_venv("tiny")
    assert python.exists()
    stamp = frameworks.venv_dir("tiny") / frameworks.STAMP
    first = stamp.stat().st_mtime_ns
    assert frameworks.ensure_venv("tiny") == python
    assert stamp.stat().st_mtime_ns == first  # up to date: not rebuilt
    (tiny / "tiny-requirements.txt").write_text("# nothing to install, said differently\n")
    frameworks.ensure_venv("tiny")
    assert stamp.stat().st_mtime_ns != first


def test_a_failed_build_says_why_fails_under_ci_and_skips_elsewhere(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tiny / "tiny-requirements.txt").write_text("this is not === a requirement\n")
    with pytest.raises(frameworks.FrameworkUnavailable) as info:
        frameworks.ensure_venv("tiny")
    assert "tiny" in str(info.value) and "pip" in str(info.value)
    assert not frameworks.venv_dir("tiny").exists()  # no half-built venv left to trust
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set"):
        frameworks.require_venv("tiny")
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception, match="cannot be installed here"):
        frameworks.require_venv("tiny")


def test_a_harness_is_served_until_the_block_ends(tiny: Path) -> None:
    with frameworks.serving_framework("tiny") as served:
        assert httpx.get(served.url).text == "tiny"
        assert "tiny harness starting" in served.output()
    assert served.process.poll() is not None  # stopped
    with pytest.raises(httpx.ConnectError):
        httpx.get(served.url, timeout=2)


def test_a_harness_that_dies_or_a_failing_block_shows_its_output(tiny: Path) -> None:
    with pytest.raises(RuntimeError, match="exited with 3 before it answered") as info:
        with frameworks.serving_framework("tiny", args=["--die"]):
            pass
    assert "tiny harness: cannot start" in str(info.value)
    with pytest.raises(AssertionError) as failed:
        with frameworks.serving_framework("tiny"):
            raise AssertionError("the test's own failure")
    assert any("tiny harness starting" in note for note in failed.value.__notes__)
