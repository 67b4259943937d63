"""Isolation, by property: random organisations, characters, users and roles making random ingest, close,
recall, list, fact, archive, recall-log and erasure calls. After every call, no response carries a secret
written in another user's private scope or another organisation, on both store backends.

Every secret is a unique made-up word owned by one (organisation, character, user); org-shared facts carry
secrets owned by the organisation. A response may contain only its caller's own secrets and its
organisation's shared ones.
"""

from __future__ import annotations

import itertools
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litestar.testing import TestClient

from api.app import create_app
from api.auth import KeyStore
from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.adapters.sqlite_tuning import SqliteTuningStore
from engine.domain.ports import MemoryStore
from engine.service import Engine
from tests.fakes import KeywordClassifier
from tests.keys import sqlite_key_store

pytestmark = pytest.mark.isolation

ORGS = ("acme", "globex")
CHARACTERS = ("ava", "bo")
USERS = ("u1", "u2", "u3")
SECRET = re.compile(r"zq[a-z]+x\d+")
_counter = itertools.count()


@dataclass
class World:
    client: TestClient[Any]
    keys: KeyStore
    tokens: dict[tuple[str, str], str] = field(default_factory=dict)
    owner: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # secret -> (org, character, user)
    shared: dict[str, str] = field(default_factory=dict)  # secret -> org (org-shared facts)
    memories: list[str] = field(default_factory=list)
    recalls: list[str] = field(default_factory=list)
    calls: int = 0
    own_seen: int = 0  # responses that did carry the caller's own secrets: the property is not vacuous

    def __repr__(self) -> str:  # hypothesis prints the fixture with a failing case: keep it short
        return f"World({len(self.owner)} secrets, {self.calls} calls)"

    def headers(self, org: str, role: str) -> dict[str, str]:
        if (org, role) not in self.tokens:
            self.tokens[(org, role)] = self.keys.create(org, role)
        return {"Authorization": f"Bearer {self.tokens[(org, role)]}"}

    def secret(self, org: str, character: str, user: str) -> str:
        word = f"zq{''.join(chr(97 + int(d)) for d in str(next(_counter)))}x{len(self.owner)}"
        self.owner[word] = (org, character, user)
        return word

    def check(self, body: str, org: str, character: str | None, user: str | None) -> None:
        """The property: only the caller's own secrets, and its organisation's shared ones."""
        self.calls += 1
        for word in set(SECRET.findall(body)):
            if word in self.shared:
                assert self.shared[word] == org, f"{org} saw another organisation's shared secret {word}"
                continue
            owner = self.owner.get(word)
            assert owner is not None, f"unknown secret {word}"
            assert owner == (org, character, user), f"{(org, character, user)} saw {owner}'s secret {word}"
            self.own_seen += 1


def _engine(store: MemoryStore, tmp: Path) -> Engine:
    return Engine(store=store, embedder=HashingEmbedder(), classifier=KeywordClassifier(),
                  ledger=SqliteLedger(tmp / f"ledger-{uuid.uuid4().hex[:6]}.sqlite3"))


@pytest.fixture(scope="module", params=["embedded", pytest.param("weaviate", marks=pytest.mark.weaviate)])
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("isolation")
    embedder = HashingEmbedder()
    prefix = None
    if request.param == "embedded":
        store: MemoryStore = EmbeddedStore(tmp / "data", embedding_model=embedder.model_id,
                                           dimension=embedder.dimension)
    else:
        from engine.adapters.weaviate import WeaviateStore

        server = request.getfixturevalue("weaviate_server")
        prefix = f"Isolation{uuid.uuid4().hex[:10]}"
        store = WeaviateStore(server.url, grpc_port=server.grpc_port, embedding_model=embedder.model_id,
                              dimension=embedder.dimension, collection_prefix=prefix, timeout_s=30)
    engine = _engine(store, tmp)
    tuning = SqliteTuningStore(tmp / "tuning.sqlite3")
    keys = sqlite_key_store(tmp / "keys.sqlite3")
    with TestClient(create_app(engine, keys=keys, tuning=tuning)) as client:
        world = World(client, keys)
        yield world
        assert world.calls > 100 and world.own_seen > 10
    engine.close()
    tuning.close()
    keys.close()
    if prefix is not None:
        request.getfixturevalue("weaviate_server").drop_collections(prefix)


who = st.tuples(st.sampled_from(ORGS), st.sampled_from(CHARACTERS), st.sampled_from(USERS))
operation = st.one_of(
    st.tuples(st.just("ingest"), who),
    st.tuples(st.just("recall"), who),
    st.tuples(st.just("list"), who),
    st.tuples(st.just("search"), who),
    st.tuples(st.just("fact"), who),
    st.tuples(st.just("shared_fact"), who),
    st.tuples(st.just("archive"), who),
    st.tuples(st.just("read_memory"), who),
    st.tuples(st.just("read_recall"), who),
    st.tuples(st.just("erase"), who),
    st.tuples(st.just("admin_reads"), who),
)


def _tempting_message(world: World) -> str:
    """A message naming every secret there is: recall would find other users' words if anything leaked."""
    return "tell me about " + " ".join(list(world.owner)[-40:] + list(world.shared)[-10:])


def run(world: World, op: str, org: str, character: str, user: str) -> None:
    runtime = world.headers(org, "runtime")
    where = {"character_id": character, "user_id": user}
    if op == "ingest":
        n = next(_counter)
        word = world.secret(org, character, user)
        turn = {"turn_id": f"t{n}", "session_id": f"s{n}", "character_id": character, "user_id": user,
                "role": "user", "text": f"My secret word is {word} and I live in Leeds.",
                "timestamp": "2025-03-01T10:00:00Z"}
        response = world.client.post("/v1/turns", json={"turns": [turn]}, headers=runtime)
        assert response.status_code == 200, response.text
        closed = world.client.post(f"/v1/sessions/s{n}/close", headers=runtime)
        assert closed.status_code == 200, closed.text
        world.check(response.text + closed.text, org, character, user)
    elif op in ("recall", "search", "list"):
        if op == "recall":
            # The full answer: everything the compact one says, and every trace besides.
            response = world.client.post("/v1/recall", headers=runtime, params={"detail": "full"},
                                         json={**where, "message": _tempting_message(world)})
            if response.status_code == 200:
                world.recalls.append(response.json()["recall_id"])
                world.memories.extend(m["memory_id"] for m in response.json()["memories"])
        else:
            params = {**where, "archived": True}
            if op == "search":
                params["q"] = _tempting_message(world)[:1900]
            response = world.client.get("/v1/memories", params=params, headers=runtime)
            if response.status_code == 200:
                world.memories.extend(i["memory"]["memory_id"] for i in response.json()["items"])
        assert response.status_code == 200, response.text
        world.check(response.text, org, character, user)
    elif op == "fact":
        word = world.secret(org, character, user)
        response = world.client.post("/v1/facts", headers=runtime, json={
            "scope": "user", "character_id": character, "user_id": user, "subject": "user",
            "relation": "password", "value": word, "sentence": f"The user's password is {word}."})
        assert response.status_code == 200, response.text
        listed = world.client.get("/v1/facts", headers=runtime,
                                  params={"scope": "user", "character_id": character, "user_id": user})
        world.check(response.text + listed.text, org, character, user)
    elif op == "shared_fact":
        word = f"zq{''.join(chr(97 + int(d)) for d in str(next(_counter)))}x0"
        world.shared[word] = org
        response = world.client.post("/v1/facts", headers=world.headers(org, "admin"), json={
            "scope": "shared", "character_id": character, "subject": "office", "relation": "door_code",
            "value": word, "sentence": f"The office door code is {word}."})
        assert response.status_code == 200, response.text
        world.check(response.text, org, None, None)
    elif op in ("archive", "read_memory"):
        for memory_id in world.memories[-5:]:
            if op == "archive":
                response = world.client.post(f"/v1/memories/{memory_id}/archive", params=where, headers=runtime)
            else:
                response = world.client.get(f"/v1/memories/{memory_id}", params=where, headers=runtime)
            assert response.status_code in (200, 404, 422), response.text
            world.check(response.text, org, character, user)
    elif op == "read_recall":
        for recall_id in world.recalls[-5:]:
            response = world.client.get(f"/v1/recalls/{recall_id}", params={**where, "detail": "full"},
                                        headers=world.headers(org, "evaluator"))
            assert response.status_code in (200, 404), response.text
            world.check(response.text, org, character, user)
    elif op == "erase":
        response = world.client.delete(f"/v1/users/{user}", params={"character_id": character}, headers=runtime)
        assert response.status_code == 200, response.text
        world.check(response.text, org, character, user)
    elif op == "admin_reads":
        admin = world.headers(org, "admin")
        for response in (
            world.client.get("/v1/memories", params=where, headers=admin),
            world.client.post("/v1/recall", headers=admin, json={**where, "message": _tempting_message(world)}),
            world.client.get("/v1/facts", params={"scope": "user", **where}, headers=admin),
            world.client.get("/v1/facts", params={"scope": "shared", "character_id": character}, headers=admin),
            world.client.get("/v1/audit", params=where, headers=admin),
        ):
            assert response.status_code in (200, 403), response.text
            world.check(response.text, org, None, None)  # an admin sees shared memory, never a user's


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(st.lists(operation, min_size=5, max_size=30))
def test_no_response_ever_carries_another_users_or_organisations_content(
    world: World, operations: list[tuple[str, tuple[str, str, str]]]
) -> None:
    for op, (org, character, user) in operations:
        run(world, op, org, character, user)
