"""The inspector's HTTP face without a browser (issue 15): the security checks, the
decision API's refusals, exports that ``agui-tools verify`` judges, and peers —
our server and the server built only with the official Python package."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_tools.cli import main
from agui_tools.demo.agent import demo_agent
from agui_tools.demo.tools import register as register_demo
from agui_tools.testing import serving
from agui_tools.transport import agent_app
from agui_tools.ui.inspector import Inspector
from agui_tools.ui.inspector._app import cookie_name
from tests.helpers.inspector_page import (
    download_exports,
    idle,
    order_two_widgets,
    running,
    unbatched,
    until,
)

from .inspector_agents import broken_app, register_three, three_calls_agent

# -- security ------------------------------------------------------------------------------


def test_requests_from_elsewhere_are_refused_and_the_page_is_served_locked_down() -> None:
    async def go() -> None:
        async with serving(agent_app(demo_agent(delay=0, refund=False), path="/agent")) as base:
            inspector = Inspector(f"{base}/agent")
            async with running(inspector) as page:
                ok = await page.get("/")
                assert ok.status_code == 200
                assert "script-src 'self'" in ok.headers["content-security-policy"]
                assert inspector.token in ok.text  # only the page this server rendered knows it
                page.cookies.clear()  # the page's cookie would authenticate the GETs below

                async def post(**headers: str) -> httpx.Response:
                    return await page.post("/api/prompt", json={"text": "hi"}, headers=headers)

                no_token = {"X-Inspector-Token": ""}
                refused = {
                    "another Host (DNS rebinding)": await page.get(
                        "/", headers={"Host": "evil.example:80"}
                    ),
                    "another Origin": await post(Origin="http://evil.example"),
                    "no Origin": await post(Origin=""),
                    "a wrong token": await post(**{"X-Inspector-Token": "guess"}),
                    "no token": await post(**{"X-Inspector-Token": ""}),
                    "a form post": await post(**{"Content-Type": "text/plain"}),
                    "a cross-site fetch": await post(**{"Sec-Fetch-Site": "cross-site"}),
                    "a cross-site read of the page": await page.get(
                        "/", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}
                    ),
                    "the events without a token": await page.get("/api/events", headers=no_token),
                    "an export with a wrong token": await page.get(
                        "/api/export/thread.json", params={"token": "guess"}, headers=no_token
                    ),
                    "a wrong cookie": await page.get(
                        "/api/export/thread.json",
                        headers={
                            **no_token,
                            "Cookie": f"{cookie_name(ok.url.netloc.decode())}=guess",
                        },
                    ),
                    "a preflight": await page.options("/api/prompt"),
                }
                for why, response in refused.items():
                    assert response.status_code == 403, why
                    assert response.json()["error"].startswith("refused"), why
                assert not [m for m in inspector.hub.messages if m["kind"] == "user"]
                followed = await page.get(
                    "/", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}
                )
                assert followed.status_code == 200  # a link to the page may be followed
                assert "frame-ancestors 'none'" in followed.headers["content-security-policy"]
                assert (await post()).status_code == 200  # the page itself may
                await until(inspector, idle)

    asyncio.run(go())


def test_the_hosts_a_page_may_name() -> None:
    from agui_tools.ui.inspector import host_policy

    for bind in ("127.0.0.1", "192.168.1.5", "0.0.0.0", "::"):
        policy = host_policy(bind)
        for host in ("127.0.0.1:8", "localhost:8", "[::1]:8", "192.168.1.5:8", "a.localhost"):
            assert policy.allows(host), (bind, host)
        assert not policy.allows("evil.example:8"), bind  # a wildcard bind too (issue 28)
    assert host_policy("inspector.lan").allows("inspector.lan:8")  # the bound name
    listed = host_policy("0.0.0.0", ["inspector.lan", ".corp.example"])
    assert listed.allows("inspector.lan:8") and listed.allows("x.corp.example")
    assert not listed.allows("inspector.lan.evil.example")


def test_the_inspector_listens_on_loopback_only_by_default() -> None:
    import argparse

    from agui_tools.cli.inspect_cmd import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["inspect", "http://127.0.0.1:1/agent"])
    assert args.host == "127.0.0.1"


def test_a_reconnecting_page_is_replayed_exactly_what_it_missed() -> None:
    async def go() -> None:
        async with serving(agent_app(demo_agent(delay=0, refund=False), path="/agent")) as base:
            inspector = Inspector(f"{base}/agent")
            async with running(inspector) as page:
                await page.post("/api/prompt", json={"text": "hello"})
                await until(inspector, idle)
                kept = [m["seq"] for m in inspector.hub.messages]
                assert len(kept) > 10
                texts = [m for m in inspector.hub.messages if m["kind"] == "text"]

                async def read(last: str | None) -> tuple[list[int], list[dict[str, Any]]]:
                    """The SSE ids read, and the messages they carried (batches unwrapped)."""
                    headers = {"Last-Event-ID": last} if last is not None else {}
                    ids: list[int] = []
                    messages: list[dict[str, Any]] = []
                    params = {"token": inspector.token}
                    async with page.stream(
                        "GET", "/api/events", params=params, headers=headers
                    ) as r:
                        async for line in r.aiter_lines():
                            if line.startswith("data: "):
                                messages += unbatched(json.loads(line[6:]))
                            if line.startswith("id: "):
                                ids.append(int(line[4:]))
                            if messages and messages[-1]["seq"] == kept[-1]:
                                return ids, messages
                    return ids, messages

                # a new page catches up in ONE message (a batch), not one per update
                ids, messages = await read(None)
                assert ids == [kept[-1]]
                # ... holding every kept message but the text deltas, which are joined
                assert [m["seq"] for m in messages if m["kind"] != "text"] == [
                    s for s in kept if s not in {t["seq"] for t in texts}
                ]
                joined = "".join(m["delta"] for m in messages if m["kind"] == "text")
                assert joined == "".join(t["delta"] for t in texts)
                # a reconnecting page gets exactly what it missed after the id it names
                ids, messages = await read("6")
                assert ids == [kept[-1]]
                missed = [m for m in inspector.hub.messages if m["seq"] > 6]
                assert [m["kind"] for m in messages if m["kind"] != "text"] == [
                    m["kind"] for m in missed if m["kind"] != "text"
                ]

    asyncio.run(go())


# -- the decision API: bad input is refused, and nothing is lost ------------------------------


def test_bad_decisions_are_refused_and_the_call_still_awaits_consent() -> None:
    async def go() -> None:
        async with serving(agent_app(three_calls_agent(delay=0), path="/agent")) as base:
            inspector = Inspector(f"{base}/agent", register=register_three)
            async with running(inspector) as page:
                assert (await page.post("/api/prompt", json={"text": "go"})).status_code == 200
                await until(inspector, lambda m: m["kind"] == "consent" and m["callId"] == "c0")
                busy = await page.post("/api/prompt", json={"text": "again"})
                assert busy.status_code == 409 and "in progress" in busy.json()["error"]

                bad = await page.post(
                    "/api/consent",
                    json={"callId": "c0", "decision": "edit", "arguments": {"sku": 1, "qty": "x"}},
                )
                assert bad.status_code == 422 and "TOOL-21" in bad.json()["error"]
                assert {e["path"] for e in bad.json()["errors"]} == {"/sku", "/qty"}
                for body, status in [
                    ({"callId": "c0", "decision": "maybe"}, 422),
                    ({"callId": "c0", "decision": "edit", "arguments": [1]}, 422),
                    ({"callId": "nope", "decision": "approve"}, 409),
                ]:
                    response = await page.post("/api/consent", json=body)
                    assert response.status_code == status, body
                not_json = await page.post("/api/consent", content=b"{nope")
                assert not_json.status_code == 400
                # nothing was decided: the call still waits, and a good decision still works
                call = inspector.session.conversation.call("c0")  # type: ignore[union-attr]
                assert call.status.value == "awaiting_consent" and call.decision is None
                good = await page.post(
                    "/api/consent",
                    json={"callId": "c0", "decision": "edit", "arguments": {"sku": "w", "qty": 3}},
                )
                assert good.status_code == 200
                await until(inspector, lambda m: m["kind"] == "consent" and m["callId"] == "c1")
                assert call.answer is not None and call.answer.content == "placed 3 x w"
                for cid in ("c1", "c2"):
                    await page.post("/api/consent", json={"callId": cid, "decision": "decline"})
                    if cid == "c1":
                        await until(
                            inspector, lambda m: m["kind"] == "consent" and m["callId"] == "c2"
                        )
                await until(inspector, idle)

    asyncio.run(go())


# -- exports ---------------------------------------------------------------------------------


def test_exported_streams_are_judged_by_verify_as_the_inspector_judged_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def go() -> tuple[int, list[str]]:
        async with serving(agent_app(demo_agent(delay=0, refund=False), path="/agent")) as base:
            inspector = Inspector(f"{base}/agent", register=register_demo)
            async with running(inspector) as page:
                await order_two_widgets(inspector, page)
                runs = await download_exports(inspector, page, tmp_path, tmp_path / "thread.json")
                data = json.loads((tmp_path / "thread.json").read_text())
                assert data["messages"] == inspector.session.conversation.messages  # type: ignore[union-attr]
                statuses = [r["status"] for r in data["runs"]]
                return runs, statuses

    runs, statuses = asyncio.run(go())
    assert runs == 5 and statuses == ["success"] * 5
    for n in range(1, runs + 1):
        code = main(
            [
                "verify",
                str(tmp_path / f"run-{n}.sse"),
                "--input",
                str(tmp_path / f"run-{n}.input.json"),
            ]
        )
        assert code == 0, capsys.readouterr().out


def test_a_broken_agent_ends_the_turn_rejected_and_its_export_fails_verify_by_the_same_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def go() -> None:
        async with serving(broken_app()) as base:
            inspector = Inspector(f"{base}/agent")
            async with running(inspector) as page:
                await page.post("/api/prompt", json={"text": "hi"})
                violation = await until(inspector, lambda m: m["kind"] == "violation")
                assert violation["rule"] == "TOOL-20" and violation["index"] == 4
                # the timeline's frame at that index is the one that broke the rule
                frames = {m["index"]: m for m in inspector.hub.messages if m["kind"] == "event"}
                assert frames[4]["type"] == "TOOL_CALL_ARGS"
                assert frames[4]["event"]["toolCallId"] == "ghost"
                end = await until(inspector, lambda m: m["kind"] == "run-end")
                assert end["status"] == "rejected"
                await until(inspector, idle)  # within seconds, while the agent still stalls
                failed = await until(inspector, lambda m: m["kind"] == "failed")
                assert failed["rule"] == "TOOL-20"
                assert await download_exports(inspector, page, tmp_path) == 1

    asyncio.run(go())
    code = main(
        ["verify", str(tmp_path / "run-1.sse"), "--input", str(tmp_path / "run-1.input.json")]
    )
    assert code == 1
    assert "[TOOL-20] event #4" in capsys.readouterr().out


# -- peers ----------------------------------------------------------------------------------


def test_inspect_drives_the_server_built_only_with_the_official_package() -> None:
    pytest.importorskip("fastapi")
    from tests.interop.official_server import app

    async def go() -> None:
        async with serving(app) as base:
            inspector = Inspector(f"{base}/agent")
            async with running(inspector) as page:
                seen: list[dict[str, Any]] = []

                async def read_page_stream() -> None:
                    # read the page's own event stream, as the browser does
                    params = {"token": inspector.token}
                    async with page.stream("GET", "/api/events", params=params) as r:
                        assert r.headers["content-type"].startswith("text/event-stream")
                        async for line in r.aiter_lines():
                            if line.startswith("data: "):
                                seen.extend(unbatched(json.loads(line[6:])))
                                if any(idle(m) for m in seen) and any(
                                    m["kind"] == "user" for m in seen
                                ):
                                    return

                reader = asyncio.create_task(read_page_stream())
                await page.post("/api/prompt", json={"text": "hello"})
                await asyncio.wait_for(reader, 10)
        text = "".join(m["delta"] for m in seen if m["kind"] == "text")
        assert text == "Hello from the agent."
        ends = [m for m in seen if m["kind"] == "run-end"]
        assert [e["status"] for e in ends] == ["success"]
        events = [m["type"] for m in seen if m["kind"] == "event"]
        assert events[0] == "RUN_STARTED" and events[-1] == "RUN_FINISHED"
        assert not [m for m in seen if m["kind"] in ("warning", "violation", "failed")]

    asyncio.run(go())


def test_a_warning_is_shown_on_its_frame_and_the_run_still_succeeds() -> None:
    from .inspector_agents import future_prop_app

    async def go() -> list[dict[str, Any]]:
        async with serving(future_prop_app()) as base:
            inspector = Inspector(f"{base}/agent")
            async with running(inspector) as page:
                await page.post("/api/prompt", json={"text": "hi"})
                await until(inspector, idle)
                return inspector.hub.messages

    messages = asyncio.run(go())
    warnings = [m for m in messages if m["kind"] == "warning"]
    assert [(w["rule"], w["index"], w["run"]) for w in warnings] == [("PROC-3", 1, 1)]
    assert "/futureProp" in warnings[0]["message"]
    frame = next(m for m in messages if m["kind"] == "event" and m["index"] == 1)
    assert frame["event"]["futureProp"] == 1  # the timeline shows the frame as received
    assert [m["status"] for m in messages if m["kind"] == "run-end"] == ["success"]
    assert not [m for m in messages if m["kind"] == "failed"]


def test_calls_a_rejected_run_left_are_answered_before_the_next_prompt() -> None:
    from .inspector_agents import broken_after_call_app

    async def go() -> None:
        async with serving(broken_after_call_app()) as base:
            inspector = Inspector(f"{base}/agent", register=register_three)
            async with running(inspector) as page:
                await page.post("/api/prompt", json={"text": "first"})
                await until(inspector, lambda m: m["kind"] == "failed")
                await until(inspector, idle)
                conv = inspector.session.conversation
                assert conv is not None and [c.call_id for c in conv.pending] == ["c9"]
                # the next prompt asks about the call first instead of failing with FE-8
                await page.post("/api/prompt", json={"text": "second"})
                await until(inspector, lambda m: m["kind"] == "consent" and m["callId"] == "c9")
                await page.post(
                    "/api/consent", json={"callId": "c9", "decision": "decline", "reason": "no"}
                )
                start = await until(inspector, lambda m: m["kind"] == "run-start" and m["run"] == 2)
                tool = [m for m in start["input"]["messages"] if m["role"] == "tool"]
                assert [t["toolCallId"] for t in tool] == ["c9"]
                assert "The user said: no" in tool[0]["content"]
                await until(inspector, lambda m: m["kind"] == "run-end" and m["run"] == 2)
                await until(inspector, lambda m: idle(m) and m["seq"] > start["seq"])

    asyncio.run(go())


def test_an_unreachable_agent_fails_the_turn_in_words_and_a_retry_sends_the_prompt_once() -> None:
    from agui_tools.testing import free_port

    async def go() -> None:
        port = free_port()
        inspector = Inspector(f"http://127.0.0.1:{port}/agent")
        async with running(inspector) as page:
            await page.post("/api/prompt", json={"text": "hello"})
            failed = await until(inspector, lambda m: m["kind"] == "failed")
            assert f"cannot reach the agent at http://127.0.0.1:{port}/agent" in failed["message"]
            assert not inspector.busy
            conv = inspector.session.conversation
            assert conv is not None and conv.messages == []  # nothing was sent: withdrawn
            async with serving(
                agent_app(demo_agent(delay=0, refund=False), path="/agent"), port=port
            ):
                await page.post("/api/prompt", json={"text": "hello"})
                await until(
                    inspector, lambda m: m["kind"] == "run-end" and m["status"] == "success"
                )
            assert [m["content"] for m in conv.messages if m["role"] == "user"] == ["hello"]

    asyncio.run(go())


def test_extra_headers_reach_the_agent() -> None:
    from agui_tools.cli.inspect_cmd import parse_headers

    from .inspector_agents import echo_header_app

    headers = parse_headers(["Authorization: Bearer s3cret"])
    assert headers == {"Authorization": "Bearer s3cret"}

    async def go() -> str:
        async with serving(echo_header_app()) as base:
            inspector = Inspector(f"{base}/agent", headers=headers)
            async with running(inspector) as page:
                await page.post("/api/prompt", json={"text": "who am I?"})
                await until(inspector, idle)
                return "".join(m["delta"] for m in inspector.hub.messages if m["kind"] == "text")

    assert asyncio.run(go()) == "Bearer s3cret"


# -- the command line ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["inspect", "not a url"], "is not an http:// or https:// URL"),
        (
            ["inspect", "http://127.0.0.1:9/agent", "-H", "NoColon"],
            "a header is written 'Name: value'",
        ),
        (
            ["inspect", "http://127.0.0.1:9/agent", "--tools", "no_such_module_x"],
            "cannot load --tools",
        ),
        (["inspect", "http://127.0.0.1:9/agent", "--port", "70000"], "is not a TCP port"),
        (["demo", "--web", "--yes"], "--web asks for consent in the page"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_port_in_use_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["inspect", "http://127.0.0.1:9/agent", "--port", str(port)]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_a_port_left_in_time_wait_by_a_stopped_inspector_is_free_again() -> None:
    """Ctrl-C then ``inspect --port P`` again: the closed server's connections sit in
    TIME_WAIT for a minute; the probe binds as the server does (SO_REUSEADDR) and lets it."""
    import socket

    from agui_tools.cli.inspect_cmd import port_problem

    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = server.accept()
            accepted.close()  # the server side closes first: its end goes to TIME_WAIT
            assert client.recv(1) == b""
    assert port_problem("127.0.0.1", port) is None


# -- the page's source and its docs ---------------------------------------------------------


def test_the_page_never_turns_data_into_markup() -> None:
    """A static guard beside the browser test: no HTML-parsing sink in any of the page's
    modules — and every module the page has is one the server serves (and so checked)."""
    from importlib import resources

    from agui_tools.ui.inspector._app import _MODULES

    static = resources.files("agui_tools.ui.inspector").joinpath("static")
    shipped = sorted(p.name for p in static.iterdir() if p.name.endswith(".js"))
    assert shipped == sorted(_MODULES)
    for name in shipped:
        source = static.joinpath(name).read_text()
        script = "\n".join(
            line for line in source.splitlines() if not line.lstrip().startswith("//")
        )
        for sink in (
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
            "createContextualFragment",
            "DOMParser",
        ):
            assert sink not in script, (name, sink)


def test_the_docs_show_screenshots_the_tests_take() -> None:
    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "inspector.md").read_text()
    images = re.findall(r"!\[[^\]]*\]\((img/[^)]+)\)", text)
    assert len(images) >= 3
    tests = "".join(p.read_text() for p in (root / "tests" / "ui").glob("test_inspector_*.py"))
    for image in images:
        assert (root / "docs" / image).stat().st_size > 10_000, image
        assert f'"{Path(image).name}"' in tests, f"{image} is not taken by a test"


TOOLS_MODULE = '''
def lookup_sku(name: str) -> str:
    """Find the SKU of a product by name."""
    return "W-1"


def refund(order: str) -> str:
    """Refund an order."""
    return "refunded"


TOOLS = [lookup_sku, (refund, {"side_effects": True})]
'''


def test_the_inspect_command_serves_a_page_with_the_tools_module_and_stops_on_ctrl_c(
    tmp_path: Path,
) -> None:
    from .conftest import cli_inspector

    (tmp_path / "shop_tools.py").write_text(TOOLS_MODULE)
    argv = ["inspect", "http://127.0.0.1:9/agent", "--tools", "shop_tools", "--no-browser"]
    with cli_inspector(argv, cwd=tmp_path) as url, httpx.Client(base_url=url, timeout=10) as client:
        page = client.get("/")
        config = re.search(r'name="inspector-config" content="([^"]+)"', page.text)
        assert config is not None
        token = json.loads(config.group(1).replace("&quot;", '"').replace("&amp;", "&"))["token"]
        thread = client.get("/api/export/thread.json", params={"token": token}).json()
    tools = {t["name"]: t["sideEffects"] for t in thread["tools"]}
    assert tools == {"lookup_sku": False, "refund": True}


# -- craft: HEAD, the favicon, the token in a cookie (issue 24) ----------------------------


def test_head_answers_like_get_a_favicon_ships_and_the_token_rides_in_a_cookie() -> None:
    from agui_tools.ui.inspector._app import CSP, cookie_name

    async def go() -> None:
        async with serving(agent_app(demo_agent(delay=0, refund=False), path="/agent")) as base:
            inspector = Inspector(f"{base}/agent")
            async with running(inspector) as page:
                got = await page.get("/")
                head = await page.head("/")
                assert head.status_code == 200 and head.content == b""
                assert head.headers["content-security-policy"] == CSP  # curl -I shows it
                assert head.headers["content-type"] == got.headers["content-type"]
                for path in ("/favicon.ico", "/static/favicon.svg"):
                    icon = await page.get(path, headers={"X-Inspector-Token": ""})
                    assert icon.status_code == 200, path
                    assert icon.headers["content-type"] == "image/svg+xml"
                    assert icon.content.startswith(b"<svg")
                    assert (await page.head(path)).status_code == 200
                # the page sets the token as an HttpOnly, same-site cookie for its port
                cookie = got.headers["set-cookie"]
                name = cookie_name(got.url.netloc.decode())
                assert cookie.startswith(f"{name}={inspector.token};")
                assert "HttpOnly" in cookie and "SameSite=strict" in cookie
                # … and the page never puts the token in a URL
                script = (await page.get("/static/app.js")).text
                assert "?token=" not in script and "token=" not in script
                # the cookie alone authenticates the event stream and the exports
                page.cookies.clear()
                bare = {"X-Inspector-Token": ""}
                jar = {"Cookie": f"{name}={inspector.token}"}
                assert (await page.get("/api/export/thread.json", headers=bare)).status_code == 403
                assert (
                    await page.get("/api/export/thread.json", headers={**bare, **jar})
                ).status_code == 200
                # a cookie is no POST token: the header is still required (no CSRF by cookie)
                refused = await page.post(
                    "/api/prompt", json={"text": "hi"}, headers={**bare, **jar}
                )
                assert refused.status_code == 403
                # other methods are still refused
                assert (await page.request("PUT", "/")).status_code == 403

    asyncio.run(go())


def test_a_string_result_schema_is_answered_and_checked_as_any_json_value() -> None:
    from .inspector_agents import weather_agent

    async def go() -> None:
        async with serving(agent_app(weather_agent(), path="/agent")) as base:
            inspector = Inspector(f"{base}/agent")
            async with running(inspector) as page:
                added = await page.post(
                    "/api/tools", json={"name": "get_weather", "description": "The weather."}
                )
                assert added.status_code == 200  # the result schema defaults to a string
                await page.post("/api/prompt", json={"text": "weather?"})
                await until(inspector, lambda m: m["kind"] == "answer-form")
                wrong = await page.post("/api/answer", json={"callId": "w1", "value": {"t": 1}})
                assert wrong.status_code == 422
                assert wrong.json()["errors"][0]["keyword"] == "type"
                assert "JSON object" not in wrong.text  # not the argument validator's words
                ok = await page.post("/api/answer", json={"callId": "w1", "value": "sunny"})
                assert ok.status_code == 200, ok.text
                said = await until(
                    inspector, lambda m: m["kind"] == "text" and "The weather" in m["delta"]
                )
                assert "sunny" in said["delta"]
                await until(inspector, idle)

    asyncio.run(go())


def test_session_controls_refuse_what_cannot_be_done_now() -> None:
    from .inspector_agents import interrupt_agent, slow_agent

    async def go() -> None:
        async with (
            serving(agent_app(slow_agent(), path="/agent")) as slow,
            serving(agent_app(interrupt_agent(), path="/agent")) as asking,
        ):
            inspector = Inspector(
                None, agents={"slow": f"{slow}/agent", "asking": f"{asking}/agent"}
            )
            async with running(inspector) as page:
                assert (await page.post("/api/stop", json={})).status_code == 409  # nothing runs
                unknown = await page.post("/api/thread", json={"threadId": "thread-x"})
                assert unknown.status_code == 404  # no store: no thread to go back to
                bad = {
                    "an unknown agent": {"agent": "nope"},
                    "a URL that is none": {"url": "not a url"},
                    "a header with a line break": {"headers": {"X-A": "1\r\nX-B: 2"}},
                    "a header name that is none": {"headers": {"a b": "1"}},
                    "a bearer token with spaces": {"bearer": "a b"},
                }
                for why, body in bad.items():
                    answer = await page.post("/api/agent", json=body)
                    assert answer.status_code == 422, why
                await page.post("/api/prompt", json={"text": "count"})
                await until(inspector, lambda m: m["kind"] == "text")
                assert (await page.post("/api/new-thread", json={})).status_code == 409
                assert (await page.post("/api/agent", json={"agent": "asking"})).status_code == 409
                assert (await page.post("/api/stop", json={})).status_code == 200
                stopped = await until(inspector, lambda m: m["kind"] == "run-end")
                assert stopped["status"] == "stopped"
                await until(inspector, idle)
                assert (await page.post("/api/agent", json={"agent": "asking"})).status_code == 200
                await page.post("/api/prompt", json={"text": "refund"})
                await until(inspector, lambda m: m["kind"] == "interrupt" and m["id"] == "address")
                for body, status in (
                    ({"id": "nope", "action": "resolve"}, 409),
                    ({"id": "address", "action": "maybe"}, 422),
                    ({"id": "address", "action": "resolve", "payload": {"street": "Main"}}, 422),
                ):
                    answer = await page.post("/api/interrupt", json=body)
                    assert answer.status_code == status, body
                answer = await page.post(
                    "/api/interrupt",
                    json={
                        "id": "address",
                        "action": "resolve",
                        "payload": {"street": "x", "zip": 1},
                    },
                )
                assert [e["path"] for e in answer.json()["errors"]] == ["/street"]
                assert (await page.post("/api/stop", json={})).status_code == 200
                await until(inspector, lambda m: m["kind"] == "stopped")
                await until(inspector, idle)
                # a stopped interrupt is asked again by the next prompt, never an INT-7 failure
                await page.post("/api/prompt", json={"text": "again"})
                again = await until(
                    inspector, lambda m: m["kind"] == "interrupt" and m["seq"] > stopped["seq"]
                )
                assert again["id"] in ("approve-refund", "address")
                assert not [m for m in inspector.hub.messages if m["kind"] == "failed"]
                await page.post("/api/stop", json={})
                await until(inspector, lambda m: idle(m) and m["seq"] > again["seq"])

    asyncio.run(go())


# -- the command line: several agents, a store ------------------------------------------------


def test_inspect_refuses_bad_agents_and_stores_as_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "none.toml").write_text("[other]\nx = 1\n")
    (tmp_path / "broken.toml").write_text("[agents\n")
    (tmp_path / "nourl.json").write_text('{"agents": {"a": {"headers": {}}}}')
    (tmp_path / "ftp.toml").write_text('[agents.a]\nurl = "ftp://x"\n')
    (tmp_path / "dir.db").mkdir()
    cases = {
        "no agent": ([], "give the agent's URL"),
        "not NAME=URL": (["--agent", "local"], "is not NAME=URL"),
        "a missing file": (["--agents", str(tmp_path / "missing.toml")], "cannot read --agents"),
        "no agents table": (["--agents", str(tmp_path / "none.toml")], "names no agents"),
        "not TOML": (["--agents", str(tmp_path / "broken.toml")], "is not TOML"),
        "no url": (["--agents", str(tmp_path / "nourl.json")], "needs a url"),
        "not http": (["--agents", str(tmp_path / "ftp.toml")], "not an http:// or https://"),
        "a store that is a directory": (
            ["http://127.0.0.1:1/agent", "--store", str(tmp_path / "dir.db")],
            "cannot open --store",
        ),
    }
    for why, (argv, said) in cases.items():
        assert main(["inspect", *argv, "--no-browser"]) == 2, why
        err = capsys.readouterr().err
        assert said in err, (why, err)
        assert "Traceback" not in err, why


def test_inspect_with_an_agents_file_and_a_store_resumes_after_a_restart(tmp_path: Path) -> None:
    from .conftest import cli_inspector
    from .inspector_agents import echo_agent

    secret = "file-token-0042"

    async def events_until(
        url: str, client: httpx.AsyncClient, want: Callable[[dict[str, Any]], bool]
    ) -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []
        async with client.stream("GET", f"{url}api/events") as stream:
            async for line in stream.aiter_lines():
                if line.startswith("data: "):
                    message = json.loads(line[6:])
                    batch = message["messages"] if message["kind"] == "batch" else [message]
                    seen.extend(batch)
                    if any(want(m) for m in batch):
                        return seen
        raise AssertionError("the event stream ended")

    async def session(url: str, prompt: str | None) -> list[dict[str, Any]]:
        async with httpx.AsyncClient(timeout=10) as client:
            page = await client.get(url)  # sets the token cookie the event stream reads
            token = re.search(r"&quot;token&quot;:&quot;([^&]+)&quot;", page.text)
            assert token is not None
            seen = await asyncio.wait_for(
                events_until(url, client, lambda m: m["kind"] == "agents"), 10
            )
            if prompt is not None:
                headers = {"Origin": url.rstrip("/"), "X-Inspector-Token": token.group(1)}
                sent = await client.post(f"{url}api/prompt", json={"text": prompt}, headers=headers)
                assert sent.status_code == 200, sent.text
                seen = await asyncio.wait_for(
                    events_until(url, client, lambda m: m["kind"] == "run-end"), 10
                )
            return seen

    async def go() -> None:
        async with serving(echo_agent("alpha")) as a, serving(echo_agent("beta")) as b:
            agents = tmp_path / "agents.toml"
            agents.write_text(
                f'[agents.alpha]\nurl = "{a}/agent"\nheaders = {{ Authorization = "Bearer {secret}" }}\n'
                f'[agents.beta]\nurl = "{b}/agent"\n'
            )
            argv = [
                "inspect",
                "--agents",
                str(agents),
                "--store",
                str(tmp_path / "t.db"),
                "--no-browser",
            ]
            with cli_inspector(argv) as url:
                seen = await session(url, "hello")
            listed = next(m for m in seen if m["kind"] == "agents")
            assert [x["name"] for x in listed["agents"]] == ["alpha", "beta"]
            assert listed["agents"][0]["headers"] == ["Authorization"]  # a name, not its value
            text = "".join(m["delta"] for m in seen if m["kind"] == "text")
            assert text == f"alpha heard Bearer {secret}"  # the file's header reached the agent
            # nothing the inspector says carries it (the agent's own echo of it aside)
            echoed = ("text", "event", "thread")
            shown = json.dumps([m for m in seen if m["kind"] not in echoed])
            assert secret not in shown and "run-start" in shown
            thread = listed["threadId"]
            with cli_inspector(argv) as url:
                again = await session(url, None)
            restored = next(m for m in again if m["kind"] == "restored")
            assert restored["threadId"] == thread and restored["messages"] == 2
            assert [m["text"] for m in again if m["kind"] == "user"] == ["hello"]

    asyncio.run(go())


def test_import_judges_ndjson_and_protobuf_as_verify_does_and_refuses_what_is_no_capture() -> None:
    import base64

    from agui_tools.app._capture import verify_capture
    from agui_tools.wire._proto_codec import encode_proto_event
    from agui_tools.wire._proto_framing import proto_frame

    ids = {"threadId": "t1", "runId": "r1"}
    events = [
        {"type": "RUN_STARTED", **ids},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "<b>hi</b>"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "RUN_FINISHED", **ids},
    ]
    ndjson = b"".join(json.dumps(e).encode() + b"\n" for e in events[:-1])  # cut: truncated
    proto = b"".join(proto_frame(encode_proto_event(e)) for e in events)

    async def go() -> None:
        inspector = Inspector("http://127.0.0.1:1/agent")
        async with running(inspector) as page:

            async def imported(name: str, data: bytes) -> httpx.Response:
                body = {"name": name, "data": base64.b64encode(data).decode()}
                return await page.post("/api/import", json=body)

            for name, data in (("run.ndjson", ndjson), ("run.bin", proto)):
                answer = await imported(name, data)
                assert answer.status_code == 200, answer.text
                (run,) = answer.json()["runs"]
                assert run["lines"] == verify_capture(data).lines(), name
                assert [f["type"] for f in run["frames"]][:2] == [
                    "RUN_STARTED",
                    "TEXT_MESSAGE_START",
                ]
            assert "TRUNCATED [TRANS-2]" in "\n".join(
                (await imported("run.ndjson", ndjson)).json()["runs"][0]["lines"]
            )
            # a binary stream in thread.json travels as base64 and is judged again
            export = {
                "threadId": "t1",
                "runs": [
                    {
                        "run": 1,
                        "input": None,
                        "stream": base64.b64encode(proto).decode(),
                        "streamEncoding": "base64",
                    }
                ],
            }
            answer = await imported("thread.json", json.dumps(export).encode())
            assert answer.json()["runs"][0]["lines"][-1] == "outcome: completed"
            # no capture at all: verify's own words, not a 500
            junk = (await imported("junk.bin", b"\x00\x01garbage")).json()["runs"][0]
            assert junk["verdict"]["outcome"] == "unreadable"
            assert junk["lines"][0].startswith("not a readable capture: [TRANS-")
            not_b64 = await page.post("/api/import", json={"name": "x", "data": "%%%"})
            assert not_b64.status_code == 422
            no_stream = await imported("old.json", b'{"runs": [{"run": 1}]}')
            assert no_stream.status_code == 422 and "holds no stream" in no_stream.json()["error"]

    asyncio.run(go())


def test_an_expired_interrupt_can_only_be_cancelled_and_the_thread_goes_on() -> None:
    from .inspector_agents import expired_interrupt_agent

    async def go() -> None:
        async with serving(agent_app(expired_interrupt_agent(), path="/agent")) as base:
            inspector = Inspector(f"{base}/agent")
            async with running(inspector) as page:
                await page.post("/api/prompt", json={"text": "go"})
                shown = await until(inspector, lambda m: m["kind"] == "interrupt")
                assert shown["expired"] is True
                late = await page.post(
                    "/api/interrupt", json={"id": "late", "action": "resolve", "payload": 1}
                )
                assert late.status_code == 422 and "INT-8" in late.json()["error"]
                ok = await page.post("/api/interrupt", json={"id": "late", "action": "cancel"})
                assert ok.status_code == 200
                said = await until(inspector, lambda m: m["kind"] == "text")
                assert json.loads(said["delta"].removeprefix("resumed with ")) == [
                    {"interruptId": "late", "status": "cancelled"}
                ]
                await until(inspector, idle)
                assert not [m for m in inspector.hub.messages if m["kind"] == "failed"]

    asyncio.run(go())


# -- a restart on a store (#36 item 3) --------------------------------------------------------


def test_a_restart_resumes_the_open_thread_on_the_agent_it_last_ran_on(tmp_path: Path) -> None:
    """A thread begun with one agent and carried on with another (the thread goes on with
    the agent picked last): after a restart its open interrupt is the second agent's, and
    the resumed run must go there — sent to the first, it is a stranger's resume."""
    from agui_tools.app._store_sqlite import SQLiteStore

    from .inspector_agents import echo_agent, interrupt_agent

    db, index = tmp_path / "threads.db", tmp_path / "threads.db.inspector.json"

    async def after(inspector: Inspector, act: Callable[[], Any], kind: str) -> dict[str, Any]:
        """Do ``act``, then wait for the hub's next message of ``kind``."""
        start = inspector.hub.next_seq
        act()

        async def find() -> dict[str, Any]:
            async for message in inspector.hub.follow(start):
                if message["kind"] == kind and (kind != "busy" or not message["busy"]):
                    return message
            raise AssertionError("the hub closed")

        return await asyncio.wait_for(find(), 10)

    async def go() -> None:
        interrupts = agent_app(interrupt_agent(), path="/agent")
        async with serving(echo_agent("other")) as other, serving(interrupts) as refunds:
            agents = {"other": f"{other}/agent", "refunds": f"{refunds}/agent"}
            first = Inspector(None, agents=agents, store=SQLiteStore(db), index=index)
            await first.start()
            await after(first, lambda: first.send("Hello"), "busy")
            thread = first.thread_id
            first.configure(agent="refunds")
            await after(first, lambda: first.send("Refund my order"), "interrupt")
            await first.aclose()  # the process dies while the user is deciding

            second = Inspector(None, agents=agents, store=SQLiteStore(db), index=index)
            assert (second.thread_id, second.agent) == (thread, "refunds")
            await after(second, lambda: asyncio.ensure_future(second.start()), "interrupt")
            second.resolve_interrupt("approve-refund", "resolve", payload={"approved": True})
            second.resolve_interrupt("address", "cancel")
            await after(second, lambda: None, "busy")
            said = [m for m in second.hub.messages if m["kind"] == "text"]
            text = "".join(m["delta"] for m in said)
            assert "Final answer." in text and "approve-refund: resolved" in text, text
            await second.aclose()

    asyncio.run(go())
