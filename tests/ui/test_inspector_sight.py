"""The inspector as a person sees it (issue 36): every tab and dialog of every kind of
inspector — live, ``--store`` with several agents, replay and import, ``proxy --inspect``
— at 1280 px and at 390 px, judged on the screen by ``tests/helpers/sight.py``: the
active panel is the only one painted, no two blocks overlap, nothing scrolls sideways,
no text is cut off; and a few screenshots compared with ``tests/ui/references/``."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from agui_tools.app._store_sqlite import SQLiteStore
from agui_tools.demo.agent import demo_agent
from agui_tools.testing import serving
from agui_tools.transport import agent_app
from agui_tools.ui.inspector import Inspector
from tests.helpers.scripted_server import serve
from tests.helpers.sight import (
    ARTEFACTS,
    assert_looks_right,
    match_reference,
    only_painted,
    painted,
    unpainted,
)

from .conftest import inspector_server, screenshot
from .inspector_agents import echo_agent, register_three, three_calls_agent
from .test_inspector_browser import agent_setup, send
from .test_inspector_proxy import Frontend, proxy_with_inspector

WIDTHS = {"wide": (1280, 800), "phone": (390, 844)}
TABS = {
    "Timeline": "#panel-timeline",
    "State": "#panel-state",
    "Next input": "#panel-input",
    "Tools": "#panel-tools",
    "Export": "#panel-export",
}
# the blocks a person reads side by side or one under another: none may cover another
BLOCKS = [
    "header.bar > *:not(.session-controls), .session-controls > *",
    "main.layout > section",
    ".chat > *",
    ".side > *",
    ".tabs > *",
    "#log > *",
    ".panel > *",
    "#timeline > li",
    ".prompt > *",
]
DIALOG_BLOCKS = [
    "#replay-box > *, #import-view > *, .imported-run > *, .timeline.imported > li",
    "#agent-box > *",
]
# a capture that breaks a rule on its second frame: the import shows both, and the verdict
CAPTURE = (
    b'data: {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n\n'
    b'data: {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}\n\n'
    b'data: {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Hello"}\n\n'
    b'data: {"type": "TOOL_CALL_ARGS", "toolCallId": "ghost", "delta": "{}"}\n\n'
)


@contextmanager
def sized_page(browser: Any, url: str, width: str) -> Iterator[Any]:
    """A page of ``width`` (a key of WIDTHS) on ``url``; a script error on it fails the test."""
    w, h = WIDTHS[width]
    context = browser.new_context(viewport={"width": w, "height": h}, color_scheme="light")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.set_default_timeout(15_000)
    page.goto(url)
    page.locator("#agent").filter(has_text=re.compile(".")).wait_for()
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"script errors on the page: {errors}"


def every_tab_looks_right(page: Any, where: str, tabs: dict[str, str] = TABS) -> None:
    """Each tab in turn: its panel the only one painted, and the page as a whole right."""
    for name, panel in tabs.items():
        tab = page.get_by_role("tab", name=name, exact=True)
        tab.scroll_into_view_if_needed()
        tab.click()
        problems = only_painted(page, panel, list(tabs.values()))
        assert not problems, f"{where}, tab {name}:\n  " + "\n  ".join(problems)
        assert_looks_right(page, f"{where}, tab {name}", BLOCKS)
    page.get_by_role("tab", name="Timeline", exact=True).click()


def open_dialog(page: Any, button: str, box: str) -> None:
    page.get_by_role("button", name=button, exact=True).click()
    problem = painted(page, box)
    assert problem is None, problem


def close_dialog(page: Any, box: str) -> None:
    page.keyboard.press("Escape")
    problem = unpainted(page, box)
    assert problem is None, problem


def import_capture(page: Any, path: Path) -> None:
    page.get_by_label(re.compile("A capture to import")).set_input_files(str(path))
    page.locator(".imported-run").wait_for()


@pytest.mark.parametrize("width", WIDTHS)
def test_a_live_inspector_every_tab_and_dialog(browser: Any, tmp_path: Path, width: str) -> None:
    capture = tmp_path / "capture.sse"
    capture.write_bytes(CAPTURE)
    app = agent_app(three_calls_agent(delay=0), path="/agent")
    with (
        inspector_server(agent_setup(app, register=register_three)) as served,
        sized_page(browser, served.url, width) as page,
    ):
        every_tab_looks_right(page, f"{width}, before any run")
        send(page, "Do the three things")
        page.get_by_role("button", name="Approve place_order").wait_for()
        every_tab_looks_right(page, f"{width}, cards awaiting consent")

        open_dialog(page, "Agent…", "#agent-box")
        assert_looks_right(page, f"{width}, the Agent dialog", DIALOG_BLOCKS)
        close_dialog(page, "#agent-box")

        open_dialog(page, "Replay…", "#replay-box")
        import_capture(page, capture)
        for row in ('li[data-index="0"]', 'li[data-index="3"]'):
            problem = painted(page, f".timeline.imported {row}")
            assert problem is None, problem
        assert_looks_right(page, f"{width}, an imported capture", DIALOG_BLOCKS)
        if width == "wide":
            screenshot(page, "inspector-import.png", tmp_path)
        # closed, nothing of it stays on the page
        page.locator("#replay-box").get_by_role("button", name="Close").click()
        for gone in ("#replay-box", ".imported-run", '.timeline.imported li[data-index="0"]'):
            problem = unpainted(page, gone)
            assert problem is None, problem
        assert_looks_right(page, f"{width}, the dialog closed", BLOCKS)


def two_agents_on_a_store(tmp_path: Path) -> Any:
    db, index = tmp_path / "threads.db", tmp_path / "threads.db.inspector.json"

    async def setup(stack: AsyncExitStack) -> Inspector:
        a = await stack.enter_async_context(serving(echo_agent("alpha")))
        b = await stack.enter_async_context(serving(echo_agent("beta")))
        agents = {"alpha": f"{a}/agent", "beta": f"{b}/agent"}
        return Inspector(None, agents=agents, store=SQLiteStore(db), index=index)

    return setup


def one_thread_then_another(page: Any, served: Any) -> None:
    """Two threads kept by the store: the thread picker shows."""
    send(page, "Hello there")
    page.locator(".bubble.assistant", has_text="alpha heard").wait_for()
    page.get_by_role("status").filter(has_text="idle").wait_for()
    old = served.call(lambda: served.inspector.thread_id)
    page.get_by_role("button", name="Start a new thread").click()
    for _ in range(100):
        new = served.call(lambda: served.inspector.thread_id)
        if new != old:
            break
        time.sleep(0.05)
    # the page reloads on the new thread (its id is not shown on a phone: attached is enough)
    page.locator("#thread-id", has_text=new).wait_for(state="attached")
    send(page, "Hello again")
    page.locator(".bubble.assistant", has_text="alpha heard").wait_for()
    page.get_by_role("status").filter(has_text="idle").wait_for()


@pytest.mark.parametrize("width", WIDTHS)
def test_a_store_with_several_agents_and_the_thread_picker(
    browser: Any, tmp_path: Path, width: str
) -> None:
    with (
        inspector_server(two_agents_on_a_store(tmp_path)) as served,
        sized_page(browser, served.url, width) as page,
    ):
        one_thread_then_another(page, served)
        for control in ("#thread-select", "#agent-select"):
            problem = painted(page, control)
            assert problem is None, problem
        every_tab_looks_right(page, f"{width}, two threads and two agents")
        page.evaluate("window.scrollTo(0, 0)")
        shot = "inspector-threads-wide.png" if width == "wide" else "inspector-threads-phone.png"
        screenshot(page, shot, tmp_path)
        # the agent's URL is read whole, not cut to an ellipsis nor squeezed away
        problem = painted(page, "#agent")
        assert problem is None, problem
        agent = page.locator("#agent")
        assert agent.evaluate("(el) => el.scrollWidth <= el.clientWidth"), (
            f"{width}: the agent's URL is cut short: {agent.inner_text()!r} in "
            f"{agent.evaluate('(el) => el.clientWidth')} px"
        )
        open_dialog(page, "Agent…", "#agent-box")
        assert_looks_right(page, f"{width}, the Agent dialog", DIALOG_BLOCKS)
        close_dialog(page, "#agent-box")


@pytest.mark.parametrize("width", WIDTHS)
def test_proxy_inspect_every_tab(browser: Any, width: str) -> None:
    with (
        serve(agent_app(demo_agent(delay=0), path="/agent")) as upstream,
        proxy_with_inspector(f"{upstream}/agent") as (proxy, inspector),
        sized_page(browser, inspector, width) as page,
    ):
        frontend = Frontend(proxy, "t1")
        frontend.run(frontend.conv.next_input(user="Order two widgets for me"))
        page.locator('article.card[data-call-id="s1-location"]').wait_for()
        problem = painted(page, "#read-only")
        assert problem is None, problem
        for hidden in ("#prompt-form", "#send"):
            problem = unpainted(page, hidden)
            assert problem is None, problem
        every_tab_looks_right(page, f"{width}, proxy --inspect")


# a checkbox and the words that label it, read as one line: the words start to the right of
# the box and the box sits within the height of the words' first line
CHECKBOX_BESIDE_ITS_WORDS = """() => [...document.querySelectorAll('label')]
  .filter((label) => label.querySelector('input[type=checkbox]') && label.offsetParent)
  .flatMap((label) => {
    const box = label.querySelector('input[type=checkbox]').getBoundingClientRect();
    const words = [...label.childNodes].find((n) => n.nodeType === 3 && n.textContent.trim());
    if (!words) return [];
    const range = document.createRange();
    range.selectNodeContents(words);
    const line = range.getClientRects()[0];
    const middle = box.top + box.height / 2;
    const beside = line.left >= box.right - 1 && middle >= line.top && middle <= line.bottom;
    return beside ? [] : [`'${words.textContent.trim()}': its checkbox at `
      + `(${Math.round(box.left)}, ${Math.round(box.top)}), its words at `
      + `(${Math.round(line.left)}, ${Math.round(line.top)})`];
  })"""


@pytest.mark.parametrize("width", WIDTHS)
def test_a_checkbox_sits_beside_its_words(browser: Any, width: str) -> None:
    """The mock-tool form's "has side effects" box is read with its words on one line, not
    stranded above them in the middle of the form."""
    app = agent_app(echo_agent("alpha"), path="/agent")
    with (
        inspector_server(agent_setup(app)) as served,
        sized_page(browser, served.url, width) as page,
    ):
        page.get_by_role("tab", name="Tools", exact=True).click()
        page.get_by_label("has side effects (asks for consent)").wait_for()
        problems = page.evaluate(CHECKBOX_BESIDE_ITS_WORDS)
        assert not problems, f"{width}, tab Tools: " + "; ".join(problems)


# -- screenshots against the references ------------------------------------------------------


def test_the_pages_look_as_their_references(browser: Any, tmp_path: Path) -> None:
    """A fresh page at 1280 px, its State tab at 390 px and an import in the Replay dialog:
    a moved, covered or overflowing block changes far more pixels than the tolerance."""
    capture = tmp_path / "capture.sse"
    capture.write_bytes(CAPTURE)
    app = agent_app(three_calls_agent(delay=0), path="/agent")
    with inspector_server(agent_setup(app, register=register_three)) as served:
        with sized_page(browser, served.url, "wide") as page:
            ports = [page.locator("#agent"), page.locator("#thread-id")]
            match_reference(page, "inspector-1280.png", mask=ports)
            open_dialog(page, "Replay…", "#replay-box")
            import_capture(page, capture)
            match_reference(page, "inspector-import-1280.png", mask=ports)
        with sized_page(browser, served.url, "phone") as page:
            page.get_by_role("tab", name="State", exact=True).click()
            page.locator(".tabs").scroll_into_view_if_needed()
            match_reference(page, "inspector-state-390.png", mask=[page.locator("#agent")])


# -- the HTML check report -------------------------------------------------------------------


@pytest.fixture(scope="module")
def check_page() -> str:
    """``agui-tools check``'s HTML report of the demo agent (real HTTP on loopback)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from agui_tools.check import acheck_agent
    from agui_tools.check.reports import html_report

    async def main() -> str:
        async with serving(agent_app(demo_agent(delay=0), path="/agent")) as base:
            report = await acheck_agent(f"{base}/agent", sections=["frontend", "interrupts"])
        return html_report(report)

    with ThreadPoolExecutor(1) as pool:  # Playwright's loop runs in this thread
        return pool.submit(asyncio.run, main()).result(120)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_html_check_report_fits_the_window(browser: Any, check_page: str, width: str) -> None:
    w, h = WIDTHS[width]
    context = browser.new_context(viewport={"width": w, "height": h})
    try:
        page = context.new_page()
        page.set_content(check_page)
        assert page.locator("table.summary tr").count() > 5
        shots = ARTEFACTS / "ui-shots"
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / f"check-report-{width}.png"), full_page=True)
        assert_looks_right(page, f"{width}, the check report", ["main > *", "header > *"])
    finally:
        context.close()


# a word of the summary table short enough to be given a line of its cell, yet painted on two
# lines or more ("MU" / "ST", "inpu" / "t.ma" / "lfor"…): squeezed columns break words a person reads
# (a hyphen ends a word: a line may break after it, as in print)
WORDS_BROKEN_THAT_FIT = """() => {
  const broken = [];
  for (const cell of document.querySelectorAll('table.summary td')) {
    // room a word may ask for: a third of the table, whatever width the columns were given
    const room = cell.closest('table').clientWidth / 3;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.textContent.matchAll(/[^\\s-]+-*/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const rects = [...range.getClientRects()].filter((r) => r.width > 0);
        const lines = new Set(rects.map((r) => Math.round(r.top))).size;
        const width = rects.reduce((sum, r) => sum + r.width, 0);
        if (lines > 1 && width <= room) broken.push(`'${match[0]}' on ${lines} lines`);
      }
    }
  }
  // an identifier — a case id, a rule ID — is read (and searched for) whole: not even at
  // its hyphen
  for (const id of document.querySelectorAll('table.summary td:first-child a, table.summary .rule-id')) {
    const lines = new Set([...id.getClientRects()].map((r) => Math.round(r.top))).size;
    if (lines > 1) broken.push(`'${id.textContent}' on ${lines} lines`);
  }
  return broken;
}"""


@pytest.fixture(scope="module")
def check_page_not_exercised() -> str:
    """The HTML report of an agent that only echoes: most cases are "not exercised", the
    widest badge the summary's verdict column holds."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from agui_tools.check import acheck_agent
    from agui_tools.check.reports import html_report

    async def main() -> str:
        async with serving(agent_app(echo_agent("alpha"), path="/agent")) as base:
            report = await acheck_agent(f"{base}/agent")
        return html_report(report)

    with ThreadPoolExecutor(1) as pool:  # Playwright's loop runs in this thread
        return pool.submit(asyncio.run, main()).result(120)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_html_check_report_keeps_its_words_whole(
    browser: Any, check_page: str, check_page_not_exercised: str, width: str
) -> None:
    w, h = WIDTHS[width]
    context = browser.new_context(viewport={"width": w, "height": h})
    try:
        page = context.new_page()
        page.set_content(check_page + check_page_not_exercised)
        broken = page.evaluate(WORDS_BROKEN_THAT_FIT)
        assert not broken, f"{width}, the check report's summary: " + ", ".join(broken[:12])
    finally:
        context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_each_dialog_closes_with_a_button(browser: Any, width: str) -> None:
    """On a phone there is no Escape key: the Agent and Replay dialogs each close with a
    Close button inside them, and nothing of them stays painted."""
    app = agent_app(echo_agent("alpha"), path="/agent")
    with (
        inspector_server(agent_setup(app)) as served,
        sized_page(browser, served.url, width) as page,
    ):
        for opener, box in (("Agent…", "#agent-box"), ("Replay…", "#replay-box")):
            open_dialog(page, opener, box)
            page.locator(box).get_by_role("button", name="Close", exact=True).click()
            problem = unpainted(page, box)
            assert problem is None, f"{width}, {opener}: {problem}"
            expanded = page.get_by_role("button", name=opener, exact=True)
            assert expanded.get_attribute("aria-expanded") == "false"
