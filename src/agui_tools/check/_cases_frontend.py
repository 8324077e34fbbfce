"""The ``frontend`` and ``history`` sections: the frontend-tool round trip (advertise,
invite a call, answer it, decline one) and a continuation leaving a call unanswered."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..app._arguments import ParsedArguments, parse_arguments
from ..app._calls import Answer
from ..app._reducer import ThreadState
from ..app._validation import ArgumentValidator, InvalidToolSchema
from ._catalogue import calls_made, case, describe, interrupt_named, unanswered
from ._context import Context, Stream, add, findings_of, new_input, use
from ._report import CaseResult, Verdict

# -- frontend tools ------------------------------------------------------------------


@dataclass
class Invite:
    """The first leg of the frontend round trip: a prompt inviting an advertised call."""

    stream: Stream
    tools: list[dict[str, Any]]
    attempts: list[Stream]
    adopted: list[str]
    gated: list[str] = field(default_factory=list)
    """Unadvertised calls an interrupt names: the agent's own, waiting on a resume."""

    @property
    def frontend_calls(self) -> list[tuple[str, str, int]]:
        names = {t["name"] for t in self.tools}
        return [c for c in calls_made(self.stream) if c[1] in names]


async def _invite(
    ctx: Context, *, key: str = "invite", tools: Sequence[Mapping[str, Any]] | None = None
) -> Invite:
    async def make() -> Invite:
        advertised = [dict(t) for t in (tools if tools is not None else ctx.settings.tools)]
        res = CaseResult("", "", "", (), "", "")
        prompt = ctx.settings.prompt_for(advertised)
        first = await ctx.send(
            res, "a prompt inviting a frontend call", new_input(user=prompt, tools=advertised)
        )
        invite = Invite(first, advertised, [first], [])
        invite.gated = [
            f"{name} ({cid})"
            for cid, name, _ in calls_made(first)
            if cid in interrupt_named(first) and name not in {t["name"] for t in advertised}
        ]
        names = {t["name"] for t in advertised}
        if tools is None and not invite.frontend_calls and first.judged is not None:
            # the agent called tools of its own naming and left them to the application:
            # advertise those too (no schema) and ask again on a new thread
            # ... but not a call an interrupt names: that one waits on a resume entry, an
            # approval of the agent's own tool (INT-4), not on the application's answer
            left = set(unanswered(first)) - interrupt_named(first)
            adopted = [
                name for cid, name, _ in calls_made(first) if cid in left and name not in names
            ]
            if adopted:
                adopted = list(dict.fromkeys(adopted))
                advertised += [
                    {
                        "name": name,
                        "description": "adopted by agui-tools check: the agent called this "
                        "tool unadvertised and left it to the application.",
                        "parameters": {"type": "object"},
                    }
                    for name in adopted
                ]
                second = await ctx.send(
                    res,
                    f"the same prompt, now also advertising {', '.join(adopted)}",
                    new_input(user=prompt, tools=advertised),
                )
                invite = Invite(second, advertised, [first, second], adopted, invite.gated)
        return invite

    invite: Invite = await ctx.once(key, make)
    return invite


def _not_invited(res: CaseResult, invite: Invite, rule: str) -> bool:
    judged = invite.stream.judged
    if judged is not None and judged.error is not None:
        use(res, invite.stream)
        err = judged.error
        add(
            res,
            Verdict.NOT_EXERCISED,
            rule,
            f"the stream was rejected at event #{err.index} [{err.rule}] before any call could "
            "be judged (frontend.invite reports it).",
        )
        return True
    if judged is not None and invite.frontend_calls:
        return False
    for attempt in invite.attempts:
        use(res, attempt)
    names = ", ".join(t["name"] for t in invite.tools)
    if judged is None:  # no run at all: a prompt would not help
        add(
            res,
            Verdict.NOT_EXERCISED,
            rule,
            f"the prompt inviting a call to {names} was answered {describe(invite.stream)}; "
            "no run, so no call to judge.",
        )
        return True
    gated = (
        f" Its own {', '.join(invite.gated)}, which an interrupt names, waits on a resume "
        "(the interrupt cases judge it), not on the application: not a frontend call."
        if invite.gated
        else ""
    )
    add(
        res,
        Verdict.NOT_EXERCISED,
        rule,
        f"the agent called none of the advertised tools ({names}): it "
        f"{describe(invite.stream)}.{gated} Give it a prompt that leads to a call (--prompt) "
        "or the tools it knows (--tools).",
    )
    return True


_FE_OWN: Final = frozenset({"FE-2", "FE-3", "FE-5"})


@case(
    "frontend.invite",
    "The agent calls an advertised frontend tool",
    ("FE-11", "FE-15", "TOOL-1"),
    "tool-calls",
    "Asked to, the agent calls an advertised tool; the stream is well-formed.",
)
async def _frontend_invite(ctx: Context, res: CaseResult) -> None:
    invite = await _invite(ctx)
    for attempt in invite.attempts:
        findings_of(res, attempt, exclude=_FE_OWN)
    if _not_invited(res, invite, "FE-15"):
        return
    calls = ", ".join(f"{name} ({cid})" for cid, name, _ in invite.frontend_calls)
    res.observed = f"called {calls}"
    if invite.adopted:
        res.observed += (
            f" — after the checker adopted {', '.join(invite.adopted)}, which the agent "
            "called unadvertised on a first attempt"
        )


@case(
    "frontend.no-self-answer",
    "The agent does not answer a frontend call",
    ("FE-2",),
    "tool-calls",
    "No TOOL_CALL_RESULT (and no fabricated tool message) for a call to an advertised tool.",
    capability="frontend-tools",
)
async def _no_self_answer(ctx: Context, res: CaseResult) -> None:
    invite = await _invite(ctx)
    if _not_invited(res, invite, "FE-2"):
        return
    findings_of(res, invite.stream, only=frozenset({"FE-2"}))
    if not res.findings:
        res.observed = "no result for the frontend call(s)"


@case(
    "frontend.success-outcome",
    "A run stopped on a frontend call finishes as success",
    ("FE-3", "FE-13"),
    "tool-calls",
    "RUN_FINISHED with the success outcome (or none) — never the interrupt outcome.",
    capability="frontend-tools",
)
async def _success_outcome(ctx: Context, res: CaseResult) -> None:
    invite = await _invite(ctx)
    if _not_invited(res, invite, "FE-3"):
        return
    use(res, invite.stream)
    findings_of(res, invite.stream, only=frozenset({"FE-3"}))
    last = invite.stream.judged.last if invite.stream.judged else None
    status = last.status if last else "none"
    if not res.findings:
        if status in ("success",):
            res.observed = "RUN_FINISHED with the success outcome"
        else:
            add(
                res,
                Verdict.NOT_EXERCISED,
                "FE-3",
                f"the run ended {status}, not with RUN_FINISHED; nothing to judge.",
                invite.stream,
            )


@case(
    "frontend.pending-ids",
    "pendingToolCallIds names exactly the unanswered calls",
    ("FE-5", "FE-14"),
    "tool-calls",
    "The success outcome's pendingToolCallIds lists exactly the calls the run started and "
    "did not answer (a SHOULD to send it; a MUST to be exact when sent).",
    capability="frontend-tools",
)
async def _pending_ids(ctx: Context, res: CaseResult) -> None:
    invite = await _invite(ctx)
    if _not_invited(res, invite, "FE-5"):
        return
    stream = invite.stream
    use(res, stream)
    if findings_of(res, stream, only=frozenset({"FE-5"})):
        return
    assert stream.judged is not None
    finished = stream.judged.of_type("RUN_FINISHED")
    if not finished:
        add(res, Verdict.NOT_EXERCISED, "FE-5", "the run did not finish with RUN_FINISHED.", stream)
        return
    i, ev = finished[-1]
    outcome = ev.get("outcome")
    kind = outcome.get("type") if isinstance(outcome, dict) else "success"
    if kind != "success":
        add(
            res,
            Verdict.NOT_EXERCISED,
            "FE-5",
            f"the run finished with the {kind} outcome; pendingToolCallIds lives only on the "
            "success outcome (frontend.success-outcome judges the outcome).",
            stream,
            i,
        )
        return
    named = outcome.get("pendingToolCallIds") if isinstance(outcome, dict) else None
    last = stream.judged.last
    pending = last.pending if last is not None else []
    if named:
        res.observed = f"pendingToolCallIds {named} — exactly the calls left unanswered"
    elif not pending:
        res.observed = "the run left no call unanswered, so there was nothing to name"
    else:
        add(
            res,
            Verdict.WARN,
            "FE-5",
            f"event #{i} RUN_FINISHED leaves {pending} unanswered without naming them in "
            "pendingToolCallIds; a producer SHOULD send the list (a consumer then derives it "
            "from the stream, FE-6).",
            stream,
            i,
        )


@case(
    "frontend.arguments",
    "The call's arguments fit the advertised schema",
    ("TOOL-21", "TOOL-6"),
    "tool-calls",
    "The closed call's argument text is a JSON object valid against the tool's parameters "
    "(a warning when not: the model's fault, not the protocol's).",
    capability="frontend-tools",
)
async def _arguments(ctx: Context, res: CaseResult) -> None:
    invite = await _invite(ctx)
    if _not_invited(res, invite, "TOOL-21"):
        return
    stream = invite.stream
    use(res, stream)
    thread = stream.judged.thread if stream.judged else None
    schemas = {t["name"]: t.get("parameters") for t in invite.tools}
    good = []
    for cid, name, index in invite.frontend_calls:
        text = thread.arguments(cid) if thread is not None else None
        parsed = parse_arguments(text or "")
        if not isinstance(parsed, ParsedArguments):
            add(
                res,
                Verdict.WARN,
                "TOOL-6",
                f"call {cid!r} to {name!r}: the argument text {text!r} does not parse as a "
                f"JSON object ({parsed.reason}).",
                stream,
                index,
            )
            continue
        try:
            errors = ArgumentValidator(schemas.get(name)).validate(parsed)
        except InvalidToolSchema as exc:
            add(res, Verdict.INFO, "TOOL-21", f"the schema of {name!r} cannot be used: {exc}")
            continue
        if errors:
            add(
                res,
                Verdict.WARN,
                "TOOL-21",
                f"call {cid!r} to {name!r}: arguments {text!r} do not match the advertised "
                f"schema: {'; '.join(str(e) for e in errors[:5])}.",
                stream,
                index,
            )
        else:
            good.append(f"{name} {text}")
    if good and not res.findings:
        res.observed = "valid: " + "; ".join(good)


def _answer_all(
    stream: Stream, how: str, *, skip: frozenset[str] | set[str] = frozenset()
) -> dict[str, Any]:
    """The continuation input answering every call the thread left (FE-8) — but the
    ones in ``skip`` (calls an interrupt names: a resume entry covers those)."""
    judged = stream.judged
    assert judged is not None and judged.thread is not None
    # a copy: the judged thread is shared with the other cases reading this stream
    thread = ThreadState(judged.thread.messages, judged.thread.state)
    for cid in thread.unanswered_calls():
        if cid in skip:
            continue
        name = thread.call_name(cid) or "tool"
        if how == "decline":
            answer = Answer.declined(cid, "user", "agui-tools check declines this call")
        else:
            answer = Answer.executed(cid, f"{name} done (answered by agui-tools check)")
        thread.add_tool_message(answer.tool_message(f"check-tool-{uuid.uuid4().hex[:12]}"))
    out = {
        "threadId": stream.input["threadId"],
        "runId": f"check-run-{uuid.uuid4().hex[:12]}",
        "protocolVersion": stream.input.get("protocolVersion"),
        "messages": thread.messages,
        "tools": stream.input.get("tools", []),
    }
    if thread.state is not None:
        out["state"] = thread.state
    return {k: v for k, v in out.items() if v is not None}


async def _continue(
    ctx: Context, res: CaseResult, stream: Stream, how: str, label: str
) -> Stream | None:
    if stream.judged is None or stream.judged.error is not None:
        add(
            res,
            Verdict.NOT_EXERCISED,
            "FE-8",
            "the first run's stream was rejected, so there is no thread to continue.",
            stream,
        )
        return None
    return await ctx.send(res, label, _answer_all(stream, how))


def _judge_continuation(res: CaseResult, nxt: Stream, what: str) -> None:
    if nxt.judged is None:
        add(
            res,
            Verdict.FAIL,
            "FE-8",
            f"the continuation ({what}) was answered {describe(nxt)}; it answers every call "
            "with one tool message, as a continuation must, and must be served.",
            nxt,
        )
        return
    findings_of(res, nxt)
    last = nxt.judged.last
    if last is not None and last.status == "error":
        add(
            res,
            Verdict.WARN,
            "FE-8",
            f"the continuation ({what}) ended with RUN_ERROR {last.error}; the agent did not "
            "survive a well-formed answer.",
            nxt,
        )
    res.observed = f"continuation: {describe(nxt)}"


@case(
    "frontend.continuation",
    "The answered call's continuation runs cleanly",
    ("FE-8", "TOOL-11", "RUN-14", "TOOL-10"),
    "tool-calls",
    "Sent the thread with a tool message answering each call, the agent runs on: a "
    "well-formed stream that does not re-stream the answered call (RUN-14) nor answer it again.",
    capability="frontend-tools",
)
async def _continuation(ctx: Context, res: CaseResult) -> None:
    invite = await _invite(ctx)
    if _not_invited(res, invite, "FE-8"):
        return
    use(res, invite.stream)
    nxt = await _continue(ctx, res, invite.stream, "answer", "the thread with every call answered")
    if nxt is not None:
        _judge_continuation(res, nxt, "every call answered")


@case(
    "frontend.decline",
    "The agent survives a declined call",
    ("FE-8",),
    "tool-calls",
    "Sent the thread with the call declined (a tool message saying so), the agent runs on "
    "with a well-formed stream.",
    capability="frontend-tools",
)
async def _decline(ctx: Context, res: CaseResult) -> None:
    first = await _invite(ctx)
    if _not_invited(res, first, "FE-8"):
        return
    invite = await _invite(ctx, key="invite-decline", tools=first.tools)
    if _not_invited(res, invite, "FE-8"):
        return
    use(res, invite.stream)
    findings_of(res, invite.stream, exclude=_FE_OWN)
    nxt = await _continue(ctx, res, invite.stream, "decline", "the thread with every call declined")
    if nxt is not None:
        _judge_continuation(res, nxt, "every call declined")


# -- history ----------------------------------------------------------------------------


@case(
    "history.dangling",
    "A history with an unanswered call is not answered by the agent",
    ("FE-8", "INPUT-5", "FE-2"),
    "tool-calls",
    "The agent never fabricates the missing answer (FE-2: no TOOL_CALL_RESULT, no invented "
    "tool message). Refusing — an HTTP 4xx, or a stream opening with RUN_ERROR — passes; "
    "running on the history as shown is info: FE-8 binds the application that sent it, and "
    "INPUT-5 has the producer take the history as complete.",
)
async def _dangling(ctx: Context, res: CaseResult) -> None:
    tools = [dict(t) for t in ctx.settings.tools]
    name = tools[0]["name"] if tools else "get_weather"
    history: list[dict[str, Any]] = [
        {"id": f"msg-{uuid.uuid4().hex[:8]}", "role": "user", "content": "Hello."},
        {
            "id": f"msg-{uuid.uuid4().hex[:8]}",
            "role": "assistant",
            "toolCalls": [
                {
                    "id": _DANGLING,
                    "type": "function",
                    "function": {"name": name, "arguments": "{}"},
                }
            ],
        },
    ]
    body = new_input(user="And now?", tools=tools, messages=history)
    stream = await ctx.send(res, f"history with call {_DANGLING} unanswered", body)
    ex = stream.exchange
    if ex.status is not None and 400 <= ex.status < 500 and stream.judged is None:
        res.observed = f"HTTP {ex.status}: refused"
        use(res, stream)
        return
    if stream.judged is not None:
        found = findings_of(res, stream)
        events = stream.judged.events
        if events and events[0].get("type") == "RUN_ERROR":
            res.observed = "refused: the stream opens with RUN_ERROR"
            return
        res.observed = describe(stream)
        if any(f.rule == "FE-2" and _DANGLING in f.message for f in found):
            return  # the agent answered the call itself: the FE-2 finding says where
        add(
            res,
            Verdict.INFO,
            "FE-8",
            f"the agent ran on a history whose call {_DANGLING!r} has no answer, without "
            f"answering it itself ({describe(stream)}). Allowed: FE-8 binds the application "
            "that sent the history (a thread that continues answers every call first), and "
            "INPUT-5 has the producer treat the history as complete as shown. A model handed "
            "a dangling call is often refused by its provider; refusing with a 4xx naming "
            "the call is the clearer answer.",
            stream,
        )
        return
    if ex.status is not None and ex.status >= 500:
        # info, not warn: no MUST or SHOULD binds the producer on a dangling history (FE-8
        # binds the application; INPUT-15's 4xx is for malformed input, which this is not)
        add(
            res,
            Verdict.INFO,
            "FE-8",
            f"HTTP {ex.status}: a server error, neither a refusal nor a run; an agent that will "
            "not run on a dangling call had better refuse it with a 4xx naming the call (no "
            "rule binds the producer here: FE-8 binds the application that sent the history).",
            stream,
        )
        return
    add(
        res,
        Verdict.FAIL,
        "TRANS-4",
        f"answered {describe(stream)}; a request is refused with an error status or "
        "answered with 200 text/event-stream.",
        stream,
    )


_DANGLING: Final = "check-dangling-call"
