"""agui-tools: the AG-UI protocol's tool-call machinery, both sides of the wire.

The data flows one way, one module per stage::

    framing (SSE/NDJSON bytes) → codec (decode) → compat (retired shapes)
    → enforce (strip unknown, malformed is fatal) → expand (chunk lanes)
    → verify (sequence rules) → reduce (thread) → application (dispose)

See ``docs/architecture.md`` for the picture.
"""

from __future__ import annotations

from .codec import (
    Decoded,
    DecodedInput,
    Decoder,
    decode_event,
    decode_run_input,
    encode_event,
    from_model,
    to_model,
)
from .compat import CompatibilityBoundary
from .enforce import Enforcer
from .errors import (
    AguiError,
    InputRejected,
    LimitExceeded,
    ProtocolViolation,
    ProtocolWarning,
    UsageError,
)
from .framing import NDJSONReader, SSEReader, ndjson_frame, sse_comment, sse_frame
from .version import PROTOCOL_VERSION, __version__

__all__ = [
    "PROTOCOL_VERSION",
    "AguiError",
    "CompatibilityBoundary",
    "Decoded",
    "DecodedInput",
    "Decoder",
    "Enforcer",
    "InputRejected",
    "LimitExceeded",
    "NDJSONReader",
    "ProtocolViolation",
    "ProtocolWarning",
    "SSEReader",
    "UsageError",
    "__version__",
    "decode_event",
    "decode_run_input",
    "encode_event",
    "from_model",
    "ndjson_frame",
    "sse_comment",
    "sse_frame",
    "to_model",
]
