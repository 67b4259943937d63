"""PostgreSQL down: the control plane (API keys, tuning, the ledger) unreachable answers 503 and loses nothing.

The app runs in process over a PostgreSQL of this module's own (killed with -9 and restarted; the session's server,
which other tests share, is never disturbed), with the PostgreSQL key store, tuning store and ledger, and the
embedded store with the hashing embedder. While PostgreSQL is down, every kind of request a runtime or a director
makes answers an RFC 9457 problem with status 503 and a ``Retry-After`` (never a 500, never a 401: an outage is not a
bad key), within the pool's timeout. After ``restart()`` the same app (its pools reconnect) answers again, every
batch acknowledged before the outage is still there, and a batch answered 503 is stored once when retried.

A crash point (``CrashingLedger``) kills the server right before a chosen ledger call, so a failure in the middle
of a request (after its key was checked) lands at the same place every run.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.auth import KeyStore
from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.postgres.keys import PostgresKeyRecords
from engine.adapters.postgres.ledger import PostgresLedger
from engine.adapters.postgres.tuning import PostgresTuningStore
from engine.domain.models import Resolution
from engine.service import Engine
from tests.fakes import KeywordClassifier
from tests.servers import postgres as postgres_servers
from tests.servers.postgres import PostgresServer

pytestmark = [pytest.mark.postgres]

TIMEOUT_S = 2.0
"""The pools' timeout: how long a request may wait for a connection before it answers 503."""
ANSWER_WITHIN_S = 3 * TIMEOUT_S + 2.0
"""The most a request may take while PostgreSQL is down (a few pool waits at most, never a hang)."""
RECOVER_WITHIN_S = 60.0
"""How long the pools may take to reconnect after the server is back (their reconnect backoff)."""
BACKENDS_GONE_S = 1.0
START = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)


@pytest.fixture(scope="module")
def private_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL of this module's own, to kill: the session's server is never disturbed."""
    server = postgres_servers.start(postgres_servers.ensure(log=lambda line: None))
    yield server
    server.stop()


@pytest.fixture
def postgres(private_postgres: PostgresServer) -> Iterator[PostgresServer]:
    """The private server, running (a test that failed while it was down left it killed)."""
    if private_postgres.process.poll() is not None:
        private_postgres.restart()
    yield private_postgres
    if private_postgres.process.poll() is not None:
        private_postgres.restart()


class CrashingLedger(PostgresLedger):
    """The PostgreSQL ledger, with its server killed right before the next call to one of ``crash_before`` once
    armed: a crash in the middle of a request, after its key was checked, at the same point every run."""

    server: PostgresServer
    crash_before: frozenset[str] = frozenset()
    fired: list[str]

    def _crash(self, name: str) -> None:
        if name in self.crash_before:
            self.crash_before -= {name}
            self.fired.append(name)
            self.server.kill()
            # The postmaster is gone at once; its orphaned backends notice within a moment and end their
            # connections: wait for that, so the pooled connection is broken rather than still answering.
            time.sleep(BACKENDS_GONE_S)

    def erased(self, memory_ids: Sequence[str]) -> set[str]:
        self._crash("erased")
        return super().erased(memory_ids)

    def resolutions_in_force(self, partition: str, at: datetime) -> dict[str, Resolution]:
        self._crash("resolutions_in_force")
        return super().resolutions_in_force(partition, at)

    def record_recall(self, recall_id: str, partition: str, at: datetime, body: str) -> None:
        self._crash("record_recall")
        super().record_recall(recall_id, partition, at, body)

    def suppressed(self, fact_id: str, provenance: Sequence[str]) -> bool:
        self._crash("suppressed")
        return super().suppressed(fact_id, provenance)

    def touch(self, character_id: str, user_id: str) -> None:
        self._crash("touch")
        super().touch(character_id, user_id)


@dataclass
class Service:
    server: PostgresServer
    client: TestClient[Any]
    engine: Engine
    ledger: CrashingLedger
    keys: KeyStore
    tuning: PostgresTuningStore
    headers: dict[str, dict[str, str]] = field(default_factory=dict)

    def as_(self, role: str) -> dict[str, str]:
        if role not in self.headers:
            self.headers[role] = {"Authorization": f"Bearer {self.keys.create('acme', role)}"}
        return self.headers[role]

    def arm(self, *methods: str) -> None:
        self.ledger.crash_before = frozenset(methods)


@pytest.fixture
def service(postgres: PostgresServer, tmp_path: Path) -> Iterator[Service]:
    url = postgres.fresh_database()
    # The throwaway cluster commits asynchronously (a crash may lose the last commits); a crash is the point here,
    # so this database commits durably, as a production one does.
    with postgres.connect() as connection:
        connection.execute(f'ALTER DATABASE "{url.rsplit("/", 1)[1]}" SET synchronous_commit = on')
    embedder = HashingEmbedder()
    keys = KeyStore(PostgresKeyRecords(url, timeout_s=TIMEOUT_S))
    tuning = PostgresTuningStore(url, timeout_s=TIMEOUT_S, cache_s=1.0)
    ledger = CrashingLedger(url, timeout_s=TIMEOUT_S)
    ledger.server, ledger.fired = postgres, []
    store = EmbeddedStore(tmp_path / "data", embedding_model=embedder.model_id, dimension=embedder.dimension)
    engine = Engine(store=store, embedder=embedder, classifier=KeywordClassifier(), profiles=tuning, ledger=ledger)
    app = create_app(engine, keys=keys, tuning=tuning, transcript_dirs=())
    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            yield Service(postgres, client, engine, ledger, keys, tuning)
    finally:
        if postgres.process.poll() is not None:
            postgres.restart()  # the pools close cleanly with their server up
        engine.close()
        tuning.close()
        keys.close()


def turns(session: str, n: int, *, offset: int = 0) -> list[dict[str, Any]]:
    """A batch of ``n`` turns in ``session``, user and character in turn, each user turn with its own word."""
    return [{"turn_id": f"{session}-t{offset + i}", "session_id": session, "character_id": "ava", "user_id": "u1",
             "role": "user" if i % 2 == 0 else "character",
             "text": f"I walked the dog in the park, word{session}x{offset + i}" if i % 2 == 0 else "How lovely!",
             "timestamp": (START + timedelta(seconds=offset + i)).isoformat()} for i in range(n)]


RECALL = {"character_id": "ava", "user_id": "u1", "message": "the dog in the park", "session_id": "later"}
MEMORIES = "/v1/memories?character_id=ava&user_id=u1&limit=200"


def assert_unavailable(response: httpx.Response) -> None:
    """A 503 problem naming PostgreSQL, with a Retry-After a client can act on: never a 500, never a 401."""
    assert response.status_code == 503, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert int(response.headers["retry-after"]) >= 1
    problem = response.json()
    assert problem["status"] == 503 and problem["title"] and problem["detail"]
    assert problem["backend"] == "postgres"
    assert "password" not in problem["detail"].lower()


def timed(call: Any) -> httpx.Response:
    started = time.monotonic()
    response = call()
    took = time.monotonic() - started
    assert took < ANSWER_WITHIN_S, f"answered after {took:.1f} s: {response.status_code} {response.text}"
    return response


def wait_until_answering(service: Service) -> None:
    """Poll (with a runtime's key) until the pools have reconnected: the app itself is never restarted."""
    deadline = time.monotonic() + RECOVER_WITHIN_S
    while True:
        response = service.client.get(MEMORIES, headers=service.as_("runtime"))
        if response.status_code == 200:
            return
        assert response.status_code == 503, response.text  # still down: never anything else
        if time.monotonic() > deadline:
            raise AssertionError(f"the app did not recover within {RECOVER_WITHIN_S:.0f} s: {response.text}")
        time.sleep(0.2)


def stored(service: Service) -> list[str]:
    """The turn ids of every memory of ava/u1, in ingest order."""
    response = service.client.get(MEMORIES, headers=service.as_("runtime"))
    assert response.status_code == 200, response.text
    return [item["memory"]["turn_id"] for item in response.json()["items"]]


def user_turn_ids(*batches: list[dict[str, Any]]) -> list[str]:
    return [t["turn_id"] for sent in batches for t in sent if t["role"] == "user"]


def tuning_update(service: Service, note: str, half_life: float) -> dict[str, Any]:
    profile = service.client.get("/v1/characters/ava/tuning", headers=service.as_("director")).json()
    return {**tuning_update_body(profile, half_life), "note": note}


# -- every request kind while PostgreSQL is down ------------------------------------------------------------------


def test_every_request_answers_503_with_retry_after_while_postgres_is_down(service: Service) -> None:
    client, runtime, director = service.client, service.as_("runtime"), service.as_("director")
    before = turns("s1", 6)
    assert client.post("/v1/turns", json={"turns": before}, headers=runtime).status_code == 200
    closed = client.post("/v1/sessions/s1/close", json={}, headers=runtime)
    assert closed.status_code == 200, closed.text
    recalled = client.post("/v1/recall", json=RECALL, headers=runtime)
    assert recalled.status_code == 200, recalled.text
    recall_id = recalled.json()["recall_id"]
    saved = client.put("/v1/characters/ava/tuning", json=tuning_update(service, "slower", 20.0), headers=director)
    assert saved.status_code == 200, saved.text

    service.server.kill()
    during = turns("s2", 4)
    requests = {
        "ingest": lambda: client.post("/v1/turns", json={"turns": during}, headers=runtime),
        "close": lambda: client.post("/v1/sessions/s1/close", json={}, headers=runtime),
        "recall": lambda: client.post("/v1/recall", json=RECALL, headers=runtime),
        "memories": lambda: client.get(MEMORIES, headers=runtime),
        "recall log": lambda: client.get(f"/v1/recalls/{recall_id}?character_id=ava&user_id=u1", headers=runtime),
        "get tuning": lambda: client.get("/v1/characters/ava/tuning", headers=director),
        "put tuning": lambda: client.put("/v1/characters/ava/tuning",
                                         json={**tuning_update_body(saved.json(), 30.0), "note": "during"},
                                         headers=director),
    }
    for _ in range(2):  # the first call of the outage and the ones after it
        for name, request in requests.items():
            response = timed(request)
            with contextlib.suppress(AssertionError):
                assert_unavailable(response)
                continue
            raise AssertionError(f"{name}: {response.status_code} {response.text}")
    ready = timed(lambda: client.get("/readyz"))  # a load balancer stops sending traffic here
    assert ready.status_code == 503 and ready.headers["retry-after"]
    assert ready.json()["checks"]["ledger"] == "unavailable"

    service.server.restart()
    wait_until_answering(service)
    assert client.get("/readyz").status_code == 200
    # Everything acknowledged before the outage is there; the batch refused during it is stored on its retry.
    assert stored(service) == user_turn_ids(before)
    retried = client.post("/v1/turns", json={"turns": during}, headers=runtime)
    assert retried.status_code == 200, retried.text
    assert retried.json()["stored"] == len(during) and retried.json()["duplicates"] == 0
    assert stored(service) == user_turn_ids(before, during)
    logged = client.get(f"/v1/recalls/{recall_id}?character_id=ava&user_id=u1", headers=runtime)
    assert logged.status_code == 200 and logged.json()["recall_id"] == recall_id
    assert client.get("/v1/characters/ava/tuning", headers=director).json()["version"] == saved.json()["version"]
    again = client.put("/v1/characters/ava/tuning", json={**tuning_update_body(saved.json(), 30.0), "note": "after"},
                       headers=director)
    assert again.status_code == 200, again.text
    assert again.json()["version"] == saved.json()["version"] + 1
    assert client.post("/v1/sessions/s2/close", json={}, headers=runtime).status_code == 200
    assert client.post("/v1/recall", json=RECALL, headers=runtime).status_code == 200


def tuning_update_body(profile: dict[str, Any], half_life: float) -> dict[str, Any]:
    sections = {k: v for k, v in profile.items() if k not in ("character_id", "version")}
    sections["scoring"] = {**sections["scoring"], "min_half_life_days": half_life}
    return sections


# -- PostgreSQL dying in the middle of a request ------------------------------------------------------------------


def test_a_batch_refused_by_a_ledger_failure_mid_ingest_is_stored_once_when_retried(service: Service) -> None:
    client, runtime = service.client, service.as_("runtime")
    first = turns("s1", 4)
    assert client.post("/v1/turns", json={"turns": first}, headers=runtime).status_code == 200
    # The key checks out; PostgreSQL dies before the ingest asks the ledger whether these memories were erased.
    batch = [*first[2:], *turns("s1", 6, offset=4)]  # two turns already stored, six new ones
    service.arm("erased")
    assert_unavailable(timed(lambda: client.post("/v1/turns", json={"turns": batch}, headers=runtime)))
    assert service.ledger.fired == ["erased"]

    service.server.restart()
    wait_until_answering(service)
    retried = client.post("/v1/turns", json={"turns": batch}, headers=runtime)
    assert retried.status_code == 200, retried.text
    assert (retried.json()["stored"], retried.json()["duplicates"]) == (6, 2)
    assert stored(service) == user_turn_ids(first, turns("s1", 6, offset=4))
    again = client.post("/v1/turns", json={"turns": batch}, headers=runtime)  # and once more: all duplicates
    assert (again.status_code, again.json()["stored"], again.json()["duplicates"]) == (200, 0, 8)


def test_a_batch_stored_before_postgres_dies_mid_request_is_kept(service: Service) -> None:
    """Nothing of an ingest after its ledger checks needs PostgreSQL: PostgreSQL dying then loses nothing."""
    client, runtime = service.client, service.as_("runtime")
    sent = turns("s1", 6)
    assert client.post("/v1/turns", json={"turns": sent}, headers=runtime).status_code == 200
    service.server.kill()
    service.server.restart()
    wait_until_answering(service)
    assert stored(service) == user_turn_ids(sent)
    retried = client.post("/v1/turns", json={"turns": sent}, headers=runtime)
    assert (retried.status_code, retried.json()["stored"], retried.json()["duplicates"]) == (200, 0, 6)


def test_recall_answers_when_only_its_log_entry_cannot_be_written(service: Service) -> None:
    client, runtime = service.client, service.as_("runtime")
    assert client.post("/v1/turns", json={"turns": turns("s1", 6)}, headers=runtime).status_code == 200
    assert client.post("/v1/sessions/s1/close", json={}, headers=runtime).status_code == 200
    before = client.post("/v1/recall", json=RECALL, params={"detail": "full"}, headers=runtime)
    assert before.status_code == 200, before.text

    service.arm("record_recall")  # the recall is made; PostgreSQL dies before its log entry is written
    during = timed(lambda: client.post("/v1/recall", json=RECALL, params={"detail": "full"}, headers=runtime))
    assert service.ledger.fired == ["record_recall"]
    assert during.status_code == 200, during.text
    answer = during.json()
    assert [m["memory_id"] for m in answer["memories"]] == [m["memory_id"] for m in before.json()["memories"]]
    assert answer["context"] == before.json()["context"]
    # Degraded in a recorded way: the answer says its log entry was not written.
    assert any("recall log" in note and answer["recall_id"] in note for note in answer["trace"]["notes"]), answer

    service.server.restart()
    wait_until_answering(service)
    missing = client.get(f"/v1/recalls/{answer['recall_id']}?character_id=ava&user_id=u1", headers=runtime)
    assert missing.status_code == 404, missing.text
    after = client.post("/v1/recall", json=RECALL, headers=runtime)
    assert after.status_code == 200, after.text
    logged = client.get(f"/v1/recalls/{after.json()['recall_id']}?character_id=ava&user_id=u1", headers=runtime)
    assert logged.status_code == 200, logged.text
    assert not any("recall log" in note for note in logged.json()["trace"]["notes"])


def test_recall_answers_503_when_the_ledger_fails_before_the_recall_is_made(service: Service) -> None:
    client, runtime = service.client, service.as_("runtime")
    assert client.post("/v1/turns", json={"turns": turns("s1", 6)}, headers=runtime).status_code == 200
    service.arm("resolutions_in_force")
    assert_unavailable(timed(lambda: client.post("/v1/recall", json=RECALL, headers=runtime)))
    assert service.ledger.fired == ["resolutions_in_force"]
    service.server.restart()
    wait_until_answering(service)
    assert client.post("/v1/recall", json=RECALL, headers=runtime).status_code == 200


def close_dies_at_then_retried(service: Service, point: str) -> None:
    """Close s1 with PostgreSQL dying at ``point``: a 503; then PostgreSQL back and the close retried: a 200."""
    client, runtime = service.client, service.as_("runtime")
    service.arm(point)
    assert_unavailable(timed(lambda: client.post("/v1/sessions/s1/close", json={}, headers=runtime)))
    assert service.ledger.fired == [point]
    service.server.restart()
    wait_until_answering(service)
    retried = client.post("/v1/sessions/s1/close", json={}, headers=runtime)
    assert retried.status_code == 200, retried.text


def test_a_close_refused_mid_way_is_finished_by_its_retry(service: Service) -> None:
    client, runtime = service.client, service.as_("runtime")
    assert client.post("/v1/turns", json={"turns": turns("s1", 6)}, headers=runtime).status_code == 200
    close_dies_at_then_retried(service, "touch")  # the write-time pass ran; the partition was not yet registered
    assert ("acme:ava", "u1") in service.ledger.partitions()  # the nightly sweep visits it
    assert all(item["trace"] and item["trace"]["status"] == "complete"
               for item in service.client.get(MEMORIES, headers=runtime).json()["items"])


def test_a_close_cut_short_after_its_traces_are_written_writes_its_facts_on_the_retry(service: Service) -> None:
    """The write-time pass stores the traces, then the facts (each checked against the ledger's erasures and
    audited there): PostgreSQL dying between the two must not leave complete traces and no facts for good."""
    client, runtime = service.client, service.as_("runtime")
    sent = turns("s1", 2)
    sent[0]["text"] = "I work at Kestrel now, and I walked the dog in the park"
    assert client.post("/v1/turns", json={"turns": sent}, headers=runtime).status_code == 200
    close_dies_at_then_retried(service, "suppressed")  # traces stored; no fact written yet
    facts = service.engine.list_facts("user", "acme:ava", "u1")
    assert [(f.fact.relation, f.fact.value) for f, _ in facts if f.fact] == [("works_at", "Kestrel")]
    assert [event.event for event in service.ledger.history(facts[0][0].memory_id)] == ["written"]
    again = client.post("/v1/sessions/s1/close", json={}, headers=runtime)
    assert again.status_code == 200 and len(service.engine.list_facts("user", "acme:ava", "u1")) == 1


def test_the_background_retry_cut_short_after_its_traces_are_written_writes_its_facts_next_time(
    service: Service,
) -> None:
    """The same cut in the background retry of a queued close (``Engine.background_pass``, which never raises):
    its traces stay pending, so the next pass writes the facts."""
    client, runtime = service.client, service.as_("runtime")
    sent = turns("s1", 2)
    sent[0]["text"] = "I work at Kestrel now, and I walked the dog in the park"
    assert client.post("/v1/turns", json={"turns": sent}, headers=runtime).status_code == 200
    service.engine.accept_close("acme:s1")  # queued: its traces are pending until a pass runs
    service.arm("suppressed")
    assert service.engine.background_pass()["traces"] == 0
    assert service.ledger.fired == ["suppressed"]
    assert service.engine.pending_traces("acme:s1") > 0  # not complete without its facts
    service.server.restart()
    wait_until_answering(service)
    assert service.engine.background_pass()["traces"] > 0
    facts = service.engine.list_facts("user", "acme:ava", "u1")
    assert [(f.fact.relation, f.fact.value) for f, _ in facts if f.fact] == [("works_at", "Kestrel")]
    assert service.engine.pending_traces("acme:s1") == 0
