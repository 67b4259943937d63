"""Erasure is final, turns ids are promises, and a closed session appears all at once.

What a hostile tester broke (issue 13), each pinned here: a recall racing an erasure logged the erased text; a
client's retry of an acknowledged batch stored erased turns again; one memory's erasure left its raw turn (and
copies in SQLite's write-ahead log); audit names kept content words; a known turn id re-sent with other content
was silently dropped; and a recall right after a close saw some of the session's facts but not the others.

The guarantee tests look where a person with the files would: every file of the data directory, byte for byte,
and on Weaviate every stored object, for a marker word that only the erased turns carried.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar.testing import TestClient
from numpy.typing import NDArray

from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.domain.models import Memory, MemoryState, RecallQuery, Turn
from engine.service import Engine
from tests.fakes import KeywordClassifier
from tests.inprocess import in_process

pytestmark = pytest.mark.hostile

EMBEDDER = HashingEmbedder()
T0 = datetime(2025, 3, 2, 18, tzinfo=UTC)
MARKER = "zebrafinch"  # a word no other text here has: finding it anywhere means erased content survived


def _turn(turn_id: str, text: str, *, session: str = "s1", user: str = "tester", minute: int = 0,
          role: str = "user") -> dict[str, Any]:
    return {"turn_id": turn_id, "session_id": session, "character_id": "ava", "user_id": user, "role": role,
            "text": text, "timestamp": (T0 + timedelta(minutes=minute)).isoformat().replace("+00:00", "Z")}


BATCH = [
    _turn("t1", f"My brother Marco lost his job at the {MARKER} bakery.", minute=0),
    _turn("t2", "Oh no, I am so sorry to hear that.", minute=1, role="character"),
    _turn("t3", f"He worked at the {MARKER} bakery for ten years.", minute=2),
]


class SlowLedger(SqliteLedger):
    """Writes each recall-log entry a little late, as a loaded disk would: the window a racing erasure used."""

    def record_recall(self, recall_id: str, partition: str, at: datetime, body: str) -> None:
        threading.Event().wait(0.02)
        super().record_recall(recall_id, partition, at, body)


@dataclass
class Service:
    root: Path
    engine: Engine
    client: TestClient[Any]
    headers: dict[str, str]

    def post(self, path: str, body: Any = None, **params: Any) -> httpx.Response:
        return self.client.post(path, json=body, headers=self.headers, params=params)

    def ingest(self, turns: list[dict[str, Any]]) -> httpx.Response:
        return self.post("/v1/turns", {"turns": turns})

    def recall(self, message: str, *, user: str = "tester") -> httpx.Response:
        return self.post("/v1/recall", {"character_id": "ava", "user_id": user, "message": message,
                                        "at": (T0 + timedelta(days=9)).isoformat()})

    def files_holding(self, needle: str) -> list[str]:
        """Every file under the service's directory whose bytes hold ``needle`` (WAL and free pages too)."""
        return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*")
                      if p.is_file() and needle.encode() in p.read_bytes())


@contextlib.contextmanager
def _service(root: Path, *, ledger: type[SqliteLedger] = SqliteLedger, jobs: bool = False) -> Iterator[Service]:
    with in_process(root, ledger_class=ledger, queued=jobs) as running, TestClient(running.app) as client:
        yield Service(root, running.engine, client,
                      {"Authorization": f"Bearer {running.keys.create('acme', 'runtime')}"})


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    with _service(tmp_path) as built:
        yield built


def _close(service: Service, session: str = "s1") -> None:
    assert service.post(f"/v1/sessions/{session}/close").status_code == 200


def test_a_recall_racing_a_users_erasure_never_logs_the_erased_text(tmp_path: Path) -> None:
    with _service(tmp_path, ledger=SlowLedger) as service:
        assert service.ingest(BATCH).status_code == 200
        _close(service)
        recall_ids: list[str] = []
        errors: list[BaseException] = []
        stop = threading.Event()
        started = threading.Barrier(17)

        def recall_until_stopped() -> None:
            try:
                started.wait()
                while not stop.is_set():
                    answer = service.recall(f"how is the {MARKER} bakery?")
                    assert answer.status_code == 200, answer.text
                    recall_ids.append(answer.json()["recall_id"])
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=recall_until_stopped) for _ in range(16)]
        for thread in threads:
            thread.start()
        started.wait()
        threading.Event().wait(0.3)  # recalls in flight, each writing its log entry late
        erased = service.client.delete("/v1/users/tester", params={"character_id": "ava"}, headers=service.headers)
        assert erased.status_code == 200, erased.text
        assert erased.json()["recalls"] > 0
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        assert not errors, errors
        assert len(recall_ids) > 16
        for recall_id in recall_ids:  # a log entry is either gone, or from after the erasure and empty
            logged = service.client.get(f"/v1/recalls/{recall_id}", params={"character_id": "ava",
                                                                             "user_id": "tester"},
                                        headers=service.headers)
            assert logged.status_code in (200, 404)
            assert MARKER not in logged.text
        assert service.files_holding(MARKER) == []


def test_a_retried_batch_after_erasure_is_refused_with_410_and_stores_nothing(service: Service) -> None:
    assert service.ingest(BATCH).json() == {"stored": 3, "duplicates": 0, "memories": 2, "awaiting_embedding": 0}
    _close(service)
    receipt = service.client.delete("/v1/users/tester", params={"character_id": "ava"}, headers=service.headers)
    assert receipt.json()["turns"] == 3

    retried = service.ingest(BATCH)  # the client never saw its first answer, and sends the batch again
    assert retried.status_code == 410, retried.text
    problem = retried.json()
    assert retried.headers["content-type"].startswith("application/problem+json")
    assert problem["ids"] == ["t1", "t2", "t3"] and "'t1'" in problem["detail"] and "acme:" not in problem["detail"]
    # A batch that mixes an erased id with a new one stores nothing: the client resends it without the erased.
    assert service.ingest([BATCH[0], _turn("t9", "A new day.", minute=9)]).status_code == 410
    listed = service.client.get("/v1/memories", params={"character_id": "ava", "user_id": "tester"},
                                headers=service.headers).json()
    assert listed["items"] == []
    assert service.files_holding(MARKER) == []
    assert service.ingest([_turn("t9", "A new day.", minute=9)]).json()["stored"] == 1


def test_one_memorys_erasure_takes_its_raw_turn_counts_it_and_leaves_no_copy_in_any_file(service: Service) -> None:
    other = _turn("t5", "The weather was lovely by the river.", minute=5)
    assert service.ingest([*BATCH, other]).status_code == 200
    _close(service)
    names = {"character_id": "ava", "user_id": "tester"}
    listed = service.client.get("/v1/memories", params=names, headers=service.headers).json()["items"]
    marked = [m["memory"]["memory_id"] for m in listed if MARKER in m["memory"]["text"]]
    assert len(marked) == 2
    assert service.recall(f"the {MARKER} bakery").status_code == 200  # the recall log holds it too now

    receipts = [service.client.delete(f"/v1/memories/{memory_id}", params=names, headers=service.headers).json()
                for memory_id in marked]
    assert [r["turns"] for r in receipts] == [1, 1]
    assert service.files_holding(MARKER) == []  # memories, turns, recall log, WAL and free pages alike
    # The rest of the conversation stays: the character's reply, and the river.
    assert [t.turn_id for t in service.engine.store.get_turns("acme:s1")] == ["acme:t2", "acme:t5"]
    # The erased turn's id is refused for good, the others are still plain duplicates.
    assert service.ingest([BATCH[0]]).status_code == 410
    assert service.ingest([BATCH[1], other]).json()["duplicates"] == 2

    # The audit skeleton keeps proper names only: never "brother", "lost", "job" or the bakery.
    events = [e for memory_id in marked for e in service.engine.ledger.history(memory_id)]
    assert events and {e.event for e in events} >= {"erased"}
    kept = {name for e in events for name in e.names or ()}
    assert kept <= {"Marco"}, kept


def test_an_erased_fact_is_not_distilled_again_when_its_session_is_written_again(service: Service) -> None:
    assert service.ingest([_turn("a1", "I am allergic to peanuts."),
                           _turn("a2", "I moved to Lisbon last month.", minute=1)]).status_code == 200
    _close(service)
    names = {"character_id": "ava", "user_id": "tester"}
    facts = service.client.get("/v1/facts", params={**names, "scope": "user"}, headers=service.headers).json()
    [peanut] = [f["fact"]["memory_id"] for f in facts if "peanut" in f["fact"]["text"]]
    assert service.client.delete(f"/v1/memories/{peanut}", params=names, headers=service.headers).status_code == 200

    # A late turn reopens the session's write-time pass, which reads every memory of it again.
    assert service.ingest([_turn("a3", "Anyway, work was fine.", minute=30)]).status_code == 200
    service.engine.retry_pending()
    _close(service)
    facts = service.client.get("/v1/facts", params={**names, "scope": "user"}, headers=service.headers).json()
    assert [f for f in facts if "peanut" in f["fact"]["text"]] == []
    assert "peanut" not in service.recall("what should I cook?").json()["context"]["prefix"]
    # Said again, in a new turn, it is the user's word again.
    assert service.ingest([_turn("b1", "I am allergic to peanuts.", session="s2", minute=60)]).status_code == 200
    _close(service, "s2")
    assert "peanut" in service.recall("what should I cook?").json()["context"]["prefix"]


def test_an_erasure_from_before_tombstones_still_refuses_its_turns(service: Service) -> None:
    assert service.ingest(BATCH).status_code == 200
    memory_id = service.engine.store.session_memories("acme:s1")[0].memory_id
    service.client.delete(f"/v1/memories/{memory_id}", params={"character_id": "ava", "user_id": "tester"},
                          headers=service.headers)
    # As a data directory erased at 180337c has it: the audit skeleton, no tombstone.
    with contextlib.closing(sqlite3.connect(service.root / "ledger.sqlite3")) as raw:
        raw.execute("DELETE FROM erased_turns")
        raw.commit()
    retried = service.ingest([BATCH[0]])
    assert retried.status_code == 410 and retried.json()["ids"] == ["t1"]


class StallingLedger(SqliteLedger):
    """Holds an erasure inside its recall-log step until told to go on, as a large erasure would take time."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.erasing = threading.Event()
        self.finish = threading.Event()

    def forget_recalls(self, partition: str, memory_ids: list[str] | None = None) -> int:
        self.erasing.set()
        self.finish.wait(timeout=10)
        return super().forget_recalls(partition, memory_ids)


def test_one_users_erasure_never_stalls_another_users_recall(tmp_path: Path) -> None:
    with _service(tmp_path, ledger=StallingLedger) as service:
        ledger = service.engine.ledger
        assert isinstance(ledger, StallingLedger)
        assert service.ingest([*BATCH, _turn("n1", "I love the river walk.", user="neighbour", session="n")]
                              ).status_code == 200
        erasing = threading.Thread(target=service.engine.erase_user, args=("acme:ava", "tester"),
                                   kwargs={"actor": "runtime:test"})
        erasing.start()
        assert ledger.erasing.wait(timeout=10)
        answered: list[int] = []
        recalling = threading.Thread(target=lambda: answered.append(service.recall("the river", user="neighbour")
                                                                     .status_code))
        recalling.start()
        recalling.join(timeout=5)  # while the tester's erasure still holds its gate
        stalled = recalling.is_alive()
        ledger.finish.set()
        erasing.join(timeout=10)
        recalling.join(timeout=10)
        assert not stalled and answered == [200]


def test_strict_erasure_drops_even_the_proper_names(service: Service) -> None:
    assert service.ingest(BATCH).status_code == 200
    _close(service)
    memory_id = service.engine.store.session_memories("acme:s1")[0].memory_id
    erased = service.client.delete(f"/v1/memories/{memory_id}", params={"character_id": "ava", "user_id": "tester",
                                                                       "strict": "true"}, headers=service.headers)
    assert erased.status_code == 200
    assert all(e.names is None for e in service.engine.ledger.history(memory_id))


def test_a_known_turn_id_with_other_content_or_owner_is_a_409_naming_it(service: Service) -> None:
    assert service.ingest(BATCH).status_code == 200
    for changed in ({"text": "Something else entirely."}, {"user_id": "someone-else", "session_id": "s7"},
                    {"role": "character"}, {"session_id": "s2"}):
        answer = service.ingest([{**BATCH[0], **changed}])
        assert answer.status_code == 409, (changed, answer.text)
        problem = answer.json()
        assert problem["ids"] == ["t1"] and "'t1'" in problem["detail"] and "acme:" not in problem["detail"]
        assert problem["errors"][0]["field"] == "turns[0].turn_id"
    # The first version is what is stored, unchanged.
    assert service.engine.store.get_turns("acme:s1")[0].text == BATCH[0]["text"]
    assert service.engine.store.get_turns("acme:s7") == []
    # Stamped anew on a retry, it is still the same turn: a duplicate, and the first time stays.
    restamped = service.ingest([{**BATCH[0], "timestamp": "2025-03-03T09:00:00Z"}])
    assert restamped.json() == {"stored": 0, "duplicates": 1, "memories": 0, "awaiting_embedding": 0}
    assert service.engine.store.get_turns("acme:s1")[0].timestamp == T0


def test_a_batch_holding_one_id_twice_counts_it_once_or_is_a_conflict(service: Service) -> None:
    twice = service.ingest([BATCH[0], BATCH[0]])
    assert twice.json() == {"stored": 1, "duplicates": 1, "memories": 1, "awaiting_embedding": 0}
    assert len(service.engine.store.session_memories("acme:s1")) == 1

    clash = service.ingest([_turn("t8", "First version."), _turn("t8", "Second version.")])
    assert clash.status_code == 409 and clash.json()["ids"] == ["t8"]
    assert clash.json()["errors"][0]["field"] == "turns[1].turn_id"
    assert service.engine.store.find_turns(["acme:t8"]) == {}  # nothing of the batch was stored


# -- a closed session appears all at once -------------------------------------------------------------------------


class PausingStore(EmbeddedStore):
    """Pauses after writing a session's first fact, as a slow disk or a busy server would between two writes."""

    def __init__(self, data_dir: Path, *, embedding_model: str, dimension: int) -> None:
        super().__init__(data_dir, embedding_model=embedding_model, dimension=dimension)
        self.first_fact_written = threading.Event()
        self.resume = threading.Event()

    def write_fact(self, fact: Memory, vector: NDArray[Any] | None, state: MemoryState,
                   replaced: Sequence[MemoryState]) -> None:
        super().write_fact(fact, vector, state, replaced)
        if not self.first_fact_written.is_set():
            self.first_fact_written.set()
            self.resume.wait(timeout=2)


def test_a_recall_during_a_close_sees_all_of_the_sessions_facts_or_none(tmp_path: Path) -> None:
    store = PausingStore(tmp_path / "data", embedding_model=EMBEDDER.model_id, dimension=EMBEDDER.dimension)
    engine = Engine(ledger=SqliteLedger.in_memory(), store=store, embedder=EMBEDDER, classifier=KeywordClassifier())
    try:
        engine.ingest([Turn.model_validate(t) for t in (
            _turn("a1", "I work at Pixel Bakery now.", session="s2"),
            _turn("a2", "I am allergic to peanuts.", session="s2", minute=1))])
        closing = threading.Thread(target=engine.close_session, args=("s2",))
        closing.start()
        assert store.first_fact_written.wait(timeout=10)
        seen: list[str] = []
        recalling = threading.Thread(target=lambda: seen.append(engine.recall(RecallQuery(
            character_id="ava", user_id="tester", message="what should I bring to the bakery?",
            at=T0 + timedelta(days=1))).context.prefix))
        recalling.start()
        recalling.join(timeout=0.5)  # a recall that is gated waits for the close; one that is not answers now
        store.resume.set()
        closing.join(timeout=10)
        recalling.join(timeout=10)
        [prefix] = seen
        found = [fact for fact in ("Pixel Bakery", "peanut") if fact in prefix]
        assert found in ([], ["Pixel Bakery", "peanut"]), prefix
        assert "peanut" in engine.recall(RecallQuery(character_id="ava", user_id="tester", message="lunch?",
                                                     at=T0 + timedelta(days=1))).context.prefix
    finally:
        engine.close()


def test_a_runtime_can_wait_for_the_write_time_pass_and_ask_for_its_job(tmp_path: Path) -> None:
    with _service(tmp_path, jobs=True) as service:
        assert service.ingest([_turn("a1", "I work at Pixel Bakery now."),
                               _turn("a2", "I am allergic to peanuts.", minute=1)]).status_code == 200
        closed = service.post("/v1/sessions/s1/close", wait="true", timeout_s="10")
        assert closed.status_code == 200, closed.text
        body = closed.json()
        assert body["status"] == "complete" and body["report"]["traces_written"] == 2
        assert body["report"]["session_id"] == "s1"
        prefix = service.recall("what should I bring for lunch?").json()["context"]["prefix"]
        assert "Pixel Bakery" in prefix and "peanut" in prefix

        job = service.client.get(f"/v1/jobs/{body['job_id']}", headers=service.headers)
        assert job.status_code == 200 and job.json()["status"] == "complete"
        # Another organisation's job is a 404, like its memories; an unknown one too.
        assert service.client.get("/v1/jobs/write-session:globex:s1", headers=service.headers).status_code == 404
        assert service.client.get("/v1/jobs/nope", headers=service.headers).status_code == 404
        assert service.post("/v1/sessions/s1/close", wait="true", timeout_s="31").status_code == 422


# -- on Weaviate: no stored object keeps the marker ---------------------------------------------------------------


def _weaviate_objects(url: str, prefix: str) -> Iterator[dict[str, Any]]:
    """Every object of every collection (and tenant) whose name starts with ``prefix``, by the REST API."""
    schema = httpx.get(f"{url}/v1/schema", timeout=30).raise_for_status().json()
    for collection in schema.get("classes") or []:
        name = collection["class"]
        if not name.startswith(prefix):
            continue
        tenants: list[str | None] = [None]
        if (collection.get("multiTenancyConfig") or {}).get("enabled"):
            tenants = [t["name"] for t in httpx.get(f"{url}/v1/schema/{name}/tenants", timeout=30)
                       .raise_for_status().json()]
        for tenant in tenants:
            after: str | None = None
            while True:
                params: dict[str, Any] = {"class": name, "limit": 100}
                if tenant is not None:
                    params["tenant"] = tenant
                if after is not None:
                    params["after"] = after
                page = httpx.get(f"{url}/v1/objects", params=params, timeout=30).raise_for_status().json()
                objects = page.get("objects") or []
                yield from objects
                if len(objects) < 100:
                    break
                after = objects[-1]["id"]


@pytest.mark.weaviate
def test_on_weaviate_no_object_keeps_an_erased_users_words(tmp_path: Path, weaviate_server: Any) -> None:
    from engine.adapters.weaviate import WeaviateStore

    prefix = f"Erasure{uuid.uuid4().hex[:10]}"
    store = WeaviateStore(weaviate_server.url, grpc_port=weaviate_server.grpc_port, embedding_model=EMBEDDER.model_id,
                          dimension=EMBEDDER.dimension, collection_prefix=prefix, timeout_s=30)
    engine = Engine(store=store, embedder=EMBEDDER, classifier=KeywordClassifier(),
                    ledger=SqliteLedger(tmp_path / "ledger.sqlite3"))
    try:
        turns = [Turn.model_validate(t) for t in BATCH]
        neighbour = Turn.model_validate(_turn("n1", "I live in Porto.", user="neighbour", session="n"))
        engine.ingest([*turns, neighbour])
        engine.close_session("s1")
        engine.close_session("n")
        engine.recall(RecallQuery(character_id="ava", user_id="tester", message=f"the {MARKER} bakery",
                                  at=T0 + timedelta(days=1)))
        assert any(MARKER in json.dumps(o) for o in _weaviate_objects(weaviate_server.url, prefix))

        receipt = engine.erase_user("ava", "tester", actor="runtime:test")
        assert receipt.turns == 3
        stored = list(_weaviate_objects(weaviate_server.url, prefix))
        assert [o for o in stored if MARKER in json.dumps(o)] == []
        assert any("Porto" in json.dumps(o) for o in stored)  # the neighbour's words are theirs, and stay
        assert not [p for p in tmp_path.rglob("*") if p.is_file() and MARKER.encode() in p.read_bytes()]
    finally:
        engine.close()
        weaviate_server.drop_collections(prefix)
