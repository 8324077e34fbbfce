"""``transport.protobuf`` judges the binary binding when the agent offers it (TRANS-7).

Broken binary agents (``tests/check/agents.py``'s :func:`binary_agent`: a plain
Starlette app framing protobuf by hand) each fail with the right rule — and only
there: their SSE answers are correct, so the SSE cases pass. A correct binary
agent and an SSE-only one are judged too, and every report format carries the
verdict.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import xmlschema

from agui_tools.check import CheckReport, Exchange, Verdict
from agui_tools.check.reports import html_report, junit_xml
from agui_tools.wire._framing import PROTO_MEDIA_TYPE
from agui_tools.wire._proto_codec import encode_proto_event

from .agents import BINARY_FAULTS, binary_agent, check_app, raw_agent

CASE = "transport.protobuf"
# SSE-side cases beside it: a fault of the binary answer must not fail them
NEIGHBOURS = [CASE, "lifecycle.stream", "transport.framing", "transport.disconnect"]
XSD = xmlschema.XMLSchema(Path(__file__).parent / "data" / "junit.xsd")

# fault → (the rule that fails, what the finding must say: frame, offset, what was expected);
# {at:N} is the byte offset where frame #N starts, summed from the frames before it
EXPECTED: dict[str, tuple[str, list[str]]] = {
    "truncated-frame": (
        "TRANS-7",
        [
            r"frame #4 at byte {at:4} announces (\d+) bytes, but the body ends (\d+) byte",
            "truncated",
        ],
    ),
    "trailing-bytes": ("TRANS-7", [r"2 byte\(s\) at byte {at:5}, after frame #4", "length header"]),
    "huge-length": (
        "TRANS-7",
        [r"frame #1 at byte {at:1} announces 4294967280 bytes", "ends 2 byte"],
    ),
    "undecodable-frame": (
        "TRANS-7",
        [r"binary frame #1, 2 bytes at byte {at:1}", "does not decode"],
    ),
    "empty-frame": ("TRANS-7", [r"binary frame #1, 0 bytes at byte {at:1}", "names no event"]),
    "args-before-start": ("TOOL-20", ["TOOL_CALL_ARGS", "'c-early'", "no active tool call"]),
    "other-events": (
        "TRANS-7",
        ["delta is 'Hello.' over SSE but 'Hello from the binary side.' over protobuf"],
    ),
}
AT = re.compile(r"\{at:(\d+)\}")


def offset_of(exchange: Exchange, frame: int) -> int:
    """Where frame ``frame`` starts: the decoded events before it, encoded again (byte-exact)."""
    before = exchange.frames[:frame]
    return sum(4 + len(encode_proto_event(json.loads(f))) for f in before)


def test_every_binary_fault_is_expected() -> None:
    assert set(EXPECTED) | {"nondeterministic", "future-event", "flaky-binding"} == set(
        BINARY_FAULTS
    )


def test_a_correct_binary_agent_passes_with_the_same_events_as_over_sse() -> None:
    report = check_app(binary_agent(), sections=["lifecycle", "transport"])
    bad = [(c.id, c.findings) for c in report.cases if c.verdict in (Verdict.FAIL, Verdict.WARN)]
    assert bad == [] and report.exit_code == 0
    case = report.case(CASE)
    assert case.verdict is Verdict.PASS, case.findings
    assert case.observed.count("well-formed frame(s), the same 5 events as over SSE") == 2
    kinds = [e.content_type.split(";")[0] for e in case.exchanges]
    assert kinds.count("application/vnd.ag-ui.event+proto") == 2, kinds
    assert kinds.count("text/event-stream") == 2, kinds  # the SSE twins, shown beside them
    # SSE-only cases count SSE streams: a binary body has no comment lines to count
    sse = {
        id(e)
        for c in report.cases
        if c.id != "transport.resumable"  # its requests are its own, not judged streams
        for e in c.exchanges
        if e.status == 200 and e.content_type.startswith("text/event-stream")
    }
    (keep_alive,) = report.case("transport.keep-alive").findings
    assert f"across {len(sse)} stream(s)" in keep_alive.message, (len(sse), keep_alive.message)


@pytest.mark.parametrize("fault", sorted(EXPECTED))
def test_each_broken_binary_agent_fails_with_its_rule(fault: str) -> None:
    rule, says = EXPECTED[fault]
    report = check_app(binary_agent(fault), cases=NEIGHBOURS)
    case = report.case(CASE)
    assert case.verdict is Verdict.FAIL, case.findings
    failing = [f for f in case.findings if f.verdict is Verdict.FAIL and f.rule == rule]
    assert failing, case.findings
    message = failing[0].message
    binary = next(e for e in case.exchanges if e.content_type == PROTO_MEDIA_TYPE)
    for pattern in says:
        pattern = AT.sub(lambda m: str(offset_of(binary, int(m.group(1)))), pattern)
        match = re.search(pattern, message)
        assert match, (pattern, message)
        if fault == "truncated-frame" and match.re.groups:  # 3 bytes cut off the last frame
            assert int(match.group(1)) == int(match.group(2)) + 3, message
    assert report.exit_code == 1
    # precise: the agent's SSE answers are correct, so nothing else fails
    others = {c.id: c.verdict for c in report.cases if c.id != CASE}
    assert Verdict.FAIL not in others.values(), others
    finding = failing[0]
    if finding.event is not None:  # the offending frame is highlighted in the HTML report
        assert finding.exchange is not None
        frame = case.exchanges[finding.exchange].frames[finding.event]
        assert f'class="offending">{html.escape(frame)}</li>' in html_report(report)


def test_an_agent_whose_runs_differ_is_not_blamed_for_the_binding() -> None:
    """Two SSE runs of one input differ too: an info, never a failure."""
    report = check_app(binary_agent("nondeterministic"), cases=[CASE])
    case = report.case(CASE)
    assert case.verdict is Verdict.INFO, case.findings
    assert "so do two SSE runs of the same input" in case.findings[0].message
    assert report.exit_code == 0
    # once the agent is known to vary, the second prompt costs no further SSE run
    repeats = [e.label for e in case.exchanges if e.label.endswith("again, over SSE")]
    assert repeats == ["the plain prompt again, over SSE"], repeats
    assert [f.verdict for f in case.findings] == [Verdict.INFO, Verdict.INFO]


def test_an_event_from_a_later_protocol_is_dropped_with_a_warning_not_a_failure() -> None:
    """As on SSE, where enforcement drops an unknown event type: a warning, the run goes on,
    and the events delivered are the SSE run's."""
    report = check_app(binary_agent("future-event"), cases=[CASE])
    case = report.case(CASE)
    assert case.verdict is Verdict.WARN, case.findings
    (warning,) = {(f.rule, f.message) for f in case.findings}
    assert warning[0] == "TRANS-7" and "envelope field 40" in warning[1]
    assert not any("other events" in f.message for f in case.findings)
    assert report.exit_code == 0
    # the transcript shows the events, not the dropped frame: its indexes are the judge's
    binary = case.exchanges[case.findings[0].exchange or 0]
    assert [json.loads(f)["type"] for f in binary.frames][:2] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
    ]
    assert case.findings[0].event == 1


def test_protobuf_once_then_sse_for_the_same_accept_is_a_warning() -> None:
    """A producer supporting the binding SHOULD answer it whenever admitted (a warning);
    its SSE answer is still judged."""
    report = check_app(binary_agent("flaky-binding"), cases=[CASE])
    case = report.case(CASE)
    assert case.verdict is Verdict.WARN, case.findings
    (finding,) = case.findings
    assert finding.rule == "TRANS-7" and "after answering protobuf before" in finding.message
    assert (
        report.exit_code == 0
        and check_app(binary_agent("flaky-binding"), cases=[CASE], strict=True).exit_code == 1
    )


def test_an_sse_only_agent_leaves_the_case_not_exercised() -> None:
    report = check_app(raw_agent(), cases=[CASE])
    case = report.case(CASE)
    assert case.verdict is Verdict.NOT_EXERCISED, case.findings
    assert case.findings[-1].rule == "TRANS-3"
    assert "does not offer the binary binding" in case.findings[-1].message
    assert report.exit_code == 0


@pytest.fixture(scope="module")
def broken() -> CheckReport:
    return check_app(binary_agent("truncated-frame"), cases=[CASE])


def test_the_reports_carry_the_binary_verdict(broken: CheckReport) -> None:
    document = json.loads(broken.dumps())
    (case,) = document["cases"]
    assert case["verdict"] == "fail"
    assert any(f["rule"] == "TRANS-7" and "frame #4" in f["message"] for f in case["findings"])
    events = case["exchanges"][0]["events"]
    assert json.loads(events[0])["type"] == "RUN_STARTED"  # decoded frames, shown as JSON
    xml = junit_xml(broken)
    XSD.validate(xml)
    failure = next(ET.fromstring(xml).iter("failure"))
    assert failure.get("type") in ("TRANS-7", "TRANS-1")
    assert "frame #4" in xml
    page = html_report(broken)
    assert "frame #4 at byte" in page and "application/vnd.ag-ui.event+proto" in page


def test_the_judged_events_are_the_transcripts_even_past_a_dropped_frame() -> None:
    """Event #i of a finding is transcript line #i and ``judged.events[i]``: a dropped
    frame's note takes no index in either (as in the pipeline)."""
    from agui_tools.check._judge import judge_stream
    from agui_tools.check._probe import Sent
    from agui_tools.wire._proto_framing import ProtoReader, proto_frame

    run = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    future = proto_frame(b"\xc2\x02\x03\x0a\x01\x00")  # envelope field 40
    body = future + b"".join(proto_frame(encode_proto_event(e)) for e in run)
    sent = Sent()
    sent.binary, sent.items, sent.received = True, ProtoReader().feed_frames(body), len(body)
    exchange = Exchange("x", {}, frames=[json.dumps(e) for e in run])
    judged = judge_stream(exchange, 0, {"threadId": "t", "runId": "r"}, binary=sent)
    assert [e["type"] for e in judged.events] == ["RUN_STARTED", "RUN_FINISHED"]
    assert [(f.rule, f.event) for f in judged.findings] == [("TRANS-7", 0)]


def test_parity_ignores_ids_timestamps_and_patch_extensions_and_nothing_else() -> None:
    from agui_tools.check._parity import first_difference

    def run(mid: str, other: str, ts: int, value: int, **ext: object) -> list[dict[str, object]]:
        return [
            {"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant", "timestamp": ts},
            {"type": "TEXT_MESSAGE_END", "messageId": other},
            {"type": "STATE_DELTA", "patch": [{"op": "add", "path": "/a", "value": value, **ext}]},
        ]

    names = ("SSE", "protobuf")
    assert first_difference(run("a", "a", 1, 1, x=1), run("b", "b", 2, 1), names=names) is None
    # the ids must correspond one to one: "a, a" is not "b, c"
    index, why = first_difference(run("a", "a", 1, 1), run("b", "c", 1, 1), names=names) or (-1, "")
    assert index == 1 and "messageId" in why
    index, why = first_difference(run("a", "a", 1, 1), run("a", "a", 1, 2), names=names) or (-1, "")
    assert index == 2 and "patch" in why
    index, why = first_difference(run("a", "a", 1, 1), run("a", "a", 1, 1)[:2], names=names) or (
        -1,
        "",
    )
    assert index == 2 and "SSE delivered 3 event(s), protobuf 2" in why
