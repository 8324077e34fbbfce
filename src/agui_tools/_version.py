"""Versions: of this package, and of the protocol it speaks.

``PROTOCOL_VERSION`` is read from the bundled schema's ``$id``, so the version declared
(INPUT-4, RUN-2, VER-5) is the one whose schema is enforced.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import orjson

__version__: Final = "1.0.0"


def _from_schema_id(schema_id: str) -> str:
    match = re.search(r"/spec/(\d+\.\d+)/", schema_id)
    if not match:
        raise RuntimeError(f"bundled schema has no version in its $id: {schema_id!r}")
    return match.group(1)


def _schema_id() -> str:
    """The bundled schema's ``$id``, read without compiling the schema (a cheap import)."""
    data = (Path(__file__).parent / "_data" / "schema.json").read_bytes()
    schema_id: str = orjson.loads(data)["$id"]
    return schema_id


PROTOCOL_VERSION: Final = _from_schema_id(_schema_id())


_VERSION: Final = re.compile(r"([0-9]{1,9})\.([0-9]{1,9})")


def parse_version(value: str) -> tuple[int, int] | None:
    """``"1.10"`` → ``(1, 10)``; ``None`` for anything that is not MAJOR.MINOR.

    Components are at most nine ASCII digits: a peer controls the string, and ``int()`` of
    thousands of (or Unicode) digits misbehaves. Uninterpretable is "proceed and warn" (VER-5).
    """
    match = _VERSION.fullmatch(value)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2))
