"""``GET /metrics``: the service's Prometheus metrics (``prometheus-client``).

What a request changes is counted where it is answered (``Metrics.recalled``, ``ingested``, ``closed``); what the
store and the job queue hold is read at each scrape, so every process of a deployment reports the same shared
figures for them (Weaviate's memories, Redis's queue). Labels are bounded: a recall mode, a backend, an outcome;
never a user, a character, an organisation or any text.

Several processes on one host (uvicorn or gunicorn workers) share their counters when ``PROMETHEUS_MULTIPROC_DIR``
names a directory they all write (prometheus-client's multiprocess mode): each process's ``/metrics`` then
answers for all of them. Processes on different hosts are scraped one by one and summed by Prometheus.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator
from typing import Any

from litestar import Response, get
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from engine import Engine
from engine.domain.models import IngestReport, RecallResult
from engine.jobs import JobQueue

log = logging.getLogger("feltsense.metrics")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MODES = ("hybrid", "lexical", "substring")
# Recall is answered in milliseconds; the buckets reach the overloaded seconds `bench serve` has seen.
LATENCY_BUCKETS = (0.005, 0.01, 0.015, 0.025, 0.05, 0.08, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class _StoreSizes(Collector):
    """The gauges read at scrape time: memories in the store, sessions with pending traces, the job queue."""

    def __init__(self, engine: Engine, jobs: JobQueue | None) -> None:
        self._engine = engine
        self._jobs = jobs
        self._store: list[Metric] = []
        self._depth: int | None = None

    def refresh(self, queue_depth: int | None) -> None:
        """Read what a scrape reports (on a worker thread, before the registry is collected): the store's sizes
        (a count query and the pending sessions, on either backend) and the queue's depth (None: it did not
        answer)."""
        self._depth = queue_depth
        backend = self._engine.store.backend
        up = GaugeMetricFamily("feltsense_store_up", "1 when the last read of the store's sizes succeeded",
                               labels=["backend"])
        try:
            sizes = self._engine.sizes()
        except Exception as exc:  # a store that is down is a figure too: up 0, and the sizes left out
            log.warning("metrics: cannot read the store's sizes: %s: %s", type(exc).__name__, exc)
            up.add_metric([backend], 0)
            self._store = [up]
            return
        up.add_metric([backend], 1)
        memories = GaugeMetricFamily("feltsense_store_memories", "memories held across every partition",
                                     labels=["backend"])
        memories.add_metric([backend], sizes.memories)
        pending = GaugeMetricFamily("feltsense_sessions_pending_traces",
                                    "closed sessions whose write-time traces are not all written yet",
                                    labels=["backend"])
        pending.add_metric([backend], sizes.sessions_pending_traces)
        self._store = [up, memories, pending]

    def collect(self) -> Iterator[Metric]:
        yield from self._store
        if self._jobs is not None and self._depth is not None:
            depth = GaugeMetricFamily("feltsense_job_queue_depth", "write-time jobs queued or running",
                                      labels=["queue"])
            depth.add_metric([self._jobs.backend], self._depth)
            yield depth


class Metrics:
    """One app's metrics: its own registry, so two apps in one process (the tests) never share a counter."""

    def __init__(self, engine: Engine, jobs: JobQueue | None) -> None:
        self._multiprocess = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        self.registry = CollectorRegistry(auto_describe=True)
        # In multiprocess mode the counters are also written to the shared directory, whatever registry holds
        # them; a scrape then collects that directory instead of this process's own values.
        own = CollectorRegistry() if self._multiprocess else self.registry
        self.recall_seconds = Histogram(
            "feltsense_recall_seconds", "recall latency in the service, by the mode that answered",
            ["mode"], buckets=LATENCY_BUCKETS, registry=own)
        self.recalls_degraded = Counter(
            "feltsense_recalls_degraded", "recalls answered in a degraded mode (lexical or substring)", ["mode"],
            registry=own)
        self.tone_constraints = Counter(
            "feltsense_tone_constraints", "tone constraints emitted to characters", registry=own)
        self.standing_rules = Counter(
            "feltsense_standing_rules", "standing tone rules emitted to characters", registry=own)
        self.turns = Counter(
            "feltsense_turns_ingested", "turns sent to ingest, by outcome", ["outcome"], registry=own)
        self.closes = Counter("feltsense_sessions_closed", "sessions closed", registry=own)
        for mode in MODES:  # every series exists from the start, at 0, so a rate over them is never empty
            self.recall_seconds.labels(mode=mode)
            if mode != "hybrid":
                self.recalls_degraded.labels(mode=mode)
        for outcome in ("stored", "duplicate"):
            self.turns.labels(outcome=outcome)
        if self._multiprocess:
            MultiProcessCollector(self.registry, path=self._multiprocess)  # type: ignore[no-untyped-call]
        self._sizes = _StoreSizes(engine, jobs)
        self.registry.register(self._sizes)
        self._jobs = jobs

    def recalled(self, result: RecallResult, seconds: float) -> None:
        mode = result.trace.mode
        self.recall_seconds.labels(mode=mode).observe(seconds)
        if mode != "hybrid":
            self.recalls_degraded.labels(mode=mode).inc()
        self.tone_constraints.inc(len(result.tone_constraints))
        self.standing_rules.inc(len(result.standing_rules))

    def ingested(self, report: IngestReport) -> None:
        self.turns.labels(outcome="stored").inc(report.stored)
        self.turns.labels(outcome="duplicate").inc(report.duplicates)

    def closed(self) -> None:
        self.closes.inc()

    async def exposition(self) -> bytes:
        depth: int | None = None
        if self._jobs is not None:
            try:
                depth = await self._jobs.depth()
            except Exception as exc:
                log.warning("metrics: cannot read the job queue's depth: %s: %s", type(exc).__name__, exc)
        await asyncio.to_thread(self._sizes.refresh, depth)
        return generate_latest(self.registry)


def metrics_route(metrics: Metrics) -> Any:
    @get("/metrics", include_in_schema=False)
    async def prometheus_metrics() -> Response[bytes]:
        """The Prometheus text format. Unauthenticated, like /healthz: it carries no user's data."""
        return Response(await metrics.exposition(), media_type=CONTENT_TYPE)

    return prometheus_metrics
