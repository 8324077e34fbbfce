"""Versions: of this package, and of the protocol it speaks.

``PROTOCOL_VERSION`` is read from the bundled schema's ``$id``
(``https://ag-ui.com/spec/1.1/schema.json`` → ``"1.1"``), so the version we
declare is the version whose schema we enforce. It is what a client puts on
``RunAgentInput.protocolVersion`` and a producer on ``RUN_STARTED`` (INPUT-4,
RUN-2, VER-5).
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

    Versions compare numerically component by component (VER-5), and a
    declaration that cannot be interpreted is treated like a newer one.

    Components are ASCII digits, at most nine each: a peer controls this
    string, and ``int()`` of thousands of digits raises (Python's
    integer-string limit) or of Unicode digits (``"١.٠"``) accepts what no
    version is. Anything longer or stranger is uninterpretable — which VER-5
    answers with "proceed and warn", never with an error.
    """
    match = _VERSION.fullmatch(value)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2))
