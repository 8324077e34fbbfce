"""The inspector's cards (a mixin of :class:`~agui_tools.ui.inspector._backend.Inspector`):
updates and interrupts become coalesced, bounded ``call`` / ``consent`` / ``interrupt``
messages, and the page's answers (:meth:`Cards.decide`, :meth:`Cards.resolve_interrupt`)
go back to the waiting session.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from ..._errors import UsageError
from ...app._calls import CallStatus, PendingCall
from ...app._consent import Principal
from ...app._conversation import CallUpdate, Conversation
from ...app._interrupts import Interrupt, Resolution
from ...app._updates import shown as shown_arguments
from ...transport._session import Approval, Session
from ._hub import PREVIEW_LIMIT, Hub, Refused, bounded, schema_errors

__all__ = ["OPEN", "Cards"]

OPEN: frozenset[str] = frozenset(
    {"streaming", "called", "awaiting_consent", "approved", "executing", "awaiting_approval"}
)
"""Card statuses of a call not yet answered (a stopped turn leaves them "stopped")."""


class Cards:
    """The cards' part of the inspector (see the module)."""

    hub: Hub
    session: Session
    _shown: dict[str, dict[str, Any]]
    _cards: dict[str, dict[str, Any]]
    _previews: dict[str, object]
    _consents: dict[str, tuple[PendingCall, asyncio.Future[Approval]]]
    _interrupts: dict[str, tuple[Interrupt, asyncio.Future[Resolution]]]
    principal: Principal | None

    def _push_card(self, update: CallUpdate) -> None:
        """A card update, coalesced: a preview-only update is sent when the preview
        changed (not once per delta — most deltas of a long argument leave the cached
        preview as it was) and supersedes the previous preview of that call."""
        key = f"preview:{update.call_id}"
        preview = update.preview
        only_preview = (
            preview is not None
            and update.status is CallStatus.STREAMING
            and update.answer is None
            and not update.has_arguments
        )
        if not only_preview:
            self._previews.pop(update.call_id, None)
            card = self._card(update)
            if self._cards.get(update.call_id) == card:
                return  # told already (a handler's start and the session both say "executing")
            self._push_shown(card)
            self._cards[update.call_id] = card
            return
        assert preview is not None
        if self._previews.get(update.call_id) is preview:
            return  # the same cached preview: nothing on the card would change
        self._previews[update.call_id] = preview
        card = self._card(update)
        self._shown[update.call_id] = {"name": card["name"], "status": card["status"]}
        self.hub.push("call", supersedes=key, **card)

    def _push_shown(self, card: dict[str, Any], *, ends_preview: bool = False) -> None:
        """Tell the page a card changed — a status of the inspector's own (called,
        awaiting approval, rejected, stopped) or the session's — and remember it.

        ``ends_preview``: the card shows the whole arguments, so it takes the place of
        the call's last preview in the log (a page catching up needs only this one)."""
        shown_card = self._shown.setdefault(card["callId"], {"name": card.get("name", "")})
        card.setdefault("name", shown_card["name"])
        shown_card["name"] = card["name"]
        shown_card["status"] = card["status"]
        self._cards.pop(card["callId"], None)  # the card changed: a repeat is news again
        key = f"preview:{card['callId']}"
        self.hub.push("call", supersedes=key if ends_preview else None, **card)
        self.hub.settle(key)  # a status change is history: later previews keep it

    def _card(self, update: CallUpdate) -> dict[str, Any]:
        card: dict[str, Any] = {
            "callId": update.call_id,
            "name": update.name,
            "status": "agent" if update.agent_side else update.status.value,
            "agentSide": update.agent_side,
        }
        if update.preview is not None:
            card["previewChars"] = update.preview.chars
            card["previewError"] = update.preview.error
            if update.preview.chars <= PREVIEW_LIMIT:
                card["preview"] = update.preview.value
            else:  # a head of it: the page shows so much, and a long argument stays bounded
                shown = orjson.dumps(update.preview.value, default=repr, option=orjson.OPT_INDENT_2)
                card["previewText"] = shown[:PREVIEW_LIMIT].decode("utf-8", "ignore")
        answer = update.answer
        if answer is not None:
            card["answer"] = answer.to_json()
            if answer.error is not None and answer.error.startswith("outcome unknown"):
                card["status"] = "outcome_unknown"
        conv = self._conversation()
        tool = conv.tools.get(update.name) if conv is not None else None
        call = self._call(update.call_id)
        if call is not None:
            tool = call.tool
            card.update(bounded("arguments", call.effective_arguments))
            if call.effective_arguments is None:  # unparseable: the text is what there is
                card.update(bounded("text", call.text))
            card["edited"] = call.edited is not None
            card["errors"] = schema_errors(call.errors)
            card["advertised"] = call.advertised
        elif update.has_arguments:  # a snapshot restated the call: what runs, not the preview
            card.update(bounded("arguments", update.arguments))
        elif update.status is not CallStatus.STREAMING and conv is not None:
            text = conv.thread.arguments(update.call_id)  # the agent's own call: as it sent it
            if text is not None:
                card.update(bounded("arguments", shown_arguments(text)))
        if tool is not None:
            card["description"] = tool.description
            card["sideEffects"] = tool.side_effects
        return card

    def _conversation(self) -> Conversation | None:
        """The conversation a card update is about (the session's; the proxy's read-only
        inspector has one per exchange it is shown)."""
        return self.session.conversation

    def _call(self, call_id: str) -> PendingCall | None:
        conv = self._conversation()
        if conv is None:
            return None
        try:
            return conv.call(call_id)
        except UsageError:
            return None

    def executing(self, name: str) -> None:
        """A handler is about to run: show its card as running."""
        conv = self.session.conversation
        for call in conv.pending if conv is not None else ():
            if call.status is CallStatus.EXECUTING and call.name == name:
                self._push_card(CallUpdate(call.call_id, name, call.status))

    # -- interrupts --------------------------------------------------------------------------

    async def _interrupt(self, interrupt: Interrupt) -> Resolution:
        """The session's interrupt handler: every open interrupt gets a card at once (the
        page answers them in any order); this one's answer is awaited."""
        if interrupt.id not in self._interrupts:
            loop = asyncio.get_running_loop()
            for shown_one in self.session.interrupts:
                if shown_one.id not in self._interrupts:
                    self._interrupts[shown_one.id] = (shown_one, loop.create_future())
                    self._show_interrupt(shown_one)
        _, future = self._interrupts[interrupt.id]
        try:
            return await future
        finally:
            self._interrupts.pop(interrupt.id, None)

    def _show_interrupt(self, interrupt: Interrupt) -> None:
        call = interrupt.call
        self.hub.push(
            "interrupt",
            id=interrupt.id,
            reason=interrupt.reason,
            message=interrupt.message,
            metadata=interrupt.metadata,
            expiresAt=interrupt.expires_at,
            expired=interrupt.expired,
            responseSchema=interrupt.response_schema,
            toolCallId=interrupt.tool_call_id,
            call=None
            if call is None
            else {
                "callId": call.call_id,
                "name": call.name,
                "arguments": call.arguments if call.arguments is not None else call.text,
                "description": call.description,
            },
        )
        if call is not None:
            self._push_shown(
                {
                    "callId": call.call_id,
                    "name": call.name,
                    "status": "awaiting_approval",
                    "arguments": call.arguments if call.arguments is not None else call.text,
                    "interruptId": interrupt.id,
                }
            )

    def resolve_interrupt(
        self, interrupt_id: str, action: str, *, payload: Any = None, reason: Any = None
    ) -> None:
        """The user's answer to an open interrupt: ``resolve`` with a payload (validated
        against its ``responseSchema``) or ``cancel`` with an optional reason."""
        waiting = self._interrupts.get(interrupt_id)
        if waiting is None:
            raise Refused(409, f"interrupt {interrupt_id!r} is not open (INT-7)")
        interrupt, future = waiting
        if future.done():
            raise Refused(409, f"interrupt {interrupt_id!r} is answered already")
        text = reason.strip() if isinstance(reason, str) and reason.strip() else None
        if action == "resolve":
            if interrupt.expired:
                raise Refused(
                    422,
                    f"interrupt {interrupt_id!r} expired at {interrupt.expires_at}: it can only "
                    "be cancelled (INT-8)",
                )
            errors = interrupt.validate(payload)
            if errors:
                raise Refused(
                    422,
                    "the payload does not satisfy the interrupt's responseSchema",
                    errors=schema_errors(errors),
                )
            resolution = Resolution.resolve(payload, principal=self.principal)
        elif action == "cancel":
            resolution = Resolution.cancel(text, principal=self.principal)
        else:
            raise Refused(422, f"unknown answer {action!r}: resolve or cancel")
        if not future.done():
            future.set_result(resolution)
        self.hub.push(
            "interrupt-done", id=interrupt_id, action=action, payload=payload, reason=text
        )
        if interrupt.call is not None:
            self._push_shown(
                {
                    "callId": interrupt.call.call_id,
                    "status": "approved" if action == "resolve" else "declined",
                    "decision": {"action": action, "payload": payload, "reason": text},
                }
            )

    # -- consent -------------------------------------------------------------------------

    async def _ask(self, call: PendingCall) -> Approval:
        future: asyncio.Future[Approval] = asyncio.get_running_loop().create_future()
        self._consents[call.call_id] = (call, future)
        tool = call.tool
        self._cards.pop(call.call_id, None)  # the page changed the card: a repeat is news again
        self.hub.push(
            "consent",
            callId=call.call_id,
            name=call.name,
            description=tool.description if tool is not None else "",
            sideEffects=tool.side_effects if tool is not None else False,
            arguments=call.effective_arguments,
            schema=tool.parameters if tool is not None else None,
        )
        try:
            return await future
        finally:
            self._consents.pop(call.call_id, None)

    def decide(
        self,
        call_id: str,
        action: str,
        *,
        reason: str | None = None,
        arguments: Any = None,
    ) -> None:
        """The user's decision on a call awaiting consent (approve, decline, edit)."""
        waiting = self._consents.get(call_id)
        if waiting is None:
            raise Refused(409, f"call {call_id!r} is not awaiting consent")
        call, future = waiting
        reason = reason.strip() if isinstance(reason, str) and reason.strip() else None
        if action == "approve":
            approval = Approval.approve(principal=self.principal)
        elif action == "decline":
            approval = Approval.decline(reason, principal=self.principal)
        elif action == "edit":
            if not isinstance(arguments, dict):
                raise Refused(
                    422,
                    "edited arguments must be a JSON object",
                    errors=[{"path": "", "keyword": "type", "message": "not a JSON object"}],
                )
            assert call.tool is not None  # only an advertised tool reaches consent
            errors = call.tool.validator.validate(arguments)
            if errors:  # refused here, so the session never sees arguments it would refuse
                raise Refused(
                    422,
                    "the edited arguments do not match the tool's schema (TOOL-21)",
                    errors=schema_errors(errors),
                )
            approval = Approval(True, arguments, reason, principal=self.principal)
        else:
            raise Refused(422, f"unknown decision {action!r}: approve, decline or edit")
        if not future.done():
            future.set_result(approval)
        self._cards.pop(call_id, None)
        self.hub.push("consent-done", callId=call_id, action=action, reason=reason)
