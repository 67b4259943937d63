"""The rehearsal schedule's rules on their own: who is enrolled, how boxes move, and when a cue may be offered."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from engine import rehearsal
from engine.domain.models import FactInfo, Memory, MemoryState
from engine.domain.tuning import RehearsalParams

T0 = datetime(2025, 4, 1, 18, tzinfo=UTC)
PARAMS = RehearsalParams()


def fact(memory_id: str, subject: str, relation: str, value: str) -> Memory:
    return Memory(memory_id=memory_id, turn_id="", session_id="s", character_id="ava", user_id="u", text=value,
                  created_at=T0, kind="fact",
                  fact=FactInfo(subject=subject, relation=relation, value=value, content_hash=memory_id,
                                source="user_stated"))


def test_the_policy_enrols_high_stakes_facts_and_pins_only() -> None:
    active = MemoryState(memory_id="x")
    cases = {("peanut", "allergy"): "allergy", ("user", "diet"): "diet", ("user's dog", "name"): "close_name",
             ("user", "name"): None, ("user's dog", "died"): "bereavement", ("jazz", "opinion"): None}
    for (subject, relation), reason in cases.items():
        assert rehearsal.enrolment_reason(fact("f", subject, relation, "v"), active, PARAMS) == reason
    assert rehearsal.enrolment_reason(fact("f", "jazz", "opinion", "loves"),
                                      active.model_copy(update={"pinned": True}), PARAMS) == "pinned"
    assert rehearsal.enrolment_reason(fact("f", "peanut", "allergy", "allergic"),
                                      active.model_copy(update={"status": "provisional"}), PARAMS) is None
    off = RehearsalParams(enrol=())
    assert rehearsal.enrolment_reason(fact("f", "peanut", "allergy", "allergic"), active, off) is None


def test_a_confirmation_moves_up_a_box_and_stays_in_the_last() -> None:
    plan = rehearsal.enrolled("diet", T0, PARAMS)
    assert (plan.box, plan.due) == (1, T0 + timedelta(days=14))
    for box in (2, 3, 4, 5, 5):
        plan = rehearsal.confirmed(plan, T0, PARAMS)
        assert plan.box == box and plan.due == T0 + timedelta(days=PARAMS.intervals()[box - 1])


def test_one_cue_a_session_and_none_within_the_cadence() -> None:
    peanut, diet = fact("f1", "peanut", "allergy", "allergic"), fact("f2", "user", "diet", "vegan")
    states = {f.memory_id: MemoryState(memory_id=f.memory_id, rehearsal=rehearsal.enrolled(r, T0, PARAMS))
              for f, r in ((peanut, "allergy"), (diet, "diet"))}
    early = rehearsal.choose_cue([peanut, diet], states, T0 + timedelta(days=1), "s1", PARAMS)
    assert (early.fact, early.due, early.note) == (None, 0, "")
    due = T0 + timedelta(days=15)
    assert rehearsal.choose_cue([peanut, diet], states, due, None, PARAMS).note.startswith("no session given")
    chosen = rehearsal.choose_cue([peanut, diet], states, due, "s1", PARAMS)
    assert chosen.fact is not None and chosen.due == 2
    given = chosen.fact.memory_id
    plan = states[given].rehearsal
    assert plan is not None
    states[given] = states[given].model_copy(update={"rehearsal": rehearsal.cued(plan, due, "s1", PARAMS)})
    again = rehearsal.choose_cue([peanut, diet], states, due + timedelta(minutes=5), "s1", PARAMS)
    assert again.fact is None and again.due == 1 and "this session" in again.note
    soon = rehearsal.choose_cue([peanut, diet], states, due + timedelta(days=1), "s2", PARAMS)
    assert soon.fact is None and "cadence is 3 days" in soon.note
    later = rehearsal.choose_cue([peanut, diet], states, due + timedelta(days=4), "s3", PARAMS)
    assert later.fact is not None and later.fact.memory_id != given
