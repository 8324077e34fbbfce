"""``agui-tools proxy --inspect`` in real Chromium (issue 25, item 1): a real proxy process
between the demo agent (served on loopback) and a frontend driven from the test — our
``Conversation`` as the application, over httpx — and the page showing that traffic live,
read-only: cards building up, findings with their rule and side, threads (the State
tab's history kept per thread), no control that drives the thread, and every action
refused (403)."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from agui_tools.agent import Run
from agui_tools.app import Conversation, Driver
from agui_tools.app._tools import ToolSpec
from agui_tools.demo.agent import demo_agent
from agui_tools.transport import agent_app
from agui_tools.ui.inspector._live import LiveInspector
from agui_tools.wire._framing import SSEReader, sse_frame
from tests.helpers.scripted_server import Script, app_for, serve
from tests.helpers.terminal import AGUI, ENV, ROOT
from tests.interop.node import run_node, skip_reason

from .conftest import inspector_server, open_page, screenshot
from .test_inspector_frames import until

TOOLS = [
    ToolSpec("get_location", "Where the user is.", parameters={"type": "object"}),
    ToolSpec(
        "get_preferences",
        "The user's shipping preferences.",
        parameters={"type": "object", "properties": {"fields": {"type": "array"}}},
    ),
    ToolSpec("show_order_summary", "Show the order to the user.", parameters={"type": "object"}),
    ToolSpec(
        "place_order",
        "Place an order.",
        parameters={
            "type": "object",
            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
            "required": ["sku", "qty"],
        },
    ),
]
ANSWERS = {
    "get_location": "Berlin",
    "get_preferences": '{"shipping": "express", "currency": "EUR"}',
}


@contextmanager
def proxy_with_inspector(upstream: str) -> Iterator[tuple[str, str]]:
    """``agui-tools proxy UPSTREAM --inspect``, as a user runs it: yields the proxy's URL
    and the inspector's; Ctrl-C must stop it with its summary, never a traceback."""
    proc = subprocess.Popen(
        [*AGUI, "proxy", upstream, "--inspect", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        proxied = re.match(r"Proxying AG-UI at (\S+) to ", proc.stdout.readline())
        shown = re.match(r"AG-UI inspector \(read-only\): (\S+)", proc.stdout.readline())
        assert proxied is not None and shown is not None
        yield proxied.group(1), shown.group(1)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err
    assert "agui-tools proxy: stopped" in err


class Frontend:
    """A conforming application on one thread, talking to the proxy over HTTP."""

    def __init__(self, url: str, thread_id: str) -> None:
        self.url = url
        self.conv = Conversation(thread_id=thread_id, tools=TOOLS)

    def run(self, run_input: dict[str, Any], *, fold: bool = True) -> None:
        """Send ``run_input`` and fold the whole answer, as it streams (``fold=False``: a
        frontend that re-sends an input of its own making, and only reads the answer)."""
        reader = SSEReader()
        with httpx.stream(
            "POST",
            self.url,
            content=orjson.dumps(run_input),
            headers={"content-type": "application/json", "accept": "text/event-stream"},
            timeout=30,
        ) as response:
            assert response.status_code == 200, response.read()
            for chunk in response.iter_raw():
                frames = reader.feed(chunk)
                if fold:
                    self.conv.receive_many(frames)
        if fold:
            Driver(self.conv).end_run()

    def answer_pending(self) -> None:
        for call in self.conv.pending:
            Driver(self.conv).execute(
                call.call_id, lambda _args, name=call.name: ANSWERS.get(name, "ok")
            )


def card(page: Any, call_id: str, thread: str = "t1") -> Any:
    return page.locator(f'article.card[data-thread-id="{thread}"][data-call-id="{call_id}"]')


def badge(page: Any, call_id: str, text: str, thread: str = "t1") -> None:
    card(page, call_id, thread).locator(".badge", has_text=text).wait_for()


def test_the_page_shows_the_live_traffic_read_only(browser: Any, tmp_path: Path) -> None:
    with (
        serve(agent_app(demo_agent(delay=0.05), path="/agent")) as upstream,
        proxy_with_inspector(f"{upstream}/agent") as (proxy, inspector),
        open_page(browser, inspector) as page,
    ):
        # read-only, made visible: the banner, and nothing that would drive the thread
        banner = page.locator("#read-only")
        banner.wait_for()
        assert "Read-only: the frontend drives this thread." in banner.inner_text()
        assert not page.locator("#prompt-form").is_visible()
        assert page.locator("#prompt").is_disabled() and page.locator("#send").is_disabled()
        for name in ("Send", "Stop", "New thread", "Agent…", "Replay…", "Add tool"):
            assert page.get_by_role("button", name=name, exact=True).count() == 0, name
        page.get_by_role("status").filter(has_text="watching the traffic").wait_for()

        # thread t1, run 1: text, the agent's own call answered in-stream, two frontend calls
        t1 = Frontend(proxy, "t1")
        t1.run(t1.conv.next_input(user="Order two widgets for me"))
        badge(page, "s1-inventory", "answered by the agent")
        badge(page, "s1-location", "left to the frontend")
        badge(page, "s1-preferences", "left to the frontend")
        assert page.locator(".bubble.user", has_text="Order two widgets for me").count() == 1
        page.locator(".bubble.assistant", has_text="I need your location").wait_for()
        assert page.locator(".bubble.thread-change", has_text="Thread t1").count() == 1

        # run 2: the frontend's answers show on their cards; the next card fills in while
        # the stream is still flowing (the agent streams it at a human pace)
        t1.answer_pending()
        second = threading.Thread(target=t1.run, args=(t1.conv.next_input(),))
        second.start()
        try:
            badge(page, "s1-location", "answered by the frontend")
            assert "Berlin" in card(page, "s1-location").locator(".result").inner_text()
            badge(page, "s2-summary", "streaming")
            assert second.is_alive(), "the card must show while the stream flows"
        finally:
            second.join(30)
        # place_order's arguments judged against the schema the frontend advertised
        badge(page, "s2-order", "left to the frontend")
        assert "/qty" in card(page, "s2-order").locator(".validation").inner_text()
        badge(page, "s2-summary", "left to the frontend")
        assert '"total": 9' in card(page, "s2-summary").locator("pre.args").inner_text()

        # thread t2: the frontend continues it with a dangling history (FE-8), its side
        t2 = Frontend(proxy, "t2")
        first = t2.conv.next_input(user="Order two widgets for me")
        t2.run(first)
        dangling = {**first, "runId": "t2-again"}  # the same history: no call answered
        t2.run(dangling, fold=False)
        page.locator(".bubble.thread-change", has_text="Thread t2").wait_for()
        # its cards are its own, though the agent uses the same call ids in every thread
        badge(page, "s1-location", "left to the frontend", thread="t2")
        badge(page, "s1-location", "answered by the frontend")  # t1's, unchanged
        finding = page.locator('.bubble.finding[data-rule="FE-8"]')
        finding.wait_for()
        assert finding.get_attribute("data-side") == "frontend"
        assert "frontend (application)" in finding.locator(".who").text_content()
        assert "pending" in finding.inner_text()
        # the timeline names the same finding, on the run whose input broke the rule
        page.locator("#frame-family").select_option("verdicts")
        note = page.locator("#timeline .note.violation", has_text="FE-8").first
        note.wait_for()
        assert "frontend (its input)" in note.inner_text()
        assert page.locator("#timeline .run-start", has_text="thread t2").count() >= 1
        page.locator("#frame-family").select_option("")
        page.get_by_role("status").filter(has_text="watching the traffic").wait_for()
        screenshot(page, "proxy-inspect.png", tmp_path)

        # every action refused, from the page itself (its token, its origin)
        for action, body in (
            ("prompt", {"text": "hi"}),
            ("consent", {"callId": "s2-order", "decision": "approve"}),
            ("tools", {"name": "x", "description": "y"}),
            ("import", {"name": "x.sse", "data": ""}),
        ):
            status, text = page.evaluate(
                """async ([action, body]) => {
                  const config = JSON.parse(document.querySelector('meta[name="inspector-config"]').content);
                  const r = await fetch(`/api/${action}`, { method: "POST", body: JSON.stringify(body),
                    headers: { "Content-Type": "application/json", "X-Inspector-Token": config.token } });
                  return [r.status, await r.text()];
                }""",
                [action, body],
            )
            assert status == 403 and "read-only" in text, (action, status, text)


@pytest.mark.interop
@pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")
def test_the_official_httpagent_as_the_frontend(browser: Any, tmp_path: Path) -> None:
    """The official TypeScript ``HttpAgent`` drives the thread; the page follows it."""
    tools = [t.to_wire() for t in TOOLS]
    with (
        serve(agent_app(demo_agent(delay=0.0), path="/agent")) as upstream,
        proxy_with_inspector(f"{upstream}/agent") as (proxy, inspector),
        open_page(browser, inspector) as page,
    ):
        ts = run_node(
            "httpagent.mjs", proxy, "--thread-id", "ts-1", "--user", "Order two widgets",
            "--tools", orjson.dumps(tools).decode(), "--max-runs", "2",
        )  # fmt: skip
        assert len(ts["runs"]) == 2 and ts["runs"][0]["answered"], ts
        page.locator(".bubble.thread-change", has_text="Thread ts-1").wait_for()
        assert page.locator(".bubble.user", has_text="Order two widgets").count() == 1
        # the client's own answers (a tool message each) on the cards of run 1
        badge(page, "s1-location", "answered by the frontend", thread="ts-1")
        result = card(page, "s1-location", "ts-1").locator(".result").inner_text()
        assert "get_location done with {}" in result
        badge(page, "s1-inventory", "answered by the agent", thread="ts-1")
        badge(page, "s2-order", "left to the frontend", thread="ts-1")
        # a conforming frontend: nothing said of its inputs
        assert page.locator('.bubble.finding[data-side="frontend"]').count() == 0


BROKEN = [
    {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "place_order"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"sku": "w", '},
    {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '"qty": 2}'},
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
]


def test_an_agent_that_breaks_a_rule_is_named_on_its_event(browser: Any, tmp_path: Path) -> None:
    script = Script(chunks=[sse_frame(orjson.dumps(e)) for e in BROKEN])
    with (
        serve(app_for(script)) as upstream,
        proxy_with_inspector(f"{upstream}/agent") as (proxy, inspector),
        open_page(browser, inspector, scheme="dark") as page,
    ):
        frontend = Frontend(proxy, "t1")
        run_input = frontend.conv.next_input(user="Buy one")
        frontend.run(run_input, fold=False)  # a conforming client would reject the stream
        finding = page.locator('.bubble.finding[data-rule="TOOL-20"]')
        finding.wait_for()
        assert finding.get_attribute("data-side") == "agent"
        assert "agent (producer), run 1 event #4" in finding.locator(".who").text_content()
        # the call the broken stream made is never run by a conforming frontend
        badge(page, "c1", "run rejected")
        page.locator("#timeline .run-end", has_text="rejected").wait_for()
        note = page.locator("#timeline .note.violation", has_text="TOOL-20")
        note.wait_for()
        assert "agent" in note.locator(".note-side").inner_text()
        # the events are all shown, as the agent sent them, past the broken one too
        assert page.locator("#timeline li[data-type=RUN_FINISHED]").count() == 1


def test_a_page_left_open_keeps_the_recent_traffic_only(browser: Any, tmp_path: Path) -> None:
    # the page's own bounds (live.js): a tab open on a proxy that runs for days
    async def setup(stack: AsyncExitStack) -> LiveInspector:
        return LiveInspector("http://127.0.0.1:9/agent")

    def traffic(live: LiveInspector, runs: int) -> None:
        for n in range(1, runs + 1):
            thread, run = f"t{n}", f"r{n}"
            body = orjson.dumps(
                {"threadId": thread, "runId": run, "tools": [], "context": [], "state": {},
                 "forwardedProps": {}, "messages": [{"id": "u", "role": "user", "content": f"go {n}"}]}
            )  # fmt: skip
            events: list[dict[str, Any]] = [
                {"type": "RUN_STARTED", "threadId": thread, "runId": run}
            ]
            for k in range(70):  # 140 rows of the frame list: steps are not grouped
                events += [{"type": "STEP_STARTED", "stepName": f"s{k}"},
                           {"type": "STEP_FINISHED", "stepName": f"s{k}"}]  # fmt: skip
            for k in range(10):  # 10 bubbles in the chat
                mid = f"m{n}-{k}"
                events += [{"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"},
                           {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": f"{n}.{k}"},
                           {"type": "TEXT_MESSAGE_END", "messageId": mid}]  # fmt: skip
            events.append({"type": "RUN_FINISHED", "threadId": thread, "runId": run})
            live.exchange_started(n, "http://127.0.0.1:9/agent", body)
            for index, event in enumerate(events):
                live.exchange_event(n, index, orjson.dumps(event).decode())
            live.exchange_ended(n, 200, None)

    with inspector_server(setup) as served, open_page(browser, served.url) as page:
        page.locator("#read-only").wait_for()
        served.call(lambda: traffic(served.inspector, 160))  # type: ignore[arg-type]
        page.locator(".bubble.assistant", has_text="160.9").wait_for(timeout=60_000)
        page.wait_for_function("document.body.dataset.pending === '0'", timeout=60_000)
        shown = page.evaluate("window.__frames()")
        assert 15_000 < shown["items"] <= 20_000, shown
        assert shown["frames"] < 160 * 172, shown  # the oldest frames left the counts too
        nodes = page.locator("#log > *").count()
        assert 1_000 < nodes <= 1_500, nodes
        assert page.locator('.bubble.assistant[data-message-id="m1-0"]').count() == 0  # oldest
        # the list still works on what it keeps: the newest run's end, with its thread
        page.locator("#timeline .run-end", has_text="run 160 ended: HTTP 200").wait_for()


def per_thread_state_agent(gate: threading.Event) -> Any:
    """Each thread's own state: a snapshot naming the thread on its first run, then a
    delta a run that appends to its log — a delta that holds on its own thread's state
    only (its ``test`` names the thread). A user message "wait" makes the run stream one
    delta, wait for ``gate``, then stream one more."""

    async def agent(run: Run) -> None:
        tid, state = run.thread_id, run.state

        def delta(n: int) -> list[dict[str, Any]]:
            return [
                {"op": "test", "path": "/thread", "value": tid},
                {"op": "add", "path": "/log/-", "value": f"{tid}:{n}"},
            ]

        if not state:
            await run.state_snapshot({"thread": tid, "log": [f"{tid}:1"]})
        else:
            n = len(state["log"])
            await run.state_delta(delta(n + 1))
            if run.messages and run.messages[-1].get("content") == "wait":
                await asyncio.to_thread(gate.wait, 30)
                await run.state_delta(delta(n + 2))
        await run.text(f"Noted on {tid}.")

    return agent


def wait_for_state(page: Any, expected: dict[str, Any]) -> None:
    """The State tab shows ``expected`` as the current state (it renders once a frame)."""
    want = json.dumps(json.dumps(expected, separators=(",", ":")))
    shown = 'JSON.stringify(JSON.parse(document.getElementById("state").textContent))'
    try:
        until(
            page,
            f"(() => {{ try {{ return {shown} === {want}; }} catch {{ return false; }} }})()",
            15,
        )
    except AssertionError:  # the timeout: say what is shown instead
        assert page.locator("#state").inner_text() == json.dumps(expected, indent=2)
        raise


def history_shown(page: Any) -> list[str]:
    """Every step of the State tab's history, stepped through from the first: its label
    and the state after it (then back to following the latest)."""
    while not page.locator("#state-prev").is_disabled():
        page.locator("#state-prev").click()
    seen = []
    while True:
        position = page.locator("#state-position").inner_text()
        seen.append(f"{position} => {page.locator('#state-at').inner_text()}")
        assert page.locator("#state-diff li.error").count() == 0, seen[-1]
        if page.locator("#state-next").is_disabled():
            return seen
        page.locator("#state-next").click()


def test_the_state_tab_shows_the_thread_the_traffic_is_on(browser: Any, tmp_path: Path) -> None:
    gate = threading.Event()
    with (
        serve(agent_app(per_thread_state_agent(gate), path="/agent")) as upstream,
        proxy_with_inspector(f"{upstream}/agent") as (proxy, inspector),
        open_page(browser, inspector) as page,
    ):
        page.locator("#read-only").wait_for()
        page.locator("#tab-state").click()
        a, b = Frontend(proxy, "A"), Frontend(proxy, "B")
        a.run(a.conv.next_input(user="start A"))  # run 1
        wait_for_state(page, {"thread": "A", "log": ["A:1"]})
        assert page.locator("#state-thread").inner_text().startswith("Thread A:")

        b.run(b.conv.next_input(user="start B"))  # run 2: another thread, its own state
        wait_for_state(page, {"thread": "B", "log": ["B:1"]})
        note = page.locator("#state-thread").inner_text()
        assert note.startswith("Thread B:") and "other thread (A)" in note, note
        # the steps listed are B's only: its snapshot (A's is not one of them)
        assert page.locator("#deltas li").all_inner_texts() == [
            "step 2: run 2 #1 STATE_SNAPSHOT\npayload"
        ]
        b.run(b.conv.next_input(user="more B"))  # run 3: B's delta, on B's state
        wait_for_state(page, {"thread": "B", "log": ["B:1", "B:2"]})

        # back to A (run 4): its history goes on from A's own last state; its run streams
        # one delta and waits while the traffic moves to B again (run 5)
        waiting = threading.Thread(target=a.run, args=(a.conv.next_input(user="wait"),))
        waiting.start()
        try:
            wait_for_state(page, {"thread": "A", "log": ["A:1", "A:2"]})
            assert page.locator("#state-thread").inner_text().startswith("Thread A:")
            b.run(b.conv.next_input(user="B again"))
            wait_for_state(page, {"thread": "B", "log": ["B:1", "B:2", "B:3"]})
        finally:
            gate.set()
            waiting.join(30)
        assert a.conv.state == {"thread": "A", "log": ["A:1", "A:2", "A:3"]}
        # A's second delta streamed while the tab showed B: it is A's, never applied on B
        # (the text follows the deltas in each run's stream)
        until(page, "document.querySelectorAll('#log .bubble.assistant').length === 5", 30)
        until(page, "document.body.dataset.pending === '0'", 30)
        wait_for_state(page, {"thread": "B", "log": ["B:1", "B:2", "B:3"]})
        b_history = history_shown(page)
        assert all('"A' not in step for step in b_history), b_history

        a.run(a.conv.next_input(user="last A"))  # run 6: A's state includes its delta A:3
        wait_for_state(page, {"thread": "A", "log": ["A:1", "A:2", "A:3", "A:4"]})
        a_history = history_shown(page)
        assert all('"B' not in step for step in a_history), a_history
        assert [step.split(" => ")[0].split(":")[0] for step in a_history] == [
            f"step {n}" for n in range(1, len(a_history) + 1)
        ]
        assert (
            "(thread A)" in a_history[-1]
            and "other thread (B)" in page.locator("#state-thread").inner_text()
        )
        assert any("run 4 #2 STATE_DELTA" in s and '"A:3"' in s for s in a_history), a_history


def test_the_state_tab_keeps_the_histories_of_the_threads_most_recently_active(
    browser: Any, tmp_path: Path
) -> None:
    # the page's bound (state.js THREADS_KEPT, as many threads as the back end remembers)
    async def setup(stack: AsyncExitStack) -> LiveInspector:
        return LiveInspector("http://127.0.0.1:9/agent")

    def thread_run(live: LiveInspector, n: int, thread: str, state: dict[str, Any]) -> None:
        body = orjson.dumps(
            {"threadId": thread, "runId": f"r{n}", "tools": [], "context": [], "state": state,
             "forwardedProps": {}, "messages": [{"id": f"u{n}", "role": "user", "content": "go"}]}
        )  # fmt: skip
        events = [
            {"type": "RUN_STARTED", "threadId": thread, "runId": f"r{n}"},
            {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/n", "value": n}]},
            {"type": "RUN_FINISHED", "threadId": thread, "runId": f"r{n}"},
        ]
        live.exchange_started(n, "http://127.0.0.1:9/agent", body)
        for index, event in enumerate(events):
            live.exchange_event(n, index, orjson.dumps(event).decode())
        live.exchange_ended(n, 200, None)

    def traffic(live: LiveInspector) -> None:
        for n in range(1, 301):  # 300 threads: input {"t": n}, a delta each
            thread_run(live, n, f"t{n}", {"t": n})
        thread_run(live, 301, "t1", {"t": 1, "n": 1, "back": True})  # t1 left long ago

    with inspector_server(setup) as served, open_page(browser, served.url) as page:
        page.locator("#read-only").wait_for()
        page.locator("#tab-state").click()
        served.call(lambda: traffic(served.inspector))  # type: ignore[arg-type]
        wait_for_state(page, {"t": 1, "n": 301, "back": True})
        until(page, "document.body.dataset.pending === '0'", 60)
        # t1's history went with the oldest: it starts again from its input's state
        assert (
            page.locator("#state-position")
            .inner_text()
            .startswith("step 2: run 301 #1 STATE_DELTA of 2 (thread t1)")
        )
        note = page.locator("#state-thread").inner_text()
        assert "510 steps of 255 other threads (t296, t297, t298, t299, t300 and 250 more)" in note
