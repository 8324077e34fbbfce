"""The ``input`` and ``lifecycle`` sections: how the agent meets good, bad and unusual
run input, and the shape of its runs (the plain run every other case compares with)."""

from __future__ import annotations

from typing import Any, Final

import orjson

from ..wire._framing import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from ._catalogue import (
    _error_status,
    _must_run,
    _ran_into_error,
    as_the_plain_run,
    case,
    describe,
    served,
)
from ._context import Context, Stream, add, findings_of, new_input, use
from ._report import CaseResult, Finding, Verdict

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
    must = "a producer meeting a newer minor of its line MUST serve the run (and SHOULD warn)."
    if not served(ctx, res, stream, "VER-5", "", must) or stream.judged is None:
        return
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
