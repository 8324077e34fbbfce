"""The resumable client's decisions, sans-I/O (transport/_rejoin.py): ids, the
rejoin URL and header, the backoff and when it gives up."""

from __future__ import annotations

import pytest

from agui_tools.transport._rejoin import RejoinPolicy, RejoinState, parse_event_id, run_url
from agui_tools.wire._framing import BrokenFrame


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("r:1", ("r", 1)),
        ("a:b:c:12", ("a:b:c", 12)),  # a run id may hold ':' — the last one splits
        (":3", ("", 3)),
        ("r", None),
        ("r:", None),
        ("r:0", None),
        ("r:01", None),
        ("r:-1", None),
        ("r:1.5", None),
        ("r:١", None),  # a decimal digit, but not ASCII
    ],
)
def test_event_ids_split_on_the_last_colon(text: str, parsed: tuple[str, int] | None) -> None:
    assert parse_event_id(text) == parsed


def test_the_rejoin_and_stop_urls_sit_beside_the_run_endpoint() -> None:
    assert (
        run_url("http://h/agent/?x=1", "t 1/", "r:1", "events")
        == "http://h/agent/threads/t%201%2F/runs/r%3A1/events"
    )
    state = RejoinState("http://h/a", {"threadId": "t", "runId": "r"})
    assert state.stop_url == "http://h/a/threads/t/runs/r/stop"
    assert state.rejoin_headers() == {"Agui-Resumable": "1"}  # from seq 1
    state.admit(['{"type":"RUN_STARTED"}'], ["r:1"])
    assert state.rejoin_headers() == {"Agui-Resumable": "1", "Last-Event-ID": b"r:1"}


def test_replayed_events_are_dropped_and_the_terminal_one_ends_the_run() -> None:
    state = RejoinState("u", {"threadId": "t", "runId": "r"})
    assert state.admit(["a", "b"], ["r:1", "r:2"]) == ["a", "b"]
    assert state.admit(["a", "b", "c"], ["r:1", "r:2", "r:3"]) == ["c"]
    assert state.dropped == 2 and state.last == 3 and not state.ended
    end = '{"type":"RUN_ERROR","message":"x"}'
    assert state.admit([end], ["r:4"]) == [end] and state.ended


@pytest.mark.parametrize(
    ("ids", "said"),
    [
        ([None], "came with no id"),
        (["r"], "came with id 'r'"),
        (["s:1"], "names run 's'"),
        (["r:2"], "jumped from seq 0 to seq 2"),
    ],
)
def test_a_broken_id_is_a_violation_in_place_of_the_event(ids: list[str | None], said: str) -> None:
    state = RejoinState("u", {"threadId": "t", "runId": "r"})
    [broken] = state.admit(["x", "y"], [*ids, "r:9"])  # nothing after it is handed on
    assert isinstance(broken, BrokenFrame) and state.broken
    assert broken.violation.rule == "RESUME-2" and said in str(broken.violation)


def test_the_backoff_doubles_to_its_cap_and_gives_up_after_the_attempts() -> None:
    state = RejoinState("u", {"runId": "r"}, RejoinPolicy(0.1, 0.5, attempts=5, deadline=100))
    delays = [state.next_delay() for _ in range(6)]
    assert delays == [0.1, 0.2, 0.4, 0.5, 0.5, None]
    state.admit(["x"], ["r:1"])  # an event delivered: the count starts again
    assert state.next_delay() == 0.1


def test_the_backoff_gives_up_at_the_deadline() -> None:
    state = RejoinState("u", {"runId": "r"}, RejoinPolicy(1.0, 5.0, attempts=100, deadline=1.5))
    assert state.next_delay() == 1.0
    assert state.next_delay() is None  # waiting 2 s more would pass the 1.5 s deadline
