"""The public surface: small, one spelling per name, documented, and cheap to import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import agui_tools

ROOT = Path(__file__).resolve().parents[1]
HEAVY = (
    "pydantic",
    "ag_ui",
    "httpx",
    "starlette",
    "uvicorn",
    "rich",
    "jsonschema_rs",
    "opentelemetry",
)


def _modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    return {name.split(".")[0] for name in out.split()}


@pytest.mark.parametrize("statement", ["import agui_tools", "import agui_tools.cli"])
def test_importing_the_package_or_the_cli_loads_nothing_heavy(statement: str) -> None:
    loaded = _modules_after(statement)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_the_surface_is_about_thirty_names_each_resolvable_once() -> None:
    names = agui_tools.__all__
    assert 25 <= len(names) <= 40, len(names)
    assert len(set(names)) == len(names)
    for name in names:
        assert getattr(agui_tools, name) is not None, name
    assert sorted(dir(agui_tools)) == sorted(names)


def test_internals_are_not_at_the_top_but_in_their_subpackage() -> None:
    for name in ("Decoder", "Enforcer", "CompatibilityBoundary", "sse_comment", "Emitter"):
        assert name not in agui_tools.__all__
        with pytest.raises(AttributeError):
            getattr(agui_tools, name)
    from agui_tools.agent import Emitter
    from agui_tools.wire import CompatibilityBoundary, Decoder, Enforcer, sse_comment

    assert all((Emitter, CompatibilityBoundary, Decoder, Enforcer, sse_comment))


def test_every_public_name_is_documented_in_the_api_page() -> None:
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    missing = [n for n in agui_tools.__all__ if f"`{n}`" not in page]
    assert not missing, f"docs/api.md does not document {missing}"


def test_verify_capture_is_the_document_verify_json_prints(tmp_path: Path) -> None:
    capture = (
        b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
        b'data: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}\n\n'
        b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}\n\n'
        b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n'
    )
    (tmp_path / "c.sse").write_bytes(capture)
    printed = subprocess.run(
        [sys.executable, "-m", "agui_tools", "verify", "--json", str(tmp_path / "c.sse")],
        capture_output=True,
        check=False,
        cwd=ROOT,
    )
    import orjson

    verdict = agui_tools.verify_capture(capture)
    assert printed.returncode == 1  # the message was never ended: STREAM-rule violation
    assert orjson.loads(printed.stdout) == orjson.loads(orjson.dumps(verdict.to_json()))
    assert verdict.result.outcome == "failed" and verdict.result.error is not None
