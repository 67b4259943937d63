"""What ``api.app.create_app`` injects into the handlers, each marked as a dependency once, here.

A handler asks for one by naming its parameter after the dependency and annotating it with the alias
(``engine: EngineDep``). Litestar 2 also injects an unmarked parameter whose name matches a dependency, but warns
for each one ("inferred dependencies will stop working in Litestar 3.0"): ``NamedDependency`` is the mark Litestar 3
keeps. ``tests/api/test_warnings.py`` fails when a handler is left unmarked.
"""

from __future__ import annotations

from pathlib import Path

from litestar.di import NamedDependency

from api.auth import Principal
from api.metrics import Metrics
from engine import Engine
from engine.domain.ports import ProfileStore
from engine.jobs import JobQueue
from engine.replay_runner import ReplayRunner

EngineDep = NamedDependency[Engine]
"""``engine``: the one engine the app serves."""

PrincipalDep = NamedDependency[Principal]
"""``principal``: the caller, from its API key (``api.security.authenticator``; a 401 without one). Taking it is
what makes a route authenticated, and documented with the bearer scheme (``api.docs.bearer_documented``)."""

MetricsDep = NamedDependency[Metrics]
"""``metrics``: the app's Prometheus metrics (``api.metrics``), which handlers count what they answered into."""

TuningDep = NamedDependency[ProfileStore | None]
"""``tuning``: the tuning store, or None when the app was built without one (tuning routes answer 503)."""

JobsDep = NamedDependency[JobQueue]
"""``jobs``: the job queue, in a handler registered only when the app has one."""

OptionalJobsDep = NamedDependency[JobQueue | None]
"""``jobs``: the job queue, or None when closes run their write-time pass in the request."""

TranscriptDirsDep = NamedDependency[tuple[Path, ...]]
"""``transcript_dirs``: the directories whose transcripts the tuning page offers for replay."""

ReplaysDep = NamedDependency[ReplayRunner]
"""``replays``: where tuning replays run."""
