"""OpenTelemetry spans: off by default, one tree a recall (stage one, stage two, tone, context under the recall),
spans for the write side, and no user's words or ids in any attribute. The last test turns the SDK on the way an
operator does, with ``OTEL_EXPORTER_OTLP_ENDPOINT``, in a child process, and reads what reached a collector."""

from __future__ import annotations

import http.server
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from engine import telemetry
from engine.domain.errors import ConfigurationError
from engine.domain.models import RecallQuery, Turn
from engine.service import Engine
from tests.fakes import hashing_engine_in

pytestmark = pytest.mark.metrics

REPO = Path(__file__).resolve().parents[2]
SAID = datetime(2025, 3, 2, 18, tzinfo=UTC)
PRIVATE = ("tester-7", "Luna", "luna", "died", "park")
RECALL_STAGES = {"feltsense.recall.embed", "feltsense.recall.stage_one", "feltsense.recall.stage_two",
                 "feltsense.recall.tone", "feltsense.recall.context"}


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.use(provider)
    try:
        yield exporter
    finally:
        telemetry.use(None)  # back to the global (no-op) provider
        provider.shutdown()


def _bereaved(engine: Engine) -> None:
    engine.ingest([Turn(turn_id=f"t{i}", session_id="s1", character_id="ava", user_id="tester-7", role="user",
                        text=text, timestamp=SAID + timedelta(minutes=i))
                   for i, text in enumerate(("My dog Luna died last week.", "We walked in the park every day."))])
    engine.close_session("s1", closed_at=SAID + timedelta(hours=1))


def _named(found: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    [one] = [s for s in found if s.name == name]
    return one


def test_a_recall_is_one_tree_of_its_stages_with_no_private_attribute(
    tmp_path: Path, spans: InMemorySpanExporter,
) -> None:
    engine = hashing_engine_in(tmp_path / "data")
    try:
        _bereaved(engine)
        spans.clear()
        result = engine.recall(RecallQuery(character_id="ava", user_id="tester-7", message="a walk in the park",
                                           at=SAID + timedelta(days=9)))
    finally:
        engine.close()
    found = spans.get_finished_spans()
    root = _named(found, "feltsense.recall")
    assert root.parent is None
    assert root.attributes is not None and root.attributes["feltsense.mode"] == "hybrid"
    assert root.attributes["feltsense.memories"] == len(result.memories)
    stages = {s.name: s for s in found if s.name in RECALL_STAGES}
    assert set(stages) == RECALL_STAGES
    for stage in stages.values():
        assert stage.parent is not None and stage.parent.span_id == root.context.span_id
        assert stage.context.trace_id == root.context.trace_id
    tone = stages["feltsense.recall.tone"].attributes or {}
    assert tone["feltsense.tone_constraints"] + tone["feltsense.standing_rules"] == (  # type: ignore[operator]
        len(result.tone_constraints) + len(result.standing_rules))
    values = [str(v) for s in found for v in (s.attributes or {}).values()]
    assert not any(word in v for v in values for word in PRIVATE), values


def test_ingest_and_the_write_time_pass_have_spans(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    engine = hashing_engine_in(tmp_path / "data")
    try:
        _bereaved(engine)
    finally:
        engine.close()
    found = spans.get_finished_spans()
    ingest = _named(found, "feltsense.ingest")
    assert ingest.attributes is not None and ingest.attributes["feltsense.stored"] == 2
    close = _named(found, "feltsense.close_session")
    assert close.attributes is not None and close.attributes["feltsense.traces_written"] == 2
    for child in ("feltsense.close_session.classify", "feltsense.close_session.write"):
        parent = _named(found, child).parent
        assert parent is not None and parent.span_id == close.context.span_id


def test_spans_are_off_unless_the_otel_settings_ask_for_them() -> None:
    assert telemetry.exporter_from_environment({}) == "none"
    assert telemetry.exporter_from_environment({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}) == "otlp"
    assert telemetry.exporter_from_environment({"OTEL_TRACES_EXPORTER": "console"}) == "console"
    assert telemetry.exporter_from_environment({"OTEL_TRACES_EXPORTER": "none",
                                                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}) == "none"
    with pytest.raises(ConfigurationError, match="OTEL_TRACES_EXPORTER='zipkin'"):
        telemetry.exporter_from_environment({"OTEL_TRACES_EXPORTER": "zipkin"})
    with telemetry.span("nothing configured") as current:
        assert not current.is_recording()


class _Collector(http.server.BaseHTTPRequestHandler):
    received: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/v1/traces":
            _Collector.received.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_the_otlp_endpoint_setting_exports_a_recalls_spans_to_a_collector(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Collector.received.clear()
    script = textwrap.dedent(f"""
        from datetime import timedelta
        from pathlib import Path
        from engine import telemetry
        from engine.domain.models import RecallQuery
        from tests.fakes import hashing_engine_in
        from tests.unit.test_telemetry import _bereaved, SAID
        assert telemetry.configure_from_environment() == "otlp"
        engine = hashing_engine_in(Path({str(tmp_path / "data")!r}))
        _bereaved(engine)
        engine.recall(RecallQuery(character_id="ava", user_id="tester-7", message="the park",
                                  at=SAID + timedelta(days=9)))
        engine.close()
        telemetry.shutdown()
    """)
    try:
        done = subprocess.run(
            [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "OTEL_SERVICE_NAME": "feltsense-test",
                 "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}"})
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr
    names, services = set(), set()
    for body in _Collector.received:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            services |= {a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"}
            names |= {s.name for scope in resource_spans.scope_spans for s in scope.spans}
    assert services == {"feltsense-test"}
    assert {"feltsense.recall", "feltsense.ingest", "feltsense.close_session"} | RECALL_STAGES <= names
