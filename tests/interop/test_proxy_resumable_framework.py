"""#38 item 4: a framework's own AG-UI adapter behind ``agui-tools proxy --resumable``.

LangGraph's adapter (the standard binding only, in its pinned venv:
:mod:`tests.helpers.frameworks`) answers a standard request; a frontend that opted in
is cut at every event boundary and rejoins through the proxy: it gets the uncut run's
events once each, in order, and the proxy's findings are the uncut run's.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from agui_tools.transport._resumable import Resumable
from tests.helpers.frameworks import require_venv, serving_framework
from tests.helpers.proxy import proxied, wait_until
from tests.helpers.resumable import OPT_IN, SSE, ids_and_events

pytestmark = pytest.mark.interop


def asked(run_id: str) -> dict[str, Any]:
    return {
        "threadId": f"thread-{run_id}", "runId": run_id, "state": {}, "context": [],
        "forwardedProps": {}, "tools": [],
        "messages": [{"id": "u1", "role": "user", "content": "Say hello."}],
    }  # fmt: skip


def shape(events: list[tuple[str | None, dict[str, Any]]]) -> list[Any]:
    """What is the same from run to run (a framework draws its own message ids)."""
    return [(e["type"], e.get("delta"), e.get("role")) for _, e in events]


def cut_after(client: httpx.Client, run_id: str, k: int) -> list[Any]:
    delivered: list[Any] = []
    with client.stream("POST", "/", json=asked(run_id), headers=OPT_IN) as stream:
        assert stream.headers.get("agui-resumable") == "1"
        raw = b""
        for chunk in stream.iter_bytes():
            raw += chunk
            whole = ids_and_events(raw[: raw.rfind(b"\n\n") + 2])
            if len(whole) >= k:
                delivered = whole[:k]
                break
    rejoin = client.get(
        f"/threads/thread-{run_id}/runs/{run_id}/events",
        headers={**SSE, "last-event-id": f"{run_id}:{k}"},
    )
    assert rejoin.status_code == 200, rejoin.text
    return delivered + ids_and_events(rejoin.content)


@pytest.mark.slow
def test_langgraph_behind_proxy_resumable_is_rejoined_at_every_boundary() -> None:
    python = require_venv("langgraph")  # skips (fails under CI) when it cannot be built
    with (
        serving_framework("langgraph", python=python) as served,
        proxied(served.url, resumable=Resumable()) as proxy,
        httpx.Client(base_url=proxy.url, timeout=60) as client,
    ):
        uncut = client.post("/", json=asked("uncut"), headers=OPT_IN)
        whole = ids_and_events(uncut.content)
        assert whole[-1][1]["type"] == "RUN_FINISHED" and len(whole) >= 3, whole
        for k in range(len(whole) + 1):
            got = cut_after(client, f"cut-{k}", k)
            assert [i for i, _ in got] == [f"cut-{k}:{s}" for s in range(1, len(whole) + 1)], k
            assert shape(got) == shape(whole), f"cut after {k}"
        wait_until(lambda: not proxy.app._writers, "the upstream's answers read to their end")

        def rules(run_id: str) -> list[str]:
            with proxy.lock:
                return sorted(f.rule for f in proxy.findings if f.run_id == run_id)

        for k in range(len(whole) + 1):
            assert rules(f"cut-{k}") == rules("uncut"), k
