"""The arq worker: runs the write-time jobs the API queues in Redis, and the nightly maintenance.

    FELTSENSE_REDIS_URL=redis://127.0.0.1:6379/0 FELTSENSE_STORE=weaviate feltsense worker

Jobs (arq calls each with its ``ctx``; ``ctx["engine"]`` is built at startup from ``ctx["settings"]``, the
settings ``feltsense worker`` built once and passed to ``create_worker``):

- ``write_session(ctx, session_id, closed_at_iso)``: ``Engine.close_session``. Its job id is derived from the
  session (see ``api.jobs``). A backend that cannot be reached, or a classifier failure that left the traces
  pending, gets the job tried again after a backoff (``Retry(defer=...)``), up to ``WRITE_MAX_TRIES`` tries.
  After the last try the traces stay pending, so nothing is lost: the nightly job (and the API's background
  pass) retries them, up to the write profile's ``max_attempts``.
- ``nightly_maintenance(ctx)``, a cron job at 03:00 UTC: ``Engine.background_pass`` (embed memories stored while
  the embedder was down, retry pending traces), then ``Engine.sweep`` (fold usage into strength, finish
  interrupted supersessions, archive what decayed, file consolidation proposals); returns the counts. Salience
  and strength themselves decay at recall time, computed live from stored signals.

The worker and the API must share one store, since the worker writes the traces the API reads; the embedded
store keeps its indexes in the serving process, so Redis is refused with it (``api.jobs.check_shared_store``).
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from arq import cron, func
from arq import worker as arq_worker
from arq.cron import CronJob
from arq.typing import StartupShutdown, WorkerCoroutine
from arq.worker import Function, Retry, Worker

from api.jobs import WRITE_RESULT_KEPT_S, WRITE_SESSION, check_shared_store, redis_settings
from engine import Engine, build_engine, build_profile_store, check_settings, telemetry
from engine.domain.errors import BackendUnavailable, ConfigurationError
from engine.domain.ports import ProfileStore
from engine.settings import Settings

log = logging.getLogger("feltsense.worker")

WRITE_MAX_TRIES = 3
"""Tries of one write job. Fewer than the write profile's ``max_attempts`` (5), so the background retry of
pending traces still has attempts left after the job gives up."""

WRITE_BACKOFF_S: tuple[float, ...] = (30.0, 300.0)
"""The wait before the second try, the third, ... (the last value repeats)."""

WRITE_TIMEOUT_S = 300
NIGHTLY_MAINTENANCE = "nightly_maintenance"
NIGHTLY_TIMEOUT_S = 3600


def _backoff_s(ctx: dict[str, Any], job_try: int) -> float:
    delays: Sequence[float] = ctx.get("retry_backoff_s", WRITE_BACKOFF_S)
    return delays[min(job_try, len(delays)) - 1]


async def write_session(ctx: dict[str, Any], session_id: str, closed_at_iso: str) -> dict[str, Any]:
    """The write-time pass for a closed session; returns its CloseReport as a dict (kept as the job's result)."""
    engine: Engine = ctx["engine"]
    job_try: int = ctx["job_try"]
    closed_at = datetime.fromisoformat(closed_at_iso)
    try:
        report = await asyncio.to_thread(engine.close_session, session_id, closed_at=closed_at)
    except BackendUnavailable as exc:
        # arq runs the job again after the delay; past WRITE_MAX_TRIES it records the job as failed.
        raise Retry(defer=max(_backoff_s(ctx, job_try), exc.retry_after_s)) from exc
    if report.traces_pending and job_try < WRITE_MAX_TRIES:
        raise Retry(defer=_backoff_s(ctx, job_try))
    return report.model_dump()


async def nightly_maintenance(ctx: dict[str, Any]) -> dict[str, int]:
    """Backfill vectors, retry pending traces, sweep; returns the counts of each."""
    engine: Engine = ctx["engine"]
    done = await asyncio.to_thread(engine.background_pass)
    swept = await asyncio.to_thread(engine.sweep)
    done.update({"archived": swept.archived, "proposed": swept.proposed, "repaired": swept.repaired})
    log.info("nightly maintenance: %d vectors backfilled, %d pending traces written, %d archived, %d proposed",
             done["vectors"], done["traces"], done["archived"], done["proposed"])
    return done


async def startup(ctx: dict[str, Any]) -> None:
    settings: Settings | None = ctx.get("settings")
    if settings is None:  # started by arq's own command line, which builds no settings
        raise ConfigurationError("the worker is started with `feltsense worker` (settings from FELTSENSE_* "
                                 "variables), or from code with create_worker(redis_url, settings=...)")
    check_shared_store(settings)
    # The same tuning profiles as the API (api/server.py), so a job writes with the profile a director saved.
    ctx["tuning"] = tuning = build_profile_store(settings)
    ctx["engine"] = await asyncio.to_thread(build_engine, settings, profiles=tuning)  # loads models: off the loop


async def shutdown(ctx: dict[str, Any]) -> None:
    engine: Engine | None = ctx.pop("engine", None)
    if engine is not None:
        engine.close()
    tuning: ProfileStore | None = ctx.pop("tuning", None)
    if tuning is not None:
        tuning.close()


class WorkerSettings:
    """arq's worker settings; ``create_worker`` runs them with the settings in ``ctx``."""

    functions: Sequence[WorkerCoroutine | Function] = (
        func(write_session, name=WRITE_SESSION, max_tries=WRITE_MAX_TRIES, timeout=WRITE_TIMEOUT_S,
             keep_result=WRITE_RESULT_KEPT_S),
    )
    # The cron job's id names its schedule slot, and its result is kept, so several workers run it once a night.
    cron_jobs: Sequence[CronJob] | None = (
        cron(nightly_maintenance, name=NIGHTLY_MAINTENANCE, hour={3}, minute={0}, timeout=NIGHTLY_TIMEOUT_S,
             keep_result=NIGHTLY_TIMEOUT_S),
    )
    on_startup: StartupShutdown | None = startup
    on_shutdown: StartupShutdown | None = shutdown
    job_timeout = WRITE_TIMEOUT_S
    max_tries = WRITE_MAX_TRIES
    # Also the expiry of a failed job's result (arq applies the worker's value there), hence of its id.
    keep_result = WRITE_RESULT_KEPT_S
    timezone = UTC


def create_worker(
    redis_url: str,
    *,
    engine: Engine | None = None,
    settings: Settings | None = None,
    retry_backoff_s: Sequence[float] = WRITE_BACKOFF_S,
    **worker_options: Any,
) -> Worker:
    """A worker over ``WorkerSettings``. Given an ``engine``, the worker uses it and leaves it open (tests);
    otherwise it builds one from ``settings`` (then required) at startup and closes it at shutdown.
    ``worker_options`` go to arq's ``Worker`` (``burst=True``, ``poll_delay``, ``handle_signals``, ...)."""
    if not retry_backoff_s:
        raise ValueError("retry_backoff_s needs at least one delay")
    ctx: dict[str, Any] = {"retry_backoff_s": tuple(retry_backoff_s)}
    if engine is not None:
        ctx["engine"] = engine
        worker_options = {"on_startup": None, "on_shutdown": None, **worker_options}
    elif settings is None:
        raise ValueError("create_worker needs an engine or the settings to build one from")
    else:
        ctx["settings"] = settings
    return arq_worker.create_worker(WorkerSettings, redis_settings=redis_settings(redis_url), ctx=ctx,
                                    **worker_options)


def run(settings: Settings, *, burst: bool = False) -> None:
    """Run the worker until a signal stops it (or, with ``burst``, until the queue is empty)."""
    if settings.redis_url is None:
        raise ConfigurationError("the worker needs FELTSENSE_REDIS_URL (redis://host:port/db)")
    check_settings(settings)
    check_shared_store(settings)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    telemetry.configure_from_environment()
    try:
        with warnings.catch_warnings():
            # arq's shutdown calls redis-py's deprecated close(); nothing for the operator to act on.
            warnings.filterwarnings("ignore", "Call to deprecated close", DeprecationWarning)
            create_worker(settings.redis_url, settings=settings, burst=burst).run()
    finally:
        telemetry.shutdown()
