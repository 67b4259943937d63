"""Backends failing and coming back: nothing acknowledged is lost.

Each scenario breaks a real backend of its own (a private Weaviate or Redis, the fake Mistral server, the service
process itself), so an outage never touches another test, and after recovery checks what a runtime relies on:
every acknowledged turn is stored exactly once (each user turn with exactly one memory), every closed session gets
its traces, and while a backend was down the service either answered 503 with Retry-After (the store: there is
nothing to fall back on) or recall said which degraded mode answered (the embedder).

The Weaviate client retries a gRPC call that finds the server gone for about 63 s before it gives up (see
engine/adapters/weaviate/), so the first call of each Weaviate outage takes that long (later calls of the
same outage fail at once), and the first call after the server is back waits a further 5 to 30 s while the
client's gRPC channel reconnects. The two Weaviate-crash scenarios pay both once each: most of this suite's time.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.auth import KeyStore
from api.jobs import ArqJobs
from api.tenancy import scoped
from api.worker import NIGHTLY_MAINTENANCE
from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.mistral import MistralClassifier, MistralEmbedder
from engine.adapters.onnx_embedder import DIMENSION as ONNX_DIMENSION
from engine.adapters.onnx_embedder import MODEL_ID as ONNX_MODEL_ID
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.adapters.weaviate import WeaviateStore
from engine.domain.models import TraceStatus
from engine.domain.ports import MemoryStore
from engine.jobs import InProcessJobs
from engine.service import Engine
from tests.arq_worker import burst
from tests.fake_mistral import FakeMistral
from tests.fakes import KeywordClassifier
from tests.keys import sqlite_key_store
from tests.servers import redis as redis_servers
from tests.servers import weaviate as weaviate_servers
from tests.servers.feltsense import FeltsenseService
from tests.servers.redis import RedisServer
from tests.servers.weaviate import WeaviateServer

pytestmark = [
    pytest.mark.faults,
    # arq's Worker.close() calls redis-py's deprecated close(); the worker code there is arq's, not ours.
    pytest.mark.filterwarnings("ignore:Call to deprecated close:DeprecationWarning"),
]

ORG = "acme"
T0 = datetime(2025, 3, 2, 18, tzinfo=UTC)
LATER = T0 + timedelta(days=7)
LINES = (
    ("user", "My dog Luna died last week, {word}."),
    ("character", "I'm so sorry. How are you holding up?"),
    ("user", "Luna and I walked in the park every morning, {word}."),
    ("character", "That sounds like a lovely routine."),
)


# -- turns, and what must hold after recovery -------------------------------------------------------------------


def word(batch: int, line: int) -> str:
    """The word only one user turn says, for recall to find that turn's memory by."""
    return f"kw{batch}x{line}"


def batch(number: int, sessions: int, *, lines: tuple[tuple[str, str], ...] = LINES) -> dict[str, Any]:
    """Batch ``number``: turns of session ``s<number % sessions>`` (user and character in turn), said after the
    batches before it. Its turn ids are its own, so a re-sent batch is recognisable by id alone."""
    return {"turns": [
        {"turn_id": f"b{number}-{i}", "session_id": f"s{number % sessions}", "character_id": "ava",
         "user_id": "u1", "role": role, "text": text.format(word=word(number, i)),
         "timestamp": (T0 + timedelta(minutes=number, seconds=i)).isoformat()}
        for i, (role, text) in enumerate(lines)
    ]}


def sessions_of(batches: Iterable[dict[str, Any]], org: str = ORG) -> list[str]:
    return sorted({scoped(org, t["session_id"]) for b in batches for t in b["turns"]})


def assert_stored_exactly_once(store: MemoryStore, acknowledged: list[dict[str, Any]], org: str = ORG) -> None:
    """Every acknowledged turn is stored once, and each of its user turns has exactly one memory (a turn without
    one could never be recalled). Counted across the sessions, so a turn stored twice anywhere shows."""
    sessions = sessions_of(acknowledged, org)
    stored = Counter(t.turn_id for s in sessions for t in store.get_turns(s))
    remembered = Counter(m.turn_id for s in sessions for m in store.session_memories(s))
    turns = [t for b in acknowledged for t in b["turns"]]
    assert {scoped(org, t["turn_id"]): stored[scoped(org, t["turn_id"])] for t in turns} == {
        scoped(org, t["turn_id"]): 1 for t in turns}
    assert max(stored.values()) == 1 and max(remembered.values()) == 1
    users = [scoped(org, t["turn_id"]) for t in turns if t["role"] == "user"]
    assert {turn_id: remembered[turn_id] for turn_id in users} == dict.fromkeys(users, 1)


def trace_statuses(store: MemoryStore, sessions: Iterable[str]) -> dict[str, list[TraceStatus | None]]:
    """Each session's memories' trace statuses, in ingest order; None for a memory without a trace."""
    found: dict[str, list[TraceStatus | None]] = {}
    for session in sessions:
        memories = store.session_memories(session)
        traces = store.get_traces([m.memory_id for m in memories])
        found[session] = [traces[m.memory_id].status if m.memory_id in traces else None for m in memories]
    return found


def all_statuses(store: MemoryStore, sessions: Iterable[str]) -> list[TraceStatus | None]:
    return [status for statuses in trace_statuses(store, sessions).values() for status in statuses]


def assert_unavailable(response: httpx.Response, backend: str) -> None:
    """A 503 problem with a Retry-After a client can act on: never a 500, never a 200 that lost data."""
    assert response.status_code == 503, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert int(response.headers["retry-after"]) >= 1
    assert response.json()["backend"] == backend


def recall_body(message: str, **extra: Any) -> dict[str, Any]:
    return {"character_id": "ava", "user_id": "u1", "message": message, "session_id": "later",
            "at": LATER.isoformat(), **extra}


def wait_until(condition: Callable[[], bool], *, timeout_s: float, what: str, every_s: float = 0.1) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(every_s)


def wait_until_none_left(left: Callable[[], Collection[object]], *, timeout_s: float, what: str) -> None:
    """Poll ``left`` until it is empty; past the deadline, fail with ``what`` and what was still left."""
    deadline = time.monotonic() + timeout_s
    while remaining := left():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s:.0f} s; still left: {remaining!r}")
        time.sleep(0.1)


# -- servers of the tests' own ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def weaviate_binary(request: pytest.FixtureRequest) -> Path:
    """The cached weaviate-server build (built first if absent, with its progress shown, as the session fixture
    does)."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        return weaviate_servers.build()


@pytest.fixture
def private_weaviate(weaviate_binary: Path) -> Iterator[WeaviateServer]:
    """A Weaviate of this test's own, to kill: the session's server is never disturbed."""
    server = weaviate_servers.start(weaviate_binary)
    yield server
    server.stop()


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    """A redis-server of this test's own, as the helpers start it (no persistence), to kill."""
    server = redis_servers.start(redis_servers.ensure(log=lambda line: None))
    yield server
    server.stop()


@pytest.fixture
def keys(tmp_path: Path) -> Iterator[KeyStore]:
    store = sqlite_key_store(tmp_path / "keys.sqlite3")
    yield store
    store.close()


def weaviate_store(server: WeaviateServer, prefix: str = "Faults") -> WeaviateStore:
    embedder = HashingEmbedder()
    return WeaviateStore(server.url, grpc_port=server.grpc_port, embedding_model=embedder.model_id,
                         dimension=embedder.dimension, collection_prefix=prefix, timeout_s=5)


class CrashPoint:
    """The real Weaviate store, with its server killed (-9) right after the next call to ``method`` once armed:
    a crash between two writes (or reads) of one request, at the same point every run rather than wherever a
    timer lands. Everything else is the store itself; nothing is faked."""

    def __init__(self, store: WeaviateStore, server: WeaviateServer, method: str) -> None:
        self.store = store
        self.server = server
        self.method = method
        self.armed = False
        self.fired = False

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.store, name)
        if name != self.method:
            return attribute

        def then_crash(*args: Any, **kwargs: Any) -> Any:
            result = attribute(*args, **kwargs)
            if self.armed:
                self.armed, self.fired = False, True
                self.server.kill()
            return result

        return then_crash


@contextlib.contextmanager
def crashing_client(server: WeaviateServer, keys: KeyStore, method: str
                    ) -> Iterator[tuple[WeaviateStore, CrashPoint, TestClient[Any]]]:
    """The service on a Weaviate store whose ``method`` can be armed to crash the server; the client is
    authorised for ORG. The engine is closed afterwards."""
    store = weaviate_store(server)
    crash = CrashPoint(store, server, method)
    engine = Engine(ledger=SqliteLedger.in_memory(),
                    store=crash, embedder=HashingEmbedder(), classifier=KeywordClassifier())  # type: ignore[arg-type]
    try:
        with TestClient(create_app(engine, keys=keys, retry_interval_s=3600)) as client:
            client.headers["Authorization"] = f"Bearer {keys.create(ORG, 'runtime')}"
            yield store, crash, client
    finally:
        engine.close()


# -- 1. Weaviate killed mid-ingest ------------------------------------------------------------------------------


@pytest.mark.weaviate
def test_weaviate_killed_mid_ingest_loses_no_acknowledged_turn(
    private_weaviate: WeaviateServer, keys: KeyStore
) -> None:
    batches = [batch(n, sessions=3) for n in range(12)]
    acknowledged: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    with crashing_client(private_weaviate, keys, "add_turns") as (store, crash, client):
        for number, sent in enumerate(batches):
            # Batch 6's turns reach Weaviate, then it dies before their memories do.
            crash.armed = number == 6
            response = client.post("/v1/turns", json=sent)
            if response.status_code == 200:
                assert response.json()["stored"] == len(sent["turns"])
                acknowledged.append(sent)
            else:
                assert_unavailable(response, "weaviate")
                refused.append(sent)
        assert crash.fired
        assert (len(acknowledged), len(refused)) == (6, 6)
        assert_unavailable(client.post("/v1/recall", json=recall_body("the park")), "weaviate")
        assert_unavailable(client.post("/v1/sessions/s0/close"), "weaviate")

        private_weaviate.restart()  # same data directory, same ports
        reports = []
        for sent in refused:  # the client's retry: the same batches, the same turn ids
            response = client.post("/v1/turns", json=sent)
            assert response.status_code == 200, response.text
            reports.append(response.json())
            acknowledged.append(sent)
        # Batch 6 was half written: its turns are duplicates now, and its memories are made this time.
        assert [(r["stored"], r["duplicates"], r["memories"]) for r in reports] == [(0, 4, 2)] + [(4, 0, 2)] * 5
        for session in ("s0", "s1", "s2"):
            closed = client.post(f"/v1/sessions/{session}/close", json={"closed_at": LATER.isoformat()})
            assert closed.status_code == 200, closed.text
            assert closed.json()["traces_pending"] == 0

        assert_stored_exactly_once(store, acknowledged)
        assert all_statuses(store, sessions_of(acknowledged)) == [TraceStatus.COMPLETE] * 2 * len(batches)
        found = client.post("/v1/recall", json=recall_body(word(6, 2))).json()
        assert found["trace"]["mode"] == "hybrid"
        assert any(word(6, 2) in m["text"] for m in found["memories"])


# -- 2. Weaviate killed mid-recall ------------------------------------------------------------------------------


@pytest.mark.weaviate
def test_weaviate_killed_mid_recall_answers_503_then_recalls_again(
    private_weaviate: WeaviateServer, keys: KeyStore
) -> None:
    batches = [batch(n, sessions=2) for n in range(4)]
    with crashing_client(private_weaviate, keys, "search") as (store, crash, client):
        for sent in batches:
            assert client.post("/v1/turns", json=sent).status_code == 200
        for session in ("s0", "s1"):
            assert client.post(f"/v1/sessions/{session}/close", json={"closed_at": LATER.isoformat()}
                               ).json()["traces_pending"] == 0
        query = recall_body("walked in the park")
        before = client.post("/v1/recall", json=query).json()
        assert before["trace"]["mode"] == "hybrid" and before["memories"] and before["tone_constraints"]

        crash.armed = True  # stage one answers, then Weaviate dies under the rest of the recall
        assert_unavailable(client.post("/v1/recall", json=query), "weaviate")
        assert crash.fired
        for _ in range(3):  # the rest of the outage: answered at once, the same way
            started = time.monotonic()
            assert_unavailable(client.post("/v1/recall", json=query), "weaviate")
            assert time.monotonic() - started < 5

        private_weaviate.restart()
        # The client's gRPC channel reconnects on its own schedule: a runtime retries after Retry-After, as here.
        deadline = time.monotonic() + 15
        after = client.post("/v1/recall", json=query)
        while after.status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.5)
            after = client.post("/v1/recall", json=query)
        assert after.status_code == 200, after.text
        assert after.json()["trace"]["mode"] == "hybrid"
        assert [m["memory_id"] for m in after.json()["memories"]] == [
            m["memory_id"] for m in before["memories"]]
        assert after.json()["tone_constraints"] == before["tone_constraints"]
        assert_stored_exactly_once(store, batches)


# -- 3. Redis stopped with jobs queued --------------------------------------------------------------------------


async def nightly(redis_url: str, engine: Engine) -> None:
    async with ArqJobs(redis_url) as jobs:
        await jobs.pool.enqueue_job(NIGHTLY_MAINTENANCE, _job_id=f"nightly-{uuid.uuid4().hex}")
    await burst(redis_url, engine)


@pytest.mark.weaviate
@pytest.mark.redis
def test_closes_queued_in_a_redis_that_dies_are_still_written(
    weaviate_server: WeaviateServer, private_redis: RedisServer, keys: KeyStore
) -> None:
    prefix = f"Faults{uuid.uuid4().hex[:10]}"
    store = weaviate_store(weaviate_server, prefix)
    engine = Engine(ledger=SqliteLedger.in_memory(),
                    store=store, embedder=HashingEmbedder(), classifier=KeywordClassifier())
    batches = [batch(n, sessions=3) for n in range(6)]
    try:
        with TestClient(create_app(engine, keys=keys, jobs=ArqJobs(private_redis.url),
                                   retry_interval_s=3600)) as client:
            client.headers["Authorization"] = f"Bearer {keys.create(ORG, 'runtime')}"
            for sent in batches:
                assert client.post("/v1/turns", json=sent).status_code == 200
            for session in ("s0", "s1"):  # answered 202: the client will not close these again
                closed = client.post(f"/v1/sessions/{session}/close", json={"closed_at": LATER.isoformat()})
                assert closed.status_code == 202, closed.text

            private_redis.kill()  # before any worker ran: the queue (kept in memory only) is gone
            assert_unavailable(client.post("/v1/sessions/s2/close", json={"closed_at": LATER.isoformat()}),
                               "redis")
            private_redis.restart()
            closed = client.post("/v1/sessions/s2/close", json={"closed_at": LATER.isoformat()})  # the retry
            assert closed.status_code == 202, closed.text

        # The worker runs what the queue still holds: s2's job. s0's and s1's were lost with Redis.
        worker = asyncio.run(burst(private_redis.url, engine))
        assert (worker.jobs_complete, worker.jobs_failed) == (1, 0)
        statuses = trace_statuses(store, sessions_of(batches))
        assert statuses[scoped(ORG, "s2")] == [TraceStatus.COMPLETE] * 4
        # The 202 recorded the close before queueing it: the sessions are closed, their traces pending.
        assert statuses[scoped(ORG, "s0")] + statuses[scoped(ORG, "s1")] == [TraceStatus.PENDING] * 8
        # The background retry (the worker's nightly job here; the API's background pass does the same) writes
        # the sessions whose close was answered 202 but whose job never ran.
        asyncio.run(nightly(private_redis.url, engine))
        assert all_statuses(store, sessions_of(batches)) == [TraceStatus.COMPLETE] * 2 * len(batches)
        assert_stored_exactly_once(store, batches)
    finally:
        engine.close()
        weaviate_server.drop_collections(prefix)


# -- 4. Mistral failing -----------------------------------------------------------------------------------------


def test_a_mistral_outage_degrades_recall_and_loses_nothing(tmp_path: Path, keys: KeyStore) -> None:
    with FakeMistral(dimension=64, slow_s=1.0) as fake:
        retries: dict[str, Any] = {"server_url": fake.url, "timeout_s": 0.3, "max_retries": 1,
                                   "backoff_base_s": 0.01, "backoff_max_s": 0.05}
        embedder = MistralEmbedder(fake.api_key, dimension=fake.dimension, **retries)
        classifier = MistralClassifier(fake.api_key, model=fake.chat_model, **retries)
        store = EmbeddedStore(tmp_path / "data", embedding_model=embedder.model_id, dimension=embedder.dimension)
        engine = Engine(ledger=SqliteLedger.in_memory(), store=store, embedder=embedder, classifier=classifier)
        batches = [batch(n, sessions=2) for n in range(6)]
        modes: list[str] = []
        try:
            jobs = InProcessJobs(engine)
            with TestClient(create_app(engine, keys=keys, jobs=jobs, retry_interval_s=3600)) as client:
                client.headers["Authorization"] = f"Bearer {keys.create(ORG, 'runtime')}"

                def recall(message: str) -> dict[str, Any]:
                    response = client.post("/v1/recall", json=recall_body(message))
                    assert response.status_code == 200, response.text
                    modes.append(response.json()["trace"]["mode"])
                    return response.json()  # type: ignore[no-any-return]

                fake.fail_next("server_error", times=10_000)  # 500s, for as long as this phase lasts
                for sent in batches[:4]:
                    report = client.post("/v1/turns", json=sent).json()
                    assert (report["stored"], report["memories"], report["awaiting_embedding"]) == (4, 2, 2)
                lexical = recall("walked in the park")
                assert lexical["trace"]["mode"] == "lexical"
                assert any("embedder failed" in note for note in lexical["trace"]["notes"])
                assert any("park" in m["text"] for m in lexical["memories"])
                # A fragment no index term matches: plain substring matching answers, and says so.
                assert recall("alked")["trace"]["mode"] == "substring"

                fake.clear_failures()
                fake.fail_next("slow", times=10_000)  # then timeouts
                for sent in batches[4:]:
                    report = client.post("/v1/turns", json=sent).json()
                    assert (report["stored"], report["awaiting_embedding"]) == (4, 2)
                for session in ("s0", "s1"):
                    assert client.post(f"/v1/sessions/{session}/close").status_code == 202
                jobs.join(timeout_s=60)
                assert all_statuses(store, sessions_of(batches)) == [TraceStatus.PENDING] * 2 * len(batches)
                assert recall("walked in the park")["trace"]["mode"] == "lexical"
                done = engine.background_pass()  # never raises: what is still down is kept for the next pass
                assert (done["vectors"], done["traces"]) == (0, 0)

                fake.clear_failures()  # the provider recovers
                done = engine.background_pass()
                assert (done["vectors"], done["traces"]) == (2 * len(batches), 2 * len(batches))
                assert store.unembedded(100) == []
                assert all_statuses(store, sessions_of(batches)) == [TraceStatus.COMPLETE] * 2 * len(batches)
                assert recall("walked in the park")["trace"]["mode"] == "hybrid"
            assert_stored_exactly_once(store, batches)
            assert modes == ["lexical", "substring", "lexical", "hybrid"]
        finally:
            engine.close()
            embedder.close()
            classifier.close()


# -- 5. kill -9 of the service during a batch ingest ------------------------------------------------------------


class Service(FeltsenseService):
    """``feltsense serve`` over the embedded store, with the background pass every half second, so pending
    traces are retried within the test's wait."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir, env={"FELTSENSE_BACKGROUND_INTERVAL_S": "0.5"})


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    running = Service(tmp_path / "data")
    yield running
    running.stop()


@pytest.mark.slow  # the service runs the real ONNX embedder
def test_a_killed_service_keeps_every_acknowledged_batch_and_its_index(service: Service) -> None:
    service.start()
    batches = [batch(n, sessions=6) for n in range(96)]
    answers: dict[int, int | None] = {}  # batch -> HTTP status, None when no answer came
    closes: dict[str, int | None] = {}

    with httpx.Client(base_url=service.url, headers=service.headers(), timeout=10) as client:

        def send(number: int) -> None:
            try:
                answers[number] = client.post("/v1/turns", json=batches[number]).status_code
            except httpx.TransportError:
                answers[number] = None

        with ThreadPoolExecutor(max_workers=8) as pool:
            for number in range(len(batches)):
                pool.submit(send, number)
            wait_until(lambda: sum(status == 200 for status in answers.values()) >= 16, timeout_s=60,
                       what="16 batches acknowledged", every_s=0.002)
            # Two sessions are closed as the process dies, batches still in flight: a 202 queued their pass in
            # the process's memory, and the kill may take the queue with it. The client will not close them again.
            for session in ("s0", "s1"):
                try:
                    closes[session] = client.post(f"/v1/sessions/{session}/close",
                                                  json={"closed_at": LATER.isoformat()}).status_code
                except httpx.TransportError:
                    closes[session] = None
            service.kill()
        assert set(answers) == set(range(len(batches)))
        assert set(answers.values()) <= {200, None}, answers  # never a 5xx: an answer is a 200 or nothing
        acknowledged = [n for n, status in answers.items() if status == 200]
        assert 16 <= len(acknowledged) < len(batches)
        assert set(closes.values()) <= {202, None}, closes

    service.start()  # the same data directory
    with httpx.Client(base_url=service.url, headers=service.headers(), timeout=30) as client:
        for number in sorted(set(range(len(batches))) - set(acknowledged)):  # the client's retry
            response = client.post("/v1/turns", json=batches[number])
            assert response.status_code == 200, response.text
            report = response.json()
            assert report["stored"] + report["duplicates"] == len(LINES)
        unclosed = ["s2", "s3", "s4", "s5", *(s for s, status in closes.items() if status != 202)]
        for session in unclosed:
            closed = client.post(f"/v1/sessions/{session}/close", json={"closed_at": LATER.isoformat()})
            assert closed.status_code == 202, closed.text

        def unwritten() -> Counter[tuple[str, str | None]]:
            """(session, trace status) of each memory whose trace is not complete yet."""
            items: list[dict[str, Any]] = []
            offset: int | None = 0
            while offset is not None:
                page = client.get("/v1/memories", params={"character_id": "ava", "user_id": "u1", "limit": 200,
                                                          "offset": offset})
                assert page.status_code == 200, page.text
                items += [i for i in page.json()["items"] if i["memory"]["kind"] == "turn"]  # not distilled facts
                offset = page.json()["next_offset"]
            assert len(items) == 2 * len(batches)
            return Counter((i["memory"]["session_id"], i["trace"] and i["trace"]["status"]) for i in items
                           if not i["trace"] or i["trace"]["status"] != "complete")

        wait_until_none_left(unwritten, timeout_s=60,
                             what="every closed session's traces written (by its job or the background pass)")
        # The index rebuilt after the restart agrees with what is stored: every memory is found by its word.
        for number in range(len(batches)):
            for line in (0, 2):
                found = client.post("/v1/recall", json=recall_body(word(number, line))).json()
                assert any(word(number, line) in m["text"] for m in found["memories"]), (number, line)
    service.stop()

    store = EmbeddedStore(service.data_dir, embedding_model=ONNX_MODEL_ID, dimension=ONNX_DIMENSION)
    try:
        assert_stored_exactly_once(store, batches, org="dev")
    finally:
        store.close()
