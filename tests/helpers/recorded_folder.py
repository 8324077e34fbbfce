"""A ``proxy --record`` folder written by hand: one exchange at a time.

:func:`write_exchange` writes an exchange's input, body and meta files (each may be
left out, to make one the mock cannot replay); :data:`SSE` is a whole good run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from agui_tools.wire._framing import sse_frame

INPUT: dict[str, Any] = {
    "threadId": "t1",
    "runId": "r1",
    "messages": [{"id": "u1", "role": "user", "content": "hi"}],
}
GOOD = [
    {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
]
SSE = b"".join(sse_frame(orjson.dumps(e)) for e in GOOD)


def write_exchange(folder: Path, stem: str, body: tuple[str, bytes] | None, meta: Any) -> None:
    (folder / f"{stem}.input.json").write_bytes(orjson.dumps(INPUT))
    if body is not None:
        (folder / f"{stem}.{body[0]}").write_bytes(body[1])
    if meta is not None:
        (folder / f"{stem}.meta.json").write_bytes(orjson.dumps(meta))
