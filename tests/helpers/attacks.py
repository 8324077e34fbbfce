"""Hostile inputs shared by the tests, the fuzz campaign's oracle check and bench/."""

from __future__ import annotations

from typing import Any


def patch_bomb(groups: int) -> list[dict[str, Any]]:
    """Issue 11, item 1: add/copy/copy/move groups, each doubling /a and nesting it one
    level deeper — 156 bytes a group, a 3 KB patch for 19 of them."""
    ops: list[dict[str, Any]] = []
    for _ in range(groups):
        ops += [
            {"op": "add", "path": "/t", "value": {}},
            {"op": "copy", "from": "/a", "path": "/t/x"},
            {"op": "copy", "from": "/a", "path": "/t/y"},
            {"op": "move", "from": "/t", "path": "/a"},
        ]
    return ops
