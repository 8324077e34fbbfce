"""Item 12 (issue 11): the client's idle-event and run deadlines.

httpx's read timeout restarts with every byte: a peer dripping one byte a second,
or flooding comments, held the client forever. Each test here waits for the
deadline it sets (half a second); nothing asserts how long anything took.
"""

from __future__ import annotations

import pytest

from agui_tools._errors import TransportError
from agui_tools.app import Conversation
from agui_tools.transport._client import SyncAgentClient
from tests.helpers.scripted_server import Script, app_for, serve


def _conversation() -> Conversation:
    conv = Conversation(thread_id="t")
    conv.next_input(user="hi", run_id="r")
    return conv


def _started() -> bytes:
    return b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'


@pytest.mark.parametrize(
    "drip",
    [
        [b"d", b"a", b"t", b"a", b":", b" ", b"{"] * 200,  # one event that never completes
        [b": keep-alive\n\n"] * 2000,  # comments only: nothing is ever delivered
    ],
    ids=["byte-drip", "comment-flood"],
)
def test_a_stream_without_complete_events_hits_the_idle_deadline(drip: list[bytes]) -> None:
    script = Script(chunks=[_started(), *drip], delay=0.01, hang_after=True)
    conv = _conversation()
    with (
        serve(app_for(script)) as base,
        SyncAgentClient(f"{base}/agent", idle_timeout=0.5) as client,
        pytest.raises(TransportError, match=r"no complete event for idle_timeout=0\.5 s") as caught,
    ):
        client.run(conv)
    assert caught.value.truncated
    [run] = conv.runs
    assert run.status == "truncated"


def test_silence_hits_the_idle_deadline_too() -> None:
    script = Script(chunks=[_started()], hang_after=True)
    conv = _conversation()
    with (
        serve(app_for(script)) as base,
        SyncAgentClient(f"{base}/agent", idle_timeout=0.5) as client,
        pytest.raises(TransportError, match=r"idle_timeout=0\.5"),
    ):
        client.run(conv)
    assert conv.runs[0].status == "truncated"


def test_a_run_that_keeps_talking_hits_the_run_deadline() -> None:
    delta = b'data: {"type":"TEXT_MESSAGE_CHUNK","messageId":"m","delta":"."}\n\n'
    script = Script(chunks=[_started(), *[delta] * 2000], delay=0.01, hang_after=True)
    conv = _conversation()
    with (
        serve(app_for(script)) as base,
        SyncAgentClient(f"{base}/agent", run_timeout=0.5) as client,
        pytest.raises(TransportError, match=r"within run_timeout=0\.5 s"),
    ):
        client.run(conv)
    [run] = conv.runs
    assert run.status == "truncated"
    assert conv.messages[-1]["content"].startswith("."), "what arrived stays"
