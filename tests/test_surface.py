"""The public surface: small, one spelling per name, documented, and cheap to import."""

from __future__ import annotations

import importlib
import re
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


def test_the_surface_is_at_most_thirty_names_each_resolvable_once() -> None:
    names = agui_tools.__all__
    assert 20 <= len(names) <= 30, len(names)
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


MOVED = {
    "app": (
        "TextDelta",
        "CallUpdate",
        "CallStatus",
        "PolicyVerdict",
        "StoreReadFailed",
        "StoreWriteFailed",
        "StoreOutcomeUnknown",
        "StaleThread",
        "ReloadRequired",
    ),
    "wire": ("ConsumerPipeline",),
}
"""Names that left the top for their stage's surface: importable there, not at the top."""


@pytest.mark.parametrize(("subpackage", "name"), [(s, n) for s, ns in MOVED.items() for n in ns])
def test_a_name_moved_off_the_top_is_on_its_subpackage_surface(subpackage: str, name: str) -> None:
    assert name not in agui_tools.__all__
    with pytest.raises(AttributeError, match=name):
        getattr(agui_tools, name)
    module = importlib.import_module(f"agui_tools.{subpackage}")
    assert name in module.__all__ and getattr(module, name) is not None


PUBLIC_SURFACES = (
    "agui_tools",
    "agui_tools.wire",
    "agui_tools.app",
    "agui_tools.agent",
    "agui_tools.transport",
    "agui_tools.check",
    "agui_tools.ui.inspector",
    "agui_tools.integrations.openai",
    "agui_tools.testing",
)


def _public_classes() -> dict[str, list[tuple[str, type]]]:
    """Every class a public surface exports, by name, with where it is exported."""
    found: dict[str, list[tuple[str, type]]] = {}
    for surface in PUBLIC_SURFACES:
        module = importlib.import_module(surface)
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type):
                found.setdefault(name, []).append((surface, value))
    return found


def test_every_public_exception_is_defined_in_the_errors_module() -> None:
    elsewhere = [
        f"{surface}.{name} (defined in {cls.__module__})"
        for name, exported in _public_classes().items()
        for surface, cls in exported
        if issubclass(cls, BaseException) and cls.__module__ != "agui_tools._errors"
    ]
    assert not elsewhere, elsewhere


def test_the_errors_module_opens_with_the_tree_of_every_exception_it_defines() -> None:
    from agui_tools import _errors

    doc = _errors.__doc__ or ""
    defined = [
        name
        for name, value in vars(_errors).items()
        if isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == _errors.__name__
        and name == value.__name__
    ]
    assert len(defined) >= 20, defined
    missing = [n for n in defined if not re.search(rf"[─ ]{n}\b", doc)]
    assert not missing, f"the tree in _errors.py does not draw {missing}"


def test_no_two_public_classes_share_a_name_with_different_meanings() -> None:
    clashes = {
        name: sorted(f"{cls.__module__}.{cls.__qualname__}" for _, cls in exported)
        for name, exported in _public_classes().items()
        if len({cls for _, cls in exported}) > 1
    }
    assert not clashes, clashes


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
