"""The arq job queue: ``engine.jobs.JobQueue`` over Redis. The worker that runs the jobs is ``api.worker``.

Job ids are derived from the session (``engine.jobs.write_job_id``), and arq refuses a job whose id it still
knows: ``enqueue_job`` returns None, adding nothing, while a job with that id is queued, deferred for a retry or
running (its job key exists), and for as long as its result is kept afterwards (``WRITE_RESULT_KEPT_S``). So a
repeated close while the pass is pending, or shortly after it ran, enqueues nothing new; later, it runs again.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Self

from arq.connections import ArqRedis, RedisSettings, create_pool
from arq.jobs import Job
from arq.jobs import JobStatus as ArqStatus
from redis.exceptions import RedisError

from engine.domain.errors import BackendUnavailable, ConfigurationError
from engine.domain.models import CloseReport
from engine.jobs import JobState, write_job_id
from engine.settings import Settings

log = logging.getLogger("feltsense.jobs")

WRITE_SESSION = "write_session"
"""The worker function that runs a session's write-time pass: ``write_session(ctx, session_id, closed_at_iso)``."""

WRITE_RESULT_KEPT_S = 300
"""How long a finished write job's result stays in Redis, and with it the id that refuses a repeated close: long
enough to absorb a client retrying its close, short enough that a close after a failed job runs again soon."""

BACKEND = "redis"


def redis_settings(redis_url: str) -> RedisSettings:
    """arq's connection settings from ``redis://[user:password@]host:port/db`` (``rediss://``, ``unix://``)."""
    try:
        return RedisSettings.from_dsn(redis_url)
    except (RuntimeError, ValueError) as exc:
        raise ConfigurationError(f"invalid Redis URL: {exc}") from exc


async def connect(settings: RedisSettings) -> ArqRedis:
    """An arq pool, or BackendUnavailable when Redis cannot be reached (arq retries the connection briefly)."""
    try:
        return await create_pool(settings)
    except (RedisError, OSError) as exc:
        raise BackendUnavailable(f"cannot reach Redis: {exc}", backend=BACKEND) from exc


def check_shared_store(settings: Settings) -> None:
    """Raise ConfigurationError for Redis over the embedded store: the worker would write traces that the
    serving process, whose indexes live in its own memory, never sees."""
    if settings.redis_url is not None and settings.store == "embedded":
        raise ConfigurationError(
            "FELTSENSE_REDIS_URL needs a store that the API and the worker share (FELTSENSE_STORE=weaviate); "
            "the embedded store keeps its indexes inside one process. Unset FELTSENSE_REDIS_URL to run the "
            "jobs in-process."
        )


class ArqJobs:
    """Queues write-time jobs in Redis for ``feltsense worker``. Connects when entered (in the serving loop)."""

    backend = BACKEND

    def __init__(self, redis_url: str) -> None:
        self._settings = redis_settings(redis_url)  # fail fast on a malformed URL, before anything connects
        self._pool: ArqRedis | None = None

    @property
    def pool(self) -> ArqRedis:
        if self._pool is None:
            raise RuntimeError("ArqJobs is used outside `async with`: it has no connection")
        return self._pool

    async def enqueue_write(self, session_id: str, closed_at: datetime) -> str:
        job_id = write_job_id(session_id)
        try:
            job = await self.pool.enqueue_job(WRITE_SESSION, session_id, closed_at.isoformat(), _job_id=job_id)
        except (RedisError, OSError) as exc:
            raise BackendUnavailable(f"cannot queue the write-time job: {exc}", backend=self.backend) from exc
        if job is None:
            log.info("session %s: job %s is already queued, running or just done; nothing new queued",
                     session_id, job_id)
        return job_id

    async def state(self, job_id: str) -> JobState:
        job = Job(job_id, self.pool)
        try:
            status = await job.status()
            info = await job.result_info() if status is ArqStatus.complete else None
        except (RedisError, OSError) as exc:
            raise BackendUnavailable(f"cannot read the job's status: {exc}", backend=self.backend) from exc
        if status is ArqStatus.complete:
            if info is None or not info.success or not isinstance(info.result, dict):
                return JobState(job_id=job_id, status="failed")
            return JobState(job_id=job_id, status="complete", report=CloseReport.model_validate(info.result))
        return JobState(job_id=job_id, status={ArqStatus.in_progress: "running", ArqStatus.queued: "queued",
                                               ArqStatus.deferred: "queued"}.get(status, "unknown"))

    async def depth(self) -> int:
        try:  # arq keeps queued (and deferred) jobs in one sorted set; a running job stays in it until done
            return int(await self.pool.zcard(self.pool.default_queue_name))
        except (RedisError, OSError) as exc:
            raise BackendUnavailable(f"cannot read the job queue's depth: {exc}", backend=self.backend) from exc

    async def ping(self) -> None:
        try:
            await self.pool.ping()
        except (RedisError, OSError) as exc:
            raise BackendUnavailable(f"Redis does not answer: {exc}", backend=self.backend) from exc

    async def __aenter__(self) -> Self:
        self._pool = await connect(self._settings)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.aclose()
