"""The case catalogue: what ``agui-tools check`` asks an agent, and how it judges the answer.

Each :class:`Case` names the rules it checks (``spec/RULES.md`` IDs), the spec
page they come from, and what a conforming producer does; its function makes
the requests it needs (or reads the shared ones from the :class:`Context`) and
records :class:`~agui_tools.check._report.Finding` objects. The verdict is the
worst finding; no finding at all is a pass.

Sections, in the order they run: ``input`` (how the agent meets good, bad and
unusual run input), ``lifecycle`` (the shape of its runs), ``frontend`` (the
frontend-tool round trip), ``history`` (a continuation that leaves a call
unanswered), ``interrupts`` (when the agent interrupts), ``transport`` (the
HTTP + SSE binding, and the binary binding when the agent offers it). Cases
marked ``late`` run after all others, because they judge every stream the
others received.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from ..app._arguments import ParsedArguments, parse_arguments
from ..app._calls import Answer
from ..app._reducer import ThreadState
from ..app._resume import expired
from ..app._validation import ArgumentValidator, InvalidToolSchema
from ..wire._framing import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from ._context import Context, Stream, add, findings_of, new_input, use
from ._parity import first_difference
from ._report import CaseResult, Finding, Tier, Verdict
from ._tiers import tier_of

__all__ = ["CASES", "SECTIONS", "Case"]

PAGES: Final = {
    "run-input": "basic/run-input",
    "http-sse": "basic/transports/http-sse",
    "http-protobuf": "basic/transports/http-protobuf",
    "lifecycle": "events/lifecycle",
    "tool-calls": "events/tool-calls#frontend-tools",
    "interrupts": "basic/patterns/interrupt-resume",
    "versioning": "basic/versioning",
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


def _must_run(ctx: Context, res: CaseResult, stream: Stream, rule: str, what: str) -> None:
    """An input the agent must serve: a 200 event stream, judged whole."""
    if as_the_plain_run(ctx, res, stream):
        return
    if stream.judged is None:
        add(
            res,
            Verdict.FAIL,
            rule,
            f"{what}, but the agent answered {describe(stream)}; it must strip what it does not "
            "recognise and run.",
            stream,
        )
        return
    findings_of(res, stream)
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


# -- input ----------------------------------------------------------------------------


def _basic_input(**kw: Any) -> dict[str, Any]:
    return new_input(user="Say hello in one short sentence.", **kw)


@case(
    "input.malformed-json",
    "Malformed JSON is refused before any stream",
    ("INPUT-15", "TRANS-4"),
    "run-input",
    "HTTP 4xx, no event stream; never a 500, a stream or a hang.",
)
async def _malformed_json(ctx: Context, res: CaseResult) -> None:
    body = orjson.dumps(_basic_input())[:-7]  # cut mid-document
    stream = await ctx.send(res, "a body that is not JSON (cut off mid-document)", body)
    _error_status(ctx, res, stream, "INPUT-15", "a body that is not JSON")


@case(
    "input.wrong-type",
    "A known member of the wrong type is refused",
    ("INPUT-15", "PROC-2"),
    "run-input",
    'HTTP 4xx for `"messages": "hello"`, no event stream.',
)
async def _wrong_type(ctx: Context, res: CaseResult) -> None:
    body = _basic_input()
    body["messages"] = "hello"
    stream = await ctx.send(res, "messages is a string, not a list", orjson.dumps(body))
    _error_status(ctx, res, stream, "INPUT-15", "messages of the wrong type")


@case(
    "input.missing-member",
    "A missing required member is refused",
    ("INPUT-2", "INPUT-15"),
    "run-input",
    "HTTP 4xx for an input without runId, no event stream.",
)
async def _missing_member(ctx: Context, res: CaseResult) -> None:
    body = _basic_input()
    del body["runId"]
    stream = await ctx.send(res, "no runId", orjson.dumps(body))
    _error_status(ctx, res, stream, "INPUT-15", "an input without its required runId")


_PROBE_MEMBER: Final = "xAguiCheckNote"
"""The unknown member ``input.unknown-members`` puts in each message of its input."""


@case(
    "input.unknown-members",
    "Unrecognised input members are tolerated",
    ("INPUT-16",),
    "run-input",
    "The run starts and streams as usual: unknown members are stripped (with a warning "
    "on the agent's side), never a reason to refuse.",
)
async def _unknown_members(ctx: Context, res: CaseResult) -> None:
    good = _basic_input()
    body = dict(good)
    body["xAguiCheckFuture"] = {"added": "in a later version"}
    body["messages"] = [dict(m, **{_PROBE_MEMBER: 1}) for m in good["messages"]]
    stream = await ctx.send(res, "input with unknown members", orjson.dumps(body), judge_as=good)
    _must_run(ctx, res, stream, "INPUT-16", "the input carried unrecognised members")
    # The judge strips the checker's own probe member where the agent sent it back (a
    # MESSAGES_SNAPSHOT restating the thread) and says PROC-3 — but PROC-3 binds the
    # consumer, which did strip it. The fault is the producer's: INPUT-16 (run-input.mdx)
    # "a producer meeting input material it does not recognise strips it with a warning
    # and runs" — it ran (the MUST this case judges) but passed the member back instead of
    # stripping it. Stated without MUST/SHOULD and harmless to a conforming consumer
    # (which strips it again): a `warn` under INPUT-16, not a `fail`.
    for i, f in enumerate(res.findings):
        if f.rule == "PROC-3" and _PROBE_MEMBER in f.message:
            where = f.message.split(": stripped", 1)[0]
            res.findings[i] = Finding(
                Verdict.WARN,
                "INPUT-16",
                f"{where}: the agent sent back the checker's unrecognised input member "
                f"{_PROBE_MEMBER!r}; a producer meeting input material it does not recognise "
                "strips it (with a warning) and runs — it does not restate it to the client.",
                f.exchange,
                f.event,
            )


@case(
    "input.tools-absent",
    "An absent tools list means no tools",
    ("INPUT-11",),
    "run-input",
    "The run starts exactly as with an empty list.",
)
async def _tools_absent(ctx: Context, res: CaseResult) -> None:
    stream = await ctx.send(res, "input without tools", _basic_input(tools=None))
    # the same prompt with `tools: []` (lifecycle.stream's run): what the agent does there
    # is what INPUT-11 asks of it here — a run that fails only here is the difference
    twin = await basic_run(ctx)
    twin_ran = (
        twin.judged is not None
        and twin.judged.error is None
        and twin.judged.last is not None
        and twin.judged.last.status != "error"
    )
    same = "A producer MUST treat a missing tools exactly as it would treat an empty one."
    if twin_ran:
        use(res, twin)
        compared = f"with `tools: []` the same prompt ran ({describe(twin)})"
    else:
        compared = f"with `tools: []` it did not run either ({describe(twin)})"
    if stream.judged is None:
        # an error status only without the member is the difference INPUT-11 forbids; the
        # same refusal either way is the agent treating both alike (as the RUN_ERROR path)
        add(
            res,
            Verdict.FAIL if twin_ran else Verdict.INFO,
            "INPUT-11",
            f"the input had no tools member, and the agent answered {describe(stream)}; "
            f"{compared}. "
            + (same if twin_ran else "Both alike, as INPUT-11 asks; nothing more to judge."),
            stream,
        )
        if not twin_ran:
            use(res, twin)
        return
    findings_of(res, stream)
    res.observed = describe(stream)
    last = stream.judged.last
    if last is not None and last.status == "error" and twin_ran:
        add(
            res,
            Verdict.FAIL,
            "INPUT-11",
            f"the input had no tools member, and the run failed with RUN_ERROR {last.error}; "
            f"{compared}. {same}",
            stream,
            len(stream.judged.events) - 1,
        )
        return
    _ran_into_error(res, stream, "INPUT-11")


@case(
    "input.newer-version",
    "A newer minor version is served, and not echoed",
    ("VER-5", "RUN-2"),
    "versioning",
    "The run is served (a producer MAY reject only another major line); RUN_STARTED "
    "declares the producer's own version, never an echo of the input's.",
)
async def _newer_version(ctx: Context, res: CaseResult) -> None:
    body = _basic_input()
    body["protocolVersion"] = "1.9"
    stream = await ctx.send(res, 'input declaring protocolVersion "1.9"', body)
    if as_the_plain_run(ctx, res, stream):
        return
    if stream.judged is None:
        add(
            res,
            Verdict.FAIL,
            "VER-5",
            f"the agent answered {describe(stream)}; a producer meeting a newer minor of its "
            "line MUST serve the run (and SHOULD warn).",
            stream,
        )
        return
    findings_of(res, stream)
    for i, ev in stream.judged.of_type("RUN_STARTED"):
        if ev.get("protocolVersion") == "1.9":
            add(
                res,
                Verdict.FAIL,
                "RUN-2",
                f'event #{i} RUN_STARTED declares protocolVersion "1.9", the input\'s own '
                "declaration echoed; a producer declares the version it speaks.",
                stream,
                i,
            )
    res.observed = describe(stream)


@case(
    "input.oversized",
    "An oversized body is refused",
    ("TRANS-1", "INPUT-15"),
    "http-sse",
    "An HTTP 4xx (413) before any stream; never a 500 or a dropped connection. Accepting "
    "it is allowed (the spec sets no size) and reported as info.",
)
async def _oversized(ctx: Context, res: CaseResult) -> None:
    body = _basic_input()
    size = ctx.settings.oversize_bytes
    body["forwardedProps"] = {"padding": "x" * size}
    raw = orjson.dumps(body)
    exchange = await ctx.probe.post_large(
        f"a {len(raw) / 1048576:.0f} MiB run input", raw, res.exchanges
    )
    stream = Stream({}, exchange, None)
    ex = stream.exchange
    kind = ex.content_type.split(";")[0].strip().lower()
    if (
        ex.status is not None
        and 200 <= ex.status < 300
        and kind in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE)
    ):
        # accepted and streaming: judged like any stream (read here only up to its head).
        # A protobuf answer to this SSE-only Accept breaks TRANS-7, which lifecycle.stream
        # reports on the plain run; here it is an accepted input, not an INPUT-15 matter
        binary = (
            " (with protobuf frames, though the Accept was text/event-stream only: "
            "TRANS-7, see lifecycle.stream)"
            if kind == PROTO_MEDIA_TYPE
            else ""
        )
        add(
            res,
            Verdict.INFO,
            "TRANS-1",
            f"the agent accepted a {len(raw) / 1048576:.0f} MiB input and ran{binary} "
            "(the spec sets no limit; consider one).",
            stream,
        )
        return
    if as_the_plain_run(ctx, res, stream):
        return
    if ex.status is not None and 400 <= ex.status < 500:
        res.observed = f"HTTP {ex.status}: refused"
        use(res, stream)
    elif ex.status is None:
        add(
            res,
            Verdict.WARN,
            "TRANS-1",
            f"no HTTP answer to a {len(raw) / 1048576:.0f} MiB input ({ex.error}); refuse "
            "it with 413 so the client learns why.",
            stream,
        )
    else:
        _error_status(ctx, res, stream, "INPUT-15", "an oversized input")


# -- lifecycle ----------------------------------------------------------------------


async def basic_run(ctx: Context) -> Stream:
    """The plain prompt with ``tools: []``, sent once per check and shared."""

    async def make() -> Stream:
        res = CaseResult("", "", "", (), "", "")
        return await ctx.send(res, "a plain prompt, no tools", _basic_input(tools=[]))

    stream: Stream = await ctx.once("basic", make)
    return stream


@case(
    "lifecycle.stream",
    "A plain run is a well-formed stream",
    ("RUN-1", "RUN-12", "STREAM-4", "TRANS-4", "EVT-1"),
    "lifecycle",
    "200 text/event-stream; the stream opens with RUN_STARTED, closes every item, ends with "
    "one terminal event and nothing after it — the full consumer pipeline accepts it.",
)
async def _lifecycle_stream(ctx: Context, res: CaseResult) -> None:
    stream = await basic_run(ctx)
    if stream.judged is None:
        add(
            res,
            Verdict.FAIL,
            "TRANS-4",
            f"a well-formed input was answered {describe(stream)}; a run that starts answers "
            "200 with Content-Type text/event-stream.",
            stream,
        )
        return
    findings_of(res, stream)
    if stream.binary:
        # the checker asked with `Accept: text/event-stream` only; TRANS-7: a producer
        # "SHOULD answer with it whenever the client's Accept admits the media type with a
        # positive quality, and MUST answer SSE otherwise"
        add(
            res,
            Verdict.FAIL,
            "TRANS-7",
            f"asked with Accept: text/event-stream only, the agent answered HTTP "
            f"{stream.exchange.status} {stream.exchange.content_type} (protobuf frames); a "
            "producer MUST answer SSE when the Accept does not admit the protobuf media type.",
            stream,
        )
    _ran_into_error(res, stream, "RUN-10")
    res.observed = describe(stream)


@case(
    "lifecycle.protocol-version",
    "RUN_STARTED declares the producer's protocol version",
    ("RUN-2", "VER-5"),
    "versioning",
    "RUN_STARTED carries protocolVersion (this checker speaks 1.1); an implementation of "
    "this version MUST send its declaration.",
)
async def _protocol_version(ctx: Context, res: CaseResult) -> None:
    stream = await basic_run(ctx)
    if stream.judged is None:
        res.observed = f"not exercised: {describe(stream)}"
        add(res, Verdict.NOT_EXERCISED, "RUN-2", "no stream to read RUN_STARTED from.", stream)
        return
    started = stream.judged.of_type("RUN_STARTED")
    if not started:
        add(res, Verdict.NOT_EXERCISED, "RUN-2", "the stream had no RUN_STARTED.", stream)
        return
    i, ev = started[-1]
    version = ev.get("protocolVersion")
    use(res, stream)
    if version is None:
        # Absence is defined, not broken (versioning.mdx: "absence means something: a
        # peer from before the protocol carried a version") — an adapter built on a
        # pre-1.1 SDK is that peer, and the stream alone cannot say it claims 1.1. So a
        # warning, which `--level should` still fails on, never a fail.
        add(
            res,
            Verdict.WARN,
            "RUN-2",
            f"event #{i} RUN_STARTED declares no protocolVersion, so the agent reads as a "
            "peer from before the field and is judged as one; an implementation of 1.1 "
            "MUST send its declaration.",
            stream,
            i,
        )
    else:
        res.observed = f"RUN_STARTED declares protocolVersion {version!r}"
        findings_of(res, stream, only=frozenset({"VER-5"}))


@case(
    "lifecycle.ids-echoed",
    "threadId and runId are the input's",
    ("INPUT-3",),
    "lifecycle",
    "RUN_STARTED and RUN_FINISHED carry the input's threadId; the requested run echoes its runId.",
)
async def _ids_echoed(ctx: Context, res: CaseResult) -> None:
    stream = await basic_run(ctx)
    if stream.judged is None:
        add(res, Verdict.NOT_EXERCISED, "INPUT-3", f"no stream: {describe(stream)}", stream)
        return
    use(res, stream)
    thread, run = stream.input["threadId"], stream.input["runId"]
    for i, ev in stream.judged.of_type("RUN_STARTED") + stream.judged.of_type("RUN_FINISHED"):
        if ev.get("threadId") != thread:
            add(
                res,
                Verdict.FAIL,
                "INPUT-3",
                f"event #{i} {ev['type']} carries threadId {ev.get('threadId')!r}; every run "
                f"on the stream carries the input's threadId {thread!r}.",
                stream,
                i,
            )
    findings_of(res, stream, only=frozenset({"INPUT-3"}))
    if not res.findings:
        res.observed = f"threadId {thread!r} and runId {run!r} echoed"


@case(
    "lifecycle.errored-runs",
    "Errored and cancelled runs are shaped as the spec says",
    ("RUN-10", "RUN-12", "RUN-5", "RUN-6"),
    "lifecycle",
    "A RUN_ERROR carries a message and nothing follows it but a new RUN_STARTED; a "
    "cancelled run closes what it opened and finishes with the cancelled outcome.",
    late=True,
    capability="errored-runs",
)
async def _errored_runs(ctx: Context, res: CaseResult) -> None:
    seen = []
    for stream in ctx.streams:
        if stream.judged is None:
            continue
        kinds = [r.status for r in stream.judged.runs]
        if "error" in kinds or "cancelled" in kinds:
            seen.append(stream)
            findings_of(
                res, stream, only=frozenset({"RUN-10", "RUN-12", "RUN-5", "RUN-6", "PROC-2"})
            )
    if not seen:
        add(
            res,
            Verdict.NOT_EXERCISED,
            "RUN-10",
            f"none of the {sum(1 for s in ctx.streams if s.judged)} run(s) this check "
            "received ended with RUN_ERROR or the cancelled outcome.",
        )
    else:
        res.observed = f"{len(seen)} errored or cancelled run(s) judged"


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


# -- transport -----------------------------------------------------------------------------


@case(
    "transport.framing",
    "SSE framed with LF, one JSON event per data payload",
    ("TRANS-5", "TRANS-4"),
    "http-sse",
    "Every stream uses LF line endings only, and each data payload is exactly one JSON object.",
    late=True,
)
async def _framing(ctx: Context, res: CaseResult) -> None:
    streams = [s for s in ctx.streams if s.judged is not None and not s.binary]
    if not streams:
        add(res, Verdict.NOT_EXERCISED, "TRANS-5", "no event stream was received.")
        return
    for stream in streams:
        if ctx.probe.sent(stream.exchange).cr:
            add(
                res,
                Verdict.FAIL,
                "TRANS-5",
                f"the stream of {stream.exchange.label!r} uses CR line endings; a producer MUST "
                "frame the stream with LF.",
                stream,
            )
        for i, ev in enumerate(stream.judged.events if stream.judged else []):
            if not ev and i < len(stream.exchange.frames):
                add(
                    res,
                    Verdict.FAIL,
                    "TRANS-4",
                    f"event #{i} of {stream.exchange.label!r} is not one JSON object; each SSE "
                    "data payload is exactly one protocol event.",
                    stream,
                    i,
                )
                break
    if not res.findings:
        res.observed = f"{len(streams)} stream(s): LF framing, one JSON object per event"


@case(
    "transport.keep-alive",
    "Keep-alive comments",
    ("TRANS-5",),
    "http-sse",
    "Comment lines (': keep-alive') MAY be sent at any cadence; reported, not judged.",
    late=True,
)
async def _keep_alive(ctx: Context, res: CaseResult) -> None:
    comments = sum(s.exchange.comments for s in ctx.streams)
    streams = sum(1 for s in ctx.streams if s.judged is not None and not s.binary)
    add(
        res,
        Verdict.INFO,
        "TRANS-5",
        f"{comments} comment line(s) across {streams} stream(s)"
        + (
            "" if comments else " — the agent was never idle long enough to need one, or sends none"
        ),
    )


@case(
    "transport.disconnect",
    "After a client disconnects mid-stream, the next request is served",
    ("RUN-9", "TRANS-1"),
    "http-sse",
    "Dropping the connection after the first event leaves the agent able to serve the next "
    "request with a well-formed stream.",
)
async def _disconnect(ctx: Context, res: CaseResult) -> None:
    dropped = await ctx.send(
        res, "a run the checker abandons after one event", _basic_input(tools=[]), stop_after=1
    )
    if dropped.judged is None:
        add(
            res,
            Verdict.NOT_EXERCISED,
            "RUN-9",
            f"no stream to abandon: {describe(dropped)}",
            dropped,
        )
        return
    findings_of(res, dropped)
    nxt = await ctx.send(res, "the next request", _basic_input(tools=[]))
    if nxt.judged is None:
        add(
            res,
            Verdict.FAIL,
            "TRANS-1",
            f"after the client disconnected, the next request was answered {describe(nxt)}.",
            nxt,
        )
        return
    findings_of(res, nxt)
    res.observed = f"next request: {describe(nxt)}"


_PROTO_ACCEPT: Final = f"{PROTO_MEDIA_TYPE}, {SSE_MEDIA_TYPE};q=0.5"


def _same_script(run_input: Mapping[str, Any]) -> dict[str, Any]:
    """``run_input`` again — same messages, tools, everything — on a fresh thread and run."""
    fresh = new_input(user="")
    return {**run_input, "threadId": fresh["threadId"], "runId": fresh["runId"]}


@case(
    "transport.protobuf",
    "The binary binding, when offered, carries the SSE run's events, well framed",
    ("TRANS-7", "TRANS-3", "PROC-6"),
    "http-protobuf",
    "Asked for protobuf (then SSE), the agent answers one of them: SSE is mandatory, protobuf "
    "OPTIONAL — an SSE answer leaves this case not exercised. A protobuf answer to the plain "
    "prompt and to the frontend-tool prompt is judged: every frame a 4-byte big-endian length "
    "and exactly that many bytes of one event that decodes, nothing cut or trailing; the "
    "events through the same pipeline as SSE; and the same events the SSE run of the same "
    "input delivered (identifiers and timestamps aside).",
    capability="binary",
)
async def _protobuf(ctx: Context, res: CaseResult) -> None:
    twins: list[tuple[str, Stream]] = [("the plain prompt", await basic_run(ctx))]
    invite = await _invite(ctx)
    if invite.stream.judged is not None:
        twins.append(("the frontend-tool prompt", invite.stream))
    seen: list[str] = []
    varies: list[str] = []  # how two SSE runs of one input differed, once seen
    for what, sse in twins:
        proto = await ctx.send(
            res,
            f"{what} again, Accept: protobuf, then SSE",
            _same_script(sse.input),
            accept=_PROTO_ACCEPT,
        )
        if not proto.binary:
            if not seen:  # the agent does not offer the binding: judged as SSE, not exercised
                _not_binary(res, proto)
                return
            findings_of(res, proto)  # an SSE answer is judged as any other
            add(
                res,
                Verdict.WARN if proto.judged is not None else Verdict.FAIL,
                "TRANS-7",
                f"{what}: asked the same way, the agent answered {describe(proto)} — after "
                "answering protobuf before; a producer that supports the binding SHOULD answer "
                "with it whenever the Accept admits it, and MUST answer SSE otherwise.",
                proto,
            )
            continue
        seen.append(f"{what}: {await _judge_binary(ctx, res, what, sse, proto, varies)}")
    if not any(f.verdict in (Verdict.FAIL, Verdict.WARN) for f in res.findings):
        res.observed = "; ".join(seen)


def _not_binary(res: CaseResult, stream: Stream) -> None:
    if stream.judged is not None:
        findings_of(res, stream)
        add(
            res,
            Verdict.NOT_EXERCISED,
            "TRANS-3",
            "the agent answered SSE to an Accept admitting protobuf: it does not offer the "
            "binary binding (OPTIONAL); its SSE stream is judged as any other.",
            stream,
        )
    else:
        add(
            res,
            Verdict.FAIL,
            "TRANS-7",
            f"answered {describe(stream)}; a producer MUST answer SSE when it does not answer "
            "protobuf.",
            stream,
        )


async def _judge_binary(
    ctx: Context, res: CaseResult, what: str, sse: Stream, proto: Stream, varies: list[str]
) -> str:
    """Judge one binary answer: its frames and events (the judge), then parity with SSE.

    ``varies``: how two SSE runs of one input differed, once an earlier answer
    showed it — then a difference is not worth another run (a live model is
    slow, and the case has one time bound).
    """
    frames = len(proto.exchange.frames)
    found = findings_of(res, proto)
    if any(f.verdict is Verdict.FAIL for f in found):
        return f"{frames} frame(s), failed"
    assert proto.judged is not None
    if sse.judged is None:
        add(res, Verdict.INFO, "PROC-6", f"{what}: no SSE stream to compare with.", sse)
        return f"{frames} frame(s), not compared"
    if sse.binary:
        # no genuine SSE run to compare with: the "SSE" twin came back as protobuf too (a
        # TRANS-7 fault lifecycle.stream reports — one finding for one cause)
        add(
            res,
            Verdict.NOT_EXERCISED,
            "TRANS-7",
            f"{what}: asked for SSE only, the agent answered protobuf as well (see "
            "lifecycle.stream, TRANS-7), so there is no SSE run to compare the binary one with.",
            sse,
        )
        return f"{frames} frame(s), not compared (no SSE run)"
    diff = first_difference(sse.judged.delivered, proto.judged.delivered, names=("SSE", "protobuf"))
    use(res, sse)
    if diff is None:
        return (
            f"{frames} well-formed frame(s), the same {len(proto.judged.delivered)} events as "
            "over SSE"
        )
    # a model answers differently from run to run: blame the binding only when SSE repeats
    again: Stream | None = None
    if varies:
        repeat: tuple[int, str] | None = (0, varies[0])
    else:
        again = await ctx.send(res, f"{what} again, over SSE", _same_script(sse.input))
        repeat = (
            first_difference(
                sse.judged.delivered, again.judged.delivered, names=("one SSE run", "the next")
            )
            if again.judged is not None
            else (0, f"the agent answered {describe(again)}")
        )
    if repeat is None:
        add(
            res,
            Verdict.FAIL,
            "TRANS-7",
            f"{what}: the binary stream carries other events than the SSE stream of the same "
            f"input, which the agent repeats exactly over SSE — {diff[1]}. The binding differs "
            "from SSE only in the response's encoding.",
            proto,
        )
        return f"{frames} frame(s), other events than over SSE"
    varies.append(repeat[1])
    add(
        res,
        Verdict.INFO,
        "TRANS-7",
        f"{what}: the binary stream differs from the SSE one ({diff[1]}), but so do two SSE "
        f"runs of the same input ({repeat[1]}): the agent does not answer one input the same "
        "way twice, so the bindings cannot be compared event by event.",
        again or proto,
    )
    return f"{frames} well-formed frame(s), not comparable with SSE"


SECTIONS: Final = tuple(dict.fromkeys(c.section for c in CASES))
