"""The Litestar app: thin handlers over ``engine.service.Engine``; no business logic lives here.

Handlers answer with the wire models of ``feltsense_client.models`` (or the API's own views), never the engine's
types: ``api.wire.to_wire`` converts at the boundary, so a change to the engine is not a change to the contract.

Every error leaves as RFC 9457 problem details (``application/problem+json``); request validation errors are 422
and name the offending field.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

from feltsense_client.models import CloseReport, CompactRecall, IngestReport, JobState, JobStatus, RecallResult
from litestar import Litestar, Request, Response, asgi, get, post
from litestar.di import Provide
from litestar.exceptions import ClientException, HTTPException, SerializationException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, JSONBody, Parameter
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo

from api.auth import KeyStore
from api.boundary import (
    AUTHENTICATED,
    PROBLEM_JSON,
    WITH_BODY,
    DetailQuery,
    OptionalBody,
    RoundedJSON,
    problems,
    recall_answer,
    user_partition,
)
from api.dependencies import EngineDep, JobsDep, MetricsDep, OptionalJobsDep, PrincipalDep
from api.docs import bearer_documented, docs_routes, openapi_config
from api.export import TooLarge, export_routes
from api.lifecycle import lifecycle_routes
from api.memories import memory_routes
from api.metrics import Metrics, metrics_route
from api.resolutions import resolution_routes
from api.security import authenticator, require
from api.tenancy import scope_query, scope_turn, scoped, unscope_result, unscoped
from api.tuning import tuning_routes
from api.tuning_page import tuning_page
from api.wire import to_wire
from engine import Engine
from engine.domain.errors import (
    BackendRejected,
    BackendUnavailable,
    Busy,
    ConfigurationError,
    Conflict,
    FeltsenseError,
    Forbidden,
    Gone,
    InvalidInput,
    NotFound,
)
from engine.domain.models import AwareDatetime, Identifier, RecallQuery, Turn
from engine.domain.ports import ProfileStore
from engine.jobs import FINISHED, JobQueue, write_job_id
from engine.jobs import JobState as QueuedJob
from engine.replay_runner import ReplayRunner, ThreadWorkers
from engine.settings import DEFAULT_TRANSCRIPT_DIRS

log = logging.getLogger("feltsense.api")
access = logging.getLogger("feltsense.access")
MAX_TURNS_PER_BATCH = 500
MAX_BODY_BYTES = 2 * 1024 * 1024
EARLIEST_TURN = datetime(1970, 1, 1, tzinfo=UTC)
CLOCK_SKEW = timedelta(days=1)


def _not_a_number(value: object, info: ValidationInfo) -> object:
    # Pydantic would read 0 as 1970-01-01T00:00:00Z: an unset field in a runtime stored as a real time.
    if isinstance(value, int | float):
        raise ValueError(f"{info.field_name} must be an ISO-8601 string with a time zone "
                         "(e.g. 2025-03-01T18:00:00Z), not a number")
    return value


def _by_now(value: datetime, info: ValidationInfo) -> datetime:
    if value < EARLIEST_TURN:
        raise ValueError(f"{info.field_name} {value.isoformat()} is before 1970-01-01T00:00:00Z: not a real time")
    latest = datetime.now(UTC) + CLOCK_SKEW
    if value > latest:
        raise ValueError(f"{info.field_name} {value.isoformat()} is more than a day ahead of the server's clock "
                         f"(latest accepted: {latest.isoformat(timespec='seconds')})")
    return value


ReportedTime = Annotated[AwareDatetime, BeforeValidator(_not_a_number), AfterValidator(_by_now)]
"""A time a runtime reports (a turn said, a recall made, a session closed): between 1970 and the server's now
plus a day of clock skew. A recall at year 9999 would stamp its memories retrieved in 9999 for good."""


class ReportedTurn(Turn):
    """A turn as a runtime reports it: said between 1970 and the server's now (plus a day of clock skew).

    A year-0001 or year-9999 turn is a bug upstream; stored, it would skew every age, decay and "N days ago".
    The bound lives here, not on ``Turn``: a replayed transcript may be dated ahead of the server's clock.
    Its ids are the caller's, at most 200 characters; ``Turn`` leaves room for the organisation they get.
    """

    turn_id: Identifier
    session_id: Identifier
    character_id: Identifier
    timestamp: ReportedTime


class TurnBatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    turns: list[ReportedTurn] = Field(min_length=1, max_length=MAX_TURNS_PER_BATCH)


class CloseRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    closed_at: ReportedTime | None = Field(default=None, description="when the session ended; now when left out")


class RecallRequest(RecallQuery):
    """A recall as a runtime asks for it: ``at`` bounded like a turn's time (``RecallQuery`` is not, for replay)."""

    at: ReportedTime | None = Field(default=None, description="the turn's time; now when left out")


class Health(BaseModel):
    status: str


def _problem(status: int, title: str, detail: str, **extra: Any) -> Response[dict[str, Any]]:
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    headers = {}
    if "retry_after_s" in extra:
        headers["Retry-After"] = str(extra["retry_after_s"])
    return Response(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


_MISSING_PARAMETER = re.compile(r"Missing required (query|header|path|cookie) parameter '([^']+)'")
_LOCATIONS = frozenset({"body", "query", "path", "header", "cookie"})


def _located(request: Request[Any, Any, Any], field: str | None, message: str) -> dict[str, str]:
    """A field error with where the field was: a query or path parameter of this request, else the body."""
    key = field or ""
    where = "query" if key and key in request.query_params else "path" if key and key in request.path_params else "body"
    return {"field": key, "location": where, "message": message}


def _validation_problem(request: Request[Any, Any, Any], exc: ValidationException) -> Response[dict[str, Any]]:
    """A 422 that names each missing or bad field and where it was expected; ``errors`` is never empty."""
    errors = []
    for item in exc.extra if isinstance(exc.extra, list) else []:
        if isinstance(item, dict):
            located = _located(request, str(item.get("key") or ""), str(item.get("message", "")))
            if str(item.get("source") or "") in _LOCATIONS:
                located["location"] = str(item["source"])
            errors.append(located)
    missing = _MISSING_PARAMETER.search(str(exc.detail))
    if missing and not errors:
        where, name = missing.groups()
        errors.append({"field": name, "location": where, "message": f"the {where} parameter {name!r} is required"})
        return _problem(422, "Invalid request", f"missing required {where} parameter {name!r}", errors=errors)
    if not errors:
        errors.append({"field": "", "location": "body", "message": str(exc.detail)})
    named = [f"{e['field']} ({e['location']})" for e in errors if e["field"]]
    return _problem(422, "Invalid request", f"invalid value for {', '.join(named) or 'the request body'}",
                    errors=errors)


def _http_problem(request: Request[Any, Any, Any], exc: HTTPException) -> Response[dict[str, Any]]:
    detail = exc.detail
    if exc.status_code == 413:  # Litestar's own detail ("Request Entity Too Large") names no limit
        detail = f"the request body is larger than the {MAX_BODY_BYTES} bytes this service accepts"
    response = _problem(exc.status_code, "HTTP error", detail)
    if exc.status_code == 401:
        response.headers["WWW-Authenticate"] = "Bearer"  # RFC 9110: a 401 names the scheme to use
    return response


async def _check_body(request: Request[Any, Any, Any]) -> None:
    """Refuse, with a clear 4xx, the bodies the JSON decoder would not: a declared non-JSON content type (415;
    Litestar would parse it as JSON anyway) and JSON nested so deeply that decoding it exhausts the stack (400;
    the decoder's RecursionError would otherwise be a 500). The decoded body is cached for the handler."""
    if "data" not in request.route_handler.parsed_fn_signature.parameters:
        return
    declared = request.headers.get("content-type")
    if declared is not None:
        media_type = declared.split(";", 1)[0].strip().lower()
        if media_type != "application/json" and not media_type.endswith("+json"):
            raise HTTPException(status_code=415, detail=f"the body must be application/json, not {media_type!r}")
    try:
        await request.json()
    except RecursionError as exc:
        raise ClientException("the body is not valid JSON: it is nested too deeply to decode") from exc
    except SerializationException as exc:
        raise ClientException(f"the body is not valid JSON: {exc}") from exc


def _unexpected_problem(request: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    """Whatever no other handler maps: logged with its traceback under a fresh request id, which the answer
    carries so a report can be matched to the log. The answer says nothing of the error itself: its text can
    name internal paths or a user's words."""
    request_id = uuid.uuid4().hex
    # %r: the path is the caller's, and a decoded newline in it must not forge a log line.
    log.error("unexpected %s on %s %r (request_id=%s)", type(exc).__name__, request.method, request.url.path,
              request_id, exc_info=exc)
    response = _problem(500, "Internal error",
                        f"an unexpected error occurred; the service log has it under request id {request_id}",
                        request_id=request_id)
    response.headers["X-Request-ID"] = request_id
    return response


def _domain_problem(request: Request[Any, Any, Any], exc: FeltsenseError) -> Response[dict[str, Any]]:
    if isinstance(exc, NotFound):
        return _problem(404, "Not found", str(exc))
    if isinstance(exc, Forbidden):
        return _problem(403, "Forbidden", str(exc))
    if isinstance(exc, Conflict):
        return _problem(409, "Conflict", str(exc), ids=list(exc.ids), errors=[_located(request, exc.field, str(exc))])
    if isinstance(exc, Gone):
        return _problem(410, "Gone", str(exc), ids=list(exc.ids))
    if isinstance(exc, InvalidInput):
        return _problem(422, "Invalid request", str(exc), errors=[_located(request, exc.field, str(exc))])
    if isinstance(exc, Busy):
        return _problem(429, "Too many requests", str(exc), retry_after_s=exc.retry_after_s)
    if isinstance(exc, BackendUnavailable):
        return _problem(503, "Backend unavailable", str(exc), backend=exc.backend, retry_after_s=exc.retry_after_s)
    if isinstance(exc, BackendRejected):
        return _problem(502, "Backend rejected the request", str(exc), backend=exc.backend)
    if isinstance(exc, ConfigurationError):
        return _problem(500, "Misconfigured service", str(exc))
    if isinstance(exc, TooLarge):
        return _problem(413, "Too large for one document", str(exc))
    return _unexpected_problem(request, exc)


@post("/v1/turns", status_code=200, sync_to_thread=True, summary="Append turns (idempotent by turn id)",
      responses=problems(*WITH_BODY, 409, 410))
def ingest_turns(
    data: JSONBody[TurnBatch], engine: EngineDep, principal: PrincipalDep, metrics: MetricsDep
) -> IngestReport:
    require(principal, "runtime")
    try:
        report = engine.ingest([scope_turn(principal.org, turn) for turn in data.turns])
        metrics.ingested(report)
        return to_wire(IngestReport, report)
    except (Conflict, Gone) as exc:  # name the caller's ids, not the organisation-scoped ones the engine stores
        message = str(exc).replace(f"'{scoped(principal.org, '')}", "'")
        ids = tuple(unscoped(principal.org, i) for i in exc.ids)
        raise (Conflict(message, ids=ids, field=exc.field) if isinstance(exc, Conflict)
               else Gone(message, ids=ids)) from None


@post("/v1/sessions/{session_id:str}/close", status_code=200, sync_to_thread=True,
      summary="Close a session: run the write-time pass over its memories",
      responses=problems(*WITH_BODY, 404), operation_class=OptionalBody)
def close_session(
    session_id: FromPath[str], engine: EngineDep, principal: PrincipalDep, metrics: MetricsDep,
    data: JSONBody[CloseRequest | None] = None,
) -> CloseReport:
    require(principal, "runtime")
    closed_at: datetime | None = data.closed_at if data else None
    report = engine.close_session(scoped(principal.org, session_id), closed_at=closed_at)
    metrics.closed()
    return to_wire(CloseReport, report.model_copy(update={"session_id": session_id}))


@post("/v1/recall", status_code=200, sync_to_thread=True,
      summary="Recall for one turn: the assembled context, the tone rules and the memories in brief "
              "(detail=full: the whole result with every trace)",
      responses=problems(*WITH_BODY), response_class=RoundedJSON)
def recall(
    data: JSONBody[RecallRequest], engine: EngineDep, principal: PrincipalDep, metrics: MetricsDep,
    detail: DetailQuery = "compact",
) -> CompactRecall | RecallResult:
    require(principal, "runtime", "evaluator")
    started = time.perf_counter()
    result = unscope_result(principal.org, engine.recall(scope_query(principal.org, data)))
    metrics.recalled(result, time.perf_counter() - started)
    # The access log records which mode answered, so a stretch of degraded recall can be found afterwards.
    access.log(
        logging.INFO if result.trace.mode == "hybrid" else logging.WARNING,
        "recall character=%s user=%s mode=%s memories=%d tone=%d standing=%d total_ms=%.2f",
        data.character_id, data.user_id, result.trace.mode, len(result.memories), len(result.tone_constraints),
        len(result.standing_rules), result.trace.timings_ms.get("total_ms", 0.0),
    )
    return recall_answer(result, detail)


@get("/healthz", summary="Liveness")
async def healthz() -> Health:
    return Health(status="ok")


# -- background jobs and readiness ---------------------------------------------------------------------------

SWEEP_EVERY = timedelta(days=1)
READY_CHECK_TIMEOUT_S = 5.0
READY_RETRY_AFTER_S = 5


MAX_CLOSE_WAIT_S = 30.0
"""The longest a close may wait for its write-time pass (``?wait=true``); a longer pass answers 202 and is polled."""
JOB_POLL_S = 0.05


class CloseQueued(BaseModel):
    session_id: str
    job_id: str = Field(description="the write-time job; derived from the session, so a repeated close shares it. "
                                    "GET /v1/jobs/{job_id} tells where it is")
    queued: bool = True
    status: JobStatus = Field(default="queued", description="where the job was when the close answered")
    report: CloseReport | None = Field(default=None, description="the pass's report, when the close waited for it")
    traces_pending: int | None = Field(
        default=None, description="with wait: the session's memories still without a trace when the close "
                                  "answered (0 with a 200). A close again soon after a pass (arq keeps a finished "
                                  "job's id for a while) is written by the background retry instead")


class Readiness(BaseModel):
    status: str
    checks: dict[str, str] = Field(description="each dependency: ok or unavailable")


@post("/v1/sessions/{session_id:str}/close", status_code=202,
      summary="Close a session: queue the write-time pass over its memories (202 with the job id; 200 once it ran, "
              "with wait=true)",
      responses={200: ResponseSpec(CloseQueued, description="wait=true: the pass has run, every memory has its "
                                                            "trace"), **problems(*WITH_BODY, 404)},
      operation_class=OptionalBody)
async def enqueue_close(
    session_id: FromPath[str], engine: EngineDep, jobs: JobsDep, principal: PrincipalDep, metrics: MetricsDep,
    data: JSONBody[CloseRequest | None] = None,
    wait: bool = Parameter(default=False, description="answer once the write-time pass has run (200), or after "
                                                      "timeout_s with the job still pending (202)"),
    timeout_s: float = Parameter(default=10.0, gt=0, le=MAX_CLOSE_WAIT_S,
                                 description="with wait: the longest to wait, in seconds"),
) -> Response[CloseQueued]:
    # Registered instead of close_session when create_app is given a job queue.
    require(principal, "runtime")
    engine_session = scoped(principal.org, session_id)
    closed_at = data.closed_at if data and data.closed_at else engine.clock()
    # Recorded before it is queued, so a job lost with the queue is still written by the retry of pending traces;
    # an unknown session is answered now (a queued job could only fail later).
    try:
        await asyncio.to_thread(engine.accept_close, engine_session, closed_at=closed_at)
    except NotFound:
        raise NotFound(f"no session {session_id!r}") from None
    job_id = await jobs.enqueue_write(engine_session, closed_at)
    metrics.closed()
    pending: int | None = None
    if wait:
        state, pending = await _wait_for(engine, jobs, engine_session, closed_at, job_id, timeout_s)
    else:
        state = await jobs.state(job_id)
    if state.status == "unknown":  # an arq job may have run and expired already; it was queued just now
        state = state.model_copy(update={"status": "queued"})
    report = to_wire(CloseReport, state.report.model_copy(update={"session_id": session_id})) if state.report else None
    done = CloseQueued(session_id=session_id, job_id=job_id, queued=state.status not in FINISHED,
                       status=state.status, traces_pending=pending, report=report)
    return Response(done, status_code=200 if wait and state.status in FINISHED and not pending else 202)


async def _wait_for(engine: Engine, jobs: JobQueue, session_id: str, closed_at: datetime, job_id: str,
                    timeout_s: float) -> tuple[QueuedJob, int]:
    """Poll until the job has finished and the session has no pending trace, or until ``timeout_s``. A job that
    finished before this close's new turns (the pass was already running, or arq still held a finished job's id)
    leaves them pending: it is queued once more, which the in-process queue takes; else the retry writes them."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    requeued = False
    while True:
        state = await jobs.state(job_id)
        pending = await asyncio.to_thread(engine.pending_traces, session_id)
        finished = state.status in FINISHED
        if (finished and not pending) or asyncio.get_running_loop().time() >= deadline:
            return state, pending
        if finished and not requeued:
            requeued = True
            await jobs.enqueue_write(session_id, closed_at)
        await asyncio.sleep(JOB_POLL_S)


@get("/v1/jobs/{job_id:str}", summary="A write-time job's status: queued, running, complete (with its report), "
     "failed or unknown", responses=problems(*AUTHENTICATED, 404))
async def job_status(job_id: FromPath[str], jobs: OptionalJobsDep, principal: PrincipalDep) -> JobState:
    require(principal, "runtime", "evaluator")
    prefix = write_job_id(scoped(principal.org, ""))
    if jobs is None or not job_id.startswith(prefix):  # another organisation's job is a 404, like its memories
        raise NotFound(f"no job {job_id!r}")
    state = await jobs.state(job_id)
    if state.report is not None:
        state = state.model_copy(update={"report": state.report.model_copy(
            update={"session_id": unscoped(principal.org, state.report.session_id)})})
    return to_wire(JobState, state)


async def _ready_check(name: str, check: Callable[[], Awaitable[object]]) -> tuple[str, str]:
    try:
        await asyncio.wait_for(check(), READY_CHECK_TIMEOUT_S)
    except Exception as exc:
        # Details go to the log only: the probe is unauthenticated, and errors can name internal addresses.
        log.warning("readiness: %s is unavailable: %s: %s", name, type(exc).__name__, exc)
        return name, "unavailable"
    return name, "ok"


@get("/readyz", summary="Readiness: the store, the embedder and the job queue answer", responses=problems(503))
async def readyz(engine: EngineDep, jobs: OptionalJobsDep) -> Response[Any]:
    checks = [
        _ready_check("store", lambda: asyncio.to_thread(engine.ping_store)),
        _ready_check("embedder", lambda: asyncio.to_thread(engine.ping_embedder)),
        _ready_check("ledger", lambda: asyncio.to_thread(engine.ping_ledger)),
    ]
    if jobs is not None:
        checks.append(_ready_check(jobs.backend, jobs.ping))
    results = dict(await asyncio.gather(*checks))
    if all(status == "ok" for status in results.values()):
        return Response(Readiness(status="ready", checks=results))
    failing = ", ".join(name for name, status in results.items() if status != "ok")
    return _problem(503, "Not ready", f"unavailable: {failing}", checks=results, retry_after_s=READY_RETRY_AFTER_S)


def create_app(
    engine: Engine, *, keys: KeyStore, tuning: ProfileStore | None = None, retry_interval_s: float = 30.0,
    jobs: JobQueue | None = None, transcript_dirs: Sequence[Path] | None = None, replays: ReplayRunner | None = None,
    mcp: bool = False,
) -> Litestar:
    """The app over one engine. Every request authenticates with a key from ``keys``; tuning endpoints need a
    persistent ``tuning`` store. The background pass (vector backfill, pending traces) runs every
    ``retry_interval_s``. With ``jobs``, closing a session queues its write-time pass there (202; the app enters
    the queue for its lifetime); without, the close runs it in the request (200 with the CloseReport). The tuning
    page offers the transcripts in ``transcript_dirs`` (default: the setting's default, tests/transcripts and the
    shared examples relative to the working directory; missing ones are skipped) for replay. Replays run on
    ``replays`` (default: a thread of this process, over the engine's embedder and classifier; the service passes
    worker processes). With ``mcp``, the MCP server's streamable HTTP transport is mounted at ``/mcp``
    (``api.mcp_server``): its tools call this app, with the caller's key."""
    dirs = tuple(DEFAULT_TRANSCRIPT_DIRS if transcript_dirs is None else transcript_dirs)
    replay_runner = replays or ReplayRunner(ThreadWorkers(lambda: engine.components()))  # read when a replay runs
    metrics = Metrics(engine, jobs)

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

    extra_routes: list[Any] = []
    lifespans: list[Any] = [retry_pending] if jobs is None else [jobs, retry_pending]  # the queue outlives the loop
    served: list[Litestar] = []
    if mcp:
        from api.mcp_server import BearerGate, build_mcp, in_process_caller, running

        async def this_app(scope: Any, receive: Any, send: Any) -> None:  # the app below, once it exists
            await served[0](scope, receive, send)

        call, close_caller = in_process_caller(this_app)
        server = build_mcp(call)
        gate = BearerGate(server.streamable_http_app(), keys)

        @asgi("/mcp", is_mount=True, copy_scope=True)
        async def mcp_transport(scope: Any, receive: Any, send: Any) -> None:
            await gate(scope, receive, send)

        @contextlib.asynccontextmanager
        async def mcp_lifetime(app: Litestar) -> AsyncIterator[None]:
            async with running(server):
                try:
                    yield
                finally:
                    await close_caller()

        extra_routes.append(mcp_transport)
        lifespans.append(mcp_lifetime)

    served.append(Litestar(
        route_handlers=[*bearer_documented([
            ingest_turns, close_session if jobs is None else enqueue_close, job_status, recall, healthz, readyz,
            *memory_routes, *export_routes, *tuning_routes, *lifecycle_routes, *resolution_routes, tuning_page]),
            *docs_routes, metrics_route(metrics), *extra_routes],
        dependencies={
            "engine": Provide(lambda: engine, use_cache=True, sync_to_thread=False),
            "principal": Provide(authenticator(keys), sync_to_thread=True),
            "partition": Provide(user_partition, sync_to_thread=False),
            "tuning": Provide(lambda: tuning, use_cache=True, sync_to_thread=False),
            "jobs": Provide(lambda: jobs, use_cache=True, sync_to_thread=False),
            "transcript_dirs": Provide(lambda: dirs, use_cache=True, sync_to_thread=False),
            "replays": Provide(lambda: replay_runner, use_cache=True, sync_to_thread=False),
            "metrics": Provide(lambda: metrics, use_cache=True, sync_to_thread=False),
        },
        before_request=_check_body,
        exception_handlers={
            ValidationException: _validation_problem,
            FeltsenseError: _domain_problem,
            HTTPException: _http_problem,
            Exception: _unexpected_problem,
        },
        lifespan=lifespans,
        openapi_config=openapi_config(),
        request_max_body_size=MAX_BODY_BYTES,
        logging_config=None,  # the process configures logging (api/server.py); the app only emits records
    ))
    return served[0]
