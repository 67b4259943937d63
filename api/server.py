"""Run the service: build the engine from settings, serve the app with uvicorn."""

from __future__ import annotations

import logging
import shlex
import sys
from pathlib import Path
from typing import TextIO

from api.app import create_app
from api.auth import DEV_KEY_FILE, KeyStore
from api.jobs import ArqJobs, check_shared_store
from engine import build_engine, build_key_records, build_profile_store, check_settings, telemetry
from engine.domain.errors import ConfigurationError
from engine.jobs import InProcessJobs, JobQueue
from engine.replay_runner import ComponentsFromSettings, ProcessWorkers, ReplayRunner
from engine.settings import Settings

DEV_KEY_LINE = "feltsense development key (org dev, role runtime): {key}"


def key_store(settings: Settings) -> KeyStore:
    """The API keys: in PostgreSQL when ``FELTSENSE_POSTGRES__URL`` is set (shared by every API process on that
    database), else in ``keys.sqlite3`` in the data directory."""
    return KeyStore(build_key_records(settings))


def announce_development_key(keys: KeyStore, data_dir: Path, out: TextIO) -> None:
    """``serve --dev``: the development key, made the first time, and where it is. The secret itself is printed
    only to a terminal: a redirected stdout is a log file, kept and shared long after the key should be secret."""
    path = data_dir / DEV_KEY_FILE
    found = keys.development_key(path)
    create = f"`feltsense keys create --org dev --role runtime --data-dir {shlex.quote(str(data_dir))}`"
    if found.token is None:
        why = (f"was revoked at {found.revoked_at}" if found.revoked_at is not None
               else f"is no longer in {path} (revoke it: `feltsense keys revoke {found.key_id}`)")
        print(f"feltsense development key {found.key_id} {why}; it is never made again. Make a new key with "
              f"{create}.", file=out, flush=True)
    elif out.isatty():
        print(DEV_KEY_LINE.format(key=found.token), file=out, flush=True)
    else:
        print(f"feltsense development key (org dev, role runtime, id {found.key_id}) in {path.resolve()} "
              "(its secret is printed only to a terminal)", file=out, flush=True)


def serve(settings: Settings, *, dev: bool = False) -> None:
    """Serve until stopped. With ``dev``, the development key (``announce_development_key``). Settings that cannot
    work raise ConfigurationError before anything is opened, loaded or bound."""
    check_settings(settings)
    check_shared_store(settings)
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # The tokenizer's loader announces its special tokens at INFO: nothing a user can act on.
    logging.getLogger("mistral_common").setLevel(logging.WARNING)
    telemetry.configure_from_environment()  # OTEL_* settings; nothing without them
    tuning = build_profile_store(settings)
    keys = key_store(settings)
    engine = build_engine(settings, profiles=tuning)
    # Closing a session queues its write-time pass: in Redis for `feltsense worker`, or on a thread of this process.
    jobs: JobQueue = ArqJobs(settings.redis_url) if settings.redis_url else InProcessJobs(engine)
    # Tuning replays run in a worker process at a lower priority: on the request threads they starved recall.
    replay_workers = ProcessWorkers(ComponentsFromSettings(settings))
    replay_workers.warm_up()
    replays = ReplayRunner(replay_workers)
    app = create_app(engine, keys=keys, tuning=tuning, retry_interval_s=settings.background_interval_s, jobs=jobs,
                     replays=replays, transcript_dirs=settings.transcript_dirs, mcp=True)
    log = logging.getLogger("feltsense")
    if dev:
        announce_development_key(keys, settings.data_dir, sys.stdout)
    else:
        log.info("every /v1 call needs an API key: `feltsense keys create --org ORG --role runtime --data-dir %s` "
                 "prints one (`feltsense serve --dev` makes a development key)",
                 shlex.quote(str(settings.data_dir)))
    url = f"http://{settings.host}:{settings.port}"
    log.info("feltsense on %s: start page %s/, API docs %s/docs, tuning page %s/tuning, MCP %s/mcp (data in %s)", url,
             url, url, url, url, settings.data_dir.resolve())
    log.info("write-time jobs run %s", "in Redis (run `feltsense worker`)" if settings.redis_url else "in-process")
    closers = [replays.close, engine.close, tuning.close, keys.close, telemetry.shutdown]

    def close() -> None:
        while closers:
            closers.pop(0)()

    # uvicorn raises SIGTERM again once it has shut down, so no `finally` runs after a SIGTERM: the app's shutdown
    # hook closes the replay workers (their queues' semaphores would leak, with a warning) and the stores.
    app.on_shutdown.append(close)
    try:
        uvicorn.run(app, host=settings.host, port=settings.port, log_level="info",
                    access_log=settings.http_access_log)
    finally:
        close()


def serve_mcp_stdio(settings: Settings, key: str) -> None:
    """``feltsense mcp``: the MCP server over stdin and stdout, its tools calling an app built here over the
    settings' store, with ``key``. Closes run their write-time pass in the call (no job queue in this process).
    Logs go to stderr: stdout is the protocol's."""
    import anyio

    from api.mcp_server import build_mcp, in_process_caller

    check_settings(settings)
    check_shared_store(settings)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    telemetry.configure_from_environment()
    tuning = build_profile_store(settings)
    keys = key_store(settings)
    closers = [tuning.close, keys.close, telemetry.shutdown]
    try:
        found = keys.authenticate(key)
        if found is None or found.role == "operator":
            raise ConfigurationError("FELTSENSE_API_KEY is not a known, unrevoked runtime, admin or evaluator key "
                                     "of this deployment")
        engine = build_engine(settings, profiles=tuning)
        closers.insert(0, engine.close)
        app = create_app(engine, keys=keys, tuning=tuning, transcript_dirs=settings.transcript_dirs)
        call, close_caller = in_process_caller(app)
        server = build_mcp(call, stdio_key=key)

        async def run() -> None:
            try:
                await server.run_stdio_async()
            finally:
                await close_caller()

        anyio.run(run)
    finally:
        for close in closers:
            close()
