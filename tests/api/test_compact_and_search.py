"""What a runtime and a user read from the API: a compact recall by default (the whole result on request), floats
of 4 decimal places, and a search that finds a user's faded and archived memories, so they can erase one.

The app runs in process over real stores, with the engine's clock in the test's hand: "seven years later" is a
clock set forward, as the nightly sweep and every strength see it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from feltsense_client.models import CompactMemory, CompactRecall, CompactToneRule
from litestar.testing import TestClient

from api.app import create_app
from api.auth import KeyStore
from api.compact import compact_recall
from api.tenancy import scoped, unscope_result
from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.adapters.sqlite_tuning import SqliteTuningStore
from engine.domain.models import Partition, RecallResult
from engine.service import Engine
from tests.fakes import KeywordClassifier, hashing_engine_in
from tests.keys import sqlite_key_store

SAID = datetime(2025, 3, 2, 18, tzinfo=UTC)
LUNA = ("My dog Luna died last week.", "Luna and I walked in the park every single morning.")
SEVEN_YEARS = timedelta(days=7 * 365)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Api:
    client: TestClient[Any]
    engine: Engine
    clock: Clock
    keys: KeyStore

    def headers(self, org: str = "acme") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys.create(org, 'runtime')}"}

    def say(self, user: str, session: str, texts: tuple[str, ...], at: datetime = SAID) -> None:
        turns = [{"turn_id": f"{session}-{i}", "session_id": session, "character_id": "ava", "user_id": user,
                  "role": "user", "text": text, "timestamp": (at + timedelta(minutes=i)).isoformat()}
                 for i, text in enumerate(texts)]
        assert self.client.post("/v1/turns", json={"turns": turns}, headers=self.headers()).status_code == 200
        closed = self.client.post(f"/v1/sessions/{session}/close", headers=self.headers(),
                                  json={"closed_at": (at + timedelta(hours=1)).isoformat()})
        assert closed.status_code == 200, closed.text

    def recall(self, message: str, **params: str) -> dict[str, Any]:
        response = self.client.post("/v1/recall", params=params, headers=self.headers(), json={
            "character_id": "ava", "user_id": "tester-1", "message": message, "session_id": "s9"})
        assert response.status_code == 200, response.text
        return dict(response.json())

    def search(self, q: str, user: str = "tester-1", org: str = "acme", **params: Any) -> list[dict[str, Any]]:
        response = self.client.get("/v1/memories", headers=self.headers(org),
                                   params={"character_id": "ava", "user_id": user, "q": q, **params})
        assert response.status_code == 200, response.text
        assert response.json()["mode"] == "hybrid"
        return list(response.json()["items"])

    def listing(self, **params: Any) -> list[dict[str, Any]]:
        response = self.client.get("/v1/memories", headers=self.headers(),
                                   params={"character_id": "ava", "user_id": "tester-1", **params})
        assert response.status_code == 200, response.text
        return list(response.json()["items"])


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    clock = Clock(SAID + timedelta(days=9))
    embedder = HashingEmbedder()
    tuning = SqliteTuningStore(tmp_path / "tuning.sqlite3")
    store = EmbeddedStore(tmp_path / "data", embedding_model=embedder.model_id, dimension=embedder.dimension)
    engine = Engine(store=store, embedder=embedder, classifier=KeywordClassifier(), profiles=tuning, clock=clock,
                    ledger=SqliteLedger(tmp_path / "ledger.sqlite3"))
    keys = sqlite_key_store(tmp_path / "keys.sqlite3")
    with TestClient(create_app(engine, keys=keys, tuning=tuning, transcript_dirs=())) as client:
        yield Api(client, engine, clock, keys)
    engine.close()
    tuning.close()
    keys.close()


def floats(text: str) -> list[str]:
    """Every float literal of a JSON body, as written."""
    found: list[str] = []

    def keep(literal: str) -> float:
        found.append(literal)
        return float(literal)

    json.loads(text, parse_float=keep)
    return found


def decimals(literal: str) -> int:
    exponent = Decimal(literal).as_tuple().exponent
    assert isinstance(exponent, int)
    return max(0, -exponent)


# -- the compact recall ------------------------------------------------------------------------------------------


def test_a_recall_is_compact_by_default_what_a_runtime_reads_and_no_trace(api: Api) -> None:
    api.say("tester-1", "s1", LUNA)
    body = api.recall("I went for a walk in the park this morning.")

    assert set(body) == set(CompactRecall.model_fields)
    assert "grieving" in body["context"]["system"] and "park" in body["context"]["tail"]
    assert set(body["context"]) == {"prefix", "tone", "tail", "system"}
    assert set(body["trace"]) == {"mode", "profile_version", "notes"} and body["trace"]["mode"] == "hybrid"
    [rule] = [r for r in body["tone_constraints"] if r["register"] == "grief"]
    assert set(rule) == set(CompactToneRule.model_fields) and "Luna" in rule["anchors"]
    walk = next(m for m in body["memories"] if m["text"] == LUNA[1])
    assert set(walk) == set(CompactMemory.model_fields)
    trace = api.client.get(f"/v1/memories/{walk['memory_id']}/trace", headers=api.headers(),
                           params={"character_id": "ava", "user_id": "tester-1"}).json()
    assert walk["feeling"] == {key: trace[key] for key in ("register", "valence", "intensity")}
    assert walk["feeling"]["register"] == "grief"
    assert walk["tier"] in ("high", "standard", "low") and walk["score"] > 0 and walk["stale"] is False
    # None of the full answer's explanation: no write-time trace, legs, anchors matched or score components.
    for memory in body["memories"]:
        assert not {"trace", "legs", "matched_anchors", "window_anchors", "components", "context"} & set(memory)


def test_detail_full_is_the_whole_recall_result_as_before_rounded(api: Api) -> None:
    api.say("tester-1", "s1", LUNA)
    compact = api.recall("I went for a walk in the park this morning.")
    where = {"character_id": "ava", "user_id": "tester-1"}
    # The recall log keeps the engine's exact result: the body the service sent before this change.
    logged = unscope_result("acme", api.engine.recall_record(
        compact["recall_id"], Partition(character_id=scoped("acme", "ava"), user_id="tester-1")))
    before = json.loads(logged.model_dump_json())
    assert any(decimals(f) > 4 for f in floats(logged.model_dump_json()))  # so the rounding below is not vacuous

    full = api.client.get(f"/v1/recalls/{compact['recall_id']}", params={**where, "detail": "full"},
                          headers=api.headers()).json()
    assert set(full) == set(before) == set(RecallResult.model_fields)
    assert full == _rounded(before)
    assert RecallResult.model_validate(full).memories[0].trace is not None
    # The compact answer is the same turn, in brief; the log answers it again by default.
    assert compact == _rounded(json.loads(compact_recall(logged).model_dump_json()))
    assert api.client.get(f"/v1/recalls/{compact['recall_id']}", params=where, headers=api.headers()).json() \
        == compact

    posted = api.recall("I went for a walk in the park this morning.", detail="full")
    assert set(posted) == set(RecallResult.model_fields)
    assert {"relevance", "salience", "anchor_boost", "score"} <= set(posted["memories"][0]["components"])
    assert posted["memories"][0]["trace"]["register"] == "grief"


def _rounded(value: Any) -> Any:
    """The test's own reading of "4 decimal places", apart from the service's."""
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def test_every_float_the_memory_and_recall_endpoints_send_has_at_most_4_decimals(api: Api) -> None:
    api.say("tester-1", "s1", LUNA)
    where = {"character_id": "ava", "user_id": "tester-1"}
    compact = api.client.post("/v1/recall", headers=api.headers(), json={**where, "message": "the park"})
    full = api.client.post("/v1/recall", params={"detail": "full"}, headers=api.headers(),
                           json={**where, "message": "the park"})
    memory_id = api.listing()[0]["memory"]["memory_id"]
    recall_id = compact.json()["recall_id"]
    bodies = {
        "recall": compact, "recall full": full,
        "logged recall": api.client.get(f"/v1/recalls/{recall_id}", params=where, headers=api.headers()),
        "logged recall full": api.client.get(f"/v1/recalls/{recall_id}", params={**where, "detail": "full"},
                                             headers=api.headers()),
        "listing": api.client.get("/v1/memories", params=where, headers=api.headers()),
        "search": api.client.get("/v1/memories", params={**where, "q": "Luna"}, headers=api.headers()),
        "memory": api.client.get(f"/v1/memories/{memory_id}", params=where, headers=api.headers()),
        "trace": api.client.get(f"/v1/memories/{memory_id}/trace", params=where, headers=api.headers()),
    }
    for name, response in bodies.items():
        assert response.status_code == 200, (name, response.text)
        found = floats(response.text)
        assert found, f"{name}: no float to check"
        assert max(decimals(f) for f in found) <= 4, (name, [f for f in found if decimals(f) > 4])


@pytest.mark.parametrize("path", ["/v1/recall", "/v1/recalls/rc_0123456789abcdef"])
def test_a_bad_detail_is_a_422_naming_the_detail_query_parameter(api: Api, path: str) -> None:
    where = {"character_id": "ava", "user_id": "tester-1"}
    if path == "/v1/recall":
        response = api.client.post(path, params={"detail": "everything"}, json={**where, "message": "hi"},
                                   headers=api.headers())
    else:
        response = api.client.get(path, params={**where, "detail": "everything"}, headers=api.headers())
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert [(e["field"], e["location"]) for e in body["errors"]] == [("detail", "query")]
    assert "detail (query)" in body["detail"]


# -- a search that finds what to erase ---------------------------------------------------------------------------


def test_a_search_finds_faded_and_archived_memories_flagged_and_one_can_be_read_and_erased(api: Api) -> None:
    api.say("tester-1", "s1", LUNA)
    api.say("tester-1", "s2", ("We ate a sandwich at the blue door cafe.",), at=SAID + timedelta(days=1))
    api.say("tester-2", "t1", ("Luna is my cat, she sleeps by the blue door.",))

    # Nine days on: found, fresh, active; best match first.
    fresh = api.search("Luna")
    assert {i["memory"]["text"] for i in fresh} >= set(LUNA)
    assert all(i["state"]["status"] == "active" and i["faded"] is False for i in fresh)
    relevance = [i["relevance"] for i in fresh]
    assert relevance == sorted(relevance, reverse=True)
    mentions = ["Luna" in i["memory"]["text"] for i in fresh]  # what was searched for comes before what was not
    assert mentions == sorted(mentions, reverse=True)
    # Archived today, by hand: found by a search, flagged archived, not faded; left out when archived=false.
    [cafe] = api.search("sandwich blue door cafe")
    cafe_id = cafe["memory"]["memory_id"]
    where = {"character_id": "ava", "user_id": "tester-1"}
    assert api.client.post(f"/v1/memories/{cafe_id}/archive", params=where, headers=api.headers()).status_code \
        == 200
    [archived] = [i for i in api.search("sandwich blue door cafe") if i["memory"]["memory_id"] == cafe_id]
    assert (archived["state"]["status"], archived["faded"]) == ("archived", False)
    assert cafe_id not in {i["memory"]["memory_id"] for i in api.search("sandwich blue door cafe", archived=False)}
    assert cafe_id not in {i["memory"]["memory_id"] for i in api.listing()}  # the listing's audit flag as it was
    assert cafe_id in {i["memory"]["memory_id"] for i in api.listing(archived=True)}

    # Seven years on the Luna memories have faded, and the nightly sweep archives them: recall no longer has them.
    api.clock.now += SEVEN_YEARS
    faded = {i["memory"]["text"]: i for i in api.listing() if i["memory"]["text"] in LUNA}
    assert all(i["faded"] is True and i["strength"] < 0.05 for i in faded.values()) and len(faded) == 2
    api.engine.sweep()
    assert not set(LUNA) & {m["text"] for m in api.recall("Luna")["memories"]}
    assert not set(LUNA) & {i["memory"]["text"] for i in api.listing()}
    found = {i["memory"]["text"]: i for i in api.search("Luna")}
    assert set(LUNA) <= set(found)
    for text in LUNA:
        assert (found[text]["state"]["status"], found[text]["faded"]) == ("archived", True)
        assert found[text]["trace"]["register"] == "grief"

    # Read by id, then erased: gone from the search, and the id is a 404.
    walk_id = found[LUNA[1]]["memory"]["memory_id"]
    read = api.client.get(f"/v1/memories/{walk_id}", params=where, headers=api.headers())
    assert read.status_code == 200 and read.json()["memory"]["text"] == LUNA[1]
    erased = api.client.delete(f"/v1/memories/{walk_id}", params=where, headers=api.headers())
    assert erased.status_code == 200 and erased.json()["memories"] == [walk_id]
    assert LUNA[1] not in {i["memory"]["text"] for i in api.search("Luna walked in the park")}
    assert api.client.get(f"/v1/memories/{walk_id}", params=where, headers=api.headers()).status_code == 404


def test_a_search_never_finds_another_users_or_organisations_memory_nor_the_shared_ones(api: Api) -> None:
    api.say("tester-1", "s1", LUNA)
    api.say("tester-2", "t1", ("Luna is my cat, she sleeps by the blue door.",))
    admin = {"Authorization": f"Bearer {api.keys.create('acme', 'admin')}"}
    shared = api.client.post("/v1/facts", headers=admin, json={
        "scope": "shared", "character_id": "ava", "subject": "office", "relation": "door_colour", "value": "blue",
        "sentence": "The office has a blue door and Luna the office cat."})
    assert shared.status_code == 200, shared.text

    mine = api.search("Luna blue door")
    assert mine and all(i["memory"]["user_id"] == "tester-1" for i in mine)
    assert not any("cat" in i["memory"]["text"] for i in mine)  # neither tester-2's nor the organisation's
    theirs = api.search("Luna died park", user="tester-2")
    assert theirs and not set(LUNA) & {i["memory"]["text"] for i in theirs}
    assert api.search("Luna", org="rival") == []
    # Another user may not erase it either: a 404, and it is still found by its owner.
    walk_id = next(i["memory"]["memory_id"] for i in mine if i["memory"]["text"] == LUNA[1])
    other = api.client.delete(f"/v1/memories/{walk_id}", params={"character_id": "ava", "user_id": "tester-2"},
                              headers=api.headers())
    assert other.status_code == 404 and "Luna" not in other.text
    assert walk_id in {i["memory"]["memory_id"] for i in api.search("Luna")}


def test_a_search_answers_one_page_and_says_so_when_offset_is_given(api: Api) -> None:
    api.say("tester-1", "s1", LUNA)
    response = api.client.get("/v1/memories", headers=api.headers(), params={
        "character_id": "ava", "user_id": "tester-1", "q": "Luna", "offset": 5})
    assert response.status_code == 422
    assert [(e["field"], e["location"]) for e in response.json()["errors"]] == [("offset", "query")]
    assert len(api.search("Luna", limit=1)) == 1


def test_a_search_with_the_embedder_down_answers_lexically_then_by_substring_and_says_so(tmp_path: Path) -> None:
    engine = hashing_engine_in(tmp_path / "data", embedder_down=True)
    keys = sqlite_key_store(tmp_path / "keys.sqlite3")
    headers = {"Authorization": f"Bearer {keys.create('acme', 'runtime')}"}
    where = {"character_id": "ava", "user_id": "tester-1"}
    with TestClient(create_app(engine, keys=keys, transcript_dirs=())) as client:
        turn = {"turn_id": "t1", "session_id": "s1", **where, "role": "user", "text": LUNA[1],
                "timestamp": SAID.isoformat()}
        assert client.post("/v1/turns", json={"turns": [turn]}, headers=headers).json()["awaiting_embedding"] == 1
        for q, mode in (("the park", "lexical"), ("alked", "substring")):
            page = client.get("/v1/memories", params={**where, "q": q}, headers=headers).json()
            assert page["mode"] == mode and [i["memory"]["text"] for i in page["items"]] == [LUNA[1]]
    engine.close()
    keys.close()
