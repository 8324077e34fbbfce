"""The inspector against hostile peers, round 2 (issue 28), on real loopback servers.

Each test failed on the code before: bound to a wildcard address the inspector
answered any ``Host`` — a DNS-rebinding page got ``GET /``, and the session token
in it; a 5,000-digit ``Last-Event-ID`` or run number was a 500.
"""

from __future__ import annotations

import asyncio

import httpx

from agui_tools.demo.agent import demo_agent
from agui_tools.testing import serving
from agui_tools.transport import agent_app
from agui_tools.ui.inspector import Inspector, host_policy, inspector_app


def test_a_rebinding_page_gets_neither_page_nor_token_at_any_bind() -> None:
    """Item 5: the policy an inspector bound to 127.0.0.1 or to 0.0.0.0 applies, served on
    loopback; the rebinding page's request is Host = evil.test:PORT."""

    async def go() -> None:
        async with serving(agent_app(demo_agent(delay=0), path="/agent")) as agent:
            for bind in ("127.0.0.1", "0.0.0.0", "::"):
                inspector = Inspector(f"{agent}/agent")
                app = inspector_app(inspector, hosts=host_policy(bind))
                async with serving(app) as base, httpx.AsyncClient(timeout=10) as c:
                    port = base.rsplit(":", 1)[1]
                    evil = f"evil.test:{port}"
                    page = await c.get(f"{base}/", headers={"host": evil})
                    assert page.status_code == 403, bind
                    assert inspector.token not in page.text and "DNS" in page.text
                    events = await c.get(
                        f"{base}/api/events",
                        params={"token": inspector.token},
                        headers={"host": evil},
                    )
                    assert events.status_code == 403
                    prompt = await c.post(
                        f"{base}/api/prompt",
                        json={"text": "hi"},
                        headers={
                            "host": evil,
                            "origin": f"http://{evil}",
                            "x-inspector-token": inspector.token,
                        },
                    )
                    assert prompt.status_code == 403
                    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
                        ok = await c.get(f"{base}/", headers={"host": host})
                        assert ok.status_code == 200 and inspector.token in ok.text, (bind, host)
                await inspector.aclose()

    asyncio.run(go())


def test_numbers_too_long_to_be_ours_are_a_400_not_a_500() -> None:
    """Item 9: int() of 5,000 digits raises (Python's 4,300-digit limit), and so does
    int() of a digit str.isdigit() admits but int() does not ("²"): both were 500s."""

    async def go() -> None:
        async with serving(agent_app(demo_agent(delay=0), path="/agent")) as agent:
            inspector = Inspector(f"{agent}/agent")
            app = inspector_app(inspector, hosts=host_policy("127.0.0.1"))
            async with serving(app) as base, httpx.AsyncClient(timeout=10) as c:
                token = {"token": inspector.token}
                for last in ("9" * 5000, "²", "-1", "1.5", "x"):
                    answer = await c.get(  # as latin-1, the header's own charset ("²" is B2)
                        f"{base}/api/events",
                        params=token,
                        headers={"last-event-id": last.encode("latin-1")},
                    )
                    assert answer.status_code == 400, (last[:10], answer.status_code)
                    assert "Last-Event-ID" in answer.json()["error"]
                for what in (
                    f"run-{'9' * 5000}.sse",
                    f"run-{'1' * 5000}.input.json",
                    f"run-{'1' * 19}.sse",
                ):
                    answer = await c.get(f"{base}/api/export/{what}", params=token)
                    assert answer.status_code == 400, (what[:10], answer.status_code)
                    assert "run number" in answer.json()["error"]
                for what in ("run-7.sse", "run-².sse"):  # could be ours, not captured; no number
                    missing = await c.get(f"{base}/api/export/{what}", params=token)
                    assert missing.status_code == 404, what
            await inspector.aclose()

    asyncio.run(go())
