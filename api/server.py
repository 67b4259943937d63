"""Run the service: build the engine from settings, serve the app with uvicorn."""

from __future__ import annotations

import logging

from api.app import create_app
from engine.factory import build_engine
from engine.settings import Settings


def serve(settings: Settings) -> None:
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    engine = build_engine(settings)
    app = create_app(engine, retry_interval_s=settings.background_interval_s)
    logging.getLogger("feltsense").info(
        "feltsense on http://%s:%d (data in %s; OpenAPI docs at /docs)", settings.host, settings.port,
        settings.data_dir.resolve(),
    )
    try:
        uvicorn.run(app, host=settings.host, port=settings.port, log_level="info")
    finally:
        engine.close()
