"""The Litestar app: thin handlers over ``engine.service.Engine``; no business logic lives here.

Every error leaves as RFC 9457 problem details (``application/problem+json``); request validation errors are 422
and name the offending field.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from litestar import Litestar, Request, Response, get, post
from litestar.di import Provide
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import SwaggerRenderPlugin
from pydantic import BaseModel, ConfigDict, Field

from api.auth import KeyStore, Principal, scoped
from api.lifecycle import lifecycle_routes
from api.memories import memory_routes
from api.security import authenticator, require
from api.tenancy import scope_query, scope_turn, unscope_result
from api.tuning import default_transcript_dirs, tuning_routes
from api.tuning_page import tuning_page
from engine.errors import (
    BackendRejected,
    BackendUnavailable,
    ConfigurationError,
    FeltsenseError,
    Forbidden,
    InvalidInput,
    NotFound,
)
from engine.jobs import JobQueue
from engine.models import AwareDatetime, CloseReport, IngestReport, Partition, RecallQuery, RecallResult, Turn
from engine.service import Engine
from engine.tuning_store import TuningStore

log = logging.getLogger("feltsense.api")
access = logging.getLogger("feltsense.access")
PROBLEM_JSON = "application/problem+json"
MAX_TURNS_PER_BATCH = 500


class TurnBatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    turns: list[Turn] = Field(min_length=1, max_length=MAX_TURNS_PER_BATCH)


class CloseRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    closed_at: AwareDatetime | None = Field(default=None, description="when the session ended; now when left out")


class Health(BaseModel):
    status: str


def _problem(status: int, title: str, detail: str, **extra: Any) -> Response[dict[str, Any]]:
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    headers = {}
    if "retry_after_s" in extra:
        headers["Retry-After"] = str(extra["retry_after_s"])
    return Response(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def _validation_problem(request: Request[Any, Any, Any], exc: ValidationException) -> Response[dict[str, Any]]:
    errors = []
    for item in exc.extra if isinstance(exc.extra, list) else []:
        if isinstance(item, dict):
            key = item.get("key") or ""
            errors.append({"field": key, "message": item.get("message", "")})
    fields = ", ".join(e["field"] for e in errors if e["field"]) or "the request body"
    return _problem(422, "Invalid request", f"invalid value for {fields}", errors=errors)


def _http_problem(request: Request[Any, Any, Any], exc: HTTPException) -> Response[dict[str, Any]]:
    return _problem(exc.status_code, "HTTP error", exc.detail)


def _domain_problem(request: Request[Any, Any, Any], exc: FeltsenseError) -> Response[dict[str, Any]]:
    if isinstance(exc, NotFound):
        return _problem(404, "Not found", str(exc))
    if isinstance(exc, Forbidden):
        return _problem(403, "Forbidden", str(exc))
    if isinstance(exc, InvalidInput):
        return _problem(422, "Invalid request", str(exc), errors=[{"field": exc.field or "", "message": str(exc)}])
    if isinstance(exc, BackendUnavailable):
        return _problem(503, "Backend unavailable", str(exc), backend=exc.backend, retry_after_s=exc.retry_after_s)
    if isinstance(exc, BackendRejected):
        return _problem(502, "Backend rejected the request", str(exc), backend=exc.backend)
    if isinstance(exc, ConfigurationError):
        return _problem(500, "Misconfigured service", str(exc))
    return _problem(500, "Internal error", "an unexpected engine error occurred")


@post("/v1/turns", status_code=200, sync_to_thread=True, summary="Append turns (idempotent by turn id)")
def ingest_turns(data: TurnBatch, engine: Engine, principal: Principal) -> IngestReport:
    require(principal, "runtime")
    return engine.ingest([scope_turn(principal.org, turn) for turn in data.turns])


@post("/v1/sessions/{session_id:str}/close", status_code=200, sync_to_thread=True,
      summary="Close a session: run the write-time pass over its memories")
def close_session(
    session_id: str, engine: Engine, principal: Principal, data: CloseRequest | None = None
) -> CloseReport:
    require(principal, "runtime")
    closed_at: datetime | None = data.closed_at if data else None
    report = engine.close_session(scoped(principal.org, session_id), closed_at=closed_at)
    return report.model_copy(update={"session_id": session_id})


@post("/v1/recall", status_code=200, sync_to_thread=True,
      summary="Recall for one turn: ranked memories, tone constraints and the assembled context")
def recall(data: RecallQuery, engine: Engine, principal: Principal) -> RecallResult:
    require(principal, "runtime", "evaluator")
    result = unscope_result(principal.org, engine.recall(scope_query(principal.org, data)))
    # The access log records which mode answered, so a stretch of degraded recall can be found afterwards.
    access.log(
        logging.INFO if result.trace.mode == "hybrid" else logging.WARNING,
        "recall character=%s user=%s mode=%s memories=%d tone=%d standing=%d total_ms=%.2f",
        data.character_id, data.user_id, result.trace.mode, len(result.memories), len(result.tone_constraints),
        len(result.standing_rules), result.trace.timings_ms.get("total_ms", 0.0),
    )
    return result


@get("/healthz", summary="Liveness")
async def healthz() -> Health:
    return Health(status="ok")


# -- background jobs and readiness ---------------------------------------------------------------------------

SWEEP_EVERY = timedelta(days=1)
READY_CHECK_TIMEOUT_S = 5.0
READY_RETRY_AFTER_S = 5


class CloseQueued(BaseModel):
    session_id: str
    job_id: str = Field(description="the write-time job; derived from the session, so a repeated close shares it")
    queued: bool = True


class Readiness(BaseModel):
    status: str
    checks: dict[str, str] = Field(description="each dependency: ok or unavailable")


@post("/v1/sessions/{session_id:str}/close", status_code=202,
      summary="Close a session: queue the write-time pass over its memories (202 with the job id)")
async def enqueue_close(
    session_id: str, engine: Engine, jobs: JobQueue, principal: Principal, data: CloseRequest | None = None
) -> CloseQueued:
    # Registered instead of close_session when create_app is given a job queue.
    require(principal, "runtime")
    engine_session = scoped(principal.org, session_id)
    if not await asyncio.to_thread(engine.store.get_turns, engine_session):
        raise NotFound(f"no session {session_id!r}")  # answered now: a queued job could only fail later
    closed_at = data.closed_at if data and data.closed_at else engine.clock()
    job_id = await jobs.enqueue_write(engine_session, closed_at)
    return CloseQueued(session_id=session_id, job_id=job_id)


async def _ready_check(name: str, check: Callable[[], Awaitable[object]]) -> tuple[str, str]:
    try:
        await asyncio.wait_for(check(), READY_CHECK_TIMEOUT_S)
    except Exception as exc:
        # Details go to the log only: the probe is unauthenticated, and errors can name internal addresses.
        log.warning("readiness: %s is unavailable: %s: %s", name, type(exc).__name__, exc)
        return name, "unavailable"
    return name, "ok"


@get("/readyz", summary="Readiness: the store, the embedder and the job queue answer")
async def readyz(engine: Engine, jobs: JobQueue | None) -> Response[Any]:
    probe = Partition(character_id="readyz", user_id="readyz")
    checks = [
        _ready_check("store", lambda: asyncio.to_thread(engine.store.count, probe)),
        _ready_check("embedder", lambda: asyncio.to_thread(engine.embedder.embed, ["readiness probe"])),
    ]
    if jobs is not None:
        checks.append(_ready_check(jobs.backend, jobs.ping))
    results = dict(await asyncio.gather(*checks))
    if all(status == "ok" for status in results.values()):
        return Response(Readiness(status="ready", checks=results))
    failing = ", ".join(name for name, status in results.items() if status != "ok")
    return _problem(503, "Not ready", f"unavailable: {failing}", checks=results, retry_after_s=READY_RETRY_AFTER_S)


def create_app(
    engine: Engine, *, keys: KeyStore, tuning: TuningStore | None = None, retry_interval_s: float = 30.0,
    jobs: JobQueue | None = None, transcript_dirs: Sequence[Path] | None = None,
) -> Litestar:
    """The app over one engine. Every request authenticates with a key from ``keys``; tuning endpoints need a
    persistent ``tuning`` store. The background pass (vector backfill, pending traces) runs every
    ``retry_interval_s``. With ``jobs``, closing a session queues its write-time pass there (202; the app enters
    the queue for its lifetime); without, the close runs it in the request (200 with the CloseReport). The tuning
    page offers the transcripts in ``transcript_dirs`` (default: the checkout's tests/transcripts and the shared
    examples) for replay."""
    dirs = tuple(default_transcript_dirs() if transcript_dirs is None else transcript_dirs)

    @contextlib.asynccontextmanager
    async def retry_pending(app: Litestar) -> AsyncIterator[None]:
        async def loop() -> None:
            last_sweep = engine.clock()
            while True:
                await asyncio.sleep(retry_interval_s)
                done = await asyncio.to_thread(engine.background_pass)
                if done["vectors"] or done["traces"]:
                    log.info("background pass: %d vectors backfilled, %d pending traces written",
                             done["vectors"], done["traces"])
                if jobs is None and engine.clock() - last_sweep >= SWEEP_EVERY:
                    # Without a worker, the service runs the nightly sweep itself, once a day.
                    last_sweep = engine.clock()
                    swept = await asyncio.to_thread(engine.sweep)
                    log.info("sweep: %s", swept.model_dump())

        task = asyncio.create_task(loop())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    return Litestar(
        route_handlers=[ingest_turns, close_session if jobs is None else enqueue_close, recall, healthz, readyz,
                        *memory_routes, *tuning_routes, *lifecycle_routes, tuning_page],
        dependencies={
            "engine": Provide(lambda: engine, use_cache=True, sync_to_thread=False),
            "principal": Provide(authenticator(keys), sync_to_thread=False),
            "tuning": Provide(lambda: tuning, use_cache=True, sync_to_thread=False),
            "jobs": Provide(lambda: jobs, use_cache=True, sync_to_thread=False),
            "transcript_dirs": Provide(lambda: dirs, use_cache=True, sync_to_thread=False),
        },
        exception_handlers={
            ValidationException: _validation_problem,
            FeltsenseError: _domain_problem,
            HTTPException: _http_problem,
        },
        lifespan=[retry_pending] if jobs is None else [jobs, retry_pending],  # the queue outlives the loop
        openapi_config=OpenAPIConfig(title="feltsense", version="0.1.0", path="/docs",
                                     render_plugins=[SwaggerRenderPlugin()]),
        request_max_body_size=2 * 1024 * 1024,
        logging_config=None,  # the process configures logging (api/server.py); the app only emits records
    )
