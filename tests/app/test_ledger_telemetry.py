"""Each decision is an ``agui.decision`` span event: ids and hashes, never values.

The arguments, the edited arguments, the approver's reason and display name all
carry a planted string; the exported spans (every attribute, event and status)
never hold it, and the event names the call, who decided and the hashes."""

from __future__ import annotations

from typing import Any

from agui_tools.app import Driver
from agui_tools.app._consent import Principal
from agui_tools.app._conversation import Conversation
from agui_tools.app._store import MemoryStore
from agui_tools.wire._canonical import canonical_hash

from ..helpers.conversation import CONFIRM, call, run
from ..helpers.otel import exported_spans

PLANTED = "PLANTED-4c2e"


def _events(exporter: Any) -> list[dict[str, Any]]:
    return [
        dict(e.attributes or {})
        for s in exporter.get_finished_spans()
        for e in s.events
        if e.name == "agui.decision"
    ]


def test_a_decision_is_a_span_event_of_ids_and_hashes_only() -> None:
    store = MemoryStore()
    with exported_spans() as exporter:
        for cid in ("c1", "c2"):
            conv = Conversation(thread_id=f"t-{cid}", tools=[CONFIRM], store=store)
            conv.next_input()
            run(conv, *call(cid, "confirm_order", f'{{"orderId":"{PLANTED}","qty":2}}'))
            Driver(conv).end_run()
        approver = Principal("alice@example.com", f"Alice {PLANTED}", authenticated_by="oidc")
        edited = {"orderId": f"{PLANTED}-edited", "qty": 1}
        first = Conversation(thread_id="t-c1", tools=[CONFIRM], store=store)
        Driver(first).restore()
        Driver(first).approve("c1", principal=approver, arguments=edited, reason=PLANTED)
        second = Conversation(thread_id="t-c2", tools=[CONFIRM], store=store)
        Driver(second).restore()
        Driver(second).decline("c2", reason=PLANTED)
    text = "\n".join(s.to_json() for s in exporter.get_finished_spans())
    assert PLANTED not in text
    approved, declined = _events(exporter)
    assert approved["gen_ai.tool.call.id"] == "c1" and approved["agui.thread.id"] == "t-c1"
    assert approved["agui.consent.decision"] == "approved"
    assert approved["agui.consent.principal"] == "alice@example.com"
    assert approved["agui.consent.authenticated"] is True
    assert approved["agui.consent.arguments_approved"] == canonical_hash(edited)
    assert declined["agui.consent.decision"] == "declined"
    assert declined["agui.consent.principal"] == "user"
    assert declined["agui.consent.authenticated"] is False
    assert "agui.consent.arguments_approved" not in declined
