"""The smallest run the ``agui-tools proxy`` command tests send, and what the
command says when it is stopped with that run's stream still open."""

from __future__ import annotations

INPUT = {"threadId": "t1", "runId": "r1", "messages": []}
RS = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
# all of stderr once the proxy stops with one stream still open and no rule broken
ONE_CUT_SHORT = [
    "agui-tools proxy: 1 run request(s), 0 error(s), 0 warning(s), 1 stream(s) cut short "
    "(the frontend left, or the proxy stopped)",
    "  no rule broken by either side",
    "agui-tools proxy: stopped",
]
