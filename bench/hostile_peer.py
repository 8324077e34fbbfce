"""A hostile agent for the `check` cases of bench/hostile.py, in a process of its own.

``python -m bench.hostile_peer PORT MEGABYTES``: :func:`tests.check.agents.flood_agent`
— every request answered with small text events, forever when MEGABYTES is 0, else
MEGABYTES MiB of them and the run's end. Its own process, so the checker's peak RSS
is the checker's alone.
"""

from __future__ import annotations

import sys

import uvicorn
from tests.check.agents import flood_agent

if __name__ == "__main__":
    uvicorn.run(
        flood_agent(int(sys.argv[2])),
        host="127.0.0.1",
        port=int(sys.argv[1]),
        log_level="error",
        lifespan="off",
    )
