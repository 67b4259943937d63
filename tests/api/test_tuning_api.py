"""The tuning page's server side: the page itself, checking a profile without saving it, replaying a transcript
under two profiles, the transcript list, and saving every section (rollback is a PUT of an old version)."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.auth import KeyStore
from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.models import Partition
from engine.service import Engine
from engine.tuning_store import TuningStore
from tests.fakes import KeywordClassifier

REPO = Path(__file__).resolve().parents[2]
JOB_CHANGE = (REPO / "tests" / "transcripts" / "job-change.yaml").read_text()


@dataclass
class Api:
    client: TestClient[Any]
    keys: KeyStore
    engine: Engine

    def as_(self, role: str, org: str = "acme") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys.create(org, role)}"}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    embedder = HashingEmbedder()
    tuning = TuningStore(tmp_path / "tuning.sqlite3")
    store = EmbeddedStore(tmp_path / "data", embedding_model=embedder.model_id, dimension=embedder.dimension)
    engine = Engine(store=store, embedder=embedder, classifier=KeywordClassifier(), profiles=tuning)
    keys = KeyStore(tmp_path / "keys.sqlite3")
    listed = tmp_path / "transcripts"
    listed.mkdir()
    (listed / "job-change.yaml").write_text(JOB_CHANGE)
    (listed / "notes.txt").write_text("not a transcript")
    with TestClient(create_app(engine, keys=keys, tuning=tuning, transcript_dirs=[listed, tmp_path / "absent"])) as c:
        yield Api(c, keys, engine)
    engine.close()


def sections(profile: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in profile.items() if k not in ("character_id", "version")}


def test_the_page_is_public_html_whose_policy_allows_only_its_own_inline_script(api: Api) -> None:
    response = api.client.get("/tuning")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    html = response.text
    assert "<script src" not in html and "http" not in re.sub(r"http://www\.w3\.org/2000/svg", "", html)
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.DOTALL)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    policy = response.headers["content-security-policy"]
    assert f"script-src 'sha256-{digest}';" in policy and "default-src 'none'" in policy
    assert "connect-src 'self'" in policy


def test_every_section_is_saved_and_an_old_version_put_back_is_a_rollback(api: Api) -> None:
    director = api.as_("director")
    profile = api.client.get("/v1/characters/ava/tuning", headers=director).json()
    changed = sections(profile)
    changed["strength"] = {**changed["strength"], "tail_exponent": 0.8}
    changed["scoring"] = {**changed["scoring"], "min_half_life_days": 2.0}
    saved = api.client.put("/v1/characters/ava/tuning", json={**changed, "note": "slower tail"}, headers=director)
    assert saved.status_code == 200, saved.text
    assert saved.json()["strength"]["tail_exponent"] == 0.8 and saved.json()["version"] == 2

    history = api.client.get("/v1/characters/ava/tuning/history", headers=director).json()
    v1 = next(v for v in history if v["version"] == 1)
    back = api.client.put("/v1/characters/ava/tuning", json={**sections(v1["profile"]), "note": "rollback to v1"},
                          headers=director).json()
    assert back["version"] == 3 and sections(back) == sections(v1["profile"])
    latest = api.client.get("/v1/characters/ava/tuning/history", headers=director).json()[0]
    assert latest["note"] == "rollback to v1" and latest["author"].startswith("director:")


def test_validate_answers_like_put_without_saving(api: Api) -> None:
    director = api.as_("director")
    profile = sections(api.client.get("/v1/characters/ava/tuning", headers=director).json())
    good = {**profile, "scoring": {**profile["scoring"], "half_life_days_per_intensity_squared": 60}}
    ok = api.client.post("/v1/characters/ava/tuning/validate", json=good, headers=director)
    assert ok.status_code == 200, ok.text
    assert ok.json()["scoring"]["half_life_days_per_intensity_squared"] == 60 and ok.json()["version"] == 1

    bad = {**profile, "scoring": {**profile["scoring"], "salience_base": 1.5}}
    for method in ("POST", "PUT"):
        path = "/v1/characters/ava/tuning" + ("/validate" if method == "POST" else "")
        response = api.client.request(method, path, json=bad, headers=director)
        assert response.status_code == 422
        assert response.headers["content-type"].startswith("application/problem+json")
        assert [e["field"] for e in response.json()["errors"]] == ["scoring.salience_base"]
    assert api.client.get("/v1/characters/ava/tuning/history", headers=director).json() == []


def test_a_profile_the_scoring_kernel_would_refuse_is_refused_before_it_is_saved(api: Api) -> None:
    # fast_weight 1 passes the profile's own bounds, but the kernel needs a tail; recall would fail on every turn.
    director = api.as_("director")
    profile = sections(api.client.get("/v1/characters/ava/tuning", headers=director).json())
    bad = {**profile, "strength": {**profile["strength"], "fast_weight": 1.0}}
    for path in ("/v1/characters/ava/tuning", "/v1/characters/ava/tuning/validate"):
        response = api.client.request("PUT" if path.endswith("tuning") else "POST", path, json=bad, headers=director)
        assert response.status_code == 422
        assert response.json()["errors"][0]["field"] == "strength.fast_weight"
    assert api.client.get("/v1/characters/ava/tuning", headers=director).json()["version"] == 1


def test_replay_compares_the_saved_and_the_proposed_profile_in_fresh_memories(api: Api) -> None:
    director = api.as_("director")
    profile = sections(api.client.get("/v1/characters/ava/tuning", headers=director).json())
    # Wording no longer counts (meaning alone ranks), and facts lose their weight: the ranking moves.
    proposed = {**profile, "scoring": {**profile["scoring"], "factual_salience": 0.0, "salience_base": 0.0},
                "retrieval": {**profile["retrieval"], "vector_weight": 1.0, "lexical_weight": 0.0}}
    response = api.client.post("/v1/characters/ava/tuning/replay",
                               json={"profile": proposed, "transcript": JOB_CHANGE}, headers=director)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["transcript"] == "job-change" and len(body["probes"]) == 1
    probe = body["probes"][0]
    assert probe["message"] == "Remind me, where do I work these days?" and (probe["session"], probe["turn"]) == (2, 0)
    current, new = probe["current"], probe["proposed"]
    assert "Brightwave" in current["memories"][0]["text"]
    assert [m["text"] for m in new["memories"]] != [m["text"] for m in current["memories"]]
    assert probe["ranking_changed"]
    assert {"text", "score", "session_id"} <= set(current["memories"][0])
    assert probe["verdict_changed"] == (current["passed"] != new["passed"])
    # Nothing was written to the service's own memory, under any id.
    for character in ("ava", "acme:ava"):
        assert api.engine.store.count(Partition(character_id=character, user_id="tester-3")) == 0
    assert api.client.get("/v1/characters/ava/tuning", headers=director).json()["version"] == 1


def test_replay_names_the_transcript_problem_and_needs_a_director(api: Api) -> None:
    director = api.as_("director")
    profile = sections(api.client.get("/v1/characters/ava/tuning", headers=director).json())
    broken = JOB_CHANGE.replace("recall_any: [Brightwave]", "recall_any: Brightwave")
    response = api.client.post("/v1/characters/ava/tuning/replay", json={"profile": profile, "transcript": broken},
                               headers=director)
    assert response.status_code == 422
    error = response.json()["errors"][0]
    assert error["field"] == "transcript.sessions[2].turns[0].probe.recall_any"
    assert error["message"].startswith("transcript:") and "expected a list of strings" in error["message"]

    for role, status in (("runtime", 403), ("evaluator", 403), ("admin", 200)):
        answer = api.client.post("/v1/characters/ava/tuning/replay",
                                 json={"profile": profile, "transcript": JOB_CHANGE}, headers=api.as_(role))
        assert answer.status_code == status, (role, answer.text)


def test_the_transcript_list_offers_the_configured_directories_yaml(api: Api) -> None:
    listed = api.client.get("/v1/transcripts", headers=api.as_("director"))
    assert listed.status_code == 200
    assert listed.json() == [{"name": "transcripts/job-change.yaml", "text": JOB_CHANGE}]
    assert api.client.get("/v1/transcripts", headers=api.as_("runtime")).status_code == 403
    assert api.client.get("/v1/transcripts").status_code == 401
