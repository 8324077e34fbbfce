"""The ``interrupts`` section: what the agent does when it interrupts, and with the
resumes that cover, leave uncovered or over-cover its interrupts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from ..app._resume import expired
from ..app._validation import ArgumentValidator, InvalidToolSchema
from ._cases_frontend import _answer_all
from ._catalogue import _same_script, case, describe, interrupt_named
from ._context import Context, Stream, add, findings_of, new_input, use
from ._report import CaseResult, Verdict

# -- interrupts ----------------------------------------------------------------------------

DEFAULT_INTERRUPT_PROMPT: Final = (
    "I was charged twice for order A1042. Please refund the duplicate charge of 4.50 EUR — "
    "ask me for approval before you issue the refund."
)
"""The message inviting an interrupt (an approval of the agent's own tool), sent when no
other run of the check interrupted; ``--interrupt-prompt`` replaces it."""


def _interrupted(ctx: Context) -> list[Stream]:
    """Every stream whose last run ended with the interrupt outcome, and that the
    pipeline accepted whole (a rejected stream leaves no thread to continue)."""
    return [
        s
        for s in ctx.streams
        if s.judged is not None
        and s.judged.error is None
        and s.judged.thread is not None
        and s.judged.last is not None
        and s.judged.last.status == "interrupt"
    ]


async def _interrupt_source(ctx: Context) -> Stream | None:
    """The first interrupted run of the check — or, when no case's run interrupted, the
    answer to a prompt inviting one (an approval of the agent's own tool)."""

    async def make() -> Stream | None:
        found = _interrupted(ctx)
        if found:
            return found[0]
        res = CaseResult("", "", "", (), "", "")
        prompt = ctx.settings.interrupt_prompt or DEFAULT_INTERRUPT_PROMPT
        stream = await ctx.send(res, "a prompt inviting an interrupt", new_input(user=prompt))
        return stream if _interrupted_stream(stream) else None

    source: Stream | None = await ctx.once("interrupt-source", make)
    return source


def _interrupted_stream(stream: Stream) -> bool:
    judged = stream.judged
    return (
        judged is not None
        and judged.error is None
        and judged.thread is not None
        and judged.last is not None
        and judged.last.status == "interrupt"
    )


async def _fresh_interrupt(ctx: Context, res: CaseResult, what: str) -> Stream | None:
    """The interrupting input again, on a new thread: each continuation judged continues
    its own interrupted run (an agent that keeps a checkpoint sees each interrupt answered
    once). ``None``, with a ``not exercised`` finding, when it does not interrupt again."""
    source = await _interrupt_source(ctx)
    if source is None:
        _not_interrupting(ctx, res, "INT-6")
        return None
    again = await ctx.send(
        res, f"the interrupting input again, on a new thread ({what})", _same_script(source.input)
    )
    if not _interrupted_stream(again):
        findings_of(res, again)
        add(
            res,
            Verdict.NOT_EXERCISED,
            "INT-6",
            f"sent again on a new thread, the input that interrupted was answered "
            f"{describe(again)} — not interrupted this time, so there is nothing to resume.",
            again,
        )
        return None
    return again


def _not_interrupting(ctx: Context, res: CaseResult, rule: str) -> None:
    tried = ctx.settings.interrupt_prompt or DEFAULT_INTERRUPT_PROMPT
    add(
        res,
        Verdict.NOT_EXERCISED,
        rule,
        f"none of the {sum(1 for s in ctx.streams if s.judged)} run(s) this check received "
        f"ended with the interrupt outcome — the prompt inviting one ({tried!r}) included. "
        "Give the agent a prompt that leads to an interrupt (--interrupt-prompt).",
    )


def _interrupts_of(stream: Stream) -> list[dict[str, Any]]:
    last = stream.judged.last if stream.judged is not None else None
    return [dict(i) for i in (last.interrupts if last is not None else [])]


@case(
    "interrupts.ids",
    "Interrupt ids are unique and the outcome well-formed",
    ("INT-1", "INT-3"),
    "interrupts",
    "Each interrupt outcome carries at least one interrupt, each with an id unique in the run.",
    late=True,
    capability="interrupts",
)
async def _interrupt_ids(ctx: Context, res: CaseResult) -> None:
    await _interrupt_source(ctx)  # sends the prompt inviting one when no run interrupted
    # a run whose interrupt outcome breaks INT-1/INT-3 is rejected (not "interrupted"),
    # but it is the very run this case exists to judge
    rules = frozenset({"INT-1", "INT-3"})
    broken = [
        s
        for s in ctx.streams
        if s.judged is not None and any(f.rule in rules for f in s.judged.findings)
    ]
    judged = list({id(s): s for s in [*_interrupted(ctx), *broken]}.values())
    if not judged:
        _not_interrupting(ctx, res, "INT-3")
        return
    for stream in judged:
        findings_of(res, stream, only=rules)
    res.observed = f"{len(judged)} interrupted run(s) judged"


def _resume_input(stream: Stream, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The continuation of an interrupted run: its frontend calls answered with tool
    messages, as any continuation answers them (FE-8), and the calls its interrupts
    name left to the resume entries (INT-7) — never a tool message for those."""
    out = _answer_all(stream, "answer", skip=interrupt_named(stream))
    out["resume"] = entries
    return out


def _refused(stream: Stream) -> str | None:
    """How the agent refused an input, if it did: a 4xx, or a stream opening with
    RUN_ERROR (INT-10, INPUT-15)."""
    ex = stream.exchange
    if stream.judged is None and ex.status is not None and 400 <= ex.status < 500:
        return f"HTTP {ex.status}"
    events = stream.judged.events if stream.judged is not None else []
    if events and events[0].get("type") == "RUN_ERROR":
        return "a stream opening with RUN_ERROR"
    return None


@case(
    "interrupts.uncovered-resume",
    "A resume that leaves an interrupt uncovered is not run as success",
    ("INT-7", "INT-10"),
    "interrupts",
    "Refused (4xx or RUN_ERROR first) or interrupted again — the run MUST NOT end as success "
    "while an interrupt stands unanswered.",
    late=True,
    capability="interrupts",
)
async def _uncovered(ctx: Context, res: CaseResult) -> None:
    source = await _interrupt_source(ctx)
    if source is None:
        _not_interrupting(ctx, res, "INT-10")
        return
    use(res, source)
    body = _resume_input(source, [])
    body.pop("resume")
    nxt = await ctx.send(res, "continuation with no resume entry", body)
    if nxt.judged is None:
        ex = nxt.exchange
        if ex.status and 400 <= ex.status < 500:
            res.observed = f"HTTP {ex.status}: refused"
        else:
            add(res, Verdict.FAIL, "INT-10", f"answered {describe(nxt)}; expected 4xx", nxt)
        return
    findings_of(res, nxt)
    last = nxt.judged.last
    if last is not None and last.status == "success":
        add(
            res,
            Verdict.FAIL,
            "INT-10",
            "the run ended as success while the interrupted run's interrupts stood unanswered.",
            nxt,
            len(nxt.exchange.frames) - 1,
        )
    res.observed = describe(nxt)


def _judge_resumed(
    res: CaseResult, nxt: Stream, answered: Sequence[Mapping[str, Any]], what: str
) -> None:
    """A covering resume's run: served, well-formed, and the answers taken as answers."""
    refused = _refused(nxt)
    if nxt.judged is None and refused is None:
        add(
            res,
            Verdict.FAIL,
            "TRANS-4",
            f"a covering resume ({what}) was answered {describe(nxt)}; a request is refused "
            "with a 4xx or answered with 200 text/event-stream, never a server error.",
            nxt,
        )
        return
    findings_of(res, nxt)
    res.observed = f"{what}: {describe(nxt)}"
    if refused is not None:
        add(
            res,
            Verdict.WARN,
            "INT-6",
            f"a correct, covering resume ({what}) was refused with {refused}; the producer "
            "receiving resume entries treats them as the answers it stopped for "
            "(interrupt-resume: Resuming).",
            nxt,
        )
        return
    assert nxt.judged is not None
    last = nxt.judged.last
    if last is not None and last.status == "error":
        add(
            res,
            Verdict.WARN,
            "INT-6",
            f"the resumed run ({what}) ended with RUN_ERROR {last.error}; the agent did not "
            "survive a well-formed answer to its interrupts.",
            nxt,
        )
    if last is not None and last.status == "interrupt":
        by_id = {str(a.get("id")): a for a in answered}
        again = [
            i
            for i in last.interrupts
            if str(i.get("id")) in by_id
            and i.get("toolCallId") == by_id[str(i.get("id"))].get("toolCallId")
        ]
        if again:
            add(
                res,
                Verdict.WARN,
                "INT-6",
                f"the resumed run ({what}) ends by raising interrupt(s) "
                f"{[i.get('id') for i in again]} again — the very ones the resume answered; a "
                "producer treats the entries as the answers it stopped for, and asks anew "
                "with a new interrupt if it must.",
                nxt,
                len(nxt.exchange.frames) - 1,
            )


@case(
    "interrupts.resume",
    "A resume cancelling every interrupt is served",
    ("INT-6", "INT-8", "INT-7"),
    "interrupts",
    "A resume list cancelling every interrupt — the way an expired one is abandoned — "
    "continues the thread with a well-formed run (refused: warn), which does not raise "
    "the cancelled interrupts again. The continuation is a correct one: every frontend call "
    "the interrupted run left answered with a tool message (FE-8), a call an interrupt names "
    "only by its resume entry.",
    late=True,
    capability="interrupts",
)
async def _resume(ctx: Context, res: CaseResult) -> None:
    source = await _fresh_interrupt(ctx, res, "to cancel")
    if source is None:
        return
    interrupts = _interrupts_of(source)
    entries = [
        {
            "interruptId": i["id"],
            "status": "cancelled",
            "metadata": {"reason": "agui-tools check cancels this interrupt"},
        }
        for i in interrupts
    ]
    nxt = await ctx.send(
        res, "continuation cancelling every interrupt", _resume_input(source, entries)
    )
    _judge_resumed(res, nxt, interrupts, f"{len(entries)} interrupt(s) cancelled")


def sample_payload(schema: Any, depth: int = 0) -> Any:
    """A value satisfying a simple JSON Schema, answering "yes" where it can: booleans
    ``true`` (an approval), the first of an ``enum``, the ``const``, each required member.
    ``None`` when nothing sensible can be built (the caller checks the value anyway)."""
    if not isinstance(schema, Mapping) or depth > 8:
        return None
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("oneOf", "anyOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return sample_payload(options[0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object" or (kind is None and isinstance(schema.get("properties"), Mapping)):
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        out: dict[str, Any] = {}
        for name in schema.get("required") or ():
            out[str(name)] = sample_payload(props.get(name, {}), depth + 1)
        for name, sub in props.items():  # an optional yes/no is answered yes: an approval
            if name not in out and isinstance(sub, Mapping) and sub.get("type") == "boolean":
                out[str(name)] = True
        return out
    if kind == "array":
        size = schema.get("minItems", 0)
        item = sample_payload(schema.get("items", {}), depth + 1)
        return [item] * size if isinstance(size, int) else []
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = max(1, int(low) + 1) if isinstance(low, (int, float)) else 1
        return value if kind == "integer" else float(value)
    if kind == "string":
        size = schema.get("minLength", 0)
        text = "approved by agui-tools check"
        return text if not isinstance(size, int) or size <= len(text) else text + "x" * size
    if kind == "null":
        return None
    return {"approved": True}


def _resolution(interrupt: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The checker's resume entry for one interrupt and what it did: an expired one
    cancelled (INT-8), one whose ``responseSchema`` the checker can satisfy resolved
    with that payload, one with no schema resolved with ``{"approved": true}``."""
    iid = interrupt["id"]
    if expired(interrupt, datetime.now(UTC)):
        return (
            {"interruptId": iid, "status": "cancelled", "metadata": {"reason": "expired"}},
            f"{iid} cancelled (expired at {interrupt.get('expiresAt')}: only abandoned, INT-8)",
        )
    schema = interrupt.get("responseSchema")
    if schema is None:
        payload: Any = {"approved": True}
    else:
        payload = sample_payload(schema)
        try:
            fits = payload is not None and not ArgumentValidator(schema).validate_value(payload)
        except InvalidToolSchema:
            fits = False
        if not fits:
            return (
                {
                    "interruptId": iid,
                    "status": "cancelled",
                    "metadata": {"reason": "agui-tools check cannot answer this schema"},
                },
                f"{iid} cancelled (the checker could not build a payload for its responseSchema)",
            )
    entry = {"interruptId": iid, "status": "resolved", "payload": payload}
    return entry, f"{iid} resolved with {orjson.dumps(payload).decode()[:120]}"


@case(
    "interrupts.resolved",
    "A resume resolving the interrupts is served",
    ("INT-6", "INT-8", "INT-4"),
    "interrupts",
    "A resume list resolving each interrupt with a payload its responseSchema accepts (one "
    "that has expired is cancelled instead: INT-8) continues the thread with a well-formed "
    "run that does not raise the answered interrupts again; refused: warn. A call an "
    "interrupt names is covered by its entry only — no tool message.",
    late=True,
    capability="interrupts",
)
async def _resolved(ctx: Context, res: CaseResult) -> None:
    source = await _fresh_interrupt(ctx, res, "to resolve")
    if source is None:
        return
    interrupts = _interrupts_of(source)
    answers = [_resolution(i) for i in interrupts]
    entries = [entry for entry, _ in answers]
    if not any(e["status"] == "resolved" for e in entries):
        use(res, source)
        add(
            res,
            Verdict.NOT_EXERCISED,
            "INT-6",
            "no interrupt could be resolved: " + "; ".join(said for _, said in answers),
            source,
        )
        return
    nxt = await ctx.send(
        res, "continuation resolving the interrupts", _resume_input(source, entries)
    )
    _judge_resumed(res, nxt, interrupts, "; ".join(said for _, said in answers))


@case(
    "interrupts.unknown-entry",
    "A resume entry naming no interrupt of the agent's is not a reason to fail the run",
    ("INT-9",),
    "interrupts",
    "A covering resume (every interrupt cancelled) carrying one more entry, for an interrupt "
    "the agent never raised: the run SHOULD proceed without it, with a warning on the "
    "agent's side — refusing it is a warn.",
    late=True,
    capability="interrupts",
)
async def _unknown_entry(ctx: Context, res: CaseResult) -> None:
    source = await _fresh_interrupt(ctx, res, "to answer with a stray entry")
    if source is None:
        return
    interrupts = _interrupts_of(source)
    entries = [{"interruptId": i["id"], "status": "cancelled"} for i in interrupts]
    entries.append({"interruptId": _STRAY, "status": "resolved", "payload": {"approved": True}})
    nxt = await ctx.send(
        res, f"continuation with a stray entry {_STRAY!r}", _resume_input(source, entries)
    )
    refused = _refused(nxt)
    if refused is not None or nxt.judged is None:
        findings_of(res, nxt)
        add(
            res,
            Verdict.WARN,
            "INT-9",
            f"a resume entry for {_STRAY!r}, an interrupt the agent never raised, made it "
            f"answer {refused or describe(nxt)}; the run SHOULD proceed without the entry, "
            "and the producer SHOULD surface a warning rather than fail a run over an answer "
            "it never asked for.",
            nxt,
        )
        return
    findings_of(res, nxt)
    res.observed = f"served: {describe(nxt)}"


_STRAY: Final = "check-never-raised"
