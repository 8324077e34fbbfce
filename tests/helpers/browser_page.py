"""The inspector page in Chromium as a person drives it.

:func:`agent_setup` serves an agent and an :class:`Inspector` on it; :func:`send`
types a message and sends it; :func:`card` is a call's card; :func:`until` polls an
expression in the page (the page's CSP forbids ``wait_for_function``'s eval).
"""

from __future__ import annotations

import time
from contextlib import AsyncExitStack
from typing import Any

from agui_tools.testing import serving
from agui_tools.ui.inspector import Inspector


def agent_setup(app: Any, **inspector: Any) -> Any:
    async def setup(stack: AsyncExitStack) -> Inspector:
        base = await stack.enter_async_context(serving(app))
        return Inspector(f"{base}/agent", **inspector)

    return setup


def card(page: Any, call_id: str) -> Any:
    return page.locator(f'article.card[data-call-id="{call_id}"]')


def send(page: Any, text: str) -> None:
    page.get_by_label("Your message to the agent").fill(text)
    page.get_by_role("button", name="Send").click()


def until(page: Any, expression: str, timeout: float = 120) -> Any:
    """Poll ``expression`` in the page (wait_for_function evaluates a string: the CSP
    forbids it, rightly) until it is truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = page.evaluate(expression)
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        time.sleep(0.05)
