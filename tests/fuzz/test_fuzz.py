"""Fuzz targets, each run for its share of ``FUZZ_SECONDS``.

``make test`` runs them briefly (``FUZZ_SECONDS`` unset: 10 s in all) so the
campaign itself stays tested; ``make fuzz`` gives them 240 s. A failure shrinks
and prints its input: add it to ``test_regressions.py``. See ``campaign.py`` for
the strategies and the amplification oracle's bound.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_tools import ProtocolViolation
from agui_tools.app import Conversation, Driver
from agui_tools.transport._front import Refusal
from agui_tools.transport._server import AgentEndpoint
from agui_tools.wire import ConsumerPipeline, NDJSONReader, SSEReader
from agui_tools.wire._framing import BrokenFrame
from tests.fuzz.campaign import (
    SEEDS,
    SMALL,
    bounded,
    measured,
    mutated_event,
    sse_bytes,
    stream,
)
from tests.helpers.attacks import patch_bomb

TARGETS = 5
BUDGET = float(os.environ.get("FUZZ_SECONDS", "10")) / TARGETS
ROUND = settings(
    max_examples=10, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)


def run_for(target: Callable[[], None]) -> None:
    """Rounds of fresh random examples until the budget is spent (at least one)."""
    end = time.monotonic() + BUDGET
    target()
    while time.monotonic() < end:
        target()


def frames(reader: Any, data: bytes, cuts: list[int]) -> tuple[list[Any], str | None]:
    """What a reader makes of ``data`` cut at ``cuts``: the SSE reader through
    ``feed_frames`` (the client's path: a violation takes its place in the frames),
    the NDJSON reader through ``feed`` and ``close``."""
    out: list[Any] = []
    try:
        start = 0
        for cut in [*sorted(set(cuts)), len(data)]:
            chunk = data[start:cut]
            if isinstance(reader, SSEReader):
                out += [
                    ("broken", f.violation.rule) if isinstance(f, BrokenFrame) else f
                    for f in reader.feed_frames(chunk)
                ]
            else:
                out += reader.feed(chunk)
            start = cut
        if isinstance(reader, NDJSONReader):
            out += reader.close()
    except ProtocolViolation as exc:
        return out, exc.rule
    return out, None


_PAYLOADS = st.lists(
    st.one_of(
        st.sampled_from([orjson.dumps(e) for e in SEEDS]),
        st.binary(max_size=40),
        st.just(b"x\r\ny"),
    ),
    max_size=30,
)


def test_fuzz_sse_reader_whole_and_split_agree() -> None:
    @ROUND
    @given(_PAYLOADS, st.sampled_from([b"\n", b"\r\n", b"\r"]), st.booleans(), st.data())
    def target(payloads: list[bytes], eol: bytes, comments: bool, data: st.DataObject) -> None:
        raw = sse_bytes(payloads, eol, comments)
        if data.draw(st.booleans()):
            raw = b"\xef\xbb\xbf" + raw
        cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=12))
        whole = bounded(
            len(raw), "SSEReader", lambda: lambda: frames(SSEReader(max_event_bytes=4096), raw, [])
        )
        split = frames(SSEReader(max_event_bytes=4096), raw, cuts)
        assert whole == split, (raw, cuts)

    run_for(target)


def test_fuzz_ndjson_reader_whole_and_split_agree() -> None:
    @ROUND
    @given(_PAYLOADS, st.data())
    def target(payloads: list[bytes], data: st.DataObject) -> None:
        raw = b"\n".join(p.replace(b"\n", b" ") for p in payloads)
        cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=12))
        whole, cost = measured(
            len(raw), lambda: frames(NDJSONReader(max_event_bytes=4096), raw, [])
        )
        cost.check("NDJSONReader")
        assert whole == frames(NDJSONReader(max_event_bytes=4096), raw, cuts)

    run_for(target)


def test_fuzz_decoder_and_enforcer() -> None:
    @ROUND
    @given(st.lists(mutated_event(), min_size=1, max_size=20))
    def target(events: list[dict[str, Any]]) -> None:
        texts = [orjson.dumps(e) for e in events]

        def attempt() -> Callable[[], None]:
            pipe = ConsumerPipeline(limits=SMALL)

            def feed() -> None:
                for text in texts:
                    try:
                        pipe.feed(text)
                    except ProtocolViolation:
                        break
                pipe.close()

            return feed

        result = bounded(sum(map(len, texts)), "pipeline", attempt)
        assert result is None, result  # nothing but a violation escapes

    run_for(target)


def test_fuzz_conversation_pipeline_and_reducer() -> None:
    @ROUND
    @given(stream())
    def target(events: list[dict[str, Any]]) -> None:
        texts = [orjson.dumps(e) for e in events]
        conversations: list[Conversation] = []

        def attempt() -> Callable[[], str]:
            conv = Conversation(thread_id="t", limits=SMALL)
            conv.next_input(run_id="r")
            conversations.append(conv)

            def run() -> str:
                with contextlib.suppress(ProtocolViolation):
                    conv.receive_many(texts)
                return Driver(conv).end_run().status

            return run

        status = bounded(sum(map(len, texts)), "Conversation", attempt)
        assert isinstance(status, str), status  # end_run always judges the run
        conv = conversations[-1]
        assert conv.thread.state_bytes == len(orjson.dumps(conv.state))

    run_for(target)


async def _agent(run: Any) -> None:  # never started: only judging is fuzzed
    raise AssertionError("judging does not run the agent")


ENDPOINT = AgentEndpoint(_agent, max_messages=50)


def test_fuzz_server_input_judging() -> None:
    messages = st.lists(
        st.fixed_dictionaries(
            {
                "id": st.text(max_size=4),
                "role": st.sampled_from(["user", "assistant", "tool", "x"]),
            },
            optional={
                "content": st.one_of(st.text(max_size=20), st.integers(0, 9)),
                "x": st.text(),
            },
        ),
        max_size=60,
    )
    body = st.fixed_dictionaries(
        {"threadId": st.text(max_size=4), "runId": st.text(max_size=4)},
        optional={
            "messages": messages,
            "state": st.dictionaries(
                st.text(max_size=3), st.integers(-(2**63), 2**63 - 1), max_size=5
            ),
            "tools": st.lists(st.fixed_dictionaries({"name": st.text(max_size=5)}), max_size=3),
            "unknown": st.dictionaries(st.text(max_size=5), st.integers(0, 9), max_size=50),
        },
    )

    @ROUND
    @given(body, st.booleans(), st.binary(max_size=20))
    def target(obj: dict[str, Any], mangle: bool, junk: bytes) -> None:
        raw = orjson.dumps(obj)
        if mangle:
            raw = raw[: len(raw) // 2] + junk + raw[len(raw) // 2 :]
        result = bounded(len(raw), "server judging", lambda: lambda: ENDPOINT._judge(raw))
        assert isinstance(result, (dict, Refusal)), result  # never a 500
        if isinstance(result, Refusal):
            assert 400 <= result.status < 500 and result.error.get("message")

    run_for(target)


@pytest.mark.parametrize("groups", [19])
def test_the_oracle_catches_item_1(groups: int) -> None:
    """The oracle's teeth: item 1's bomb, against limits large enough to let it grow
    past the bound, is flagged — the class of bug is the fuzzer's to catch."""
    from agui_tools.wire import Limits

    ops = patch_bomb(groups)
    texts = [
        orjson.dumps({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
        orjson.dumps({"type": "STATE_SNAPSHOT", "snapshot": {"a": [0] * 64}}),
        orjson.dumps({"type": "STATE_DELTA", "delta": ops}),
    ]
    conv = Conversation(thread_id="t", limits=Limits(max_state_bytes=4 * 1024 * 1024))
    conv.next_input(run_id="r")
    _, cost = measured(sum(map(len, texts)), lambda: conv.receive_many(texts))
    with pytest.raises(AssertionError, match="bound"):
        cost.check("the bomb, with a 4 MiB state limit")
    # with the campaign's limits, the same input is within the bound
    small = Conversation(thread_id="t", limits=SMALL)
    small.next_input(run_id="r")
    _, cost = measured(sum(map(len, texts)), lambda: small.receive_many(texts))
    cost.check("the bomb, with the campaign's limits")


def test_the_memory_oracle_counts_what_only_a_collection_would_free() -> None:
    """The retained half of the memory oracle (issue 28): memory an input leaves behind
    in a reference cycle — as a refused body once stayed alive through its traceback's
    frame — counts, because the collector is off while it is measured; the same work
    whose garbage is freed by reference counting leaves nothing."""
    raw = orjson.dumps([{"k": i} for i in range(20_000)])

    def leaky() -> None:
        kept = [orjson.loads(raw) for _ in range(7)]
        try:
            raise ValueError("refused")
        except ValueError as exc:
            exc.again = exc  # type: ignore[attr-defined]  # a cycle holding the frame
        assert kept

    def clean() -> None:
        kept = [orjson.loads(raw) for _ in range(7)]
        del kept

    _, cost = measured(len(raw), leaky)
    assert cost.retained > cost.size * 100
    with pytest.raises(AssertionError, match=r"left .* allocated after it returned"):
        cost.check("a refusal kept by a cycle")
    _, cost = measured(len(raw), clean)
    assert cost.retained < 64 * 1024
    cost.check("the same work, freed")
