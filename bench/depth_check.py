"""What the whole-event depth check costs (issue 28, item 9, finding 3).

Enforcement bounds the nesting of *every* member of an event, stripped and
unjudged ones included: the walker measures a member no schema node judges (an
unknown property, passed on or stripped; an unknown union member; the rest of an
object dropped for an unrecognised required member) with the bound it gives open
values. Clean events pay nothing (the fast path already bounds what it accepts,
and the walker's added test is on the unknown-member branch only). Printed: the
walker's time per event (µs), and for comparison the whole-event alternative
``nests_within(event, max_depth)`` (one orjson encoding in C) alone. Run it at
the commit before to compare.

    PYTHONPATH=src .venv/bin/python -m bench.depth_check
"""

from __future__ import annotations

import timeit
from typing import Any

from agui_tools.wire import Enforcer
from agui_tools.wire._enforce import nests_within

EVENTS: dict[str, dict[str, Any]] = {
    "STATE_DELTA (2 ops)": {
        "type": "STATE_DELTA",
        "delta": [{"op": "add", "path": "/a", "value": 1}, {"op": "remove", "path": "/b"}],
    },
    "MESSAGES_SNAPSHOT (2 messages)": {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            {"id": "u1", "role": "user", "content": "hello there"},
            {
                "id": "a1",
                "role": "assistant",
                "content": "calling",
                "toolCalls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
        ],
    },
    "STATE_SNAPSHOT (unknown member)": {
        "type": "STATE_SNAPSHOT",
        "snapshot": {"a": [1, 2, {"b": "c"}]},
        "extra": {"x": 1},
    },
    "RUN_FINISHED (interrupt outcome)": {
        "type": "RUN_FINISHED",
        "threadId": "t",
        "runId": "r",
        "outcome": {"type": "interrupt", "interrupts": [{"id": "i", "reason": "r"}]},
    },
}


def main() -> int:
    enforcer = Enforcer()
    number = 20_000
    print(f"{'event':34} {'walk µs':>8} {'whole-event check µs':>21} {'share':>6}")
    for name, event in EVENTS.items():
        slow = min(
            timeit.repeat(lambda e=event: enforcer._slow_event(e, 1), number=number, repeat=5)
        )
        check = min(timeit.repeat(lambda e=event: nests_within(e, 128), number=number, repeat=5))
        per, alone = slow / number * 1e6, check / number * 1e6
        print(f"{name:34} {per:8.2f} {alone:21.2f} {alone / per:6.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
