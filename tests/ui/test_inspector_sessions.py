"""The inspector's session controls in real Chromium (issues 24 and 22): interrupts answered
from a generated form, Stop, New thread, several agents and a bearer token, a restart on a
store, import judged as ``verify`` judges, the raw request editor, and every card status."""

from __future__ import annotations

import json
import re
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from agui_tools.agent import Run
from agui_tools.app._store_sqlite import SQLiteStore
from agui_tools.testing import serving
from agui_tools.transport import agent_app
from agui_tools.ui.inspector import Inspector

from .conftest import inspector_server, open_page, screenshot
from .inspector_agents import (
    broken_mid_call_app,
    echo_agent,
    interrupt_agent,
    register_three,
    slow_agent,
    three_calls_agent,
)
from .test_inspector_browser import agent_setup, card


def badge(page: Any, call_id: str) -> str:
    text: str = card(page, call_id).locator(".badge").inner_text()
    return text


def send(page: Any, text: str) -> None:
    page.get_by_label("Your message to the agent").fill(text)
    page.get_by_role("button", name="Send", exact=True).click()


def start_over(page: Any, served: Any, old: str) -> str:
    """Click New thread; once the page reloaded on the new thread, its id."""
    page.get_by_role("button", name="Start a new thread").click()
    for _ in range(100):  # (wait_for_function would eval a string: the CSP forbids it)
        new = str(served.call(lambda: served.inspector.thread_id))
        if new != old:
            break
        time.sleep(0.05)
    assert new != old
    # the reloaded page's modules are running once they show the new thread
    page.locator("#thread-id", has_text=new).wait_for()
    return new


def idle(page: Any) -> None:
    page.get_by_role("status").filter(has_text="idle").wait_for()


def test_interrupts_one_resolved_by_the_generated_form_one_cancelled_the_thread_goes_on(
    browser: Any, tmp_path: Path
) -> None:
    app = agent_app(interrupt_agent(), path="/agent")
    with (
        inspector_server(agent_setup(app)) as served,
        open_page(browser, served.url) as page,
    ):
        send(page, "Refund my order")
        refund = page.locator('section.interrupt[data-interrupt-id="approve-refund"]')
        address = page.locator('section.interrupt[data-interrupt-id="address"]')
        refund.wait_for()
        address.wait_for()
        # the card says what is asked: reason, message, the named call and its arguments
        assert "May I refund 40 EUR for order A-17?" in refund.inner_text()
        assert "refund (r1)" in refund.inner_text()
        assert json.loads(refund.locator("pre.args").inner_text()) == {
            "order": "A-17",
            "amount": 40,
        }
        # the named call's own card waits for the approval, not "streaming…"
        assert badge(page, "r1") == "awaiting approval"
        card(page, "r1").scroll_into_view_if_needed()
        screenshot(page, "inspector-interrupt.png", tmp_path)

        # a payload the responseSchema refuses is refused at its JSON path; nothing is sent
        address.get_by_label("street *").fill("x")
        address.get_by_label("zip *").fill("1000")
        address.get_by_role("button", name="Resolve interrupt input").click()
        address.locator(".edit-errors code.path", has_text="/street").wait_for()
        assert served.call(lambda: len(served.inspector.captures)) == 1

        # resolve the approval through the generated form (a checkbox and a text field)
        refund.get_by_label("approved *").check()
        refund.get_by_label("note").fill("ok, once")
        refund.get_by_role("button", name="Resolve interrupt approval").click()
        refund.locator(".badge", has_text="resolved").wait_for()
        assert badge(page, "r1") == "approved"
        # cancel the other, with a reason
        address.get_by_label("Reason for cancelling interrupt input").fill("not now")
        address.get_by_role("button", name="Cancel interrupt input").click()
        address.locator(".badge", has_text="cancelled").wait_for()

        # the next run carries the resume, and the thread goes on to the agent's answer
        answer = page.locator(".bubble.assistant", has_text="Final answer.")
        answer.wait_for()
        assert (
            'approve-refund: resolved {"approved": true, "note": "ok, once"}' in answer.inner_text()
        )
        assert 'address: cancelled {"reason": "not now"}' in answer.inner_text()
        assert badge(page, "r1") == "answered by the agent"
        idle(page)
        second = served.call(lambda: served.inspector.captures[1].request)
        assert json.loads(second)["resume"] == [
            {
                "interruptId": "approve-refund",
                "status": "resolved",
                "payload": {"approved": True, "note": "ok, once"},
            },
            {"interruptId": "address", "status": "cancelled", "metadata": {"reason": "not now"}},
        ]
        assert page.locator(".bubble.failure").count() == 0  # never "the run ended interrupt"

        # and the thread is usable afterwards: no INT-7 on the next prompt
        send(page, "And another refund")
        page.locator('section.interrupt[data-interrupt-id="approve-refund"]').nth(1).wait_for()
        assert page.locator(".bubble.failure").count() == 0
        screenshot(page, "inspector-interrupt-done.png", tmp_path)


def test_stop_ends_the_run_as_stopped_and_new_thread_starts_over(
    browser: Any, tmp_path: Path
) -> None:
    app = agent_app(slow_agent(), path="/agent")
    with (
        inspector_server(agent_setup(app)) as served,
        open_page(browser, served.url) as page,
    ):
        first_thread = page.locator("#thread-id").inner_text()
        send(page, "count")
        page.locator(".bubble.assistant", has_text="Counting: 0 1 2 3").wait_for()
        stop = page.get_by_role("button", name="Stop the run in progress")
        assert stop.is_enabled()
        stop.click()
        page.locator(".bubble.stopped").wait_for()
        page.locator(".run-end.status-stopped").wait_for()
        idle(page)
        assert not stop.is_enabled()
        # the thread records it: the run is kept, truncated (never a success)
        runs = served.call(lambda: [r.status for r in served.inspector.session.conversation.runs])
        assert runs == ["truncated"]
        screenshot(page, "inspector-controls.png", tmp_path)

        new_thread = start_over(page, served, first_thread)
        assert page.locator("#thread-id").inner_text() == new_thread
        assert page.locator("#log .bubble").count() == 0  # the page starts over
        assert served.call(lambda: served.inspector.session.conversation) is None
        send(page, "count again")
        page.locator(".bubble.assistant", has_text="Counting: 0 1").wait_for()
        page.get_by_role("button", name="Stop the run in progress").click()
        idle(page)
        conv = served.call(lambda: served.inspector.session.conversation)
        assert conv.thread_id != first_thread
        assert [m["content"] for m in conv.messages if m["role"] == "user"] == ["count again"]


def test_switching_agents_and_a_bearer_token_reach_the_agent_and_never_the_log(
    browser: Any,
) -> None:
    secret = "s3cret-token-4711"

    async def setup(stack: AsyncExitStack) -> Inspector:
        a = await stack.enter_async_context(serving(echo_agent("alpha")))
        b = await stack.enter_async_context(serving(echo_agent("beta")))
        return Inspector(None, agents={"alpha": f"{a}/agent", "beta": f"{b}/agent"})

    with inspector_server(setup) as served, open_page(browser, served.url) as page:
        send(page, "who are you?")
        page.locator(".bubble.assistant", has_text="alpha heard (no authorization)").wait_for()
        idle(page)
        page.get_by_label("Agent", exact=True).select_option("beta")
        page.locator("#agent", has_text="beta:").wait_for()
        page.get_by_role("button", name="Agent…").click()
        page.get_by_label("Bearer token").fill(secret)
        page.get_by_role("button", name="Apply").click()
        page.locator("#agent-header-names", has_text="a bearer token is set").wait_for()
        send(page, "and now?")
        page.locator(".bubble.assistant", has_text=f"beta heard Bearer {secret}").wait_for()
        idle(page)
        # the value went to the agent only: not into the page's log, not into a URL
        messages = served.call(lambda: json.dumps(served.inspector.hub.messages))
        assert secret not in messages.replace(f"beta heard Bearer {secret}", "")
        assert secret not in page.locator("#agent-box").inner_text()
        assert page.get_by_label("Bearer token").input_value() == ""
        # a URL edited in the page: refused when it is none
        page.get_by_label("Agent URL").fill("ftp://nowhere")
        page.get_by_role("button", name="Apply").click()
        page.locator("#agent-box .error", has_text="not an http:// or https:// URL").wait_for()


def test_every_card_status_streaming_waiting_executing_answered_declined_rejected(
    browser: Any,
) -> None:
    app = agent_app(three_calls_agent(delay=0.05), path="/agent")
    with (
        inspector_server(agent_setup(app, register=register_three)) as served,
        open_page(browser, served.url) as page,
    ):
        page.evaluate(
            """() => { window.__badges = {};
            new MutationObserver(() => {
              for (const c of document.querySelectorAll('article.card[data-call-id]')) {
                const t = c.querySelector('.badge').textContent;
                const seen = (window.__badges[c.dataset.callId] ||= []);
                if (seen[seen.length - 1] !== t) seen.push(t);
              }
            }).observe(document, { subtree: true, childList: true, characterData: true }); }"""
        )
        send(page, "Do the three things")
        page.get_by_role("button", name="Approve place_order").wait_for()
        # the calls behind the first consent wait for it: never "streaming…" after the run
        page.locator(".run-end").first.wait_for()
        assert badge(page, "c1") == "awaiting consent"
        assert badge(page, "c2") == "awaiting consent"
        for call in ("c1", "c2"):
            assert card(page, call).locator(".args-box .label").text_content() == "arguments"
        page.get_by_role("button", name="Approve place_order").click()
        page.get_by_role("button", name="Decline email_receipt").click()
        page.get_by_role("button", name="Approve delete_account").click()
        page.locator(".bubble.assistant", has_text="Final answer.").wait_for()
        seen = page.evaluate("window.__badges")
        assert seen["c0"][0] == "streaming…" and "called" in seen["c0"]
        assert seen["c0"][-1] == "done" and "awaiting consent" in seen["c0"]
        assert seen["c1"][-1] == "declined"
        assert (
            seen["c2"][-3:] == ["awaiting consent", "approved", "done"] or seen["c2"][-1] == "done"
        )

    # a rejected run: the half-streamed call says so, not "streaming…" forever
    with (
        inspector_server(agent_setup(broken_mid_call_app(), register=register_three)) as served,
        open_page(browser, served.url) as page,
    ):
        send(page, "break")
        page.locator(".run-end.status-rejected").wait_for()
        card(page, "c7").locator(".badge", has_text="run rejected").wait_for()
        assert "never runs" in card(page, "c7").inner_text()


def weather_tool_asked(page: Any) -> None:
    """Define ``get_weather`` in the page with the default result schema (a string) and
    prompt the weather agent, which calls it."""
    page.get_by_role("tab", name="Tools").click()
    page.get_by_label("Name", exact=True).fill("get_weather")
    page.get_by_label("Description").fill("The weather in a city.")
    page.get_by_role("button", name="Add tool").click()  # result schema: {"type": "string"}
    page.locator("#tools li", has_text="get_weather").wait_for()
    send(page, "weather?")


def test_a_mock_tool_with_the_default_string_result_is_answered(browser: Any) -> None:
    from .inspector_agents import weather_agent

    app = agent_app(weather_agent(), path="/agent")
    with inspector_server(agent_setup(app)) as served, open_page(browser, served.url) as page:
        weather_tool_asked(page)
        form = card(page, "w1")
        form.get_by_label("your answer for get_weather").fill("sunny, 24 °C")
        form.get_by_role("button", name="Send the answer for get_weather").click()
        page.locator(".bubble.assistant", has_text="The weather: sunny, 24 °C").wait_for()
        assert badge(page, "w1") == "done"
        assert form.locator(".edit-errors .error").count() == 0


def test_a_failed_card_says_its_error_once(browser: Any) -> None:
    from .inspector_agents import weather_agent

    app = agent_app(weather_agent(), path="/agent")
    with inspector_server(agent_setup(app)) as served, open_page(browser, served.url) as page:
        weather_tool_asked(page)
        form = card(page, "w1")
        form.get_by_label("Why get_weather failed").fill("the sensor is down")
        form.get_by_role("button", name="Answer get_weather as failed").click()
        page.locator(".bubble.assistant", has_text="The weather:").wait_for()
        assert badge(page, "w1") == "failed"
        assert form.inner_text().count("the sensor is down") == 1


def test_a_restart_on_the_store_resumes_the_thread(browser: Any, tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    index = tmp_path / "threads.db.inspector.json"
    app = agent_app(interrupt_agent(), path="/agent")

    def setup(store: SQLiteStore) -> Any:
        return agent_setup(app, store=store, index=index)

    with (
        inspector_server(setup(SQLiteStore(db))) as served,
        open_page(browser, served.url) as page,
    ):
        send(page, "Refund my order")
        page.locator('section.interrupt[data-interrupt-id="address"]').wait_for()
        thread = served.call(lambda: served.inspector.thread_id)
    # the process dies while the user is deciding; a new one on the same store resumes
    with (
        inspector_server(setup(SQLiteStore(db))) as served,
        open_page(browser, served.url) as page,
    ):
        page.locator(".bubble.note", has_text=f"Thread {thread} resumed from the store").wait_for()
        page.locator(".bubble.user", has_text="Refund my order").wait_for()
        page.locator(".bubble.assistant", has_text="I need two things from you.").wait_for()
        refund = page.locator('section.interrupt[data-interrupt-id="approve-refund"]')
        address = page.locator('section.interrupt[data-interrupt-id="address"]')
        refund.get_by_label("approved *").check()
        refund.get_by_role("button", name="Resolve interrupt approval").click()
        address.get_by_role("button", name="Cancel interrupt input").click()
        page.locator(".bubble.assistant", has_text="Final answer.").wait_for()
        idle(page)
        assert served.call(lambda: served.inspector.thread_id) == thread
        conv = served.call(lambda: served.inspector.session.conversation)
        assert [r.status for r in conv.runs] == ["interrupt", "success"]  # resumed once

        # a second thread, then back to the first: each kept in the store
        start_over(page, served, thread)
        send(page, "Refund my order")
        page.locator('section.interrupt[data-interrupt-id="address"]').wait_for()
        second = served.call(lambda: served.inspector.thread_id)
        assert second != thread
        page.get_by_role("button", name="Stop the run in progress").click()
        idle(page)
        page.get_by_label("Thread", exact=True).select_option(thread)
        page.locator(".bubble.note", has_text=f"Thread {thread} resumed from the store").wait_for()
        page.locator(".bubble.assistant", has_text="Final answer.").wait_for()
        assert served.call(lambda: served.inspector.thread_id) == thread
        kept = json.loads(index.read_text())["threads"]
        assert [t["threadId"] for t in kept] == [thread, second]


def test_import_shows_the_verdicts_verify_prints(browser: Any, tmp_path: Path) -> None:
    from agui_tools.app._capture import verify_capture

    broken = (
        b'data: {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n\n'
        b'data: {"type": "TOOL_CALL_ARGS", "toolCallId": "ghost", "delta": "{}"}\n\n'
    )
    path = tmp_path / "broken.sse"
    path.write_bytes(broken)
    expected = verify_capture(broken).lines()
    app = agent_app(three_calls_agent(delay=0), path="/agent")
    with (
        inspector_server(agent_setup(app, register=register_three)) as served,
        open_page(browser, served.url) as page,
    ):
        page.get_by_role("button", name="Replay…").click()
        page.get_by_label(re.compile("A capture to import")).set_input_files(str(path))
        run = page.locator(".imported-run")
        run.wait_for()
        assert run.locator("pre.verdict-lines").inner_text() == "\n".join(expected)
        assert any("VIOLATION" in line and "TOOL-20" in line for line in expected)
        note = run.locator('li[data-index="1"] .note.violation')
        assert "TOOL-20" in note.inner_text()
        # the inspector's own export imports too: each run judged with its input
        page.locator("#replay-box").get_by_role("button", name="Close").click()
        send(page, "Do the three things")
        page.get_by_role("button", name="Decline place_order").wait_for()
        page.get_by_role("button", name="Decline place_order").click()
        page.get_by_role("button", name="Decline email_receipt").click()
        page.get_by_role("button", name="Decline delete_account").click()
        page.locator(".bubble.assistant", has_text="Final answer.").wait_for()
        idle(page)
        export = served.call(lambda: served.inspector.thread_export())
        exported = tmp_path / "thread.json"
        exported.write_bytes(json.dumps(export).encode())
        page.get_by_role("button", name="Replay…").click()
        page.get_by_label(re.compile("A capture to import")).set_input_files(str(exported))
        page.locator('.imported-run[data-run="2"]').wait_for()
        runs = page.locator(".imported-run")
        assert runs.count() == 2
        for n, captured in enumerate(export["runs"]):
            lines = verify_capture(captured["stream"], run_input=captured["input"]).lines()
            assert runs.nth(n).locator("pre.verdict-lines").inner_text() == "\n".join(lines)
            assert lines[-1] == "outcome: completed"


def test_the_raw_request_editor_refuses_at_the_json_path_then_sends(browser: Any) -> None:
    app = agent_app(three_calls_agent(delay=0), path="/agent")
    with (
        inspector_server(agent_setup(app, register=register_three)) as served,
        open_page(browser, served.url) as page,
    ):
        send(page, "Do the three things")
        for name in ("place_order", "email_receipt", "delete_account"):
            page.get_by_role("button", name=f"Decline {name}").click()
        page.locator(".bubble.assistant", has_text="Final answer.").wait_for()
        idle(page)
        page.get_by_role("button", name="Replay…").click()
        page.get_by_label("The run whose input to start from").select_option("1")
        editor = page.get_by_label("The RunAgentInput to send (JSON)")
        first = json.loads(editor.input_value())
        bad = {**first, "messages": [{"id": "m1", "role": "user", "content": 5}]}
        editor.fill(json.dumps(bad))
        page.get_by_role("button", name="Send this input").click()
        page.locator("#compose-errors code.path", has_text="/messages/0/content").wait_for()
        assert served.call(lambda: len(served.inspector.captures)) == 2  # nothing was sent
        edited = {**first, "runId": "composed-1"}
        edited["messages"] = [{"id": "m1", "role": "user", "content": "hello again"}]
        editor.fill(json.dumps(edited))
        page.get_by_role("button", name="Check").click()
        page.locator("#compose-errors .ok").wait_for()
        page.get_by_role("button", name="Send this input").click()
        page.locator("#compose-verdict pre.verdict-lines", has_text="outcome:").wait_for()
        sent = served.call(lambda: served.inspector.captures[-1].request)
        assert json.loads(sent) == edited  # sent as written
        thread = served.call(lambda: served.inspector.session.conversation.messages)
        assert "hello again" not in json.dumps(thread)  # the thread is not touched


def test_hostile_markup_in_an_interrupt_and_an_import_stays_literal(
    browser: Any, tmp_path: Path
) -> None:
    from .inspector_agents import HOSTILE, hostile_interrupt_agent

    app = agent_app(hostile_interrupt_agent(), path="/agent")
    capture = tmp_path / "hostile.sse"
    ids = {"threadId": HOSTILE, "runId": HOSTILE}
    capture.write_text(
        f"data: {json.dumps({'type': 'RUN_STARTED', **ids})}\n\n"
        f"data: {json.dumps({'type': 'RUN_ERROR', 'message': HOSTILE})}\n\n"
    )
    with inspector_server(agent_setup(app)) as served, open_page(browser, served.url) as page:
        send(page, "go")
        shown = page.locator('section.interrupt[data-interrupt-id="hostile"]')
        shown.wait_for()
        assert shown.locator("dd").first.inner_text() == HOSTILE  # the reason, as text
        assert json.loads(shown.locator("pre.args").inner_text()) == {"q": HOSTILE}
        assert shown.locator("fieldset label.field > span").inner_text() == HOSTILE  # a field name
        assert shown.locator("select option").nth(1).inner_text() == HOSTILE  # a choice
        page.get_by_role("button", name="Replay…").click()
        page.get_by_label(re.compile("A capture to import")).set_input_files(str(capture))
        page.locator(".imported-run").wait_for()
        assert HOSTILE in page.locator(".imported-run pre.verdict-lines").inner_text()
        assert page.evaluate("window.pwned") is None
        assert (
            page.locator("#log img, #log script, #log b, #replay-box img, #replay-box b").count()
            == 0
        )
        del served


def test_the_panels_open_and_close_with_the_keyboard(browser: Any) -> None:
    app = agent_app(three_calls_agent(delay=0), path="/agent")
    with inspector_server(agent_setup(app)) as served, open_page(browser, served.url) as page:
        opener = page.get_by_role("button", name="Replay…")
        opener.focus()
        page.keyboard.press("Enter")
        assert opener.get_attribute("aria-expanded") == "true"
        assert page.evaluate("document.activeElement.id") == "import-file"
        page.keyboard.press("Escape")
        assert page.locator("#replay-box").is_hidden()
        assert page.evaluate("document.activeElement.id") == "replay-open"  # focus returns
        assert opener.get_attribute("aria-expanded") == "false"
        del served


def test_an_answer_form_says_what_each_field_is_for(browser: Any) -> None:
    """A field's ``description`` in the answer schema is the agent's explanation of what to
    put there: the form shows it under the field, and it describes the field's control."""
    schema = {
        "type": "object",
        "properties": {
            "approved": {"type": "boolean", "description": "tick to pay for the tea"},
            "note": {"type": "string", "description": "why, for the person who reviews it"},
        },
        "required": ["approved"],
    }

    async def asks(run: Run) -> None:
        if run.resume:
            await run.text(f"got {json.dumps(run.resume[0].get('payload'))}")
            return
        run.interrupt({"id": "tea", "reason": "approval", "responseSchema": schema})

    with (
        inspector_server(agent_setup(agent_app(asks, path="/agent"))) as served,
        open_page(browser, served.url) as page,
    ):
        send(page, "Buy tea")
        form = page.locator('section.interrupt[data-interrupt-id="tea"]')
        form.wait_for()
        for label, words in (
            ("approved *", "tick to pay for the tea"),
            ("note", "why, for the person who reviews it"),
        ):
            hint = form.get_by_text(words, exact=True)
            assert hint.is_visible(), f"{label}: its description is not on screen"
            control = form.get_by_label(label, exact=True)
            assert control.get_attribute("aria-describedby") == hint.get_attribute("id")
