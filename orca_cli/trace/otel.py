"""OpenTelemetry export of the request traces (SPEC §15), the optional extra `otel`.

One span per finished request, built from the same trace document the request log prints,
so it is content-free the same way: names, ids, counts, times and cost, never prompt or
response text and never key values. Attributes follow the OpenTelemetry GenAI semantic
conventions (`gen_ai.operation.name`, `gen_ai.request.model`, `gen_ai.response.model`,
`gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`,
`gen_ai.usage.cache_read.input_tokens`) plus orca's own under `orca.*` (request id, session,
router, tier and reason, channel and key index, cost, cached share, attempts).

`OtelSink.emit(trace)` only builds and ends the span; the SDK's batch processor exports it
from its own thread, so the event loop never waits on the collector. `span_attributes` is
pure and needs no OpenTelemetry package; `otlp_sink` imports the SDK and the OTLP/HTTP
exporter (`pip install 'orca-cli[otel]'`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["OtelSink", "otlp_sink", "span_attributes", "span_name"]

Attr = str | int | float | bool


def span_name(trace: Mapping[str, Any]) -> str:
    """`chat <requested model>`, the GenAI convention's `{operation} {model}`."""
    return f"chat {trace.get('requested_model') or 'unknown'}"


def span_attributes(trace: Mapping[str, Any]) -> dict[str, Attr]:
    """The span's attributes; absent values are left out (OpenTelemetry has no null)."""
    tier = trace.get("tier") or {}
    sel = trace.get("selected") or {}
    usage = trace.get("usage") or {}
    out: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": trace.get("requested_model") or None,
        "gen_ai.response.model": sel.get("model"),
        "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
        "gen_ai.usage.output_tokens": usage.get("output_tokens"),
        "gen_ai.usage.cache_read.input_tokens": usage.get("cached_tokens"),
        "gen_ai.usage.cache_creation.input_tokens": usage.get("cache_write_tokens"),
        "http.response.status_code": trace.get("status"),
        "orca.request_id": trace.get("request_id"),
        "orca.client_request_id": trace.get("client_request_id"),
        "orca.session_id": trace.get("session_id"),
        "orca.session_source": trace.get("session_source"),
        "orca.router": trace.get("router"),
        "orca.inbound_api": trace.get("inbound_api"),
        "orca.tier": tier.get("decision"),
        "orca.tier.reason": tier.get("reason"),
        "orca.tier.trigger": tier.get("trigger"),
        "orca.channel": sel.get("channel"),
        "orca.key_index": sel.get("key_index"),
        "orca.cost_usd": trace.get("cost_usd"),
        "orca.attempts": len(trace.get("attempts") or ()),
        "orca.stream": trace.get("stream"),
        "orca.degraded": trace.get("degraded"),
        "orca.committed": trace.get("committed"),
    }
    prompt = usage.get("prompt_tokens")
    if isinstance(prompt, int) and prompt > 0:
        out["orca.cached_share"] = round(float(usage.get("cached_tokens") or 0) / prompt, 4)
    if trace.get("error"):
        out["error.type"] = _error_type(trace)
    return {k: v for k, v in out.items() if isinstance(v, (str, int, float, bool))}


def _error_type(trace: Mapping[str, Any]) -> str:
    status = trace.get("status")
    return str(status) if isinstance(status, int) and status >= 400 else "orca_error"


class OtelSink:
    """Turns each trace into one ended span on `tracer_provider` (an SDK TracerProvider)."""

    def __init__(self, tracer_provider: Any) -> None:
        from opentelemetry.trace import SpanKind, Status, StatusCode

        from orca_cli import __version__

        self._provider = tracer_provider
        self._tracer = tracer_provider.get_tracer("orca", __version__)
        self._kind = SpanKind.SERVER
        self._error = Status(StatusCode.ERROR)
        self.emitted = 0

    def emit(self, trace: Mapping[str, Any]) -> None:
        try:
            ts = float(trace.get("ts") or 0.0)
            latency_ms = float(trace.get("latency_ms") or 0.0)
            start_ns = int(ts * 1e9)
            span = self._tracer.start_span(span_name(trace), kind=self._kind,
                                           attributes=span_attributes(trace),
                                           start_time=start_ns)
            status = trace.get("status")
            if trace.get("error") or (isinstance(status, int) and status >= 500):
                span.set_status(self._error)
            span.end(end_time=start_ns + int(latency_ms * 1e6))
        except Exception:  # noqa: BLE001 - telemetry never fails a request
            return
        self.emitted += 1

    def shutdown(self) -> None:
        """Flush what is still batched (on sidecar shutdown)."""
        self._provider.shutdown()

    close = shutdown


def otlp_sink(endpoint: str, *, service_name: str = "orca") -> OtelSink:
    """A sink exporting over OTLP/HTTP to `endpoint` (e.g. `http://127.0.0.1:4318`; the
    `/v1/traces` path is added when missing), batched off the event loop."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter,
        )
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        from orca_cli.errors import ConfigError

        raise ConfigError(None, "telemetry.otlp_endpoint",
                          "is set but the OpenTelemetry SDK is not installed; "
                          "pip install 'orca-cli[otel]'") from exc
    url = endpoint.rstrip("/")
    if not url.endswith("/v1/traces"):
        url += "/v1/traces"
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    return OtelSink(provider)
