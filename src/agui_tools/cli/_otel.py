"""``--otel``: the command's traces out, through the OpenTelemetry SDK.

With ``--otel`` or ``OTEL_TRACES_EXPORTER``, the global provider is set first and the
library's redacted spans go to ``console`` (stderr; the default with ``--otel``) or
``otlp`` (reads ``OTEL_EXPORTER_OTLP_*``); ``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SDK_DISABLED`` apply. Without the SDK, ``--otel``
is refused in one line.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
from typing import Any, Final

__all__ = ["OTEL_COMMANDS", "OtelUnavailable", "add_otel", "configure"]

OTEL_COMMANDS: Final = ("run", "chat", "serve", "proxy", "check", "inspect")
_EXPORTERS: Final = ("console", "otlp", "none")


class OtelUnavailable(Exception):
    """Why ``--otel`` cannot be honoured (one line)."""


def add_otel(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--otel",
        action="store_true",
        help="export this command's traces: JSON spans on stderr, or to the exporter "
        "OTEL_TRACES_EXPORTER names (needs opentelemetry-sdk; docs/observability.md)",
    )


def configure(command: str, flag: bool) -> Any:
    """The provider set for ``command`` (``None``: tracing not asked for). Raises
    :class:`OtelUnavailable` when it was asked for and cannot be set up."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    asked = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if not flag and asked in ("", "none"):
        return None
    exporter_name = (asked or "console").split(",")[0].strip()
    if exporter_name not in _EXPORTERS:
        raise OtelUnavailable(
            f"OTEL_TRACES_EXPORTER={exporter_name!r}: use one of {', '.join(_EXPORTERS)}"
        )
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SimpleSpanProcessor,
        )
    except ImportError:
        raise OtelUnavailable(
            "traces need the OpenTelemetry SDK: pip install 'agui-tools[otel]' opentelemetry-sdk"
        ) from None
    named = os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    ours = {} if named else {"service.name": f"agui-tools {command}"}
    provider = TracerProvider(resource=Resource.create(ours))
    if exporter_name == "console":
        # each span as it ends, on stderr: stdout is the command's (a run's --json)
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    elif exporter_name == "otlp":
        try:  # an optional package of its own: looked up by name
            otlp = importlib.import_module("opentelemetry.exporter.otlp.proto.http.trace_exporter")
        except ImportError:
            raise OtelUnavailable(
                "OTEL_TRACES_EXPORTER=otlp needs opentelemetry-exporter-otlp-proto-http"
            ) from None
        provider.add_span_processor(BatchSpanProcessor(otlp.OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    atexit.register(provider.shutdown)  # the spans still batched are sent on the way out
    return provider
