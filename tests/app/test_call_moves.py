"""The call lifecycle is one table (``_calls.MOVES``) and one mover (``move``)."""

from __future__ import annotations

import itertools
from typing import get_args

import pytest

from agui_tools._errors import UsageError
from agui_tools.app._arguments import parse_arguments
from agui_tools.app._calls import CallAction, CallStatus, PendingCall, move


def _call(status: CallStatus) -> PendingCall:
    call = PendingCall("t", "r", "c1", "tool", "{}", parse_arguments("{}"), None)
    call.status = status
    return call


EXPECTED = {
    (CallStatus.STREAMING, "ask"): CallStatus.AWAITING_CONSENT,
    (CallStatus.STREAMING, "approve"): CallStatus.APPROVED,
    (CallStatus.AWAITING_CONSENT, "approve"): CallStatus.APPROVED,
    (CallStatus.APPROVED, "approve"): CallStatus.APPROVED,
    (CallStatus.APPROVED, "execute"): CallStatus.EXECUTING,
    (CallStatus.APPROVED, "ask"): CallStatus.AWAITING_CONSENT,  # an approval expired
}
ANSWERS = {
    "executed": CallStatus.DONE,
    "failed": CallStatus.FAILED,
    "declined": CallStatus.DECLINED,
}


@pytest.mark.parametrize(
    ("status", "action"), list(itertools.product(CallStatus, get_args(CallAction)))
)
def test_every_status_and_action_moves_as_the_lifecycle_says_or_is_refused(
    status: CallStatus, action: str
) -> None:
    call = _call(status)
    expected = EXPECTED.get((status, action))
    if expected is None and action in ANSWERS and not status.answered:
        expected = ANSWERS[action]  # an answer may come to any call not yet answered
    if expected is None:
        with pytest.raises(UsageError, match=rf"call 'c1' is {status.value}: it cannot be moved"):
            move(call, action)  # type: ignore[arg-type]
        assert call.status is status  # a refused move changes nothing
    else:
        move(call, action)  # type: ignore[arg-type]
        assert call.status is expected


def test_an_answered_call_says_it_is_answered_when_moved_again() -> None:
    call = _call(CallStatus.DONE)
    with pytest.raises(UsageError, match="nothing — it is answered"):
        move(call, "failed")
