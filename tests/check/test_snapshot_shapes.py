"""Issue 23: what MESSAGES_SNAPSHOT said about tool results, re-enacted by hand.

LlamaIndex and CrewAI answer their own tools only in a snapshot (no
``TOOL_CALL_RESULT``), and LlamaIndex's closing snapshot re-mints every message
id in order. Hand-written streams of those shapes (``scripted_agent``): the
checker reports the first (FE-12) and describes the second as it is (AGT-SNAP-2).
"""

from __future__ import annotations

from typing import Any

from agui_tools.check import Verdict

from .agents import call, check_app, run_of, say, scripted_agent


def _hello(data: dict[str, Any]) -> list[dict[str, Any]]:
    return run_of(data, *say(f"m-{data['runId']}", "Hello."))


# -- 5, 8. a call answered only by a snapshot; every id re-minted ----------------------------


def _llamaindex(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Runs its own ``search_docs``; the result arrives only in MESSAGES_SNAPSHOT, and the
    closing snapshot re-mints every message id, in order."""
    if not data.get("tools"):
        return _hello(data)
    run, history = data["runId"], data["messages"]
    cid = f"c-{run}"
    tool_call = {
        "id": cid,
        "type": "function",
        "function": {"name": "search_docs", "arguments": '{"q": "weather"}'},
    }

    def restated(tag: str, *more: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                *({**m, "id": f"{tag}-{m['id']}"} for m in history),
                {"id": f"{tag}-a-{run}", "role": "assistant", "toolCalls": [tool_call]},
                {"id": f"{tag}-t-{run}", "role": "tool", "toolCallId": cid, "content": "sunny"},
                *more,
            ],
        }

    return run_of(
        data,
        *call(cid, "search_docs", '{"q": "weather"}', parent=f"a-{run}"),
        restated("x"),
        *say(f"m-{run}", "It is sunny."),
        restated("y", {"id": f"y-m-{run}", "role": "assistant", "content": "It is sunny."}),
    )


def test_an_agent_side_call_answered_only_by_a_snapshot_is_a_warning() -> None:
    report = check_app(scripted_agent(_llamaindex), cases=["frontend.invite"])
    case = report.case("frontend.invite")
    fe12 = [f for f in case.findings if f.rule == "FE-12"]
    assert [f.verdict for f in fe12] == [Verdict.WARN], case.findings
    assert "search_docs" in fe12[0].message and "TOOL_CALL_RESULT" in fe12[0].message
    assert fe12[0].event == 4  # the snapshot that answered it
    assert "search_docs (answered only in a snapshot)" in case.findings[-1].message
    assert report.exit_code == 0


def test_a_snapshot_re_minting_every_id_in_order_is_described_as_it_is() -> None:
    report = check_app(scripted_agent(_llamaindex), cases=["frontend.invite"])
    case = report.case("frontend.invite")
    snap = [f for f in case.findings if f.rule == "AGT-SNAP-2"]
    assert len(snap) == 1, case.findings
    text = snap[0].message
    assert "TOOL_CALL_RESULT minted" not in text and "away from its call" not in text, text
    assert "MESSAGES_SNAPSHOT at event #4" in text, text
    assert snap[0].verdict is Verdict.INFO  # the thread keeps its shape: nothing moved


def _result_moves(data: dict[str, Any]) -> list[dict[str, Any]]:
    """ag-ui #1745: a result streamed as one message, restated as another, at the end."""
    if not data.get("tools"):
        return _hello(data)
    run, history = data["runId"], data["messages"]
    cid, parent = f"c-{run}", f"a-{run}"
    tool_call = {
        "id": cid,
        "type": "function",
        "function": {"name": "search_docs", "arguments": "{}"},
    }
    snapshot = {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            *history,
            {"id": parent, "role": "assistant", "toolCalls": [tool_call]},
            {"id": f"m-{run}", "role": "assistant", "content": "Found it."},
            {"id": f"uuid-{run}", "role": "tool", "toolCallId": cid, "content": "found"},
        ],
    }
    result = {"type": "TOOL_CALL_RESULT", "messageId": cid, "toolCallId": cid, "content": "found"}
    return run_of(
        data,
        *say(parent, "Searching."),
        *call(cid, "search_docs", "{}", parent=parent),
        result,
        *say(f"m-{run}", "Found it."),
        snapshot,
    )


def test_a_result_restated_away_from_its_call_is_still_a_warning() -> None:
    report = check_app(scripted_agent(_result_moves), cases=["frontend.invite"])
    case = report.case("frontend.invite")
    snap = [f for f in case.findings if f.rule == "AGT-SNAP-2"]
    assert [f.verdict for f in snap] == [Verdict.WARN], case.findings
    assert "TOOL_CALL_RESULT at event #7" in snap[0].message, snap[0].message
    assert "away from its call" in snap[0].message
