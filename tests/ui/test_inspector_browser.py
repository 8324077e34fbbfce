"""The inspector page in real Chromium (issue 15): prompts, cards, consent, violations,
hostile markup, mock tools and a foreign origin — every check through the page a person uses."""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from agui_tools.demo.agent import demo_agent
from agui_tools.demo.app import PROMPT
from agui_tools.demo.tools import register as register_demo
from agui_tools.testing import serving
from agui_tools.transport import agent_app
from agui_tools.ui.inspector import Inspector
from tests.helpers.browser_page import agent_setup, card, send

from .conftest import cli_inspector, inspector_server, open_page, screenshot
from .inspector_agents import (
    HOSTILE,
    THREE_ARGS,
    broken_app,
    markup_agent,
    register_three,
    three_calls_agent,
)


def test_prompt_cards_fill_in_then_approve_decline_and_edit(browser: Any, tmp_path: Path) -> None:
    app = agent_app(three_calls_agent(), path="/agent")
    with (
        inspector_server(agent_setup(app, register=register_three)) as served,
        open_page(browser, served.url) as page,
    ):
        send(page, "Do the three things")
        page.locator("#log").get_by_text("Three things need your consent.").wait_for()
        approve = page.get_by_role("button", name="Approve place_order")
        approve.wait_for()

        # the card's arguments filled in while they streamed: growing prefixes, then the whole
        seen = page.evaluate("window.__args['c0']")
        final = json.dumps(THREE_ARGS["place_order"], indent=2)
        partial = [s for s in seen if s and s != final]
        assert len(partial) >= 3, seen
        assert json.loads(seen[-1]) == THREE_ARGS["place_order"]
        assert card(page, "c0").locator(".badge").inner_text() == "awaiting consent"
        screenshot(page, "inspector-consent.png", tmp_path)

        # approve with the keyboard: the button is focusable and labelled
        approve.focus()
        page.keyboard.press("Enter")
        page.get_by_role("button", name="Decline email_receipt").wait_for()
        assert card(page, "c0").locator(".badge").inner_text() == "done"
        # the keyboard lands on the next question, not on a button; Tab reaches the buttons
        focused = "document.activeElement.getAttribute('aria-label') || document.activeElement.textContent"
        assert page.evaluate(focused).startswith("The agent wants to run email_receipt")
        page.keyboard.press("Tab")
        assert page.evaluate(focused) == "Approve email_receipt"

        page.get_by_label("Reason for declining email_receipt").fill("not today")
        page.get_by_role("button", name="Decline email_receipt").click()

        page.get_by_role("button", name="Edit the arguments of delete_account").click()
        editor = page.get_by_label("Edited arguments for delete_account (JSON)")
        editor.fill('{"user": 5}')
        save = page.get_by_role("button", name="Approve delete_account with the edited arguments")
        save.click()
        # refused at its JSON path, and nothing ran
        error = card(page, "c2").locator(".edit-errors")
        error.locator("code.path", has_text="/user").wait_for()
        assert card(page, "c2").locator(".badge").inner_text() == "awaiting consent"
        editor.fill('{"user": "bob"}')
        save.click()

        answer = page.locator(".bubble.assistant", has_text="Final answer.")
        answer.wait_for()
        text = answer.inner_text()
        assert "c0: placed 2 x widget" in text
        assert (
            "c1: The user declined this tool call; it was not executed. The user said: not today"
            in text
        )
        assert "c2: deleted bob" in text
        assert card(page, "c1").locator(".badge").inner_text() == "declined"
        assert card(page, "c2").locator(".label", has_text="edited by you").count() == 1
        page.get_by_role("status").filter(has_text="idle").wait_for()
        screenshot(page, "inspector-done.png", tmp_path)


def test_a_violation_shows_its_rule_and_the_page_does_not_hang(
    browser: Any, tmp_path: Path
) -> None:
    # the broken agent holds its connection open for a minute after the violation
    with (
        inspector_server(agent_setup(broken_app())) as served,
        open_page(browser, served.url, scheme="dark") as page,
    ):
        send(page, "hello")
        note = page.locator(".note.violation")
        note.wait_for()
        assert "TOOL-20" in note.inner_text() and "ghost" in note.inner_text()
        row = note.locator("xpath=ancestor::li")
        assert row.get_attribute("data-index") == "4"
        assert row.get_attribute("data-type") == "TOOL_CALL_ARGS"  # the frame that broke it
        page.locator(".run-end.status-rejected").wait_for()
        page.locator(".bubble.failure", has_text="TOOL-20").wait_for()
        # the turn is over: the page is idle and usable again
        page.get_by_role("status").filter(has_text="idle").wait_for()
        assert page.get_by_role("button", name="Send").is_enabled()
        # the rule ID links to the rule's text
        note.get_by_role("link", name="TOOL-20").click()
        page.locator(
            "#rule-text", has_text="continuing or closing a call that is not open"
        ).wait_for()
        screenshot(page, "inspector-violation-dark.png", tmp_path)


def test_hostile_markup_in_text_and_results_renders_literally(browser: Any) -> None:
    app = agent_app(markup_agent(), path="/agent")
    with inspector_server(agent_setup(app)) as served, open_page(browser, served.url) as page:
        send(page, "show me markup")
        page.locator(".bubble.assistant", has_text="Done.").wait_for()
        result = card(page, "m1").locator("pre.result-text")
        assert result.inner_text() == HOSTILE
        assert HOSTILE in page.locator(".bubble.assistant").first.inner_text()
        assert page.evaluate("window.pwned") is None
        assert page.locator("#log img, #log script, #log b").count() == 0


def test_a_mock_tool_defined_in_the_page_is_answered_with_a_generated_form(
    browser: Any,
) -> None:
    from .inspector_agents import weather_agent

    app = agent_app(weather_agent(), path="/agent")
    with inspector_server(agent_setup(app)) as served, open_page(browser, served.url) as page:
        page.get_by_role("tab", name="Tools").click()
        page.get_by_label("Name").fill("get_weather")
        page.get_by_label("Description").fill("The weather in a city.")
        page.get_by_label("Parameters (JSON Schema)").fill(
            '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}'
        )
        page.get_by_label("Result (JSON Schema of your answer)").fill(
            '{"type": "object", "properties": {"temp": {"type": "integer"},'
            ' "sky": {"enum": ["sunny", "cloudy"]}}, "required": ["temp"]}'
        )
        page.get_by_role("button", name="Add tool").click()
        page.locator("#tools li", has_text="get_weather").wait_for()

        send(page, "weather in Lisbon?")
        form = card(page, "w1")
        form.get_by_label("temp *").wait_for()
        assert form.locator(".badge").inner_text() == "running"
        form.get_by_label("temp *").fill("21")
        form.get_by_label("sky").select_option(label="cloudy")
        form.get_by_role("button", name="Send the answer for get_weather").click()
        answer = page.locator(".bubble.assistant", has_text="The weather:")
        answer.wait_for()
        assert '{"temp":21,"sky":"cloudy"}' in answer.inner_text()
        assert json.loads(card(page, "w1").locator("pre.args").inner_text()) == {"city": "Lisbon"}


def test_a_page_on_another_origin_cannot_drive_the_inspector(browser: Any) -> None:
    app = agent_app(demo_agent(delay=0), path="/agent")

    async def foreign(request: Any) -> HTMLResponse:
        return HTMLResponse("<!doctype html><title>elsewhere</title><p>another site</p>")

    other = Starlette(routes=[Route("/", foreign)])

    async def setup(stack: AsyncExitStack) -> Inspector:
        base = await stack.enter_async_context(serving(app))
        setup.other = await stack.enter_async_context(serving(other))  # type: ignore[attr-defined]
        return Inspector(f"{base}/agent", register=register_demo)

    with inspector_server(setup) as served, open_page(browser, setup.other) as page:  # type: ignore[attr-defined]
        target = served.url + "api/prompt"
        # a "simple" request needs no preflight: it arrives, and is refused
        status = page.evaluate(
            """async (url) => {
                await fetch(url, {method: "POST", mode: "no-cors",
                                  headers: {"Content-Type": "text/plain"},
                                  body: JSON.stringify({text: "Order 99 widgets"})});
                return "sent";
            }""",
            target,
        )
        assert status == "sent"
        # a JSON request needs a preflight, which is refused: the browser never sends it
        outcome = page.evaluate(
            """async (url) => {
                try {
                    await fetch(url, {method: "POST", headers: {"Content-Type": "application/json",
                                      "X-Inspector-Token": "guess"},
                                      body: JSON.stringify({text: "Order 99 widgets"})});
                    return "sent";
                } catch (err) { return "blocked: " + err.message; }
            }""",
            target,
        )
        assert outcome.startswith("blocked")
        kinds = served.call(lambda: [m["kind"] for m in served.inspector.hub.messages])
        assert "user" not in kinds and not served.inspector.captures


def test_the_page_is_usable_at_1280x800_in_both_schemes(browser: Any, tmp_path: Path) -> None:
    app = agent_app(demo_agent(delay=0), path="/agent")
    setup = agent_setup(app, register=register_demo, prompt=PROMPT)
    with inspector_server(setup) as served:
        colours = {}
        for scheme in ("light", "dark"):
            with open_page(browser, served.url, scheme=scheme) as page:
                colours[scheme] = page.evaluate("getComputedStyle(document.body).backgroundColor")
                controls = [("button", "Send"), ("button", "Switch between light and dark colours")]
                controls += [("tab", n) for n in ("Timeline", "State", "Next input", "Export")]
                for role, name in controls:
                    box = page.get_by_role(role, name=name).bounding_box()
                    assert box is not None and box["x"] + box["width"] <= 1280, name
                    assert box["y"] + box["height"] <= 800, name
                screenshot(page, f"inspector-empty-{scheme}.png", tmp_path)
                # the Theme button switches to the other scheme, whatever the system prefers
                page.get_by_role("button", name="Switch between light and dark colours").click()
                flipped = page.evaluate("getComputedStyle(document.body).backgroundColor")
                colours[f"{scheme} flipped"] = flipped
        assert colours["light"] != colours["dark"]
        assert colours["light flipped"] == colours["dark"]
        assert colours["dark flipped"] == colours["light"]


TERMINAL_DEMO = """
import asyncio, io, json
from rich.console import Console
from agui_tools.demo.app import run_demo, scripted
answers = iter(["approve", "decline not now", "approve"])
conv, _ = asyncio.run(run_demo(console=Console(file=io.StringIO()), decide=scripted(answers), fast=True))
print(json.dumps(conv.messages))
"""


def _without_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages minus their minted ids (random per run); every other field compared."""
    return [{k: v for k, v in m.items() if k != "id"} for m in messages]


def test_demo_web_clicked_through_reaches_the_terminal_demos_thread(browser: Any) -> None:
    with cli_inspector(["demo", "--web", "--no-browser", "--fast"]) as url:
        with open_page(browser, url) as page:
            assert page.get_by_label("Your message to the agent").input_value() == PROMPT
            page.get_by_role("button", name="Send").click()
            page.get_by_role("button", name="Approve place_order").click()
            # the agent's first place_order failed the schema: the error at its path
            invalid = card(page, "s2-order")
            assert invalid.locator(".badge").inner_text() == "failed"
            assert invalid.locator(".validation code.path").all_inner_texts() == ["/qty"]
            page.get_by_label("Reason for declining email_receipt").fill("not now")
            page.get_by_role("button", name="Decline email_receipt").click()
            # the refund the agent's own call asks approval for, through the interrupt card
            refund = page.locator('section.interrupt[data-interrupt-id="approve-s5-refund"]')
            refund.get_by_label("approved *").check()
            refund.get_by_role("button", name="Resolve interrupt tool_approval").click()
            page.locator(".bubble.assistant", has_text="everything for your order").wait_for()
            page.get_by_role("status").filter(has_text="idle").wait_for()
            web_thread = page.evaluate(
                """async () => {
                    const config = JSON.parse(
                        document.querySelector('meta[name="inspector-config"]').content);
                    const r = await fetch(`/api/export/thread.json?token=${config.token}`);
                    return (await r.json()).messages;
                }"""
            )
    terminal = subprocess.run(
        [sys.executable, "-c", TERMINAL_DEMO],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    terminal_thread = json.loads(terminal.stdout)
    assert _without_ids(web_thread) == _without_ids(terminal_thread)
    assert any("you declined the receipt email" in str(m.get("content")) for m in web_thread)


def test_state_deltas_the_next_input_and_the_exports_are_viewable(browser: Any) -> None:
    from .inspector_agents import state_agent

    app = agent_app(state_agent(), path="/agent")
    with inspector_server(agent_setup(app)) as served, open_page(browser, served.url) as page:
        send(page, "fill my cart")
        page.locator(".bubble.assistant", has_text="Your cart has a widget.").wait_for()
        page.get_by_role("status").filter(has_text="idle").wait_for()

        page.get_by_role("tab", name="State").click()
        assert json.loads(page.locator("#state").inner_text()) == {"cart": ["widget"], "step": 1}
        deltas = page.locator("#deltas li")
        assert deltas.count() == 2
        assert "STATE_DELTA" in deltas.nth(1).inner_text()

        page.get_by_role("tab", name="Next input").click()
        page.get_by_label("Your message to the agent").fill("and another")
        page.get_by_role("button", name="Build the next input").click()
        page.locator("#next-input", has_text="threadId").wait_for()
        built = json.loads(page.locator("#next-input").inner_text())
        assert built["state"] == {"cart": ["widget"], "step": 1}
        assert [m["role"] for m in built["messages"]] == ["user", "assistant", "user"]
        assert built["messages"][-1]["content"] == "and another"
        # built and withdrawn: the thread itself did not change
        messages = served.call(lambda: served.inspector.session.conversation.messages)
        assert [m["role"] for m in messages] == ["user", "assistant"]

        page.get_by_role("tab", name="Export").click()
        names = page.locator("#exports a").all_inner_texts()
        assert [n.split(" ")[0] for n in names] == ["thread.json", "run-1.sse", "run-1.input.json"]


def test_a_second_tab_replays_the_session_and_a_decision_in_one_shows_in_both(
    browser: Any,
) -> None:
    app = agent_app(three_calls_agent(delay=0), path="/agent")
    with (
        inspector_server(agent_setup(app, register=register_three)) as served,
        open_page(browser, served.url) as first,
    ):
        send(first, "Do the three things")
        first.get_by_role("button", name="Approve place_order").wait_for()
        with open_page(browser, served.url) as second:
            # the whole session so far, replayed: the prompt, the cards, the open question
            second.locator(".bubble.user", has_text="Do the three things").wait_for()
            assert second.locator("article.card").count() == 3
            second.get_by_role("button", name="Approve place_order").click()
            second.get_by_role("button", name="Decline email_receipt").wait_for()
        # the first tab saw the decision: its buttons for that call are gone, the next is asked
        first.get_by_role("button", name="Decline email_receipt").wait_for()
        assert first.get_by_role("button", name="Approve place_order").count() == 0
        assert card(first, "c0").locator(".badge").inner_text() == "done"
