"""A character's whole tuning profile, its sections each with a ``Shown``, and where the services read it."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from engine.domain.tuning import sections
from engine.domain.tuning.shown import Shown, _Params


class TuningProfile(_Params):
    """All tunable constants of one character. ``version`` grows with every saved change."""

    character_id: str = "default"
    version: int = Field(default=1, ge=1, le=2**63 - 1, description="the store keeps it in an SQLite INTEGER")
    retrieval: Annotated[sections.RetrievalParams, Shown(
        "Finding memories",
        ("Before ranking, memories are found two ways, by meaning and by shared words, and the two are blended. The "
         "recent lines of the conversation help too."),
    )] = sections.RetrievalParams()
    scoring: Annotated[sections.ScoringParams, Shown(
        "Ranking and how long feelings last",
        ("How the found memories are ranked: relevance, how strongly each was felt and how long ago, and things the "
         "message names."),
    )] = sections.ScoringParams()
    tone: Annotated[sections.ToneParams, Shown(
        "Tone rules",
        "When a painful moment makes the character handle a subject gently, and when that care becomes permanent.",
    )] = sections.ToneParams()
    write: Annotated[sections.WriteParams, Shown(
        "Reading a session afterwards",
        ("After a session, each memory is read for its feeling: what counts as emotional, and what later news settles "
         "it."),
    )] = sections.WriteParams()
    strength: Annotated[sections.StrengthParams, Shown(
        "Memory strength and forgetting",
        "Every memory weakens with age and strengthens with use; weak memories are archived.",
    )] = sections.StrengthParams()
    scopes: Annotated[sections.ScopeParams, Shown(
        "Whose memories count",
        ("How the user's memories, the character's canon and shared memory weigh against each other, and variety in "
         "what is recalled."),
    )] = sections.ScopeParams()
    consolidation: Annotated[sections.ConsolidationParams, Shown(
        "What becomes a lasting fact",
        ("Each night, facts heard in passing are weighed on how often they came up and who said them; those that "
         "pass are proposed for review, and start as strong as their score."),
    )] = sections.ConsolidationParams()
    rehearsal: Annotated[sections.RehearsalParams, Shown(
        "Checking what matters",
        ("Allergies, diets, close names and losses are re-checked now and then, gently and at most once a session, "
         "instead of being left to fade."),
    )] = sections.RehearsalParams()
    trust: Annotated[sections.TrustParams, Shown(
        "Earned trust",
        "When the reviewers' record lets the sweep keep a routine kind of change itself, marked and undoable.",
    )] = sections.TrustParams()
    context: Annotated[sections.ContextParams, Shown(
        "What the character is told",
        "How much of what is recalled the character is told on each turn.",
    )] = sections.ContextParams()


class ProfileSource:
    """Tuning profiles by character; characters without one use the defaults."""

    def __init__(self, profiles: dict[str, TuningProfile] | None = None, default: TuningProfile | None = None) -> None:
        self._profiles = dict(profiles or {})
        self._default = default or TuningProfile()

    def profile_for(self, character_id: str) -> TuningProfile:
        found = self._profiles.get(character_id)
        if found is not None:
            return found
        return self._default.model_copy(update={"character_id": character_id})

    def set(self, profile: TuningProfile) -> None:
        self._profiles[profile.character_id] = profile

