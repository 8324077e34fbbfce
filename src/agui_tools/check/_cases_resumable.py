"""The ``transport.resumable`` case: the opt-in resumable extension (docs/resumable.md),
judged when the agent confirms it — ids, a replay from the middle, a disconnect that
is no stop, and the 4xx answers to what cannot be served.

Its requests are its own (a GET and a stop are not run requests), made on the
probe's connection pool with the user's headers and under the probe's time bound;
each is an exchange of the case's transcript.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from typing import Any, Final

import httpx
import orjson

from ..wire._event_ids import RESUMABLE_HEADER, EventSeq
from ..wire._framing import SSE_MEDIA_TYPE, BrokenFrame, SSEReader
from ..wire._lifecycle import RUN_ENDS
from ._cases_input import _basic_input
from ._catalogue import case
from ._context import Context, Stream, add
from ._report import CaseResult, Exchange, Finding, Verdict

_BODY: Final = 64 * 1024


class _Answer:
    """One request of the case: its exchange, the answer's headers and events' ids."""

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange
        self.headers: Mapping[str, str] = {}
        self.ids: list[str | None] = []

    @property
    def confirmed(self) -> bool:
        return self.headers.get(RESUMABLE_HEADER.lower(), "").strip() == "1"

    def rule_in_body(self) -> str | None:
        try:
            body = orjson.loads(self.exchange.body)
        except orjson.JSONDecodeError:
            return None
        rule = body.get("rule") if isinstance(body, dict) else None
        return rule if isinstance(rule, str) else None


async def _request(
    ctx: Context,
    res: CaseResult,
    label: str,
    method: str,
    url: str,
    *,
    body: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    stop_after: int | None = None,
) -> _Answer:
    """One request, its answer read (an event stream's ids too) — cut after
    ``stop_after`` events, as a client that goes away, or at the probe's stream
    budget. A stream the agent does not confirm as resumable is not read at all:
    the other cases judge the standard binding."""
    exchange = Exchange(label, dict(body) if body is not None else None)
    exchange.raw_request = f"{method} {url}" if body is None else ""
    res.exchanges.append(exchange)
    answer = _Answer(exchange)
    sent = {"Accept": SSE_MEDIA_TYPE, **ctx.probe.headers, **(headers or {})}
    content = orjson.dumps(body) if body is not None else None
    if content is not None:
        sent["Content-Type"] = "application/json"
    reader = SSEReader(event_ids=True)
    try:
        async with asyncio.timeout(ctx.probe.timeout):
            async with ctx.probe.http.stream(method, url, content=content, headers=sent) as resp:
                exchange.status = resp.status_code
                exchange.content_type = resp.headers.get("content-type", "")
                answer.headers = resp.headers
                if not exchange.content_type.startswith(SSE_MEDIA_TYPE):
                    raw = bytearray()
                    async for chunk in resp.aiter_bytes():
                        raw += chunk
                        if len(raw) >= _BODY:
                            break
                    exchange.body = raw[:_BODY].decode("utf-8", "replace")
                    return answer
                if not answer.confirmed:
                    exchange.error = "not a resumable stream: the checker did not read it"
                    return answer
                received = 0
                async for chunk in resp.aiter_raw():
                    exchange.frames += reader.feed_frames(chunk)
                    answer.ids += reader.take_event_ids()
                    received += len(chunk)
                    if stop_after is not None and len(exchange.frames) >= stop_after:
                        exchange.error = f"the checker went away after {stop_after} event(s)"
                        break
                    if received > ctx.probe.max_stream_bytes:
                        exchange.error = (
                            f"the stream exceeded the checker's budget of "
                            f"{ctx.probe.max_stream_bytes:,} bytes; the checker stopped reading"
                        )
                        break
    except (httpx.HTTPError, TimeoutError) as exc:
        exchange.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    finally:
        await ctx.probe.fresh_after(exchange.status, exchange.error)
    return answer


async def _declared(ctx: Context, res: CaseResult) -> bool:
    """Whether ``GET <path>/capabilities`` declares ``transport.resumable: true`` (an
    agent without that endpoint declares nothing: the answer is not kept)."""
    url = ctx.probe.url.split("?", 1)[0].rstrip("/") + "/capabilities"
    answer = await _request(ctx, res, "the capabilities it declares", "GET", url,
                            headers={"Accept": "application/json"})  # fmt: skip
    try:
        body = orjson.loads(answer.exchange.body) if answer.exchange.status == 200 else None
    except orjson.JSONDecodeError:
        body = None
    transport = body.get("transport") if isinstance(body, dict) else None
    if answer.exchange.status != 200 and res.exchanges[-1] is answer.exchange:
        res.exchanges.pop()  # no such endpoint: nothing to show
    return isinstance(transport, dict) and transport.get("resumable") is True


def _events_url(ctx: Context, thread_id: str, run_id: str, tail: str = "events") -> str:
    from urllib.parse import quote

    base = ctx.probe.url.split("?", 1)[0].rstrip("/")
    return f"{base}/threads/{quote(thread_id, safe='')}/runs/{quote(run_id, safe='')}/{tail}"


def _fail(res: CaseResult, rule: str, message: str, answer: _Answer | None = None) -> None:
    at = next(
        (i for i, ex in enumerate(res.exchanges) if answer is not None and ex is answer.exchange),
        None,
    )
    res.findings.append(Finding(Verdict.FAIL, rule, message, at, None))


def _numbered(res: CaseResult, answer: _Answer, run_id: str) -> bool:
    """RESUME-2: every event numbered ``<runId>:1, 2, 3 …``; a fail said otherwise."""
    seq = EventSeq(run_id)
    for frame in seq.admit(list(answer.exchange.frames), answer.ids):
        if isinstance(frame, BrokenFrame):
            _fail(res, "RESUME-2", frame.violation.explanation, answer)
            return False
    return True


def _terminal(frames: list[str]) -> dict[str, Any] | None:
    for frame in reversed(frames):
        try:
            event = orjson.loads(frame)
        except orjson.JSONDecodeError:
            continue
        if isinstance(event, dict) and event.get("type") in RUN_ENDS:
            return event
    return None


@case(
    "transport.resumable",
    "The resumable extension, when the agent confirms it",
    ("RESUME-1", "RESUME-2", "RESUME-3", "RESUME-5", "RESUME-6", "RESUME-7", "RESUME-9"),
    "resumable",
    "Asked with Agui-Resumable: 1, an agent that confirms it numbers every event "
    "id: <runId>:<seq> from 1 without a gap; a rejoin with Last-Event-ID from the middle "
    "replays exactly the rest, with the same ids; a client that goes away does not stop the "
    "run (a rejoin reads it to its end, not cancelled), and a stop of the finished run is 409; "
    "an unknown run is 404 and a malformed Last-Event-ID 400, each with a JSON body naming the "
    "rule. An agent that does not confirm does not offer the extension: not exercised — "
    "unless it declares transport.resumable at GET <path>/capabilities, which it then must "
    "not.",
)
async def _resumable(ctx: Context, res: CaseResult) -> None:
    inp = _basic_input(tools=[])
    thread_id, run_id = str(inp["threadId"]), str(inp["runId"])
    opt_in = {RESUMABLE_HEADER: "1"}
    run = await _request(ctx, res, "a run opting in", "POST", ctx.probe.url, body=inp,
                         headers=opt_in)  # fmt: skip
    declared = await _declared(ctx, res)
    if not run.confirmed and declared:
        _fail(res, "RESUME-9",
              "the agent declares transport.resumable at GET <path>/capabilities, yet answered "
              f"a run opting in without {RESUMABLE_HEADER}: 1; an agent that does not serve "
              "the extension must not declare it.", run)  # fmt: skip
        return
    if not run.confirmed:
        add(
            res,
            Verdict.NOT_EXERCISED,
            "RESUME-1",
            f"the agent answered {run.exchange.status} without {RESUMABLE_HEADER}: 1 — it does "
            "not offer the resumable extension (an opt-in extension, docs/resumable.md).",
        )
        return
    ctx.streams.append(Stream(inp, run.exchange, None, resumable=True))  # shown: a capability
    frames = run.exchange.frames
    if not frames:
        _fail(res, "RESUME-2", "the opted-in run delivered no event.", run)
        return
    if not _numbered(res, run, run_id):
        return
    middle = max(1, len(frames) // 2)
    replay = await _request(
        ctx, res, f"a rejoin after seq {middle}", "GET", _events_url(ctx, thread_id, run_id),
        headers={**opt_in, "Last-Event-ID": f"{run_id}:{middle}"},
    )  # fmt: skip
    want_ids = [f"{run_id}:{n}" for n in range(middle + 1, len(frames) + 1)]
    if replay.exchange.status != 200 or not replay.confirmed:
        _fail(res, "RESUME-5",
            f"a rejoin after seq {middle} was answered {replay.exchange.status} "
            f"{replay.exchange.error or replay.exchange.body[:200]!r}; expected 200, "
            f"{RESUMABLE_HEADER}: 1 and the run's events after seq {middle}.", replay)  # fmt: skip
    elif replay.exchange.frames != frames[middle:] or replay.ids != want_ids:
        _fail(res, "RESUME-5",
            f"a rejoin after seq {middle} replayed {len(replay.exchange.frames)} event(s) "
            f"(ids {replay.ids[:3]}…), not the {len(want_ids)} event(s) after it with ids "
            f"{want_ids[:3]}…: the log must give back exactly what was sent.", replay)  # fmt: skip
    await _disconnect_is_no_stop(ctx, res, opt_in)
    await _refusals(ctx, res, thread_id, run_id, opt_in)
    if not res.findings:
        res.observed = (
            f"{len(frames)} events numbered {run_id}:1…{len(frames)}; a rejoin after seq "
            f"{middle} replayed the rest; a disconnect did not stop the run; 404, 400 and 409 "
            "answered as the binding says"
        )


async def _disconnect_is_no_stop(ctx: Context, res: CaseResult, opt_in: dict[str, str]) -> None:
    inp = _basic_input(tools=[])
    thread_id, run_id = str(inp["threadId"]), str(inp["runId"])
    await _request(ctx, res, "a run opting in, which the checker leaves after one event",
                   "POST", ctx.probe.url, body=inp, headers=opt_in, stop_after=1)  # fmt: skip
    rest = await _request(
        ctx, res, "its rejoin, after seq 1", "GET", _events_url(ctx, thread_id, run_id),
        headers={**opt_in, "Last-Event-ID": f"{run_id}:1"},
    )  # fmt: skip
    end = _terminal(rest.exchange.frames)
    if rest.exchange.status != 200 or end is None:
        _fail(res, "RESUME-3",
            f"after the checker went away, the rejoin was answered {rest.exchange.status} with "
            f"{len(rest.exchange.frames)} event(s) and no terminal event "
            f"({rest.exchange.error or 'the stream ended'}); a detached run runs to its end "
            "in the log.", rest)  # fmt: skip
        return
    outcome = end.get("outcome")
    if isinstance(outcome, dict) and outcome.get("type") == "cancelled":
        _fail(res, "RESUME-3",
            "the run the checker went away from ended cancelled: a disconnect is never a "
            "stop.", rest)  # fmt: skip
    stop = await _request(ctx, res, "a stop of that finished run", "POST",
                          _events_url(ctx, thread_id, run_id, "stop"), body={})  # fmt: skip
    if stop.exchange.status != 409:
        _fail(res, "RESUME-6",
            f"a stop of a finished run was answered {stop.exchange.status}; expected 409 "
            '{"status": "finished"}.', stop)  # fmt: skip


async def _refusals(
    ctx: Context, res: CaseResult, thread_id: str, run_id: str, opt_in: dict[str, str]
) -> None:
    unknown = f"agui-check-unknown-{uuid.uuid4().hex[:8]}"
    for label, url, headers, status in (
        ("a rejoin of an unknown run", _events_url(ctx, thread_id, unknown), opt_in, 404),
        ("a rejoin with a malformed Last-Event-ID", _events_url(ctx, thread_id, run_id),
         {**opt_in, "Last-Event-ID": "not an id"}, 400),
    ):  # fmt: skip
        answer = await _request(ctx, res, label, "GET", url, headers=headers)
        if answer.exchange.status != status or answer.rule_in_body() is None:
            _fail(res, "RESUME-7",
                f"{label} was answered {answer.exchange.status} "
                f"{answer.exchange.body[:200]!r}; expected {status} with a JSON body "
                '{"error", "rule", "runId", "threadId"}, never a stream or a 5xx.',
                answer)  # fmt: skip
