"""This library's spans exported in memory by the OpenTelemetry SDK, for a test to read."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agui_tools import _telemetry


@contextlib.contextmanager
def exported_spans() -> Iterator[InMemorySpanExporter]:
    """The block's spans, each in the exporter as it ends; the global setup after."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _telemetry.use(provider)
    try:
        yield exporter
    finally:
        _telemetry.use(None)
        provider.shutdown()
