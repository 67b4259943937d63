"""The tuning page's server side: the page itself, the public defaults with each constant's label and help,
checking a profile without saving it, replaying a transcript under two profiles, the transcript list, and saving
every section (with a note, and only when something changed; rollback is a PUT of an old version)."""

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

from engine.domain.models import Partition
from engine.domain.tuning import TuningProfile
from engine.service import Engine
from tests.inprocess import KeyedClient, in_process

REPO = Path(__file__).resolve().parents[2]
JOB_CHANGE = (REPO / "tests" / "transcripts" / "job-change.yaml").read_text()


@dataclass
class Api(KeyedClient):
    engine: Engine


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    listed = tmp_path / "transcripts"
    listed.mkdir()
    (listed / "job-change.yaml").write_text(JOB_CHANGE)
    (listed / "notes.txt").write_text("not a transcript")
    with (in_process(tmp_path, transcript_dirs=[listed, tmp_path / "absent"]) as running,
          TestClient(running.app) as client):
        yield Api(client, running.keys, running.engine)


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
        response = api.client.request(method, path, json={**bad, "note": "more weight to relevance"}, headers=director)
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
        response = api.client.request("PUT" if path.endswith("tuning") else "POST", path,
                                      json={**bad, "note": "no tail"}, headers=director)
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


def test_the_defaults_and_what_each_constant_means_need_no_key(api: Api) -> None:
    answer = api.client.get("/v1/tuning/defaults")  # no Authorization: the shipped defaults are not secret
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["profile"] == TuningProfile().model_dump(mode="json")
    assert [s["name"] for s in body["sections"]] == list(sections(body["profile"]))
    assert all(s["label"] and s["help"] for s in body["sections"])

    # Every constant of every section, once, each with a plain-language label and help beside the engineer's note.
    constants = {c["path"]: c for c in body["constants"]}
    leaves = [f"{name}.{key}" for name, section in sections(body["profile"]).items() for key in section]
    assert list(constants) == leaves
    assert all(c["label"] and c["help"] and c["description"] for c in constants.values())
    half_life = constants["scoring.half_life_days_per_intensity_squared"]
    assert half_life["label"] == "How long feelings last" and half_life["unit"] == "days"
    assert half_life["help"].startswith("How long the character stays careful after a very sad moment")
    assert (half_life["minimum"], half_life["exclusive_minimum"], half_life["maximum"]) == (0, True, 10_000)
    assert constants["context.min_tier"] | {"choices": sorted(constants["context.min_tier"]["choices"])} == \
        constants["context.min_tier"] | {"kind": "choice", "choices": ["high", "low", "standard"]}
    assert constants["tone.loss_registers"]["kind"] == "set" and "grief" in constants["tone.loss_registers"]["choices"]
    assert constants["retrieval.window_turns"]["kind"] == "integer"
    assert constants["tone.min_intensity"]["calibrated_by"] == "feltsense eval tone-thresholds"

    # The constants a director leaves to engineers, and why: each says so, and the page folds them away.
    engineering = {path for path, c in constants.items() if c["engineering"]}
    assert engineering == {
        "retrieval.candidates", "retrieval.vector_min_similarity", "retrieval.vector_full_similarity",
        "retrieval.fused_floor", "retrieval.lexical_only_cap", "retrieval.bm25_k1", "retrieval.bm25_b",
        "retrieval.vector_zero_margin", "retrieval.vector_relative_margin", "retrieval.fused_relative_floor",
        "retrieval.tier_intercept", "retrieval.tier_fused_weight", "retrieval.tier_lead_weight",
        "write.max_attempts", "write.resolution_min_similarity", "consolidation.retrieval_scale",
        "consolidation.query_kind_scale", "consolidation.stated_scale", "consolidation.age_scale_days"}

    schema = api.client.get("/openapi.json").json()["paths"]["/v1/tuning/defaults"]["get"]
    assert "security" not in schema and "401" not in schema["responses"]


def test_a_save_needs_a_note_and_a_check_does_not(api: Api) -> None:
    director = api.as_("director")
    profile = sections(api.client.get("/v1/characters/ava/tuning", headers=director).json())
    changed = {**profile, "scoring": {**profile["scoring"], "min_half_life_days": 2.0}}
    for body in (changed, {**changed, "note": ""}, {**changed, "note": " \t\n "}):
        refused = api.client.put("/v1/characters/ava/tuning", json=body, headers=director)
        assert refused.status_code == 422, refused.text
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert [e["field"] for e in refused.json()["errors"]] == ["note"]
    blank = api.client.put("/v1/characters/ava/tuning", json={**changed, "note": "  "}, headers=director).json()
    assert blank["errors"][0]["message"] == "a note is needed: say why the values change (kept in the history)"
    assert api.client.get("/v1/characters/ava/tuning/history", headers=director).json() == []
    # The role is checked first: a key that may not save is told so, not asked for a note.
    assert api.client.put("/v1/characters/ava/tuning", json=changed, headers=api.as_("runtime")).status_code == 403

    checked = api.client.post("/v1/characters/ava/tuning/validate", json=changed, headers=director)
    assert checked.status_code == 200, checked.text
    saved = api.client.put("/v1/characters/ava/tuning", json={**changed, "note": "a softer floor"}, headers=director)
    assert saved.status_code == 200 and saved.json()["version"] == 2


def test_a_save_that_changes_nothing_is_refused_and_names_the_version_in_force(api: Api) -> None:
    director = api.as_("director")
    defaults = sections(api.client.get("/v1/characters/ava/tuning", headers=director).json())
    unchanged = api.client.put("/v1/characters/ava/tuning", json={**defaults, "note": "just saving"},
                               headers=director)
    assert unchanged.status_code == 409, unchanged.text
    assert unchanged.headers["content-type"].startswith("application/problem+json")
    assert unchanged.json()["detail"] == "no change: the values equal version 1, the one in force; change a value first"
    assert api.client.get("/v1/characters/ava/tuning/history", headers=director).json() == []  # not even v1

    tail = {**defaults, "strength": {**defaults["strength"], "tail_exponent": 0.8}}
    assert api.client.put("/v1/characters/ava/tuning", json={**tail, "note": "slower tail"},
                          headers=director).status_code == 200
    again = api.client.put("/v1/characters/ava/tuning", json={**tail, "note": "slower tail, again"}, headers=director)
    assert again.status_code == 409 and "equal version 2" in again.json()["detail"]
    # A register set is a set: the same registers in another order are no change either.
    tone = tail["tone"]
    reordered = {**tail, "tone": {**tone, "standing_registers": list(reversed(tone["standing_registers"]))}}
    assert api.client.put("/v1/characters/ava/tuning", json={**reordered, "note": "reordered"},
                          headers=director).status_code == 409
    # Going back to an older version's values is a change: that is a rollback.
    back = api.client.put("/v1/characters/ava/tuning", json={**defaults, "note": "rollback to v1"}, headers=director)
    assert back.status_code == 200 and back.json()["version"] == 3
    history = api.client.get("/v1/characters/ava/tuning/history", headers=director).json()
    assert [v["version"] for v in history] == [3, 2, 1]
    put = api.client.get("/openapi.json").json()["paths"]["/v1/characters/{character_id}/tuning"]["put"]
    assert "409" in put["responses"]
