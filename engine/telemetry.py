"""OpenTelemetry spans: recall's stages, the write side's passes and each backend call. Off by default.

The engine speaks only the OpenTelemetry API (``span``). With nothing configured it is the API's no-op tracer: a
span costs a few microseconds and records nothing. ``configure_from_environment`` (run by ``feltsense serve`` and
``feltsense worker``) turns on the SDK when the standard settings ask for it:

- ``OTEL_TRACES_EXPORTER``: ``otlp`` (OTLP over HTTP/protobuf), ``console`` (one JSON object a span on stderr) or
  ``none``. Left unset, spans are exported over OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
  ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set, and not at all otherwise.
- ``OTEL_EXPORTER_OTLP_*`` (endpoint, headers, timeout), ``OTEL_SERVICE_NAME`` (default ``feltsense``),
  ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_BSP_*`` are read by the SDK itself, as it documents them.

Span attributes are counts, modes, backends and tuning versions, never a user's words, ids or names: a trace
backend is not a place private memories may reach.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping

from opentelemetry import trace

from engine.domain.errors import ConfigurationError

log = logging.getLogger("feltsense.telemetry")
Attributes = Mapping[str, str | int | float | bool]
EXPORTERS = ("otlp", "console", "none")
_tracer: trace.Tracer | None = None  # None: the global provider's, once one is set (by us or the host process)
_OFF = trace.NonRecordingSpan(trace.INVALID_SPAN_CONTEXT)


def span(name: str, attributes: Attributes | None = None) -> contextlib.AbstractContextManager[trace.Span]:
    """A span around a block, a child of the span current on this thread; an exception is recorded on it. With
    no provider anywhere (the default) it is a shared non-recording span, at a fraction of a microsecond."""
    if _tracer is not None:
        return _tracer.start_as_current_span(name, attributes=attributes)
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider):  # nothing set up: the API would make no-op spans anyway
        return contextlib.nullcontext(_OFF)
    return provider.get_tracer("feltsense").start_as_current_span(name, attributes=attributes)


def use(provider: trace.TracerProvider | None) -> None:
    """Record spans with ``provider`` from now on (``configure_from_environment``; tests pass an in-memory one);
    None: the global provider's again."""
    global _tracer
    _tracer = None if provider is None else provider.get_tracer("feltsense")


def exporter_from_environment(environ: Mapping[str, str] | None = None) -> str:
    """Which exporter the ``OTEL_*`` settings ask for: one of ``EXPORTERS``. ConfigurationError for another."""
    env = os.environ if environ is None else environ
    chosen = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if not chosen:
        endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        return "otlp" if endpoint else "none"
    if chosen not in EXPORTERS:
        raise ConfigurationError(
            f"OTEL_TRACES_EXPORTER={chosen!r} is not one feltsense can export to: use one of {', '.join(EXPORTERS)}")
    return chosen


def configure_from_environment(environ: Mapping[str, str] | None = None) -> str:
    """Turn on the OpenTelemetry SDK as the ``OTEL_*`` settings ask (see the module's text); returns the exporter
    chosen (``none``: nothing is set up, spans stay no-ops)."""
    chosen = exporter_from_environment(environ)
    if chosen == "none":
        return chosen
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    env = os.environ if environ is None else environ
    resource = Resource.create({SERVICE_NAME: env.get("OTEL_SERVICE_NAME") or "feltsense"})
    provider = TracerProvider(resource=resource)
    exporter: SpanExporter
    if chosen == "console":
        exporter = ConsoleSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    use(provider)
    log.info("OpenTelemetry spans are exported (%s)", chosen)
    return chosen


def shutdown() -> None:
    """Flush and stop the SDK's exporter, if one was set up (the process is ending)."""
    provider = trace.get_tracer_provider()
    stop = getattr(provider, "shutdown", None)
    if callable(stop):
        stop()
