"""OpenTelemetry export (SPEC §15): one content-free span per request with the GenAI
semantic conventions and orca's attributes; through the SDK's in-memory exporter on a real
sidecar, and through the real OTLP/HTTP exporter to a receiver on loopback."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, ClassVar

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from orca_cli.config.schema import StateConfig
from orca_cli.trace.log import RequestLog, Tee
from orca_cli.trace.otel import OtelSink, otlp_sink, span_attributes
from tests.cli.test_operator_cli import MSGS, ThreadSidecar, _cfg
from tests.trace.test_log import _trace


def test_attributes_follow_the_genai_conventions_and_carry_no_content() -> None:
    attrs = span_attributes(_trace())
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == "orca/coding"
    assert attrs["gen_ai.response.model"] == "claude-sonnet-4-5"
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"],
            attrs["gen_ai.usage.cache_read.input_tokens"]) == (1000, 40, 870)
    assert (attrs["orca.tier"], attrs["orca.tier.reason"], attrs["orca.router"],
            attrs["orca.session_id"]) == ("strong", "explicit", "coding",
                                          "agent-session-with-a-long-id")
    assert attrs["orca.cached_share"] == 0.87 and attrs["orca.cost_usd"] == 0.001234
    assert all(v is not None for v in attrs.values())
    assert not any("key_fp" in k for k in attrs)


@pytest.fixture
def spans() -> Iterator[tuple[ThreadSidecar, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = Tee(RequestLog(io.StringIO()), OtelSink(provider))
    with ThreadSidecar(_cfg(), StateConfig(), sink) as sc:
        yield sc, exporter
    provider.shutdown()


def test_a_real_sidecar_exports_one_span_per_request(
        spans: tuple[ThreadSidecar, InMemorySpanExporter]) -> None:
    sc, exporter = spans
    rid = sc.turn("otel-session").headers["x-orca-request-id"]
    bad = httpx.post(sc.base + "/v1/chat/completions", json={"model": "nope"}, timeout=10)
    assert bad.status_code == 404
    got = {s.attributes["orca.request_id"]: s for s in exporter.get_finished_spans()}
    assert set(got) == {rid, bad.headers["x-orca-request-id"]}
    ok = got[rid]
    assert ok.name == "chat orca/coding"
    assert ok.attributes["orca.session_id"] == "otel-session"
    assert ok.attributes["orca.tier"] == "base" and ok.attributes["gen_ai.response.model"]
    assert ok.attributes["gen_ai.usage.input_tokens"] > 0
    assert ok.end_time > ok.start_time and ok.status.status_code != StatusCode.ERROR
    refused = got[bad.headers["x-orca-request-id"]]
    assert refused.attributes["http.response.status_code"] == 404
    assert refused.status.status_code == StatusCode.ERROR
    assert refused.attributes["error.type"] == "404"
    text = repr([dict(s.attributes) for s in got.values()])
    assert MSGS[0]["content"] not in text


class _Receiver(BaseHTTPRequestHandler):
    bodies: ClassVar[list[tuple[str, bytes]]] = []

    def do_POST(self) -> None:
        n = int(self.headers.get("content-length", "0"))
        self.bodies.append((self.path, self.rfile.read(n)))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


def test_otlp_http_export_reaches_a_receiver_on_loopback() -> None:
    _Receiver.bodies = []
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        sink = otlp_sink(f"http://127.0.0.1:{server.server_address[1]}")
        sink.emit(_trace())
        sink.shutdown()  # flushes the batch
    finally:
        server.shutdown()
        server.server_close()
    assert [p for p, _ in _Receiver.bodies] == ["/v1/traces"]
    req = ExportTraceServiceRequest.FromString(_Receiver.bodies[0][1])
    (rs,) = req.resource_spans
    service = {a.key: a.value.string_value for a in rs.resource.attributes}
    assert service["service.name"] == "orca"
    (span,) = rs.scope_spans[0].spans
    attrs = {a.key: a.value for a in span.attributes}
    assert span.name == "chat orca/coding"
    assert attrs["gen_ai.response.model"].string_value == "claude-sonnet-4-5"
    assert attrs["gen_ai.usage.input_tokens"].int_value == 1000
    assert attrs["orca.request_id"].string_value == "req_3f2a9c0e1b7d4a6f8e2c1d0b"
