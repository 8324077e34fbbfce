"""The wire schema (``_proto_events.proto``) against the protobuf freeze, and the
checked-in generated code against the ``.proto`` (TRANS-7)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from agui_tools.wire import _proto_events_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]
WIRE = ROOT / "src" / "agui_tools" / "wire"
FREEZE = ROOT / "spec" / "proto-freeze.txt"
JSON_TYPES = {"JsonObject", "JsonObject.Entry", "JsonValue", "JsonList", "JsonNull"}
"""google/protobuf/struct.proto spelled out: not AG-UI slots, so not in the freeze."""


def frozen() -> dict[str, int]:
    slots = {}
    for line in FREEZE.read_text().splitlines():
        if line and not line.startswith("#"):
            name, number = line.split(" = ")
            slots[name] = int(number)
    return slots


def ours() -> dict[str, int]:
    slots: dict[str, int] = {}
    prefix = pb.DESCRIPTOR.package + "."

    def walk(md: object) -> None:
        name = md.full_name.removeprefix(prefix)  # type: ignore[attr-defined]
        if name in JSON_TYPES:
            return
        for fd in md.fields:  # type: ignore[attr-defined]
            oneof = fd.containing_oneof
            if oneof is not None and not oneof.name.startswith("_"):  # a real oneof, not `optional`
                slots[f"{name}.{oneof.name}.{fd.name}"] = fd.number
            else:
                slots[f"{name}.{fd.name}"] = fd.number
        for nested in md.nested_types:  # type: ignore[attr-defined]
            walk(nested)

    for md in pb.DESCRIPTOR.message_types_by_name.values():
        walk(md)
    for enum in pb.DESCRIPTOR.enum_types_by_name.values():
        if enum.name not in JSON_TYPES:
            for value in enum.values:
                slots[f"{enum.name}.{value.name}"] = value.number
    return slots


def test_every_slot_has_its_frozen_number_and_no_slot_is_invented() -> None:
    assert ours() == frozen()


def test_the_freeze_is_read_whole() -> None:
    """The comparison above can fail: the freeze is not empty and names the 1.1 slots."""
    slots = frozen()
    assert len(slots) > 250
    assert slots["ReasoningEncryptedValueEvent.encrypted_value_type"] == 6
    assert slots["Event.event.reasoning_encrypted_value"] == 31


def test_the_checked_in_code_is_what_the_compiler_writes(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{WIRE}",
            f"--python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            str(WIRE / "_proto_events.proto"),
        ],
        check=True,
    )
    for name in ("_proto_events_pb2.py", "_proto_events_pb2.pyi"):
        assert (tmp_path / name).read_text() == (WIRE / name).read_text(), (
            f"{name} is stale: regenerate it as _proto_events.proto says"
        )


def test_the_proto_says_how_to_regenerate() -> None:
    text = (WIRE / "_proto_events.proto").read_text()
    assert re.search(r"grpc_tools\.protoc .*--python_out", text.replace("\\\n", " "))
