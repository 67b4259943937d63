"""Rehearsal (seed 000: "spaced rehearsal on a Leitner-box schedule, with high-stakes memories auto-enrolled").

A companion must not let an allergy, a diet, the name of someone close or a loss fade untouched, nor assume it is
still true forever. The nightly sweep enrols such facts (``enrolment``): the user's current facts whose relation the
profile's ``rehearsal.enrol`` policy names, and any the director pinned. Each sits in a Leitner box with a due time.

- **Cue.** When an enrolled fact is due, recall's Path A may carry one short, optional cue for the character
  (``choose_cue``): check it only if the conversation allows. Never more than one a session, and no more often than
  ``min_days_between_cues`` with one user, however many are due. A cue given pushes that fact's next due time by
  its box's interval, so an unanswered cue is not repeated at the next turn.
- **Confirm.** The user saying the same again (the fact restated) moves it up a box: a longer wait (``confirmed``).
- **Contradict.** A new value on its slot does not replace it silently: the new fact waits, provisional, behind a
  ``contradiction`` review item (``engine.facts``), and the rehearsed fact stays in force until a person decides.

The schedule itself is plain data in ``MemoryState.rehearsal``; nothing here writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from engine.domain.models import Memory, MemoryState, Rehearsal
from engine.domain.tuning import RehearsalParams

CLOSE_PREFIX = "user's "


def enrolment_reason(memory: Memory, state: MemoryState, params: RehearsalParams) -> str | None:
    """Why the policy enrols ``memory`` (a kind of ``params.enrol``), or None: an active fact of the user's whose
    relation is high-stakes, or a pinned one."""
    if memory.kind != "fact" or memory.fact is None or memory.scope != "user" or state.status != "active":
        return None
    relation, subject = memory.fact.relation, memory.fact.subject
    found = {
        "allergy": relation == "allergy",
        "diet": relation == "diet",
        "close_name": relation == "name" and subject.startswith(CLOSE_PREFIX),
        "bereavement": relation == "died",
        "pinned": state.pinned,
    }
    return next((kind for kind in params.enrol if found[kind]), None)


def interval(params: RehearsalParams, box: int) -> timedelta:
    """The wait of ``box`` (1-based); boxes beyond the last keep the last one's."""
    days = params.intervals()
    return timedelta(days=days[min(box, len(days)) - 1])


def enrolled(reason: str, at: datetime, params: RehearsalParams) -> Rehearsal:
    return Rehearsal(box=1, due=at + interval(params, 1), reason=reason, enrolled_at=at)


def confirmed(rehearsal: Rehearsal, at: datetime, params: RehearsalParams) -> Rehearsal:
    """Up a box (at most the last), due after the new box's wait."""
    box = min(rehearsal.box + 1, len(params.intervals()))
    return rehearsal.model_copy(update={"box": box, "due": at + interval(params, box), "confirmed_at": at})


def cued(rehearsal: Rehearsal, at: datetime, session_id: str, params: RehearsalParams) -> Rehearsal:
    """A recall carried its cue: not due again before its box's wait, and marked for the session."""
    return rehearsal.model_copy(update={"cued_at": at, "cued_session": session_id,
                                        "due": at + interval(params, rehearsal.box)})


@dataclass(frozen=True)
class CueChoice:
    fact: Memory | None
    due: int
    """How many enrolled facts were due."""
    note: str
    """Why no cue was chosen when one was due ("" otherwise)."""


def choose_cue(facts: Sequence[Memory], states: dict[str, MemoryState], now: datetime, session_id: str | None,
               params: RehearsalParams) -> CueChoice:
    """The one fact to cue now, if any: the longest overdue (then the lowest box) of the due enrolled facts,
    unless this session already had a cue or the last cue to this user is more recent than the cadence."""
    enrolled_states = [(f, s.rehearsal) for f in facts if (s := states.get(f.memory_id)) is not None
                       and s.rehearsal is not None and s.status == "active"]
    due = sorted(((f, r) for f, r in enrolled_states if r.due <= now), key=lambda fr: (fr[1].due, fr[1].box))
    if not due:
        return CueChoice(None, 0, "")
    if session_id is None:
        return CueChoice(None, len(due), "no session given: a check is offered at most once a session")
    if any(r.cued_session == session_id for _, r in enrolled_states):
        return CueChoice(None, len(due), "a check was already offered in this session")
    last = max((r.cued_at for _, r in enrolled_states if r.cued_at is not None), default=None)
    if last is not None and now - last < timedelta(days=params.min_days_between_cues):
        days = (now - last).total_seconds() / 86_400
        return CueChoice(None, len(due), f"the last check was {days:.1f} days ago; the cadence is "
                                         f"{params.min_days_between_cues:g} days")
    return CueChoice(due[0][0], len(due), "")
