"""The ``transport`` section: the HTTP + SSE binding (framing, keep-alives, a dropped
stream) and the binary binding when the agent offers it."""

from __future__ import annotations

from typing import Final

from ..wire._framing import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from ._cases_frontend import _invite
from ._cases_input import _basic_input, basic_run
from ._catalogue import _same_script, case, describe
from ._context import Context, Stream, add, findings_of, use
from ._parity import first_difference
from ._report import CaseResult, Verdict

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
