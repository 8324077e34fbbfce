"""Adversarial findings against the reworked inspector (branch attack-inspector).

Each test here failed when it was written: it states what docs/inspector.md
claims and reproduces a stream that breaks the claim.
"""

from __future__ import annotations

import json
from typing import Any

from tests.helpers.browser_page import agent_setup, send

from .conftest import inspector_server, open_page
from .inspector_agents import raw_app

SNAPSHOT = {"a": [1, 2], "o": {"k": "v"}}
# Each of these deltas is refused by the back end's reducer (STATE-2: "did not apply;
# the prior state is kept") — the page's state history must not apply them either.
REFUSED_DELTAS = [
    [{"op": "add", "path": "/__proto__/polluted", "value": "yes"}],
    [{"op": "add", "path": "/a/99999999", "value": "out-of-range"}],
    [{"op": "move", "from": "/o", "path": "/o/k/child"}],
    [{"op": "test", "path": "/a/0", "value": "not one"}, {"op": "add", "path": "/t", "value": 1}],
]


def _hostile_state_app() -> Any:
    return raw_app(
        lambda request, ids: [
            {"type": "RUN_STARTED", **ids},
            {"type": "STATE_SNAPSHOT", "snapshot": SNAPSHOT},
            *({"type": "STATE_DELTA", "delta": ops} for ops in REFUSED_DELTAS),
            {"type": "RUN_FINISHED", **ids},
        ]
    )


def _finished(page: Any) -> None:
    page.locator(".run-end").first.wait_for()
    page.get_by_role("status").filter(has_text="idle").wait_for()


def test_a_state_delta_cannot_pollute_the_pages_object_prototype(browser: Any) -> None:
    """state.js parentOf() walks with ``t in node``, which is true for ``__proto__``:
    ``add /__proto__/polluted`` sets Object.prototype.polluted in the page — for every
    object the page's code touches afterwards. The back end refuses the delta
    (STATE-2), the page applies it anyway."""
    with (
        inspector_server(agent_setup(_hostile_state_app())) as served,
        open_page(browser, served.url) as page,
    ):
        send(page, "state please")
        _finished(page)
        page.get_by_role("tab", name="State").click()
        page.wait_for_timeout(300)
        assert page.evaluate("({}).polluted") is None, "Object.prototype was polluted"
        assert page.evaluate("Object.prototype.hasOwnProperty('polluted')") is False


def test_the_state_history_agrees_with_the_state_at_its_last_step(browser: Any) -> None:
    """docs/inspector.md, State history: "the state after it" of the latest step is the
    thread's state. Deltas the back end refused (STATE-2: the prior state is kept) are
    applied by the page's own RFC 6902 code — an out-of-range index appended
    (splice clamps), a move into its own child removing /o, a failing ``test``
    ignored ("the back end's reducer already checked it") — so the history shows a
    state the thread never had."""
    with (
        inspector_server(agent_setup(_hostile_state_app())) as served,
        open_page(browser, served.url) as page,
    ):
        send(page, "state please")
        _finished(page)
        page.get_by_role("tab", name="State").click()
        page.wait_for_timeout(300)
        real = served.call(lambda: served.inspector.session.conversation.state)
        assert real == SNAPSHOT  # every delta was refused: the snapshot stands
        panel = page.locator("#panel-state").inner_text()
        after = panel.split("The state after it", 1)[1].split("State events", 1)[0]
        assert json.loads(after) == real, after


LONG_TASKS = """
window.__longest = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.__longest = Math.max(window.__longest, e.duration);
}).observe({ type: "longtask", buffered: true });
"""


def test_one_unclosed_link_paragraph_does_not_freeze_the_tab(browser: Any) -> None:
    """docs/inspector.md, Long sessions: no long task over 200 ms. markdown.js's INLINE
    regex has lazy ``[\\s\\S]*?`` / ``[^\\]]+`` alternatives that rescan to the end of the
    paragraph from every opening ``[`` (or ``**``, backtick) with no closer: quadratic in
    a paragraph's length. 100 KB of ``[a](`` (one message, 100 deltas) froze the tab for
    2.9 s in one task (50 KB: 0.45 s; 200 KB: 5.8 s) — the 100,000-event claim is
    for short deltas of well-formed text."""
    text = "[a](" * 25_000
    app = raw_app(
        lambda request, ids: [
            {"type": "RUN_STARTED", **ids},
            {"type": "TEXT_MESSAGE_START", "messageId": "b1", "role": "assistant"},
            *(
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": "b1", "delta": text[i : i + 1000]}
                for i in range(0, len(text), 1000)
            ),
            {"type": "TEXT_MESSAGE_END", "messageId": "b1"},
            {"type": "RUN_FINISHED", **ids},
        ]
    )
    with inspector_server(agent_setup(app)) as served, open_page(browser, served.url) as page:
        page.evaluate(LONG_TASKS)
        send(page, "bomb")
        _finished(page)
        page.wait_for_timeout(1500)
        longest = page.evaluate("window.__longest")
        assert longest < 200, f"a {longest:.0f} ms long task rendering one 100 KB message"


POST = """async ([action, body]) => {
  const c = JSON.parse(document.querySelector('meta[name="inspector-config"]').content);
  const r = await fetch('/api/' + action, {method: 'POST', body: JSON.stringify(body),
    headers: {'Content-Type': 'application/json', 'X-Inspector-Token': c.token}});
  return [r.status, await r.text()];
}"""


def test_a_composed_run_does_not_enter_the_threads_state_history(browser: Any) -> None:
    """docs/inspector.md, Replay… → Compose: "Send this input to the current agent as
    written: its frames show in the timeline … the thread is not changed." The thread's
    state is indeed unchanged (the next input carries none of it), but the State tab
    shows the composed run's STATE_SNAPSHOT as the thread's current state and as its
    latest history step — a state the thread never had."""
    app = raw_app(
        lambda request, ids: [
            {"type": "RUN_STARTED", **ids},
            {"type": "STATE_SNAPSHOT", "snapshot": {"composed": True}},
            {"type": "RUN_FINISHED", **ids},
        ]
    )
    with inspector_server(agent_setup(app)) as served, open_page(browser, served.url) as page:
        composed = {
            "threadId": "elsewhere",
            "runId": "r-composed",
            "messages": [{"id": "u1", "role": "user", "content": "hi"}],
            "tools": [],
            "context": [],
        }
        status, body = page.evaluate(POST, ["compose", {"input": composed}])
        assert status == 200, body
        page.locator(".run-end").first.wait_for()
        page.wait_for_timeout(500)
        status, nxt = page.evaluate(POST, ["next-input", {"prompt": "x"}])
        assert "composed" not in nxt  # the thread itself is unchanged, as documented
        page.get_by_role("tab", name="State").click()
        page.wait_for_timeout(300)
        panel = page.locator("#panel-state").inner_text()
        assert "composed" not in panel, panel[:600]


# The inline regex markdown.js used before its scanner: the reference the scanner must
# agree with (except for backtick runs, where the scanner takes CommonMark's reading).
OLD_INLINE = r"""async ([cases, seed, count]) => {
  const { inline, link } = await import('/static/markdown.js');
  const { el } = await import('/static/core.js');
  const RE = /(`+)([\s\S]*?[^`])\1(?!`)|!\[([^\]]*)\]\(([^)\s]*)\)|\[([^\]]+)\]\(([^)\s]+)\)|<(https?:\/\/[^>\s]+)>|\*\*(?=\S)([\s\S]*?\S)\*\*|__(?=\S)([\s\S]*?\S)__|\*(?=[^\s*])([\s\S]*?[^\s*])\*|(?<![\p{L}\p{N}_])_(?=[^\s_])([\s\S]*?[^\s_])_(?![\p{L}\p{N}_])/gu;
  function old(text, depth = 0) {
    if (depth > 4) return [document.createTextNode(text)];
    const out = []; let last = 0; let m;
    const re = new RegExp(RE.source, "gu");
    while ((m = re.exec(text)) !== null) {
      if (m.index > last) out.push(document.createTextNode(text.slice(last, m.index)));
      if (m[1] !== undefined) out.push(el("code", { text: m[2] }));
      else if (m[4] !== undefined) out.push(el("span", { class: "inert-link", title: "images are not loaded", text: `image: ${m[3] || "(no description)"} (${m[4]})` }));
      else if (m[5] !== undefined) out.push(link(m[5], m[6]));
      else if (m[7] !== undefined) out.push(link(m[7], m[7]));
      else if (m[8] !== undefined || m[9] !== undefined) out.push(el("strong", {}, ...old(m[8] ?? m[9], depth + 1)));
      else out.push(el("em", {}, ...old(m[10] ?? m[11], depth + 1)));
      last = re.lastIndex;
    }
    if (last < text.length) out.push(document.createTextNode(text.slice(last)));
    return out;
  }
  const html = (nodes) => { const d = document.createElement("div"); d.append(...nodes); return d.innerHTML; };
  let x = seed;
  const rand = (k) => { x = (x * 1103515245 + 12345) % 2147483648; return x % k; };
  const alphabet = ["[", "]", "(", ")", "!", "*", "**", "_", "__", " ", "a", "b", "é", "<", ">", "https://e.x/", "javascript:", "\n"];
  const all = [...cases];
  for (let c = 0; c < count; c++) {
    let s = ""; const len = 1 + rand(14);
    for (let k = 0; k < len; k++) s += alphabet[rand(alphabet.length)];
    all.push(s);
  }
  return all.map((s) => [s, html(old(s)), html(inline(s))]).filter(([, a, b]) => a !== b);
}"""


def test_the_inline_scanner_renders_spans_as_the_regex_did(browser: Any) -> None:
    """The linear scanner replacing the quadratic regex must render every span as the
    regex did: fixed cases and 5,000 random strings of Markdown's inline delimiters."""
    cases = [
        "**bold** and *em* and _em_ and __strong__",
        "[a link](https://example.com/a?b=1) and [bad](javascript:alert(1))",
        "![alt](https://x/y.png) ![](z) <https://auto.link/x> <http://a b>",
        "snake_case_name stays, _this_ is em, a_b_ c",
        "**nested *em* inside** and *unclosed and **x",
        "[a [b](c) [](d) [e]( f) [g](h",
        "*a **b** c* __x *y* z__ ** not ** * not *",
        "`code` and `` a ` b `` and ```x```",
    ]
    with inspector_server(agent_setup(_hostile_state_app())) as served:
        with open_page(browser, served.url) as page:
            differ = page.evaluate(OLD_INLINE, [cases, 7, 5000])
            # a block's spans are bounded (MAX_SPANS): past them the text stays, plain
            capped = page.evaluate(CAPPED, "**a" * 3000)
    assert differ == [], differ[:5]
    # "**a**" "a" … a thousand times (the delimiters taken), then the rest as sent
    assert capped == {"strong": 1000, "text": "aa" * 1000 + ("**a" * 3000)[6000:]}


CAPPED = """async (text) => {
  const { renderMarkdown } = await import('/static/markdown.js');
  const d = document.createElement('div');
  d.append(renderMarkdown(text));
  return { strong: d.querySelectorAll('strong').length, text: d.textContent };
}"""


def test_a_turn_waiting_on_interrupts_says_so_and_new_thread_stays_usable(browser: Any) -> None:
    """After a run ends with 7 interrupts the run is over and the page waits for answers,
    yet the status said "The agent is working: wait for this turn to end before sending."
    and New thread was disabled (busy). It must say what it waits for, and New thread
    (after a confirmation: it abandons the open interrupts) must start over."""
    from agui_tools.agent import Run
    from agui_tools.transport import agent_app

    async def agent(run: Run) -> None:
        if not run.resume:
            run.interrupt([{"id": f"i{k}", "reason": "input"} for k in range(7)])

    app = agent_app(agent, path="/agent")
    with inspector_server(agent_setup(app)) as served, open_page(browser, served.url) as page:
        old = page.locator("#thread-id").inner_text()
        send(page, "ask me")
        page.locator(".card.interrupt").nth(6).wait_for()
        status = page.locator("#status")
        assert status.inner_text() == "Answer the 7 open interrupts (or cancel them) to continue"
        assert "working" not in page.locator("#prompt-hint").inner_text()
        page.get_by_role("button", name="Cancel interrupt input").first.click()
        page.locator("#status", has_text="Answer the 6 open interrupts").wait_for()
        fresh = page.get_by_role("button", name="Start a new thread")
        assert fresh.is_enabled()
        page.once("dialog", lambda dialog: dialog.accept())
        fresh.click()
        page.locator("#thread-id").filter(has_not_text=old).wait_for()
        assert served.call(lambda: served.inspector.thread_id) != old
        page.get_by_role("status").filter(has_text="idle").wait_for()


def test_a_delta_only_the_back_end_refuses_is_not_in_the_history(browser: Any) -> None:
    """A delta valid as RFC 6902 that the back end's reducer still refuses (STATE-2: it
    would nest the state past max_depth) must not be applied by the page either: the
    page learns it from the back end's warning (run and event index) and computes the
    later steps again without it."""

    def nested(depth: int) -> Any:
        value: Any = 0
        for _ in range(depth):
            value = {"n": value}
        return value

    deep_path = "/n" * 99  # the innermost object of the snapshot
    app = raw_app(
        lambda request, ids: [
            {"type": "RUN_STARTED", **ids},
            {"type": "STATE_SNAPSHOT", "snapshot": nested(100)},
            {
                "type": "STATE_DELTA",
                "delta": [{"op": "add", "path": deep_path, "value": nested(40)}],
            },
            {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/x", "value": 1}]},
            {"type": "RUN_FINISHED", **ids},
        ]
    )
    with inspector_server(agent_setup(app)) as served, open_page(browser, served.url) as page:
        send(page, "deep")
        _finished(page)
        page.get_by_role("tab", name="State").click()
        page.wait_for_timeout(300)
        real = served.call(lambda: served.inspector.session.conversation.state)
        assert real == {**nested(100), "x": 1}  # the deep delta was refused, /x applied
        panel = page.locator("#panel-state").inner_text()
        after = panel.split("The state after it", 1)[1].split("State events", 1)[0]
        assert json.loads(after) == real
        page.locator("#deltas button.step", has_text="#2 STATE_DELTA").click()
        assert "refused by the back end" in page.locator("#state-diff").inner_text()


def test_a_restored_threads_state_is_the_latest_step_of_its_history(
    browser: Any, tmp_path: Any
) -> None:
    """The history's latest step is the current state, also when the page saw none of
    the events that made it: a thread restored from the store has a state and no state
    events in this page — its state is a step of its own, the back end's."""
    from agui_tools.app._store_sqlite import SQLiteStore

    db = tmp_path / "threads.db"
    index = tmp_path / "threads.db.inspector.json"
    app = raw_app(
        lambda request, ids: [
            {"type": "RUN_STARTED", **ids},
            {"type": "STATE_SNAPSHOT", "snapshot": {"kept": [1, 2]}},
            {"type": "RUN_FINISHED", **ids},
        ]
    )
    with (
        inspector_server(agent_setup(app, store=SQLiteStore(db), index=index)) as served,
        open_page(browser, served.url) as page,
    ):
        send(page, "keep this")
        _finished(page)
    with (
        inspector_server(agent_setup(app, store=SQLiteStore(db), index=index)) as served,
        open_page(browser, served.url) as page,
    ):
        page.locator(".bubble.note", has_text="resumed from the store").wait_for()
        page.get_by_role("tab", name="State").click()
        page.wait_for_timeout(300)
        panel = page.locator("#panel-state").inner_text()
        assert "the thread's state, as the back end has it" in panel
        after = panel.split("The state after it", 1)[1].split("State events", 1)[0]
        assert json.loads(after) == {"kept": [1, 2]}
