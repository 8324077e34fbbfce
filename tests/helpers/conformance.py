"""Loading the conformance fixtures kept in ``tests/conformance/streams``.

The fixtures are copies of the official AG-UI corpus (MIT), kept under their
original names so a failure names the upstream fixture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

STREAMS = Path(__file__).resolve().parents[1] / "conformance" / "streams"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads((STREAMS / f"{name}.json").read_bytes())
    return data


def names() -> list[str]:
    return sorted(p.stem for p in STREAMS.glob("*.json"))


def get_path(value: Any, dotted: str) -> Any:
    """Resolve ``"2.delta"``-style paths used by ``eventPaths``; KeyError if absent."""
    for part in dotted.split("."):
        if isinstance(value, list):
            value = value[int(part)]
        elif isinstance(value, dict):
            value = value[part]
        else:
            raise KeyError(dotted)
    return value
