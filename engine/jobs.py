"""Background jobs: the port the API queues work through, and the in-process queue of the embedded default.

Closing a session queues its write-time pass (``Engine.close_session``) instead of running it in the request.
Two queues implement the port:

- ``InProcessJobs`` (here): a background thread in the serving process. Needs nothing; the embedded default.
- ``api.jobs.ArqJobs``: an arq queue in Redis, run by ``feltsense worker`` (with retries and backoff, and the
  nightly maintenance cron job). The engine does not import arq.

Both name the job after the session (``write_job_id``), so closing a session again while its pass is still
queued or running adds nothing. The pass itself is idempotent too (complete traces are not written again), so
the id only saves work; it is not what keeps the data right.

A write that fails in the classifier never loses a memory: the engine stores the traces as pending, and the
background pass (``Engine.background_pass``; in-process every few seconds, or the worker's nightly job) retries
them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import Literal, Protocol, Self, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from engine.domain.errors import BackendUnavailable
from engine.domain.models import CloseReport
from engine.service import Engine

log = logging.getLogger("feltsense.jobs")

JobStatus = Literal["queued", "running", "complete", "failed", "unknown"]
"""queued: waiting (or deferred for a retry). running. complete: the pass ran (its traces may still be pending if
the classifier was down; ``report`` says). failed: it raised. unknown: no such job, or its result has expired."""
FINISHED: tuple[JobStatus, ...] = ("complete", "failed")
KEPT_RESULTS = 10_000
"""How many finished in-process jobs keep their status, oldest forgotten first."""


class JobState(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    job_id: str
    status: JobStatus
    report: CloseReport | None = Field(default=None, description="the write-time pass's report, once complete")


def write_job_id(session_id: str) -> str:
    """The id of a session's write-time job: one per session, whichever queue runs it."""
    return f"write-session:{session_id}"


@runtime_checkable  # the API's dependency injection checks the value it is given against the annotation
class JobQueue(Protocol):
    """Where a closed session's write-time pass is queued. Entered (``async with``) for the app's lifetime."""

    @property
    def backend(self) -> str:
        """What runs the jobs (``in-process``, ``redis``): the name of its readiness check and its errors."""
        ...

    async def enqueue_write(self, session_id: str, closed_at: datetime) -> str:
        """Queue the write-time pass for a session closed at ``closed_at``; returns the job id. A session already
        queued or running keeps its job: nothing new is added, and the same id is returned. Raises
        BackendUnavailable when the queue cannot take jobs."""
        ...

    async def ping(self) -> None:
        """Raise BackendUnavailable unless the queue can take jobs now (for the readiness check)."""
        ...

    async def state(self, job_id: str) -> JobState:
        """Where a job is now; ``unknown`` for an id the queue does not know (or no longer remembers)."""
        ...

    async def depth(self) -> int:
        """Jobs waiting to run or running now (``/metrics``); with Redis, every process's, not just this one's."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc_info: object) -> None: ...


class InProcessJobs:
    """Runs write-time passes one at a time on a background thread of this process.

    A session is queued once while its pass is pending (queued or running); once the pass has finished, a new
    close queues it again. Leaving the ``async with`` block (the app shutting down) waits for the queued passes,
    so a close that was answered 202 is written before the engine closes.
    """

    backend = "in-process"

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        # One thread: the engine serialises writes anyway, and queued sessions then run in the order closed.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="feltsense-write")
        self._lock = threading.Lock()
        self._pending: dict[str, Future[CloseReport | None]] = {}
        self._finished: OrderedDict[str, JobState] = OrderedDict()
        self._closed = False

    def submit(self, session_id: str, closed_at: datetime) -> str:
        """``enqueue_write`` for synchronous callers."""
        job_id = write_job_id(session_id)
        with self._lock:
            if self._closed:
                raise BackendUnavailable("the in-process job queue has shut down", backend=self.backend)
            if session_id in self._pending:
                return job_id
            future = self._executor.submit(self._write, session_id, closed_at)
            self._pending[session_id] = future
        # Added outside the lock: a pass that has already finished runs the callback here, and it takes the lock.
        future.add_done_callback(lambda done: self._forget(session_id, done))
        return job_id

    async def enqueue_write(self, session_id: str, closed_at: datetime) -> str:
        return self.submit(session_id, closed_at)

    async def ping(self) -> None:
        if self._closed:
            raise BackendUnavailable("the in-process job queue has shut down", backend=self.backend)

    async def state(self, job_id: str) -> JobState:
        return self.state_of(job_id)

    async def depth(self) -> int:
        with self._lock:
            return len(self._pending)

    def state_of(self, job_id: str) -> JobState:
        with self._lock:
            future = self._pending.get(job_id.removeprefix(write_job_id("")))
            if future is not None:
                return JobState(job_id=job_id, status="running" if future.running() else "queued")
            return self._finished.get(job_id) or JobState(job_id=job_id, status="unknown")

    def pending(self) -> set[str]:
        """The sessions whose pass is queued or running."""
        with self._lock:
            return set(self._pending)

    def join(self, timeout_s: float | None = None) -> None:
        """Wait until every pass queued so far has finished (raises TimeoutError after ``timeout_s``)."""
        with self._lock:
            futures = list(self._pending.values())
        for future in futures:
            future.exception(timeout=timeout_s)  # waits; a failed pass was logged already

    def close(self) -> None:
        """Take no more jobs and wait for the queued ones. Idempotent."""
        with self._lock:
            self._closed = True
        self._executor.shutdown(wait=True)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await asyncio.to_thread(self.close)

    def _write(self, session_id: str, closed_at: datetime) -> CloseReport | None:
        try:
            report = self._engine.close_session(session_id, closed_at=closed_at)
        except Exception:
            # Nothing to hand the error back to: the request was answered 202. A classifier failure does not
            # land here (the engine keeps the traces pending); this is the store failing or an unknown session.
            log.exception("write-time pass for session %s failed", session_id)
            return None
        if report.traces_pending:
            log.warning("write-time pass for session %s left %d traces pending; the background pass retries them",
                        session_id, report.traces_pending)
        return report

    def _forget(self, session_id: str, done: Future[CloseReport | None]) -> None:
        report = None if done.cancelled() or done.exception() is not None else done.result()
        job_id = write_job_id(session_id)
        with self._lock:
            self._finished[job_id] = JobState(job_id=job_id, status="failed" if report is None else "complete",
                                              report=report)
            self._finished.move_to_end(job_id)
            while len(self._finished) > KEPT_RESULTS:
                self._finished.popitem(last=False)
            if self._pending.get(session_id) is done:
                del self._pending[session_id]
