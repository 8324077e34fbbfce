"""``agui-tools proxy --inspect``: the inspector's timeline of traffic it does not drive.

A minimal integration with the inspector (whose page is being rewritten): a
:class:`LiveInspector` is an :class:`~agui_tools.ui.inspector.Inspector` whose
:class:`~agui_tools.ui.inspector.Hub` the proxy fills — ``run-start`` (the input
exactly as the frontend sent it), ``event`` (each frame as the agent sent it),
``warning`` / ``violation`` (each finding, with its side), ``run-end`` — and
which refuses every action (403): the frontend drives the thread, and consent
stays the frontend's. The page, its token, its ``Host``/``Origin`` checks and its
CSP are the inspector's own (:func:`~agui_tools.ui.inspector.inspector_app`).
"""

from __future__ import annotations

from typing import Any, NoReturn

import orjson

from ._backend import Inspector, Refused

__all__ = ["LiveInspector"]

READ_ONLY = (
    "read-only: this inspector shows the traffic agui-tools proxy forwards; the frontend "
    "drives the thread (and its consent)"
)


class LiveInspector(Inspector):
    """A read-only inspector whose timeline is the proxy's live traffic."""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream, title=f"agui-tools proxy → {upstream} (read-only)")

    # -- what the page may not do -----------------------------------------------------------

    def _read_only(self) -> NoReturn:
        raise Refused(403, READ_ONLY)

    def send(self, text: str) -> None:
        self._read_only()

    def decide(self, *args: Any, **kwargs: Any) -> None:
        self._read_only()

    def answer(self, *args: Any, **kwargs: Any) -> None:
        self._read_only()

    def add_mock_tool(self, *args: Any, **kwargs: Any) -> None:
        self._read_only()

    def next_input(self, prompt: str | None) -> dict[str, Any]:
        self._read_only()

    def resolve_interrupt(self, *args: Any, **kwargs: Any) -> None:
        self._read_only()

    def compose(self, *args: Any, **kwargs: Any) -> None:
        self._read_only()

    def configure(self, *args: Any, **kwargs: Any) -> None:
        self._read_only()

    def stop(self) -> None:
        self._read_only()

    def new_thread(self) -> None:
        self._read_only()

    async def open_thread(self, thread_id: Any) -> None:
        self._read_only()

    # -- what the proxy tells it ----------------------------------------------------------------

    def exchange_started(self, number: int, url: str, body: bytes) -> None:
        try:
            sent: Any = orjson.loads(body)
        except orjson.JSONDecodeError:
            sent = body.decode("utf-8", "replace")
        self.hub.push("run-start", run=number, input=sent, url=url)

    def exchange_event(self, number: int, index: int, frame: Any) -> None:
        if isinstance(frame, (bytes, str)):
            try:
                event: Any = orjson.loads(frame)
            except orjson.JSONDecodeError:
                event = None
        else:
            event = frame
        kind = event.get("type") if isinstance(event, dict) else None
        self.hub.push(
            "event",
            run=number,
            index=index,
            type=kind if isinstance(kind, str) else "(not an event)",
            event=event,
            raw=None if event is not None else str(frame),
        )

    def exchange_finding(self, number: int, finding: Any) -> None:
        fatal = finding.side == "agent" and finding.severity == "error"
        self.hub.push(
            "violation" if fatal else "warning",
            run=number,
            index=finding.index,
            rule=finding.rule,
            message=f"{finding.side}: {finding.message}",
            path="",
            side=finding.side,
        )

    def exchange_ended(self, number: int, status: int | None, outcome: Any) -> None:
        self.hub.push(
            "run-end",
            run=number,
            runId=getattr(outcome, "run_id", None),
            status=getattr(outcome, "status", None) or f"HTTP {status}",
            pending=list(getattr(outcome, "pending", ())),
            error=None,
            outcome=None,
        )
