"""Run the service: build the engine from settings, serve the app with uvicorn."""

from __future__ import annotations

import logging

from api.app import create_app
from api.auth import KeyStore
from api.jobs import ArqJobs, check_shared_store
from engine.factory import build_engine
from engine.jobs import InProcessJobs, JobQueue
from engine.settings import Settings
from engine.tuning_store import TuningStore

DEV_KEY_LINE = "feltsense development key (org dev, role runtime): {key}"


def key_store(settings: Settings) -> KeyStore:
    return KeyStore(settings.data_dir / "keys.sqlite3")


def serve(settings: Settings) -> None:
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    check_shared_store(settings)
    tuning = TuningStore(settings.data_dir / "tuning.sqlite3")
    keys = key_store(settings)
    engine = build_engine(settings, profiles=tuning)
    # Closing a session queues its write-time pass: in Redis for `feltsense worker`, or on a thread of this process.
    jobs: JobQueue = ArqJobs(settings.redis_url) if settings.redis_url else InProcessJobs(engine)
    app = create_app(engine, keys=keys, tuning=tuning, retry_interval_s=settings.background_interval_s, jobs=jobs)
    log = logging.getLogger("feltsense")
    if settings.store == "embedded":
        # The embedded default works out of the box: a development key, kept in the data directory.
        print(DEV_KEY_LINE.format(key=keys.development_key(settings.data_dir / "dev-key")), flush=True)
    log.info("feltsense on http://%s:%d (data in %s; OpenAPI docs at /docs)", settings.host, settings.port,
             settings.data_dir.resolve())
    log.info("write-time jobs run %s", "in Redis (run `feltsense worker`)" if settings.redis_url else "in-process")
    try:
        uvicorn.run(app, host=settings.host, port=settings.port, log_level="info",
                    access_log=settings.http_access_log)
    finally:
        engine.close()
        tuning.close()
        keys.close()
