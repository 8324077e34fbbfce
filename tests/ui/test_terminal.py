"""Model output is shown as data on the terminal: rich markup and control
sequences (ANSI, OSC, CR, bidi) are escaped, never interpreted (SEC-2, TOOL-23)."""

from __future__ import annotations

import io

from rich.console import Console

from agui_tools.app._arguments import ArgumentBuffer, parse_arguments
from agui_tools.app._calls import Answer, CallStatus, PendingCall
from agui_tools.app._conversation import CallUpdate, TextDelta
from agui_tools.ui.terminal import TerminalUI, safe

HOSTILE = [
    "[bold red]PWNED[/bold red]",
    "[link=https://evil.example]click[/link]",
    "\x1b[31mred\x1b[0m",
    "\x1b]0;new window title\x07",
    "\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\",
    "fake\rOVERWRITTEN",
    "abc\u202eevil\u202c",
    "\x9b31m",  # an 8-bit CSI
]


def console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(
        file=out, force_terminal=False, color_system=None, width=200, highlight=False
    ), out


def test_safe_escapes_every_control_and_format_character() -> None:
    assert safe("\x1b[31mred") == "\\x1b[31mred"
    assert safe("a\rb") == "a\\rb"
    assert safe("tab\tand\nnewline") == "tab\tand\nnewline"
    assert safe("\u202e") == "\\u202e"
    assert safe("\x9b") == "\\x9b"
    assert safe("plain ünïcode ✓") == "plain ünïcode ✓"


def test_text_args_and_results_are_shown_literally() -> None:
    con, out = console()
    ui = TerminalUI(con, live=False)
    for i, evil in enumerate(HOSTILE):
        ui.on_update(TextDelta("m1", "assistant", evil + " "))
        buf = ArgumentBuffer(f'{{"note": {__import__("json").dumps(evil)}')
        ui.on_update(CallUpdate(f"c{i}", evil, CallStatus.STREAMING, buf.preview()))
        ui.on_update(
            CallUpdate(f"c{i}", evil, CallStatus.DONE, None, Answer.executed(f"c{i}", evil))
        )
    ui.finish_run()
    text = out.getvalue()
    for raw in ("\x1b", "\r", "\x07", "\u202e", "\x9b"):
        assert raw not in text, f"{raw!r} reached the terminal"
    assert "[bold red]PWNED[/bold red]" in text  # markup shown, not applied
    assert "[link=https://evil.example]click[/link]" in text
    assert "\\x1b[31mred\\x1b[0m" in text
    assert "\\x1b]0;new window title\\a" in text
    assert "fake\\rOVERWRITTEN" in text
    assert "abc\\u202eevil\\u202c" in text


def test_consent_prompt_shows_hostile_arguments_literally() -> None:
    con, out = console()
    answers = iter(["e", "not json", "e", '{"qty": 1}'])
    ui = TerminalUI(con, prompt=lambda q: next(answers), live=False)
    call = PendingCall(
        "t",
        "r",
        "c1",
        "[red]rm -rf[/red]\x1b[2J",
        '{"path":"\\u001b[2J"}',
        parse_arguments('{"path":"\\u001b[2J"}'),
        None,
    )
    approval = ui.ask(call)
    assert approval.approved and approval.arguments == {"qty": 1}
    text = out.getvalue()
    assert "\x1b" not in text and "[red]rm -rf[/red]\\x1b[2J" in text and "\\x1b[2J" in text
    assert "not JSON" in text


def test_decline_with_reason() -> None:
    con, _ = console()
    answers = iter(["x", "d", "too risky"])
    ui = TerminalUI(con, prompt=lambda q: next(answers), live=False)
    call = PendingCall("t", "r", "c1", "delete", "{}", parse_arguments("{}"), None)
    approval = ui.ask(call)
    assert not approval.approved and approval.reason == "too risky"


def test_summary_of_a_thread() -> None:
    con, out = console()
    TerminalUI(con, live=False).summary(
        [
            {"id": "u", "role": "user", "content": "hi \x1b[5m"},
            {
                "id": "a",
                "role": "assistant",
                "content": "ok",
                "toolCalls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"id": "t", "role": "tool", "toolCallId": "c", "content": "", "error": "boom"},
        ]
    )
    text = out.getvalue()
    assert "\x1b" not in text and "hi \\x1b[5m" in text and "f({})" in text and "boom" in text


def test_summary_states_a_failed_answers_error_once() -> None:
    """A failed answer whose content already restates the error shows it once;
    an error the content does not mention is still shown."""
    con, out = console()
    TerminalUI(con, live=False).summary(
        [
            {
                "id": "t1",
                "role": "tool",
                "toolCallId": "c1",
                "content": "Error: boom",
                "error": "boom",
            },
            {
                "id": "t2",
                "role": "tool",
                "toolCallId": "c2",
                "content": "partial",
                "error": "timeout",
            },
        ]
    )
    text = out.getvalue()
    assert text.count("boom") == 1
    assert "partial" in text and "(error: timeout)" in text


def test_thread_table_numbers_calls_and_orders_answers_by_call() -> None:
    """Tool rows say which call they answer (#n) and follow the calls' order, even
    when the answers were given in another order (a decline before a slow run)."""
    con, out = console()
    call = lambda cid, name: {"id": cid, "type": "function",  # noqa: E731
                              "function": {"name": name, "arguments": "{}"}}  # fmt: skip
    TerminalUI(con, live=False).summary(
        [
            {"id": "u", "role": "user", "content": "go"},
            {
                "id": "a",
                "role": "assistant",
                "toolCalls": [call("c1", "first"), call("c2", "second")],
            },
            {"id": "t2", "role": "tool", "toolCallId": "c2", "content": "answer two"},
            {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "answer one"},
            {"id": "a2", "role": "assistant", "toolCalls": [call("c3", "third")]},
            {"id": "t3", "role": "tool", "toolCallId": "c3", "content": "answer three"},
        ]
    )
    text = out.getvalue()
    assert "#1 first({}), #2 second({})" in text and "#3 third({})" in text
    rows = [line for line in text.splitlines() if "tool #" in line]
    assert [r.split("│")[1].strip() for r in rows] == ["tool #1", "tool #2", "tool #3"]
    assert text.index("answer one") < text.index("answer two") < text.index("answer three")


def test_a_failed_card_states_its_error_once_and_the_decision_is_said() -> None:
    con, out = console()
    ui = TerminalUI(con, live=False)
    ui.on_update(CallUpdate("c1", "f", CallStatus.STREAMING))
    ui.on_update(CallUpdate("c1", "f", CallStatus.FAILED, None, Answer.failed("c1", "boom")))
    assert out.getvalue().count("boom") == 1
    answers = iter(["a"])
    ask = TerminalUI(con, prompt=lambda q: next(answers), live=False).consent()
    call = PendingCall("t", "r", "c2", "g", "{}", parse_arguments("{}"), None)
    assert ask(call).approved and "→ approved" in out.getvalue()


def test_end_of_input_at_the_prompt_is_a_decline_nobody_gave() -> None:
    def eof(question: str) -> str:
        raise EOFError

    con, out = console()
    call = PendingCall("t", "r", "c1", "g", "{}", parse_arguments("{}"), None)
    answer = TerminalUI(con, prompt=eof, live=False).consent()(call)
    assert not answer.approved and answer.decided_by == "system"
    assert "→ declined — nobody answered" in out.getvalue()
