"""The binary binding (HTTP + protobuf) beside SSE, and beside the official ``@ag-ui/proto``.

Three tables, on the shared corpus (``bench/corpus.py``):

* codec — encode (event → framed bytes) and decode (framed body → events) per
  binding, ours and the official TypeScript ``@ag-ui/proto`` 1.0.0 in Node
  (``interop/ts/proto.mjs bench``), with the bytes each wire takes;
* decode + pipeline — a whole body through our reader and ``ConsumerPipeline``,
  SSE vs protobuf (the goal: the binary path at least as fast per event);
* transport — one server process (``agent_app``) streaming to one client, the
  same run negotiated as SSE and as protobuf, events/s and bytes received;
* codec choice — the library path (upb + generated code, what ships) against a
  hand-written pure-Python codec over the same descriptor tables
  (``bench/proto_handwritten.py``), the measurement the design decision rests on.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

from agui_tools.wire._codec import encode_json
from agui_tools.wire._framing import PROTO_MEDIA_TYPE, SSEReader, sse_frame
from agui_tools.wire._pipeline import ConsumerPipeline
from agui_tools.wire._proto_codec import _shape, encode_proto_event
from agui_tools.wire._proto_framing import ProtoReader, proto_frame

from . import peers
from .harness import Result, measure
from .transport import Server, _body


def _sse_body(events: list[dict[str, Any]]) -> bytes:
    return b"".join(sse_frame(encode_json(e)) for e in events)


def _proto_body(events: list[dict[str, Any]]) -> bytes:
    return b"".join(proto_frame(encode_proto_event(e)) for e in events)


def codec_results(events: list[dict[str, Any]]) -> tuple[list[Result], dict[str, int]]:
    n = len(events)
    sse, binary = _sse_body(events), _proto_body(events)
    rows = [
        measure("agui-tools SSE encode (encode_json + sse_frame)", n, lambda: _sse_body(events)),
        measure(
            "agui-tools protobuf encode (encode_proto_event + proto_frame)",
            n,
            lambda: _proto_body(events),
        ),
        measure(
            "agui-tools SSE decode (SSEReader + orjson.loads)",
            n,
            lambda: [orjson.loads(f) for f in SSEReader().feed(sse)],
        ),
        measure("agui-tools protobuf decode (ProtoReader)", n, lambda: ProtoReader().feed(binary)),
    ]
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(events, f)
        out = peers.run_node("proto.mjs", Path(f.name), "bench", "5", timeout=900)
        rows.append(Result("official @ag-ui/proto encode (Node)", out["events"], out["encode_s"]))
        rows.append(Result("official @ag-ui/proto decode (Node)", out["events"], out["decode_s"]))
        official_bytes = out["bytes"]
    except peers.PeerUnavailable as exc:
        rows.append(peers.skipped("official @ag-ui/proto encode/decode (Node)", str(exc)))
        official_bytes = -1
    sizes = {"sse": len(sse), "proto": len(binary), "official": official_bytes}
    return rows, sizes


def pipeline_results(events: list[dict[str, Any]]) -> list[Result]:
    n = len(events)
    sse, binary = _sse_body(events), _proto_body(events)

    def sse_path() -> None:
        pipe = ConsumerPipeline()
        pipe.feed_many(SSEReader().feed_frames(sse))
        pipe.close()

    def proto_path() -> None:
        pipe = ConsumerPipeline()
        pipe.feed_many(ProtoReader().feed_frames(binary))
        pipe.close()

    return [
        measure("SSE body → SSEReader → ConsumerPipeline", n, sse_path),
        measure("protobuf body → ProtoReader → ConsumerPipeline", n, proto_path),
    ]


async def _consume(
    client: httpx.AsyncClient, url: str, n: int, run: str, binary: bool
) -> tuple[int, int]:
    reader: Any = ProtoReader() if binary else SSEReader()
    frames = received = 0
    accept = f"{PROTO_MEDIA_TYPE}, text/event-stream" if binary else "text/event-stream"
    async with client.stream(
        "POST",
        url,
        content=_body(run, {"mode": "burst", "n": n}),
        headers={"Content-Type": "application/json", "Accept": accept},
    ) as r:
        r.raise_for_status()
        assert (r.headers["content-type"] == PROTO_MEDIA_TYPE) is binary
        async for chunk in r.aiter_raw():
            received += len(chunk)
            frames += len(reader.feed(chunk))
    return frames, received


def transport_results(n: int = 25_000, repeats: int = 3) -> list[tuple[Result, int]]:
    out = []
    server = Server("ours")
    try:
        for binary in (False, True):

            async def run_all(binary: bool = binary) -> tuple[int, float, int]:
                async with httpx.AsyncClient(timeout=120) as client:
                    await _consume(client, server.url, 500, "warmup", binary)
                    best, frames, size = float("inf"), 0, 0
                    for i in range(repeats):
                        t0 = time.perf_counter()
                        frames, size = await _consume(client, server.url, n, f"r{i}", binary)
                        best = min(best, time.perf_counter() - t0)
                    return frames, best, size

            frames, seconds, size = asyncio.run(run_all())
            name = (
                "protobuf (application/vnd.ag-ui.event+proto)"
                if binary
                else "SSE (text/event-stream)"
            )
            out.append((Result(name, frames, seconds), size))
    finally:
        server.stop()
    return out


def choice_results(events: list[dict[str, Any]]) -> list[Result]:
    """The codec on the shaped messages (the mapping to and from event dicts is shared):
    upb through the generated code vs hand-written varint code over the same tables."""
    from agui_tools.wire import _proto_events_pb2 as pb
    from agui_tools.wire._proto_codec import _READERS, _WRITERS

    from . import proto_handwritten as hand

    shaped = [_shape(e, None) for e in events]
    blobs = [encode_proto_event(e) for e in events]
    assert all(hand.encode(arm, s) == b for (arm, s), b in zip(shaped, blobs, strict=True))

    def upb_encode() -> None:
        for arm, s in shaped:
            envelope = pb.Event()
            _WRITERS[arm](getattr(envelope, arm), s)
            envelope.SerializeToString()

    def upb_decode() -> None:
        for b in blobs:
            envelope = pb.Event.FromString(b)
            arm = envelope.WhichOneof("event")
            _READERS[arm](getattr(envelope, arm))

    n = len(events)
    return [
        measure("upb + generated code (shipped): encode", n, upb_encode),
        measure(
            "hand-written pure Python: encode", n, lambda: [hand.encode(a, s) for a, s in shaped]
        ),
        measure("upb + generated code (shipped): decode", n, upb_decode),
        measure("hand-written pure Python: decode", n, lambda: [hand.decode(b) for b in blobs]),
    ]


def _rows(results: list[Result], base: Result) -> list[list[str]]:
    return [
        [
            f"{r.name} ({r.reason})" if isinstance(r, peers.Skipped) else r.name,
            peers.rate(r),
            peers.micros(r),
            peers.ratio(r, base),
        ]
        for r in results
    ]


def report(events: list[dict[str, Any]]) -> str:
    codec, sizes = codec_results(events)
    header = ["", "events/s", "µs/event", "vs first row"]
    out = [
        peers.markdown(
            "Binary binding: codec, SSE vs protobuf, ours vs official",
            header,
            _rows(codec, codec[0]),
            "lrrr",
        ),
        f"* bytes on the wire for the {len(events):,} events: SSE {sizes['sse']:,}, protobuf "
        f"{sizes['proto']:,} ({sizes['proto'] / sizes['sse']:.2f}× of SSE)"
        + (
            f"; the official encoder's frames {sizes['official']:,}"
            if sizes["official"] >= 0
            else ""
        )
        + ".",
        "",
    ]
    pipeline = pipeline_results(events)
    out += [
        peers.markdown(
            "Binary binding: decode + consumer pipeline",
            header,
            _rows(pipeline, pipeline[0]),
            "lrrr",
        ),
        "* the whole body read and judged (enforcement, chunk expansion, verification), a fresh pipeline per repeat.",
        "",
    ]
    transport = transport_results()
    base = transport[0][0]
    rows = [
        [r.name, peers.rate(r), f"{size:,}", f"{size / r.events:.1f}", peers.ratio(r, base)]
        for r, size in transport
    ]
    out += [
        peers.markdown(
            "Binary binding: one server process → one client",
            ["binding", "events/s", "bytes received", "bytes/event", "vs SSE"],
            rows,
            "lrrrr",
        ),
        "* agent_app + Run API (verification on) streaming one run of text and argument deltas; "
        "the client reads with httpx and our reader for the negotiated binding; best of 3.",
        "",
    ]
    choice = choice_results(events[:20_000])
    out += [
        peers.markdown(
            "Binary binding: why the library (codec only, shaped messages)",
            header,
            _rows(choice, choice[0]),
            "lrrr",
        ),
        "* the same descriptor tables drive both; the bytes are asserted equal before timing.",
        "",
    ]
    return "\n".join(out)
