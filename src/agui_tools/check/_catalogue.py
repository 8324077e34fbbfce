"""The case catalogue's frame: what a case is, the registry, the judgements sections share.

A :class:`Case` names its rules, their page, and what a conforming producer does; its
function makes its requests (or reads shared ones from the :class:`Context`) and records
:class:`~agui_tools.check._report.Finding` objects. The worst finding is the verdict; none is a pass.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ._context import Context, Stream, add, findings_of, new_input, use
from ._report import CaseResult, Tier, Verdict
from ._tiers import tier_of

__all__ = ["CASES", "PAGES", "Case", "case"]

PAGES: Final = {
    "run-input": "basic/run-input",
    "http-sse": "basic/transports/http-sse",
    "http-protobuf": "basic/transports/http-protobuf",
    "lifecycle": "events/lifecycle",
    "tool-calls": "events/tool-calls#frontend-tools",
    "interrupts": "basic/patterns/interrupt-resume",
    "versioning": "basic/versioning",
    "resumable": "docs/resumable.md (the agui-tools resumable extension)",
}

CaseFn = Callable[[Context, CaseResult], Awaitable[None]]


@dataclass(frozen=True)
class Case:
    id: str
    section: str
    title: str
    rules: tuple[str, ...]
    page: str
    expected: str
    run: CaseFn
    late: bool = False
    capability: str | None = None
    """What the agent must declare or exercise for the case to judge (``_tiers.CAPABILITIES``)."""

    @property
    def tier(self) -> Tier:
        """MUST / SHOULD / MAY / informational, from the rules it cites (``_tiers``)."""
        return tier_of(self.id, self.rules)

    def result(self) -> CaseResult:
        return CaseResult(
            id=self.id,
            section=self.section,
            title=self.title,
            rules=self.rules,
            page=self.page,
            expected=self.expected,
            tier=self.tier,
            capability=self.capability,
        )


CASES: list[Case] = []
"""Every conformance case ``check`` runs, in the catalogue's order (sections as
:data:`SECTIONS` lists them); each registered by :func:`case`."""


def case(
    id: str,
    title: str,
    rules: Sequence[str],
    page: str,
    expected: str,
    *,
    late: bool = False,
    capability: str | None = None,
) -> Callable[[CaseFn], CaseFn]:
    def register(fn: CaseFn) -> CaseFn:
        CASES.append(
            Case(
                id,
                id.split(".")[0],
                title,
                tuple(rules),
                PAGES[page],
                expected,
                fn,
                late,
                capability,
            )
        )
        return fn

    return register


# -- helpers --------------------------------------------------------------------


def describe(stream: Stream) -> str:
    """What the agent did, in one sentence (for "not exercised" and observations)."""
    ex = stream.exchange
    if stream.judged is None:
        if ex.status is None:
            return f"no answer ({ex.error or 'connection failed'})"
        body = " ".join(ex.body.split())[:160]
        return f"HTTP {ex.status} {ex.content_type or '(no content type)'}" + (
            f": {body}" if body else ""
        )
    judged = stream.judged
    parts = []
    text = "".join(
        str(ev.get("delta", "")) for _, ev in judged.of_type("TEXT_MESSAGE_CONTENT")
    ) + "".join(
        str(ev.get("delta", ""))
        for _, ev in judged.of_type("TEXT_MESSAGE_CHUNK")
        if isinstance(ev.get("delta"), str)
    )
    if text.strip():
        short = " ".join(text.split())
        parts.append(f"said {short[:100]!r}" + ("…" if len(short) > 100 else ""))
    answered = {ev.get("toolCallId") for _, ev in judged.of_type("TOOL_CALL_RESULT")}
    left = set(unanswered(stream))
    calls = []
    for _, ev in judged.of_type("TOOL_CALL_START") + judged.of_type("TOOL_CALL_CHUNK"):
        name = ev.get("toolCallName")
        if name is None:
            continue
        cid = ev.get("toolCallId")
        how = (
            "answered in-stream"
            if cid in answered
            else "left unanswered"
            if cid in left or judged.thread is None
            else "answered only in a snapshot"
        )
        calls.append(f"{name} ({how})")
    if calls:
        parts.append("called " + ", ".join(dict.fromkeys(calls)))
    last = judged.last
    status: str = last.status if last is not None else "no run"
    if last is not None and last.error:
        status += f" ({' '.join(str(last.error.get('message', '')).split())[:120]!r})"
    parts.append(f"the run ended {status} after {len(ex.frames)} event(s)")
    return "; ".join(parts)


def calls_made(stream: Stream) -> list[tuple[str, str, int]]:
    """Tool calls the stream started: (toolCallId, name, index of the opening event)."""
    if stream.judged is None:
        return []
    out: dict[str, tuple[str, str, int]] = {}
    for i, ev in enumerate(stream.judged.events):
        if ev.get("type") in ("TOOL_CALL_START", "TOOL_CALL_CHUNK"):
            cid, name = ev.get("toolCallId"), ev.get("toolCallName")
            if isinstance(cid, str) and isinstance(name, str) and cid not in out:
                out[cid] = (cid, name, i)
    return list(out.values())


def interrupt_named(stream: Stream) -> set[str]:
    """The calls the stream's interrupts name (``Interrupt.toolCallId``, INT-4)."""
    if stream.judged is None:
        return set()
    return {
        str(i["toolCallId"])
        for run in stream.judged.runs
        for i in run.interrupts or ()
        if isinstance(i, Mapping) and i.get("toolCallId") is not None
    }


def unanswered(stream: Stream) -> list[str]:
    """Calls of the thread the stream leaves unanswered (the reducer's view)."""
    if stream.judged is None or stream.judged.thread is None:
        return []
    return stream.judged.thread.unanswered_calls()


def as_the_plain_run(ctx: Context, res: CaseResult, stream: Stream) -> bool:
    """True — with a ``not exercised`` finding pointing at ``lifecycle.stream`` — when the
    agent answered this case's request exactly as it answered the plain, well-formed run:
    the same error status (or no answer), no stream. One cause is one finding, on the
    plain run; this case's own rule (INPUT-16, VER-5, INPUT-15 …) learned nothing."""
    plain = ctx.cached("basic")
    if stream.judged is not None or not isinstance(plain, Stream) or plain is stream:
        return False
    if plain.judged is not None or plain.exchange.status != stream.exchange.status:
        return False
    add(
        res,
        Verdict.NOT_EXERCISED,
        res.rules[0] if res.rules else "RUN-1",
        f"the agent answered {describe(stream)} — as it answered the plain, well-formed run "
        "(lifecycle.stream judges that): nothing here is specific to this case's input.",
        stream,
    )
    use(res, plain)
    return True


def _error_status(ctx: Context, res: CaseResult, stream: Stream, rule: str, what: str) -> None:
    """The verdict on an input the agent must refuse before any stream (INPUT-15)."""
    if as_the_plain_run(ctx, res, stream):
        return
    ex = stream.exchange
    if ex.status is None:
        add(
            res,
            Verdict.FAIL,
            rule,
            f"{what}: no HTTP answer ({ex.error}); a rejected input is an HTTP error status, "
            "never a hang or a dropped connection.",
            stream,
        )
    elif 400 <= ex.status < 500:
        if stream.judged is not None:
            add(res, Verdict.FAIL, rule, f"{what}: HTTP {ex.status} but with an event stream.")
        else:
            res.observed = f"HTTP {ex.status}, no event stream" + (
                f": {' '.join(ex.body.split())[:200]}" if ex.body else ""
            )
            use(res, stream)
    elif ex.status >= 500:
        add(
            res,
            Verdict.FAIL,
            rule,
            f"{what}: HTTP {ex.status}. Malformed input is the client's error — refused before "
            "the run starts with a 4xx status naming the problem, never a server error.",
            stream,
        )
    elif stream.judged is not None:
        first = stream.judged.events[0] if stream.judged.events else {}
        verdict = Verdict.FAIL
        add(
            res,
            verdict,
            rule,
            f"{what}: HTTP {ex.status} with an event stream opening with "
            f"{first.get('type', 'nothing')}; input that cannot be parsed is rejected before "
            "RUN_STARTED, through the transport's error path: no stream exists for it.",
            stream,
            0 if stream.judged.events else None,
        )
    else:
        add(
            res,
            Verdict.FAIL,
            rule,
            f"{what}: HTTP {ex.status} {ex.content_type}; expected a 4xx error status.",
            stream,
        )


def served(ctx: Context, res: CaseResult, stream: Stream, rule: str, lead: str, must: str) -> bool:
    """True, with the stream's findings taken, when the agent ran an input it must serve;
    otherwise the ``rule`` failure (``lead`` + what it answered + ``must``), or nothing
    when it answered as it answered the plain run."""
    if as_the_plain_run(ctx, res, stream):
        return False
    if stream.judged is None:
        add(res, Verdict.FAIL, rule, f"{lead}the agent answered {describe(stream)}; {must}", stream)
        return False
    findings_of(res, stream)
    return True


def _must_run(ctx: Context, res: CaseResult, stream: Stream, rule: str, what: str) -> None:
    """An input the agent must serve: a 200 event stream, judged whole."""
    must = "it must strip what it does not recognise and run."
    if served(ctx, res, stream, rule, f"{what}, but ", must):
        _ran_into_error(res, stream, rule)
        res.observed = describe(stream)


def _ran_into_error(res: CaseResult, stream: Stream, rule: str) -> None:
    """A run that ended with RUN_ERROR is well-formed, but judges little: say so."""
    last = stream.judged.last if stream.judged is not None else None
    if last is not None and last.status == "error":
        add(
            res,
            Verdict.INFO,
            rule,
            f"the run started and then failed with RUN_ERROR {last.error}; well-formed, "
            "but nothing of the run itself could be judged.",
            stream,
        )


def _same_script(run_input: Mapping[str, Any]) -> dict[str, Any]:
    """``run_input`` again — same messages, tools, everything — on a fresh thread and run."""
    fresh = new_input(user="")
    return {**run_input, "threadId": fresh["threadId"], "runId": fresh["runId"]}
