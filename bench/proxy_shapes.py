"""Where ``agui-tools proxy``'s "≥ 80 % of direct" holds and where it does not.

    python -m bench.proxy_shapes            # ≤ 2 minutes, prints a markdown table

bench/proxy.py measures one shape: a 50,000-event burst from ``bench/servers.py``,
timed to its last byte and to the same thread's next input (the burst judged).
This script measures other shapes through the same
proxy (``python -m agui_tools proxy UPSTREAM``, the default mode, judging every
event), direct and proxied **interleaved** (A B B A …) in one run, several repeats
each, and reports for each shape:

* the ratio of the medians (proxied events/s ÷ direct events/s, timed to the last
  byte — bench/proxy.py's measure) and of the best runs;
* **with its verdict**: the same rate, the time counted until the same thread's
  next input has its first byte (direct: the same); the proxy judges inline, so
  its verdict is in when the body ends;
* the load average before and after (the machine has 2 cores, shared).

The agent here (``--agent PORT``) is a plain Starlette endpoint that sends
pre-encoded frames as fast as uvicorn takes them, so the agent's own cost per
event is small: shapes where the proxy's share shows. The claim's own shape
(``bench/servers.py ours``, the Run API) is the first row, for comparison.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from agui_tools.testing import free_port
from agui_tools.wire._framing import SSEReader
from agui_tools.wire._proto_codec import encode_proto_event
from agui_tools.wire._proto_framing import ProtoReader, proto_frame

from .proxy import Proxy
from .transport import ROOT, Server

PROTO = "application/vnd.ag-ui.event+proto"
SSE = "text/event-stream"


# ---------------------------------------------------------------- the agent process


def _events(tid: str, rid: str, n: int, size: int) -> list[dict[str, Any]]:
    mid = f"m-{rid}"
    delta = "t" * size
    return [
        {"type": "RUN_STARTED", "threadId": tid, "runId": rid},
        {"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"},
        *({"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": delta} for _ in range(n)),
        {"type": "TEXT_MESSAGE_END", "messageId": mid},
        {"type": "RUN_FINISHED", "threadId": tid, "runId": rid},
    ]


def agent_app() -> Any:
    """POST /agent: ``forwardedProps`` = {n, size (delta bytes), per (events a chunk),
    gzip}; ``Accept`` picks SSE or protobuf. The frames are encoded before the first
    byte is sent, so the agent's cost while streaming is the socket's."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    async def endpoint(request: Request) -> Response:
        body = orjson.loads(await request.body())
        p = body.get("forwardedProps") or {}
        proto = PROTO in request.headers.get("accept", "")
        events = _events(
            body["threadId"], body["runId"], int(p.get("n", 10)), int(p.get("size", 4))
        )
        if proto:
            frames = [proto_frame(encode_proto_event(e)) for e in events]
        else:
            frames = [b"data: " + orjson.dumps(e) + b"\n\n" for e in events]
        per = int(p.get("per", 1))
        chunks = [b"".join(frames[i : i + per]) for i in range(0, len(frames), per)]
        headers = {}
        if p.get("gzip"):  # one gzip member, flushed at each chunk (as a streaming gzip does)
            z = zlib.compressobj(6, zlib.DEFLATED, 31)
            chunks = [z.compress(c) + z.flush(zlib.Z_SYNC_FLUSH) for c in chunks]
            chunks[-1] += z.flush()
            headers["content-encoding"] = "gzip"

        async def gen() -> AsyncIterator[bytes]:
            for c in chunks:
                yield c

        return StreamingResponse(gen(), media_type=PROTO if proto else SSE, headers=headers)

    return Starlette(routes=[Route("/agent", endpoint, methods=["POST"])])


def serve_agent(port: int) -> None:
    import uvicorn

    uvicorn.run(agent_app(), host="127.0.0.1", port=port, log_level="warning", lifespan="off")


class LoggedProxy(Proxy):
    """bench/proxy.py's ``Proxy`` with its stderr kept in a file (a 502 says why)."""

    def __init__(self, upstream: str, *extra: str) -> None:
        import subprocess
        import tempfile

        port = free_port()
        self.stderr = tempfile.NamedTemporaryFile("w+", suffix=".proxy.err")  # noqa: SIM115
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agui_tools", "proxy", upstream, "--port", str(port), *extra],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("Proxying"):
            raise RuntimeError(f"the proxy did not start: {line!r}")
        self.url = f"http://127.0.0.1:{port}/"

    def said(self) -> list[str]:
        self.stderr.seek(0)
        return self.stderr.read().splitlines()


class Agent(Server):
    """This module's agent as its own process (``Server``'s start-up and stop)."""

    def __init__(self) -> None:
        super().__init__("--agent", module="bench.proxy_shapes")


# ---------------------------------------------------------------- the client


def _input(tid: str, rid: str, props: dict[str, Any], history: list[dict[str, Any]]) -> bytes:
    return orjson.dumps(
        {
            "threadId": tid,
            "runId": rid,
            "messages": history,
            "forwardedProps": props,
            "protocolVersion": "1.1",
        }
    )


async def _stream(
    client: httpx.AsyncClient,
    url: str,
    tid: str,
    rid: str,
    props: dict[str, Any],
    *,
    proto: bool = False,
    history: list[dict[str, Any]] | None = None,
    first_byte: bool = False,
) -> int:
    """Frames received (the client's cost: framing only, gunzipped when it came so);
    with ``first_byte``, stop at the first byte."""
    reader: SSEReader | ProtoReader = ProtoReader() if proto else SSEReader()
    unzip: Any = None
    frames = 0
    async with client.stream(
        "POST",
        url,
        content=_input(tid, rid, props, history or []),
        headers={"Content-Type": "application/json", "Accept": PROTO if proto else SSE},
    ) as r:
        r.raise_for_status()
        if r.headers.get("content-encoding") == "gzip":
            unzip = zlib.decompressobj(31)
        async for chunk in r.aiter_raw():
            if first_byte:
                return 1
            frames += len(reader.feed_frames(unzip.decompress(chunk) if unzip else chunk))
    return frames


def _assistant(rid: str, n: int, size: int) -> dict[str, Any]:
    """The run's answer as the frontend sends it back (its text capped at 200 KB: the ids
    are what the proxy checks the history by)."""
    return {"id": f"m-{rid}", "role": "assistant", "content": "t" * min(n * size, 200_000)}


@dataclass
class Shape:
    name: str
    props: dict[str, Any] = field(default_factory=dict)
    proto: bool = False
    concurrent: int = 1
    sequential: int = 1  # bursts one after another (each on its own thread), then the verdicts
    repeats: int = 4
    unit: str = "events"  # or "MB"
    realistic: str = ""


@dataclass
class Row:
    rates: dict[str, list[float]] = field(default_factory=lambda: {"direct": [], "proxy": []})
    judged: dict[str, list[float]] = field(default_factory=lambda: {"direct": [], "proxy": []})
    waits: dict[str, list[float]] = field(default_factory=lambda: {"direct": [], "proxy": []})
    errors: list[str] = field(default_factory=list)


_seq = 0


def _rid(prefix: str) -> str:
    global _seq
    _seq += 1
    return f"{prefix}{_seq}"


async def _one(
    client: httpx.AsyncClient, url: str, shape: Shape, path: str
) -> tuple[float, float, float]:
    """(amount/s to the last byte, amount/s to the verdict, next input's wait in ms)."""
    n, size = int(shape.props.get("n", 10)), int(shape.props.get("size", 4))
    tids: list[str] = []
    rids: list[str] = []
    got: list[int] = []
    t0 = time.perf_counter()
    for _ in range(shape.sequential):
        batch = [(_rid(f"{path}-t"), _rid("r")) for _ in range(shape.concurrent)]
        tids += [t for t, _ in batch]
        rids += [r for _, r in batch]
        got += await asyncio.gather(
            *(_stream(client, url, t, r, shape.props, proto=shape.proto) for t, r in batch)
        )
    t1 = time.perf_counter()
    # the same threads' next inputs, at once: each waits for its thread's verdict
    await asyncio.gather(
        *(
            _stream(
                client,
                url,
                t,
                _rid("n"),
                {"n": 1},
                history=[_assistant(r, n, size)],
                first_byte=True,
            )
            for t, r in zip(tids, rids, strict=True)
        )
    )
    t2 = time.perf_counter()
    amount = sum(got) if shape.unit == "events" else sum(got) * size / 1e6
    return amount / (t1 - t0), amount / (t2 - t0), (t2 - t1) * 1000


async def _long_thread(urls: dict[str, str], runs: int, tail: int) -> tuple[Row, Row]:
    """One thread per path whose history grows by two messages a run (a user turn, the
    assistant's answer), ``runs`` runs of 20 events, the paths alternating run by run;
    the rate is runs/s over the last ``tail`` runs (each run timed to its last byte,
    the next input sent at once: what a chat with a long history does)."""
    row = Row()
    hist: dict[str, list[dict[str, Any]]] = {p: [] for p in urls}
    times: dict[str, list[float]] = {p: [] for p in urls}
    async with httpx.AsyncClient(timeout=120) as client:
        for i in range(runs):
            for path in ("direct", "proxy") if i % 2 == 0 else ("proxy", "direct"):
                rid = _rid("lr")
                h = hist[path]
                h.append({"id": f"u-{rid}", "role": "user", "content": f"turn {i}: " + "x" * 200})
                t0 = time.perf_counter()
                await _stream(
                    client, urls[path], f"long-{path}", rid, {"n": 20, "size": 30}, history=h
                )
                times[path].append(time.perf_counter() - t0)
                h.append(_assistant(rid, 20, 30))
    first = Row()
    for r, part in ((first, slice(0, tail)), (row, slice(-tail, None))):
        for path in urls:
            r.rates[path] = [1 / s for s in times[path][part]]
            r.judged[path] = r.rates[path]
            r.waits[path] = [0.0]
    return first, row


def _median_ratio(row: Row, which: str = "rates") -> float:
    d = getattr(row, which)
    return statistics.median(d["proxy"]) / statistics.median(d["direct"])


SHAPES = [
    Shape("50,000 text deltas, 100 events a chunk", {"n": 50_000, "per": 100}, repeats=6,
          realistic="no model: a replay or a buffered agent flushing late"),
    Shape("20,000 deltas, one event a chunk, full speed", {"n": 20_000, "per": 1}, repeats=6,
          realistic="a model's framing, 100× a model's speed"),
    Shape("60 deltas of 100 KB, one a chunk", {"n": 60, "size": 100_000, "per": 1},
          unit="MB", repeats=6, realistic="a large tool result / document streamed whole"),
    Shape("50,000 deltas, protobuf binding, 100 a chunk", {"n": 50_000, "per": 100}, proto=True,
          repeats=4, realistic="as the first row, binary binding"),
    Shape("50,000 deltas, gzip from the agent, 100 a chunk", {"n": 50_000, "per": 100, "gzip": 1},
          repeats=4, realistic="an agent behind a compressing CDN/middleware"),
    Shape("16 concurrent bursts × 5,000 deltas, 10 a chunk", {"n": 5_000, "per": 10},
          concurrent=16, repeats=4, realistic="16 users at once, each at 100× model speed"),
    Shape("12 bursts of 50,000 back to back (42 MB: past the 32 MiB kept), 100 a chunk", {"n": 50_000, "per": 100},
          sequential=12, repeats=2, realistic="a test suite / replays run after run"),
]  # fmt: skip


def results(shapes: list[Shape] = SHAPES, long_runs: int = 200) -> dict[str, Row]:
    agent, ours = Agent(), Server("ours")
    proxies = {"agent": LoggedProxy(agent.url), "ours": LoggedProxy(ours.url)}
    out: dict[str, Row] = {}
    try:

        async def main() -> None:
            async with httpx.AsyncClient(
                timeout=300, limits=httpx.Limits(max_connections=64)
            ) as client:
                # the claim's own shape: bench/servers.py's Run-API burst, 50,000 events
                claim = Shape(
                    "claim's shape: bench/servers.py burst, 25,000 + 25,000",
                    {"mode": "burst", "n": 25_000},
                    repeats=6,
                )
                urls_claim = {"direct": ours.url, "proxy": proxies["ours"].url}
                urls = {"direct": agent.url, "proxy": proxies["agent"].url}
                for shape, u in [(claim, urls_claim), *((s, urls) for s in shapes)]:
                    row = Row()
                    for p in ("direct", "proxy"):  # warm-up, both paths
                        await _one(
                            client, u[p], Shape("w", {**shape.props, "n": 200}, shape.proto), p
                        )
                    for i in range(shape.repeats):
                        for p in ("direct", "proxy") if i % 2 == 0 else ("proxy", "direct"):
                            try:
                                rate, judged, wait = await _one(client, u[p], shape, p)
                            except httpx.HTTPError as exc:  # said in the report, not hidden
                                row.errors.append(f"{p}: {exc!r}")
                                continue
                            row.rates[p].append(rate)
                            row.judged[p].append(judged)
                            row.waits[p].append(wait)
                    out[shape.name] = row
                    out[shape.name].__dict__["shape"] = shape
            early, late = await _long_thread(urls, long_runs, 20)
            early.__dict__["shape"] = Shape(
                "one thread, its first 20 runs (20 events each; the control for the next row)",
                unit="runs",
                realistic="a chat: yes",
            )
            late.__dict__["shape"] = Shape(
                f"the same thread, runs {long_runs - 19}–{long_runs} (history +2 messages a run)",
                unit="runs",
                realistic="a long chat: yes",
            )
            for r in (early, late):
                out[r.__dict__["shape"].name] = r

        asyncio.run(main())
    finally:
        for p in proxies.values():
            p.stop()
            said = p.said()
            if any(row.errors for row in out.values()):
                print("\n".join(said[-12:]), file=sys.stderr)
        agent.stop()
        ours.stop()
    return out


def report() -> str:
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    rows = results()
    took = time.perf_counter() - t0
    load_after = os.getloadavg()
    lines = [
        "### `agui-tools proxy` by stream shape: direct and proxied, interleaved",
        "",
        "| shape | unit/s direct (median) | proxied (median) | vs direct, median | best vs best "
        "| with its verdict, median | next input waits (ms, median) | a model's stream? |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, row in rows.items():
        shape: Shape = row.__dict__["shape"]
        d, p = statistics.median(row.rates["direct"]), statistics.median(row.rates["proxy"])
        best = max(row.rates["proxy"]) / max(row.rates["direct"])
        lines.append(
            f"| {name} | {d:,.1f} {shape.unit} | {p:,.1f} | {p / d:.0%} | {best:.0%} | "
            f"{_median_ratio(row, 'judged'):.0%} | {statistics.median(row.waits['proxy']):,.0f} "
            f"(direct {statistics.median(row.waits['direct']):,.0f}) | {shape.realistic} |"
        )
        if row.errors:
            lines.append(
                f"| ↳ {len(row.errors)} failed run(s) | {'; '.join(row.errors[:3])} |||||||"
            )
    lines += [
        "",
        "* each shape: a warm-up of each path, then `repeats` runs a path, the paths "
        "interleaved (A B B A …); one client (httpx, framing only), one proxy process per "
        "agent (`python -m agui_tools proxy UPSTREAM`, the default mode);",
        "* *vs direct, median*: bench/proxy.py's measure (events/s to the last byte); "
        "*with its verdict*: counted until the same thread's next input has its first byte, "
        "i.e. until the proxy has judged the stream — the rate at which it judges;",
        "* the long thread: runs/s over the last 20 runs, the next input sent at once "
        "(each input judged against the thread's last run);",
        f"* load average (1, 5, 15 min) {load_before[0]:.2f} {load_before[1]:.2f} "
        f"{load_before[2]:.2f} before, {load_after[0]:.2f} {load_after[1]:.2f} "
        f"{load_after[2]:.2f} after, on {os.cpu_count()} cores; {took:.0f} s.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--agent"]:
        serve_agent(int(argv[1]))
        return
    print(report())


_: Callable[[list[str]], None] = main

if __name__ == "__main__":  # python -m bench.proxy_shapes
    main(sys.argv[1:])
