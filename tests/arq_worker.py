"""Running the real arq worker in tests: burst mode over the real WorkerSettings, with short retries."""

from __future__ import annotations

from arq.worker import Worker

from api.worker import create_worker


async def burst(redis_url: str, engine: object) -> Worker:
    """Run a worker over the real WorkerSettings until the queue is empty; retries wait 50 ms, not minutes."""
    worker = create_worker(redis_url, engine=engine, burst=True, poll_delay=0.02, handle_signals=False,  # type: ignore[arg-type]
                           retry_backoff_s=(0.05,))
    try:
        await worker.async_run()
    finally:
        await worker.close()
    return worker
