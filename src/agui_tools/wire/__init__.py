"""The wire core: the sans-I/O protocol machinery both sides share.

The stages, in the order a consumer's bytes flow through them (each a private
module; the pipeline runs them all)::

    _framing   SSE / NDJSON frames out of bytes, and frames out of events
    _codec     JSON text → wire dict (exact: no duplicate names, no rounding);
               the official typed models built on demand (to_model / from_model)
    _upgrade   retired 0.x shapes translated at the boundary (VER-4)
    _enforce   strip unknown members, malformed known values are fatal (PROC-*),
               walking the tree _schema compiles from _data/schema.json
    _expand    chunk lanes → START / CONTENT / END
    _verify    the sequence rules (STREAM, TOOL, RUN, SUB, INT …) and Limits
    _pipeline  all of the above, in order: ConsumerPipeline

and beside them, read by the stages on both sides of the wire::

    _kinds     WireEvent, the schema's event types, the item-kinds table (ids,
               triads, chunks, nouns, rule IDs), one handler name per event type
"""

from __future__ import annotations

from ._codec import (
    Decoded,
    Decoder,
    decode_event,
    decode_run_input,
    encode_event,
    from_model,
    parse_json,
    to_model,
)
from ._enforce import Enforcer
from ._framing import NDJSONReader, SSEReader, ndjson_frame, sse_comment, sse_frame
from ._kinds import WireEvent
from ._pipeline import ConsumerPipeline, Middleware, StreamResult
from ._upgrade import CompatibilityBoundary
from ._verify import Limits, RunStatus, RunSummary, Verifier

__all__ = [
    "CompatibilityBoundary",
    "ConsumerPipeline",
    "Decoded",
    "Decoder",
    "Enforcer",
    "Limits",
    "Middleware",
    "NDJSONReader",
    "RunStatus",
    "RunSummary",
    "SSEReader",
    "StreamResult",
    "Verifier",
    "WireEvent",
    "decode_event",
    "decode_run_input",
    "encode_event",
    "from_model",
    "ndjson_frame",
    "parse_json",
    "sse_comment",
    "sse_frame",
    "to_model",
]
