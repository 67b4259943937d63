"""The review queue's new states over HTTP: conflict tickets (filed in the canon's queue, decided by a director,
with both sides), automatic keeps on earned trust (listed as auto_kept, undone back to pending), the trust record,
and the moves each state allows. Roles and organisations hold as everywhere: a user's key never sees the canon's
queue, another organisation's never sees this one's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from tests.api.test_lifecycle_api import Api
from tests.inprocess import in_process

USER = {"character_id": "ava", "user_id": "u1"}
CANON = {"character_id": "ava"}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with in_process(tmp_path, transcript_dirs=None) as running, TestClient(running.app) as client:
        yield Api(client, running.keys, running.clock)


def decide(api: Api, item_id: str, decision: str, role: str, params: dict[str, str]) -> Any:
    return api.client.post(f"/v1/review/{item_id}", params=params, json={"decision": decision},
                           headers=api.as_(role))


def test_a_conflict_ticket_is_the_directors_names_both_sides_and_is_reversible(api: Api) -> None:
    canon = {"scope": "canon", "character_id": "ava", "subject": "ava", "relation": "lives_in", "value": "Lisbon",
             "sentence": "Ava lives in Lisbon."}
    assert api.client.post("/v1/facts", json=canon, headers=api.as_("director")).status_code == 200
    claim = {**canon, "scope": "user", "user_id": "u1", "value": "Porto", "sentence": "You live in Porto."}
    written = api.client.post("/v1/facts", json=claim, headers=api.as_("runtime"))
    assert written.status_code == 200 and written.json()["status"] == "active"

    # The director's queue has it, with both sides; the runtime's (the user level) does not.
    [ticket] = api.client.get("/v1/review", params=CANON, headers=api.as_("director")).json()
    assert ticket["kind"] == "conflict" and ticket["memory_id"] == written.json()["fact_id"]
    assert [s["scope"] for s in ticket["sides"]] == ["user", "canon"]
    assert "Porto" in ticket["sides"][0]["text"] and "Lisbon" in ticket["sides"][1]["text"]
    assert api.client.get("/v1/review", params=USER, headers=api.as_("runtime")).json() == []
    assert api.client.get("/v1/review", params=CANON, headers=api.as_("director", org="other")).json() == []
    assert decide(api, ticket["item_id"], "kept", "runtime", USER).status_code == 404

    # Until a decision, the character speaks canon to this user.
    said = api.client.post("/v1/recall", headers=api.as_("runtime"), json={**USER, "message": "where do you live?"})
    assert "Lisbon" in said.json()["context"]["system"] and "Porto" not in said.json()["context"]["system"]


def test_conflict_decisions_move_the_ticket_through_its_states(api: Api) -> None:
    canon = {"scope": "canon", "character_id": "ava", "subject": "ava", "relation": "lives_in", "value": "Lisbon",
             "sentence": "Ava lives in Lisbon."}
    api.client.post("/v1/facts", json=canon, headers=api.as_("director"))
    api.client.post("/v1/facts", json={**canon, "scope": "user", "user_id": "u1", "value": "Porto",
                                       "sentence": "x"}, headers=api.as_("runtime"))
    [ticket] = api.client.get("/v1/review", params=CANON, headers=api.as_("director")).json()
    kept = decide(api, ticket["item_id"], "kept", "director", CANON)
    assert kept.status_code == 200 and kept.json()["decision"] == "kept"
    said = api.client.post("/v1/recall", headers=api.as_("runtime"), json={**USER, "message": "where do you live?"})
    assert "Porto" in said.json()["context"]["system"] and "Lisbon" not in said.json()["context"]["system"]
    # An automatic keep's undo is refused on a person's keep, naming the field.
    refused = decide(api, ticket["item_id"], "undone", "director", CANON)
    assert refused.status_code == 422 and "decision" in refused.text
    reverted = decide(api, ticket["item_id"], "reverted", "director", CANON)
    assert reverted.json()["decision"] == "reverted"
    facts = api.client.get("/v1/facts", params={**USER, "scope": "user"}, headers=api.as_("runtime")).json()
    assert [f["state"] for f in facts if f["fact"]["memory_id"] == ticket["memory_id"]] == [ticket["before"]]


def test_earned_trust_auto_keeps_lists_them_and_undoes_them_into_the_queue(api: Api) -> None:
    profile = {"note": "trust after two kept taste promotions",
               "consolidation": {"mode": "k_of_n", "k": 3, "bar_stated": 2, "bar_retrievals": 1000,
                                 "bar_query_kinds": 32, "bar_age_days": 3650},
               "trust": {"auto_keep_after": 2, "min_keep_rate": 1.0}}
    assert api.client.put("/v1/characters/ava/tuning", json=profile, headers=api.as_("director")).status_code == 200
    trust = {**CANON, "change_kind": "promote:opinion"}
    assert api.client.get("/v1/review/trust", params=trust, headers=api.as_("runtime")).status_code == 403
    for i, thing in enumerate(("hiking", "knitting", "baking")):
        api.say("u1", [f"I love {thing}.", f"Honestly, I love {thing}."], session=f"s{i}")
        assert api.client.post("/v1/maintenance/sweep", headers=api.as_("admin")).status_code == 200
        if i < 2:
            [item] = api.client.get("/v1/review", params=USER, headers=api.as_("runtime")).json()
            assert item["change_kind"] == "promote:opinion" and item["decision"] == "pending"
            assert decide(api, item["item_id"], "kept", "runtime", USER).json()["decision"] == "kept"

    record = api.client.get("/v1/review/trust", params=trust, headers=api.as_("director")).json()
    assert record | {"rate": 1.0} == {"change_kind": "promote:opinion", "kept": 2, "rejected": 0, "reverted": 0,
                                      "held": 2, "rate": 1.0, "auto_keep_after": 2, "min_keep_rate": 1.0,
                                      "eligible": True, "earned": True}
    assert api.client.get("/v1/review", params=USER, headers=api.as_("runtime")).json() == []
    [auto] = api.client.get("/v1/review", params={**USER, "decision": "auto_kept"},
                            headers=api.as_("runtime")).json()
    assert auto["decided_by"] == "trust" and "baking" in str(api.recall("u1", "what do I love baking"))
    assert decide(api, auto["item_id"], "reverted", "runtime", USER).status_code == 422
    undone = decide(api, auto["item_id"], "undone", "runtime", USER)
    assert undone.status_code == 200 and undone.json()["decision"] == "pending"
    [back] = api.client.get("/v1/review", params=USER, headers=api.as_("runtime")).json()
    assert back["item_id"] == auto["item_id"]
    # Neither the automatic keep nor its undoing counted.
    assert api.client.get("/v1/review/trust", params=trust, headers=api.as_("director")).json()["kept"] == 2
    other = {**CANON, "change_kind": "demote"}
    assert api.client.get("/v1/review/trust", params=other, headers=api.as_("admin")).json()["eligible"] is False
    bad = api.client.get("/v1/review/trust", params={**CANON, "change_kind": "Promote!"},
                         headers=api.as_("admin"))
    assert bad.status_code == 400 or bad.status_code == 422
