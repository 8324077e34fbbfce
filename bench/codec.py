"""Decode and encode throughput, side by side with the official Python package.

* decode: bytes of one event → an enforced event. Ours runs the compatibility
  boundary and enforcement; the official ``TypeAdapter(Event).validate_json``
  builds typed models with no enforcement at all (it keeps unknown fields and
  coerces). Ours is measured twice: to the enforced wire dict the pipeline
  consumes, and on to the official typed model (``decode_event``).
* encode: typed model → SSE frame bytes. Ours: ``sse_frame(encode_event(m))``;
  official: ``ag_ui.encoder.EventEncoder().encode(m)``.
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import Event
from ag_ui.encoder import EventEncoder
from pydantic import TypeAdapter

from agui_tools.wire import Decoder, Enforcer, decode_event, encode_event, sse_frame

from .harness import Result, measure


def decode_results(lines: list[bytes]) -> list[Result]:
    adapter = TypeAdapter(Event)
    enforcer = Enforcer()

    def official() -> None:
        validate = adapter.validate_json
        for line in lines:
            validate(line)

    def ours_wire() -> None:
        decode = Decoder(enforcer).decode
        for i, line in enumerate(lines):
            decode(line, i)

    def ours_typed() -> None:
        decoder = Decoder(enforcer)
        for i, line in enumerate(lines):
            _ = decode_event(line, index=i, decoder=decoder).event

    n = len(lines)
    return [
        measure("official TypeAdapter(Event).validate_json (no enforcement)", n, official),
        measure("agui-tools decode → enforced wire dict", n, ours_wire),
        measure("agui-tools decode_event → enforced typed model", n, ours_typed),
    ]


def encode_results(events: list[dict[str, Any]]) -> list[Result]:
    adapter = TypeAdapter(Event)
    models = [adapter.validate_python(e) for e in events]
    encoder = EventEncoder()

    def official() -> None:
        enc = encoder.encode
        for m in models:
            enc(m)

    def ours() -> None:
        for m in models:
            sse_frame(encode_event(m))

    n = len(models)
    return [
        measure("official EventEncoder().encode (SSE str)", n, official),
        measure("agui-tools sse_frame(encode_event(m)) (SSE bytes)", n, ours),
    ]


def gzip_results(lines: list[bytes], chunk: int) -> list[Result]:
    """A gzip'd SSE stream undone, received ``chunk`` compressed bytes at a time.
    Baseline: one bare ``zlib.decompressobj`` (no bound, nothing decoded before an
    error kept); ours: the client's and the proxy's ``_Decoding`` — bounded steps,
    every member, and a copy of its state before each step so that the bytes before
    an error are kept."""
    import zlib

    from agui_tools.transport._client import _Decoding

    body = b"".join(sse_frame(line) for line in lines)
    packer = zlib.compressobj(wbits=31)
    packed = packer.compress(body) + packer.flush()
    chunks = [packed[i : i + chunk] for i in range(0, len(packed), chunk)]

    def bare() -> None:
        inflater = zlib.decompressobj(31)
        for piece in chunks:
            inflater.decompress(piece)

    def ours() -> None:
        decoding = _Decoding("gzip")
        for piece in chunks:
            for _ in decoding.feed(piece):
                pass

    return [
        measure(f"zlib.decompressobj, {chunk} B chunks", len(lines), bare),
        measure(
            f"_Decoding (bounded, every member, kept to an error), {chunk} B chunks",
            len(lines),
            ours,
        ),
    ]
