"""The real service, as `make serve` runs it: a process on a loopback port over the embedded default.

Stopping and starting it again must keep every memory and trace (the store is durable in its data directory).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.servers.feltsense import FeltsenseService

pytestmark = pytest.mark.slow


Service = FeltsenseService


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    running = Service(tmp_path / "data")
    yield running
    running.stop()


LUNA = [
    ("user", "Hey Ava. Sorry I've been quiet. My dog Luna died last week."),
    ("character", "Oh no. I'm so sorry. How are you holding up?"),
    ("user", "Not great honestly. She was fourteen. Luna and I walked in the park every single morning."),
]


def _auth(service: Service) -> dict[str, str]:
    """The development key `make serve` prints (and keeps in the data directory)."""
    return service.headers()


def _recall(service: Service) -> dict[str, Any]:
    # The full answer: the restart must keep each memory's write-time trace, which the compact one leaves out.
    response = httpx.post(f"{service.url}/v1/recall?detail=full", headers=_auth(service), json={
        "character_id": "ava", "user_id": "tester-1", "message": "I went for a walk in the park this morning.",
        "session_id": "s2", "at": "2025-03-11T09:00:00Z"}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _recall_once_written(service: Service, timeout_s: float = 30.0) -> dict[str, Any]:
    """Recall once the queued write-time pass has written the traces (the close answered 202)."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = _recall(service)
        if result["tone_constraints"] or time.monotonic() > deadline:
            return result
        time.sleep(0.2)


def test_a_restart_keeps_every_memory_and_trace(service: Service) -> None:
    service.start()
    turns = [
        {"turn_id": f"s1-{i}", "session_id": "s1", "character_id": "ava", "user_id": "tester-1", "role": role,
         "text": text, "timestamp": f"2025-03-02T18:0{i}:00Z"}
        for i, (role, text) in enumerate(LUNA)
    ]
    ingested = httpx.post(f"{service.url}/v1/turns", json={"turns": turns}, headers=_auth(service), timeout=30)
    assert ingested.json()["memories"] == 2
    closed = httpx.post(f"{service.url}/v1/sessions/s1/close", json={"closed_at": "2025-03-02T18:10:00Z"},
                        headers=_auth(service), timeout=30)
    assert closed.status_code == 202, closed.text
    answered = closed.json()
    assert {k: answered[k] for k in ("session_id", "job_id", "queued")} == {
        "session_id": "s1", "job_id": "write-session:dev:s1", "queued": True}
    before = _recall_once_written(service)
    assert any("Luna" in m["text"] for m in before["memories"])
    assert any(c["register"] in {"grief", "sadness"} for c in before["tone_constraints"])

    service.stop()
    service.start()
    after = _recall(service)
    # Same memories and traces. Scores may move: each recall counts as a retrieval in the strength signals.
    assert [{k: v for k, v in m.items() if k != "components"} for m in after["memories"]] == [
        {k: v for k, v in m.items() if k != "components"} for m in before["memories"]]
    assert after["tone_constraints"] == before["tone_constraints"]
    again = httpx.post(f"{service.url}/v1/turns", json={"turns": turns}, headers=_auth(service), timeout=30).json()
    assert (again["stored"], again["duplicates"], again["memories"]) == (0, 3, 0)
