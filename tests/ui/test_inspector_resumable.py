"""``inspect --resumable`` (docs/resumable.md, docs/inspector.md): the inspector's back end
on real loopback against the agui-tools server with ``Resumable()``, through a proxy that
cuts the connection — the cut run rejoined with each event once in the timeline and the
thread equal to the uncut run's; the page's Stop sending the binding's stop, so the run
ends cancelled and is shown as stopped (RUN-8), never as failed."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from agui_tools.agent import Run
from agui_tools.transport._resumable import Resumable
from agui_tools.transport._server import agent_app
from agui_tools.ui.inspector import Inspector
from tests.helpers.browser_page import agent_setup
from tests.helpers.cutting_proxy import Cutter, cutting_proxy
from tests.helpers.resumable_server import slow_agent
from tests.helpers.scripted_server import serve

from .conftest import inspector_server, open_page
from .inspector_agents import slow_agent as counting_agent

HANG = 30  # seconds: a hang bound, never a timing assertion


async def looked_up(run: Run) -> None:
    """Text, an agent-side tool call with its result, more text: fixed ids, so two
    threads' messages compare equal."""
    async with run.message(message_id="m1") as m:
        for word in ("Looking ", "it ", "up."):
            await m.delta(word)
    async with run.tool_call("lookup", call_id="c1", parent_message_id=m.id) as c:
        await c.args('{"q": ')
        await c.args('"stock"}')
    await run.result(c.id, "7 in stock", message_id="r1")
    await run.text("There are 7 in stock.", message_id="m2")


async def until(inspector: Inspector) -> list[dict[str, Any]]:
    """Every hub message once the turn is over (what it said last included)."""

    async def over() -> None:
        async for message in inspector.hub.follow():
            if message["kind"] == "busy" and not message["busy"]:
                return
        raise AssertionError("the hub closed")

    await asyncio.wait_for(over(), HANG)
    await asyncio.sleep(0.05)  # the turn's last words follow its "busy: false"
    return inspector.hub.messages


def inspect_once(url: str) -> tuple[list[dict[str, Any]], Inspector]:
    async def go() -> tuple[list[dict[str, Any]], Inspector]:
        inspector = Inspector(url, resumable=True)
        inspector.send("how many?")
        try:
            return await until(inspector), inspector
        finally:
            await inspector.aclose()

    return asyncio.run(go())


def unnamed(event: dict[str, Any]) -> dict[str, Any]:
    """The event without its thread's and run's ids (each inspector makes its own)."""
    return {k: v for k, v in event.items() if k not in ("threadId", "runId")}


def events(messages: list[dict[str, Any]]) -> list[tuple[int, int, dict[str, Any]]]:
    """The timeline: each event as received (parsed from its raw text), where it was shown."""
    shown = [m for m in messages if m["kind"] == "event"]
    return [(m["run"], m["index"], unnamed(orjson.loads(m["raw"]))) for m in shown]


def test_a_cut_run_is_rejoined_each_event_shown_once_the_thread_whole() -> None:
    app = agent_app(looked_up, path="/agent", resumable=Resumable())
    cutter = Cutter(cut_at=5, mid_event=80)  # torn: the next id line and some data pass first
    with serve(app) as base:
        uncut, plain = inspect_once(f"{base}/agent")
        with cutting_proxy(int(base.rsplit(":", 1)[1]), cutter) as proxied:
            cut, rejoined = inspect_once(f"{proxied}/agent")
    assert cutter.cuts == 1 and cutter.connections == 2, "one cut, one rejoin"
    # the timeline: every event once, in order, as the uncut run showed it
    assert len(events(uncut)) == 15
    assert events(cut) == events(uncut)
    assert [m["kind"] for m in cut].count("run-start") == 1  # the rejoin is no new run
    [end] = [m for m in cut if m["kind"] == "run-end"]
    assert end["status"] == "success"
    assert not [m for m in cut if m["kind"] in ("failed", "violation", "warning")]
    # the thread equal to the uncut run's
    whole, uncut_thread = rejoined.session.conversation, plain.session.conversation
    assert whole is not None and uncut_thread is not None
    assert whole.messages[1:] == uncut_thread.messages[1:]  # the user's has its own id
    assert len(whole.messages) == 4 and whole.messages[0]["content"] == "how many?"
    # the export holds both bodies, the torn fragment dropped: each event once
    [capture] = rejoined.captures
    payloads = [line for line in bytes(capture.body).split(b"\n") if line.startswith(b"data:")]
    assert [unnamed(orjson.loads(p[5:])) for p in payloads] == [e[2] for e in events(uncut)]
    assert orjson.loads(capture.request)["messages"][-1]["content"] == "how many?"


def stopped_mid_run(app: Any) -> tuple[list[dict[str, Any]], Inspector]:
    """Send, press Stop once the text streams; every hub message until the turn is over."""

    async def go() -> tuple[list[dict[str, Any]], Inspector]:
        with serve(app) as base:
            inspector = Inspector(f"{base}/agent", resumable=True)
            inspector.send("go")

            async def streaming() -> None:
                async for message in inspector.hub.follow():
                    if message["kind"] == "event" and message["type"] == "TEXT_MESSAGE_CONTENT":
                        return

            await asyncio.wait_for(streaming(), HANG)
            inspector.stop()
            try:
                return await until(inspector), inspector
            finally:
                await inspector.aclose()

    return asyncio.run(go())


def test_stop_asks_the_agent_the_run_ends_cancelled_shown_as_stopped() -> None:
    app = agent_app(slow_agent(ticks=2000, every=0.01), path="/agent", resumable=Resumable())
    seen, inspector = stopped_mid_run(app)
    # the agent ended the run itself, cancelled (RUN-5): the stream's last event says so
    last = [m for m in seen if m["kind"] == "event"][-1]["event"]
    assert last["type"] == "RUN_FINISHED" and last["outcome"]["type"] == "cancelled", last
    assert inspector.session.conversation is not None
    assert inspector.session.conversation.runs[-1].status == "cancelled"
    # shown as stopped: neither success nor failure (RUN-8)
    [end] = [m for m in seen if m["kind"] == "run-end"]
    assert end["status"] == "stopped"
    [said] = [m for m in seen if m["kind"] in ("stopped", "failed")]
    assert said["kind"] == "stopped", said
    assert said["message"] == "stopped: the agent ended the run cancelled"


def test_stop_of_a_run_the_agent_did_not_opt_in_cancels_it_here() -> None:
    """An agent without the extension: nothing to ask, Stop leaves the run as before."""
    seen, inspector = stopped_mid_run(agent_app(slow_agent(ticks=2000, every=0.01), path="/agent"))
    assert not [m for m in seen if m["kind"] == "event" and m["type"] == "RUN_FINISHED"]
    assert inspector.session.conversation is not None
    assert inspector.session.conversation.runs[-1].status == "truncated"  # left, not stopped
    [end] = [m for m in seen if m["kind"] == "run-end"]
    assert end["status"] == "stopped"
    [said] = [m for m in seen if m["kind"] in ("stopped", "failed")]
    assert said == {**said, "kind": "stopped", "message": "stopped: you stopped the turn"}


def test_a_person_sees_the_run_stopped_not_an_error(browser: Any) -> None:
    """In Chromium: Stop on an opted-in run — the agent ends it cancelled, the page says
    *stopped* (its bubble and the timeline), no error anywhere, the page idle again."""
    app = agent_app(counting_agent(), path="/agent", resumable=Resumable())
    with (
        inspector_server(agent_setup(app, resumable=True)) as served,
        open_page(browser, served.url) as page,
    ):
        page.get_by_label("Your message to the agent").fill("count")
        page.get_by_role("button", name="Send", exact=True).click()
        page.locator(".bubble.assistant", has_text="Counting: 0 1 2").wait_for()
        page.get_by_role("button", name="Stop the run in progress").click()
        bubble = page.locator(".bubble.stopped")
        bubble.wait_for()
        assert "the agent ended the run cancelled" in bubble.inner_text()
        assert bubble.is_visible() and bubble.bounding_box()["height"] > 0
        page.locator(".run-end.status-stopped").wait_for()
        assert page.locator(".run-end.status-stopped").inner_text().endswith("ended: stopped")
        page.get_by_role("status").filter(has_text="idle").wait_for()
        assert page.locator(".bubble.failure").count() == 0
        assert "run failed" not in page.locator("#log").inner_text()
        runs = served.call(lambda: [r.status for r in served.inspector.session.conversation.runs])
        assert runs == ["cancelled"]  # the agent took the stop: not merely left


@pytest.mark.parametrize(("flag", "opted_in"), [([], False), (["--resumable"], True)])
def test_the_flag_opts_the_inspectors_runs_in(
    monkeypatch: pytest.MonkeyPatch, flag: list[str], opted_in: bool
) -> None:
    """``inspect --resumable`` reaches the session's client; without it, nothing opts in."""
    import argparse

    from agui_tools.cli import inspect_cmd

    built: list[Inspector] = []
    monkeypatch.setattr(inspect_cmd, "serve", lambda make, *_: built.append(make()) or 0)
    parser = argparse.ArgumentParser()
    inspect_cmd.register(parser.add_subparsers())
    args = parser.parse_args(["inspect", "http://127.0.0.1:1/agent", "--no-browser", *flag])
    assert args.func(args) == 0
    [inspector] = built
    assert inspector.resumable is opted_in and inspector.session.client.resumable is opted_in
    assert ("Agui-Resumable" in inspector.session.client.headers) is opted_in
